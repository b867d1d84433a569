//! Everything about one run except the client ([`RunSpec`]), and the
//! simulated world it builds: the server host with its short-link and
//! long-link apps (behind TLS when the run asks), and the dead endpoints of
//! the resolver's answer.

use std::net::{IpAddr, SocketAddr};

use stn_proto::Duration;

use crate::apps::FixedResponseApp;
use crate::bench::long_server::LongLinkServerApp;
use crate::client::SimClient;
use crate::clients::peers::KeepAliveApp;
use crate::host::{PortMode, ServerApp};
use crate::path::{PathConditions, PathSchedule};
use crate::preset::Preset;
use crate::tls::TlsServer;
use crate::Simulation;

/// The server's address (short link).
pub const SERVER: SocketAddr =
    SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2)), 8080);
/// The long-link port on the same host.
pub const LONG_PORT: u16 = 8081;
/// Response body of the benchmark's `/mars/hello2` (tens of bytes of
/// protobuf; 100 bytes here, as in the peer tests).
pub const RESPONSE_LEN: usize = 100;
/// Request body of the benchmark's hello (tens of bytes; 64 here).
pub const REQUEST_LEN: usize = 64;
/// How many times `onNewDns` returns the server's IP (mars-stn.md §10.3).
pub const BENCHMARK_DNS_COPIES: usize = 4;

/// One entry of the resolver's answer in a run with dead endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Candidate {
    /// The live server ([`SERVER`]).
    Live,
    /// A host that answers SYNs with RST.
    Refusing,
    /// A host that drops SYNs silently.
    BlackHoled,
}

impl Candidate {
    /// `l` / `r` / `b`, for scenario names.
    pub fn letter(self) -> char {
        match self {
            Candidate::Live => 'l',
            Candidate::Refusing => 'r',
            Candidate::BlackHoled => 'b',
        }
    }
}

/// Everything about one run except the client.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// Suite name for the record.
    pub suite: String,
    /// Scenario name for the record.
    pub scenario: String,
    /// The network.
    pub path: PathSchedule,
    /// Request body bytes.
    pub request_len: usize,
    /// Response body bytes.
    pub response_len: usize,
    /// `short` or `long` (engine clients; peers and the oracle follow).
    pub long_link: bool,
    /// Retry count of engine tasks (`None`: the engine default, 1).
    pub retry_count: Option<u8>,
    /// How often `onNewDns` repeats the server IP (when `candidates` is
    /// empty).
    pub dns_copies: usize,
    /// The resolver's answer with dead endpoints in it, in order; empty:
    /// `dns_copies` copies of the live server.
    pub candidates: Vec<Candidate>,
    /// Keep-alive server (for recommended peers).
    pub keep_alive_server: bool,
    /// TLS 1.3 on every connection ([`crate::tls`]): the server apps behind
    /// [`crate::tls::TlsServer`], every client with its stack's TLS
    /// ([`crate::bench::client_kind::tls_config`]).
    pub tls: bool,
    /// The calls are idempotent (with `tls`): the TLS servers enable early
    /// data ([`TlsServer::with_early_data`]) and engine tasks allow it
    /// (`Task::early_data`); whether a client sends early is its own
    /// choice.
    pub early_data: bool,
    /// Root seed of the run.
    pub seed: u64,
    /// Run index (record field).
    pub run: u32,
}

impl RunSpec {
    /// Run 0 of `seed` as the published harness made it: the benchmark's
    /// request and response ([`REQUEST_LEN`], [`RESPONSE_LEN`]), retry
    /// count 0, `onNewDns` answering the server [`BENCHMARK_DNS_COPIES`]
    /// times, a server that closes every connection, no TLS.
    pub fn published(suite: &str, scenario: &str, path: PathSchedule, seed: u64) -> RunSpec {
        RunSpec {
            suite: suite.to_owned(),
            scenario: scenario.to_owned(),
            path,
            request_len: REQUEST_LEN,
            response_len: RESPONSE_LEN,
            long_link: false,
            retry_count: Some(0),
            dns_copies: BENCHMARK_DNS_COPIES,
            candidates: Vec::new(),
            keep_alive_server: false,
            tls: false,
            early_data: false,
            seed,
            run: 0,
        }
    }
}

