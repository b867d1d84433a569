//! The pieces every suite is made of: platforms, clients, networks, and the
//! runners that turn one (client, network) pair into a [`RunRecord`].

use std::net::{IpAddr, SocketAddr};

use stn_proto::Profile;
use stn_proto::Rng;
use stn_proto::{Duration, Instant};

use crate::apps::FixedResponseApp;
use crate::bench::long_server::LongLinkServerApp;
use crate::bench::record::RunRecord;
use crate::bench::stn_client::{StnClient, StnClientConfig};
use crate::client::SimClient;
use crate::host::{PortMode, ServerApp};
use crate::oracle::{fresh_tcp_call, long_link_call, Message, PhysicalLimit};
use crate::path::{PathConditions, PathSchedule};
use crate::peers::{KeepAliveApp, Kernel, NsUrlSession, OkHttp2017, OkHttp5};
use crate::preset::Preset;
use crate::tcp::TcpStack;
use crate::tls::{TlsClientConfig, TlsServer};
use crate::workload::{
    CallClient, CallRecord, SequentialConfig, SequentialWorkload, SingleShot, WorkloadStats,
};
use crate::{RunOutcome, Simulation};

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

/// Which phone the run models: its TCP stack and its peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Platform {
    /// xnu TCP; the peer is NSURLSession (AFNetworking).
    Ios,
    /// Linux before 6.5; the peer is OkHttp 2017.
    Android,
    /// Linux 6.5 and later (faster SYN retransmission); the peers are the
    /// Android ones on that kernel.
    Android65,
}

impl Platform {
    /// The two platforms of the published benchmark, in report order.
    pub const ALL: [Platform; 2] = [Platform::Ios, Platform::Android];

    /// Every platform: the published two and Android on Linux ≥ 6.5 (the
    /// loss and recommended-peer suites, and the matrix).
    pub const WITH_LINUX_6_5: [Platform; 3] =
        [Platform::Ios, Platform::Android, Platform::Android65];

    /// `ios` / `android` / `android-6.5`.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Ios => "ios",
            Platform::Android => "android",
            Platform::Android65 => "android-6.5",
        }
    }

    /// The client host's TCP stack.
    pub fn stack(self) -> TcpStack {
        match self {
            Platform::Ios => TcpStack::xnu(),
            Platform::Android => TcpStack::linux_classic(),
            Platform::Android65 => TcpStack::linux_6_5(),
        }
    }

    /// The kernel of the Android peers (iOS: unused, Linux < 6.5).
    pub fn kernel(self) -> Kernel {
        match self {
            Platform::Android65 => Kernel::Linux65,
            Platform::Ios | Platform::Android => Kernel::LinuxClassic,
        }
    }
}

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

/// Which engine configuration a client runs.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineVariant {
    /// A profile's defaults (`stn`, `mars-2017` with banning off, `mars`).
    Profile(Profile),
    /// stn with overridden constants: **not** the default; labelled
    /// `stn-tuned` in every record.
    StnTuned,
}

/// A client of a run.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientKind {
    /// stn-proto's engine.
    Engine(EngineVariant),
    /// The platform's peer as benchmarked (NSURLSession per request on
    /// iOS; OkHttp 2.x per request on Android).
    PeerBenchmarked,
    /// OkHttp 2.x with the 60 s connect timeout of the published
    /// sensitivity runs (Android); NSURLSession as benchmarked on iOS.
    PeerSensitivity,
    /// The peer as its docs recommend: OkHttp 5 shared client (Android),
    /// NSURLSession shared session (iOS).
    PeerRecommended,
    /// The physical limit (peers.md §8.3), non-clairvoyant.
    Oracle,
}

impl ClientKind {
    /// `stn`.
    pub const STN: ClientKind = ClientKind::Engine(EngineVariant::Profile(Profile::Stn));
    /// `mars-2017`.
    pub const MARS_2017: ClientKind = ClientKind::Engine(EngineVariant::Profile(Profile::Mars2017));
    /// `mars`.
    pub const MARS: ClientKind = ClientKind::Engine(EngineVariant::Profile(Profile::Mars));
    /// `stn-tuned`.
    pub const STN_TUNED: ClientKind = ClientKind::Engine(EngineVariant::StnTuned);

