//! What a client's calls cost the network and the server, per success,
//! beside its time: connection attempts and SYNs the client sent, SYNs
//! and handshakes that reached the server, and handshakes the server
//! completed for nothing (closed without a request: a race's losers).
//!
//! Counts are summed over a set of runs and divided by the set's successes
//! (a failed call costs without adding a success). A count some run of the
//! set does not have (the oracle sends no SYNs; the server counts only
//! simulated runs) leaves the figure unknown.

use crate::bench::record::RunRecord;
use crate::report::table::{ordered, Table};

/// One client's cost over a set of runs, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Successful calls.
    pub successes: u64,
    /// Virtual seconds, summed over the runs' `total_s`.
    pub time_s: f64,
    /// Connection attempts the client started.
    pub connects: Option<u64>,
    /// SYNs the client sent.
    pub syns: Option<u64>,
    /// SYNs that reached the server.
    pub server_syns: Option<u64>,
    /// TCP handshakes the server completed.
    pub server_handshakes: Option<u64>,
    /// TLS handshakes the server completed.
    pub server_tls_handshakes: Option<u64>,
    /// Handshakes the server completed and saw closed without a request.
    pub wasted_handshakes: Option<u64>,
}

impl Cost {
    /// The sums over `runs`.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a RunRecord> + Clone) -> Cost {
        let sum = |f: fn(&RunRecord) -> Option<u64>| -> Option<u64> {
            let mut it = runs.clone().into_iter().peekable();
            it.peek()?;
            it.map(f).sum()
        };
        Cost {
            successes: runs.clone().into_iter().map(|r| r.successes).sum(),
            time_s: runs.clone().into_iter().map(|r| r.total_s).sum(),
            connects: sum(|r| r.connects),
            syns: sum(|r| r.syns),
            server_syns: sum(|r| r.server_syns),
            server_handshakes: sum(|r| r.server_handshakes),
            server_tls_handshakes: sum(|r| r.server_tls_handshakes),
            wasted_handshakes: sum(|r| r.wasted_handshakes),
        }
    }

    /// `count` per success (`None` when the count is unknown; a set with
    /// no success divides by one).
    pub fn per_success(&self, count: Option<u64>) -> Option<f64> {
        count.map(|c| c as f64 / self.successes.max(1) as f64)
    }

    /// Seconds per success.
    pub fn time_per_success(&self) -> f64 {
        self.time_s / self.successes.max(1) as f64
    }

    /// Connects per success.
    pub fn connects_per_success(&self) -> Option<f64> {
        self.per_success(self.connects)
    }

    /// SYNs sent per success.
    pub fn syns_per_success(&self) -> Option<f64> {
        self.per_success(self.syns)
    }

    /// SYNs reaching the server per success.
    pub fn server_syns_per_success(&self) -> Option<f64> {
        self.per_success(self.server_syns)
    }

    /// Wasted server handshakes per success.
    pub fn wasted_per_success(&self) -> Option<f64> {
        self.per_success(self.wasted_handshakes)
    }
}

/// A per-success figure with two decimals, or `-` when unknown.
///
/// ```
/// use stn_sim::report::cost::figure;
/// assert_eq!(figure(Some(1.234)), "1.23");
/// assert_eq!(figure(None), "-");
/// ```
pub fn figure(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"))
}

/// The column titles of [`cost_cells`].
pub const COST_HEADER: [&str; 7] = [
    "successes",
    "s / success",
    "connects / success",
    "SYNs sent / success",
    "SYNs at server / success",
    "server handshakes / success",
    "wasted server handshakes / success",
];

