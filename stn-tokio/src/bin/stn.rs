//! `stn`: the stn command line.
//!
//! `stn serve` runs the reference server (Mars sample protocol) until Ctrl-C:
//!
//! ```text
//! stn serve --long 127.0.0.1:8081 --short 127.0.0.1:8080 --delay-ms 50 --response-size 1024
//! ```
//!
//! `stn send` sends tasks to a server and prints one line per task and a summary:
//!
//! ```text
//! stn send --to 127.0.0.1:8080 --cgi /mars/hello2 --channel short --count 100 --concurrency 8
//! stn send --to 127.0.0.1:8081 --channel long --count 1000 --concurrency 64 --json
//! stn send --to localhost:8081 --channel long --client-version 200 --body-file hello.pb --timeout 5s
//! ```
//!
//! Logging goes through `tracing` to stderr; set `RUST_LOG` (e.g. `RUST_LOG=debug`) for
//! more detail than the default `info`.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use stn_tokio::server::{Fault, Server, ServerConfig, DEFAULT_CGI_PATH, DEFAULT_HELLO_CMD_ID};
use tracing_subscriber::EnvFilter;

/// stn: Mars-STN-style networking over tokio.
#[derive(Debug, Parser)]
#[command(name = "stn", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the reference server (long link and short link) until Ctrl-C.
    Serve(ServeArgs),
    /// Send tasks to a server and print one line per task and a summary.
    Send(send::SendArgs),
    /// Real-kernel lab: stn vs a peer HTTP client under nftables loss and
    /// outages in network namespaces (needs root and nft; skips otherwise).
    Lab(stn_tokio::lab::LabArgs),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Long-link (framed TCP) listen address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8081")]
    long: SocketAddr,
    /// Short-link (HTTP/1.1) listen address.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    short: SocketAddr,
    /// Serve only the long link.
    #[arg(long, conflicts_with = "no_long")]
    no_short: bool,
    /// Serve only the short link.
    #[arg(long)]
    no_long: bool,
    /// Processing delay before each hello / CGI response, in milliseconds.
    #[arg(long, value_name = "N", default_value_t = 0)]
    delay_ms: u64,
    /// Response body size in bytes (default: echo the request body).
    #[arg(long, value_name = "B")]
    response_size: Option<usize>,
    /// Push a frame to every long-link client every N milliseconds.
    #[arg(long, value_name = "N")]
    push_every_ms: Option<u64>,
    /// Long-link command id answered as hello.
    #[arg(long, value_name = "ID", default_value_t = DEFAULT_HELLO_CMD_ID)]
    hello_cmd_id: u32,
    /// Long-link client version expected in (and written to) every frame.
    #[arg(long, value_name = "V", default_value_t = 0)]
    client_version: u32,
    /// CGI path answered on the short link (repeatable).
    #[arg(long = "cgi", value_name = "PATH", default_values_t = [DEFAULT_CGI_PATH.to_owned()])]
    cgi_paths: Vec<String>,
    /// Largest long-link frame body accepted, in bytes.
    #[arg(long, value_name = "B", default_value_t = ServerConfig::default().max_frame_body)]
    max_frame_body: usize,
    /// Largest HTTP request body accepted, in bytes.
    #[arg(long, value_name = "B", default_value_t = ServerConfig::default().max_http_body)]
    max_http_body: usize,
    /// Most connections open at once, both links together (more are reset).
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_connections)]
    max_connections: usize,
    /// Most connections open at once from one IP address.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_connections_per_ip)]
    max_connections_per_ip: usize,
    /// Listen backlog of each listener.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().listen_backlog)]
    backlog: u32,
    /// Short link: close a connection that sends no request for this long, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = millis(ServerConfig::default().idle_timeout))]
    idle_timeout_ms: u64,
    /// Deadline for a whole request (short link: head and body; long link:
    /// one frame) from its first byte, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = millis(ServerConfig::default().request_timeout))]
    request_timeout_ms: u64,
    /// Long-link heartbeat interval clients keep, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = millis(ServerConfig::default().heartbeat_interval))]
    heartbeat_interval_ms: u64,
    /// Close a long link after this many heartbeat intervals without a frame.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().idle_heartbeats)]
    idle_heartbeats: u32,
    /// Reset a connection whose write does not finish within this, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = millis(ServerConfig::default().write_timeout))]
    write_timeout_ms: u64,
    /// TCP keepalive idle time before the first probe, in seconds (0: off).
    #[arg(long, value_name = "S", default_value_t = ServerConfig::default().keepalive_idle.map_or(0, |d| d.as_secs()))]
    keepalive_idle_secs: u64,
    /// Seconds between TCP keepalive probes.
    #[arg(long, value_name = "S", default_value_t = ServerConfig::default().keepalive_interval.as_secs())]
    keepalive_interval_secs: u64,
    /// Unanswered TCP keepalive probes before the connection is dropped.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().keepalive_probes)]
    keepalive_probes: u32,
    /// Bytes of delayed replies and queued pushes one long link may hold.
    #[arg(long, value_name = "B", default_value_t = ServerConfig::default().max_pending_output)]
    max_pending_output: usize,
    /// Bytes the server may buffer across all connections; when full it
    /// stops reading.
    #[arg(long, value_name = "B", default_value_t = ServerConfig::default().buffer_budget)]
    buffer_budget: usize,
    /// Misbehave for tests: none, never-respond, reset-mid-response, garbage,
    /// oversize-length.
    #[arg(long, value_name = "FAULT", default_value_t = Fault::None)]
    fault: Fault,
    #[command(flatten)]
    tls: tls_args::ServeTls,
}

