//! The condition matrix (issue 11): the default profile against the best
//! of Mars and the peers on conditions real mobile networks have, not only
//! on the published suites.
//!
//! Two parts, both in suite `matrix`:
//! - **design cells**: a pairwise covering design
//!   ([`crate::bench::covering`]) over the axes below — every pair of
//!   values of every two axes is in some cell — each run over
//!   [`SEEDS`] seeds with [`design_calls`] sequential successes;
//! - **outage sweep**: one call at t = 0 through a single outage of
//!   0.1 s … 30.0 s in 0.1 s steps ([`SWEEP_STEPS`]), on the loss-free
//!   "N% Loss" base path, on each TCP stack.
//!
//! Axes of the design ([`AXES`]): RTT 40 / 150 / 300 / 600 / 1000 ms;
//! loss 0 / 1 / 5 / 10 / 30 / 50 % both ways, 30 % up only, 30 % down only,
//! Gilbert–Elliott 10 % in 300 ms bursts and 30 % in 1 s bursts (bursts in
//! time); bandwidth Edge / 3G / LTE / unlimited (the presets' rates); jitter
//! none / ±10 % of the one-way delay; candidate lists with k of n endpoints
//! dead (refusing, black-holed) in various positions; no outage / one
//! outage (its length walks 0.1–20 s over the cells) / flapping outages;
//! the TCP of Linux < 6.5, Linux ≥ 6.5 and xnu; short link with fresh
//! connections, short link with keep-alive, long link; retry 0 and the
//! default retry count.
//!
//! Clients of every cell: `stn`, `mars-2017`, `mars`, the platform's peer
//! as benchmarked and as recommended, and the oracle. On the long link the
//! engines use it and the peers keep-alive connections (as in the
//! `long_link` suite). The OkHttp 2017 model has one route, so it sits out
//! cells with dead endpoints; NSURLSession as benchmarked gets the whole
//! candidate list there. The gate is in [`crate::bench::gate`].

use stn_proto::{Duration, Instant};

use crate::bench::covering::covering_design;
use crate::bench::record::RunRecord;
use crate::bench::scenario::{
    normal_network, run_sequential, run_single, Candidate, ClientKind, Platform, RunSpec,
    REQUEST_LEN, RESPONSE_LEN,
};
use crate::link::{GilbertElliott, LossModel};
use crate::path::{PathConditions, PathSchedule};
use crate::preset::Preset;

/// Seeds (runs) per cell: the gate needs at least 5.
pub const SEEDS: u32 = 5;

/// Outage sweep: lengths `0.1 s × k` for k = 1 ..= this.
pub const SWEEP_STEPS: u32 = 300;

/// Seed of the covering design's tie-breaks (fixed: the cells are part of
/// the suite's definition, not of a run's seed).
const DESIGN_SEED: u64 = 11;

/// Successes per design cell and seed.
pub fn design_calls(quick: bool) -> u64 {
    if quick {
        20
    } else {
        40
    }
}

/// Round-trip times of the RTT axis, ms.
pub const RTT_MS: [u64; 5] = [40, 150, 300, 600, 1000];

/// A value of the loss axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Bernoulli loss of this many percent both ways (0: none).
    Both(u32),
    /// Bernoulli loss of this many percent client → server only.
    UpOnly(u32),
    /// Bernoulli loss of this many percent server → client only.
    DownOnly(u32),
    /// Gilbert–Elliott loss, average percent, mean burst in ms, both ways.
    Bursty(u32, u64),
}

/// The loss axis.
pub const LOSSES: [Loss; 10] = [
    Loss::Both(0),
    Loss::Both(1),
    Loss::Both(5),
    Loss::Both(10),
    Loss::Both(30),
    Loss::Both(50),
    Loss::UpOnly(30),
    Loss::DownOnly(30),
    Loss::Bursty(10, 300),
    Loss::Bursty(30, 1000),
];

impl Loss {
    /// `loss10%`, `up30%`, `down30%`, `ge30%/1000ms`.
    pub fn label(self) -> String {
        match self {
            Loss::Both(p) => format!("loss{p}%"),
            Loss::UpOnly(p) => format!("up{p}%"),
            Loss::DownOnly(p) => format!("down{p}%"),
            Loss::Bursty(p, ms) => format!("ge{p}%/{ms}ms"),
        }
    }

    fn apply(self, c: &mut PathConditions) {
        let pct = |p: u32| LossModel::percent(f64::from(p));
        match self {
            Loss::Both(p) => *c = c.with_loss(pct(p)),
            Loss::UpOnly(p) => c.up.loss = pct(p),
            Loss::DownOnly(p) => c.down.loss = pct(p),
            Loss::Bursty(p, ms) => {
                *c = c.with_loss(LossModel::GilbertElliott(
                    GilbertElliott::with_rate_and_burst(
                        f64::from(p) / 100.0,
                        Duration::from_millis(ms),
                    ),
                ));
            }
        }
    }
}

