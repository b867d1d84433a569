//! One benchmark run's result, in the shape of `report.json`
//! (`schema: "stn-bench/1"`), so tools can read it.

use serde::{Deserialize, Serialize};

/// The schema tag written at the top of `report.json`.
pub const SCHEMA: &str = "stn-bench/1";

/// The whole `report.json` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The root seed every run was derived from.
    pub seed: u64,
    /// One entry per (suite, scenario, platform, client, channel, run).
    pub runs: Vec<RunRecord>,
    /// Every cell of the per-cell gates (matrix, tls) that stn misses, with
    /// its traced cause; derived from `runs` ([`crate::bench::gate::misses`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<GateMiss>,
}

/// A cell that stn misses in a per-cell gate, as `report.json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateMiss {
    /// `matrix` or `tls`.
    pub suite: String,
    /// `platform scenario`, the key of the known-miss lists.
    pub key: String,
    /// stn / best other.
    pub ratio: f64,
    /// The largest ratio that passes.
    pub allowed: f64,
    /// The runs' figures that locate stn's loss against the best other.
    pub evidence: String,
    /// The traced cause (`stn-sim/miss-reasons.txt`); `None`: not traced.
    pub cause: Option<String>,
}

impl Report {
    /// An empty report for `seed`.
    pub fn new(seed: u64) -> Self {
        Report {
            schema: SCHEMA.to_owned(),
            seed,
            runs: Vec::new(),
            misses: Vec::new(),
        }
    }
}

/// The result of one client in one scenario of one suite.
///
/// Times are seconds of virtual time. Statistics are over successful calls
/// only; `attempts` counts every call started (Mars's "attempt": a failed
/// call counts one, as in the published harness).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `loss`, `sensitivity`, `request_size`, `response_size`, or one of
    /// the suites beyond the published benchmark.
    pub suite: String,
    /// The scenario, e.g. `3g+30%`, `2g`, `outage-20s`, `3g/64KiB-request`.
    pub scenario: String,
    /// `ios` or `android`: which TCP stack and peer the run pairs with.
    pub platform: String,
    /// `stn`, `mars-2017`, `mars`, `okhttp-2017`, `okhttp-5`,
    /// `nsurlsession`, `oracle`, …
    pub client: String,
    /// `short` or `long`.
    pub channel: String,
    /// Run index within the scenario (the sensitivity suite repeats 3 times).
    pub run: u32,
    /// Successful calls.
    pub successes: u64,
    /// Calls started (successes + failures).
    pub attempts: u64,
    /// Virtual time from the first call's start to the last call's end.
    pub total_s: f64,
    /// Mean duration of successful calls.
    pub mean_s: f64,
    /// Median (nearest rank) of successful calls.
    pub p50_s: f64,
    /// 95th percentile (nearest rank) of successful calls.
    pub p95_s: f64,
    /// 99th percentile (nearest rank) of successful calls.
    pub p99_s: f64,
    /// Sensitivity suite: when the one call completed (`None` if it failed
    /// or the suite does not measure it).
    pub completion_s: Option<f64>,
    /// Whether the run met its goal (all successes reached; the single call
    /// succeeded).
    pub ok: bool,
    /// TCP connection attempts started over the whole run (wire cost), when
    /// the client reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connects: Option<u64>,
    /// SYNs sent over the whole run (from the OS SYN schedule), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syns: Option<u64>,
    /// Virtual seconds the run simulated (for simulated-s per wall-clock-s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim_s: Option<f64>,
    /// A remark: what a calibrated scenario assumes, a tuned configuration's
    /// overrides, why a run is unusual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Requests sent as TLS early data (0-RTT; attempts whose engine report
    /// says `early_data`), for engine clients in runs whose calls are
    /// idempotent (suite `tls_idempotent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_sends: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape_matches_the_published_schema() {
        let mut report = Report::new(7);
        report.runs.push(RunRecord {
            suite: "sensitivity".into(),
            scenario: "outage-20s".into(),
            platform: "ios".into(),
            client: "stn".into(),
            channel: "short".into(),
            run: 0,
            successes: 1,
            attempts: 1,
            total_s: 20.4,
            mean_s: 20.4,
            p50_s: 20.4,
            p95_s: 20.4,
            p99_s: 20.4,
            completion_s: None,
            ok: true,
            connects: None,
            syns: None,
            sim_s: None,
            note: None,
            early_sends: None,
        });
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["schema"], "stn-bench/1");
        assert_eq!(json["seed"], 7);
        let run = &json["runs"][0];
        for key in [
            "suite",
            "scenario",
            "platform",
            "client",
            "channel",
            "run",
            "successes",
            "attempts",
            "total_s",
            "mean_s",
            "p50_s",
            "p95_s",
            "p99_s",
            "completion_s",
            "ok",
        ] {
            assert!(run.get(key).is_some(), "missing {key}");
        }
        assert!(run["completion_s"].is_null());
        let back: Report = serde_json::from_value(json).unwrap();
        assert_eq!(back, report);
    }
}