    /// The report name on `platform`.
    pub fn name(&self, platform: Platform) -> &'static str {
        match (self, platform) {
            (ClientKind::Engine(EngineVariant::Profile(Profile::Stn)), _) => "stn",
            (ClientKind::Engine(EngineVariant::Profile(Profile::Mars2017)), _) => "mars-2017",
            (ClientKind::Engine(EngineVariant::Profile(Profile::Mars)), _) => "mars",
            (ClientKind::Engine(EngineVariant::StnTuned), _) => "stn-tuned",
            (ClientKind::PeerBenchmarked | ClientKind::PeerSensitivity, Platform::Ios) => {
                "nsurlsession"
            }
            (ClientKind::PeerBenchmarked, Platform::Android | Platform::Android65) => "okhttp-2017",
            (ClientKind::PeerSensitivity, Platform::Android | Platform::Android65) => {
                "okhttp-2017-60s"
            }
            (ClientKind::PeerRecommended, Platform::Ios) => "nsurlsession-shared",
            (ClientKind::PeerRecommended, Platform::Android | Platform::Android65) => "okhttp-5",
            (ClientKind::Oracle, _) => "oracle",
        }
    }
}

/// What `stn-tuned` changes, for the records' `note`.
pub const STN_TUNED_NOTE: &str = "TUNED, not the default: \
     timeouts.{wifi,mobile}.base_first_packet = 4 s (Mars: 12 s / 15 s; size term and max unchanged)";

/// The override of `stn-tuned` (see [`crate::bench`] docs for the evidence):
/// the base of the first-packet timeout is 4 s instead of Mars's 12 s
/// (Wi-Fi) / 15 s (mobile). The size term (`send_len / min_rate`) and the
/// cap stay, so large requests keep their allowance. Under heavy loss a TCP
/// exchange that has not answered within ~4 s is usually stuck in
/// exponential RTO back-off, and a fresh connection is faster; the cost is
/// for servers slower than 4 s, which must then set `server_process_cost`.
///
/// It helps the short link and **hurts the long link** (a first-packet
/// timeout there drops the whole link), and it spends more connection
/// attempts: the engine has one knob for both channels, so a per-channel
/// setting is what to adopt, not this. (An earlier `stn-tuned` also replayed
/// parked tasks after 250 ms; the engine now parks only tasks with an
/// explicit `total_timeout`, which the benchmark's tasks do not set, so that
/// override no longer changed anything and was dropped.)
pub fn stn_tuned_config(cfg: &mut stn_proto::Config) {
    cfg.timeouts_mut().wifi.base_first_packet = Duration::from_secs(4);
    cfg.timeouts_mut().mobile.base_first_packet = Duration::from_secs(4);
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
    /// ([`tls_config`]).
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

/// Virtual time a run may last at most.
const HORIZON: Instant = Instant::from_secs(500_000);
/// Virtual time a single call (the sensitivity test) may last.
const SINGLE_LIMIT: Instant = Instant::from_secs(300);

/// Runs `workload` alone on a fresh simulation of `spec` (no trace events
/// kept) until it finishes or `limit`, and returns what `read` takes from
/// it, the simulated seconds and the trace hash. One runner for every client
/// kind and workload shape.
fn run_workload<W: SimClient, R>(
    spec: &RunSpec,
    workload: W,
    (stack, tls): (TcpStack, TlsOf),
    limit: Instant,
    read: impl FnOnce(&W) -> R,
) -> (R, f64, u64) {
    let mut sim = simulation(spec, false);
    let id = add_client(&mut sim, spec, workload, (stack, tls));
    sim.run_until_finished(limit);
    (
        read(sim.client(id)),
        secs(sim.now() - Instant::ZERO),
        sim.trace().hash(),
    )
}

/// The TLS server name of the benchmark's service (tickets are kept per
/// name, so every endpoint of the service shares them).
pub const TLS_SERVER_NAME: &str = "hello.mars.example";

/// Whose TLS a client runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsOf {
    /// An engine client: stn's driver (resumption, 5 s handshake timeout),
    /// whatever the profile; `early_data`: the driver offers early data
    /// ([`engine_offers_early_data`]).
    Engine {
        /// Offer early data when a ticket allows it.
        early_data: bool,
    },
    /// A peer model: resumption; the handshake under the peer's own timers.
    Peer,
}

