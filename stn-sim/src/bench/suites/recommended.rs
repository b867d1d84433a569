//! Suite `recommended` (beyond the published benchmark): the loss suite
//! with the peers as their documentation recommends (OkHttp 5's shared
//! client, NSURLSession's shared session, both pooling connections to a
//! keep-alive server) against stn, on the loss suite's three platforms.

use crate::bench::client_kind::ClientKind;
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::suite::{run_sequential_grid, stn_engines, BenchOptions, Suite};
use crate::bench::suites::loss::{is_lossy, loss_scenarios, versus_peers};
use crate::bench::targets::{no_worse_than_mars, Measure, TargetCheck};

/// Suite `recommended`.
#[derive(Clone, Copy, Debug)]
pub struct Recommended;

impl Suite for Recommended {
    fn name(&self) -> &'static str {
        "recommended"
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        let mut clients = stn_engines(opts);
        clients.extend([ClientKind::PeerRecommended, ClientKind::Oracle]);
        run_sequential_grid(
            self.name(),
            loss_scenarios(),
            &Platform::WITH_LINUX_6_5,
            &clients,
            |_, s| s.keep_alive_server = true,
            opts,
            emit,
        );
    }

    /// No worse than `mars` (when it ran); at 30 % loss and above ≤ 0.5 ×
    /// the recommended peer's total.
    fn targets(&self, r: &RunRecord, records: &[RunRecord]) -> Vec<TargetCheck> {
        let mut out: Vec<TargetCheck> = no_worse_than_mars(r, records, Measure::Total)
            .into_iter()
            .collect();
        if is_lossy(&r.scenario) {
            out.extend(versus_peers(r, records));
        }
        out
    }
}
