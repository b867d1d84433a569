//! The real-kernel lab (`stn lab`): stn's client against the reference
//! server over a real Linux TCP stack, with packet loss and outages made by
//! nftables, beside a real HTTP client as the peer.
//!
//! How it works:
//!
//! - Two network namespaces (`<prefix>-cli`, `<prefix>-srv`, default prefix
//!   `stnlab`) joined by a veth pair on a private /30 (default
//!   10.231.0.1 ↔ 10.231.0.2). The host's own networking is untouched. Stale
//!   namespaces of the same names are deleted first; a guard deletes them
//!   again when the lab ends, also on error, panic or Ctrl-C.
//! - The reference [`Server`] (short link) runs on a thread
//!   that entered the server namespace (`setns(2)`), the clients on a thread
//!   that entered the client namespace; each thread runs its own tokio
//!   runtime, so every socket is made in its namespace.
//! - Loss: in each namespace an nftables input rule `numgen random mod 100
//!   < N drop` on the veth, so each direction loses N% of its packets on
//!   arrival; counters report the loss actually applied. Outage: a drop-all
//!   input rule in both namespaces, added at t=0 and removed after R s.
//! - Clients ([`LabClient`]): `stn` (profile stn, short link, retry 0, the
//!   server's IP four times — the Mars benchmark's setup),
//!   `stn-default-retry` (the same with the engine's default retry count,
//!   so a longer task deadline), `mars-2017` (the
//!   same with the 2017 constants and the IP ban off), and `peer`: reqwest
//!   set up like OkHttp 2.x in that benchmark (a new client per call,
//!   `Connection: close`, 10 s connect and read timeouts, one attempt).
//! - Loss runs: per loss rate, each client makes `calls` sequential calls;
//!   the clients run side by side. Outage runs: one call per client, started
//!   at t=0; the table shows completion time from t=0 or `fail @ t`.
//!
//! It needs root, `ip` and `nft`; [`preflight`] says why not, and `stn lab`
//! then prints [`skip_message`] and exits 0.
//!
//! With delay and bandwidth: `stn lab --scenario FILE.toml` ([`scenario`])
//! replaces the veth pair with TUN devices and the [`LinkEmulator`], which
//! carries every packet through stn-sim's own link model, and runs an
//! stn-sim scenario file on the kernel beside the simulator; it needs root,
//! `ip` and `/dev/net/tun` ([`scenario_preflight`]). See `docs/lab.md`.
//!
//! ```no_run
//! # async fn lab() -> anyhow::Result<()> {
//! use stn_lab::{preflight, run, skip_message, LabConfig};
//! if let Err(why) = preflight() {
//!     println!("{}", skip_message(&why));
//!     return Ok(());
//! }
//! let report = run(&LabConfig::quick()).await?;
//! println!("{}", report.markdown());
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod calls;
mod cli;
mod emulator;
mod netns;
mod nft;
mod report;
pub mod scenario;
pub mod zero_rtt;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use stn_proto::Profile;
use tokio::sync::{mpsc, watch};

use calls::CallRecord;
use netns::{LabNet, Names, NsRuntime};
use stn_server::{Server, ServerConfig};

pub use cli::{run_cli, LabArgs};
pub use emulator::{DirectionStats, EmulatorStats, LinkEmulator};
pub use report::{LabReport, LossRow, OutageResult, OutageRow, SeriesStats};

/// What `stn lab` prints (followed by the reason in parentheses) when it
/// cannot run.
pub const SKIP_PREFIX: &str = "skipping real-kernel lab: needs root and nft";

/// The skip line for a [`preflight`] reason.
pub fn skip_message(reason: &str) -> String {
    format!("{SKIP_PREFIX} ({reason})")
}

/// `Ok` when the lab can run here: root, and `ip` and `nft` present.
///
/// # Errors
///
/// Why not, in a few words.
pub fn preflight() -> Result<(), String> {
    need_root()?;
    need_tool("ip", &["-V"], "iproute2")?;
    need_tool("nft", &["--version"], "nftables")
}

/// What `stn lab --scenario` prints (followed by the reason in parentheses)
/// when it cannot run.
pub const SCENARIO_SKIP_PREFIX: &str = "skipping real-kernel scenario lab: needs root, ip and TUN";

/// The skip line for a [`scenario_preflight`] reason.
pub fn scenario_skip_message(reason: &str) -> String {
    format!("{SCENARIO_SKIP_PREFIX} ({reason})")
}

/// `Ok` when the link emulator can run here: root, `ip`, and
/// `/dev/net/tun` (nftables is not needed).
///
/// # Errors
///
/// Why not, in a few words.
pub fn scenario_preflight() -> Result<(), String> {
    need_root()?;
    need_tool("ip", &["-V"], "iproute2")?;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .map(drop)
        .map_err(|e| format!("cannot open /dev/net/tun: {e}"))
}

