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
    /// the client reports them. Counted per call by the client: connections
    /// a long link opens between calls are not in it (the server's counts
    /// below include them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connects: Option<u64>,
    /// SYNs sent over the whole run (from the OS SYN schedule), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syns: Option<u64>,
    /// SYNs that arrived at the server's listening ports (counted by the
    /// simulated server host; retransmissions included, SYNs lost on the
    /// link or sent to a dead endpoint not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_syns: Option<u64>,
    /// TCP handshakes completed at the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_handshakes: Option<u64>,
    /// TLS handshakes completed at the server (the client's Finished
    /// arrived), in runs that use TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tls_handshakes: Option<u64>,
    /// Connections that completed their handshake at the server and carried
    /// no request (a race's losers): closed without one, or still idle when
    /// the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasted_handshakes: Option<u64>,
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
    /// Suite `heartbeat`: what the long link's heartbeat cost and learned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat: Option<HeartbeatFigures>,
}

/// What a run of suite `heartbeat` measured (all over the background time).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatFigures {
    /// Hours in the background.
    pub hours: f64,
    /// Noops written (each one a radio wake-up).
    pub heartbeats: u64,
    /// Long-link connections made (each one a wake-up too).
    pub connects: u64,
    /// The long link lost while up, other than by the app's network change.
    pub drops: u64,
    /// Tasks submitted.
    pub tasks: u64,
    /// Task frames written into a flow the middlebox had already forgotten.
    pub dead_link_tasks: u64,
    /// Tasks that failed.
    pub failed_tasks: u64,
    /// Mean time from a task's submission to its end, in seconds.
    pub task_mean_s: f64,
    /// Per network visited, in first-visit order.
    pub networks: Vec<NetworkFigures>,
}

/// One network of a heartbeat run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkFigures {
    /// The label the app gave.
    pub label: String,
    /// The NAT's idle timeout there, in seconds.
    pub nat_s: f64,
    /// The interval the record ended with (`None`: a fixed interval).
    pub final_s: Option<f64>,
    /// Whether the record ended stable (learning finished).
    pub stable: bool,
    /// Background hours on this network until the record last changed, if
    /// it ended stable.
    pub converged_h: Option<f64>,
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
            server_syns: None,
            server_handshakes: None,
            server_tls_handshakes: None,
            wasted_handshakes: None,
            sim_s: None,
            note: None,
            early_sends: None,
            heartbeat: None,
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
