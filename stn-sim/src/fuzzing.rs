//! The simulator's fuzz target body, shared by the cargo-fuzz target
//! `fuzz/fuzz_targets/sim_scenario.rs`, the stable corpus replay
//! ([`corpus`]) and the swarm test (`swarm_tests`). Built only under
//! `cfg(fuzzing)` (cargo-fuzz sets it) and in this crate's tests.
//!
//! The style is that of `stn_proto::fuzzing`: the body takes the fuzzer's raw
//! bytes, decodes a **small** [`Scenario`] from them with
//! [`arbitrary::Unstructured`] (every byte string is a valid scenario), runs
//! it in the simulator and **asserts oracles**, not just the absence of
//! panics. Nothing reads a clock or global state, so an input replays
//! identically anywhere.
//!
//! | target | what runs | oracles |
//! |---|---|---|
//! | [`sim_scenario`] | one client (stn's engine under a profile on the short or long link, or a peer model) making ≤ [`MAX_CALLS`] sequential calls over a lossy, shaped, possibly interrupted path | engine contract after every event (no violation); every call ends exactly once, in order, back to back, `finished ≥ started`; a successful call carries exactly the server's body (status 200) and is not faster than the path allows; the run ends within [`TIME_CAP`]; link accounting and queue ≤ its cap; bytes delivered to the client ≤ bytes the servers sent; same input → same trace hash, records and counters, whether or not the trace keeps its events |
//!
//! # Input layout
//!
//! [`Scenario`] derives [`Arbitrary`], field by field in declaration order
//! (enums take a `u32` for the variant; bytes missing at the end read as
//! zeros); numbers are bounded when used, so any value is valid:
//! 1. the client ([`ClientChoice`]: the engine with its profile, channel,
//!    retry count and DNS copies, or a peer model with its route count);
//! 2. the TCP stack ([`StackChoice`]);
//! 3. the path ([`PathChoice`]: a preset with its loss model replaced, or each
//!    direction's delay ≤ 1 s, jitter ≤ 255 ms, bandwidth 16 kbit/s–4 Mbit/s
//!    or unlimited, queue 1–64 packets, Bernoulli or Gilbert–Elliott loss
//!    ≤ 90 %);
//! 4. the schedule ([`ScheduleChoice`]: steady, an outage starting within
//!    25.5 s and lasting 1–60 s, or up to three scripted changes within 60 s);
//! 5. request and response body sizes ([`BodySize`]: ≤ 64 KiB, mostly
//!    < 1 KiB);
//! 6. a keep-alive or `Connection: close` short-link server;
//! 7. the servers' processing delay (≤ 32.5 s, mostly short);
//! 8. dead addresses (refusing, black-holed) before the live one;
//! 9. 1–[`MAX_CALLS`] calls;
//! 10. the root seed.
//!
//! [`TARGETS`] lists the target with its seed inputs (the committed corpus
//! under `fuzz/corpus/sim_scenario/` is generated from [`Target::seeds`]).

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;

use arbitrary::{Arbitrary, Unstructured};
use stn_proto::Profile;
use stn_proto::Rng;
use stn_proto::{Duration, Instant};

use crate::apps::FixedResponseApp;
use crate::bench::client_kind::{engine_client, EngineVariant};
use crate::bench::platform::Platform;
use crate::bench::run_spec::{response_body, server_apps, RunSpec, LONG_PORT, SERVER};
use crate::client::ClientCx;
use crate::clients::peers::{KeepAliveApp, Kernel, NsUrlSession, OkHttp2017, OkHttp5};
use crate::clients::stn::StnClient;
use crate::host::{PortMode, ServerAction, ServerApp, ServerConnId, ServerReplies};
use crate::link::{GilbertElliott, LinkConditions, LinkSchedule, LinkStats, LossModel};
use crate::path::{PathConditions, PathSchedule};
use crate::preset::Preset;
use crate::socket::{SocketEvent, SocketId};
use crate::tcp::TcpStack;
use crate::workload::{
    CallClient, CallId, CallOutcome, CallRecord, CallSpec, SequentialConfig, SequentialWorkload,
};
use crate::{RunOutcome, Simulation};

#[cfg(test)]
mod swarm_tests;

// What a target is and the corpus replay: shared by the three crates
// with fuzz targets.
pub use stn_proto::fuzz_corpus::Target;

/// Every fuzz target of the simulator.
pub const TARGETS: &[Target] = &[Target {
    name: "sim_scenario",
    run: sim_scenario,
    seeds,
}];

stn_proto::corpus_tests!(super::TARGETS);

