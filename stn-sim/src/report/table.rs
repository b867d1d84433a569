//! Markdown tables in the shape of the published benchmark
//! (`docs/stn-benchmark.md`), with stn's columns added.
//!
//! Each suite picks its shape ([`crate::bench::Suite::tables`]); the
//! shapes here are:
//! - [`sensitivity_tables`]: rows are outage lengths R; one
//!   table of completion times per client (all runs of a row in one cell,
//!   oracle included), then one table per pair in the published
//!   "Mars VS AFNetworking R1 | R2 | R3" shape — **positive = the first
//!   client finished first**, by that many seconds;
//! - [`size_tables`]: the published 2×2
//!   "平均耗时 / 总耗时" shape in English — rows are networks, columns are
//!   clients, each cell "mean X s, total Y s" — one table per size variant;
//! - [`loss_tables`], the default: rows are scenarios, columns are
//!   clients: total time with attempts, then the latency of successful
//!   calls (mean / p50 / p95 / p99).
//!
//! Every suite is split by platform (the published iOS and Android
//! pairings). Rows and columns keep the order in which the records first
//! name them, so the tables follow the order the suites ran in.

use crate::bench::record::RunRecord;

/// A Markdown table: a header row and body rows of cells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// Column titles.
    pub header: Vec<String>,
    /// Body rows; each as long as the header.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles and no rows.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Renders the table, columns padded so it also reads well in a terminal.
    ///
    /// ```
    /// use stn_sim::report::table::Table;
    /// let mut t = Table::new(["R (s)", "stn"]);
    /// t.rows.push(vec!["5".into(), "5.41".into()]);
    /// assert_eq!(t.to_markdown(), "| R (s) | stn  |\n|-------|------|\n| 5     | 5.41 |\n");
    /// ```
    pub fn to_markdown(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![3usize; cols];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |row: &[String]| {
            let mut s = String::from("|");
            for (i, w) in width.iter().enumerate() {
                let cell = row.get(i).map(String::as_str).unwrap_or("");
                let pad = w.saturating_sub(cell.chars().count());
                s.push(' ');
                s.push_str(cell);
                s.push_str(&" ".repeat(pad));
                s.push_str(" |");
            }
            s.push('\n');
            s
        };
        let mut out = line(&self.header);
        out.push('|');
        for w in &width {
            out.push_str(&"-".repeat(w + 2));
            out.push('|');
        }
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
}

/// Seconds with two decimals, the precision of the published tables.
///
/// ```
/// assert_eq!(stn_sim::report::table::secs(5.4132), "5.41");
/// ```
pub fn secs(s: f64) -> String {
    format!("{s:.2}")
}

/// The distinct values of `key` over `runs`, in first-appearance order.
pub fn ordered<'a>(runs: &[&'a RunRecord], key: impl Fn(&'a RunRecord) -> &'a str) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for r in runs {
        let k = key(r);
        if !seen.contains(&k) {
            seen.push(k);
        }
    }
    seen
}

/// The outage length R of a sensitivity scenario: the first number in its
/// name (`outage-20s` → 20).
///
/// ```
/// use stn_sim::report::table::first_number;
/// assert_eq!(first_number("outage-20s"), Some(20.0));
/// assert_eq!(first_number("3g+30%"), Some(3.0));
/// assert_eq!(first_number("edge"), None);
/// ```
pub fn first_number(s: &str) -> Option<f64> {
    let start = s.find(|c: char| c.is_ascii_digit())?;
    let rest = &s[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].trim_end_matches('.').parse().ok()
}

/// The loss rate of a loss scenario: the number right before a `%`
/// (`3g+30%` → 30, `2g+2.5%` → 2.5); `None` without a `%`.
///
/// ```
/// use stn_sim::report::table::loss_percent;
/// assert_eq!(loss_percent("3g+30%"), Some(30.0));
/// assert_eq!(loss_percent("30% loss"), Some(30.0));
/// assert_eq!(loss_percent("3g"), None);
/// ```
pub fn loss_percent(s: &str) -> Option<f64> {
    let pct = s.find('%')?;
    let head = &s[..pct];
    let start = head
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + 1);
    head[start..].parse().ok()
}

/// The time a single-call run ended: its completion, or when it failed.
pub fn end_time(r: &RunRecord) -> f64 {
    r.completion_s.unwrap_or(r.total_s)
}