/// `cost`'s cells under [`COST_HEADER`]; the server's handshakes read
/// `TCP (TLS)` when the runs used TLS.
pub fn cost_cells(cost: &Cost) -> Vec<String> {
    let handshakes = match cost.per_success(cost.server_tls_handshakes) {
        Some(tls) => format!(
            "{} ({tls:.2} TLS)",
            figure(cost.per_success(cost.server_handshakes))
        ),
        None => figure(cost.per_success(cost.server_handshakes)),
    };
    vec![
        cost.successes.to_string(),
        format!("{:.3}", cost.time_per_success()),
        figure(cost.connects_per_success()),
        figure(cost.syns_per_success()),
        figure(cost.server_syns_per_success()),
        handshakes,
        figure(cost.wasted_per_success()),
    ]
}

/// One row per client of `runs` (in first-appearance order): its cost
/// summed over every run of `runs`, with `lead` cells first.
pub fn client_rows(lead: &[&str], runs: &[&RunRecord]) -> Vec<Vec<String>> {
    ordered(runs, |r| r.client.as_str())
        .into_iter()
        .map(|client| {
            let mine = runs.iter().copied().filter(|r| r.client == client);
            let mut row: Vec<String> = lead.iter().map(|s| (*s).to_owned()).collect();
            row.push(format!("`{client}`"));
            row.extend(cost_cells(&Cost::of(mine)));
            row
        })
        .collect()
}

/// A table with one row per value of `key` (in first-appearance order) and
/// client, titled `title` for the key's column; `None` without runs.
pub fn grouped_table<'a>(
    title: &str,
    runs: &[&'a RunRecord],
    key: impl Fn(&'a RunRecord) -> &'a str,
) -> Option<Table> {
    let mut t = Table::new([title, "client"].into_iter().chain(COST_HEADER));
    for group in ordered(runs, &key) {
        let mine: Vec<&RunRecord> = runs.iter().copied().filter(|r| key(r) == group).collect();
        t.rows.extend(client_rows(&[group], &mine));
    }
    (!t.rows.is_empty()).then_some(t)
}

/// A suite's cost table for `report.md`: one row per client, summed over
/// the suite's runs (every scenario, platform and seed).
pub fn cost_table(runs: &[&RunRecord]) -> String {
    let mut t = Table::new(std::iter::once("client").chain(COST_HEADER));
    t.rows = client_rows(&[], runs);
    format!(
        "### Cost per success (summed over the suite's runs)\n\n{}\n",
        t.to_markdown()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::rec;

    #[test]
    fn sums_divide_by_successes_and_a_missing_count_is_unknown() {
        let mut a = rec("matrix", "x", "ios", "stn", 0);
        (a.successes, a.connects, a.syns) = (10, Some(15), Some(20));
        (a.server_syns, a.wasted_handshakes) = (Some(18), Some(4));
        let mut b = a.clone();
        b.successes = 30;
        b.wasted_handshakes = None;
        let c = Cost::of([&a, &b]);
        assert_eq!(c.successes, 40);
        assert_eq!(c.connects_per_success(), Some(0.75));
        assert_eq!(c.syns_per_success(), Some(1.0));
        assert_eq!(c.server_syns_per_success(), Some(0.9));
        assert_eq!(c.wasted_per_success(), None);
        let cells = cost_cells(&c);
        assert_eq!(cells[2], "0.75");
        assert_eq!(cells[6], "-");
    }

    #[test]
    fn the_suite_table_has_one_row_per_client() {
        let mut s = rec("matrix", "x", "ios", "stn", 0);
        s.connects = Some(1020);
        let mut m = rec("matrix", "x", "ios", "mars", 0);
        m.connects = Some(510);
        let md = cost_table(&[&s, &m, &s]);
        let rows: Vec<&str> = md.lines().filter(|l| l.contains('`')).collect();
        assert_eq!(rows.len(), 2, "{md}");
        // stn: two runs of 500 successes, 2040 connects.
        assert!(
            rows[0].contains("`stn`") && rows[0].contains("2.04"),
            "{md}"
        );
        assert!(
            rows[1].contains("`mars`") && rows[1].contains("1.02"),
            "{md}"
        );
    }
}