/// A host whose ports refuse connections (RST), behind the same path.
pub const REFUSING: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 3)),
    8080,
);
/// A host whose ports drop SYNs (firewalled), behind the same path.
pub const BLACK_HOLE: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 4)),
    8080,
);

/// Most calls one scenario makes (each a full request/response exchange, so
/// one input runs in milliseconds).
pub const MAX_CALLS: u64 = 6;
/// Virtual time a scenario may last: far beyond what ≤ [`MAX_CALLS`] calls
/// need under any schedule here (every client gives up on a call within
/// minutes), so a run still going at the cap means a call that never ends.
pub const TIME_CAP: Instant = Instant::from_secs(2 * 3600);

/// Decodes a [`Scenario`] from `data`, runs it and checks every oracle
/// ([`Scenario::check`]); panics with the broken oracle and the scenario.
///
/// ```
/// stn_sim::fuzzing::sim_scenario(b"any bytes are a valid scenario");
/// ```
pub fn sim_scenario(data: &[u8]) {
    let scenario = Scenario::from_bytes(data);
    if let Err(e) = scenario.check() {
        panic!("sim_scenario: {e}");
    }
}

/// A small simulator scenario: one client, one server host behind one path,
/// a few sequential calls. See the [module docs](self) for the layout and
/// the bounds; every field value is valid.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// Which client makes the calls.
    pub client: ClientChoice,
    /// The client host's TCP stack (the engine's; OkHttp runs on Linux —
    /// 6.5 when [`StackChoice::Linux65`], else before 6.5 — and NSURLSession
    /// on xnu, whatever this says).
    pub stack: StackChoice,
    /// Both directions of the path.
    pub path: PathChoice,
    /// How the path changes over time.
    pub schedule: ScheduleChoice,
    /// Request body size.
    pub request: BodySize,
    /// Response body size.
    pub response: BodySize,
    /// The short-link server keeps connections open (else it answers with
    /// `Connection: close`).
    pub keep_alive_server: bool,
    /// The servers answer `server_delay² / 2` ms after a request (≤ 32.5 s).
    pub server_delay: u8,
    /// Dead addresses the resolver (engine) or route list (pooled peers)
    /// puts before the live server: `dead_routes % 4` = 0 none, 1 a refusing
    /// host ([`REFUSING`]), 2 a black-holed one ([`BLACK_HOLE`]), 3 both.
    pub dead_routes: u8,
    /// `1 + calls % MAX_CALLS` calls.
    pub calls: u8,
    /// Root seed of the simulation (and, derived, of the engine).
    pub seed: u64,
}

/// The client of a [`Scenario`].
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientChoice {
    /// stn-proto's engine ([`StnClient`]).
    Engine {
        /// Configuration profile.
        profile: ProfileChoice,
        /// Calls on the long link (else the short link).
        long_link: bool,
        /// Task retry count: `retries % 3` = 0 → the engine default, n → n − 1.
        retries: u8,
        /// The resolver answers the server's IP `1 + dns_copies % 5` times.
        dns_copies: u8,
    },
    /// OkHttp 2.x as benchmarked (fresh connection per call, 10 s timeouts).
    OkHttp2017,
    /// OkHttp 2.x with the 60 s connect timeout of the sensitivity runs.
    OkHttp2017Sensitivity,
    /// OkHttp 5 shared client over `1 + routes % 5` copies of the route.
    OkHttp5 {
        /// Route count selector.
        routes: u8,
    },
    /// NSURLSession as benchmarked (session per request).
    NsUrlSession,
    /// NSURLSession shared session over `1 + routes % 5` copies of the route.
    NsUrlSessionShared {
        /// Route count selector.
        routes: u8,
    },
}

/// The engine configuration.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileChoice {
    /// stn's default.
    Stn,
    /// Mars as benchmarked in 2017 (banning off, as the benchmark ran).
    Mars2017,
    /// Today's Mars.
    Mars,
    /// stn with the tuned first-packet timeout
    /// ([`crate::bench::client_kind::stn_tuned_config`]).
    StnTuned,
}

/// The client host's TCP stack.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackChoice {
    /// Linux before 6.5.
    LinuxClassic,
    /// Linux 6.5 and later.
    Linux65,
    /// iOS / macOS.
    Xnu,
}

impl StackChoice {
    /// The stack.
    pub fn stack(self) -> TcpStack {
        match self {
            StackChoice::LinuxClassic => TcpStack::linux_classic(),
            StackChoice::Linux65 => TcpStack::linux_6_5(),
            StackChoice::Xnu => TcpStack::xnu(),
        }
    }

    fn kernel(self) -> Kernel {
        match self {
            StackChoice::Linux65 => Kernel::Linux65,
            _ => Kernel::LinuxClassic,
        }
    }
}

