//! Scenario files: a user-written benchmark scenario in TOML, run by
//! `stn-sim run SCENARIO.toml` and `stn-sim trace --scenario SCENARIO.toml`.
//!
//! # Format
//!
//! Every key is optional except `clients`; unknown keys are errors (a typo
//! must not silently fall back to a default). Times are seconds (`*_s`) or
//! milliseconds (`*_ms`), rates percent, sizes bytes.
//!
//! ```toml
//! # What the report calls the scenario (default: the file name).
//! name = "3g-bursty-outage"
//! # The phone: "android" (Linux < 6.5 TCP; OkHttp peers) or "ios" (xnu TCP;
//! # NSURLSession peers). Engines and the oracle run on it; a peer of the
//! # other platform is an error.
//! platform = "android"
//! # Who to run, each alone on its own copy of the network (same seed, so
//! # the same loss streams): stn, stn-tuned, mars-2017, mars, okhttp-2017,
//! # okhttp-2017-60s, okhttp-5 (android); nsurlsession, nsurlsession-shared
//! # (ios); oracle (the physical limit) on both.
//! clients = ["stn", "mars-2017", "okhttp-2017", "oracle"]
//! # Repetitions, each with its own seed derived from the root seed.
//! runs = 1
//!
//! [link]
//! # A starting point: "3g", "2g" (= "edge"), "very-bad", "full-loss", or
//! # "lossy" (30 ms each way, unlimited bandwidth, no loss: the base of the
//! # benchmark's "N% Loss" profiles). Default: "lossy".
//! preset = "3g"
//! # Replace the preset's loss both ways: Bernoulli ...
//! loss_percent = 10.0
//! # ... or Gilbert–Elliott bursts (average rate, mean burst in milliseconds).
//! # bursty = { rate_percent = 30.0, mean_burst_ms = 200.0 }
//!
//! # Per direction (up = client to server), overriding the above field by
//! # field. bandwidth_kbps = 0 means unlimited.
//! [link.up]
//! delay_ms = 120
//! jitter_ms = 10
//! bandwidth_kbps = 330
//! queue_packets = 50
//! [link.down]
//! bursty = { rate_percent = 30.0, mean_burst_ms = 200.0 }
//!
//! # Scripted outages: every packet sent in [from_s, until_s) is lost, both
//! # ways. Sorted, not overlapping.
//! [[outage]]
//! from_s = 0.0
//! until_s = 12.5
//! [[outage]]
//! from_s = 60.0
//! until_s = 65.0
//!
//! [workload]
//! # "sequential": calls one after another until `successes` succeeded (at
//! # most 10 x as many calls) -- the benchmark loop; "single": one call at
//! # t = 0 -- the sensitivity test.
//! kind = "sequential"
//! successes = 20
//! request_bytes = 64
//! response_bytes = 100
//! # Engine clients: "short" (HTTP per task) or "long" (the long link).
//! channel = "short"
//! # Engine task retries (omit: the engine's default).
//! retry_count = 0
//! # How many times DNS returns the server's IP (the benchmark: 4).
//! dns_copies = 4
//! # Or the resolver's answer with dead endpoints, in order: l = the live
//! # server, r = refusing, b = black-holed (replaces dns_copies).
//! # candidates = "bbrl"
//! # Serve keep-alive HTTP (default: when a pooled peer -- okhttp-5,
//! # nsurlsession-shared -- is among the clients).
//! # keep_alive_server = true
//! ```
//!
//! The same text is committed as `stn-sim/scenarios/example.toml`; parse it
//! with [`Scenario::from_toml`]:
//!
//! ```
//! use stn_sim::scenario::{Scenario, WorkloadKind};
//! let s = Scenario::from_toml(include_str!("../scenarios/example.toml"), "example").unwrap();
//! assert_eq!(s.name, "3g-bursty-outage");
//! assert_eq!(s.clients, ["stn", "mars-2017", "okhttp-2017", "oracle"]);
//! assert_eq!(s.workload.kind, WorkloadKind::Sequential { successes: 20 });
//! ```

use serde::Deserialize;
use stn_proto::Rng;
use stn_proto::{Duration, Instant};