/// The bandwidth axis: a preset's rates (its delay is the RTT axis's).
pub const BANDWIDTHS: [Option<Preset>; 4] = [
    Some(Preset::Edge),
    Some(Preset::ThreeG),
    Some(Preset::Lte),
    None,
];

fn bandwidth_label(b: Option<Preset>) -> &'static str {
    match b {
        Some(Preset::Edge) => "edge",
        Some(Preset::ThreeG) => "3g",
        Some(Preset::Lte) => "lte",
        _ => "unlimited",
    }
}

/// The jitter axis: half-width as a fraction of the one-way delay, %.
pub const JITTER_PCT: [u64; 2] = [0, 10];

/// The candidate-list axis: the resolver's answer, in order.
pub const ENDPOINTS: [&[Candidate]; 5] = {
    use Candidate::{BlackHoled as B, Live as L, Refusing as R};
    [&[L], &[R, L], &[B, B, L], &[L, B, R], &[B, R, B, B, B, L]]
};

/// `l`, `rl`, `bbl`, … (one letter per candidate, [`Candidate::letter`]).
pub fn endpoints_label(e: &[Candidate]) -> String {
    e.iter().map(|c| c.letter()).collect()
}

/// A value of the outage axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutageKind {
    /// No outage.
    None,
    /// One outage from t = 1 s; its length comes from the cell index.
    Single,
    /// Outages of `down` every `period` from t = 1 s for the whole run.
    Flapping,
}

/// The outage axis.
pub const OUTAGES: [OutageKind; 3] = [OutageKind::None, OutageKind::Single, OutageKind::Flapping];

/// The TCP axis.
pub const PLATFORMS: [Platform; 3] = Platform::WITH_LINUX_6_5;

/// A value of the link axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// Short link, a fresh connection per call (`Connection: close` server).
    Fresh,
    /// Short link against a keep-alive server.
    KeepAlive,
    /// The engines' long link (peers: keep-alive).
    Long,
}

/// The link axis.
pub const LINKS: [LinkKind; 3] = [LinkKind::Fresh, LinkKind::KeepAlive, LinkKind::Long];

/// The retry axis: engine tasks' retry count (`None`: the default, 1).
pub const RETRIES: [Option<u8>; 2] = [Some(0), None];

/// The axes' names and sizes, in the order of a design row.
pub const AXES: [(&str, usize); 9] = [
    ("rtt", RTT_MS.len()),
    ("loss", LOSSES.len()),
    ("bandwidth", BANDWIDTHS.len()),
    ("jitter", JITTER_PCT.len()),
    ("endpoints", ENDPOINTS.len()),
    ("outage", OUTAGES.len()),
    ("tcp", PLATFORMS.len()),
    ("link", LINKS.len()),
    ("retry", RETRIES.len()),
];

/// The sizes of [`AXES`].
pub fn axis_sizes() -> Vec<usize> {
    AXES.iter().map(|(_, n)| *n).collect()
}

/// One cell of the matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// The design row (value index per axis of [`AXES`]); `None` for a
    /// sweep cell.
    pub row: Option<Vec<usize>>,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// The network over time.
    pub path: PathSchedule,
    /// Candidate list (`[Live]` for the sweep).
    pub candidates: Vec<Candidate>,
    /// TCP stack and peers.
    pub platform: Platform,
    /// Which link.
    pub link: LinkKind,
    /// Engine retry count.
    pub retry: Option<u8>,
    /// The record's scenario name: every axis value, e.g.
    /// `rtt600 loss10% 3g jit0 bbl out-none keepalive retry0`, or
    /// `sweep outage-12.3s`.
    pub name: String,
    /// Sequential successes (design) or `None`: one call at t = 0 (sweep).
    pub calls: Option<u64>,
    /// The suite the cell belongs to (`matrix`, or `tls` for
    /// [`crate::bench::tls_suite`]'s cells): the records' suite and the
    /// seeds' derivation.
    pub suite: crate::bench::Suite,
    /// Every connection runs TLS 1.3 ([`crate::tls`]).
    pub tls: bool,
    /// The calls are idempotent: servers enable TLS early data and engine
    /// tasks allow it ([`RunSpec::early_data`]).
    pub early_data: bool,
    /// The scenario name, in suite `tls`, whose seeds this cell draws
    /// (`None`: its own): the early-data variant runs on the networks of
    /// its `tls` twin, so the two differ by early data alone.
    pub twin: Option<String>,
}

/// Length of the single outage of design cell `i`: walks 0.1 … 20.0 s.
fn single_outage(i: usize) -> Duration {
    let k = 1 + (i as u64 * 37) % 200;
    Duration::from_millis(100 * k)
}