fn need_root() -> Result<(), String> {
    let euid = rustix::process::geteuid();
    if euid.is_root() {
        Ok(())
    } else {
        Err(format!("not root: euid {}", euid.as_raw()))
    }
}

fn need_tool(tool: &str, args: &[&str], package: &str) -> Result<(), String> {
    let found = std::process::Command::new(tool)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        Ok(())
    } else {
        Err(format!("`{tool}` not found: install {package}"))
    }
}

/// A client the lab runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LabClient {
    /// stn's [`Client`](stn_tokio::Client), profile stn, retry 0 (as the
    /// benchmark ran Mars).
    Stn,
    /// The same with the engine's default retry count (a longer task
    /// deadline), as an app would run it.
    StnDefaultRetry,
    /// stn's client with profile mars-2017 and the IP ban off (Mars as
    /// benchmarked).
    Mars2017,
    /// reqwest like OkHttp 2.x in the Mars benchmark.
    Peer,
}

impl LabClient {
    /// Every client, in table order.
    pub const ALL: [LabClient; 4] = [
        LabClient::Stn,
        LabClient::StnDefaultRetry,
        LabClient::Mars2017,
        LabClient::Peer,
    ];

    /// Its name in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LabClient::Stn => "stn",
            LabClient::StnDefaultRetry => "stn-default-retry",
            LabClient::Mars2017 => "mars-2017",
            LabClient::Peer => "peer",
        }
    }

    fn profile(self) -> Option<Profile> {
        match self {
            LabClient::Stn | LabClient::StnDefaultRetry => Some(Profile::Stn),
            LabClient::Mars2017 => Some(Profile::Mars2017),
            LabClient::Peer => None,
        }
    }

    /// The task retry count: 0 as in the benchmark, `None` for the engine's
    /// default.
    fn retry(self) -> Option<u8> {
        match self {
            LabClient::StnDefaultRetry => None,
            _ => Some(0),
        }
    }
}

impl fmt::Display for LabClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LabClient {
    type Err = String;

    /// `stn`, `stn-default-retry`, `mars-2017` or `peer`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LabClient::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown lab client {s:?}: expected stn, stn-default-retry, mars-2017 or peer"
                )
            })
    }
}

/// Names and addresses of the lab network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetSpec {
    /// Namespace and interface name prefix (1..=13 of `[A-Za-z0-9_-]`):
    /// namespaces `<prefix>-cli` and `<prefix>-srv`, veth `<prefix>-c` and
    /// `<prefix>-s`.
    pub prefix: String,
    /// The client side's address (the two addresses share one /30).
    pub client_ip: Ipv4Addr,
    /// The server side's address.
    pub server_ip: Ipv4Addr,
}

impl Default for NetSpec {
    /// `stnlab`, 10.231.0.1 ↔ 10.231.0.2.
    fn default() -> Self {
        NetSpec {
            prefix: "stnlab".to_owned(),
            client_ip: Ipv4Addr::new(10, 231, 0, 1),
            server_ip: Ipv4Addr::new(10, 231, 0, 2),
        }
    }
}

/// What the lab runs. [`Default`] is the full lab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabConfig {
    /// The lab network.
    pub net: NetSpec,
    /// Loss rates in percent (each direction), one loss run per entry.
    pub loss_percents: Vec<u8>,
    /// 100% outage lengths, one outage run per entry.
    pub outages: Vec<Duration>,
    /// Sequential calls per client per loss rate.
    pub calls: usize,
    /// The clients, side by side.
    pub clients: Vec<LabClient>,
    /// The lab's own bound on one call (a client that never ends is
    /// recorded as failed at this point).
    pub call_cap: Duration,
    /// The server's short-link port.
    pub server_port: u16,
}

impl Default for LabConfig {
    /// Loss 0, 10, 30%; outages 5, 15, 25 s; 50 calls; every client.
    fn default() -> Self {
        LabConfig {
            net: NetSpec::default(),
            loss_percents: vec![0, 10, 30],
            outages: [5, 15, 25].map(Duration::from_secs).to_vec(),
            calls: 50,
            clients: LabClient::ALL.to_vec(),
            call_cap: Duration::from_secs(120),
            server_port: 8080,
        }
    }
}

impl LabConfig {
    /// The short version: loss 0 and 10% with 5 calls, one 3 s outage.
    pub fn quick() -> Self {
        LabConfig {
            loss_percents: vec![0, 10],
            outages: vec![Duration::from_secs(3)],
            calls: 5,
            ..LabConfig::default()
        }
    }
}