/// A sensitivity cell: `20.41`, or `fail@60.00` for a failed call.
pub fn completion_cell(r: &RunRecord) -> String {
    match r.completion_s {
        Some(c) if r.ok => secs(c),
        _ => format!("fail@{}", secs(r.total_s)),
    }
}

/// The published difference cell for `a` VS `b` in one run: `b − a` in
/// seconds when both completed (positive = `a` finished first), otherwise
/// the published "37.2 suc VS 61.0 fail" form.
///
/// ```
/// use stn_sim::report::table::diff_cell;
/// # fn rec(c: Option<f64>, t: f64) -> stn_sim::bench::record::RunRecord {
/// #     serde_json::from_value(serde_json::json!({"suite": "sensitivity",
/// #         "scenario": "outage-35s", "platform": "ios", "client": "x", "channel": "short",
/// #         "run": 0, "successes": c.is_some() as u64, "attempts": 1, "total_s": t,
/// #         "mean_s": t, "p50_s": t, "p95_s": t, "p99_s": t, "completion_s": c,
/// #         "ok": c.is_some()})).unwrap()
/// # }
/// assert_eq!(diff_cell(&rec(Some(5.41), 5.41), &rec(Some(7.41), 7.41)), "2.00");
/// assert_eq!(diff_cell(&rec(Some(37.2), 37.2), &rec(None, 61.0)), "37.20 suc VS 61.00 fail");
/// ```
pub fn diff_cell(a: &RunRecord, b: &RunRecord) -> String {
    let state = |r: &RunRecord| {
        if r.ok && r.completion_s.is_some() {
            "suc"
        } else {
            "fail"
        }
    };
    match (
        a.ok && a.completion_s.is_some(),
        b.ok && b.completion_s.is_some(),
    ) {
        (true, true) => secs(end_time(b) - end_time(a)),
        _ => format!(
            "{} {} VS {} {}",
            secs(end_time(a)),
            state(a),
            secs(end_time(b)),
            state(b)
        ),
    }
}

/// A loss-table cell: total time and attempts, `123.45 (510)`; a run that
/// missed its goal says how many calls succeeded.
pub fn total_cell(r: &RunRecord) -> String {
    if r.ok {
        format!("{} ({})", secs(r.total_s), r.attempts)
    } else {
        format!(
            "{} ({}, only {} ok)",
            secs(r.total_s),
            r.attempts,
            r.successes
        )
    }
}

/// A latency cell: `mean / p50 / p95 / p99` of successful calls.
pub fn latency_cell(r: &RunRecord) -> String {
    if r.successes == 0 {
        return "no success".into();
    }
    format!(
        "{} / {} / {} / {}",
        secs(r.mean_s),
        secs(r.p50_s),
        secs(r.p95_s),
        secs(r.p99_s)
    )
}

/// A size-table cell: `mean 2.40 s, total 120.00 s`.
pub fn size_cell(r: &RunRecord) -> String {
    let mut s = format!("mean {} s, total {} s", secs(r.mean_s), secs(r.total_s));
    if !r.ok {
        s.push_str(&format!(" ({} of {} ok)", r.successes, r.attempts));
    }
    s
}

/// Whether `client` is one of stn's own engines (stn or Mars under a
/// profile) rather than a peer or the oracle: the first side of the
/// sensitivity difference tables.
pub fn is_own_client(client: &str) -> bool {
    client.starts_with("stn") || client.starts_with("mars")
}

/// The records of one cell, in run order, joined by `" / "`.
fn cell<'a>(
    runs: &[&'a RunRecord],
    scenario: &str,
    client: &str,
    f: impl Fn(&'a RunRecord) -> String,
) -> String {
    let mut cells: Vec<&RunRecord> = runs
        .iter()
        .copied()
        .filter(|r| r.scenario == scenario && r.client == client)
        .collect();
    cells.sort_by_key(|r| r.run);
    if cells.is_empty() {
        return "–".into();
    }
    cells.into_iter().map(f).collect::<Vec<_>>().join(" / ")
}

fn by_platform<'a>(runs: &[&'a RunRecord]) -> Vec<(&'a str, Vec<&'a RunRecord>)> {
    ordered(runs, |r| r.platform.as_str())
        .into_iter()
        .map(|p| {
            (
                p,
                runs.iter().copied().filter(|r| r.platform == p).collect(),
            )
        })
        .collect()
}