/// Conditions of both path directions.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathChoice {
    /// A preset's delay and bandwidth, with its loss model replaced (both ways).
    Preset {
        /// Which preset.
        preset: PresetChoice,
        /// The loss model of both directions.
        loss: LossChoice,
    },
    /// Each direction on its own.
    Custom {
        /// Client → server.
        up: LinkChoice,
        /// Server → client.
        down: LinkChoice,
    },
}

impl PathChoice {
    /// The conditions.
    pub fn conditions(self) -> PathConditions {
        match self {
            PathChoice::Preset { preset, loss } => {
                let p = match preset {
                    PresetChoice::ThreeG => Preset::ThreeG,
                    PresetChoice::Edge => Preset::Edge,
                    PresetChoice::VeryBadNetwork => Preset::VeryBadNetwork,
                    PresetChoice::Plain => Preset::LossPercent(0.0),
                };
                p.conditions().with_loss(loss.model())
            }
            PathChoice::Custom { up, down } => PathConditions {
                up: up.conditions(),
                down: down.conditions(),
            },
        }
    }
}

/// A link preset (`crate::preset::Preset`).
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresetChoice {
    /// NLC 3G.
    ThreeG,
    /// NLC Edge (the benchmark's 2G).
    Edge,
    /// NLC Very Bad Network.
    VeryBadNetwork,
    /// The benchmark's "N% loss" base: 30 ms each way, unlimited bandwidth.
    Plain,
}

/// One link direction.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkChoice {
    /// One-way delay: `delay_ms % 1001` ms.
    pub delay_ms: u16,
    /// Jitter half-width in ms.
    pub jitter_ms: u8,
    /// Bandwidth `16 + kbps % 4000` kbit/s; `None`: unlimited.
    pub bandwidth_kbps: Option<u16>,
    /// Queue of `1 + queue % 64` packets.
    pub queue: u8,
    /// Loss model.
    pub loss: LossChoice,
}

impl LinkChoice {
    /// The conditions.
    pub fn conditions(self) -> LinkConditions {
        LinkConditions {
            delay: Duration::from_millis(u64::from(self.delay_ms % 1001)),
            jitter: Duration::from_millis(u64::from(self.jitter_ms)),
            bandwidth_bps: self
                .bandwidth_kbps
                .map(|k| (16 + u64::from(k % 4000)) * 1000),
            queue_packets: 1 + usize::from(self.queue % 64),
            loss: self.loss.model(),
        }
    }
}

/// A loss model.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossChoice {
    /// No loss.
    None,
    /// Bernoulli loss of `percent % 91` %.
    Percent(u8),
    /// Gilbert–Elliott loss of average `percent % 91` % in bursts of
    /// `(1 + burst % 8) × 50 ms` on average.
    Bursty {
        /// Average loss selector.
        percent: u8,
        /// Mean burst selector.
        burst: u8,
    },
}

impl LossChoice {
    /// The model.
    pub fn model(self) -> LossModel {
        match self {
            LossChoice::None => LossModel::None,
            LossChoice::Percent(p) => LossModel::percent(f64::from(p % 91)),
            LossChoice::Bursty { percent, burst } => {
                LossModel::GilbertElliott(GilbertElliott::with_rate_and_burst(
                    f64::from(percent % 91) / 100.0,
                    stn_proto::Duration::from_millis(50 * u64::from(1 + burst % 8)),
                ))
            }
        }
    }
}

/// How the path changes over time.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleChoice {
    /// The same conditions throughout.
    Steady,
    /// Every packet lost from `from_100ms` × 100 ms for `1 + len_s % 60` s.
    Outage {
        /// Start selector.
        from_100ms: u8,
        /// Length selector.
        len_s: u8,
    },
    /// `1 + count % 3` of the changes apply, each from `(at % 600)` × 100 ms.
    Changes {
        /// How many of `changes` apply.
        count: u8,
        /// (time selector, new conditions).
        changes: [(u16, PathChoice); 3],
    },
}

