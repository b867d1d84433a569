//! `stn`: the stn command line.
//!
//! `stn serve` runs the reference server (Mars sample protocol) until Ctrl-C
//! or SIGTERM, then shuts down gracefully:
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
//! stn send --to 127.0.0.1:8080 --long-port 8081 --channel both --print-body -H X-Trace:1
//! stn send --to localhost:8081 --channel long --client-version 200 --body-file hello.pb --timeout 5s
//! ```
//!
//! Logs go through `tracing` to stderr (`RUST_LOG` picks what, e.g.
//! `RUST_LOG=stn=debug` for the client's attempts); by default `info`, with
//! the client's own per-task warnings left out: `stn send` prints every
//! task's outcome itself. Errors are printed once, as a chain
//! (`stn: error: ...: cause`), with exit status 1; usage errors exit with 2.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use stn_server::{Fault, Server, ServerConfig, DEFAULT_CGI_PATH, DEFAULT_HELLO_CMD_ID};
use tracing_subscriber::EnvFilter;

/// The tracing target of the CLI's own log lines (`stn` is the client's).
const LOG_TARGET: &str = "stn_cli";

/// stn: run the reference server, send tasks through stn's client, run the lab.
#[derive(Debug, Parser)]
#[command(name = "stn", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the reference server (long link and short link) until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Send tasks to a server and print one line per task and a summary.
    Send(send::SendArgs),
    /// Real-kernel lab: stn vs a peer HTTP client under nftables loss and
    /// outages in network namespaces (needs root and nft; skips otherwise).
    Lab(stn_lab::LabArgs),
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
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
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
    fn config(&self) -> ServerConfig {
        ServerConfig {
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
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    // Usage errors (and --help, --version) end here: clap prints them and
    // exits with 2 (0 for help and version).
    let cli = Cli::parse();
    // Logs go to stderr, coloured only on a terminal. The client's WARN per
    // failed task is left out by default: `stn send` prints each outcome.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,stn=error")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let result = match cli.command {
        Command::Serve(args) => serve(args).await.map(|()| ExitCode::SUCCESS),
        Command::Send(args) => send::run(args).await.map(|all_ok| {
            if all_ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }),
        Command::Lab(args) => stn_lab::run_cli(args).await.map(|()| ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|e| {
        report_error(&e);
        ExitCode::FAILURE
    })
}

/// Prints an error once, as its chain of causes. A backtrace only when
/// asked for with `RUST_LIB_BACKTRACE=1` (`RUST_BACKTRACE` is for panics:
/// a missing file is not a bug in stn).
#[allow(clippy::print_stderr)]
fn report_error(e: &anyhow::Error) {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_some_and(|v| v == "1") {
        eprintln!("stn: error: {e:?}");
    } else {
        eprintln!("stn: error: {e:#}");
    }
}

/// An optional address as a log field: the address, or `off`.
fn addr_text(addr: Option<SocketAddr>) -> String {
    addr.map_or_else(|| "off".to_owned(), |a| a.to_string())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = args.config();
    config.tls = args.tls.server_tls()?;
    let server = Server::start(config).await.context("starting the server")?;
    tracing::info!(
        target: LOG_TARGET,
        long = %addr_text(server.long_addr()),
        short = %addr_text(server.short_addr()),
        delay_ms = args.delay_ms,
        response_size = %args.response_size.map_or_else(|| "echo".to_owned(), |n| n.to_string()),
        fault = %args.fault,
        tls = config_tls(&server),
        "stn server running; Ctrl-C or SIGTERM to stop"
    );
    let signal = stop_signal()
        .await
        .context("waiting for Ctrl-C or SIGTERM")?;
    tracing::info!(target: LOG_TARGET, signal, stats = ?server.stats(), "shutting down");
    server.shutdown().await;
    Ok(())
}

/// Waits for Ctrl-C (SIGINT) or, on Unix, SIGTERM (what `kill`, systemd and
/// container runtimes send): both shut the server down the same way.
async fn stop_signal() -> std::io::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.map(|()| "SIGINT"),
            _ = term.recv() => Ok("SIGTERM"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.map(|()| "Ctrl-C")
    }
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
    use stn_server::{DEFAULT_CGI_PATH, DEFAULT_HELLO_CMD_ID};
    use stn_tokio::proto::{Channel, LimitKind, Profile, Response, Task};
    use stn_tokio::{Client, Endpoint, Error};

    /// Largest request body `--body-size` and `--body-file` accept: the
    /// engine's default long-link frame cap (1 MiB) is the tighter limit on
    /// that link; 64 MiB keeps a typo from exhausting memory.
    pub(crate) const MAX_BODY: u64 = 64 * 1024 * 1024;
    /// Most tasks one run sends (each keeps a result line in memory).
    const MAX_COUNT: u64 = 10_000_000;
    /// Most tasks in flight at once.
    const MAX_CONCURRENCY: u64 = 65_536;
    /// How often a run that is still waiting says how far it got (stderr).
    const PROGRESS_EVERY: Duration = Duration::from_secs(3);

    /// A `--timeout` value: `5s`, `250ms`, `1.5s`, `2m`, or plain seconds,
    /// within the engine's limit on a task's total timeout.
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
        let max = Task::MAX_TOTAL_TIMEOUT;
        if !(secs > 0.0 && secs <= max.as_secs_f64()) {
            return Err(format!(
                "{s:?} is out of range: give more than 0 and at most {} s (a task's longest total timeout)",
                max.as_secs()
            ));
        }
        Ok(Duration::from_secs_f64(secs))
    }

    /// A `-H` value: `NAME:VALUE`, the name an HTTP token.
    fn parse_header(s: &str) -> Result<(String, String), String> {
        let Some((name, value)) = s.split_once(':') else {
            return Err(format!("{s:?} is not NAME:VALUE"));
        };
        let name = name.trim();
        let value = value.trim();
        stn_tokio::proto::codec::http::check_request(
            "/",
            None,
            &[(name.to_owned(), value.to_owned())],
            None,
        )
        .map_err(|e| e.to_string())?;
        Ok((name.to_owned(), value.to_owned()))
    }

    /// Which link carries the tasks.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
    pub(crate) enum ChannelArg {
        /// HTTP POST to the CGI path (each --to's port).
        Short,
        /// Framed, on the persistent long link (--long-port, or the --to ports).
        Long,
        /// Either: the long link when it is up, else the short link (needs --long-port).
        Both,
    }

    #[derive(Debug, clap::Args)]
    pub(crate) struct SendArgs {
        /// A server endpoint, HOST:PORT (repeatable, or comma-separated).
        /// HOST is an IP (`[v6]:port` for IPv6) or a host name resolved
        /// with the system resolver. Each endpoint's port is its own
        /// short-link port; with `--channel long` the ports are long-link
        /// ports, each tried with every address.
        #[arg(long, value_name = "HOST:PORT", value_delimiter = ',', required = true, value_parser = parse_endpoint)]
        to: Vec<Endpoint>,
        /// A long-link port (repeatable), tried with every --to address;
        /// needed with `--channel both`, and replaces the --to ports with
        /// `--channel long`.
        #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
        long_port: Vec<u16>,
        /// CGI path (short link).
        #[arg(long, value_name = "PATH", default_value = DEFAULT_CGI_PATH)]
        cgi: String,
        /// Command id of each task (long link).
        #[arg(long, value_name = "ID", default_value_t = DEFAULT_HELLO_CMD_ID)]
        cmd_id: u32,
        /// Link to use.
        #[arg(long, value_enum, default_value_t = ChannelArg::Short)]
        channel: ChannelArg,
        /// An extra HTTP header of each short-link request, NAME:VALUE
        /// (repeatable), e.g. `-H Connection:Keep-Alive` to reuse
        /// connections.
        #[arg(short = 'H', long = "header", value_name = "NAME:VALUE", value_parser = parse_header)]
        headers: Vec<(String, String)>,
        /// Number of tasks.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
        count: u64,
        /// Retries per task after its first attempt, at most 30 (default:
        /// the engine's, 1).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=i64::from(Task::MAX_RETRY_COUNT)))]
        retry: Option<u8>,
        /// Request body size in bytes (each body starts with its task number),
        /// at most 64 MiB.
        #[arg(long, value_name = "B", default_value_t = 16, value_parser = clap::value_parser!(u64).range(0..=MAX_BODY), conflicts_with = "body_file")]
        body_size: u64,
        /// Send this file's bytes as every task's body (at most 64 MiB), e.g.
        /// a serialized protobuf request. Identical bodies count against the
        /// frequency limit: see --no-frequency-limit.
        #[arg(long, value_name = "FILE")]
        body_file: Option<PathBuf>,
        /// Keep trying each task until this long has passed since it was
        /// sent (its total timeout), e.g. `5s`, `250ms`, at most 10m:
        /// failed attempts are retried within it, so a refused connect is
        /// retried until then rather than reported at once. Default: the
        /// engine's own deadline (from the retries and the links' timeouts).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        timeout: Option<Duration>,
        /// Turn off Mars's anti-avalanche frequency limit for these tasks.
        /// Under every profile it refuses the 106th request with the same
        /// body since its table was last cleared (hourly), which a run with
        /// --body-file of more than 105 tasks reaches (Rust:
        /// `Task::limit_frequency(false)`).
        #[arg(long)]
        no_frequency_limit: bool,
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
        /// Print each response's body (and a non-200 reply's), after its line.
        #[arg(long)]
        print_body: bool,
        /// Print one JSON object per task as it ends (NDJSON, `"type":
        /// "task"`), then one summary object (`"type": "summary"`).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        tls: crate::tls_args::SendTls,
    }

    struct Outcome {
        index: u64,
        id: Option<u32>,
        result: Result<Response, Error>,
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
        let mut builder = Client::builder();
        let mut to_ports: Vec<u16> = Vec::new();
        for e in &args.to {
            builder = match args.channel {
                // Each endpoint keeps its port: its own short-link port.
                ChannelArg::Short | ChannelArg::Both => builder.add_endpoint(e.clone()),
                // The ports are the long link's, for every address.
                ChannelArg::Long => match (e.ip(), e.host_name()) {
                    (Some(ip), _) => builder.ip(ip),
                    (None, Some(host)) => builder.host(host),
                    (None, None) => builder,
                },
            };
            if let Some(port) = e.port().filter(|p| !to_ports.contains(p)) {
                to_ports.push(port);
            }
        }
        let long_ports = match args.channel {
            ChannelArg::Short => Vec::new(),
            ChannelArg::Long if args.long_port.is_empty() => to_ports,
            ChannelArg::Long | ChannelArg::Both => args.long_port.clone(),
        };
        for p in long_ports {
            builder = builder.long_link_port(p);
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

    /// Milliseconds, rounded to the microsecond (JSON without float noise).
    fn ms(d: Duration) -> f64 {
        round3(d.as_secs_f64() * 1e3)
    }

    fn round3(x: f64) -> f64 {
        (x * 1e3).round() / 1e3
    }

    /// An error as one line: its message and the causes it does not
    /// already say (the resolver's words for a name that did not resolve,
    /// rustls's for a TLS failure), and how to opt out of a limit here.
    fn error_text(e: &Error) -> String {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            let said = s.to_string();
            let plain = said
                .split(" (os error")
                .next()
                .unwrap_or(&said)
                .to_lowercase();
            if !text.to_lowercase().contains(&plain) {
                text.push_str(": ");
                text.push_str(&said);
            }
            source = s.source();
        }
        if e.task_error() == Some(&stn_tokio::proto::Error::Rejected(LimitKind::Frequency)) {
            text.push_str(" (stn send: --no-frequency-limit)");
        }
        text
    }

    /// A body as text: UTF-8 as it is, other bytes escaped.
    fn body_text(body: &[u8]) -> String {
        match std::str::from_utf8(body) {
            Ok(s) => s.to_owned(),
            Err(_) => body.escape_ascii().to_string(),
        }
    }

    /// The body `--print-body` shows: the response's, or a non-200 reply's.
    fn shown_body(o: &Outcome) -> Option<&[u8]> {
        match &o.result {
            Ok(r) => Some(&r.body),
            Err(e) => e.http_reply().map(|r| &r.body[..]),
        }
    }

    fn task_json(o: &Outcome, print_body: bool) -> serde_json::Value {
        let mut v = serde_json::json!({
            "type": "task",
            "index": o.index,
            "id": o.id,
            "ok": o.result.is_ok(),
            "duration_ms": ms(o.duration),
            "attempts": o.attempts,
        });
        match &o.result {
            Ok(r) => {
                v["status"] = r.status.into();
            }
            Err(e) => {
                v["error"] = error_text(e).into();
                v["error_kind"] = e.kind().to_string().into();
                v["status"] = e.status().into();
                v["addr"] = e.addr().map(|a| a.to_string()).into();
                if let Some(t) = e.task_error() {
                    let (err_type, err_code) = t.mars_code();
                    v["mars_code"] = serde_json::json!({ "type": err_type, "code": err_code });
                }
            }
        }
        if print_body {
            v["body"] = shown_body(o).map(body_text).into();
        }
        v
    }

    fn task_line(o: &Outcome) -> String {
        format!(
            "task {:>5} id={} {} {:.2} ms attempts={}{}",
            o.index,
            o.id.map_or_else(|| "-".to_owned(), |id| id.to_string()),
            if o.result.is_ok() { "ok   " } else { "error" },
            o.duration.as_secs_f64() * 1e3,
            o.attempts,
            o.result
                .as_ref()
                .err()
                .map(|e| format!(" ({})", error_text(e)))
                .unwrap_or_default(),
        )
    }

    /// Runs the tasks; `Ok(true)` if every one succeeded.
    pub(crate) async fn run(args: SendArgs) -> anyhow::Result<bool> {
        if args.channel == ChannelArg::Both && args.long_port.is_empty() {
            // A usage error (exit 2), like clap's own.
            use clap::CommandFactory;
            crate::Cli::command()
                .error(
                    clap::error::ErrorKind::MissingRequiredArgument,
                    "--channel both needs --long-port PORT (the --to ports are the short link's)",
                )
                .exit();
        }
        let file_body = args.body_file.as_ref().map(read_body_file).transpose()?;
        let client = client(&args)?;
        let channel = match args.channel {
            ChannelArg::Short => Channel::Short,
            ChannelArg::Long => Channel::Long,
            ChannelArg::Both => Channel::Both,
        };
        let next = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Outcome>();
        let started = Instant::now();
        for _ in 0..args.concurrency.min(args.count.max(1)) {
            let (client, next, tx) = (client.clone(), next.clone(), tx.clone());
            // Bounded by MAX_BODY, so it fits a usize.
            let size = args.body_size as usize;
            let early_data = args.tls.early_data;
            let limit_frequency = !args.no_frequency_limit;
            let (cgi, cmd_id, count, retry, timeout, file_body, headers) = (
                args.cgi.clone(),
                args.cmd_id,
                args.count,
                args.retry,
                args.timeout,
                file_body.clone(),
                args.headers.clone(),
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
                        .early_data(early_data)
                        .limit_frequency(limit_frequency);
                    for (name, value) in &headers {
                        task = task.header(name.clone(), value.clone());
                    }
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
                        result: done.outcome,
                        duration: t0.elapsed(),
                        attempts: done.attempts,
                    });
                }
            });
        }
        drop(tx);
        // Grows with the results that arrive, not with the requested count.
        let mut outcomes = Vec::new();
        let mut failed = 0usize;
        let mut progress =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        loop {
            let o = tokio::select! {
                o = rx.recv() => match o {
                    Some(o) => o,
                    None => break,
                },
                _ = progress.tick() => {
                    eprintln!(
                        "stn send: {}/{} done ({failed} failed) after {:.1} s; waiting for the rest",
                        outcomes.len(),
                        args.count,
                        started.elapsed().as_secs_f64(),
                    );
                    continue;
                }
            };
            failed += usize::from(o.result.is_err());
            if args.json {
                println!("{}", task_json(&o, args.print_body));
            } else {
                println!("{}", task_line(&o));
                if args.print_body {
                    if let Some(body) = shown_body(&o) {
                        println!("  body ({} bytes): {}", body.len(), body_text(body));
                    }
                }
            }
            outcomes.push(o);
        }
        let total = started.elapsed();
        let tls = client.snapshot().await.map(|s| s.tls);
        client.shutdown().await;

        let successes = outcomes.len() - failed;
        let attempts: u64 = outcomes.iter().map(|o| u64::from(o.attempts)).sum();
        let mut lat: Vec<f64> = outcomes
            .iter()
            .filter(|o| o.result.is_ok())
            .map(|o| o.duration.as_secs_f64() * 1e3)
            .collect();
        lat.sort_by(f64::total_cmp);
        let mean = (!lat.is_empty()).then(|| lat.iter().sum::<f64>() / lat.len() as f64);
        let (p50, p95, p99) = (
            quantile(&lat, 0.50),
            quantile(&lat, 0.95),
            quantile(&lat, 0.99),
        );
        if args.json {
            let r = |v: Option<f64>| v.map(round3);
            let report = serde_json::json!({
                "type": "summary",
                "channel": format!("{:?}", args.channel).to_lowercase(),
                "profile": args.profile.to_string(),
                "count": args.count,
                "successes": successes,
                "failures": failed,
                "attempts": attempts,
                "total_ms": ms(total),
                "latency_ms": { "mean": r(mean), "p50": r(p50), "p95": r(p95), "p99": r(p99) },
                "tls": tls.filter(|_| args.tls.tls).map(|t| serde_json::json!({
                    "handshakes": t.handshakes,
                    "resumed": t.resumed,
                    "failed": t.failed,
                    "early_data": t.early_data,
                    "early_accepted": t.early_accepted,
                })),
            });
            println!("{report}");
        } else {
            let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
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
        Ok(failed == 0)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn limits_are_the_engines() {
            assert!(parse_duration("600s").is_ok());
            let err = parse_duration("11m").unwrap_err();
            assert!(err.contains("at most 600 s"), "{err}");
            assert!(parse_header("X-Trace: 1").is_ok());
            assert!(parse_header("Bad Name:1").is_err());
            assert!(parse_header("novalue").is_err());
        }

        #[test]
        fn json_numbers_are_rounded() {
            assert_eq!(ms(Duration::from_nanos(2_081_269_000)), 2081.269);
            assert_eq!(round3(2.081_269_000_000_000_3), 2.081);
        }
    }
}

fn config_tls(server: &stn_server::ServerHandle) -> bool {
    server.config().tls.is_some()
}

/// The TLS flags of `stn serve` and `stn send`.
mod tls_args {
    use std::path::PathBuf;

    use anyhow::Context;
    use stn_server::tls::{self, SelfSigned, ServerTls};
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
                tracing::info!(target: crate::LOG_TARGET, ca = %out.display(), names = %self.tls_names.join(","), "self-signed TLS certificate made; its CA written");
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