/// The TLS configuration of a client run as `of`.
pub fn tls_config(of: TlsOf) -> TlsClientConfig {
    match of {
        TlsOf::Engine { early_data } => {
            let mut c = TlsClientConfig::stn(TLS_SERVER_NAME);
            c.early_data = early_data;
            c
        }
        TlsOf::Peer => TlsClientConfig::peer(TLS_SERVER_NAME),
    }
}

/// Whether the driver of `client` offers TLS early data: its tasks allow
/// it (the calls are idempotent) and its profile sends early data (stn's
/// `engine.early_data`; the Mars profiles send none, so their driver offers
/// none and their handshakes stay those of early data off).
pub fn engine_offers_early_data(client: &StnClient) -> bool {
    let cfg = client.config();
    cfg.early_data && cfg.engine.profile() == Profile::Stn
}

/// The TLS side of an engine client.
fn engine_tls(client: &StnClient) -> TlsOf {
    TlsOf::Engine {
        early_data: engine_offers_early_data(client),
    }
}

/// Adds `client` to `sim` on `stack`, with its TLS when `spec` runs TLS.
fn add_client<C: SimClient>(
    sim: &mut Simulation<C>,
    spec: &RunSpec,
    client: C,
    (stack, tls): (TcpStack, TlsOf),
) -> crate::client::ClientId {
    let id = sim.add_client(client, stack);
    if spec.tls {
        sim.set_client_tls(id, Some(tls_config(tls)));
    }
    id
}

/// Builds the simulation of `spec` (server host, apps); `keep_events` keeps
/// every trace event (the hash is the same either way).
fn simulation<C: SimClient>(spec: &RunSpec, keep_events: bool) -> Simulation<C> {
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

/// The engine client of `variant` for `spec` on `platform`.
pub fn engine_client(variant: &EngineVariant, platform: Platform, spec: &RunSpec) -> StnClient {
    let profile = match variant {
        EngineVariant::Profile(p) => *p,
        EngineVariant::StnTuned => Profile::Stn,
    };
    let name = ClientKind::Engine(variant.clone()).name(platform);
    let mut cfg = StnClientConfig::new(
        name,
        profile,
        candidate_ips(spec),
        SERVER.port(),
        spec.long_link.then_some(LONG_PORT),
        platform.stack(),
    );
    cfg.engine.set_seed(Rng::derive(spec.seed, 0xE6).next_u64());
    cfg.retry_count = spec.retry_count;
    // Against a keep-alive server the app asks for keep-alive (Mars's socket
    // pool); the published harness's server closed every connection.
    cfg.keep_alive = spec.keep_alive_server;
    cfg.early_data = spec.early_data;
    if *variant == EngineVariant::StnTuned {
        stn_tuned_config(&mut cfg.engine);
    }
    let early = cfg.early_data;
    let client = StnClient::new(cfg);
    // The attempt reports say which requests went early (the records'
    // `early_sends`).
    if early {
        client.keep_reports()
    } else {
        client
    }
}

/// The peer client of `kind` on `platform` for `spec` (any kind that is
/// neither an engine nor the oracle).
pub fn peer_client(kind: &ClientKind, platform: Platform, spec: &RunSpec) -> Box<dyn CallClient> {
    let routes: Vec<SocketAddr> = candidate_ips(spec)
        .into_iter()
        .map(|ip| SocketAddr::new(ip, SERVER.port()))
        .collect();
    match (kind, platform) {
        (ClientKind::PeerBenchmarked | ClientKind::PeerSensitivity, Platform::Ios) => {
            // One IP literal as benchmarked; with dead endpoints, the
            // resolver's whole answer (the model tries routes in order).
            let mut cfg = NsUrlSession::benchmarked_config(SERVER);
            if !spec.candidates.is_empty() {
                cfg.routes = routes;
            }
            Box::new(crate::peers::PeerClient::new(cfg))
        }
        (ClientKind::PeerSensitivity, _) => {
            Box::new(OkHttp2017::sensitivity(SERVER, platform.kernel()))
        }
        (ClientKind::PeerRecommended, Platform::Ios) => Box::new(NsUrlSession::recommended(routes)),
        (ClientKind::PeerRecommended, _) => {
            Box::new(OkHttp5::recommended(routes, platform.kernel()))
        }
        _ => Box::new(OkHttp2017::benchmarked(SERVER, platform.kernel())),
    }
}

/// A finished run's records and how much virtual time it simulated.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The record.
    pub record: RunRecord,
    /// Every call.
    pub calls: Vec<CallRecord>,
    /// Virtual seconds simulated.
    pub sim_s: f64,
    /// Trace hash of the simulation (0 for the oracle).
    pub trace_hash: u64,
    /// Contract violations the engine adapter saw (engine clients).
    pub violations: Vec<String>,
}