impl ScheduleChoice {
    /// The schedule over `base`.
    pub fn schedule(self, base: PathConditions) -> PathSchedule {
        match self {
            ScheduleChoice::Steady => PathSchedule::constant(base),
            ScheduleChoice::Outage { from_100ms, len_s } => {
                let from = Instant::from_millis(100 * u64::from(from_100ms));
                let until = from + Duration::from_secs(1 + u64::from(len_s % 60));
                PathSchedule::outage(base, from, until)
            }
            ScheduleChoice::Changes { count, changes } => {
                let n = 1 + usize::from(count % 3);
                changes[..n]
                    .iter()
                    .fold(PathSchedule::constant(base), |s, (at, p)| {
                        s.then_at(
                            Instant::from_millis(100 * u64::from(at % 600)),
                            p.conditions(),
                        )
                    })
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            ScheduleChoice::Steady => "steady",
            ScheduleChoice::Outage { .. } => "outage",
            ScheduleChoice::Changes { .. } => "changes",
        }
    }
}

/// A body size ≤ 64 KiB, mostly small: below `0xC000` it is `n % 1024`
/// bytes, above it `(n & 0x3FFF) × 4` bytes.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodySize(pub u16);

impl BodySize {
    /// Bytes.
    pub fn len(self) -> usize {
        if self.0 < 0xC000 {
            usize::from(self.0 % 1024)
        } else {
            usize::from(self.0 & 0x3FFF) * 4
        }
    }

    /// `true` for an empty body.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// What one run of a [`Scenario`] produced: everything two runs of the same
/// scenario must agree on.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioRun {
    /// Every finished call, in order.
    pub records: Vec<CallRecord>,
    /// Why the simulation stopped.
    pub outcome: RunOutcome,
    /// Virtual time when it stopped.
    pub end: Instant,
    /// Trace hash.
    pub trace_hash: u64,
    /// Trace events.
    pub trace_len: u64,
    /// Link counters (up, down) of the paths to [`SERVER`], [`REFUSING`]
    /// and [`BLACK_HOLE`].
    pub links: [(LinkStats, LinkStats); 3],
    /// Payload bytes handed to the client by its sockets.
    pub client_received: u64,
    /// Payload bytes the server apps asked to send.
    pub server_sent: u64,
    /// Contract violations seen during the run (engine adapter, call ledger).
    pub problems: Vec<String>,
}

impl Scenario {
    /// Decodes a scenario from any bytes (missing bytes read as zeros).
    pub fn from_bytes(data: &[u8]) -> Self {
        Self::decode(data).0
    }

    /// The scenario and how many bytes of `data` it used.
    fn decode(data: &[u8]) -> (Self, usize) {
        let mut u = Unstructured::new(data);
        let s = Scenario::arbitrary(&mut u)
            .or_else(|_| Scenario::arbitrary(&mut Unstructured::new(&[])))
            .expect("an empty input decodes to the all-zero scenario");
        let used = data.len() - u.len();
        (s, used)
    }

    /// A pseudo-random scenario (the swarm test): [`Scenario::from_bytes`]
    /// of bytes drawn from `seed`.
    pub fn from_seed(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let bytes: Vec<u8> = (0..256).map(|_| rng.next_u64() as u8).collect();
        Self::from_bytes(&bytes)
    }

    /// Calls the workload makes.
    pub fn call_count(&self) -> u64 {
        1 + u64::from(self.calls) % MAX_CALLS
    }

    /// The servers' processing delay.
    pub fn server_delay(&self) -> Duration {
        Duration::from_millis(u64::from(self.server_delay) * u64::from(self.server_delay) / 2)
    }

    /// The dead addresses tried before the live server.
    pub fn dead(&self) -> Vec<SocketAddr> {
        match self.dead_routes % 4 {
            0 => vec![],
            1 => vec![REFUSING],
            2 => vec![BLACK_HOLE],
            _ => vec![REFUSING, BLACK_HOLE],
        }
    }

    /// The network, sizes and engine options as a benchmark [`RunSpec`].
    pub fn run_spec(&self) -> RunSpec {
        let (long_link, retry_count, dns_copies) = match self.client {
            ClientChoice::Engine {
                long_link,
                retries,
                dns_copies,
                ..
            } => (
                long_link,
                (retries % 3).checked_sub(1),
                1 + usize::from(dns_copies % 5),
            ),
            ClientChoice::OkHttp5 { routes } | ClientChoice::NsUrlSessionShared { routes } => {
                (false, None, 1 + usize::from(routes % 5))
            }
            _ => (false, None, 1),
        };
        RunSpec {
            suite: "fuzz".into(),
            scenario: self.name(),
            path: self.schedule.schedule(self.path.conditions()),
            request_len: self.request.len(),
            response_len: self.response.len(),
            long_link,
            retry_count,
            dns_copies,
            candidates: Vec::new(),
            keep_alive_server: self.keep_alive_server,
            tls: false,
            early_data: false,
            seed: self.seed,
            run: 0,
        }
    }

