//! Suite `bursty` (beyond the published benchmark): the loss suite's loop
//! on bursty (Gilbert–Elliott) loss of mean 10 / 30 / 50 %, in bursts of
//! [`BURSTY_MEAN_BURST`] (in time), on the published two platforms.

use stn_proto::Duration;

use crate::bench::client_kind::ClientKind;
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::suite::{pairing, run_sequential_grid, BenchOptions, Suite};
use crate::preset::Preset;

/// Mean burst of the bursty suite: 200 ms (bursts are in time; a burst of
/// 200 ms covers about three round trips of the 60 ms loss path).
pub const BURSTY_MEAN_BURST: Duration = Duration::from_millis(200);

/// Suite `bursty`.
#[derive(Clone, Copy, Debug)]
pub struct Bursty;

impl Suite for Bursty {
    fn name(&self) -> &'static str {
        "bursty"
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        let scenarios = [10u32, 30, 50]
            .into_iter()
            .map(|p| {
                (
                    format!("bursty-{p}%"),
                    Preset::LossPercent(0.0)
                        .conditions()
                        .with_bursty_loss(f64::from(p) / 100.0, BURSTY_MEAN_BURST),
                )
            })
            .collect();
        run_sequential_grid(
            self.name(),
            scenarios,
            &Platform::ALL,
            &pairing(opts, ClientKind::PeerBenchmarked),
            |_, _| {},
            opts,
            emit,
        );
    }
}
