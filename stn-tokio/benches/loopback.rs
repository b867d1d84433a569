//! Loopback benchmark: stn-tokio against a plain tokio request/response
//! baseline, on the same reference server.
//!
//! ```text
//! cargo bench -p stn-tokio --bench loopback              # 3 rounds × (2 s warm-up + 5 s) per scenario
//! cargo bench -p stn-tokio --bench loopback -- --quick   # 1 round × (0.5 s warm-up + 2 s)
//! ```
//!
//! The parent process starts the reference server in-process (127.0.0.1,
//! ephemeral ports, zero delay, echo bodies) and runs each scenario in a
//! child process (this binary re-executed with `--scenario`), so each
//! scenario's peak memory (`VmHWM`) is its own client's, not the whole run's.
//! The server's peak during each scenario is read in the parent after
//! resetting its high-water mark (`/proc/self/clear_refs`).
//!
//! Scenarios (every request carries a unique 16-byte-ish body that the server
//! echoes; a response with another body counts as an error):
//!
//! - `stn-long`: one `stn_tokio::Client` with only a long-link port, N tokio
//!   tasks each looping `client.send(task).await` (channel Long).
//! - `base-long`: one `TcpStream`, the same 20-byte-header frames
//!   (`stn_proto::codec::longlink`), N tokio tasks each sending through a
//!   minimal multiplexer (seq → oneshot; one writer task batching frames,
//!   one reader task routing responses by seq).
//! - `stn-short`: one `stn_tokio::Client` with only a short-link port, N
//!   tasks looping `send` (channel Short): a fresh connection per request,
//!   `Connection: close` (Mars's fixed request head).
//! - `base-short`: N tasks each doing connect → write the same request
//!   (`stn_proto::codec::http::encode_request`) → read with `ResponseParser`
//!   → drop the connection.
//! - `stn-short-ka`: as `stn-short`, with `Connection: Keep-Alive` on every
//!   task and a socket pool of N idle connections: requests reuse pooled
//!   connections (Mars's keep-alive short link).
//! - `reqwest`: one `reqwest::Client` (HTTP/1.1, keep-alive, its default
//!   pool), N tasks each POSTing the same CGI path and reading the body.
//! - `stn-long-tls`, `stn-short-ka-tls`, `reqwest-tls`: the same three over
//!   TLS 1.3 (rustls with ring on both sides, the same client configuration
//!   for stn and reqwest) to a second reference server with a certificate
//!   made at start; the CA goes to children as `--ca FILE`.
//!
//! Columns: requests and req/s in the measured window (with `--rounds N`, the
//! median round and the slowest–fastest range); p50/p99/p99.9/max latency of
//! one `send` → response (log-linear histogram, < 0.8 % bucket error); errors
//! (failed sends and wrong bodies); client peak RSS (`VmHWM` of the child:
//! tokio runtime + client, no server) and its RSS before the client started;
//! server peak RSS (the parent: server + this harness, whose high-water mark
//! is reset before each scenario but which keeps what earlier scenarios
//! grew); CPU time (user + system) per request of the client (measured
//! window) and of the server process (whole scenario, warm-up included);
//! heap allocations (`alloc`, `alloc_zeroed`, `realloc` calls) of the client
//! per request in the measured window.
//! Both processes run tokio's multi-thread runtime with one worker per core.
//!
//! `cargo bench -p stn-tokio --bench loopback -- --in-flight 1000,10000`
//! measures memory instead: heap bytes per long-link call in flight, for
//! stn and the baseline multiplexer (see `in_flight_main`).
//!
//! Run without `--bench` (as `cargo test --benches` does) it is a smoke test:
//! every scenario in-process for a fraction of a second, failing on any error.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark program reports on stdout

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use stn_proto::codec::http::{encode_request, HttpLimits, Progress, RequestHead, ResponseParser};
use stn_proto::codec::longlink::{self, CodecConfig, Frame, FrameDecoder};
use stn_proto::config::PoolConfig;
use stn_proto::Profile;
use stn_proto::{Channel, Task};
use stn_server::{Server, ServerConfig, DEFAULT_CGI_PATH, DEFAULT_HELLO_CMD_ID};
use stn_tokio::Client;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

/// Concurrency of the long-link scenarios (the issue's figure; also stn's
/// default `max_in_flight_tasks`).
const LONG_CONCURRENCY: usize = 64;
/// Concurrency of the short-link scenarios.
const SHORT_CONCURRENCY: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    StnLong,
    BaseLong,
    StnShort,
    BaseShort,
    StnShortKeepAlive,
    Reqwest,
    StnLongTls,
    StnShortKeepAliveTls,
    ReqwestTls,
}

impl Scenario {
    const ALL: [Scenario; 9] = [
        Scenario::StnLong,
        Scenario::BaseLong,
        Scenario::StnShort,
        Scenario::BaseShort,
        Scenario::StnShortKeepAlive,
        Scenario::Reqwest,
        Scenario::StnLongTls,
        Scenario::StnShortKeepAliveTls,
        Scenario::ReqwestTls,
    ];

    /// Runs against the TLS server.
    fn tls(self) -> bool {
        matches!(
            self,
            Scenario::StnLongTls | Scenario::StnShortKeepAliveTls | Scenario::ReqwestTls
        )
    }

