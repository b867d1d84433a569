//! Suite `loss` (published): 500 successes one at a time, retry count 0,
//! on 3G, 2G and 10 / 30 / 50 / 70 % loss, on iOS, Android (Linux < 6.5)
//! and Android on Linux ≥ 6.5 (where the peers' faster SYN schedule
//! matters most), stn against both Mars profiles and the platform's peer
//! as benchmarked.

use crate::bench::client_kind::ClientKind;
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::suite::{pairing, run_sequential_grid, BenchOptions, Suite};
use crate::bench::targets::{find, no_worse_than_mars, total_vs, Measure, TargetCheck};
use crate::path::PathConditions;
use crate::preset::Preset;

/// Suite `loss`.
#[derive(Clone, Copy, Debug)]
pub struct Loss;

/// The loss scenarios: (name, conditions).
pub fn loss_scenarios() -> Vec<(String, PathConditions)> {
    let mut v = vec![
        ("3g".to_owned(), Preset::ThreeG.conditions()),
        ("2g".to_owned(), Preset::Edge.conditions()),
    ];
    for p in [10u32, 30, 50, 70] {
        v.push((
            format!("loss-{p}%"),
            Preset::LossPercent(f64::from(p)).conditions(),
        ));
    }
    v
}

/// The loss scenarios the ratio targets apply to (30 % loss and above).
const LOSSY: [&str; 3] = ["loss-30%", "loss-50%", "loss-70%"];

/// Whether `scenario` is one of the lossy scenarios the ratio targets
/// apply to.
pub(crate) fn is_lossy(scenario: &str) -> bool {
    LOSSY.contains(&scenario)
}

/// `r`'s total time at most half that of every peer's run beside it.
pub(crate) fn versus_peers(r: &RunRecord, records: &[RunRecord]) -> Vec<TargetCheck> {
    [
        "nsurlsession",
        "okhttp-2017",
        "nsurlsession-shared",
        "okhttp-5",
    ]
    .into_iter()
    .filter_map(|peer| {
        find(records, &r.suite, &r.scenario, &r.platform, peer, r.run)
            .map(|p| total_vs(r, p, peer, 0.5))
    })
    .collect()
}

impl Suite for Loss {
    fn name(&self) -> &'static str {
        "loss"
    }

    fn is_published(&self) -> bool {
        true
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        run_sequential_grid(
            self.name(),
            loss_scenarios(),
            &Platform::WITH_LINUX_6_5,
            &pairing(opts, ClientKind::PeerBenchmarked),
            |_, _| {},
            opts,
            emit,
        );
    }

    /// No worse than `mars`; at 30 % loss and above ≤ 0.75 × mars-2017's
    /// total with ≤ 1.25 × its attempts, and ≤ 0.5 × each peer's total;
    /// on clean 3G and 2G ≤ 1.02 × mars-2017's total.
    fn targets(&self, r: &RunRecord, records: &[RunRecord]) -> Vec<TargetCheck> {
        let mut out: Vec<TargetCheck> = no_worse_than_mars(r, records, Measure::Total)
            .into_iter()
            .collect();
        let mars_2017 = find(
            records,
            self.name(),
            &r.scenario,
            &r.platform,
            "mars-2017",
            r.run,
        );
        if is_lossy(&r.scenario) {
            if let Some(m) = mars_2017 {
                out.push(total_vs(r, m, "mars-2017", 0.75));
                let measured = r.attempts as f64 / (m.attempts.max(1)) as f64;
                out.push(TargetCheck {
                    target: "attempts vs mars-2017".into(),
                    suite: r.suite.clone(),
                    scenario: r.scenario.clone(),
                    platform: r.platform.clone(),
                    client: r.client.clone(),
                    measured,
                    bound: 1.25,
                    met: measured <= 1.25,
                    detail: format!(
                        "{} vs {} calls; connects {:?} vs {:?}",
                        r.attempts, m.attempts, r.connects, m.connects
                    ),
                });
            }
            out.extend(versus_peers(r, records));
        }
        if r.scenario == "3g" || r.scenario == "2g" {
            if let Some(m) = mars_2017 {
                out.push(total_vs(r, m, "mars-2017 (clean)", 1.02));
            }
        }
        out
    }
}