/// One client's calls in one loss run.
#[derive(Debug)]
struct Series {
    client: LabClient,
    records: Vec<CallRecord>,
    total: Duration,
}

/// Runs the lab: builds the network, runs every loss and outage run, tears
/// the network down (also when it fails).
///
/// # Errors
///
/// The lab itself failed (a command, the server, a namespace). Failed calls
/// are results, not errors.
pub async fn run(config: &LabConfig) -> anyhow::Result<LabReport> {
    if let Some(p) = config.loss_percents.iter().find(|&&p| p > 100) {
        bail!("loss {p}% is over 100%");
    }
    if config.clients.is_empty() {
        bail!("no lab clients");
    }
    let names = Names::new(&config.net)?;
    // Declared first so it is dropped last: the runtimes (and their
    // sockets) leave the namespaces before they are deleted.
    let net = LabNet::create(names.clone()).context("creating the lab network")?;
    let hosts = LabHosts::start(&names, config.server_port, None).await?;
    let (cli_rt, server_addr) = (&hosts.cli_rt, hosts.server_addr);

    let mut loss_rows = Vec::new();
    for &percent in &config.loss_percents {
        nft::set_loss(&names, percent)?;
        tracing::info!(percent, calls = config.calls, "loss run");
        let jobs: Vec<_> = config
            .clients
            .iter()
            .map(|&c| {
                cli_rt
                    .handle()
                    .spawn(series(c, server_addr, config.calls, config.call_cap))
            })
            .collect();
        let mut series_stats = Vec::new();
        for job in jobs {
            let s = job.await??;
            let stats = SeriesStats::new(s.client, &s.records, s.total);
            tracing::info!(
                percent,
                client = %s.client,
                ok = stats.successes,
                calls = stats.calls,
                total_s = s.total.as_secs_f64(),
                "loss run done"
            );
            series_stats.push(stats);
        }
        let (packets_seen, packets_dropped) = nft::loss_counters(&names)?;
        loss_rows.push(LossRow {
            loss_percent: percent,
            packets_seen,
            packets_dropped,
            series: series_stats,
        });
    }
    nft::clear_loss(&names)?;

    let mut outage_rows = Vec::new();
    for &outage in &config.outages {
        // Let the previous run's leftovers (FINs, retransmissions) drain.
        tokio::time::sleep(Duration::from_secs(1)).await;
        outage_rows.push(outage_run(&names, cli_rt, config, server_addr, outage).await?);
    }

    hosts.shutdown().await?;
    drop(net);
    Ok(LabReport {
        kernel: kernel_release(),
        client_ip: names.client_ip,
        server_ip: names.server_ip,
        calls: config.calls,
        loss: loss_rows,
        outages: outage_rows,
    })
}

/// The two namespaces' runtimes and the reference server in the server
/// namespace, reachable from the client namespace.
#[derive(Debug)]
struct LabHosts {
    /// Runs the clients, inside the client namespace.
    cli_rt: NsRuntime,
    srv_rt: NsRuntime,
    server: stn_server::ServerHandle,
    /// The server's short-link address.
    server_addr: SocketAddr,
    /// The server's long-link address, when it serves one.
    long_addr: Option<SocketAddr>,
}

impl LabHosts {
    /// Starts both runtimes and the server's short link on `port`
    /// (`response_size` as [`ServerConfig::response_size`]), then waits
    /// until a client connect reaches it.
    async fn start(names: &Names, port: u16, response_size: Option<usize>) -> anyhow::Result<Self> {
        Self::start_with(
            names,
            ServerConfig {
                response_size,
                ..ServerConfig::default()
            },
            port,
            None,
        )
        .await
    }

    /// [`start`](Self::start) with the server's configuration: its short
    /// link on `port` of the server namespace, its long link on `long_port`
    /// when given (else none).
    async fn start_with(
        names: &Names,
        config: ServerConfig,
        port: u16,
        long_port: Option<u16>,
    ) -> anyhow::Result<Self> {
        let srv_rt = NsRuntime::start(&names.srv_ns)?;
        let cli_rt = NsRuntime::start(&names.cli_ns)?;
        let server_addr = SocketAddr::new(names.server_ip.into(), port);
        let long_addr = long_port.map(|p| SocketAddr::new(names.server_ip.into(), p));
        let server = srv_rt
            .handle()
            .spawn(Server::start(ServerConfig {
                long_addr,
                short_addr: Some(server_addr),
                ..config
            }))
            .await?
            .context("starting the reference server in the server namespace")?;
        tracing::info!(%server_addr, ?long_addr, cli = %names.cli_ns, srv = %names.srv_ns, "lab network up");
        wait_reachable(&cli_rt, server_addr).await?;
        if let Some(addr) = long_addr {
            wait_reachable(&cli_rt, addr).await?;
        }
        Ok(LabHosts {
            cli_rt,
            srv_rt,
            server,
            server_addr,
            long_addr,
        })
    }

