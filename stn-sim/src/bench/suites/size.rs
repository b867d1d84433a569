//! Suites `request_size` and `response_size` (published): 50 calls (10
//! quick) with 64 KiB and 128 KiB request (response) bodies on 3G and 2G,
//! on the published two platforms, in the published 2×2 "mean and total
//! time" tables.

use crate::bench::client_kind::ClientKind;
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::run_spec::RunSpec;
use crate::bench::runner::run_sequential;
use crate::bench::suite::{annotate, of_suite, pairing, published_spec, BenchOptions, Suite};
use crate::path::PathSchedule;
use crate::preset::Preset;
use crate::report::chart::LineChart;

/// Suite `request_size`.
#[derive(Clone, Copy, Debug)]
pub struct RequestSize;

/// Suite `response_size`.
#[derive(Clone, Copy, Debug)]
pub struct ResponseSize;

/// Runs the size suite `suite`: `what` names the body in scenario names
/// (`3g/64KiB-request`), `set_len` sets its length in the spec.
fn run_sizes(
    suite: &str,
    what: &str,
    set_len: fn(&mut RunSpec, usize),
    opts: &BenchOptions,
    emit: &mut dyn FnMut(RunRecord),
) {
    let calls = if opts.quick { 10 } else { 50 };
    for (net, cond) in [
        ("3g", Preset::ThreeG.conditions()),
        ("2g", Preset::Edge.conditions()),
    ] {
        for kib in [64usize, 128] {
            let name = format!("{net}/{kib}KiB-{what}");
            for platform in Platform::ALL {
                for client in pairing(opts, ClientKind::PeerBenchmarked) {
                    let path = PathSchedule::constant(cond);
                    let mut s = published_spec(suite, &name, path, opts.seed, 0);
                    set_len(&mut s, kib * 1024);
                    let mut r = run_sequential(&client, platform, &s, calls);
                    annotate(&client, &mut r.record, &r.violations);
                    emit(r.record);
                }
            }
        }
    }
}

impl Suite for RequestSize {
    fn name(&self) -> &'static str {
        "request_size"
    }

    fn is_published(&self) -> bool {
        true
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        run_sizes(self.name(), "request", |s, n| s.request_len = n, opts, emit);
    }

    fn tables(&self, runs: &[RunRecord]) -> String {
        crate::report::table::size_tables(self.name(), &of_suite(runs, self.name()))
    }

    fn charts(&self, _runs: &[RunRecord]) -> Vec<(String, LineChart)> {
        Vec::new()
    }
}

impl Suite for ResponseSize {
    fn name(&self) -> &'static str {
        "response_size"
    }

    fn is_published(&self) -> bool {
        true
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        run_sizes(
            self.name(),
            "response",
            |s, n| s.response_len = n,
            opts,
            emit,
        );
    }

    fn tables(&self, runs: &[RunRecord]) -> String {
        crate::report::table::size_tables(self.name(), &of_suite(runs, self.name()))
    }

    fn charts(&self, _runs: &[RunRecord]) -> Vec<(String, LineChart)> {
        Vec::new()
    }
}