use crate::bench::client_kind::ClientKind;
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::run_spec::{Candidate, RunSpec};
pub use crate::bench::runner::TraceRun;
use crate::bench::runner::{run_sequential, run_single, run_traced, RunResult};
use crate::link::{GilbertElliott, LinkConditions, LossModel};
use crate::path::{PathConditions, PathSchedule};
use crate::preset::Preset;
use crate::report::table;

/// A scenario file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Not valid TOML, or not the format above.
    #[error("scenario {file}: {source}")]
    Toml {
        /// Which file.
        file: String,
        /// What the parser said (with line and column).
        source: toml::de::Error,
    },
    /// Valid TOML with a value that makes no sense.
    #[error("scenario {file}: {msg}")]
    Invalid {
        /// Which file.
        file: String,
        /// What is wrong.
        msg: String,
    },
}

/// Bursty loss of a direction: Gilbert–Elliott with this average rate and
/// mean burst length.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstyFile {
    /// Average loss rate, percent.
    pub rate_percent: f64,
    /// Mean burst length in milliseconds (bursts are in time, not packets).
    pub mean_burst_ms: f64,
}

/// One direction's overrides (`[link.up]`, `[link.down]`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionFile {
    /// One-way delay, ms.
    pub delay_ms: Option<f64>,
    /// Uniform jitter half-width, ms.
    pub jitter_ms: Option<f64>,
    /// Bottleneck rate, kbit/s; 0 = unlimited.
    pub bandwidth_kbps: Option<f64>,
    /// Bottleneck queue, packets.
    pub queue_packets: Option<usize>,
    /// Bernoulli loss, percent.
    pub loss_percent: Option<f64>,
    /// Bursty loss (instead of `loss_percent`).
    pub bursty: Option<BurstyFile>,
}

/// `[link]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFile {
    /// Preset name.
    pub preset: Option<String>,
    /// Bernoulli loss both ways, percent.
    pub loss_percent: Option<f64>,
    /// Bursty loss both ways.
    pub bursty: Option<BurstyFile>,
    /// Client → server overrides.
    #[serde(default)]
    pub up: DirectionFile,
    /// Server → client overrides.
    #[serde(default)]
    pub down: DirectionFile,
}

/// `[[outage]]`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutageFile {
    /// Start, s.
    pub from_s: f64,
    /// End (exclusive), s.
    pub until_s: f64,
}

/// `[workload]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    /// `sequential` (default) or `single`.
    pub kind: Option<String>,
    /// Sequential: successes to reach (default 20).
    pub successes: Option<u64>,
    /// Request body bytes (default 64).
    pub request_bytes: Option<usize>,
    /// Response body bytes (default 100).
    pub response_bytes: Option<usize>,
    /// `short` (default) or `long`.
    pub channel: Option<String>,
    /// Engine task retries.
    pub retry_count: Option<u8>,
    /// DNS copies of the server IP (default 4).
    pub dns_copies: Option<usize>,
    /// The resolver's answer with dead endpoints: `l` live, `r` refusing,
    /// `b` black-holed, in order (replaces `dns_copies`).
    pub candidates: Option<String>,
    /// Keep-alive HTTP server.
    pub keep_alive_server: Option<bool>,
}

/// The file as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Report name.
    pub name: Option<String>,
    /// `android` (default) or `ios`.
    pub platform: Option<String>,
    /// Client names.
    pub clients: Vec<String>,
    /// Repetitions (default 1).
    pub runs: Option<u32>,
    /// The link.
    #[serde(default)]
    pub link: LinkFile,
    /// Outages.
    #[serde(default)]
    pub outage: Vec<OutageFile>,
    /// The workload.
    #[serde(default)]
    pub workload: WorkloadFile,
}

/// What each client does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Calls back to back until this many succeeded (at most 10× as many calls).
    Sequential {
        /// Target successes.
        successes: u64,
    },
    /// One call at t = 0.
    Single,
}

/// The workload, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// Sequential or single.
    pub kind: WorkloadKind,
    /// Request body bytes.
    pub request_bytes: usize,
    /// Response body bytes.
    pub response_bytes: usize,
    /// Engine clients use the long link.
    pub long_link: bool,
    /// Engine task retries (`None`: engine default).
    pub retry_count: Option<u8>,
    /// DNS copies of the server IP.
    pub dns_copies: usize,
    /// The resolver's answer with dead endpoints (empty: `dns_copies`
    /// copies of the live server).
    pub candidates: Vec<Candidate>,
    /// Keep-alive HTTP server.
    pub keep_alive_server: bool,
}