fn secs(d: Duration) -> f64 {
    crate::units::duration_nanos_saturating(d) as f64 / 1e9
}

fn base_record(spec: &RunSpec, platform: Platform, client: &str) -> RunRecord {
    RunRecord {
        suite: spec.suite.clone(),
        scenario: spec.scenario.clone(),
        platform: platform.name().to_owned(),
        client: client.to_owned(),
        channel: if spec.long_link { "long" } else { "short" }.to_owned(),
        run: spec.run,
        successes: 0,
        attempts: 0,
        total_s: 0.0,
        mean_s: 0.0,
        p50_s: 0.0,
        p95_s: 0.0,
        p99_s: 0.0,
        completion_s: None,
        ok: false,
        connects: None,
        syns: None,
        sim_s: None,
        note: None,
        early_sends: None,
    }
}

fn fill_stats(rec: &mut RunRecord, s: &WorkloadStats) {
    let f = |d: Option<Duration>| d.map_or(0.0, secs);
    rec.successes = s.successes;
    rec.attempts = s.attempts;
    rec.total_s = secs(s.total_time);
    rec.mean_s = f(s.mean_ok);
    rec.p50_s = f(s.p50_ok);
    rec.p95_s = f(s.p95_ok);
    rec.p99_s = f(s.p99_ok);
    rec.connects = Some(u64::from(s.cost.connects));
    rec.syns = Some(u64::from(s.cost.syns));
}

/// The oracle's messages for `spec`: the handshake (once per run) and each
/// call's exchange. Sizes are the bodies alone — every client's request
/// and response carry at least those bytes — so the bound holds whatever
/// heads or frame headers a client adds.
fn oracle_messages(spec: &RunSpec) -> (Vec<Message>, Vec<Message>) {
    let mut handshake = fresh_tcp_call(0, 0, Duration::ZERO);
    handshake.truncate(2);
    if spec.tls {
        // Every client's first connection of a run is a full handshake
        // (no ticket yet): ClientHello, then the certificate flight.
        handshake.extend(crate::oracle::tls_handshake(
            crate::tls::CLIENT_HELLO_LEN,
            crate::tls::SERVER_FLIGHT_FULL_LEN,
        ));
    }
    (
        handshake,
        long_link_call(spec.request_len, spec.response_len, Duration::ZERO),
    )
}

/// The oracle's calls of `spec`: `calls` back to back from t = 0, on the
/// simulation's own links to the server.
fn oracle_calls(spec: &RunSpec, calls: u64, horizon: Instant) -> Vec<crate::oracle::OracleRun> {
    let oracle = PhysicalLimit::new(&spec.path, spec.seed, SERVER.ip());
    let (setup, call) = oracle_messages(spec);
    oracle.run_sequence(
        Instant::ZERO,
        &setup,
        &call,
        usize::try_from(calls).unwrap_or(usize::MAX),
        horizon,
    )
}

/// The benchmark loop (one call at a time until `successes` successes, at
/// most 10× as many calls) for one client.
pub fn run_sequential(
    kind: &ClientKind,
    platform: Platform,
    spec: &RunSpec,
    successes: u64,
) -> RunResult {
    let name = kind.name(platform);
    let mut rec = base_record(spec, platform, name);
    if *kind == ClientKind::Oracle {
        let runs = oracle_calls(spec, successes, HORIZON);
        let mut start = Instant::ZERO;
        let calls: Vec<CallRecord> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let c = CallRecord {
                    id: crate::workload::CallId(i as u64),
                    started: start,
                    finished: r.completed,
                    result: Ok(crate::workload::CallSuccess {
                        status: 200,
                        response_len: spec.response_len,
                    }),
                    cost: crate::workload::CallCost {
                        connects: u32::from(!spec.long_link),
                        syns: 0,
                        requests: 1,
                        reused: spec.long_link,
                    },
                };
                start = r.completed;
                c
            })
            .collect();
        let stats = WorkloadStats::from_records(&calls);
        fill_stats(&mut rec, &stats);
        rec.syns = None;
        rec.ok = stats.successes >= successes;
        rec.sim_s = Some(rec.total_s);
        return RunResult {
            record: rec,
            calls,
            sim_s: secs(start - Instant::ZERO),
            trace_hash: 0,
            violations: Vec::new(),
        };
    }
    if let ClientKind::Engine(v) = kind {
        return run_engine_sequential(engine_client(v, platform, spec), platform, spec, successes)
            .0;
    }
    let client = peer_client(kind, platform, spec);
    let workload = SequentialWorkload::new(client, sequential_config(spec, successes));
    let (calls, sim_s, hash) = run_workload(
        spec,
        workload,
        (platform.stack(), TlsOf::Peer),
        HORIZON,
        |w| w.records().to_vec(),
    );
    sequential_result(rec, calls, Vec::new(), sim_s, hash, successes)
}