    fn name(self) -> &'static str {
        match self {
            Scenario::StnLong => "stn-long",
            Scenario::BaseLong => "base-long",
            Scenario::StnShort => "stn-short",
            Scenario::BaseShort => "base-short",
            Scenario::StnShortKeepAlive => "stn-short-ka",
            Scenario::Reqwest => "reqwest",
            Scenario::StnLongTls => "stn-long-tls",
            Scenario::StnShortKeepAliveTls => "stn-short-ka-tls",
            Scenario::ReqwestTls => "reqwest-tls",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Scenario::StnLong => "stn long link",
            Scenario::BaseLong => "baseline long link (tokio, seq mux)",
            Scenario::StnShort => "stn short link (conn per request)",
            Scenario::BaseShort => "baseline short link (tokio, conn per request)",
            Scenario::StnShortKeepAlive => "stn short link (keep-alive pool)",
            Scenario::Reqwest => "reqwest (HTTP/1.1 keep-alive)",
            Scenario::StnLongTls => "stn long link, TLS",
            Scenario::StnShortKeepAliveTls => "stn short link (keep-alive pool), TLS",
            Scenario::ReqwestTls => "reqwest (HTTP/1.1 keep-alive), rustls",
        }
    }

    fn concurrency(self) -> usize {
        match self {
            Scenario::StnLong | Scenario::BaseLong | Scenario::StnLongTls => LONG_CONCURRENCY,
            Scenario::StnShort
            | Scenario::BaseShort
            | Scenario::StnShortKeepAlive
            | Scenario::Reqwest
            | Scenario::StnShortKeepAliveTls
            | Scenario::ReqwestTls => SHORT_CONCURRENCY,
        }
    }

    fn parse(s: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|sc| sc.name() == s)
    }
}

// ---------------------------------------------------------------------------
// Options

#[derive(Debug)]
struct Opts {
    warmup: Duration,
    measure: Duration,
    /// `cargo bench` passes `--bench`; without it this is a smoke test.
    bench: bool,
    /// Run everything in this process (no per-scenario memory figures).
    in_process: bool,
    /// Each scenario runs this many times, interleaved (A B C D A B C D …);
    /// the table shows the median round by requests/s and the range.
    rounds: usize,
    only: Vec<Scenario>,
    /// Child mode: run this scenario against these addresses, print a result line.
    child: Option<(Scenario, SocketAddr, SocketAddr)>,
    /// `--in-flight N,...`: measure heap bytes per in-flight long-link call
    /// instead of throughput.
    in_flight: Vec<usize>,
    /// Child mode: the TLS server's CA certificate (PEM file).
    ca: Option<String>,
}

/// The TLS server's CA certificate (PEM), for the TLS scenarios.
static CA_PEM: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn parse_args() -> Result<Opts, String> {
    let mut opts = Opts {
        warmup: Duration::from_secs(2),
        measure: Duration::from_secs(5),
        bench: false,
        in_process: false,
        rounds: 3,
        only: Vec::new(),
        child: None,
        ca: None,
        in_flight: Vec::new(),
    };
    let mut scenario = None;
    let mut long = None;
    let mut short = None;
    let mut args = std::env::args().skip(1);
    let secs = |v: Option<String>| -> Result<Duration, String> {
        let v = v.ok_or("missing value")?;
        let s: f64 = v.parse().map_err(|_| format!("bad number {v:?}"))?;
        if !(s.is_finite() && s >= 0.0) {
            return Err(format!("bad duration {v:?}"));
        }
        Ok(Duration::from_secs_f64(s))
    };
    let addr = |v: Option<String>| -> Result<SocketAddr, String> {
        let v = v.ok_or("missing address")?;
        v.parse().map_err(|_| format!("bad address {v:?}"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => opts.bench = true,
            "--quick" => {
                opts.warmup = Duration::from_millis(500);
                opts.measure = Duration::from_secs(2);
                opts.rounds = 1;
            }
            "--rounds" => {
                let v = args.next().ok_or("--rounds needs a count")?;
                opts.rounds = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("bad round count {v:?}"))?;
            }
            "--warmup-secs" => opts.warmup = secs(args.next())?,
            "--measure-secs" => opts.measure = secs(args.next())?,
            "--in-process" => opts.in_process = true,
            "--only" => {
                let v = args.next().ok_or("--only needs a scenario")?;
                for name in v.split(',') {
                    opts.only
                        .push(Scenario::parse(name).ok_or(format!("unknown scenario {name:?}"))?);
                }
            }
            "--scenario" => {
                let v = args.next().ok_or("--scenario needs a name")?;
                scenario = Some(Scenario::parse(&v).ok_or(format!("unknown scenario {v:?}"))?);
            }
            "--long" => long = Some(addr(args.next())?),
            "--in-flight" => {
                let v = args.next().ok_or("--in-flight needs counts")?;
                for n in v.split(',') {
                    opts.in_flight.push(
                        n.parse()
                            .ok()
                            .filter(|&n: &usize| n > 0)
                            .ok_or(format!("bad count {n:?}"))?,
                    );
                }
            }
            "--ca" => opts.ca = Some(args.next().ok_or("--ca needs a file")?),
            "--short" => short = Some(addr(args.next())?),
            "--help" | "-h" => {
                return Err(
                    "usage: loopback [--quick] [--warmup-secs S] [--measure-secs S] [--rounds N] \
                     [--only stn-long,base-long,stn-short,base-short,stn-short-ka,reqwest,stn-long-tls,stn-short-ka-tls,reqwest-tls] [--in-process] \
                     | --in-flight N[,N...]"
                        .to_owned(),
                )
            }
            // Flags cargo's harness protocol may pass (filters, --nocapture …) are ignored.
            _ => {}
        }
    }
    if let Some(s) = scenario {
        let (Some(l), Some(sh)) = (long, short) else {
            return Err("--scenario needs --long and --short".to_owned());
        };
        opts.child = Some((s, l, sh));
    }
    if opts.only.is_empty() {
        opts.only = Scenario::ALL.to_vec();
    }
    Ok(opts)
}