/// A validated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Report name.
    pub name: String,
    /// `android` or `ios`.
    pub platform: String,
    /// Client names, in report order (checked against [`CLIENT_NAMES`]).
    pub clients: Vec<String>,
    /// Repetitions.
    pub runs: u32,
    /// The network over time.
    pub path: PathSchedule,
    /// The workload.
    pub workload: Workload,
}

/// Client names a scenario may use, with the platform they need (`None`:
/// either).
pub const CLIENT_NAMES: [(&str, Option<&str>); 10] = [
    ("stn", None),
    ("stn-tuned", None),
    ("mars-2017", None),
    ("mars", None),
    ("okhttp-2017", Some("android")),
    ("okhttp-2017-60s", Some("android")),
    ("okhttp-5", Some("android")),
    ("nsurlsession", Some("ios")),
    ("nsurlsession-shared", Some("ios")),
    ("oracle", None),
];

/// Whether `client` is a pooled peer that needs a keep-alive server.
fn is_pooled_peer(client: &str) -> bool {
    matches!(client, "okhttp-5" | "nsurlsession-shared")
}

fn preset(name: &str) -> Option<PathConditions> {
    Some(match name.to_ascii_lowercase().as_str() {
        "3g" => Preset::ThreeG.conditions(),
        "2g" | "edge" => Preset::Edge.conditions(),
        "very-bad" | "very-bad-network" => Preset::VeryBadNetwork.conditions(),
        "full-loss" | "100%-loss" => Preset::FullLoss.conditions(),
        "lossy" | "loss" => Preset::LossPercent(0.0).conditions(),
        _ => return None,
    })
}

/// Preset names [`Scenario::from_toml`] accepts.
pub const PRESET_NAMES: &str = "3g, 2g (edge), very-bad, full-loss, lossy";

impl Scenario {
    /// Parses and validates a scenario; `file` names it in errors and is the
    /// default `name`.
    pub fn from_toml(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let raw: ScenarioFile = toml::from_str(text).map_err(|source| ScenarioError::Toml {
            file: file.to_owned(),
            source,
        })?;
        raw.validate(file).map_err(|msg| ScenarioError::Invalid {
            file: file.to_owned(),
            msg,
        })
    }

    /// Reads, parses and validates the scenario at `path`.
    pub fn from_path(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Invalid {
            file: file.clone(),
            msg: format!("cannot read: {e}"),
        })?;
        let stem = path
            .file_stem()
            .map_or_else(|| file.clone(), |s| s.to_string_lossy().into_owned());
        let mut s = Self::from_toml(&text, &file)?;
        if s.name == file {
            s.name = stem;
        }
        Ok(s)
    }
}

fn check_percent(what: &str, p: f64) -> Result<f64, String> {
    if p.is_finite() && (0.0..=100.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("{what} must be a percentage in 0..=100, got {p}"))
    }
}

fn check_ms(what: &str, ms: f64) -> Result<Duration, String> {
    if ms.is_finite() && (0.0..=3_600_000.0).contains(&ms) {
        Ok(Duration::from_secs_f64(ms / 1000.0))
    } else {
        Err(format!("{what} must be between 0 and 3600000 ms, got {ms}"))
    }
}

fn bursty(what: &str, b: BurstyFile) -> Result<LossModel, String> {
    let rate = check_percent(&format!("{what}.rate_percent"), b.rate_percent)?;
    if !(b.mean_burst_ms.is_finite() && b.mean_burst_ms >= 1.0) {
        return Err(format!(
            "{what}.mean_burst_ms must be at least 1 ms, got {}",
            b.mean_burst_ms
        ));
    }
    let mean = check_ms(&format!("{what}.mean_burst_ms"), b.mean_burst_ms)?;
    Ok(LossModel::GilbertElliott(
        GilbertElliott::with_rate_and_burst(rate / 100.0, mean),
    ))
}

fn loss(
    what: &str,
    percent: Option<f64>,
    burst: Option<BurstyFile>,
) -> Result<Option<LossModel>, String> {
    match (percent, burst) {
        (Some(_), Some(_)) => Err(format!("{what}: give loss_percent or bursty, not both")),
        (Some(p), None) => Ok(Some(LossModel::percent(check_percent(
            &format!("{what}.loss_percent"),
            p,
        )?))),
        (None, Some(b)) => bursty(what, b).map(Some),
        (None, None) => Ok(None),
    }
}

