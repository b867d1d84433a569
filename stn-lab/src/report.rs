//! The lab's results: statistics, the Markdown tables and JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::time::Duration;

use super::calls::{CallRecord, PEER_TIMEOUT};
use super::LabClient;

/// Everything one lab run measured.
#[derive(Clone, Debug)]
pub struct LabReport {
    /// `uname -r` of the kernel whose TCP stack ran the calls.
    pub kernel: String,
    /// The client namespace's address.
    pub client_ip: Ipv4Addr,
    /// The server namespace's address.
    pub server_ip: Ipv4Addr,
    /// Calls per client per loss run.
    pub calls: usize,
    /// One row per loss rate.
    pub loss: Vec<LossRow>,
    /// One row per outage length.
    pub outages: Vec<OutageRow>,
}

/// One loss rate: every client's calls.
#[derive(Clone, Debug)]
pub struct LossRow {
    /// The configured loss per direction, in percent.
    pub loss_percent: u8,
    /// Packets that arrived on the veth (both namespaces) during the run.
    pub packets_seen: u64,
    /// How many of those the loss rule dropped.
    pub packets_dropped: u64,
    /// Per client, in configuration order.
    pub series: Vec<SeriesStats>,
}

/// One client's sequential calls at one loss rate.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesStats {
    /// Which client.
    pub client: LabClient,
    /// Calls made.
    pub calls: usize,
    /// Calls that got the right response.
    pub successes: usize,
    /// Attempts over all calls (stn: the engine's count; peer: one per call).
    pub attempts: u64,
    /// Wall time of the whole series.
    pub total: Duration,
    /// Mean time of the successful calls.
    pub mean: Option<Duration>,
    /// Median (nearest rank) of the successful calls.
    pub p50: Option<Duration>,
    /// 95th percentile (nearest rank) of the successful calls.
    pub p95: Option<Duration>,
    /// Slowest successful call.
    pub max: Option<Duration>,
    /// Failure reasons and how often each occurred.
    pub failures: BTreeMap<String, usize>,
}

impl SeriesStats {
    pub(super) fn new(client: LabClient, records: &[CallRecord], total: Duration) -> Self {
        let mut ok: Vec<Duration> = records
            .iter()
            .filter(|r| r.ok)
            .map(|r| r.duration)
            .collect();
        ok.sort();
        let mut failures = BTreeMap::new();
        for r in records.iter().filter(|r| !r.ok) {
            let reason = r.error.clone().unwrap_or_else(|| "failed".to_owned());
            *failures.entry(reason).or_insert(0) += 1;
        }
        let mean = (!ok.is_empty()).then(|| ok.iter().sum::<Duration>() / ok.len() as u32);
        SeriesStats {
            client,
            calls: records.len(),
            successes: ok.len(),
            attempts: records.iter().map(|r| u64::from(r.attempts)).sum(),
            total,
            mean,
            p50: quantile(&ok, 0.50),
            p95: quantile(&ok, 0.95),
            max: ok.last().copied(),
            failures,
        }
    }
}

/// The `q` quantile (0..=1) of sorted values, nearest rank.
fn quantile(sorted: &[Duration], q: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// One outage length: each client's single call.
#[derive(Clone, Debug)]
pub struct OutageRow {
    /// How long everything was dropped, from t=0.
    pub outage: Duration,
    /// When the drop rule was actually removed (≥ `outage`).
    pub restored_after: Duration,
    /// Per client, in configuration order.
    pub results: Vec<OutageResult>,
}

/// One client's call in an outage run.
#[derive(Clone, Debug)]
pub struct OutageResult {
    /// Which client.
    pub client: LabClient,
    /// It got the right response.
    pub ok: bool,
    /// When it ended (success or failure), from t=0.
    pub at: Duration,
    /// Attempts the call made.
    pub attempts: u32,
    /// Why it failed.
    pub error: Option<String>,
}

fn secs(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64())
}

fn opt_ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "-".to_owned(),
        |d| format!("{:.1}", d.as_secs_f64() * 1e3),
    )
}

/// Failures as `3× reason; 1× other`, pipes escaped for Markdown.
fn failure_summary(failures: &BTreeMap<String, usize>) -> String {
    let mut by_count: Vec<(&String, &usize)> = failures.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    by_count
        .iter()
        .map(|(reason, n)| format!("{n}× {}", reason.replace('|', "/")))
        .collect::<Vec<_>>()
        .join("; ")
}