/// The benchmark loop's workload: until `successes` successes, at most 10×
/// as many calls.
fn sequential_config(spec: &RunSpec, successes: u64) -> SequentialConfig {
    SequentialConfig {
        request_len: spec.request_len,
        target_successes: successes,
        max_calls: successes.saturating_mul(10),
    }
}

/// The result of a sequential run: `rec` filled from `calls`.
fn sequential_result(
    mut rec: RunRecord,
    calls: Vec<CallRecord>,
    violations: Vec<String>,
    sim_s: f64,
    trace_hash: u64,
    successes: u64,
) -> RunResult {
    let stats = WorkloadStats::from_records(&calls);
    fill_stats(&mut rec, &stats);
    rec.ok = stats.successes >= successes;
    rec.sim_s = Some(sim_s);
    RunResult {
        record: rec,
        calls,
        sim_s,
        trace_hash,
        violations,
    }
}

/// The result of a single-call run ended by `limit`: `total_s` is the call's
/// end (success or failure), `completion_s` its success.
fn single_result(
    mut rec: RunRecord,
    call: Option<CallRecord>,
    violations: Vec<String>,
    sim_s: f64,
    trace_hash: u64,
    limit: Instant,
) -> RunResult {
    let calls: Vec<CallRecord> = call.into_iter().collect();
    let stats = WorkloadStats::from_records(&calls);
    fill_stats(&mut rec, &stats);
    let end = call.map_or(secs(limit - Instant::ZERO), |c| {
        secs(c.finished - Instant::ZERO)
    });
    rec.total_s = end;
    rec.completion_s = call.filter(CallRecord::is_ok).map(|_| end);
    rec.ok = rec.completion_s.is_some();
    rec.sim_s = Some(sim_s);
    RunResult {
        record: rec,
        calls,
        sim_s,
        trace_hash,
        violations,
    }
}

/// [`run_sequential`] for an engine client built by the caller (any
/// configuration); also returns the client's kept attempt reports.
pub fn run_engine_sequential(
    client: StnClient,
    platform: Platform,
    spec: &RunSpec,
    successes: u64,
) -> (RunResult, Vec<stn_proto::Report>) {
    let rec = base_record(spec, platform, &client.config().name.clone());
    let stack = client.stack();
    let tls = engine_tls(&client);
    let workload = SequentialWorkload::new(client, sequential_config(spec, successes));
    let ((calls, violations, reports), sim_s, hash) =
        run_workload(spec, workload, (stack, tls), HORIZON, |w| {
            (
                w.records().to_vec(),
                w.client().violations().to_vec(),
                w.client().reports().to_vec(),
            )
        });
    let mut res = sequential_result(rec, calls, violations, sim_s, hash, successes);
    if spec.early_data {
        let early = reports.iter().filter(|r| r.early_data).count();
        res.record.early_sends = Some(early as u64);
    }
    (res, reports)
}

/// [`run_single`] for an engine client built by the caller.
pub fn run_engine_single(client: StnClient, platform: Platform, spec: &RunSpec) -> RunResult {
    let rec = base_record(spec, platform, &client.config().name.clone());
    let stack = client.stack();
    let tls = engine_tls(&client);
    let workload = SingleShot::new(client, spec.request_len);
    let ((call, violations), sim_s, hash) =
        run_workload(spec, workload, (stack, tls), SINGLE_LIMIT, |w| {
            (w.record().copied(), w.client().violations().to_vec())
        });
    single_result(rec, call, violations, sim_s, hash, SINGLE_LIMIT)
}