// ---------------------------------------------------------------------------
// Allocation count: every heap allocation of this process (one relaxed
// atomic add each, the same for every scenario), for the client's
// allocations per request.

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Heap bytes live now (allocated minus freed), for `--in-flight`.
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

/// The system allocator, counting allocations (`alloc`, `alloc_zeroed` and
/// `realloc` calls).
struct CountingAlloc;

// SAFETY: every call forwards to the system allocator unchanged; the
// counter is only bookkeeping.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

// ---------------------------------------------------------------------------
// Latency histogram: log-linear buckets (128 per power of two, < 0.8 %
// error), lock-free so all workers share one; a fixed ~35 KiB whatever the
// request count, so it does not distort the memory figures the way a
// sample vector would.

const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Values are capped at 2^40 ns (~18 min).
const MAX_EXP: u32 = 40;

struct Histogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    max: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        let len = (MAX_EXP - SUB_BITS + 1) as usize * SUB;
        Histogram {
            buckets: (0..len).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }

    fn index(v: u64) -> usize {
        let v = v.min((1 << MAX_EXP) - 1);
        if v < SUB as u64 {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros();
        let shift = exp - SUB_BITS;
        let mantissa = (v >> shift) as usize; // in [SUB, 2 * SUB)
        (shift as usize + 1) * SUB + (mantissa - SUB)
    }

    /// The largest value that falls in bucket `i`.
    fn upper(i: usize) -> u64 {
        if i < 2 * SUB {
            return i as u64;
        }
        let shift = (i / SUB - 1) as u32;
        let mantissa = (i % SUB + SUB) as u64;
        ((mantissa + 1) << shift) - 1
    }

    fn record(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.buckets[Self::index(ns)].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.max.fetch_max(ns, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The value at quantile `q` (0..=1), in nanoseconds (bucket upper bound,
    /// never above the exact maximum).
    fn quantile(&self, q: f64) -> u64 {
        let count = self.count();
        if count == 0 {
            return 0;
        }
        let target = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= target {
                return Self::upper(i).min(self.max());
            }
        }
        self.max()
    }

    fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }
}

// ---------------------------------------------------------------------------
// The clients under test

/// What the workers call: one request → its response body.
enum Target {
    Stn {
        client: Client,
        channel: Channel,
        keep_alive: bool,
    },
    BaseLong(Arc<Mux>),
    BaseShort {
        addr: SocketAddr,
        limits: HttpLimits,
    },
    Reqwest {
        client: reqwest::Client,
        url: String,
    },
}

impl Target {
    async fn connect(
        scenario: Scenario,
        long: SocketAddr,
        short: SocketAddr,
    ) -> Result<Self, String> {
        let tls = || -> Result<stn_tokio::tls::rustls::ClientConfig, String> {
            let pem = CA_PEM.get().ok_or("TLS scenario without a CA (--ca)")?;
            let roots =
                stn_tokio::tls::roots_from_pem(pem.as_bytes()).map_err(|e| e.to_string())?;
            stn_tokio::tls::client_config(roots, &[b"http/1.1"]).map_err(|e| e.to_string())
        };
        let keep_alive_pool = |c: &mut stn_proto::Config| {
            // One idle connection per worker, as reqwest's pool keeps.
            let mut pool = PoolConfig::for_profile(Profile::Stn);
            pool.max_idle_conns = SHORT_CONCURRENCY;
            c.set_socket_pool(Some(pool));
        };
        Ok(match scenario {
            Scenario::StnLong => Target::Stn {
                client: Client::builder()
                    .ip(long.ip())
                    .long_link_port(long.port())
                    .build()
                    .map_err(|e| e.to_string())?,
                channel: Channel::Long,
                keep_alive: false,
            },
            Scenario::StnLongTls => Target::Stn {
                client: Client::builder()
                    .ip(long.ip())
                    .long_link_port(long.port())
                    .tls(tls()?)
                    .build()
                    .map_err(|e| e.to_string())?,
                channel: Channel::Long,
                keep_alive: false,
            },
            Scenario::StnShortKeepAliveTls => Target::Stn {
                client: Client::builder()
                    .ip(short.ip())
                    .short_link_port(short.port())
                    .configure(keep_alive_pool)
                    .tls(tls()?)
                    .build()
                    .map_err(|e| e.to_string())?,
                channel: Channel::Short,
                keep_alive: true,
            },
            Scenario::ReqwestTls => Target::Reqwest {
                client: reqwest::Client::builder()
                    .use_preconfigured_tls(tls()?)
                    .http1_only()
                    .tcp_nodelay(true)
                    .build()
                    .map_err(|e| e.to_string())?,
                url: format!("https://{short}{DEFAULT_CGI_PATH}"),
            },
            Scenario::StnShort => Target::Stn {
                client: Client::builder()
                    .ip(short.ip())
                    .short_link_port(short.port())
                    .build()
                    .map_err(|e| e.to_string())?,
                channel: Channel::Short,
                keep_alive: false,
            },
            Scenario::StnShortKeepAlive => Target::Stn {
                client: Client::builder()
                    .ip(short.ip())
                    .short_link_port(short.port())
                    .configure(keep_alive_pool)
                    .build()
                    .map_err(|e| e.to_string())?,
                channel: Channel::Short,
                keep_alive: true,
            },
            Scenario::Reqwest => Target::Reqwest {
                client: reqwest::Client::builder()
                    .http1_only()
                    .tcp_nodelay(true)
                    .build()
                    .map_err(|e| e.to_string())?,
                url: format!("http://{short}{DEFAULT_CGI_PATH}"),
            },
            Scenario::BaseLong => Target::BaseLong(Mux::connect(long).await?),
            Scenario::BaseShort => Target::BaseShort {
                addr: short,
                limits: HttpLimits::default(),
            },
        })
    }

    async fn call(&self, body: Bytes) -> Result<Bytes, String> {
        match self {
            Target::Stn {
                client,
                channel,
                keep_alive,
            } => {
                let mut task =
                    Task::new(DEFAULT_HELLO_CMD_ID, DEFAULT_CGI_PATH, body).channel(*channel);
                if *keep_alive {
                    task = task.header("Connection", "Keep-Alive");
                }
                client
                    .send(task)
                    .await
                    .map(|r| r.body)
                    .map_err(|e| e.to_string())
            }
            Target::BaseLong(mux) => mux.call(body).await,
            Target::BaseShort { addr, limits } => short_exchange(*addr, *limits, &body).await,
            Target::Reqwest { client, url } => reqwest_call(client, url, body).await,
        }
    }

    async fn close(self) {
        match self {
            Target::Stn { client, .. } => client.shutdown().await,
            Target::BaseLong(mux) => mux.close(),
            Target::BaseShort { .. } | Target::Reqwest { .. } => {}
        }
    }
}

/// The baseline long link: one connection, requests pipelined, responses
/// matched to callers by seq.
struct Mux {
    next_seq: AtomicU32,
    pending: Mutex<HashMap<u32, oneshot::Sender<Bytes>>>,
    frames: mpsc::UnboundedSender<Bytes>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Mux {
    async fn connect(addr: SocketAddr) -> Result<Arc<Mux>, String> {
        let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (mut rd, mut wr) = stream.into_split();
        let (frames, mut rx) = mpsc::unbounded_channel::<Bytes>();
        let mux = Arc::new(Mux {
            next_seq: AtomicU32::new(1),
            pending: Mutex::new(HashMap::new()),
            frames,
            tasks: Mutex::new(Vec::new()),
        });
        // Writer: everything queued since the last write goes out in one write.
        let writer = tokio::spawn(async move {
            let mut out = BytesMut::new();
            while let Some(first) = rx.recv().await {
                out.extend_from_slice(&first);
                while let Ok(more) = rx.try_recv() {
                    out.extend_from_slice(&more);
                }
                if wr.write_all(&out).await.is_err() {
                    return;
                }
                out.clear();
            }
        });
        let weak = Arc::downgrade(&mux);
        let reader = tokio::spawn(async move {
            let mut decoder = FrameDecoder::new(CodecConfig::default());
            let mut buf = BytesMut::with_capacity(64 * 1024);
            'read: loop {
                if buf.capacity() - buf.len() < 16 * 1024 {
                    buf.reserve(64 * 1024);
                }
                match rd.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let Some(mux) = weak.upgrade() else { break };
                loop {
                    match decoder.decode(&mut buf) {
                        Ok(Some(frame)) => {
                            let waiter = mux.pending.lock().expect("lock").remove(&frame.seq);
                            if let Some(tx) = waiter {
                                let _ = tx.send(frame.body);
                            }
                        }
                        Ok(None) => break,
                        Err(_) => break 'read,
                    }
                }
            }
            // The link is gone: fail everyone still waiting.
            if let Some(mux) = weak.upgrade() {
                mux.pending.lock().expect("lock").clear();
            }
        });
        mux.tasks.lock().expect("lock").extend([writer, reader]);
        Ok(mux)
    }

    async fn call(&self, body: Bytes) -> Result<Bytes, String> {
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let wire = longlink::encode_to_bytes(&Frame::new(DEFAULT_HELLO_CMD_ID, seq, body), 0)
            .map_err(|e| e.to_string())?;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("lock").insert(seq, tx);
        if self.frames.send(wire).is_err() {
            self.pending.lock().expect("lock").remove(&seq);
            return Err("baseline long link: writer gone".to_owned());
        }
        rx.await
            .map_err(|_| "baseline long link: connection closed".to_owned())
    }

    fn close(&self) {
        for t in self.tasks.lock().expect("lock").drain(..) {
            t.abort();
        }
    }
}

/// One POST through reqwest (its pool reuses connections).
async fn reqwest_call(client: &reqwest::Client, url: &str, body: Bytes) -> Result<Bytes, String> {
    let response = client
        .post(url)
        .body(body)
        .send()
        .await
        .map_err(|e| format!("reqwest: {e}"))?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(format!("reqwest: status {}", response.status()));
    }
    response
        .bytes()
        .await
        .map_err(|e| format!("reqwest body: {e}"))
}

