//! `stn lab --zero-rtt`: what TLS 1.3 early data (0-RTT) saves on a real
//! kernel path.
//!
//! Two namespaces joined by the link emulator at a fixed round trip (no
//! loss, no jitter, unlimited bandwidth), the reference server in one, stn's
//! [`Client`](stn_tokio::Client) in the other, one series of calls per mode:
//!
//! - `plain`: no TLS (TCP connect, then the request);
//! - `tls`: TLS, every task without early data (TCP, the resumed handshake's
//!   round trip, then the request);
//! - `tls-0rtt`: TLS, every task allows early data (TCP, then the request
//!   with the ClientHello, answered as half-RTT data);
//! - `tls-0rtt-close`: as `tls-0rtt`, but each call closes its connection
//!   (`Connection: close`) and the next starts at once.
//!
//! In the first three, each call waits until the server has closed the
//! previous call's connection for idleness, so every call opens a new
//! connection and, with TLS, resumes a session from the second call on (the
//! first pays the full handshake and is reported apart). The last shows the
//! cost of closing at once: the server sends its session tickets after the
//! client's Finished, which is after a 0-RTT reply, so a connection closed
//! on its reply gets no new ticket and the client runs out of them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use stn_proto::{Channel, Task};
use stn_sim::link::LinkConditions;
use stn_sim::path::{PathConditions, PathSchedule};

use super::emulator::LinkEmulator;
use super::netns::{LabNet, Names};
use super::{kernel_release, LabHosts, NetSpec};
use stn_server::tls::{enable_early_data, SelfSigned, ServerTls};
use stn_server::{ServerConfig, DEFAULT_CGI_PATH};
use stn_tokio::tls::TlsStats;
use stn_tokio::Client;

/// The server closes a connection idle for 3 round trips and this long
/// (calls are spaced past it): past the client's Finished, which follows a
/// 0-RTT reply by a round trip and brings the server's new session tickets.
const SERVER_IDLE_EXTRA: Duration = Duration::from_millis(100);
/// Request body size: a small call, well within the early-data room.
const BODY_SIZE: usize = 64;

/// How `stn lab --zero-rtt` runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ZeroRttConfig {
    /// The lab network.
    pub net: NetSpec,
    /// The path's round trip (half each way).
    pub rtt: Duration,
    /// Calls per mode (the first of each TLS series pays the full handshake).
    pub calls: usize,
    /// Cap on one call.
    pub call_cap: Duration,
    /// The reference server's port.
    pub server_port: u16,
}

impl Default for ZeroRttConfig {
    /// 200 ms round trip, 10 calls per mode, 30 s per call.
    fn default() -> Self {
        ZeroRttConfig {
            net: NetSpec::default(),
            rtt: Duration::from_millis(200),
            calls: 10,
            call_cap: Duration::from_secs(30),
            server_port: 8443,
        }
    }
}

/// One series' way of calling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No TLS.
    Plain,
    /// TLS, no early data.
    Tls,
    /// TLS, every task allows early data.
    TlsEarly,
    /// TLS with early data, each call's connection closed on its reply.
    TlsEarlyClose,
}

impl Mode {
    /// Every mode, in report order.
    pub const ALL: [Mode; 4] = [Mode::Plain, Mode::Tls, Mode::TlsEarly, Mode::TlsEarlyClose];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Tls => "tls",
            Mode::TlsEarly => "tls-0rtt",
            Mode::TlsEarlyClose => "tls-0rtt-close",
        }
    }

    fn tls(self) -> bool {
        self != Mode::Plain
    }

    fn early(self) -> bool {
        matches!(self, Mode::TlsEarly | Mode::TlsEarlyClose)
    }

    fn keep_alive(self) -> bool {
        self != Mode::TlsEarlyClose
    }
}