/// A default duration as a flag's millisecond value.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl ServeArgs {
    fn config(&self) -> anyhow::Result<ServerConfig> {
        if self.push_every_ms == Some(0) {
            anyhow::bail!("--push-every-ms must be positive");
        }
        Ok(ServerConfig {
            long_addr: (!self.no_long).then_some(self.long),
            short_addr: (!self.no_short).then_some(self.short),
            delay: Duration::from_millis(self.delay_ms),
            response_size: self.response_size,
            hello_cmd_id: self.hello_cmd_id,
            push_every: self.push_every_ms.map(Duration::from_millis),
            client_version: self.client_version,
            max_frame_body: self.max_frame_body,
            cgi_paths: self.cgi_paths.clone(),
            max_http_body: self.max_http_body,
            max_connections: self.max_connections,
            max_connections_per_ip: self.max_connections_per_ip,
            listen_backlog: self.backlog,
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            heartbeat_interval: Duration::from_millis(self.heartbeat_interval_ms),
            idle_heartbeats: self.idle_heartbeats,
            write_timeout: Duration::from_millis(self.write_timeout_ms),
            keepalive_idle: (self.keepalive_idle_secs > 0)
                .then(|| Duration::from_secs(self.keepalive_idle_secs)),
            keepalive_interval: Duration::from_secs(self.keepalive_interval_secs),
            keepalive_probes: self.keepalive_probes,
            max_pending_output: self.max_pending_output,
            buffer_budget: self.buffer_budget,
            fault: self.fault,
            ..ServerConfig::default()
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Logs go to stderr, coloured only on a terminal.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match Cli::parse().command {
        Command::Serve(args) => serve(args).await,
        Command::Send(args) => {
            let all_ok = send::run(args).await?;
            if !all_ok {
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Lab(args) => stn_tokio::lab::run_cli(args).await,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = args.config()?;
    config.tls = args.tls.server_tls()?;
    let server = Server::start(config).await.context("starting the server")?;
    tracing::info!(
        long = ?server.long_addr(),
        short = ?server.short_addr(),
        delay_ms = args.delay_ms,
        response_size = ?args.response_size,
        fault = %args.fault,
        tls = config_tls(&server),
        "stn server running; Ctrl-C to stop"
    );
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    tracing::info!(stats = ?server.stats(), "shutting down");
    server.shutdown().await;
    Ok(())
}

/// `stn send`: a small load and smoke-test client.
// Printing results is what this command is for.
#[allow(clippy::print_stdout, clippy::print_stderr)]
mod send {
    use std::io::Read;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use anyhow::{bail, Context};
    use bytes::Bytes;
    use stn_tokio::proto::Profile;
    use stn_tokio::proto::{Channel, Task};
    use stn_tokio::server::{DEFAULT_CGI_PATH, DEFAULT_HELLO_CMD_ID};
    use stn_tokio::{Client, Endpoint};

    /// Largest request body `--body-size` and `--body-file` accept: the
    /// engine's default long-link frame cap (1 MiB) is the tighter limit on
    /// that link; 64 MiB keeps a typo from exhausting memory.
    pub(crate) const MAX_BODY: u64 = 64 * 1024 * 1024;
    /// Most tasks one run sends (each keeps a result line in memory).
    const MAX_COUNT: u64 = 10_000_000;
    /// Most tasks in flight at once.
    const MAX_CONCURRENCY: u64 = 65_536;

    /// A `--timeout` value: `5s`, `250ms`, `1.5s`, `2m`, or plain seconds.
    fn parse_duration(s: &str) -> Result<Duration, String> {
        let s = s.trim();
        let (number, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
            Some(i) => s.split_at(i),
            None => (s, "s"),
        };
        let n: f64 = number
            .parse()
            .map_err(|_| format!("{s:?} is not a duration (e.g. 5s, 250ms, 2m)"))?;
        let secs = match unit {
            "ms" => n / 1e3,
            "s" => n,
            "m" => n * 60.0,
            _ => return Err(format!("unknown unit {unit:?} in {s:?}: use ms, s or m")),
        };
        // At most a day: the engine's deadlines are absolute instants.
        if !(secs > 0.0 && secs <= 86_400.0) {
            return Err(format!(
                "{s:?} is out of range: give more than 0 and at most 24 h"
            ));
        }
        Ok(Duration::from_secs_f64(secs))
    }

    /// Which link carries the tasks.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
    pub(crate) enum ChannelArg {
        /// HTTP POST on a fresh connection per attempt.
        Short,
        /// Framed, on the persistent long link.
        Long,
    }

    #[derive(Debug, clap::Args)]
    pub(crate) struct SendArgs {
        /// Server endpoints, comma-separated HOST:PORT, where HOST is an IP
        /// (`[v6]` with a port) or a host name resolved with the system
        /// resolver (the short link needs one port for all; the long link
        /// tries every port with every address).
        #[arg(long, value_name = "HOST:PORT", value_delimiter = ',', required = true, value_parser = parse_endpoint)]
        to: Vec<Endpoint>,
        /// CGI path (short link).
        #[arg(long, value_name = "PATH", default_value = DEFAULT_CGI_PATH)]
        cgi: String,
        /// Command id of each task.
        #[arg(long, value_name = "ID", default_value_t = DEFAULT_HELLO_CMD_ID)]
        cmd_id: u32,
        /// Link to use.
        #[arg(long, value_enum, default_value_t = ChannelArg::Short)]
        channel: ChannelArg,
        /// Number of tasks.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
        count: u64,
        /// Retries per task (default: the engine's).
        #[arg(long, value_name = "N")]
        retry: Option<u8>,
        /// Request body size in bytes (each body starts with its task number),
        /// at most 64 MiB.
        #[arg(long, value_name = "B", default_value_t = 16, value_parser = clap::value_parser!(u64).range(0..=MAX_BODY), conflicts_with = "body_file")]
        body_size: u64,
        /// Send this file's bytes as every task's body (at most 64 MiB), e.g.
        /// a serialized protobuf request. Identical bodies count against the
        /// engine's frequency limit (105 per window under the Mars profiles).
        #[arg(long, value_name = "FILE")]
        body_file: Option<PathBuf>,
        /// Give up on each task after this long (its total timeout), e.g.
        /// `5s`, `250ms`; default: the engine's.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        timeout: Option<Duration>,
        /// Long-link client version written in (and expected in) every frame
        /// header; the Mars sample server wants 200.
        #[arg(long, value_name = "N")]
        client_version: Option<u32>,
        /// Tasks in flight at once.
        #[arg(long, value_name = "C", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_CONCURRENCY))]
        concurrency: u64,
        /// Engine profile: stn, mars or mars-2017.
        #[arg(long, value_name = "P", default_value = "stn")]
        profile: Profile,
        /// Print one JSON object at the end (per-task lines go to stderr).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        tls: crate::tls_args::SendTls,
    }

    struct Outcome {
        index: u64,
        id: Option<u32>,
        error: Option<String>,
        duration: Duration,
        attempts: u32,
    }

    fn parse_endpoint(s: &str) -> Result<Endpoint, String> {
        let e: Endpoint = s.parse().map_err(|e| format!("{e}"))?;
        if e.port().is_none() {
            return Err(format!("{s:?} has no port: give HOST:PORT"));
        }
        Ok(e)
    }

    fn body(index: u64, size: usize) -> Vec<u8> {
        // Distinct bodies: the anti-avalanche frequency limit refuses a flood
        // of identical requests, which a load tool should not trip over.
        let mut b = format!("{index}:").into_bytes();
        b.resize(size.max(b.len()), b'x');
        b.truncate(size);
        b
    }

    /// The `--body-file` contents, read up to one byte past the cap so an
    /// oversized (or endless, like `/dev/zero`) file is refused, not loaded.
    fn read_body_file(path: &PathBuf) -> anyhow::Result<Bytes> {
        let file = std::fs::File::open(path)
            .with_context(|| format!("opening --body-file {}", path.display()))?;
        let mut body = Vec::new();
        file.take(MAX_BODY + 1)
            .read_to_end(&mut body)
            .with_context(|| format!("reading --body-file {}", path.display()))?;
        if body.len() as u64 > MAX_BODY {
            bail!(
                "--body-file {} is larger than the {MAX_BODY}-byte cap",
                path.display()
            );
        }
        Ok(body.into())
    }

    fn client(args: &SendArgs) -> anyhow::Result<Client> {
        let mut ports: Vec<u16> = Vec::new();
        let mut builder = Client::builder();
        for e in &args.to {
            // The CLI gives each endpoint's port to the chosen link itself,
            // so the endpoint goes in without it.
            builder = match (e.ip(), e.host_name()) {
                (Some(ip), _) => builder.ip(ip),
                (None, Some(host)) => builder.host(host),
                (None, None) => builder,
            };
            if let Some(port) = e.port().filter(|p| !ports.contains(p)) {
                ports.push(port);
            }
        }
        // Bounded by MAX_CONCURRENCY, so these fit a usize.
        let concurrency = args.concurrency as usize;
        let mut builder = builder
            .profile(args.profile)
            .queue_capacity(concurrency)
            .max_queued_tasks(concurrency.max(1024))
            .max_in_flight_long(concurrency.max(64));
        if let Some(version) = args.client_version {
            builder = builder.configure(move |c| c.long_mut().codec.client_version = version);
        }
        match args.channel {
            ChannelArg::Short => {
                if ports.len() != 1 {
                    bail!("the short link uses one port for every IP; --to has {ports:?}");
                }
                builder = builder.short_link_port(ports[0]);
            }
            ChannelArg::Long => {
                for p in ports {
                    builder = builder.long_link_port(p);
                }
            }
        }
        builder = args.tls.apply(builder)?;
        builder.build().context("building the client")
    }

    /// The `q` quantile (0..=1) of sorted values, nearest rank.
    fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
        if sorted.is_empty() {
            return None;
        }
        let rank = (q * sorted.len() as f64).ceil() as usize;
        Some(sorted[rank.clamp(1, sorted.len()) - 1])
    }

    /// Runs the tasks; `Ok(true)` if every one succeeded.
    pub(crate) async fn run(args: SendArgs) -> anyhow::Result<bool> {
        let file_body = args.body_file.as_ref().map(read_body_file).transpose()?;
        let client = client(&args)?;
        let channel = match args.channel {
            ChannelArg::Short => Channel::Short,
            ChannelArg::Long => Channel::Long,
        };
        let next = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Outcome>();
        let started = Instant::now();
        for _ in 0..args.concurrency.min(args.count.max(1)) {
            let (client, next, tx) = (client.clone(), next.clone(), tx.clone());
            // Bounded by MAX_BODY, so it fits a usize.
            let size = args.body_size as usize;
            let early_data = args.tls.early_data;
            let (cgi, cmd_id, count, retry, timeout, file_body) = (
                args.cgi.clone(),
                args.cmd_id,
                args.count,
                args.retry,
                args.timeout,
                file_body.clone(),
            );
            tokio::spawn(async move {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        break;
                    }
                    let body = match &file_body {
                        Some(b) => b.clone(),
                        None => body(index, size).into(),
                    };
                    let mut task = Task::new(cmd_id, cgi.clone(), body)
                        .channel(channel)
                        .early_data(early_data);
                    if let Some(r) = retry {
                        task = task.retry_count(r);
                    }
                    if let Some(t) = timeout {
                        task = task.total_timeout(t);
                    }
                    let t0 = Instant::now();
                    let done = client.send_detailed(task).await;
                    let _ = tx.send(Outcome {
                        index,
                        id: done.id.map(|id| id.get()),
                        error: done.outcome.err().map(|e| e.to_string()),
                        duration: t0.elapsed(),
                        attempts: done.attempts,
                    });
                }
            });
        }
        drop(tx);
        // Grows with the results that arrive, not with the requested count.
        let mut outcomes = Vec::new();
        while let Some(o) = rx.recv().await {
            let line = format!(
                "task {:>5} id={} {} {:.2} ms attempts={}{}",
                o.index,
                o.id.map_or_else(|| "-".to_owned(), |id| id.to_string()),
                if o.error.is_none() { "ok   " } else { "error" },
                o.duration.as_secs_f64() * 1e3,
                o.attempts,
                o.error
                    .as_ref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default(),
            );
            if args.json {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
            outcomes.push(o);
        }
        let total = started.elapsed();
        let tls = client.snapshot().await.map(|s| s.tls);
        client.shutdown().await;

        outcomes.sort_by_key(|o| o.index);
        let successes = outcomes.iter().filter(|o| o.error.is_none()).count();
        let attempts: u64 = outcomes.iter().map(|o| u64::from(o.attempts)).sum();
        let mut ms: Vec<f64> = outcomes
            .iter()
            .filter(|o| o.error.is_none())
            .map(|o| o.duration.as_secs_f64() * 1e3)
            .collect();
        ms.sort_by(f64::total_cmp);
        let mean = (!ms.is_empty()).then(|| ms.iter().sum::<f64>() / ms.len() as f64);
        let (p50, p95, p99) = (
            quantile(&ms, 0.50),
            quantile(&ms, 0.95),
            quantile(&ms, 0.99),
        );
        let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
        if args.json {
            let tasks: Vec<serde_json::Value> = outcomes
                .iter()
                .map(|o| {
                    serde_json::json!({
                        "index": o.index,
                        "id": o.id,
                        "ok": o.error.is_none(),
                        "error": o.error,
                        "duration_ms": o.duration.as_secs_f64() * 1e3,
                        "attempts": o.attempts,
                    })
                })
                .collect();
            let report = serde_json::json!({
                "channel": format!("{:?}", args.channel).to_lowercase(),
                "profile": args.profile.to_string(),
                "count": args.count,
                "successes": successes,
                "failures": outcomes.len() - successes,
                "attempts": attempts,
                "total_ms": total.as_secs_f64() * 1e3,
                "latency_ms": { "mean": mean, "p50": p50, "p95": p95, "p99": p99 },
                "tls": tls.filter(|_| args.tls.tls).map(|t| serde_json::json!({
                    "handshakes": t.handshakes,
                    "resumed": t.resumed,
                    "failed": t.failed,
                    "early_data": t.early_data,
                    "early_accepted": t.early_accepted,
                })),
                "tasks": tasks,
            });
            println!("{report}");
        } else {
            println!(
                "summary: {successes}/{} ok, {attempts} attempts, total {:.2} ms, mean {} ms, p50 {} ms, p95 {} ms, p99 {} ms",
                outcomes.len(),
                total.as_secs_f64() * 1e3,
                fmt(mean),
                fmt(p50),
                fmt(p95),
                fmt(p99),
            );
            if let Some(t) = tls.filter(|_| args.tls.tls) {
                println!(
                    "tls: {} handshakes, {} resumed, {} failed, {} with early data ({} accepted)",
                    t.handshakes, t.resumed, t.failed, t.early_data, t.early_accepted
                );
            }
        }
        Ok(successes == outcomes.len())
    }
}

fn config_tls(server: &stn_tokio::ServerHandle) -> bool {
    server.config().tls.is_some()
}

/// The TLS flags of `stn serve` and `stn send`.
mod tls_args {
    use std::path::PathBuf;

    use anyhow::Context;
    use stn_tokio::server::tls::{self, SelfSigned, ServerTls};
    use stn_tokio::ClientBuilder;

    /// `stn serve`: TLS on both links from PEM files, or a certificate made
    /// at start.
    #[derive(Debug, clap::Args)]
    pub(crate) struct ServeTls {
        /// Serve TLS with this PEM certificate chain (leaf first); needs --tls-key.
        #[arg(
            long,
            value_name = "FILE",
            requires = "tls_key",
            conflicts_with = "tls_self_signed"
        )]
        tls_cert: Option<PathBuf>,
        /// The PEM private key of --tls-cert.
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Serve TLS with a CA and a certificate generated at start for
        /// --tls-name; the CA certificate is written to --tls-ca-out.
        #[arg(long, requires = "tls_ca_out")]
        tls_self_signed: bool,
        /// Where --tls-self-signed writes its CA certificate (PEM), for
        /// clients' --ca.
        #[arg(long, value_name = "PATH", requires = "tls_self_signed")]
        tls_ca_out: Option<PathBuf>,
        /// Names the self-signed certificate is valid for (DNS names or IPs).
        #[arg(long = "tls-name", value_name = "NAME", value_delimiter = ',',
              default_values_t = ["localhost".to_owned(), "127.0.0.1".to_owned()])]
        tls_names: Vec<String>,
        /// Accept TLS 1.3 early data (0-RTT) on resumed sessions and answer
        /// it before the handshake ends. Early data can be replayed: only for
        /// servers whose requests are idempotent (the reference server's are).
        #[arg(long)]
        tls_early_data: bool,
    }

    impl ServeTls {
        pub(crate) fn server_tls(&self) -> anyhow::Result<Option<ServerTls>> {
            if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
                let cert_pem = std::fs::read(cert)
                    .with_context(|| format!("reading --tls-cert {}", cert.display()))?;
                let key_pem = std::fs::read(key)
                    .with_context(|| format!("reading --tls-key {}", key.display()))?;
                let config = tls::server_config(&cert_pem, &key_pem)
                    .with_context(|| format!("loading {} and {}", cert.display(), key.display()))?;
                return Ok(Some(self.finish(config)));
            }
            if !self.tls_self_signed {
                if self.tls_early_data {
                    anyhow::bail!("--tls-early-data needs TLS: --tls-cert and --tls-key, or --tls-self-signed");
                }
                return Ok(None);
            }
            let made = SelfSigned::generate(&self.tls_names).context("--tls-self-signed")?;
            if let Some(out) = &self.tls_ca_out {
                std::fs::write(out, &made.ca_pem)
                    .with_context(|| format!("writing --tls-ca-out {}", out.display()))?;
                tracing::info!(ca = %out.display(), names = ?self.tls_names, "self-signed TLS certificate made; its CA written");
            }
            Ok(Some(self.finish(made.server_config()?)))
        }

        fn finish(&self, mut config: tls::TlsServerConfig) -> ServerTls {
            if self.tls_early_data {
                tls::enable_early_data(&mut config);
            }
            ServerTls::new(config)
        }
    }

    /// `stn send`: TLS to the server, trusting a CA file (or the webpki roots).
    #[derive(Debug, clap::Args)]
    pub(crate) struct SendTls {
        /// Connect with TLS (both links).
        #[arg(long)]
        pub(crate) tls: bool,
        /// Trust this PEM CA certificate instead of the webpki roots.
        #[arg(long, value_name = "FILE", requires = "tls")]
        ca: Option<PathBuf>,
        /// The name to send (SNI) and verify; default: the IP of each --to.
        #[arg(long, value_name = "NAME", requires = "tls")]
        server_name: Option<String>,
        /// Let every task's request go as TLS 1.3 early data (0-RTT) when a
        /// new connection resumes a session whose server allows it. Early data
        /// can be replayed: only for idempotent requests.
        #[arg(long, requires = "tls")]
        pub(crate) early_data: bool,
    }

    impl SendTls {
        pub(crate) fn apply(&self, builder: ClientBuilder) -> anyhow::Result<ClientBuilder> {
            if !self.tls {
                return Ok(builder);
            }
            let roots = match &self.ca {
                Some(ca) => {
                    let pem = std::fs::read(ca)
                        .with_context(|| format!("reading --ca {}", ca.display()))?;
                    stn_tokio::tls::roots_from_pem(&pem)
                        .with_context(|| format!("--ca {}", ca.display()))?
                }
                None => stn_tokio::tls::webpki_roots(),
            };
            let config = stn_tokio::tls::client_config(roots, &[b"http/1.1"])?;
            let mut builder = builder.tls(config);
            if let Some(name) = &self.server_name {
                builder = builder.tls_server_name(name);
            }
            Ok(builder)
        }
    }
}