/// Builds the simulation of `spec` (server host, apps); `keep_events` keeps
/// every trace event (the hash is the same either way).
pub(crate) fn simulation<C: SimClient>(spec: &RunSpec, keep_events: bool) -> Simulation<C> {
    let mut sim = Simulation::new(spec.seed);
    sim.keep_trace_events(keep_events);
    sim.add_host(SERVER.ip(), spec.path.clone());
    for (i, (addr, app)) in server_apps(spec).into_iter().enumerate() {
        let app: Box<dyn ServerApp> = match (spec.tls, spec.early_data) {
            (true, false) => Box::new(TlsServer::new(app)),
            (true, true) => {
                let id = u32::try_from(i + 1).unwrap_or(u32::MAX);
                Box::new(TlsServer::new(app).with_early_data(id))
            }
            (false, _) => app,
        };
        sim.set_port(addr, PortMode::Listen(app)).ok();
    }
    for (ip, c) in candidate_ips(spec).into_iter().zip(&spec.candidates) {
        let mode = match c {
            Candidate::Live => continue,
            Candidate::Refusing => || PortMode::Refuse,
            Candidate::BlackHoled => || PortMode::BlackHole,
        };
        // Dead hosts sit behind the same conditions as the server.
        sim.add_host(ip, spec.path.clone());
        for port in [SERVER.port(), LONG_PORT] {
            sim.set_port(SocketAddr::new(ip, port), mode()).ok();
        }
    }
    sim
}

/// The addresses the resolver answers in `spec`, in order: the live server
/// for each [`Candidate::Live`], `10.0.1.k` for the k-th dead one (from 1);
/// `dns_copies` copies of the server without candidates.
pub fn candidate_ips(spec: &RunSpec) -> Vec<IpAddr> {
    if spec.candidates.is_empty() {
        return vec![SERVER.ip(); spec.dns_copies.max(1)];
    }
    let mut dead = 0u8;
    spec.candidates
        .iter()
        .map(|c| match c {
            Candidate::Live => SERVER.ip(),
            _ => {
                dead = dead.saturating_add(1);
                IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 1, dead))
            }
        })
        .collect()
}

/// The server applications of `spec`, with their addresses: the short-link
/// HTTP server on [`SERVER`] (keep-alive or `Connection: close`) and the
/// long-link server on [`LONG_PORT`], both answering `spec.response_len`
/// body bytes at once. (The fuzz target wraps them to count their bytes.)
pub fn server_apps(spec: &RunSpec) -> Vec<(SocketAddr, Box<dyn ServerApp>)> {
    let short: Box<dyn ServerApp> = if spec.keep_alive_server {
        Box::new(KeepAliveApp::new(spec.response_len, Duration::ZERO))
    } else {
        Box::new(FixedResponseApp::new(spec.response_len, Duration::ZERO))
    };
    vec![
        (SERVER, short),
        (
            SocketAddr::new(SERVER.ip(), LONG_PORT),
            Box::new(LongLinkServerApp::new(spec.response_len, Duration::ZERO)),
        ),
    ]
}

/// The body every server app of [`server_apps`] answers with
/// (`response_len` bytes of `i % 251`).
pub fn response_body(response_len: usize) -> bytes::Bytes {
    (0..response_len).map(|i| (i % 251) as u8).collect()
}

/// The "N% Loss" base path (30 ms each way, unlimited bandwidth) as "the
/// normal network" of the sensitivity test.
pub fn normal_network() -> PathConditions {
    Preset::LossPercent(0.0).conditions()
}