impl DirectionFile {
    fn apply(&self, what: &str, c: &mut LinkConditions) -> Result<(), String> {
        if let Some(ms) = self.delay_ms {
            c.delay = check_ms(&format!("{what}.delay_ms"), ms)?;
        }
        if let Some(ms) = self.jitter_ms {
            c.jitter = check_ms(&format!("{what}.jitter_ms"), ms)?;
        }
        if let Some(kbps) = self.bandwidth_kbps {
            if !(kbps.is_finite() && kbps >= 0.0) {
                return Err(format!(
                    "{what}.bandwidth_kbps must be >= 0 (0 = unlimited), got {kbps}"
                ));
            }
            // f64 → u64 saturates; fractions of a bit per second are noise.
            c.bandwidth_bps = (kbps > 0.0).then(|| (kbps * 1000.0).round() as u64);
        }
        if let Some(q) = self.queue_packets {
            if q == 0 {
                return Err(format!("{what}.queue_packets must be at least 1"));
            }
            c.queue_packets = q;
        }
        if let Some(l) = loss(what, self.loss_percent, self.bursty)? {
            c.loss = l;
        }
        Ok(())
    }
}

fn instant(what: &str, s: f64) -> Result<Instant, String> {
    if s.is_finite() && (0.0..=1e7).contains(&s) {
        Ok(Instant::ZERO + Duration::from_secs_f64(s))
    } else {
        Err(format!("{what} must be between 0 and 1e7 s, got {s}"))
    }
}

impl LinkFile {
    /// The link's conditions outside outages.
    fn conditions(&self) -> Result<PathConditions, String> {
        let mut c = match &self.preset {
            Some(name) => preset(name).ok_or_else(|| {
                format!("link.preset: unknown preset {name:?}; use one of {PRESET_NAMES}")
            })?,
            None => Preset::LossPercent(0.0).conditions(),
        };
        if let Some(l) = loss("link", self.loss_percent, self.bursty)? {
            c = c.with_loss(l);
        }
        self.up.apply("link.up", &mut c.up)?;
        self.down.apply("link.down", &mut c.down)?;
        Ok(c)
    }
}

/// The path: `base`, with every outage window fully lossy.
fn schedule(base: PathConditions, outages: &[OutageFile]) -> Result<PathSchedule, String> {
    let mut path = PathSchedule::constant(base);
    let mut last_end = Instant::ZERO;
    for (i, o) in outages.iter().enumerate() {
        let from = instant(&format!("outage[{i}].from_s"), o.from_s)?;
        let until = instant(&format!("outage[{i}].until_s"), o.until_s)?;
        if until <= from {
            return Err(format!("outage[{i}]: until_s must be after from_s"));
        }
        if i > 0 && from < last_end {
            return Err(format!(
                "outage[{i}] starts before the previous one ends (sort them; no overlaps)"
            ));
        }
        path = if from == Instant::ZERO {
            // The schedule's initial conditions are the outage itself.
            PathSchedule::constant(base.outage())
        } else {
            path.then_at(from, base.outage())
        }
        .then_at(until, base);
        last_end = until;
    }
    Ok(path)
}