/// Loss-style tables of one suite, per platform: total time (attempts),
/// then latency of successful calls, rows = scenario, columns = client.
pub fn loss_tables(suite: &str, runs: &[&RunRecord]) -> String {
    let mut out = String::new();
    for (platform, runs) in by_platform(runs) {
        let scenarios = ordered(&runs, |r| r.scenario.as_str());
        let clients = ordered(&runs, |r| r.client.as_str());
        let header = || std::iter::once("Config").chain(clients.iter().copied());
        let mut total = Table::new(header());
        let mut latency = Table::new(header());
        for s in &scenarios {
            let row = |f: fn(&RunRecord) -> String| {
                std::iter::once((*s).to_owned())
                    .chain(clients.iter().map(|c| cell(&runs, s, c, f)))
                    .collect()
            };
            total.rows.push(row(total_cell));
            latency.rows.push(row(latency_cell));
        }
        out.push_str(&format!(
            "### {suite} — {platform}: total time, s (attempts)\n\n{}\n",
            total.to_markdown()
        ));
        out.push_str(&format!(
            "### {suite} — {platform}: successful call time, s (mean / p50 / p95 / p99)\n\n{}\n",
            latency.to_markdown()
        ));
    }
    out
}

/// The pairs of the sensitivity difference tables for these clients: every
/// own engine against every peer (the published "Mars VS X"), then the
/// first `stn*` client against the other own engines.
pub fn sensitivity_pairs<'a>(clients: &[&'a str]) -> Vec<(&'a str, &'a str)> {
    let own: Vec<&str> = clients
        .iter()
        .copied()
        .filter(|c| is_own_client(c))
        .collect();
    let peers: Vec<&str> = clients
        .iter()
        .copied()
        .filter(|c| !is_own_client(c) && *c != "oracle")
        .collect();
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for a in &own {
        for b in &peers {
            pairs.push((a, b));
        }
    }
    if let Some(first) = own.iter().find(|c| c.starts_with("stn")) {
        for b in own.iter().filter(|b| *b != first) {
            pairs.push((first, b));
        }
    }
    pairs
}

/// The variant of a scenario: what follows its first `/` (`outage-20s/fit`
/// → `fit`, `3g/64KiB-request` → `64KiB-request`), or `""`.
///
/// ```
/// use stn_sim::report::table::scenario_variant;
/// assert_eq!(scenario_variant("outage-20s/fit"), ("outage-20s", "fit"));
/// assert_eq!(scenario_variant("loss-30%"), ("loss-30%", ""));
/// ```
pub fn scenario_variant(s: &str) -> (&str, &str) {
    s.split_once('/').unwrap_or((s, ""))
}

/// Sensitivity tables, per platform and scenario variant (`outage-Rs` and,
/// say, `outage-Rs/fit` apart): completion per client (runs joined), then
/// one published-style difference table per pair.
pub fn sensitivity_tables(suite: &str, runs: &[&RunRecord]) -> String {
    let mut out = String::new();
    for (platform, runs) in by_platform(runs) {
        for variant in ordered(&runs, |r| scenario_variant(&r.scenario).1) {
            let runs: Vec<&RunRecord> = runs
                .iter()
                .copied()
                .filter(|r| scenario_variant(&r.scenario).1 == variant)
                .collect();
            let label = if variant.is_empty() {
                platform.to_owned()
            } else {
                format!("{platform} ({variant})")
            };
            out.push_str(&sensitivity_variant_tables(suite, &label, &runs));
        }
    }
    out
}