/// (down, period) of the flapping outages of design cell `i`.
fn flapping(i: usize) -> (Duration, Duration) {
    let down = Duration::from_millis(500 + 250 * (i as u64 % 11));
    let period = down + Duration::from_secs(3 + i as u64 % 7);
    (down, period)
}

/// The design cells, in design order.
pub fn design_cells(quick: bool) -> Vec<Cell> {
    covering_design(&axis_sizes(), DESIGN_SEED)
        .into_iter()
        .enumerate()
        .map(|(i, row)| design_cell(i, row, quick))
        .collect()
}

fn design_cell(i: usize, row: Vec<usize>, quick: bool) -> Cell {
    let rtt_ms = RTT_MS[row[0]];
    let loss = LOSSES[row[1]];
    let bw = BANDWIDTHS[row[2]];
    let jitter_pct = JITTER_PCT[row[3]];
    let endpoints = ENDPOINTS[row[4]];
    let outage = OUTAGES[row[5]];
    let platform = PLATFORMS[row[6]];
    let link = LINKS[row[7]];
    let retry = RETRIES[row[8]];
    let one_way = Duration::from_millis(rtt_ms / 2);
    let mut c = normal_network();
    for (d, rate) in [(&mut c.up, false), (&mut c.down, true)] {
        d.delay = one_way;
        d.jitter = one_way * u32::try_from(jitter_pct).unwrap_or(0) / 100;
        d.bandwidth_bps = bw.and_then(|p| {
            let pc = p.conditions();
            if rate {
                pc.down.bandwidth_bps
            } else {
                pc.up.bandwidth_bps
            }
        });
    }
    loss.apply(&mut c);
    let (path, outage_label) = match outage {
        OutageKind::None => (PathSchedule::constant(c), "out-none".to_owned()),
        OutageKind::Single => {
            let len = single_outage(i);
            let from = Instant::from_secs(1);
            (
                PathSchedule::outage(c, from, from + len),
                format!("out-{:.1}s", len.as_secs_f64()),
            )
        }
        OutageKind::Flapping => {
            let (down, period) = flapping(i);
            let mut p = PathSchedule::constant(c);
            let mut t = Instant::from_secs(1);
            // Enough cycles for the slowest client's run (bounded).
            for _ in 0..2000 {
                p = p.then_at(t, c.outage()).then_at(t + down, c);
                t += period;
            }
            (
                p,
                format!(
                    "flap-{:.2}s/{:.2}s",
                    down.as_secs_f64(),
                    period.as_secs_f64()
                ),
            )
        }
    };
    let link_label = match link {
        LinkKind::Fresh => "fresh",
        LinkKind::KeepAlive => "keepalive",
        LinkKind::Long => "long",
    };
    let name = format!(
        "rtt{rtt_ms} {} {} jit{jitter_pct} {} {outage_label} {link_label} retry{}",
        loss.label(),
        bandwidth_label(bw),
        endpoints_label(endpoints),
        retry.map_or("-default".to_owned(), |r| r.to_string()),
    );
    Cell {
        row: Some(row),
        rtt: Duration::from_millis(rtt_ms),
        path,
        candidates: endpoints.to_vec(),
        platform,
        link,
        retry,
        name,
        calls: Some(design_calls(quick)),
        suite: crate::bench::Suite::Matrix,
        tls: false,
        early_data: false,
        twin: None,
    }
}

/// The outage sweep cells: every 0.1 s step on every TCP stack.
pub fn sweep_cells() -> Vec<Cell> {
    let base = normal_network();
    let mut v = Vec::new();
    for platform in PLATFORMS {
        for k in 1..=SWEEP_STEPS {
            let len = Duration::from_millis(100 * u64::from(k));
            v.push(Cell {
                row: None,
                rtt: base.base_rtt(),
                path: PathSchedule::outage(base, Instant::ZERO, Instant::ZERO + len),
                candidates: vec![Candidate::Live],
                platform,
                link: LinkKind::Fresh,
                retry: None,
                name: sweep_name(len),
                calls: None,
                suite: crate::bench::Suite::Matrix,
                tls: false,
                early_data: false,
                twin: None,
            });
        }
    }
    v
}

/// `sweep outage-12.3s`.
fn sweep_name(len: Duration) -> String {
    format!("sweep outage-{:.1}s", len.as_secs_f64())
}

/// The cell whose [`Cell::key`] is `key` (quick or full size).
pub fn find_cell(key: &str, quick: bool) -> Option<Cell> {
    cells(quick).into_iter().find(|c| c.key() == key)
}

/// Every cell of the suite: the design, then the sweep.
pub fn cells(quick: bool) -> Vec<Cell> {
    let mut v = design_cells(quick);
    v.extend(sweep_cells());
    v
}