    /// A short descriptive name: client, channel (engine) and schedule kind,
    /// e.g. `mars2017_long_outage`, `okhttp5_steady`.
    pub fn name(&self) -> String {
        let client = match self.client {
            ClientChoice::Engine {
                profile, long_link, ..
            } => {
                let p = match profile {
                    ProfileChoice::Stn => "stn",
                    ProfileChoice::Mars2017 => "mars2017",
                    ProfileChoice::Mars => "mars",
                    ProfileChoice::StnTuned => "stntuned",
                };
                format!("{p}_{}", if long_link { "long" } else { "short" })
            }
            ClientChoice::OkHttp2017 => "okhttp2017".into(),
            ClientChoice::OkHttp2017Sensitivity => "okhttp2017sens".into(),
            ClientChoice::OkHttp5 { .. } => "okhttp5".into(),
            ClientChoice::NsUrlSession => "nsurlsession".into(),
            ClientChoice::NsUrlSessionShared { .. } => "nsurlshared".into(),
        };
        format!("{client}_{}", self.schedule.name())
    }

    /// Runs the scenario once (no oracle but the ones checked during the
    /// run, which land in [`ScenarioRun::problems`]); `keep_events` keeps
    /// every trace event, which must change nothing (checked: the kept events
    /// are as many as the trace counts).
    pub fn run(&self, keep_events: bool) -> ScenarioRun {
        let spec = self.run_spec();
        let dead = self.dead();
        let routes: Vec<SocketAddr> = dead
            .iter()
            .copied()
            .chain(std::iter::repeat_n(SERVER, spec.dns_copies))
            .collect();
        let kernel = self.stack.kernel();
        match self.client {
            ClientChoice::Engine { profile, .. } => {
                let variant = match profile {
                    ProfileChoice::Stn => EngineVariant::Profile(Profile::Stn),
                    ProfileChoice::Mars2017 => EngineVariant::Profile(Profile::Mars2017),
                    ProfileChoice::Mars => EngineVariant::Profile(Profile::Mars),
                    ProfileChoice::StnTuned => EngineVariant::StnTuned,
                };
                let mut cfg = engine_client(&variant, Platform::Android, &spec)
                    .config()
                    .clone();
                cfg.stack = self.stack.stack();
                cfg.resolve = routes.iter().map(SocketAddr::ip).collect();
                let stack = cfg.stack.clone();
                let client = StnClient::new(cfg).expect_body(response_body(spec.response_len));
                self.run_client(keep_events, &spec, client, stack, |c, problems| {
                    problems.extend(c.violations().iter().cloned());
                    if c.tasks_in_flight() != 0 {
                        problems.push(format!(
                            "{} tasks still held by the app at the end",
                            c.tasks_in_flight()
                        ));
                    }
                })
            }
            ClientChoice::OkHttp2017 => {
                let c = OkHttp2017::benchmarked(SERVER, kernel);
                self.run_client(keep_events, &spec, c, kernel.stack(), |_, _| {})
            }
            ClientChoice::OkHttp2017Sensitivity => {
                let c = OkHttp2017::sensitivity(SERVER, kernel);
                self.run_client(keep_events, &spec, c, kernel.stack(), |_, _| {})
            }
            ClientChoice::OkHttp5 { .. } => {
                let c = OkHttp5::recommended(routes, kernel);
                self.run_client(keep_events, &spec, c, kernel.stack(), |_, _| {})
            }
            ClientChoice::NsUrlSession => {
                let c = NsUrlSession::benchmarked(SERVER);
                self.run_client(keep_events, &spec, c, TcpStack::xnu(), |_, _| {})
            }
            ClientChoice::NsUrlSessionShared { .. } => {
                let c = NsUrlSession::recommended(routes);
                self.run_client(keep_events, &spec, c, TcpStack::xnu(), |_, _| {})
            }
        }
    }