/// One mode's series.
#[derive(Clone, Debug, PartialEq)]
pub struct ZeroRttRow {
    /// The mode.
    pub mode: Mode,
    /// Calls made and how many were answered correctly.
    pub calls: usize,
    /// Of them, answered with the right body.
    pub ok: usize,
    /// The first call (with TLS: the full handshake).
    pub first: Option<Duration>,
    /// The other successful calls, sorted.
    pub rest: Vec<Duration>,
    /// The client's TLS handshakes: resumed, with early data, accepted.
    pub tls: TlsStats,
    /// Connections whose early data the server accepted.
    pub server_early: u64,
    /// Why calls failed.
    pub failures: Vec<String>,
}

impl ZeroRttRow {
    /// The median of the calls after the first.
    pub fn median(&self) -> Option<Duration> {
        self.rest.get(self.rest.len() / 2).copied()
    }
}

/// What `stn lab --zero-rtt` measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ZeroRttReport {
    /// `uname -r`.
    pub kernel: String,
    /// The path's round trip.
    pub rtt: Duration,
    /// One row per mode.
    pub rows: Vec<ZeroRttRow>,
}

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "-".to_owned(),
        |d| format!("{:.1}", d.as_secs_f64() * 1e3),
    )
}

impl ZeroRttReport {
    /// The report as a Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "TLS 1.3 early data on a real path: {} ms round trip, kernel {}\n\n\
             | mode | ok | first call ms | later calls: median ms | min | max | \
             handshakes | resumed | sent early | accepted | server accepted |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            self.rtt.as_millis(),
            self.kernel
        );
        for r in &self.rows {
            out.push_str(&format!(
                "| {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.mode.name(),
                r.ok,
                r.calls,
                ms(r.first),
                ms(r.median()),
                ms(r.rest.first().copied()),
                ms(r.rest.last().copied()),
                r.tls.handshakes,
                r.tls.resumed,
                r.tls.early_data,
                r.tls.early_accepted,
                r.server_early,
            ));
        }
        for r in self.rows.iter().filter(|r| !r.failures.is_empty()) {
            out.push_str(&format!(
                "\n{} failures: {}\n",
                r.mode.name(),
                r.failures.join("; ")
            ));
        }
        out
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
        let rows: Vec<_> = self
            .rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "mode": r.mode.name(),
                    "calls": r.calls,
                    "ok": r.ok,
                    "first_ms": secs(r.first),
                    "later_ms": r.rest.iter().map(|d| d.as_secs_f64() * 1e3).collect::<Vec<_>>(),
                    "median_ms": secs(r.median()),
                    "handshakes": r.tls.handshakes,
                    "resumed": r.tls.resumed,
                    "early_data": r.tls.early_data,
                    "early_accepted": r.tls.early_accepted,
                    "server_early": r.server_early,
                    "failures": r.failures,
                })
            })
            .collect();
        serde_json::json!({
            "kernel": self.kernel,
            "rtt_ms": self.rtt.as_secs_f64() * 1e3,
            "rows": rows,
        })
        .to_string()
    }
}

/// Runs every mode; the network is torn down also when it fails.
///
/// # Errors
///
/// The lab itself failed (a command, the server, a namespace, the TUN
/// devices). Failed calls are results, not errors.
pub async fn run(config: &ZeroRttConfig) -> anyhow::Result<ZeroRttReport> {
    anyhow::ensure!(config.calls >= 2, "--calls must be at least 2");
    let names = Names::new(&config.net)?;
    // Declared first so it is dropped last (after the devices and runtimes).
    let net = LabNet::create_namespaces(names.clone()).context("creating the lab namespaces")?;
    let emulator = Arc::new(LinkEmulator::start(&names).context("starting the link emulator")?);
    let half = LinkConditions {
        delay: config.rtt / 2,
        ..LinkConditions::default()
    };
    emulator.set_path(&PathSchedule::constant(PathConditions::symmetric(half)), 1);
    let cert = SelfSigned::generate(&[names.server_ip.to_string()])?;
    let mut rows = Vec::new();
    for mode in Mode::ALL {
        let tls = mode.tls().then(|| {
            let mut tls = cert.server_config()?;
            enable_early_data(&mut tls);
            anyhow::Ok(ServerTls::new(tls))
        });
        let server = ServerConfig {
            tls: tls.transpose()?,
            idle_timeout: server_idle(config.rtt),
            ..ServerConfig::default()
        };
        let hosts = LabHosts::start_with(&names, server, config.server_port, None).await?;
        let series = Series {
            mode,
            server: hosts.server_addr,
            ca_pem: cert.ca_pem.clone(),
            calls: config.calls,
            cap: config.call_cap,
            rtt: config.rtt,
        };
        let mut row = series.run(&hosts).await?;
        row.server_early = hosts.server.stats().tls_early_data;
        tracing::info!(mode = mode.name(), ok = row.ok, median = ?row.median(), "zero-rtt series done");
        rows.push(row);
        hosts.shutdown().await?;
    }
    drop(emulator);
    drop(net);
    Ok(ZeroRttReport {
        kernel: kernel_release(),
        rtt: config.rtt,
        rows,
    })
}

