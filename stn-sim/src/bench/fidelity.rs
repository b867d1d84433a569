//! Fidelity: the published sensitivity rows
//! (docs/stn-benchmark.md) against what the `mars_2017` profile and the
//! peer models give in the simulator.
//!
//! **Nominal parameters.** The claim rests on the nominal scenario
//! (`outage-Rs`: network back at exactly R s, `onNewDns` returning the 4
//! copies of the IP the benchmark uses): 3 of the 13 rows match within
//! ±1.0 s. The one unknown of the published harness is when its network
//! really came back; `stn-sim/tests/bench_fidelity.rs` scans that restore
//! lag and finds every row matched at some lag, but one lag per platform
//! fitting every row only if Mars raced five candidates (`kNumMakeCount`
//! is 5, mars-stn.md §4.1) instead of four: iOS 4 ms–1 s, Android
//! 2.004–2.024 s. Two rows need the fifth candidate: iOS 20 s (difference
//! 14 → Mars ≈ 21 s while the peer is at 35 s) and Android 15 s (13.9 →
//! Mars ≈ 17 s while OkHttp is at 31.5 s) need a Mars SYN at 21 s (xnu) and
//! 17 s (Linux), which only a fifth attempt, started at 16 s, sends.
//! docs/sim-tcp.md ("The published sensitivity rows") goes through the
//! rows.
//!
//! **The `outage-Rs/fit` variant** applies those two facts with the lags
//! inferred before the TCP model had Linux's timer wheel (iOS 0.5 s,
//! Android 1.5 s): an illustration, no longer a claim — on the wheel,
//! Android 25 s needs a lag of at least 2.004 s and misses at 1.5 s.

use stn_proto::Duration;

use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::suites::Sensitivity;
use crate::bench::Suite;

/// What the fidelity claim rests on and what the fitted table shows, for
/// the report (the module docs give the evidence).
pub const WHY_FITTED: &str = "The fidelity claim rests on the nominal scenario (network \
back at exactly R s, `onNewDns` returning 4 copies of the IP): the rows marked NO there miss. \
When the published harness's network really came back is not recorded; scanning that restore \
lag (`stn-sim/tests/bench_fidelity.rs`) matches every row at some lag, and one lag per platform \
fits every row only if Mars raced 5 candidates (`kNumMakeCount`), not 4: iOS 4 ms–1 s, Android \
2.004–2.024 s (iOS 20 s and Android 15 s need a Mars SYN at 21 s and 17 s, which only a fifth \
attempt, started at 16 s, sends). The fitted table (`outage-Rs/fit`: 5 candidates, the network \
back 0.5 s / 1.5 s late) illustrates this with lags inferred before the TCP model had Linux's \
timer wheel; at 1.5 s Android 25 s misses. Details: `docs/sim-tcp.md`, \
`stn-sim/src/bench/fidelity.rs`.";

/// `onNewDns` copies of the fitted variant (see module docs).
pub const FIT_DNS_COPIES: usize = 5;

/// How late the network comes back in the fitted variant (see module docs).
pub fn restore_lag(platform: Platform) -> Duration {
    match platform {
        Platform::Ios => Duration::from_millis(500),
        // The published Android rows ran on Linux < 6.5; a 6.5 phone is not
        // fitted and gets the same lag.
        Platform::Android | Platform::Android65 => Duration::from_millis(1500),
    }
}

/// The note on fitted-scenario records.
pub fn fit_note(platform: Platform) -> String {
    format!(
        "fitted scenario: network back {} ms after nominal; engine resolves {} copies of the IP",
        crate::units::duration_nanos_saturating(restore_lag(platform)) / 1_000_000,
        FIT_DNS_COPIES
    )
}

/// One published cell: the difference (peer − Mars, positive = Mars first)
/// or, for the longest outages, Mars's completion and the peer's failure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Published {
    /// Three runs' differences in seconds.
    Diff([f64; 3]),
    /// Mars succeeded at these times; the peer failed (at these times).
    MarsOnly {
        /// Mars's completion per run.
        mars: [f64; 3],
        /// The peer's failure time per run.
        peer_fail: [f64; 3],
    },
}

/// The published rows: (platform, outage seconds, cell).
pub fn published_rows() -> Vec<(Platform, u64, Published)> {
    use Published::*;
    vec![
        (Platform::Ios, 5, Diff([1.0, 0.98, 1.13])),
        (Platform::Ios, 10, Diff([0.0, 0.0, 0.0])),
        (Platform::Ios, 15, Diff([3.07, 3.06, 3.07])),
        (Platform::Ios, 20, Diff([13.9, 14.1, 14.1])),
        (Platform::Ios, 25, Diff([7.99, 8.09, 8.3])),
        (Platform::Ios, 30, Diff([3.9, 3.96, 3.99])),
        (
            Platform::Ios,
            35,
            MarsOnly {
                mars: [37.2, 37.4, 37.2],
                peer_fail: [61.0, 60.3, 60.3],
            },
        ),
        (Platform::Android, 5, Diff([-0.036, -0.027, -0.022])),
        (Platform::Android, 10, Diff([2.9, 2.86, 2.86])),
        (Platform::Android, 15, Diff([13.9, 13.85, 14.0])),
        (Platform::Android, 20, Diff([7.95, 7.97, 7.93])),
        (Platform::Android, 25, Diff([3.1, 3.11, 3.1])),
        (
            Platform::Android,
            30,
            MarsOnly {
                mars: [31.98, 31.91, 31.9],
                peer_fail: [60.0, 60.0, 60.0],
            },
        ),
    ]
}