/// The baseline short link: one request on a fresh connection.
async fn short_exchange(
    addr: SocketAddr,
    limits: HttpLimits,
    body: &[u8],
) -> Result<Bytes, String> {
    let mut stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut out = BytesMut::new();
    encode_request(
        &RequestHead::new(DEFAULT_CGI_PATH, None, addr),
        body,
        &mut out,
    )
    .map_err(|e| e.to_string())?;
    stream
        .write_all(&out)
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut parser = ResponseParser::new(limits);
    let mut buf = vec![0u8; 4096];
    loop {
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return parser
                .finish_eof()
                .and_then(|r| r.into_result())
                .map_err(|e| e.to_string());
        }
        match parser.feed(&buf[..n]).map_err(|e| e.to_string())? {
            Progress::Complete(r) => return r.into_result().map_err(|e| e.to_string()),
            Progress::Partial | Progress::AfterEnd => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Measuring

#[derive(Debug, Default)]
struct Outcome {
    scenario: String,
    concurrency: usize,
    requests: u64,
    secs: f64,
    errors: u64,
    p50_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    max_ns: u64,
    idle_rss_kb: Option<u64>,
    peak_kb: Option<u64>,
    server_peak_kb: Option<u64>,
    /// Client process CPU time (user + system) per request in the measured
    /// window, µs.
    client_cpu_us: Option<f64>,
    /// Server (parent) process CPU time per request served during the whole
    /// scenario (warm-up included), µs.
    server_cpu_us: Option<f64>,
    /// Heap allocations of the client process per request in the measured
    /// window ([`CountingAlloc`]).
    client_allocs: Option<f64>,
    first_error: String,
    /// Requests/s of the slowest and fastest round (parent only).
    rps_range: Option<(f64, f64)>,
}

impl Outcome {
    fn rps(&self) -> f64 {
        if self.secs > 0.0 {
            self.requests as f64 / self.secs
        } else {
            0.0
        }
    }
}

struct Shared {
    hist: Histogram,
    errors: AtomicU64,
    first_error: Mutex<Option<String>>,
}

/// Runs one scenario: warm-up, then a measured window. Only requests started
/// inside the window count; workers stop starting requests at its end and the
/// elapsed time runs until the last one has finished.
async fn run_scenario(
    scenario: Scenario,
    long: SocketAddr,
    short: SocketAddr,
    warmup: Duration,
    measure: Duration,
) -> Result<Outcome, String> {
    let target = Arc::new(Target::connect(scenario, long, short).await?);
    let shared = Arc::new(Shared {
        hist: Histogram::new(),
        errors: AtomicU64::new(0),
        first_error: Mutex::new(None),
    });
    let t0 = Instant::now() + warmup;
    let t_end = t0 + measure;
    let cpu_at_t0 = tokio::spawn(async move {
        tokio::time::sleep_until(t0.into()).await;
        (cpu_time(), ALLOCATIONS.load(Ordering::Relaxed))
    });
    let mut workers = Vec::new();
    for w in 0..scenario.concurrency() {
        let (target, shared) = (target.clone(), shared.clone());
        workers.push(tokio::spawn(async move {
            let mut n: u64 = 0;
            let mut body = String::new();
            loop {
                let start = Instant::now();
                if start >= t_end {
                    break;
                }
                body.clear();
                let _ = write!(body, "w{w:02}-r{n:010}");
                let sent = Bytes::copy_from_slice(body.as_bytes());
                let result = target.call(sent.clone()).await;
                let elapsed = start.elapsed();
                n += 1;
                let error = match result {
                    Ok(got) if got == sent => None,
                    Ok(got) => Some(format!("body mismatch: sent {sent:?}, got {got:?}")),
                    Err(e) => Some(e),
                };
                if start < t0 {
                    if error.is_some() {
                        // Do not spin on a broken target during warm-up.
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    continue;
                }
                match error {
                    None => shared.hist.record(elapsed),
                    Some(e) => {
                        shared.errors.fetch_add(1, Ordering::Relaxed);
                        shared.first_error.lock().expect("lock").get_or_insert(e);
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            }
        }));
    }
    for w in workers {
        w.await.map_err(|e| format!("worker failed: {e}"))?;
    }
    let secs = t0.elapsed().as_secs_f64();
    let allocs_at_end = ALLOCATIONS.load(Ordering::Relaxed);
    let (cpu_at_t0, allocs_at_t0) = cpu_at_t0.await.unwrap_or((None, allocs_at_end));
    let cpu = match (cpu_at_t0, cpu_time()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let allocs = allocs_at_end.saturating_sub(allocs_at_t0);
    if let Ok(target) = Arc::try_unwrap(target) {
        target.close().await;
    }
    let h = &shared.hist;
    let first_error = shared
        .first_error
        .lock()
        .expect("lock")
        .take()
        .unwrap_or_default();
    Ok(Outcome {
        scenario: scenario.name().to_owned(),
        concurrency: scenario.concurrency(),
        requests: h.count(),
        secs,
        errors: shared.errors.load(Ordering::Relaxed),
        p50_ns: h.quantile(0.50),
        p99_ns: h.quantile(0.99),
        p999_ns: h.quantile(0.999),
        max_ns: h.max(),
        client_cpu_us: cpu.map(|c| c.as_secs_f64() * 1e6 / h.count().max(1) as f64),
        client_allocs: Some(allocs as f64 / h.count().max(1) as f64),
        first_error,
        ..Outcome::default()
    })
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`).
fn proc_status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// This process's CPU time, user + system, from `/proc/self/stat` (in clock
/// ticks, taken as the Linux `USER_HZ` of 100 per second).
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name start at field 3 (state);
    // utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// Resets this process's `VmHWM` to its current RSS (Linux ≥ 4.0).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn runtime() -> tokio::runtime::Runtime {
    // The machine's cores (2 here), as a plain `#[tokio::main]` would use.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

// ---------------------------------------------------------------------------
// Child mode: one scenario, one result line.

fn child_main(scenario: Scenario, long: SocketAddr, short: SocketAddr, opts: &Opts) -> i32 {
    let rt = runtime();
    let idle = proc_status_kb("VmRSS");
    let result = rt.block_on(run_scenario(
        scenario,
        long,
        short,
        opts.warmup,
        opts.measure,
    ));
    drop(rt);
    match result {
        Ok(mut o) => {
            o.idle_rss_kb = idle;
            o.peak_kb = proc_status_kb("VmHWM");
            println!("{}", encode_outcome(&o));
            0
        }
        Err(e) => {
            eprintln!("loopback: {} failed: {e}", scenario.name());
            1
        }
    }
}

fn encode_outcome(o: &Outcome) -> String {
    let opt = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
    format!(
        "RESULT\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        o.scenario,
        o.concurrency,
        o.requests,
        o.secs,
        o.errors,
        o.p50_ns,
        o.p99_ns,
        o.p999_ns,
        o.max_ns,
        opt(o.idle_rss_kb),
        opt(o.peak_kb),
        o.client_cpu_us.map_or("-".to_owned(), |v| v.to_string()),
        o.client_allocs.map_or("-".to_owned(), |v| v.to_string()),
        o.first_error.replace(['\t', '\n'], " "),
    )
}

fn decode_outcome(line: &str) -> Option<Outcome> {
    let f: Vec<&str> = line.strip_prefix("RESULT\t")?.splitn(14, '\t').collect();
    if f.len() != 14 {
        return None;
    }
    let opt = |s: &str| s.parse().ok();
    Some(Outcome {
        scenario: f[0].to_owned(),
        concurrency: f[1].parse().ok()?,
        requests: f[2].parse().ok()?,
        secs: f[3].parse().ok()?,
        errors: f[4].parse().ok()?,
        p50_ns: f[5].parse().ok()?,
        p99_ns: f[6].parse().ok()?,
        p999_ns: f[7].parse().ok()?,
        max_ns: f[8].parse().ok()?,
        idle_rss_kb: opt(f[9]),
        peak_kb: opt(f[10]),
        server_peak_kb: None,
        client_cpu_us: f[11].parse().ok(),
        server_cpu_us: None,
        client_allocs: f[12].parse().ok(),
        first_error: f[13].to_owned(),
        rps_range: None,
    })
}

/// Runs `scenario` in a child process; kills it if it overruns.
fn run_child(
    scenario: Scenario,
    long: SocketAddr,
    short: SocketAddr,
    opts: &Opts,
) -> Result<Outcome, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["--bench", "--scenario", scenario.name()])
        .args(["--long", &long.to_string(), "--short", &short.to_string()])
        .args(["--warmup-secs", &opts.warmup.as_secs_f64().to_string()])
        .args(["--measure-secs", &opts.measure.as_secs_f64().to_string()])
        .args(
            opts.ca
                .iter()
                .filter(|_| scenario.tls())
                .flat_map(|ca| ["--ca", ca.as_str()]),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start child: {e}"))?;
    let deadline = Instant::now() + opts.warmup + opts.measure + Duration::from_secs(60);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} did not finish in time", scenario.name()));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout.lines().find_map(decode_outcome).ok_or_else(|| {
        format!(
            "{} exited with {} and no result",
            scenario.name(),
            output.status
        )
    })
}

// ---------------------------------------------------------------------------
// Report

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn mib(kb: Option<u64>) -> String {
    kb.map_or("n/a".to_owned(), |kb| format!("{:.1}", kb as f64 / 1024.0))
}

fn us(v: Option<f64>) -> String {
    v.map_or("n/a".to_owned(), |v| format!("{v:.1}"))
}

fn machine_notes() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cores} cores, load average {} (shared machine), Linux {}",
        load.join(" "),
        kernel.trim()
    )
}