    /// Stops the server, then both runtimes (their sockets leave the
    /// namespaces before these are deleted).
    async fn shutdown(self) -> anyhow::Result<()> {
        self.srv_rt.handle().spawn(self.server.shutdown()).await?;
        drop(self.cli_rt);
        drop(self.srv_rt);
        Ok(())
    }
}

/// Waits until a TCP connect from the client namespace reaches the server.
async fn wait_reachable(cli_rt: &NsRuntime, server: SocketAddr) -> anyhow::Result<()> {
    cli_rt
        .handle()
        .spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let attempt = tokio::time::timeout(
                    Duration::from_secs(1),
                    tokio::net::TcpStream::connect(server),
                )
                .await;
                match attempt {
                    Ok(Ok(_)) => return Ok(()),
                    _ if Instant::now() >= deadline => {
                        bail!("the server {server} is not reachable from the client namespace")
                    }
                    _ => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        })
        .await?
}

/// `calls` sequential calls by one client (in the client namespace).
async fn series(
    client: LabClient,
    server: SocketAddr,
    calls: usize,
    cap: Duration,
) -> anyhow::Result<Series> {
    let t0 = Instant::now();
    let mut records = Vec::with_capacity(calls);
    match client.profile() {
        None => {
            for i in 0..calls {
                records.push(calls::peer_call(server, i, cap).await);
                log_call(client, i, &records[i]);
            }
        }
        Some(profile) => {
            // One client for the whole run, as an app keeps its client.
            let stn = calls::stn_client(profile, server)?;
            for i in 0..calls {
                records.push(calls::stn_call(&stn, client.name(), client.retry(), i, cap).await);
                log_call(client, i, &records[i]);
            }
            stn.shutdown().await;
        }
    }
    Ok(Series {
        client,
        records,
        total: t0.elapsed(),
    })
}

fn log_call(client: LabClient, index: usize, r: &CallRecord) {
    tracing::debug!(
        %client,
        index,
        ok = r.ok,
        secs = r.duration.as_secs_f64(),
        attempts = r.attempts,
        error = r.error.as_deref().unwrap_or(""),
        "lab call"
    );
}

/// One outage run: every client prepares, the outage starts (t=0), every
/// client starts one call, the outage ends at t=`outage`.
async fn outage_run(
    names: &Names,
    cli_rt: &NsRuntime,
    config: &LabConfig,
    server: SocketAddr,
    outage: Duration,
) -> anyhow::Result<OutageRow> {
    tracing::info!(secs = outage.as_secs_f64(), "outage run");
    let (ready_tx, mut ready_rx) = mpsc::channel::<()>(config.clients.len());
    let (start_tx, start_rx) = watch::channel(false);
    let cap = config.call_cap;
    let jobs: Vec<_> = config
        .clients
        .iter()
        .map(|&client| {
            let (ready_tx, mut start_rx) = (ready_tx.clone(), start_rx.clone());
            cli_rt.handle().spawn(async move {
                // A fresh stn client per run: no history from earlier runs.
                let stn = client
                    .profile()
                    .map(|p| calls::stn_client(p, server))
                    .transpose()?;
                let _ = ready_tx.send(()).await;
                // Every sender gone: the driver sees a client that never got ready.
                drop(ready_tx);
                start_rx.wait_for(|&go| go).await?;
                let record = match &stn {
                    Some(stn) => calls::stn_call(stn, client.name(), client.retry(), 0, cap).await,
                    None => calls::peer_call(server, 0, cap).await,
                };
                if let Some(stn) = stn {
                    stn.shutdown().await;
                }
                anyhow::Ok((client, record))
            })
        })
        .collect();
    drop(ready_tx);
    for _ in 0..config.clients.len() {
        ready_rx
            .recv()
            .await
            .context("an outage client failed to start")?;
    }
    nft::outage_on(names)?;
    let t0 = Instant::now();
    start_tx.send_replace(true);
    tokio::time::sleep_until((t0 + outage).into()).await;
    nft::outage_off(names)?;
    let restored_after = t0.elapsed();
    let mut results = Vec::new();
    for job in jobs {
        let (client, record) = job.await??;
        let at = record.ended.saturating_duration_since(t0);
        tracing::info!(%client, ok = record.ok, at_s = at.as_secs_f64(), "outage call done");
        results.push(OutageResult {
            client,
            ok: record.ok,
            at,
            attempts: record.attempts,
            error: record.error,
        });
    }
    Ok(OutageRow {
        outage,
        restored_after,
        results,
    })
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}