impl ScenarioFile {
    fn validate(self, file: &str) -> Result<Scenario, String> {
        let platform = self.platform.unwrap_or_else(|| "android".into());
        if platform != "android" && platform != "ios" {
            return Err(format!(
                "platform must be \"android\" or \"ios\", got {platform:?}"
            ));
        }
        if self.clients.is_empty() {
            return Err("clients: name at least one client".into());
        }
        for (i, c) in self.clients.iter().enumerate() {
            let Some((_, needs)) = CLIENT_NAMES.iter().find(|(n, _)| n == c) else {
                let names: Vec<&str> = CLIENT_NAMES.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "clients: unknown client {c:?}; use any of {}",
                    names.join(", ")
                ));
            };
            if let Some(p) = needs {
                if *p != platform {
                    return Err(format!(
                        "clients: {c} runs on {p}, but this scenario's platform is {platform}"
                    ));
                }
            }
            if self.clients[..i].contains(c) {
                return Err(format!("clients: {c} is listed twice"));
            }
        }
        let runs = self.runs.unwrap_or(1);
        if runs == 0 || runs > 1000 {
            return Err(format!("runs must be 1..=1000, got {runs}"));
        }
        let base = self.link.conditions()?;
        let path = schedule(base, &self.outage)?;
        let w = self.workload;
        let kind = match w.kind.as_deref().unwrap_or("sequential") {
            "sequential" => {
                let successes = w.successes.unwrap_or(20);
                if successes == 0 || successes > 100_000 {
                    return Err(format!(
                        "workload.successes must be 1..=100000, got {successes}"
                    ));
                }
                WorkloadKind::Sequential { successes }
            }
            "single" => {
                if w.successes.is_some() {
                    return Err("workload.successes applies to kind = \"sequential\" only".into());
                }
                WorkloadKind::Single
            }
            other => {
                return Err(format!(
                    "workload.kind must be \"sequential\" or \"single\", got {other:?}"
                ))
            }
        };
        let long_link = match w.channel.as_deref().unwrap_or("short") {
            "short" => false,
            "long" => true,
            other => {
                return Err(format!(
                    "workload.channel must be \"short\" or \"long\", got {other:?}"
                ))
            }
        };
        let limit = 16 * 1024 * 1024;
        let request_bytes = w.request_bytes.unwrap_or(64);
        let response_bytes = w.response_bytes.unwrap_or(100);
        if request_bytes > limit || response_bytes > limit {
            return Err("workload: request_bytes and response_bytes are at most 16 MiB".into());
        }
        let dns_copies = w.dns_copies.unwrap_or(4);
        if !(1..=16).contains(&dns_copies) {
            return Err(format!(
                "workload.dns_copies must be 1..=16, got {dns_copies}"
            ));
        }
        let candidates = match &w.candidates {
            None => Vec::new(),
            Some(letters) => parse_candidates(letters)?,
        };
        let keep_alive_server = w
            .keep_alive_server
            .unwrap_or_else(|| self.clients.iter().any(|c| is_pooled_peer(c)));
        Ok(Scenario {
            name: self.name.unwrap_or_else(|| file.to_owned()),
            platform,
            clients: self.clients,
            runs,
            path,
            workload: Workload {
                kind,
                request_bytes,
                response_bytes,
                long_link,
                retry_count: w.retry_count,
                dns_copies,
                candidates,
                keep_alive_server,
            },
        })
    }
}