fn table(rows: &[Outcome], separate_processes: bool) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "| scenario | conc. | requests | req/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | client peak MiB | client idle MiB | server peak MiB | client CPU µs/req | server CPU µs/req | client allocs/req |"
    );
    let _ = writeln!(
        t,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for o in rows {
        let label = match Scenario::parse(&o.scenario) {
            Some(s) => s.label(),
            None => o.scenario.as_str(),
        };
        let rps = match o.rps_range {
            Some((lo, hi)) => format!("{:.0} ({lo:.0}–{hi:.0})", o.rps()),
            None => format!("{:.0}", o.rps()),
        };
        let _ = writeln!(
            t,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            o.concurrency,
            o.requests,
            rps,
            ms(o.p50_ns),
            ms(o.p99_ns),
            ms(o.p999_ns),
            ms(o.max_ns),
            o.errors,
            if separate_processes {
                mib(o.peak_kb)
            } else {
                "n/a".to_owned()
            },
            if separate_processes {
                mib(o.idle_rss_kb)
            } else {
                "n/a".to_owned()
            },
            mib(o.server_peak_kb),
            us(o.client_cpu_us),
            us(o.server_cpu_us),
            us(o.client_allocs),
        );
    }
    t
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Some((scenario, long, short)) = opts.child {
        if let Some(path) = &opts.ca {
            match std::fs::read_to_string(path) {
                Ok(pem) => {
                    let _ = CA_PEM.set(pem);
                }
                Err(e) => {
                    eprintln!("loopback: cannot read --ca {path}: {e}");
                    std::process::exit(2);
                }
            }
        }
        std::process::exit(child_main(scenario, long, short, &opts));
    }
    if !opts.in_flight.is_empty() {
        std::process::exit(in_flight_main(&opts.in_flight));
    }
    let mut opts = opts;
    if !opts.bench {
        // `cargo test --benches`: a smoke run, everything in this process.
        opts.warmup = Duration::from_millis(100);
        opts.measure = Duration::from_millis(300);
        opts.in_process = true;
        opts.rounds = 1;
        check_histogram();
    }

    let rt = runtime();
    let server = rt
        .block_on(Server::start(ServerConfig::default()))
        .expect("reference server starts");
    let long = server.long_addr().expect("long link");
    let short = server.short_addr().expect("short link");
    // The TLS scenarios' server: the same, with a certificate made now.
    let cert =
        stn_server::tls::SelfSigned::generate(&["127.0.0.1".to_owned()]).expect("certificate");
    let tls_server = rt
        .block_on(Server::start(ServerConfig {
            tls: Some(stn_server::tls::ServerTls::new(
                cert.server_config().expect("TLS config"),
            )),
            ..ServerConfig::default()
        }))
        .expect("TLS reference server starts");
    let tls_addrs = (
        tls_server.long_addr().expect("long link"),
        tls_server.short_addr().expect("short link"),
    );
    let ca_file = std::env::temp_dir().join(format!("stn-loopback-ca-{}.pem", std::process::id()));
    std::fs::write(&ca_file, &cert.ca_pem).expect("CA file written");
    opts.ca = Some(ca_file.display().to_string());
    let _ = CA_PEM.set(cert.ca_pem.clone());
    println!(
        "loopback benchmark: warm-up {:?}, measured {:?} per scenario; server in-process on {long} (long) and {short} (short), zero delay",
        opts.warmup, opts.measure
    );
    println!("machine: {}", machine_notes());

    let mut runs: Vec<Vec<Outcome>> = opts.only.iter().map(|_| Vec::new()).collect();
    let mut failed = false;
    for (round, &scenario) in (0..opts.rounds).flat_map(|r| opts.only.iter().map(move |s| (r, s))) {
        let can_reset = reset_peak_rss();
        let (long, short, server) = if scenario.tls() {
            (tls_addrs.0, tls_addrs.1, &tls_server)
        } else {
            (long, short, &server)
        };
        let (cpu_before, stats_before) = (cpu_time(), server.stats());
        let result = if opts.in_process {
            rt.block_on(run_scenario(
                scenario,
                long,
                short,
                opts.warmup,
                opts.measure,
            ))
        } else {
            run_child(scenario, long, short, &opts)
        };
        let server_peak = if can_reset && !opts.in_process {
            proc_status_kb("VmHWM")
        } else {
            None
        };
        match result {
            Ok(mut o) => {
                o.server_peak_kb = server_peak;
                let stats = server.stats();
                let served = (stats.long_requests_served + stats.short_requests_served)
                    .saturating_sub(
                        stats_before.long_requests_served + stats_before.short_requests_served,
                    );
                if let (Some(a), Some(b), false) = (cpu_before, cpu_time(), opts.in_process) {
                    o.server_cpu_us =
                        Some(b.saturating_sub(a).as_secs_f64() * 1e6 / served.max(1) as f64);
                }
                if opts.in_process {
                    // Client and server share the process.
                    o.client_cpu_us = None;
                    o.client_allocs = None;
                }
                if o.errors > 0 || o.requests == 0 {
                    failed = true;
                    eprintln!(
                        "{}: {} errors, {} requests; first error: {}",
                        o.scenario, o.errors, o.requests, o.first_error
                    );
                }
                eprintln!(
                    "round {}: {}: {} requests in {:.2} s",
                    round + 1,
                    o.scenario,
                    o.requests,
                    o.secs
                );
                if let Some(i) = opts.only.iter().position(|&s| s == scenario) {
                    runs[i].push(o);
                }
            }
            Err(e) => {
                failed = true;
                eprintln!("{}: {e}", scenario.name());
            }
        }
    }
    let rows: Vec<Outcome> = runs.into_iter().filter_map(median_round).collect();
    let stats = server.stats();
    let tls_stats = tls_server.stats();
    rt.block_on(server.shutdown());
    rt.block_on(tls_server.shutdown());
    let _ = std::fs::remove_file(&ca_file);
    println!();
    print!("{}", table(&rows, !opts.in_process));
    if opts.rounds > 1 {
        println!(
            "req/s: the median of {} interleaved rounds (slowest–fastest in brackets); latencies from that round; memory: the largest peak of all rounds; CPU per request: the median of the rounds.",
            opts.rounds
        );
    }
    println!();
    println!(
        "server totals: {} long-link requests, {} short-link requests, {} short-link connections, {} protocol errors",
        stats.long_requests_served,
        stats.short_requests_served,
        stats.short_connections,
        stats.protocol_errors
    );
    println!(
        "TLS server totals: {} long-link requests, {} short-link requests, {} short-link connections, {} TLS handshake failures",
        tls_stats.long_requests_served,
        tls_stats.short_requests_served,
        tls_stats.short_connections,
        tls_stats.tls_failures
    );
    if failed {
        std::process::exit(1);
    }
}