impl LabReport {
    /// The clients in the report, in table order.
    fn clients(&self) -> Vec<LabClient> {
        let mut clients: Vec<LabClient> = Vec::new();
        let all = self
            .loss
            .iter()
            .flat_map(|r| r.series.iter().map(|s| s.client))
            .chain(
                self.outages
                    .iter()
                    .flat_map(|r| r.results.iter().map(|o| o.client)),
            );
        for c in all {
            if !clients.contains(&c) {
                clients.push(c);
            }
        }
        clients
    }

    /// The comparison tables in Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## stn real-kernel lab\n\n\
             Linux {} TCP over a veth pair between two network namespaces ({} ↔ {}), \
             no added delay. Loss: nftables `numgen random` drops on arrival in each namespace \
             (each direction independently). Clients: **stn** = `stn_tokio::Client`, profile stn, \
             short link, retry 0, the server IP ×4 (the Mars benchmark's setup); **stn-default-retry** = \
             stn with the engine's default retry count (a longer task deadline); **mars-2017** = \
             stn with profile mars-2017, retry 0 and the IP ban off; **peer** = reqwest 0.12 like OkHttp \
             2.x in the benchmark: a new client per call, `Connection: close`, connect timeout {} s, \
             read timeout {} s (reqwest starts it with the request), one attempt.\n",
            self.kernel,
            self.client_ip,
            self.server_ip,
            PEER_TIMEOUT.as_secs(),
            PEER_TIMEOUT.as_secs(),
        );
        if !self.loss.is_empty() {
            let _ = writeln!(
                out,
                "### Random loss: {} sequential calls per client (clients side by side)\n\n\
                 | loss (measured) | client | ok / calls | attempts | total (s) | mean (ms) | p50 (ms) | p95 (ms) | max (ms) | failures |\n\
                 |---|---|--:|--:|--:|--:|--:|--:|--:|---|",
                self.calls
            );
            for row in &self.loss {
                let measured = if row.packets_seen == 0 {
                    "-".to_owned()
                } else {
                    format!(
                        "{:.1}% of {} pkts",
                        100.0 * row.packets_dropped as f64 / row.packets_seen as f64,
                        row.packets_seen
                    )
                };
                for (i, s) in row.series.iter().enumerate() {
                    let loss = if i == 0 {
                        format!("{}% ({measured})", row.loss_percent)
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        out,
                        "| {loss} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} |",
                        s.client,
                        s.successes,
                        s.calls,
                        s.attempts,
                        secs(s.total),
                        opt_ms(s.mean),
                        opt_ms(s.p50),
                        opt_ms(s.p95),
                        opt_ms(s.max),
                        failure_summary(&s.failures),
                    );
                }
            }
            out.push('\n');
        }
        if !self.outages.is_empty() {
            let clients = self.clients();
            let _ = writeln!(
                out,
                "### 100% outage from t=0 for R s; one call per client started at t=0\n\n\
                 Completion time from t=0 (attempts), or `fail @ t`.\n"
            );
            let mut head = "| outage R | restored at (s) |".to_owned();
            let mut rule = "|--:|--:|".to_owned();
            for c in &clients {
                let _ = write!(head, " {c} |");
                rule.push_str("---|");
            }
            let _ = writeln!(out, "{head}\n{rule}");
            for row in &self.outages {
                let mut line = format!("| {} s | {} |", secs(row.outage), secs(row.restored_after));
                for c in &clients {
                    let cell = row.results.iter().find(|r| r.client == *c).map_or_else(
                        || "-".to_owned(),
                        |r| {
                            if r.ok {
                                format!("{} s ({} att.)", secs(r.at), r.attempts)
                            } else {
                                format!(
                                    "fail @ {} s ({})",
                                    secs(r.at),
                                    r.error.as_deref().unwrap_or("failed").replace('|', "/")
                                )
                            }
                        },
                    );
                    let _ = write!(line, " {cell} |");
                }
                let _ = writeln!(out, "{line}");
            }
        }
        out
    }

    /// The same as JSON (seconds as numbers, `null` where undefined).
    pub fn to_json(&self) -> serde_json::Value {
        let s = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        serde_json::json!({
            "kernel": self.kernel,
            "client_ip": self.client_ip.to_string(),
            "server_ip": self.server_ip.to_string(),
            "calls": self.calls,
            "loss": self.loss.iter().map(|row| serde_json::json!({
                "loss_percent": row.loss_percent,
                "packets_seen": row.packets_seen,
                "packets_dropped": row.packets_dropped,
                "clients": row.series.iter().map(|st| serde_json::json!({
                    "client": st.client.name(),
                    "calls": st.calls,
                    "successes": st.successes,
                    "attempts": st.attempts,
                    "total_s": st.total.as_secs_f64(),
                    "mean_s": s(st.mean),
                    "p50_s": s(st.p50),
                    "p95_s": s(st.p95),
                    "max_s": s(st.max),
                    "failures": st.failures,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "outages": self.outages.iter().map(|row| serde_json::json!({
                "outage_s": row.outage.as_secs_f64(),
                "restored_after_s": row.restored_after.as_secs_f64(),
                "clients": row.results.iter().map(|r| serde_json::json!({
                    "client": r.client.name(),
                    "ok": r.ok,
                    "at_s": r.at.as_secs_f64(),
                    "attempts": r.attempts,
                    "error": r.error,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn record(ok: bool, ms: u64, error: Option<&str>) -> CallRecord {
        CallRecord {
            ok,
            duration: Duration::from_millis(ms),
            attempts: 1,
            error: error.map(str::to_owned),
            ended: Instant::now(),
        }
    }

    #[test]
    fn series_stats_count_successes_and_rank_their_times() {
        let records: Vec<CallRecord> = (1..=20)
            .map(|i| record(true, i * 100, None))
            .chain(vec![record(false, 10_000, Some("timed out")); 2])
            .collect();
        let s = SeriesStats::new(LabClient::Peer, &records, Duration::from_secs(40));
        assert_eq!((s.calls, s.successes, s.attempts), (22, 20, 22));
        assert_eq!(s.p50, Some(Duration::from_millis(1000)));
        assert_eq!(s.p95, Some(Duration::from_millis(1900)));
        assert_eq!(s.max, Some(Duration::from_millis(2000)));
        assert_eq!(s.mean, Some(Duration::from_millis(1050)));
        assert_eq!(s.failures.get("timed out"), Some(&2));
        let none = SeriesStats::new(LabClient::Stn, &[], Duration::ZERO);
        assert_eq!((none.mean, none.p50), (None, None));
    }

    #[test]
    fn markdown_has_one_row_per_client_and_outage_cells() {
        let report = LabReport {
            kernel: "6.1".to_owned(),
            client_ip: Ipv4Addr::new(10, 0, 0, 1),
            server_ip: Ipv4Addr::new(10, 0, 0, 2),
            calls: 2,
            loss: vec![LossRow {
                loss_percent: 10,
                packets_seen: 200,
                packets_dropped: 20,
                series: vec![
                    SeriesStats::new(
                        LabClient::Stn,
                        &[record(true, 10, None), record(true, 30, None)],
                        Duration::from_millis(40),
                    ),
                    SeriesStats::new(
                        LabClient::Peer,
                        &[record(true, 10, None), record(false, 10_000, Some("a|b"))],
                        Duration::from_millis(10_010),
                    ),
                ],
            }],
            outages: vec![OutageRow {
                outage: Duration::from_secs(5),
                restored_after: Duration::from_millis(5_004),
                results: vec![
                    OutageResult {
                        client: LabClient::Stn,
                        ok: true,
                        at: Duration::from_millis(5_210),
                        attempts: 2,
                        error: None,
                    },
                    OutageResult {
                        client: LabClient::Peer,
                        ok: false,
                        at: Duration::from_millis(10_003),
                        attempts: 1,
                        error: Some("timed out".to_owned()),
                    },
                ],
            }],
        };
        let md = report.markdown();
        assert!(
            md.contains(
                "| 10% (10.0% of 200 pkts) | stn | 2/2 | 2 | 0.04 | 20.0 | 10.0 | 30.0 | 30.0 |  |"
            ),
            "{md}"
        );
        assert!(md.contains("|  | peer | 1/2 | 2 | 10.01 | 10.0 |"), "{md}");
        assert!(md.contains("1× a/b"), "{md}");
        assert!(
            md.contains("| outage R | restored at (s) | stn | peer |"),
            "{md}"
        );
        assert!(
            md.contains("| 5.00 s | 5.00 | 5.21 s (2 att.) | fail @ 10.00 s (timed out) |"),
            "{md}"
        );
        let json = report.to_json();
        assert_eq!(json["loss"][0]["clients"][1]["successes"], 1);
        assert_eq!(json["outages"][0]["clients"][0]["ok"], true);
    }
}
