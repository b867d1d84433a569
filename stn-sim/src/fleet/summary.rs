//! A fleet run's figures ([`FleetSummary`]), their table, and the chart of
//! every fleet's time series.

use std::fmt::Write as _;

use stn_proto::Instant;

use crate::fleet::run::FleetRun;
use crate::report::chart::{stacked_svg, ChartError, LineChart, Series};

/// One fleet's figures.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FleetSummary {
    /// The fleet.
    pub fleet: String,
    /// Clients.
    pub clients: u64,
    /// Clients whose call was pending during the outage (first call
    /// before its end, not served before its start).
    pub pending: u64,
    /// Pending clients that were served.
    pub pending_served: u64,
    /// Calls that failed (every client; the app called again after each
    /// failure until `max_calls`).
    pub failed_calls: u64,
    /// Clients never served (gave up after `max_calls`, or still calling
    /// when the run stopped).
    pub unserved_clients: u64,
    /// Clients still calling when the run stopped.
    pub calling_clients: u64,
    /// Seconds after the outage's end until 50 % of the pending calls
    /// succeeded (`None`: never reached).
    pub t50_s: Option<f64>,
    /// The same for 99 %.
    pub t99_s: Option<f64>,
    /// The same for 100 %.
    pub t100_s: Option<f64>,
    /// The most SYNs per second that reached the server in one bin from
    /// the outage's end on.
    pub peak_syn_per_s: f64,
    /// The most connection attempts per second the server's full queues
    /// dropped (SYNs and handshake ACKs) in one bin from the outage's end on.
    pub peak_overflow_per_s: f64,
    /// The longest the accept queue was.
    pub peak_accept_queue: u64,
    /// SYNs that reached the server, the whole run.
    pub server_syns: u64,
    /// TCP handshakes the server completed.
    pub server_handshakes: u64,
    /// TLS handshakes the server completed.
    pub server_tls_handshakes: u64,
    /// Completed handshakes that carried no request.
    pub wasted_handshakes: u64,
    /// Connections the server's application accepted.
    pub accepted: u64,
    /// SYNs and handshake ACKs the full queues dropped, the whole run.
    pub overflows: u64,
    /// Connection attempts the clients started.
    pub connects: u64,
    /// SYNs the clients sent.
    pub syns_sent: u64,
    /// Virtual seconds simulated.
    pub sim_s: f64,
    /// Events processed.
    pub events: u64,
    /// The trace hash.
    pub trace_hash: u64,
}

fn secs(t: Instant) -> f64 {
    t.as_secs_f64()
}

impl FleetSummary {
    /// The figures of `run` for an outage `[t0, t1)`.
    pub fn of(run: &FleetRun, (t0, t1): (Instant, Instant)) -> Self {
        let pending: Vec<&crate::fleet::run::ClientCalls> = run
            .clients
            .iter()
            .filter(|c| c.first_call < t1 && c.served().is_none_or(|s| s.finished >= t0))
            .collect();
        let mut served: Vec<f64> = pending
            .iter()
            .filter_map(|c| c.served())
            .map(|c| secs(c.finished) - secs(t1))
            .map(|s| s.max(0.0))
            .collect();
        served.sort_by(f64::total_cmp);
        let n = pending.len();
        let quantile = |p: f64| {
            let need = ((p * n as f64).ceil() as usize).max(1);
            served.get(need - 1).copied()
        };
        let bin_s = run.bin.as_secs_f64();
        let from = (secs(t1) / bin_s).floor() as usize;
        let recovery = run.bins.iter().skip(from);
        let peak = |f: fn(&crate::fleet::run::Bin) -> u64| {
            recovery.clone().map(f).max().unwrap_or(0) as f64 / bin_s
        };
        let ended = run.clients.iter().flat_map(|c| &c.records);
        FleetSummary {
            fleet: run.fleet.clone(),
            clients: run.clients.len() as u64,
            pending: n as u64,
            pending_served: served.len() as u64,
            failed_calls: ended.clone().filter(|c| !c.is_ok()).count() as u64,
            unserved_clients: run.clients.iter().filter(|c| c.served().is_none()).count() as u64,
            calling_clients: run.clients.iter().filter(|c| c.calling).count() as u64,
            t50_s: quantile(0.5),
            t99_s: quantile(0.99),
            t100_s: quantile(1.0),
            peak_syn_per_s: peak(|b| b.syns),
            peak_overflow_per_s: peak(|b| b.overflows),
            peak_accept_queue: run.capacity.peak_accept_queue,
            server_syns: run.server.syns,
            server_handshakes: run.server.tcp_handshakes,
            server_tls_handshakes: run.server.tls_handshakes,
            wasted_handshakes: run.server.wasted_handshakes,
            accepted: run.capacity.accepted,
            overflows: run.capacity.overflows(),
            connects: ended.clone().map(|c| u64::from(c.cost.connects)).sum(),
            syns_sent: ended.map(|c| u64::from(c.cost.syns)).sum(),
            sim_s: secs(run.end),
            events: run.events,
            trace_hash: run.trace_hash,
        }
    }
}

fn opt_s(v: Option<f64>) -> String {
    v.map_or_else(|| "never".to_owned(), |s| format!("{s:.1}"))
}

/// The per-fleet table (Markdown).
pub fn table(rows: &[FleetSummary], tls: bool) -> String {
    let mut s = String::new();
    let hs = if tls {
        "handshakes TCP (TLS)"
    } else {
        "handshakes"
    };
    let _ = writeln!(
        s,
        "| fleet | clients | pending | served 50% s | 99% s | 100% s | failed | unserved | peak SYN/s | \
         peak overflow/s | peak accept queue | SYNs at server | {hs} | wasted | SYNs sent | connects |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(16));
    for r in rows {
        let hands = if tls {
            format!("{} ({})", r.server_handshakes, r.server_tls_handshakes)
        } else {
            r.server_handshakes.to_string()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {} | {} | {} | {} | {} | {} |",
            r.fleet,
            r.clients,
            r.pending,
            opt_s(r.t50_s),
            opt_s(r.t99_s),
            opt_s(r.t100_s),
            r.failed_calls,
            r.unserved_clients,
            r.peak_syn_per_s,
            r.peak_overflow_per_s,
            r.peak_accept_queue,
            r.server_syns,
            hands,
            r.wasted_handshakes,
            r.syns_sent,
            r.connects,
        );
    }
    s
}

/// The time series of every fleet on one chart: SYNs/s arriving,
/// accepted/s and calls served/s, one panel each, one line per fleet.
pub fn chart_svg(runs: &[FleetRun], title: &str) -> Result<String, ChartError> {
    let panel = |what: &str, f: fn(&crate::fleet::run::Bin) -> u64| LineChart {
        title: format!("{title}: {what}"),
        x_label: "time (s)".into(),
        y_label: format!("{what} per second"),
        series: runs
            .iter()
            .map(|r| {
                let w = r.bin.as_secs_f64();
                Series {
                    name: r.fleet.clone(),
                    points: r
                        .bins
                        .iter()
                        .enumerate()
                        .map(|(i, b)| ((i + 1) as f64 * w, f(b) as f64 / w))
                        .collect(),
                    failures: Vec::new(),
                    reference: false,
                }
            })
            .collect(),
        log_y: false,
    };
    stacked_svg(
        &[
            panel("SYNs arriving at the server", |b| b.syns),
            panel("connections accepted", |b| b.accepted),
            panel("calls served", |b| b.served),
        ],
        1100,
        420,
    )
}