/// The round with the median requests/s, with the range of all rounds and
/// the largest memory peaks.
fn median_round(mut rounds: Vec<Outcome>) -> Option<Outcome> {
    if rounds.is_empty() {
        return None;
    }
    rounds.sort_by(|a, b| a.rps().total_cmp(&b.rps()));
    let lo = rounds.first().map_or(0.0, Outcome::rps);
    let hi = rounds.last().map_or(0.0, Outcome::rps);
    let peak = rounds.iter().filter_map(|o| o.peak_kb).max();
    let server_peak = rounds.iter().filter_map(|o| o.server_peak_kb).max();
    let median_of = |get: fn(&Outcome) -> Option<f64>| {
        let mut v: Vec<f64> = rounds.iter().filter_map(get).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let client_cpu = median_of(|o| o.client_cpu_us);
    let client_allocs = median_of(|o| o.client_allocs);
    let server_cpu = median_of(|o| o.server_cpu_us);
    let n = rounds.len();
    let mut median = rounds.swap_remove(n / 2);
    if n > 1 {
        median.rps_range = Some((lo, hi));
    }
    median.peak_kb = peak;
    median.server_peak_kb = server_peak;
    median.client_cpu_us = client_cpu;
    median.client_allocs = client_allocs;
    median.server_cpu_us = server_cpu;
    Some(median)
}

/// Smoke-mode self-check of the histogram's bucket arithmetic: indices are
/// monotonic and each bucket's upper bound is within 1 % of its values.
fn check_histogram() {
    let mut prev = 0;
    for v in 0..200_000u64 {
        let i = Histogram::index(v);
        assert!(i >= prev, "index is monotonic");
        prev = i;
    }
    for v in (0..200_000u64).chain((0..48).map(|e| (1u64 << e) + 12_345)) {
        let v = v.min((1 << MAX_EXP) - 1);
        let up = Histogram::upper(Histogram::index(v));
        assert!(
            up >= v && up - v <= v / 100 + 1,
            "bucket of {v} ends at {up}"
        );
    }
}

// ---------------------------------------------------------------------------
// `--in-flight N,...`: heap bytes per long-link call in flight.
//
// The server holds every hello response for ten minutes (noop and identify
// are answered at once), so N calls started together all stay in flight.
// For stn and for the baseline multiplexer, in turn: connect, read the live
// heap bytes, spawn N tokio tasks each awaiting one call, wait until all N
// requests are on the connection (stn: the engine's long-link in-flight
// count; baseline: N waiters registered) and the heap stops moving, then
// read the live bytes again. The difference over N is what one in-flight
// call costs the process: the caller's spawned task and its future, and
// everything the client holds for it.

fn in_flight_main(counts: &[usize]) -> i32 {
    let rt = runtime();
    let server = rt
        .block_on(Server::start(ServerConfig {
            delay: Duration::from_secs(600),
            ..ServerConfig::default()
        }))
        .expect("reference server starts");
    let long = server.long_addr().expect("long link");
    println!("in-flight memory: server in-process on {long}, every hello held 600 s");
    println!(
        "{:<10} {:>8} {:>14} {:>10}",
        "client", "N", "bytes/call", "settle"
    );
    let mut failed = false;
    for &n in counts {
        for scenario in [Scenario::StnLong, Scenario::BaseLong] {
            match rt.block_on(measure_in_flight(scenario, long, n)) {
                Ok((bytes, settle)) => {
                    println!(
                        "{:<10} {:>8} {:>14.0} {:>9.1}s",
                        scenario.name(),
                        n,
                        bytes,
                        settle.as_secs_f64()
                    );
                    eprintln!(
                        "{{\"client\":\"{}\",\"n\":{n},\"bytes_per_call\":{bytes:.1}}}",
                        scenario.name()
                    );
                }
                Err(e) => {
                    eprintln!("in-flight {} N={n}: {e}", scenario.name());
                    failed = true;
                }
            }
        }
    }
    i32::from(failed)
}

/// One stn long-link call, as an app would spawn it.
async fn stn_long_call(target: Arc<Target>, body: Bytes) -> Result<Bytes, String> {
    let Target::Stn { client, .. } = &*target else {
        return Err("not an stn target".to_owned());
    };
    let task = Task::new(DEFAULT_HELLO_CMD_ID, DEFAULT_CGI_PATH, body).channel(Channel::Long);
    client
        .send(task)
        .await
        .map(|r| r.body)
        .map_err(|e| e.to_string())
}

/// One call of the baseline multiplexer.
async fn base_long_call(target: Arc<Target>, body: Bytes) -> Result<Bytes, String> {
    let Target::BaseLong(mux) = &*target else {
        return Err("not a baseline long-link target".to_owned());
    };
    mux.call(body).await
}

async fn measure_in_flight(
    scenario: Scenario,
    long: SocketAddr,
    n: usize,
) -> Result<(f64, Duration), String> {
    let target = Arc::new(match scenario {
        Scenario::StnLong => Target::Stn {
            client: Client::builder()
                .ip(long.ip())
                .long_link_port(long.port())
                .max_queued_tasks(n + 16)
                .max_in_flight_long(n)
                .build()
                .map_err(|e| e.to_string())?,
            channel: Channel::Long,
            keep_alive: false,
        },
        Scenario::BaseLong => Target::connect(scenario, long, long).await?,
        other => return Err(format!("{} has no in-flight mode", other.name())),
    });
    // Let connection set-up allocations settle before the baseline reading.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let started = Instant::now();
    let mut calls = Vec::with_capacity(n);
    for i in 0..n {
        let target = target.clone();
        let body = Bytes::from(format!("in-flight {i:>8}"));
        // Each client's own call future, not `Target::call`'s (which is as
        // large as its largest variant, whichever client runs).
        calls.push(match scenario {
            Scenario::StnLong => tokio::spawn(stn_long_call(target, body)),
            _ => tokio::spawn(base_long_call(target, body)),
        });
    }
    // Bounded wait: every request on the wire, then the heap still for 300 ms.
    let deadline = started + Duration::from_secs(120);
    let mut last = (i64::MIN, Instant::now());
    loop {
        if Instant::now() > deadline {
            for c in &calls {
                c.abort();
            }
            return Err("calls did not all reach the connection within 120 s".to_owned());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let on_wire = match &*target {
            Target::Stn { client, .. } => client
                .snapshot()
                .await
                .is_some_and(|s| s.long_in_flight == n),
            // Its writer drains the queue as fast as the socket takes it:
            // all waiters registered and the heap still is the same state.
            Target::BaseLong(mux) => mux.pending.lock().expect("lock").len() == n,
            _ => false,
        };
        let live = LIVE_BYTES.load(Ordering::Relaxed);
        if live != last.0 {
            last = (live, Instant::now());
        }
        if on_wire && last.1.elapsed() >= Duration::from_millis(300) {
            break;
        }
    }
    let settle = started.elapsed();
    let after = LIVE_BYTES.load(Ordering::Relaxed);
    for c in &calls {
        c.abort();
    }
    drop(calls);
    if let Ok(target) = Arc::try_unwrap(target) {
        target.close().await;
    }
    Ok(((after - before) as f64 / n as f64, settle))
}
