//! Soak: tasks on both links against the reference server for a while,
//! with injected server faults (resets mid-response, stalls, garbage) and
//! hostile clients (garbage, partial 512 KiB frames and bodies, slowloris,
//! bursts of 300 connections past the per-IP cap, idle links) the whole
//! time. At the end it checks that
//!
//! - every task ended exactly once (none still open, none ended twice, none
//!   past a bound far over its own timeout),
//! - nothing was lost or mixed up: every success carries its own request's
//!   body (the server echoes),
//! - the server's buffered bytes never exceeded its budget and went back to
//!   zero once the hostile clients stopped,
//! - memory is flat: the mean RSS (`/proc/self/statm`) of the last window
//!   is within 25 % + 8 MiB of the first window's (windows of a minute, or a
//!   third of the run when shorter: 10 s for a 30 s run),
//!
//! prints its figures, and exits non-zero on any violation.
//!
//! ```text
//! cargo run --release -p stn-cli --example soak -- --minutes 10
//! cargo run --release -p stn-cli --example soak -- --seconds 30   # CI
//! ```
//!
//! Options: `--minutes N` / `--seconds N` (default 30 s), `--workers N`
//! concurrent callers (default 32).
// A program that reports figures.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use stn_server::{Fault, Server, ServerConfig, ServerHandle, DEFAULT_HELLO_CMD_ID};
use stn_tokio::proto::codec::longlink::{self, Frame};
use stn_tokio::proto::{Channel, Task};
use stn_tokio::Client;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;

/// The server's byte budget in the soak: small, so that the hostile
/// clients' partial frames and bodies press on it.
const BUDGET: usize = 4 * 1024 * 1024;
/// Output already decided may exceed the budget by about a reply per
/// connection; the callers' replies are at most 4 KiB.
const OUTPUT_SLACK: u64 = 1024 * 1024;
/// A task's own deadline.
const TASK_TIMEOUT: Duration = Duration::from_secs(5);
/// Past this a `send` that has not returned is a task that never ended.
const SEND_BOUND: Duration = Duration::from_secs(60);
/// RSS may grow this much from the first window to the last: 25 % + 8 MiB.
const RSS_GROWTH: (f64, f64) = (1.25, 8.0 * 1024.0 * 1024.0);
/// Bytes in a page (statm counts pages); 4 KiB on the Linux targets this
/// runs on.
const PAGE: u64 = 4096;

struct Args {
    duration: Duration,
    workers: usize,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        duration: Duration::from_secs(30),
        workers: 32,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || -> anyhow::Result<u64> {
            let v = it.next().with_context(|| format!("{flag} needs a value"))?;
            v.parse()
                .with_context(|| format!("{flag} {v:?}: not a number"))
        };
        match flag.as_str() {
            "--minutes" => args.duration = Duration::from_secs(value()? * 60),
            "--seconds" => args.duration = Duration::from_secs(value()?),
            "--workers" => args.workers = usize::try_from(value()?)?.max(1),
            other => bail!("unknown option {other}; use --minutes N, --seconds N, --workers N"),
        }
    }
    if args.duration < Duration::from_secs(3) {
        bail!("run at least 3 s");
    }
    Ok(args)
}

/// What the callers report.
#[derive(Default)]
struct Ledger {
    open: BTreeSet<u64>,
    started: u64,
    ended: u64,
    ok: u64,
    failed: BTreeMap<String, u64>,
    latencies: Vec<Duration>,
    violations: Vec<String>,
}

impl Ledger {
    fn violation(&mut self, what: String) {
        if self.violations.len() < 20 {
            eprintln!("VIOLATION: {what}");
        }
        self.violations.push(what);
    }
}

type Shared = Arc<Mutex<Ledger>>;

fn lock(ledger: &Shared) -> std::sync::MutexGuard<'_, Ledger> {
    ledger.lock().unwrap_or_else(|p| p.into_inner())
}

