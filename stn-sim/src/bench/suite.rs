//! A suite as a unit ([`Suite`]): what it runs, how the report shows it
//! and what judges it, in one module per suite
//! ([`crate::bench::suites`], where the registry is). Here: the trait,
//! the options every suite runs under ([`BenchOptions`]), [`run_suite`],
//! and the building blocks the suites share.

use std::fmt;

use stn_proto::Rng;

use crate::bench::cell::Cell;
use crate::bench::client_kind::{ClientKind, STN_TUNED_NOTE};
use crate::bench::gate::{verdicts_in, CellVerdict};
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::run_spec::RunSpec;
use crate::bench::runner::run_sequential;
use crate::bench::targets::{no_worse_than_mars, Measure, TargetCheck};
use crate::path::{PathConditions, PathSchedule};
use crate::report::chart::LineChart;
use crate::report::heatmap::Heatmap;

/// A benchmark suite: its runs, its section of the report, its charts and
/// what judges it (targets per run, or a gate per cell).
///
/// A suite is a value registered once, in [`crate::bench::suites::ALL`];
/// everything else (the CLI's `--suite NAME`, the report, the summary,
/// the gates, `report.json`'s misses) finds it there by its records'
/// `suite` field. The provided methods give the common shape: loss-style
/// tables and charts, the targets against today's Mars profile, no cells.
///
/// ```
/// use stn_sim::bench::suites;
/// let loss = suites::named("loss").unwrap();
/// assert!(loss.is_published() && loss.in_default_run() && !loss.is_gated());
/// let idempotent = suites::named("tls_idempotent").unwrap();
/// assert!(idempotent.is_gated() && !idempotent.in_default_run());
/// ```
pub trait Suite: Sync {
    /// The name in records, on the command line (`--suite NAME`) and at the
    /// start of its chart files.
    fn name(&self) -> &'static str;

    /// Whether the published benchmark had this suite.
    fn is_published(&self) -> bool {
        false
    }

    /// Whether a run without `--suite` runs it (`false`: opt-in).
    fn in_default_run(&self) -> bool {
        true
    }

    /// Runs the suite, handing each record to `emit` as soon as it is made.
    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord));

    /// Its section of `report.md`, below the `## Suite` heading, from all
    /// the records. Default: [`crate::report::table::loss_tables`].
    fn tables(&self, runs: &[RunRecord]) -> String {
        crate::report::table::loss_tables(self.name(), &of_suite(runs, self.name()))
    }

    /// Whether the summary's headline (stn's time against the best other
    /// client's) applies: not to suites gated per cell, nor to suites whose
    /// runs have no comparable time.
    fn in_headline(&self) -> bool {
        !self.is_gated()
    }

    /// What the summary `stn-sim bench` prints shows of this suite beyond
    /// the headline and the targets (`""`: nothing).
    fn summary_section(&self, _runs: &[RunRecord]) -> String {
        String::new()
    }

    /// A section of `report.md` after every suite's tables, from all the
    /// records (`""`: none).
    fn closing_section(&self, _runs: &[RunRecord]) -> String {
        String::new()
    }

    /// Its line charts as `(file name, chart)`, from all the records.
    /// Default: [`crate::report::chart::loss_charts`].
    fn charts(&self, runs: &[RunRecord]) -> Vec<(String, LineChart)> {
        crate::report::chart::loss_charts(runs, self.name())
    }

    /// Its heatmaps as `(file name, heatmap)`, written after every line
    /// chart. Default: none.
    fn heatmaps(&self, _runs: &[RunRecord]) -> Vec<(String, Heatmap)> {
        Vec::new()
    }

    /// The targets the run `r` of `stn` or `stn-tuned` is held to
    /// ([`crate::bench::targets`]; `records`: every record, to find the
    /// runs it is compared with). Default: no worse than today's Mars
    /// profile on total time. A suite gated per cell may hold its runs to
    /// none.
    fn targets(&self, r: &RunRecord, records: &[RunRecord]) -> Vec<TargetCheck> {
        no_worse_than_mars(r, records, Measure::Total)
            .into_iter()
            .collect()
    }

    /// The cells the suite is gated on, one verdict each
    /// ([`crate::bench::gate`]), at the quick or the full size (the same
    /// cells, fewer calls). Default: none.
    fn cells(&self, _quick: bool) -> Vec<Cell> {
        Vec::new()
    }

    /// Whether the suite is gated per cell (it has [`Suite::cells`]).
    fn is_gated(&self) -> bool {
        !self.cells(false).is_empty()
    }

    /// The gate's verdict on every cell that has records, in cell order.
    fn verdicts(&self, records: &[RunRecord]) -> Vec<CellVerdict> {
        if !records.iter().any(|r| r.suite == self.name()) {
            return Vec::new();
        }
        verdicts_in(records, self.name(), &self.cells(false))
    }
}

/// The records of the suite named `suite`, in order.
pub fn of_suite<'a>(runs: &'a [RunRecord], suite: &str) -> Vec<&'a RunRecord> {
    runs.iter().filter(|r| r.suite == suite).collect()
}

impl fmt::Debug for dyn Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Suite({})", self.name())
    }
}

/// Its name.
impl fmt::Display for dyn Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A callback that sees every record as soon as it is made.
pub type Progress = Box<dyn Fn(&RunRecord)>;