impl Cell {
    /// The clients compared in this cell (the oracle last).
    pub fn clients(&self) -> Vec<ClientKind> {
        let mut v = vec![ClientKind::STN, ClientKind::MARS_2017, ClientKind::MARS];
        let one_route_peer = self.platform != Platform::Ios;
        if !(one_route_peer && self.candidates.iter().any(|c| *c != Candidate::Live)) {
            v.push(ClientKind::PeerBenchmarked);
        }
        v.push(ClientKind::PeerRecommended);
        v.push(ClientKind::Oracle);
        v
    }

    /// The run description of `client` in seed `run` (root `seed`).
    pub fn spec(&self, client: &ClientKind, seed: u64, run: u32) -> RunSpec {
        let engine = matches!(client, ClientKind::Engine(_));
        let (seed_suite, seed_name) = match &self.twin {
            Some(name) => (crate::bench::Suite::Tls, name.as_str()),
            None => (self.suite, self.name.as_str()),
        };
        RunSpec {
            suite: self.suite.name().to_owned(),
            scenario: self.name.clone(),
            path: self.path.clone(),
            request_len: REQUEST_LEN,
            response_len: RESPONSE_LEN,
            long_link: self.link == LinkKind::Long && engine,
            retry_count: self.retry,
            dns_copies: 1,
            candidates: self.candidates.clone(),
            keep_alive_server: self.link != LinkKind::Fresh,
            tls: self.tls,
            early_data: self.early_data,
            seed: crate::bench::suite::run_seed(
                seed,
                seed_suite,
                &format!("{} {}", self.platform.name(), seed_name),
                run,
            ),
            run,
        }
    }

    /// `platform scenario`: the key of the gate and the known-misses list.
    pub fn key(&self) -> String {
        format!("{} {}", self.platform.name(), self.name)
    }

    /// The client of this cell whose report name is `name`.
    pub fn client_named(&self, name: &str) -> Option<ClientKind> {
        self.clients()
            .into_iter()
            .find(|c| c.name(self.platform) == name)
    }

    /// Runs `client` once (seed index `run`) with every trace event kept,
    /// exactly as the bench ran it (same spec, same hash).
    pub fn trace(
        &self,
        client: &str,
        seed: u64,
        run: u32,
    ) -> Result<crate::bench::scenario::TraceRun, String> {
        let kind = self.client_named(client).ok_or_else(|| {
            let names: Vec<&str> = self
                .clients()
                .iter()
                .map(|c| c.name(self.platform))
                .collect();
            format!(
                "client {client:?} is not in this cell (it has {})",
                names.join(", ")
            )
        })?;
        crate::bench::scenario::run_traced(
            &kind,
            self.platform,
            &self.spec(&kind, seed, run),
            self.calls,
        )
    }

    /// Runs every client of the cell over [`SEEDS`] seeds.
    pub fn run(&self, seed: u64, mut emit: impl FnMut(RunRecord)) {
        for run in 0..SEEDS {
            for client in self.clients() {
                let spec = self.spec(&client, seed, run);
                let res = match self.calls {
                    Some(n) => run_sequential(&client, self.platform, &spec, n),
                    None => run_single(&client, self.platform, &spec),
                };
                emit(res.record);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::covering::uncovered_pairs;

    #[test]
    fn the_design_covers_every_pair_of_axis_values() {
        let cells = design_cells(true);
        let rows: Vec<Vec<usize>> = cells.iter().filter_map(|c| c.row.clone()).collect();
        assert!(uncovered_pairs(&axis_sizes(), &rows).is_empty());
        // Far fewer than the product, not fewer than the two largest axes.
        assert!(rows.len() >= 50 && rows.len() <= 90, "{} cells", rows.len());
        // Names are unique per platform: they key the gate and the known misses.
        let mut names: Vec<String> = cells
            .iter()
            .chain(&sweep_cells())
            .map(|c| format!("{} {}", c.platform.name(), c.name))
            .collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn axis_values_reach_the_path() {
        let cells = design_cells(true);
        let one_way_up = cells.iter().any(|c| {
            let at = c.path.up.at(Instant::ZERO);
            matches!(at.loss, LossModel::Bernoulli { p } if (p - 0.3).abs() < 1e-9)
                && c.path.down.at(Instant::ZERO).loss == LossModel::percent(0.0)
        });
        assert!(one_way_up, "a cell with 30 % loss up only");
        assert!(cells.iter().any(|c| c.name.contains(" flap-")));
        assert!(cells
            .iter()
            .any(|c| c.name.contains(" bbrbbbl ") || c.name.contains(" brbbbl ")));
        let sweep = sweep_cells();
        assert_eq!(sweep.len(), 3 * SWEEP_STEPS as usize);
        assert_eq!(sweep[122].name, "sweep outage-12.3s");
    }
}