/// One row of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct FidelityRow {
    /// The platform.
    pub platform: Platform,
    /// Outage R in seconds.
    pub outage_s: u64,
    /// Whether the fitted scenario was used.
    pub fitted: bool,
    /// The published cell.
    pub published: Published,
    /// Mars-2017's end in the model (completion, or failure time), and
    /// whether it succeeded.
    pub mars: (f64, bool),
    /// The peer's end and whether it succeeded.
    pub peer: (f64, bool),
    /// Whether the row matches (difference within ±1.0 s of every published
    /// run; or Mars succeeds and the peer fails).
    pub matched: bool,
    /// |model − published| worst over the runs (differences only).
    pub worst_error_s: Option<f64>,
}

/// Compares sensitivity records (run 0 of each scenario) with the published rows.
pub fn compare(records: &[RunRecord], fitted: bool) -> Vec<FidelityRow> {
    let mut rows = Vec::new();
    for (platform, r, published) in published_rows() {
        let scenario = if fitted {
            format!("outage-{r}s/fit")
        } else {
            format!("outage-{r}s")
        };
        let find = |client: &str| {
            records.iter().find(|x| {
                x.suite == Sensitivity.name()
                    && x.scenario == scenario
                    && x.platform == platform.name()
                    && x.client == client
                    && x.run == 0
            })
        };
        let peer_name = match platform {
            Platform::Ios => "nsurlsession",
            Platform::Android | Platform::Android65 => "okhttp-2017-60s",
        };
        let (Some(m), Some(p)) = (find("mars-2017"), find(peer_name)) else {
            continue;
        };
        let mars = (m.total_s, m.ok);
        let peer = (p.total_s, p.ok);
        let (matched, worst) = match published {
            Published::Diff(d) => {
                if mars.1 && peer.1 {
                    let diff = peer.0 - mars.0;
                    let worst = d.iter().map(|x| (diff - x).abs()).fold(0.0, f64::max);
                    (worst <= 1.0, Some(worst))
                } else {
                    (false, None)
                }
            }
            Published::MarsOnly { .. } => (mars.1 && !peer.1, None),
        };
        rows.push(FidelityRow {
            platform,
            outage_s: r,
            fitted,
            published,
            mars,
            peer,
            matched,
            worst_error_s: worst,
        });
    }
    rows
}

/// The report's fidelity section: the published sensitivity rows against
/// the model's `mars-2017` and peer, nominal and fitted scenarios; `""`
/// without sensitivity records.
pub fn section(runs: &[RunRecord]) -> String {
    let mut out = String::new();
    for (fitted, title) in [
        (false, "nominal `outage-Rs`"),
        (true, "fitted `outage-Rs/fit`"),
    ] {
        let rows = compare(runs, fitted);
        if rows.is_empty() {
            continue;
        }
        if out.is_empty() {
            out.push_str("## Fidelity: the published sensitivity tables against the model\n\n");
            out.push_str(WHY_FITTED);
            out.push_str("\n\n");
        }
        out.push_str(&format!("### {title}\n\n{}\n", table(&rows)));
    }
    out
}

/// The comparison as a Markdown table.
pub fn table(rows: &[FidelityRow]) -> String {
    let mut s = String::from(
        "| platform | R | scenario | published | model mars-2017 | model peer | model diff | match |\n|---|---|---|---|---|---|---|---|\n",
    );
    let end = |(t, ok): (f64, bool)| {
        if ok {
            format!("{t:.2} suc")
        } else {
            format!("{t:.2} fail")
        }
    };
    for r in rows {
        let published = match r.published {
            Published::Diff(d) => format!("{} / {} / {}", d[0], d[1], d[2]),
            Published::MarsOnly { mars, peer_fail } => {
                format!("{} suc vs {} fail", mars[0], peer_fail[0])
            }
        };
        let diff = if r.mars.1 && r.peer.1 {
            format!("{:+.2}", r.peer.0 - r.mars.0)
        } else {
            "—".to_owned()
        };
        s.push_str(&format!(
            "| {} | {} s | {} | {} | {} | {} | {} | {} |\n",
            r.platform.name(),
            r.outage_s,
            if r.fitted { "fit" } else { "nominal" },
            published,
            end(r.mars),
            end(r.peer),
            diff,
            if r.matched { "yes" } else { "NO" },
        ));
    }
    s
}
