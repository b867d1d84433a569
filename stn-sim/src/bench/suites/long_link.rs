//! Suite `long_link` (beyond the published benchmark): the loss suite's
//! loop with the engines' tasks on the long link, beside the recommended
//! peers keeping their connections to a keep-alive server, on the
//! published two platforms.

use crate::bench::client_kind::ClientKind;
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::suite::{run_sequential_grid, stn_engines, BenchOptions, Suite};
use crate::bench::suites::loss::loss_scenarios;

/// Suite `long_link`.
#[derive(Clone, Copy, Debug)]
pub struct LongLink;

impl Suite for LongLink {
    fn name(&self) -> &'static str {
        "long_link"
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        let mut clients = stn_engines(opts);
        clients.extend([
            ClientKind::MARS_2017,
            ClientKind::MARS,
            ClientKind::PeerRecommended,
            ClientKind::Oracle,
        ]);
        run_sequential_grid(
            self.name(),
            loss_scenarios(),
            &Platform::ALL,
            &clients,
            |client, s| {
                // Peers keep their connections; the engine's tasks go long.
                s.long_link = !matches!(client, ClientKind::PeerRecommended);
                s.keep_alive_server = true;
            },
            opts,
            emit,
        );
    }
}