    fn run_client<C: CallClient>(
        &self,
        keep_events: bool,
        spec: &RunSpec,
        client: C,
        stack: TcpStack,
        client_checks: impl FnOnce(&C, &mut Vec<String>),
    ) -> ScenarioRun {
        let sent = Rc::new(Cell::new(0u64));
        let mut sim = Simulation::new(spec.seed);
        sim.keep_trace_events(keep_events);
        sim.add_host(SERVER.ip(), spec.path.clone());
        sim.add_host(REFUSING.ip(), spec.path.clone());
        let black_hole = sim.add_host(BLACK_HOLE.ip(), spec.path.clone());
        for port in [SERVER.port(), LONG_PORT] {
            black_hole.set_port(port, PortMode::BlackHole);
        }
        for (addr, app) in server_apps(spec) {
            let app = ServerWrap {
                inner: app,
                delay: self.server_delay(),
                sent: Rc::clone(&sent),
            };
            sim.set_port(addr, PortMode::Listen(Box::new(app)))
                .expect("the server host was just added");
        }
        let calls = self.call_count();
        let wl = SequentialConfig {
            request_len: spec.request_len,
            target_successes: calls,
            max_calls: calls,
        };
        let id = sim.add_client(SequentialWorkload::new(Audited::new(client), wl), stack);
        let outcome = sim.run_until_finished(TIME_CAP);
        let workload = sim.client(id);
        let audited = workload.client();
        let mut problems = audited.problems.clone();
        client_checks(&audited.inner, &mut problems);
        let kept = sim.trace().events().len() as u64;
        if keep_events && kept != sim.trace().len() {
            problems.push(format!(
                "the trace kept {kept} events and counted {}",
                sim.trace().len()
            ));
        }
        ScenarioRun {
            records: workload.records().to_vec(),
            outcome,
            end: sim.now(),
            trace_hash: sim.trace().hash(),
            trace_len: sim.trace().len(),
            links: [SERVER, REFUSING, BLACK_HOLE]
                .map(|a| sim.link_stats(a.ip()).unwrap_or_default()),
            client_received: audited.received,
            server_sent: sent.get(),
            problems,
        }
    }

    /// Runs the scenario twice and checks every oracle of the [module
    /// docs](self); the error names the broken one and the scenario.
    pub fn check(&self) -> Result<ScenarioRun, String> {
        let run = self.run(false);
        self.check_run(&run)
            .map_err(|e| format!("{e}\n  scenario {}: {self:?}", self.name()))?;
        // The second run keeps every trace event: same hash and count.
        let again = self.run(true);
        if again != run {
            return Err(format!(
                "same scenario, different runs: trace hash {:#x} / {:#x}, {} / {} events, \
                 records equal: {}\n  scenario {}: {self:?}",
                run.trace_hash,
                again.trace_hash,
                run.trace_len,
                again.trace_len,
                run.records == again.records,
                self.name()
            ));
        }
        Ok(run)
    }