/// One call at t = 0 (the sensitivity test) for one client; the record's
/// `completion_s` is its completion, `total_s` its end (success or failure).
pub fn run_single(kind: &ClientKind, platform: Platform, spec: &RunSpec) -> RunResult {
    let name = kind.name(platform);
    let mut rec = base_record(spec, platform, name);
    let limit = SINGLE_LIMIT;
    if *kind == ClientKind::Oracle {
        let runs = oracle_calls(spec, 1, limit);
        let done = runs.first().map(|r| secs(r.completed - Instant::ZERO));
        rec.attempts = 1;
        rec.successes = u64::from(done.is_some());
        rec.completion_s = done;
        rec.ok = done.is_some();
        let t = done.unwrap_or(300.0);
        rec.total_s = t;
        (rec.mean_s, rec.p50_s, rec.p95_s, rec.p99_s) = (t, t, t, t);
        rec.sim_s = Some(t);
        return RunResult {
            record: rec,
            calls: Vec::new(),
            sim_s: t,
            trace_hash: 0,
            violations: Vec::new(),
        };
    }
    if let ClientKind::Engine(v) = kind {
        return run_engine_single(engine_client(v, platform, spec), platform, spec);
    }
    let client = peer_client(kind, platform, spec);
    let workload = SingleShot::new(client, spec.request_len);
    let (call, sim_s, hash) = run_workload(
        spec,
        workload,
        (platform.stack(), TlsOf::Peer),
        limit,
        |w| w.record().copied(),
    );
    single_result(rec, call, Vec::new(), sim_s, hash, limit)
}

/// One run with every trace event kept.
#[derive(Clone, Debug)]
pub struct TraceRun {
    /// Every trace event, one line each ([`crate::trace::TraceEvent`]'s
    /// `Display`).
    pub events: Vec<String>,
    /// The trace hash.
    pub hash: u64,
    /// Virtual time when the run stopped.
    pub end: Instant,
    /// Why it stopped.
    pub outcome: RunOutcome,
}

/// Runs `kind` once as [`run_sequential`] (`Some(successes)`) or
/// [`run_single`] (`None`) would, with every trace event kept: the same
/// clients, server and time limit, so [`TraceRun::hash`] equals their
/// [`RunResult::trace_hash`] for the same spec.
pub fn run_traced(
    kind: &ClientKind,
    platform: Platform,
    spec: &RunSpec,
    successes: Option<u64>,
) -> Result<TraceRun, String> {
    let (client, stack, tls): (Box<dyn CallClient>, TcpStack, TlsOf) = match kind {
        ClientKind::Engine(v) => {
            let c = engine_client(v, platform, spec);
            let stack = c.stack();
            let tls = engine_tls(&c);
            (Box::new(c), stack, tls)
        }
        ClientKind::Oracle => {
            return Err(
                "the oracle has no packet trace: it is a bound, not a simulated client".into(),
            )
        }
        peer => (
            peer_client(peer, platform, spec),
            platform.stack(),
            TlsOf::Peer,
        ),
    };
    let (workload, limit): (Box<dyn SimClient>, Instant) = match successes {
        Some(successes) => (
            Box::new(SequentialWorkload::new(
                client,
                SequentialConfig {
                    request_len: spec.request_len,
                    target_successes: successes,
                    max_calls: successes.saturating_mul(10),
                },
            )),
            HORIZON,
        ),
        None => (
            Box::new(SingleShot::new(client, spec.request_len)),
            SINGLE_LIMIT,
        ),
    };
    let mut sim: Simulation<Box<dyn SimClient>> = simulation(spec, true);
    add_client(&mut sim, spec, workload, (stack, tls));
    let outcome = sim.run_until_finished(limit);
    Ok(TraceRun {
        events: sim
            .trace()
            .events()
            .iter()
            .map(ToString::to_string)
            .collect(),
        hash: sim.trace().hash(),
        end: sim.now(),
        outcome,
    })
}

/// The "N% Loss" base path (30 ms each way, unlimited bandwidth) as "the
/// normal network" of the sensitivity test.
pub fn normal_network() -> PathConditions {
    Preset::LossPercent(0.0).conditions()
}