/// `workload.candidates`: 1–16 of `l`, `r`, `b`, at least one `l`.
fn parse_candidates(letters: &str) -> Result<Vec<Candidate>, String> {
    let list = letters
        .chars()
        .map(|c| match c {
            'l' => Ok(Candidate::Live),
            'r' => Ok(Candidate::Refusing),
            'b' => Ok(Candidate::BlackHoled),
            other => Err(format!(
                "workload.candidates: {other:?} is not l (live), r (refusing) or b (black-holed)"
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if !(1..=16).contains(&list.len()) || !list.contains(&Candidate::Live) {
        return Err(format!(
            "workload.candidates must be 1..=16 letters with at least one l, got {letters:?}"
        ));
    }
    Ok(list)
}

// ---------------------------------------------------------------------------
// Running a scenario on the bench's building blocks.
// ---------------------------------------------------------------------------

/// The bench's client and platform for a scenario client name (validated
/// names only; `None` for anything else).
pub fn client_kind(name: &str, platform: &str) -> Option<(ClientKind, Platform)> {
    let p = if platform == "ios" {
        Platform::Ios
    } else {
        Platform::Android
    };
    let kind = match name {
        "stn" => ClientKind::STN,
        "stn-tuned" => ClientKind::STN_TUNED,
        "mars-2017" => ClientKind::MARS_2017,
        "mars" => ClientKind::MARS,
        "okhttp-2017" | "nsurlsession" => ClientKind::PeerBenchmarked,
        "okhttp-2017-60s" => ClientKind::PeerSensitivity,
        "okhttp-5" | "nsurlsession-shared" => ClientKind::PeerRecommended,
        "oracle" => ClientKind::Oracle,
        _ => return None,
    };
    // The report name must round-trip: it is what the tables show.
    (kind.name(p) == name).then_some((kind, p))
}

/// The seed of run `run` of a custom scenario: derived from the root seed,
/// the scenario name and the run index (the same for every client of the
/// run, so they meet the same loss streams).
pub fn run_seed(seed: u64, scenario: &str, run: u32) -> u64 {
    let mut h = crate::trace::Fnv64::new();
    h.write(b"scenario");
    h.write(scenario.as_bytes());
    h.write_u64(u64::from(run));
    Rng::derive(seed, h.finish()).next_u64()
}

impl Scenario {
    /// The bench's description of run `run` (every field but the client).
    pub fn run_spec(&self, seed: u64, run: u32) -> RunSpec {
        RunSpec {
            suite: Self::SUITE.to_owned(),
            scenario: self.name.clone(),
            path: self.path.clone(),
            request_len: self.workload.request_bytes,
            response_len: self.workload.response_bytes,
            long_link: self.workload.long_link,
            retry_count: self.workload.retry_count,
            dns_copies: self.workload.dns_copies,
            candidates: self.workload.candidates.clone(),
            keep_alive_server: self.workload.keep_alive_server,
            tls: false,
            early_data: false,
            seed: run_seed(seed, &self.name, run),
            run,
        }
    }

    /// The `suite` of every record of a custom scenario.
    pub const SUITE: &'static str = "scenario";

    /// Runs every client `runs` times with the bench's runners
    /// ([`run_sequential`], [`run_single`]); `progress` sees each record
    /// as it is made.
    pub fn run(&self, seed: u64, mut progress: impl FnMut(&RunResult)) -> Vec<RunRecord> {
        let mut out = Vec::new();
        for run in 0..self.runs {
            let spec = self.run_spec(seed, run);
            for name in &self.clients {
                let Some((kind, platform)) = client_kind(name, &self.platform) else {
                    continue; // unreachable for a validated scenario
                };
                let res = match self.workload.kind {
                    WorkloadKind::Sequential { successes } => {
                        run_sequential(&kind, platform, &spec, successes)
                    }
                    WorkloadKind::Single => run_single(&kind, platform, &spec),
                };
                progress(&res);
                out.push(res.record);
            }
        }
        out
    }

    /// The Markdown tables of this scenario's records: the loss shape for a
    /// sequential workload, the sensitivity shape for a single call.
    pub fn tables(&self, runs: &[RunRecord]) -> String {
        let all: Vec<&RunRecord> = runs.iter().collect();
        match self.workload.kind {
            WorkloadKind::Sequential { .. } => table::loss_tables(Self::SUITE, &all),
            WorkloadKind::Single => table::sensitivity_tables(Self::SUITE, &all),
        }
    }

    /// Runs `client` (one of [`Scenario::clients`], not the oracle) once
    /// with the trace kept, by the bench's [`run_traced`], so
    /// [`TraceRun::hash`] equals the bench's [`RunResult::trace_hash`] for
    /// the same spec.
    pub fn trace(&self, client: &str, seed: u64, run: u32) -> Result<TraceRun, String> {
        if !self.clients.iter().any(|c| c == client) {
            return Err(format!(
                "client {client:?} is not in this scenario (it has {})",
                self.clients.join(", ")
            ));
        }
        let (kind, platform) = client_kind(client, &self.platform)
            .ok_or_else(|| format!("unknown client {client:?}"))?;
        let successes = match self.workload.kind {
            WorkloadKind::Sequential { successes } => Some(successes),
            WorkloadKind::Single => None,
        };
        run_traced(&kind, platform, &self.run_spec(seed, run), successes)
    }
}

/// The scenario `stn-sim trace` runs without `--scenario`: stn on Android
/// over 3G with 30 % loss, three successful calls.
pub const DEFAULT_TRACE_SCENARIO: &str = r#"name = "trace-default"
platform = "android"
clients = ["stn", "mars-2017", "okhttp-2017"]
[link]
preset = "3g"
loss_percent = 30.0
[workload]
kind = "sequential"
successes = 3
retry_count = 0
"#;

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../scenarios/example.toml");

    fn invalid(text: &str) -> String {
        match Scenario::from_toml(text, "t.toml") {
            Err(e) => e.to_string(),
            Ok(s) => panic!("accepted: {s:?}"),
        }
    }

    #[test]
    fn example_builds_the_documented_path() {
        let s = Scenario::from_toml(EXAMPLE, "example.toml").unwrap();
        assert_eq!(s.platform, "android");
        assert_eq!(s.runs, 1);
        let at = |t: f64| Instant::ZERO + Duration::from_secs_f64(t);
        // Up: 3G shape with the explicit overrides, 10 % Bernoulli loss.
        let up = s.path.up.at(at(20.0));
        assert_eq!(up.delay, Duration::from_millis(120));
        assert_eq!(up.jitter, Duration::from_millis(10));
        assert_eq!(up.bandwidth_bps, Some(330_000));
        assert_eq!(up.loss, LossModel::Bernoulli { p: 0.1 });
        // Down: 3G with bursty loss.
        let down = s.path.down.at(at(20.0));
        assert_eq!(down.bandwidth_bps, Some(780_000));
        assert!(
            matches!(down.loss, LossModel::GilbertElliott(g) if (g.stationary_loss() - 0.3).abs() < 1e-9)
        );
        // Outages.
        for t in [0.0, 12.4, 60.0, 64.9] {
            assert_eq!(s.path.up.at(at(t)).loss, LossModel::OUTAGE, "t = {t}");
            assert_eq!(s.path.down.at(at(t)).loss, LossModel::OUTAGE, "t = {t}");
        }
        assert_eq!(s.path.up.at(at(12.5)), up);
        assert_eq!(s.path.down.at(at(65.0)), down);
        assert_eq!(
            s.workload,
            Workload {
                kind: WorkloadKind::Sequential { successes: 20 },
                request_bytes: 64,
                response_bytes: 100,
                long_link: false,
                retry_count: Some(0),
                dns_copies: 4,
                candidates: Vec::new(),
                keep_alive_server: false,
            }
        );
    }

    #[test]
    fn example_file_is_the_documented_one() {
        let doc: Vec<&str> = include_str!("scenario.rs")
            .lines()
            .skip_while(|l| *l != "//! ```toml")
            .skip(1)
            .take_while(|l| *l != "//! ```")
            .map(|l| {
                l.strip_prefix("//! ")
                    .unwrap_or(l.trim_start_matches("//!"))
            })
            .collect();
        let file: Vec<&str> = EXAMPLE
            .lines()
            .filter(|l| !l.starts_with("# stn-sim scenario file") && !l.starts_with("# (rustdoc"))
            .collect();
        assert_eq!(doc, file);
    }

    #[test]
    fn minimal_file_gets_the_defaults() {
        let s = Scenario::from_toml("clients = [\"okhttp-5\"]", "min.toml").unwrap();
        assert_eq!(s.name, "min.toml");
        assert_eq!(
            s.path,
            PathSchedule::constant(Preset::LossPercent(0.0).conditions())
        );
        assert_eq!(s.workload.kind, WorkloadKind::Sequential { successes: 20 });
        assert!(
            s.workload.keep_alive_server,
            "a pooled peer gets keep-alive"
        );
        let s = Scenario::from_toml(
            "clients = [\"nsurlsession\", \"stn\"]\nplatform = \"ios\"\n[workload]\nkind = \"single\"\nchannel = \"long\"",
            "x",
        )
        .unwrap();
        assert_eq!(s.workload.kind, WorkloadKind::Single);
        assert!(s.workload.long_link);
    }

    #[test]
    fn trace_hash_matches_the_bench_runner() {
        let s = Scenario::from_toml(
            "clients = [\"stn\", \"okhttp-5\", \"oracle\"]\n[link]\npreset = \"3g\"\nloss_percent = 20\n[workload]\nsuccesses = 2",
            "t",
        )
        .unwrap();
        for client in ["stn", "okhttp-5"] {
            let (kind, platform) = client_kind(client, "android").unwrap();
            let bench = run_sequential(&kind, platform, &s.run_spec(5, 0), 2);
            let traced = s.trace(client, 5, 0).unwrap();
            assert_eq!(traced.hash, bench.trace_hash, "{client}");
            assert!(!traced.events.is_empty());
        }
        assert!(s
            .trace("oracle", 5, 0)
            .unwrap_err()
            .contains("no packet trace"));
        assert!(s
            .trace("mars", 5, 0)
            .unwrap_err()
            .contains("not in this scenario"));
    }

    #[test]
    fn run_gives_one_record_per_client_and_run() {
        let mut s = Scenario::from_toml(
            "clients = [\"nsurlsession\", \"oracle\"]\nplatform = \"ios\"\nruns = 2\n[[outage]]\nfrom_s = 0\nuntil_s = 5\n[workload]\nkind = \"single\"",
            "t",
        )
        .unwrap();
        s.name = "five".into();
        let mut seen = 0;
        let recs = s.run(1, |_| seen += 1);
        assert_eq!(seen, 4);
        let keys: Vec<(&str, u32, &str)> = recs
            .iter()
            .map(|r| (r.client.as_str(), r.run, r.platform.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("nsurlsession", 0, "ios"),
                ("oracle", 0, "ios"),
                ("nsurlsession", 1, "ios"),
                ("oracle", 1, "ios")
            ]
        );
        assert!(recs
            .iter()
            .all(|r| r.suite == "scenario" && r.scenario == "five" && r.ok));
        // Nothing arrives before the outage ends.
        assert!(recs.iter().all(|r| r.completion_s.unwrap() > 5.0));
        // No own engine among the clients: no difference table, only completions.
        assert!(!s.tables(&recs).contains(" VS "));
        assert!(s.tables(&recs).contains("completion time"));
    }

    #[test]
    fn candidates_put_dead_hosts_before_the_live_one() {
        let s = Scenario::from_toml(
            "clients = [\"stn\", \"oracle\"]\n[workload]\nsuccesses = 2\ncandidates = \"brl\"",
            "t",
        )
        .unwrap();
        let spec = s.run_spec(1, 0);
        use Candidate::{BlackHoled, Live, Refusing};
        assert_eq!(spec.candidates, [BlackHoled, Refusing, Live]);
        let ips: Vec<String> = crate::bench::run_spec::candidate_ips(&spec)
            .iter()
            .map(|ip| ip.to_string())
            .collect();
        assert_eq!(ips, ["10.0.1.1", "10.0.1.2", "10.0.0.2"]);
        // The engine gets past both dead hosts and succeeds.
        let recs = s.run(1, |_| ());
        assert!(recs.iter().all(|r| r.ok), "{recs:?}");
        let bad = |c: &str| {
            invalid(&format!(
                "clients = [\"stn\"]\n[workload]\ncandidates = \"{c}\""
            ))
        };
        assert!(bad("bx").contains("'x' is not l"));
        assert!(bad("bb").contains("at least one l"));
        assert!(bad("").contains("1..=16"));
    }

    #[test]
    fn every_client_name_maps_to_the_bench() {
        for (name, needs) in CLIENT_NAMES {
            let platform = needs.unwrap_or("android");
            assert!(client_kind(name, platform).is_some(), "{name}");
        }
        assert!(client_kind("okhttp-2017", "ios").is_none());
    }

    #[test]
    fn mistakes_are_named() {
        assert!(invalid("clients = [\"curl\"]").contains("unknown client \"curl\""));
        assert!(invalid("clients = [\"nsurlsession\"]").contains("runs on ios"));
        assert!(invalid("clients = [\"stn\"]\n[link]\npreset = \"5g\"").contains("unknown preset"));
        assert!(invalid("clients = [\"stn\"]\n[link]\nloss_percent = 130").contains("0..=100"));
        assert!(invalid("clients = [\"stn\"]\n[link]\nloss_percent = 1\nbursty = { rate_percent = 1, mean_burst_ms = 2 }").contains("not both"));
        assert!(
            invalid("clients = [\"stn\"]\n[[outage]]\nfrom_s = 5\nuntil_s = 2")
                .contains("after from_s")
        );
        assert!(invalid("clients = [\"stn\"]\n[[outage]]\nfrom_s = 5\nuntil_s = 9\n[[outage]]\nfrom_s = 8\nuntil_s = 10").contains("overlaps"));
        assert!(
            invalid("clients = [\"stn\"]\n[workload]\nkind = \"burst\"").contains("workload.kind")
        );
        assert!(invalid("clients = [\"stn\"]\nlink_typo = 1").contains("unknown field"));
        assert!(invalid("clients = [\"stn\", \"stn\"]").contains("twice"));
        assert!(invalid("platform = \"ios\"").contains("clients"));
    }
}