    fn check_run(&self, run: &ScenarioRun) -> Result<(), String> {
        if !run.problems.is_empty() {
            return Err(format!("contract violations: {:?}", run.problems));
        }
        let calls = self.call_count();
        if run.outcome != RunOutcome::AllFinished || run.end > TIME_CAP {
            return Err(format!(
                "not finished within {TIME_CAP:?}: {:?} at {:?}, {} of {calls} calls ended",
                run.outcome,
                run.end,
                run.records.len()
            ));
        }
        if run.records.len() as u64 != calls {
            return Err(format!(
                "{} calls recorded, {calls} made",
                run.records.len()
            ));
        }
        let spec = self.run_spec();
        // What a peer counts as the response: head + body.
        let peer_response_len = if spec.keep_alive_server {
            KeepAliveApp::new(spec.response_len, Duration::ZERO).response_len()
        } else {
            FixedResponseApp::new(spec.response_len, Duration::ZERO).response_len()
        };
        let floor = one_way_floor(&spec.path.up, spec.request_len)
            + self.server_delay()
            + one_way_floor(&spec.path.down, spec.response_len);
        let mut previous_end = Instant::ZERO;
        for (i, r) in run.records.iter().enumerate() {
            if r.id != CallId(i as u64) || r.started != previous_end || r.finished < r.started {
                return Err(format!(
                    "call {i} out of order, not back to back (previous ended at \
                     {previous_end:?}) or ending before it started: {r:?}"
                ));
            }
            previous_end = r.finished;
            if let Ok(ok) = r.result {
                // The engine reports the body (checked byte for byte by its
                // adapter), the peers head + body.
                let expected = match self.client {
                    ClientChoice::Engine { .. } => spec.response_len,
                    _ => peer_response_len,
                };
                if r.duration() < floor {
                    return Err(format!(
                        "call {i} succeeded in {:?}, faster than physically possible \
                         ({floor:?}: the request up, the server's delay and the response \
                         down at the smallest delay less the largest jitter and the largest \
                         bandwidth)",
                        r.duration()
                    ));
                }
                if ok.status != 200 || ok.response_len != expected {
                    return Err(format!(
                        "call {i} succeeded with status {} and {} response bytes, \
                         the server sent 200 and {expected}",
                        ok.status, ok.response_len
                    ));
                }
            }
        }
        let directions = run
            .links
            .iter()
            .flat_map(|(up, down)| [("up", *up, &spec.path.up), ("down", *down, &spec.path.down)]);
        for (dir, stats, schedule) in directions {
            if stats.offered != stats.delivered + stats.lost + stats.queue_drops {
                return Err(format!("{dir}link packets do not add up: {stats:?}"));
            }
            let cap = max_queue(schedule);
            if stats.peak_queue > cap {
                return Err(format!(
                    "{dir}link queue held {} packets, its cap is {cap}",
                    stats.peak_queue
                ));
            }
        }
        if run.client_received > run.server_sent {
            return Err(format!(
                "the client received {} bytes, the servers sent {}",
                run.client_received, run.server_sent
            ));
        }
        Ok(())
    }
}

/// A lower bound on the time `payload` bytes sent at once take to cross a
/// link direction, whatever its schedule: the smallest delay less the largest
/// jitter (never below zero, as the link clamps), plus serialization at the
/// largest bandwidth (none when any period is unlimited). A call needs its
/// request up and then its response down, both sent after it started, so
/// no successful call is faster than the sum of both directions' bounds.
fn one_way_floor(schedule: &LinkSchedule, payload: usize) -> Duration {
    let all: Vec<&LinkConditions> = std::iter::once(schedule.at(Instant::ZERO))
        .chain(schedule.changes().iter().map(|(_, c)| c))
        .collect();
    let delay = all.iter().map(|c| c.delay).min().unwrap_or(Duration::ZERO);
    let jitter = all.iter().map(|c| c.jitter).max().unwrap_or(Duration::ZERO);
    let fastest = LinkConditions {
        bandwidth_bps: all
            .iter()
            .map(|c| c.bandwidth_bps.filter(|b| *b > 0))
            .collect::<Option<Vec<u64>>>()
            .and_then(|bws| bws.into_iter().max()),
        ..LinkConditions::default()
    };
    delay.saturating_sub(jitter) + fastest.serialization(payload)
}

/// The largest queue a link direction ever has.
fn max_queue(schedule: &LinkSchedule) -> usize {
    schedule
        .changes()
        .iter()
        .map(|(_, c)| c.queue_packets)
        .fold(schedule.at(Instant::ZERO).queue_packets, usize::max)
}

/// A server app wrapper: delays every action of `inner` by `delay` (the
/// server's processing time) and counts the payload bytes it asks its host to
/// send.
struct ServerWrap {
    inner: Box<dyn ServerApp>,
    delay: Duration,
    sent: Rc<Cell<u64>>,
}

impl ServerWrap {
    fn forward(&self, mine: &ServerReplies, replies: &mut ServerReplies) {
        for (d, action) in mine.actions() {
            let at = *d + self.delay;
            match action {
                ServerAction::Send(b) => {
                    self.sent.set(self.sent.get() + b.len() as u64);
                    replies.send(at, b.clone());
                }
                ServerAction::Close => replies.close(at),
                ServerAction::Abort => replies.abort(at),
                ServerAction::Wake => replies.wake(at),
            }
        }
    }
}

impl ServerApp for ServerWrap {
    fn on_accept(
        &mut self,
        now: Instant,
        conn: ServerConnId,
        peer: SocketAddr,
        replies: &mut ServerReplies,
    ) {
        let mut mine = ServerReplies::default();
        self.inner.on_accept(now, conn, peer, &mut mine);
        self.forward(&mine, replies);
    }

    fn on_data(
        &mut self,
        now: Instant,
        conn: ServerConnId,
        data: &[u8],
        replies: &mut ServerReplies,
    ) {
        let mut mine = ServerReplies::default();
        self.inner.on_data(now, conn, data, &mut mine);
        self.forward(&mine, replies);
    }

    fn on_peer_closed(&mut self, now: Instant, conn: ServerConnId, replies: &mut ServerReplies) {
        let mut mine = ServerReplies::default();
        self.inner.on_peer_closed(now, conn, &mut mine);
        self.forward(&mine, replies);
    }

    fn on_reset(&mut self, now: Instant, conn: ServerConnId) {
        self.inner.on_reset(now, conn);
    }

    fn on_wakeup(&mut self, now: Instant, conn: ServerConnId, replies: &mut ServerReplies) {
        let mut mine = ServerReplies::default();
        self.inner.on_wakeup(now, conn, &mut mine);
        self.forward(&mine, replies);
    }
}

/// A call client wrapper that checks the [`CallClient`] contract the
/// workloads rely on (and would otherwise absorb silently): each call ends
/// exactly once, only while it is in flight; and counts the payload bytes the
/// client's sockets deliver.
struct Audited<C> {
    inner: C,
    next_call: u64,
    in_flight: Option<CallId>,
    received: u64,
    problems: Vec<String>,
}

impl<C> Audited<C> {
    fn new(inner: C) -> Self {
        Audited {
            inner,
            next_call: 0,
            in_flight: None,
            received: 0,
            problems: Vec::new(),
        }
    }
}

impl<C: CallClient> CallClient for Audited<C> {
    fn start_call(&mut self, cx: &mut ClientCx<'_>, id: CallId, spec: &CallSpec) {
        if self.in_flight.is_some() || id != CallId(self.next_call) {
            self.problems.push(format!(
                "at {:?}: {id:?} started while {:?} is in flight or out of order",
                cx.now(),
                self.in_flight
            ));
        }
        self.next_call = id.0 + 1;
        self.in_flight = Some(id);
        self.inner.start_call(cx, id, spec);
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        if let SocketEvent::Data(d) = &event {
            self.received += d.len() as u64;
        }
        self.inner.on_socket_event(cx, socket, event);
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        self.inner.on_wakeup(cx);
    }