/// How to run the suites.
pub struct BenchOptions {
    /// The root seed; every run's seed derives from it.
    pub seed: u64,
    /// Fewer calls and runs (50 successes instead of 500, 10 instead of 50,
    /// one sensitivity run instead of 3).
    pub quick: bool,
    /// Also run `stn-tuned` (clearly labelled; not the default profile).
    pub tuned: bool,
    /// Called with every record as soon as it is made.
    pub progress: Option<Progress>,
}

impl fmt::Debug for BenchOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BenchOptions")
            .field("seed", &self.seed)
            .field("quick", &self.quick)
            .field("tuned", &self.tuned)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            seed: 1,
            quick: false,
            tuned: true,
            progress: None,
        }
    }
}

impl BenchOptions {
    /// Options with `seed` and `quick`, `stn-tuned` included, no progress.
    pub fn new(seed: u64, quick: bool) -> Self {
        BenchOptions {
            seed,
            quick,
            ..Self::default()
        }
    }

    /// Successes per run of the sequential suites: 50 quick, 500 full.
    pub(crate) fn successes(&self) -> u64 {
        if self.quick {
            50
        } else {
            500
        }
    }
}

/// Runs one suite and returns its records (also handed to
/// [`BenchOptions::progress`] one by one).
pub fn run_suite(suite: &dyn Suite, opts: &BenchOptions) -> Vec<RunRecord> {
    let mut out = Vec::new();
    suite.run(opts, &mut |rec| {
        if let Some(p) = &opts.progress {
            p(&rec);
        }
        out.push(rec);
    });
    out
}

/// Runs every suite of `suites` in order.
pub fn run_suites(suites: &[&dyn Suite], opts: &BenchOptions) -> Vec<RunRecord> {
    suites.iter().flat_map(|s| run_suite(*s, opts)).collect()
}

/// The seed of run `run` of `scenario` in `suite`: the same for every
/// client of one scenario run, so they meet the same loss streams.
pub(crate) fn run_seed(seed: u64, suite: &str, scenario: &str, run: u32) -> u64 {
    let mut h = crate::trace::Fnv64::new();
    h.write(suite.as_bytes());
    h.write(scenario.as_bytes());
    h.write_u64(u64::from(run));
    Rng::derive(seed, h.finish()).next_u64()
}

/// Run `run` of `scenario` in `suite` as the published harness made it
/// ([`RunSpec::published`]), on its seed derived from the root `seed`.
pub(crate) fn published_spec(
    suite: &str,
    scenario: &str,
    path: PathSchedule,
    seed: u64,
    run: u32,
) -> RunSpec {
    let seed = run_seed(seed, suite, scenario, run);
    RunSpec {
        run,
        ..RunSpec::published(suite, scenario, path, seed)
    }
}

/// stn, and `stn-tuned` when the options ask for it.
pub(crate) fn stn_engines(opts: &BenchOptions) -> Vec<ClientKind> {
    let mut v = vec![ClientKind::STN];
    if opts.tuned {
        v.push(ClientKind::STN_TUNED);
    }
    v
}

/// The clients of the published pairing: stn, the two Mars profiles, the
/// platform's `peer`, and the oracle.
pub(crate) fn pairing(opts: &BenchOptions, peer: ClientKind) -> Vec<ClientKind> {
    let mut v = stn_engines(opts);
    v.extend([
        ClientKind::MARS_2017,
        ClientKind::MARS,
        peer,
        ClientKind::Oracle,
    ]);
    v
}

/// Runs each of `clients` through [`run_sequential`] for
/// [`BenchOptions::successes`] in every scenario (constant conditions) on
/// every platform, in that order, each from [`published_spec`] changed by
/// `adjust`.
pub(crate) fn run_sequential_grid(
    suite: &str,
    scenarios: Vec<(String, PathConditions)>,
    platforms: &[Platform],
    clients: &[ClientKind],
    adjust: impl Fn(&ClientKind, &mut RunSpec),
    opts: &BenchOptions,
    emit: &mut dyn FnMut(RunRecord),
) {
    for (name, cond) in scenarios {
        for &platform in platforms {
            for client in clients {
                let path = PathSchedule::constant(cond);
                let mut s = published_spec(suite, &name, path, opts.seed, 0);
                adjust(client, &mut s);
                let mut r = run_sequential(client, platform, &s, opts.successes());
                annotate(client, &mut r.record, &r.violations);
                emit(r.record);
            }
        }
    }
}

/// Runs every cell (each over its seeds) in order.
pub(crate) fn run_cells(cells: Vec<Cell>, seed: u64, emit: &mut dyn FnMut(RunRecord)) {
    for cell in cells {
        cell.run(seed, &mut *emit);
    }
}

/// Labels tuned runs, and surfaces any engine contract violation the
/// adapter saw (none is expected; the swarm test in `fuzzing` asserts it).
pub(crate) fn annotate(client: &ClientKind, rec: &mut RunRecord, violations: &[String]) {
    if *client == ClientKind::STN_TUNED {
        rec.note = Some(STN_TUNED_NOTE.to_owned());
    }
    if let Some(first) = violations.first() {
        let v = format!("ENGINE CONTRACT VIOLATIONS ({}): {first}", violations.len());
        rec.note = Some(match rec.note.take() {
            Some(n) => format!("{n}; {v}"),
            None => v,
        });
    }
}