fn server_idle(rtt: Duration) -> Duration {
    rtt * 3 + SERVER_IDLE_EXTRA
}

/// One mode's calls, by a client whose driver runs in the client namespace.
struct Series {
    mode: Mode,
    server: SocketAddr,
    ca_pem: String,
    calls: usize,
    cap: Duration,
    rtt: Duration,
}

impl Series {
    async fn run(self, hosts: &LabHosts) -> anyhow::Result<ZeroRttRow> {
        let mut builder = Client::builder()
            .ip(self.server.ip())
            .short_link_port(self.server.port());
        if self.mode.tls() {
            let roots = stn_tokio::tls::roots_from_pem(self.ca_pem.as_bytes())?;
            builder = builder.tls(stn_tokio::tls::client_config(roots, &[b"http/1.1"])?);
        }
        // Built on the client namespace's runtime: its driver, and so its
        // sockets, live there.
        let client = hosts
            .cli_rt
            .handle()
            .spawn(async move { builder.build() })
            .await??;
        let server = &hosts.server;
        let mut row = ZeroRttRow {
            mode: self.mode,
            calls: self.calls,
            ok: 0,
            first: None,
            rest: Vec::new(),
            tls: TlsStats::default(),
            server_early: 0,
            failures: Vec::new(),
        };
        for index in 0..self.calls {
            if self.mode.keep_alive() {
                self.wait_closed(server).await;
            }
            let mut body = format!("{}:{index}:", self.mode.name()).into_bytes();
            body.resize(BODY_SIZE, b'x');
            let mut task = Task::new(8, DEFAULT_CGI_PATH, body.clone())
                .channel(Channel::Short)
                .retry_count(0)
                .hedge(true)
                .early_data(self.mode.early());
            if self.mode.keep_alive() {
                task = task.header("Connection", "Keep-Alive");
            }
            let t0 = Instant::now();
            let done = tokio::time::timeout(self.cap, client.send(task)).await;
            let took = t0.elapsed();
            match done {
                Ok(Ok(reply)) if reply.body == stn_server::hello_response_body(&body, None) => {
                    row.ok += 1;
                    if index == 0 {
                        row.first = Some(took);
                    } else {
                        row.rest.push(took);
                    }
                }
                Ok(Ok(_)) => row.failures.push(format!("call {index}: wrong body")),
                Ok(Err(e)) => row.failures.push(format!("call {index}: {e}")),
                Err(_) => row
                    .failures
                    .push(format!("call {index}: no end within {:?}", self.cap)),
            }
        }
        row.rest.sort();
        if let Some(snap) = client.snapshot().await {
            row.tls = snap.tls;
        }
        client.shutdown().await;
        Ok(row)
    }

    /// Until the server has closed every connection for idleness and its
    /// FIN has reached the client (a round trip more), bounded.
    async fn wait_closed(&self, server: &stn_server::ServerHandle) {
        let deadline = Instant::now() + server_idle(self.rtt) * 4;
        while server.stats().short_connections_open > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(self.rtt).await;
    }
}