fn server_config() -> ServerConfig {
    ServerConfig {
        response_size: None,
        idle_timeout: Duration::from_secs(3),
        request_timeout: Duration::from_secs(2),
        heartbeat_interval: Duration::from_secs(2),
        write_timeout: Duration::from_secs(2),
        max_connections_per_ip: 128,
        buffer_budget: BUDGET,
        ..ServerConfig::default()
    }
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let ok = rt.block_on(soak(args))?;
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

async fn soak(args: Args) -> anyhow::Result<bool> {
    let server = Arc::new(Server::start(server_config()).await?);
    let client = Client::builder()
        .endpoint("127.0.0.1")
        .short_link_port(server.short_addr().context("short")?.port())
        .long_link_port(server.long_addr().context("long")?.port())
        .seed(2026)
        .build()?;
    let start = Instant::now();
    let deadline = start + args.duration;
    let ledger: Shared = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let next_id = Arc::new(AtomicU64::new(1));
    println!(
        "soak: {} s, {} workers, server budget {} MiB",
        args.duration.as_secs(),
        args.workers,
        BUDGET >> 20
    );

    let mut callers = JoinSet::new();
    for w in 0..args.workers {
        callers.spawn(caller(
            w,
            client.clone(),
            ledger.clone(),
            next_id.clone(),
            deadline,
        ));
    }
    let mut background = JoinSet::new();
    background.spawn(inject_faults(server.clone(), stop.clone(), start));
    let hostile_stats = Arc::new(Mutex::new(BTreeMap::<&'static str, u64>::new()));
    background.spawn(hostile(server.clone(), stop.clone(), hostile_stats.clone()));

    // Sample memory once a second.
    let mut samples: Vec<(Duration, u64, u64)> = Vec::new();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let stats = server.stats();
        samples.push((start.elapsed(), rss()?, stats.buffered_bytes));
    }

    // Wind down: callers stop at the deadline; each send is bounded.
    while let Some(done) = callers.join_next().await {
        if let Err(err) = done {
            lock(&ledger).violation(format!("caller task failed: {err}"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    while background.join_next().await.is_some() {}
    server.set_fault(Fault::None);
    client.shutdown().await;

    let mut ledger = std::mem::take(&mut *lock(&ledger));
    check_end(&mut ledger);
    let drained = wait_drained(&server).await;
    if !drained {
        ledger.violation(format!(
            "server still buffers {} bytes 20 s after the hostile clients stopped",
            server.stats().buffered_bytes
        ));
    }
    let stats = server.stats();
    if stats.peak_buffered_bytes > BUDGET as u64 + OUTPUT_SLACK {
        ledger.violation(format!(
            "server buffered {} bytes at peak, over its {BUDGET}-byte budget",
            stats.peak_buffered_bytes
        ));
    }
    let memory = check_memory(&samples, args.duration, &mut ledger);
    report(&ledger, &stats, &hostile_stats, memory, args.duration);
    if let Ok(server) = Arc::try_unwrap(server) {
        server.shutdown().await;
    }
    Ok(ledger.violations.is_empty())
}

/// One caller: tasks back to back until the deadline, alternating links,
/// bodies of 16 B to 4 KiB that name the task.
async fn caller(
    w: usize,
    client: Client,
    ledger: Shared,
    next_id: Arc<AtomicU64>,
    deadline: Instant,
) {
    let mut n = 0u64;
    while Instant::now() < deadline {
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        n += 1;
        let channel = if (w as u64 + n) % 2 == 0 {
            Channel::Short
        } else {
            Channel::Long
        };
        let size = 16 + (id.wrapping_mul(2_654_435_761) % 4080) as usize;
        let mut body = format!("task {id} ").into_bytes();
        body.resize(size, b'.');
        let path = if channel == Channel::Short {
            "/mars/hello2"
        } else {
            ""
        };
        let task = Task::new(DEFAULT_HELLO_CMD_ID, path, body.clone())
            .channel(channel)
            .total_timeout(TASK_TIMEOUT);
        {
            let mut l = lock(&ledger);
            l.started += 1;
            if !l.open.insert(id) {
                l.violation(format!("task {id} started twice"));
            }
        }
        let sent = Instant::now();
        let outcome = tokio::time::timeout(SEND_BOUND, client.send(task)).await;
        let mut l = lock(&ledger);
        if !l.open.remove(&id) {
            l.violation(format!("task {id} ended twice"));
        }
        l.ended += 1;
        match outcome {
            Err(_) => l.violation(format!("task {id} did not end within {SEND_BOUND:?}")),
            Ok(Ok(response)) => {
                if response.body != body {
                    l.violation(format!("task {id} got another request's body"));
                }
                l.ok += 1;
                l.latencies.push(sent.elapsed());
            }
            Ok(Err(err)) => {
                let mut kind = err.to_string();
                kind.truncate(60);
                *l.failed.entry(kind).or_default() += 1;
            }
        }
    }
}

/// Cycles the server's fault: 7 s healthy, then 1 s each of resets
/// mid-response, stalls (never respond) and garbage.
async fn inject_faults(server: Arc<ServerHandle>, stop: Arc<AtomicBool>, start: Instant) {
    while !stop.load(Ordering::Relaxed) {
        let fault = match start.elapsed().as_secs() % 10 {
            7 => Fault::ResetMidResponse,
            8 => Fault::NeverRespond,
            9 => Fault::Garbage,
            _ => Fault::None,
        };
        if server.fault() != fault {
            server.set_fault(fault);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Hostile clients, one kind after another, several at a time, each bounded.
async fn hostile(
    server: Arc<ServerHandle>,
    stop: Arc<AtomicBool>,
    counts: Arc<Mutex<BTreeMap<&'static str, u64>>>,
) {
    let long = server.long_addr().expect("long");
    let short = server.short_addr().expect("short");
    let mut running = JoinSet::new();
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        while running.len() >= 16 {
            running.join_next().await;
        }
        round += 1;
        let kind = match round % 6 {
            0 => "garbage",
            1 => "partial frame",
            2 => "partial body",
            3 => "slowloris",
            4 => "burst of 300",
            _ => "idle link",
        };
        *counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(kind)
            .or_default() += 1;
        running.spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(8), attack(kind, long, short)).await;
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    running.shutdown().await;
}

async fn connect_from(last: u8, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)),
        0,
    ))?;
    socket.connect(addr).await
}

/// Reads until the server closes; what a hostile client does after its act.
async fn until_closed(mut s: TcpStream) {
    let mut buf = vec![0u8; 4096];
    while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
}

async fn attack(kind: &str, long: SocketAddr, short: SocketAddr) {
    const HALF_MIB: usize = 512 * 1024;
    let Ok(mut s) = connect_from(2, if kind.contains("body") { short } else { long }).await else {
        return;
    };
    match kind {
        "garbage" => {
            let _ = s.write_all(b"GARBAGE! \x00\xff not a frame\r\n\r\n").await;
            until_closed(s).await;
        }
        "partial frame" | "partial body" => {
            let mut wire = if kind == "partial frame" {
                let mut h =
                    longlink::encode_to_bytes(&Frame::new(DEFAULT_HELLO_CMD_ID, 1, Vec::new()), 0)
                        .map(|b| b.to_vec())
                        .unwrap_or_default();
                h[16..20].copy_from_slice(&(1u32 << 20).to_be_bytes());
                h
            } else {
                b"POST /mars/hello2 HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n".to_vec()
            };
            wire.resize(wire.len() + HALF_MIB, b'x');
            let _ = tokio::time::timeout(Duration::from_secs(2), s.write_all(&wire)).await;
            until_closed(s).await;
        }
        "slowloris" => {
            let _ = s.write_all(b"\x00\x00\x00\x14").await;
            for _ in 0..60 {
                if s.write_all(b"\x00").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        "burst of 300" => {
            let mut held = vec![s];
            for _ in 0..299 {
                if let Ok(c) = connect_from(2, long).await {
                    held.push(c);
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        _ => until_closed(s).await,
    }
}

/// Resident set size of this process (client, server and attackers).
fn rss() -> anyhow::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").context("reading /proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .context("statm has no resident field")?
        .parse()
        .context("statm resident field")?;
    Ok(pages * PAGE)
}

fn check_end(ledger: &mut Ledger) {
    if !ledger.open.is_empty() {
        let open = ledger.open.len();
        ledger.violation(format!("{open} tasks never ended"));
    }
    if ledger.started != ledger.ended {
        let (s, e) = (ledger.started, ledger.ended);
        ledger.violation(format!("{s} tasks started, {e} ended"));
    }
    let failed: u64 = ledger.failed.values().sum();
    if ledger.ok + failed != ledger.ended {
        ledger.violation("outcomes do not add up to the tasks ended".to_owned());
    }
    if ledger.ok == 0 {
        ledger.violation("no task succeeded".to_owned());
    }
}

async fn wait_drained(server: &ServerHandle) -> bool {
    for _ in 0..200 {
        if server.stats().buffered_bytes == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

struct Memory {
    window: Duration,
    first: f64,
    last: f64,
    max: u64,
}

fn check_memory(samples: &[(Duration, u64, u64)], run: Duration, ledger: &mut Ledger) -> Memory {
    let window = (run / 3).min(Duration::from_secs(60));
    let mean = |pick: &dyn Fn(Duration) -> bool| {
        let v: Vec<u64> = samples.iter().filter(|s| pick(s.0)).map(|s| s.1).collect();
        v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
    };
    let first = mean(&|t| t <= window);
    let last = mean(&|t| t + window >= run);
    let max = samples.iter().map(|s| s.1).max().unwrap_or(0);
    if last > first * RSS_GROWTH.0 + RSS_GROWTH.1 {
        ledger.violation(format!(
            "memory grew: mean RSS {:.1} MiB in the first {} s, {:.1} MiB in the last",
            first / 1048576.0,
            window.as_secs(),
            last / 1048576.0
        ));
    }
    Memory {
        window,
        first,
        last,
        max,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(
    ledger: &Ledger,
    stats: &stn_server::Stats,
    hostile: &Mutex<BTreeMap<&'static str, u64>>,
    memory: Memory,
    run: Duration,
) {
    let mut latencies = ledger.latencies.clone();
    latencies.sort();
    println!(
        "tasks: {} started, {} ended, {} ok ({:.1}/s), {} failed {:?}",
        ledger.started,
        ledger.ended,
        ledger.ok,
        ledger.ok as f64 / run.as_secs_f64(),
        ledger.failed.values().sum::<u64>(),
        ledger.failed
    );
    println!(
        "ok latency: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default()
    );
    println!(
        "hostile clients: {:?}",
        hostile.lock().unwrap_or_else(|p| p.into_inner())
    );
    println!(
        "server: {} long + {} short connections, {} refused, {} idle closes, {} deadline closes, {} write timeouts, {} protocol errors, {} faults injected",
        stats.long_connections,
        stats.short_connections,
        stats.connections_refused,
        stats.idle_closes,
        stats.deadline_closes,
        stats.write_timeouts,
        stats.protocol_errors,
        stats.faults_injected
    );
    println!(
        "server buffered: peak {:.2} MiB (budget {} MiB), now {} B",
        stats.peak_buffered_bytes as f64 / 1048576.0,
        BUDGET >> 20,
        stats.buffered_bytes
    );
    println!(
        "RSS: mean {:.1} MiB in the first {} s, {:.1} MiB in the last {} s, max {:.1} MiB",
        memory.first / 1048576.0,
        memory.window.as_secs(),
        memory.last / 1048576.0,
        memory.window.as_secs(),
        memory.max as f64 / 1048576.0
    );
    if ledger.violations.is_empty() {
        println!("soak: ok");
    } else {
        println!("soak: {} violations", ledger.violations.len());
    }
}