    fn poll_outcome(&mut self) -> Option<CallOutcome> {
        let out = self.inner.poll_outcome()?;
        if self.in_flight == Some(out.id) {
            self.in_flight = None;
        } else {
            self.problems.push(format!(
                "an outcome for {:?}, which is not in flight (in flight: {:?})",
                out.id, self.in_flight
            ));
        }
        Some(out)
    }
}

/// Seed inputs: for every client (engine profile × channel, each peer) and
/// schedule kind, the first of a fixed stream of byte strings that decodes to
/// it, cut to the bytes the decoder reads.
fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut seen = std::collections::BTreeMap::new();
    let mut rng = Rng::new(0x5349_4d46);
    for _ in 0..4000 {
        let bytes: Vec<u8> = (0..256).map(|_| rng.next_u64() as u8).collect();
        let (scenario, used) = Scenario::decode(&bytes);
        seen.entry(scenario.name())
            .or_insert_with(|| bytes[..used].to_vec());
    }
    seen.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_runs_its_seeds() {
        for target in TARGETS {
            let seeds = (target.seeds)();
            // 4 profiles × 2 channels + 5 peers, each with 3 schedule kinds.
            assert_eq!(
                seeds.len(),
                39,
                "{}: a client or schedule kind is missing",
                target.name
            );
            for (_, input) in seeds {
                (target.run)(&input);
            }
            (target.run)(&[]);
            (target.run)(&[0xFF; 64]);
        }
    }

    #[test]
    fn bounds_hold_for_extreme_selectors() {
        assert_eq!(BodySize(0xFFFF).len(), 0x3FFF * 4);
        assert!(BodySize(0xFFFF).len() <= 64 * 1024);
        assert_eq!(BodySize(0xBFFF).len(), 1023);
        let c = LinkChoice {
            delay_ms: u16::MAX,
            jitter_ms: u8::MAX,
            bandwidth_kbps: Some(u16::MAX),
            queue: u8::MAX,
            loss: LossChoice::Percent(u8::MAX),
        }
        .conditions();
        assert!(c.delay <= Duration::from_secs(1));
        assert!(c
            .bandwidth_bps
            .is_some_and(|b| (16_000..4_016_000).contains(&b)));
        assert!((1..=64).contains(&c.queue_packets));
        assert_eq!(c.loss, LossModel::percent(f64::from(255 % 91)));
        assert_eq!(LossChoice::Percent(90).model(), LossModel::percent(90.0));
        let s = Scenario::from_bytes(&[0xFF; 300]);
        assert!((1..=MAX_CALLS).contains(&s.call_count()));
    }

    #[test]
    fn a_broken_call_client_is_caught() {
        /// Ends every call twice.
        struct Twice(Vec<CallOutcome>);
        impl CallClient for Twice {
            fn start_call(&mut self, _cx: &mut ClientCx<'_>, id: CallId, _spec: &CallSpec) {
                let out = CallOutcome {
                    id,
                    result: Err(crate::workload::CallFailure::Rejected),
                    cost: crate::workload::CallCost::default(),
                };
                self.0.extend([out, out]);
            }
            fn on_socket_event(&mut self, _: &mut ClientCx<'_>, _: SocketId, _: SocketEvent) {}
            fn on_wakeup(&mut self, _cx: &mut ClientCx<'_>) {}
            fn poll_outcome(&mut self) -> Option<CallOutcome> {
                (!self.0.is_empty()).then(|| self.0.remove(0))
            }
        }
        let s = Scenario::from_bytes(&[]);
        let run = s.run_client(
            false,
            &s.run_spec(),
            Twice(Vec::new()),
            TcpStack::xnu(),
            |_, _| {},
        );
        assert_eq!(run.records.len(), 1);
        assert_eq!(run.problems.len(), 1, "{:?}", run.problems);
        assert!(s.check_run(&run).is_err());
    }
}