fn sensitivity_variant_tables(suite: &str, label: &str, runs: &[&RunRecord]) -> String {
    let mut out = String::new();
    let scenarios = ordered(runs, |r| r.scenario.as_str());
    let clients = ordered(runs, |r| r.client.as_str());
    // The published row title for the bench's `outage-Rs`; custom names as they are.
    let row_title = |s: &str| match first_number(s) {
        Some(r) if s.starts_with("outage-") => format!("{r}s 100% Loss"),
        _ => s.to_owned(),
    };
    let mut completion = Table::new(std::iter::once("Config").chain(clients.iter().copied()));
    for s in &scenarios {
        completion.rows.push(
            std::iter::once(row_title(s))
                .chain(clients.iter().map(|c| cell(runs, s, c, completion_cell)))
                .collect(),
        );
    }
    out.push_str(&format!(
        "### {suite} — {label}: completion time, s (runs R1 / R2 / …)\n\n{}\n",
        completion.to_markdown()
    ));
    let run_ids = {
        let mut v: Vec<u32> = runs.iter().map(|r| r.run).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let has_oracle = clients.contains(&"oracle");
    for (a, b) in sensitivity_pairs(&clients) {
        let mut header: Vec<String> = run_ids
            .iter()
            .map(|i| format!("{a} VS {b} R{}", i + 1))
            .collect();
        header.insert(0, "Config".into());
        if has_oracle {
            header.push("oracle".into());
        }
        let mut t = Table::new(header);
        for s in &scenarios {
            let find = |c: &str, i: u32| {
                runs.iter()
                    .copied()
                    .find(|r| r.scenario == *s && r.client == c && r.run == i)
            };
            let mut row = vec![row_title(s)];
            for &i in &run_ids {
                row.push(match (find(a, i), find(b, i)) {
                    (Some(x), Some(y)) => diff_cell(x, y),
                    _ => "–".into(),
                });
            }
            if has_oracle {
                row.push(cell(runs, s, "oracle", completion_cell));
            }
            t.rows.push(row);
        }
        out.push_str(&format!(
            "### {suite} — {label}: {a} VS {b} (s; positive = {a} finished first)\n\n{}\n",
            t.to_markdown()
        ));
    }
    out
}

/// Request/response-size tables, per platform and size variant: rows =
/// network, columns = client, cells "mean X s, total Y s".
pub fn size_tables(suite: &str, runs: &[&RunRecord]) -> String {
    let mut out = String::new();
    for (platform, runs) in by_platform(runs) {
        let variants = ordered(&runs, |r| scenario_variant(&r.scenario).1);
        let clients = ordered(&runs, |r| r.client.as_str());
        for v in variants {
            let in_variant: Vec<&RunRecord> = runs
                .iter()
                .copied()
                .filter(|r| scenario_variant(&r.scenario).1 == v)
                .collect();
            let mut t = Table::new(std::iter::once("Network").chain(clients.iter().copied()));
            for s in ordered(&in_variant, |r| r.scenario.as_str()) {
                let net = scenario_variant(s).0;
                t.rows.push(
                    std::iter::once(net.to_owned())
                        .chain(clients.iter().map(|c| cell(&in_variant, s, c, size_cell)))
                        .collect(),
                );
            }
            let title = if v.is_empty() {
                String::new()
            } else {
                format!(" {v}")
            };
            out.push_str(&format!(
                "### {suite} — {platform}{title}: mean and total time, s\n\n{}\n",
                t.to_markdown()
            ));
        }
    }
    out
}

/// All tables for `runs`: one section per suite, in first-appearance
/// order, each in its suite's shape ([`crate::bench::Suite::tables`]; a
/// suite that is not registered gets [`loss_tables`]), then its cost per
/// client ([`crate::report::cost::cost_table`]).
pub fn all_tables(runs: &[RunRecord]) -> String {
    let all: Vec<&RunRecord> = runs.iter().collect();
    let mut out = String::new();
    for suite in ordered(&all, |r| r.suite.as_str()) {
        let these: Vec<&RunRecord> = all.iter().copied().filter(|r| r.suite == suite).collect();
        out.push_str(&format!("## Suite `{suite}`\n\n"));
        out.push_str(&match crate::bench::suites::named(suite) {
            Some(s) => s.tables(runs),
            None => loss_tables(suite, &these),
        });
        out.push_str(&crate::report::cost::cost_table(&these));
        out.push_str(&notes(&these));
    }
    out
}

/// The distinct notes of `runs` (what a fitted scenario assumes, a tuned
/// client's overrides), one bullet per (client, note), or `""`.
pub fn notes(runs: &[&RunRecord]) -> String {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for r in runs {
        if let Some(n) = r.note.as_deref() {
            if !seen.contains(&(r.client.as_str(), n)) {
                seen.push((r.client.as_str(), n));
            }
        }
    }
    if seen.is_empty() {
        return String::new();
    }
    let mut out = String::from("Notes:\n\n");
    for (client, note) in seen {
        out.push_str(&format!("- `{client}`: {note}\n"));
    }
    out.push('\n');
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A hand-made record (through JSON, so fields added later with serde
    /// defaults need no change here).
    pub(crate) fn rec(
        suite: &str,
        scenario: &str,
        platform: &str,
        client: &str,
        run: u32,
    ) -> RunRecord {
        serde_json::from_value(serde_json::json!({
            "suite": suite, "scenario": scenario, "platform": platform, "client": client,
            "channel": "short", "run": run, "successes": 500, "attempts": 510,
            "total_s": 250.0, "mean_s": 0.5, "p50_s": 0.4, "p95_s": 1.25, "p99_s": 3.0,
            "completion_s": null, "ok": true
        }))
        .unwrap()
    }

    pub(crate) fn single(
        scenario: &str,
        platform: &str,
        client: &str,
        run: u32,
        end: Option<f64>,
        fail_at: f64,
    ) -> RunRecord {
        let mut r = rec("sensitivity", scenario, platform, client, run);
        r.attempts = 1;
        r.successes = u64::from(end.is_some());
        r.ok = end.is_some();
        r.completion_s = end;
        r.total_s = end.unwrap_or(fail_at);
        r
    }

    /// The cells of the table under the heading that contains `heading`.
    pub(crate) fn cells(md: &str, heading: &str) -> Vec<Vec<String>> {
        let mut lines = md
            .lines()
            .skip_while(|l| !(l.starts_with("###") && l.contains(heading)));
        assert!(lines.next().is_some(), "no table {heading:?} in\n{md}");
        lines
            .skip(1)
            .take_while(|l| l.starts_with('|'))
            .filter(|l| !l.starts_with("|-"))
            .map(|l| {
                l.trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_owned())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn loss_table_rows_are_scenarios_and_columns_clients() {
        let mut b = rec("loss", "3g+30%", "android", "okhttp-2017", 0);
        b.total_s = 1234.5;
        b.attempts = 800;
        let mut c = rec("loss", "3g+50%", "android", "stn", 0);
        c.ok = false;
        c.successes = 12;
        c.attempts = 5000;
        let runs = [
            rec("loss", "3g+30%", "android", "stn", 0),
            b,
            c,
            rec("loss", "3g+30%", "ios", "stn", 0),
        ];
        let md = all_tables(&runs);
        assert!(md.contains("## Suite `loss`"));
        assert_eq!(
            cells(&md, "loss — android: total time"),
            [
                ["Config", "stn", "okhttp-2017"],
                ["3g+30%", "250.00 (510)", "1234.50 (800)"],
                ["3g+50%", "250.00 (5000, only 12 ok)", "–"],
            ]
        );
        assert_eq!(
            cells(&md, "loss — android: successful call time")[1],
            [
                "3g+30%",
                "0.50 / 0.40 / 1.25 / 3.00",
                "0.50 / 0.40 / 1.25 / 3.00"
            ]
        );
        assert_eq!(
            cells(&md, "loss — ios: total time"),
            [["Config", "stn"], ["3g+30%", "250.00 (510)"]]
        );
        // Padded: every line of a table is as wide as its header.
        let t: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).take(4).collect();
        assert!(
            t.iter().all(|l| l.chars().count() == t[0].chars().count()),
            "{t:?}"
        );
    }

    #[test]
    fn sensitivity_differences_follow_the_published_sign() {
        let mut runs = Vec::new();
        for run in 0..3 {
            runs.push(single("outage-20s", "ios", "stn", run, Some(20.41), 0.0));
            runs.push(single(
                "outage-20s",
                "ios",
                "nsurlsession",
                run,
                Some(35.41),
                0.0,
            ));
            runs.push(single("outage-20s", "ios", "oracle", run, Some(20.41), 0.0));
            runs.push(single("outage-40s", "ios", "stn", run, Some(40.41), 0.0));
            runs.push(single("outage-40s", "ios", "nsurlsession", run, None, 60.0));
            runs.push(single("outage-40s", "ios", "oracle", run, Some(40.41), 0.0));
        }
        let md = all_tables(&runs);
        assert_eq!(
            cells(&md, "ios: completion time"),
            [
                ["Config", "stn", "nsurlsession", "oracle"],
                [
                    "20s 100% Loss",
                    "20.41 / 20.41 / 20.41",
                    "35.41 / 35.41 / 35.41",
                    "20.41 / 20.41 / 20.41"
                ],
                [
                    "40s 100% Loss",
                    "40.41 / 40.41 / 40.41",
                    "fail@60.00 / fail@60.00 / fail@60.00",
                    "40.41 / 40.41 / 40.41"
                ],
            ]
        );
        let diff = cells(
            &md,
            "ios: stn VS nsurlsession (s; positive = stn finished first)",
        );
        assert_eq!(
            diff[0],
            [
                "Config",
                "stn VS nsurlsession R1",
                "stn VS nsurlsession R2",
                "stn VS nsurlsession R3",
                "oracle"
            ]
        );
        assert_eq!(
            diff[1],
            [
                "20s 100% Loss",
                "15.00",
                "15.00",
                "15.00",
                "20.41 / 20.41 / 20.41"
            ]
        );
        assert_eq!(diff[2][1], "40.41 suc VS 60.00 fail");
        // The oracle is never a side of a difference table.
        assert!(!md.contains("VS oracle"));
    }

    #[test]
    fn sensitivity_variants_get_their_own_tables() {
        let runs = vec![
            single("outage-5s", "android", "mars-2017", 0, Some(5.4), 0.0),
            single("outage-5s/fit", "android", "mars-2017", 0, Some(6.4), 0.0),
            single("outage-5s", "android", "okhttp-2017-60s", 0, Some(7.4), 0.0),
            single(
                "outage-5s/fit",
                "android",
                "okhttp-2017-60s",
                0,
                Some(7.4),
                0.0,
            ),
        ];
        let md = all_tables(&runs);
        assert_eq!(
            cells(&md, "android: mars-2017 VS")[1],
            ["5s 100% Loss", "2.00"]
        );
        assert_eq!(
            cells(&md, "android (fit): mars-2017 VS")[1],
            ["5s 100% Loss", "1.00"]
        );
    }

    #[test]
    fn negative_difference_when_the_second_client_wins() {
        let a = single("outage-5s", "android", "mars-2017", 0, Some(5.45), 0.0);
        let b = single("outage-5s", "android", "okhttp-2017", 0, Some(5.41), 0.0);
        assert_eq!(diff_cell(&a, &b), "-0.04");
        let f = single("outage-5s", "android", "mars-2017", 0, None, 30.0);
        assert_eq!(diff_cell(&f, &b), "30.00 fail VS 5.41 suc");
        assert_eq!(diff_cell(&f, &f), "30.00 fail VS 30.00 fail");
    }

    #[test]
    fn pairs_put_own_engines_first() {
        let p = sensitivity_pairs(&["stn", "mars-2017", "okhttp-2017", "oracle"]);
        assert_eq!(
            p,
            vec![
                ("stn", "okhttp-2017"),
                ("mars-2017", "okhttp-2017"),
                ("stn", "mars-2017")
            ]
        );
    }

    #[test]
    fn size_tables_have_the_published_2x2_shape() {
        let mut runs = Vec::new();
        for net in ["3g", "2g"] {
            for client in ["stn", "nsurlsession"] {
                let mut r = rec(
                    "request_size",
                    &format!("{net}/64KiB-request"),
                    "ios",
                    client,
                    0,
                );
                r.mean_s = 2.4;
                r.total_s = 120.0;
                runs.push(r);
            }
        }
        let md = all_tables(&runs);
        assert_eq!(
            cells(
                &md,
                "request_size — ios 64KiB-request: mean and total time, s"
            ),
            [
                ["Network", "stn", "nsurlsession"],
                [
                    "3g",
                    "mean 2.40 s, total 120.00 s",
                    "mean 2.40 s, total 120.00 s"
                ],
                [
                    "2g",
                    "mean 2.40 s, total 120.00 s",
                    "mean 2.40 s, total 120.00 s"
                ],
            ]
        );
    }

    #[test]
    fn notes_are_listed_once_per_client() {
        let mut a = rec("loss", "3g", "ios", "stn-tuned", 0);
        a.note = Some("TUNED".into());
        let mut b = rec("loss", "2g", "ios", "stn-tuned", 0);
        b.note = Some("TUNED".into());
        let md = all_tables(&[a, b, rec("loss", "3g", "ios", "stn", 0)]);
        assert_eq!(md.matches("- `stn-tuned`: TUNED").count(), 1);
    }

    #[test]
    fn scenario_numbers() {
        assert_eq!(loss_percent("2g+2.5%"), Some(2.5));
        assert_eq!(first_number("outage-7.5s"), Some(7.5));
        assert_eq!(first_number("r."), None);
    }
}
