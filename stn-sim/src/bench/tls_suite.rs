//! Suite `tls` (issue 12 point 4): the loss and sensitivity suites with
//! TLS 1.3 on every connection ([`crate::tls`]), gated per cell like the
//! condition matrix ([`crate::bench::gate`]).
//!
//! - **loss cells** (`tls loss-P% LINK`): the "N% Loss" path (60 ms RTT)
//!   at 0 / 10 / 30 / 50 % loss both ways, [`loss_calls`] sequential
//!   successes at retry 0 (as in the loss suite);
//! - **sensitivity cells** (`tls outage-Rs LINK`): one call at t = 0
//!   through 100 % loss for R = 5 … 40 s, then the normal network, at the
//!   default retry count (as in the sensitivity suite);
//!
//! each on the three TCP stacks and, for LINK, a fresh connection per call
//! (`fresh`: every call pays TCP and a TLS handshake, resumed from the
//! second call on), keep-alive (`keepalive`: a reused connection pays no
//! handshake) and the long link (`long`: the engines' one connection; the
//! peers keep-alive). Clients: `stn`, `mars-2017`, `mars`, the platform's
//! peer as benchmarked and as recommended, and the oracle (whose first
//! call pays the full handshake, as every client's does), over
//! [`crate::bench::matrix::SEEDS`] seeds.
//!
//! Suite `tls_idempotent` (opt-in: `--suite tls_idempotent`, not in a
//! default run) is [`idempotent_cells`]: the fresh-connection loss cells
//! again (`tls-idempotent loss-P% fresh`) with calls that are idempotent:
//! the servers enable early data and every task allows it, so a client
//! that sends early data (stn's profile; not the Mars profiles, not the
//! peers) sends each resumed call's request with its ClientHello. Each cell
//! runs on its `tls` twin's seeds, so the two differ by early data alone.

use std::fmt::Write as _;

use stn_proto::Instant;

use crate::bench::gate::{
    evidence_and_cause, miss_line, verdict_row, verdicts_in, CellVerdict, FAIL_ALLOWANCE_PER_100,
};
use crate::bench::matrix::{Cell, LinkKind, LINKS, PLATFORMS};
use crate::bench::record::RunRecord;
use crate::bench::scenario::{normal_network, Candidate};
use crate::bench::Suite;
use crate::path::PathSchedule;
use crate::preset::Preset;

/// Loss rates of the loss cells, %.
pub const LOSS_PCT: [u32; 4] = [0, 10, 30, 50];

/// Outage lengths of the sensitivity cells, s.
pub const OUTAGE_S: [u64; 8] = [5, 10, 15, 20, 25, 30, 35, 40];

/// Successes per loss cell and seed.
pub fn loss_calls(quick: bool) -> u64 {
    if quick {
        10
    } else {
        20
    }
}

fn link_label(link: LinkKind) -> &'static str {
    match link {
        LinkKind::Fresh => "fresh",
        LinkKind::KeepAlive => "keepalive",
        LinkKind::Long => "long",
    }
}

fn cell(name: String, path: PathSchedule, platform: crate::bench::scenario::Platform) -> Cell {
    Cell {
        row: None,
        rtt: normal_network().base_rtt(),
        path,
        candidates: vec![Candidate::Live],
        platform,
        link: LinkKind::Fresh,
        retry: None,
        name,
        calls: None,
        suite: Suite::Tls,
        tls: true,
        early_data: false,
        twin: None,
    }
}

/// The loss cells.
pub fn loss_cells(quick: bool) -> Vec<Cell> {
    let mut v = Vec::new();
    for p in LOSS_PCT {
        for link in LINKS {
            for platform in PLATFORMS {
                let cond = Preset::LossPercent(f64::from(p)).conditions();
                let mut c = cell(
                    format!("tls loss-{p}% {}", link_label(link)),
                    PathSchedule::constant(cond),
                    platform,
                );
                c.link = link;
                c.retry = Some(0);
                c.calls = Some(loss_calls(quick));
                v.push(c);
            }
        }
    }
    v
}

/// The sensitivity cells (the keep-alive link is left out: a single call
/// has no connection to reuse, so it is the fresh cell again).
pub fn sensitivity_cells() -> Vec<Cell> {
    let mut v = Vec::new();
    for r in OUTAGE_S {
        for link in [LinkKind::Fresh, LinkKind::Long] {
            for platform in PLATFORMS {
                let path =
                    PathSchedule::outage(normal_network(), Instant::ZERO, Instant::from_secs(r));
                let mut c = cell(
                    format!("tls outage-{r}s {}", link_label(link)),
                    path,
                    platform,
                );
                c.link = link;
                v.push(c);
            }
        }
    }
    v
}

/// Every cell of the suite: the loss cells, then the sensitivity cells.
pub fn cells(quick: bool) -> Vec<Cell> {
    let mut v = loss_cells(quick);
    v.extend(sensitivity_cells());
    v
}

/// The verdicts on every `tls` cell that has records, in cell order.
pub fn verdicts(records: &[RunRecord]) -> Vec<CellVerdict> {
    verdicts_in(records, Suite::Tls, &cells(false))
}

/// Suite `tls_idempotent`: the fresh-connection loss cells with
/// idempotent calls (servers enable early data, tasks allow it), each on
/// the seeds of its `tls` twin. The keep-alive and long-link cells are
/// left out (a reused connection and the long link never send early), and
/// so are the sensitivity cells (their one call has no ticket to resume).
pub fn idempotent_cells(quick: bool) -> Vec<Cell> {
    loss_cells(quick)
        .into_iter()
        .filter(|c| c.link == LinkKind::Fresh)
        .map(|mut c| {
            let twin = c.name.clone();
            c.name = twin.replacen("tls ", "tls-idempotent ", 1);
            c.suite = Suite::TlsIdempotent;
            c.early_data = true;
            c.twin = Some(twin);
            c
        })
        .collect()
}

/// The verdicts on every `tls_idempotent` cell that has records.
pub fn idempotent_verdicts(records: &[RunRecord]) -> Vec<CellVerdict> {
    verdicts_in(records, Suite::TlsIdempotent, &idempotent_cells(false))
}

/// A missed cell's line: the evidence from the runs (where stn's time and
/// failures went against the best other client), the traced cause
/// ([`crate::bench::gate::REASONS`]) and the command that replays stn's run
/// (a handshake timeout is `ConnectFailed(Other(-458760))`,
/// `TlsFailure::HandshakeTimeout`).
pub fn reason(v: &CellVerdict) -> String {
    format!(
        "{}; replay: `stn-sim trace --matrix-cell \"{}\" --client stn --run 0`",
        evidence_and_cause(v),
        v.key()
    )
}

fn table(out: &mut String, title: &str, verdicts: &[&CellVerdict]) {
    if verdicts.is_empty() {
        return;
    }
    let _ = writeln!(out, "### {title}\n");
    out.push_str("| tcp | cell | best other | stn s | best s | oracle s | stn / best | allowed | fail/100 stn / best (retry 0) | gate |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for v in verdicts {
        let _ = writeln!(out, "{}", verdict_row(v));
    }
    out.push('\n');
}

/// Every miss with its one-line reason, if any.
fn misses_section(out: &mut String, misses: &[&CellVerdict]) {
    if misses.is_empty() {
        return;
    }
    out.push_str("### Misses\n\n");
    for v in misses {
        let _ = writeln!(out, "{}", miss_line(v, &reason(v)));
    }
    out.push('\n');
}

/// Verdicts on the cells `verdicts_of` picks from `records`, and the
/// fewest seeds any of them had.
fn gated(
    records: &[&RunRecord],
    verdicts_of: fn(&[RunRecord]) -> Vec<CellVerdict>,
) -> (Vec<CellVerdict>, usize) {
    let owned: Vec<RunRecord> = records.iter().map(|r| (*r).clone()).collect();
    let all = verdicts_of(&owned);
    let seeds = all.iter().map(|v| v.stn.seeds).min().unwrap_or(0);
    (all, seeds)
}

/// The `tls` section of the report: the gate's counts, every cell with its
/// ratio, and every miss with its one-line reason.
pub fn tables(records: &[&RunRecord]) -> String {
    let (all, seeds) = gated(records, verdicts);
    let misses: Vec<&CellVerdict> = all.iter().filter(|v| !v.met()).collect();
    let mut out = format!(
        "TLS 1.3 on every connection (full handshake with a {} B certificate flight, \
         resumption with tickets per server name; `docs/sim-tls.md`). \
         Gate per cell over {seeds} seeds: stn ≤ best other × (1 + max(2 %, one RTT per call)); \
         at retry 0 stn's failed calls ≤ best other's + {FAIL_ALLOWANCE_PER_100} per 100 successes. \
         **{} cells, {} misses.**\n\n",
        crate::tls::SERVER_FLIGHT_FULL_LEN,
        all.len(),
        misses.len()
    );
    let loss: Vec<&CellVerdict> = all
        .iter()
        .filter(|v| v.scenario.contains(" loss-"))
        .collect();
    let sens: Vec<&CellVerdict> = all
        .iter()
        .filter(|v| v.scenario.contains(" outage-"))
        .collect();
    table(&mut out, "tls-loss: sequential calls at retry 0", &loss);
    table(
        &mut out,
        "tls-sensitivity: one call through an outage of R s from t = 0",
        &sens,
    );
    misses_section(&mut out, &misses);
    out
}

/// The `tls_idempotent` section: the gate per cell as in the `tls`
/// section, then how many requests each engine client sent early.
pub fn idempotent_tables(records: &[&RunRecord]) -> String {
    let (all, seeds) = gated(records, idempotent_verdicts);
    let misses: Vec<&CellVerdict> = all.iter().filter(|v| !v.met()).collect();
    let mut out = format!(
        "The `tls` suite's fresh-connection loss cells with idempotent calls: servers enable \
         TLS early data (tickets allow {} B), every task allows it; stn's profile sends a \
         resumed call's request with its ClientHello, the Mars profiles and the peers send \
         none (`docs/sim-tls.md`). Each cell runs on its `tls` twin's seeds. \
         Gate per cell over {seeds} seeds as in suite `tls`. **{} cells, {} misses.**\n\n",
        crate::tls::MAX_EARLY_DATA,
        all.len(),
        misses.len()
    );
    let rows: Vec<&CellVerdict> = all.iter().collect();
    table(
        &mut out,
        "tls-idempotent: sequential calls at retry 0, a fresh connection each",
        &rows,
    );
    out.push_str("### Requests sent as early data (all seeds)\n\n");
    out.push_str("| tcp | cell | client | early / calls |\n|---|---|---|---|\n");
    for v in &all {
        for client in ["stn", "mars-2017", "mars"] {
            let mine = records.iter().filter(|r| {
                r.platform == v.platform && r.scenario == v.scenario && r.client == client
            });
            let (early, calls) = mine.fold((0, 0), |(e, c), r| {
                (e + r.early_sends.unwrap_or(0), c + r.attempts)
            });
            if calls > 0 {
                let _ = writeln!(
                    out,
                    "| {} | {} | {client} | {early} / {calls} |",
                    v.platform, v.scenario
                );
            }
        }
    }
    out.push('\n');
    misses_section(&mut out, &misses);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use stn_proto::Duration;

    #[test]
    fn cell_names_are_unique_and_every_cell_runs_tls() {
        let cells = cells(true);
        assert_eq!(cells.len(), 4 * 3 * 3 + 8 * 2 * 3);
        let mut keys: Vec<String> = cells.iter().map(Cell::key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), cells.len());
        assert!(cells.iter().all(|c| c.tls && c.suite == Suite::Tls));
        let spec = cells[0].spec(&crate::bench::scenario::ClientKind::STN, 1, 0);
        assert!(spec.tls);
        assert_eq!(spec.suite, "tls");
        assert_eq!(cells[0].rtt, Duration::from_millis(60));
    }

    #[test]
    fn the_idempotent_cells_are_the_fresh_loss_cells_on_their_twins_seeds() {
        let idem = idempotent_cells(true);
        assert_eq!(idem.len(), LOSS_PCT.len() * PLATFORMS.len());
        for c in &idem {
            assert!(c.early_data && c.tls && c.suite == Suite::TlsIdempotent);
            assert!(c.name.starts_with("tls-idempotent loss-") && c.name.ends_with(" fresh"));
            let twin = loss_cells(true)
                .into_iter()
                .find(|t| Some(&t.name) == c.twin.as_ref() && t.platform == c.platform)
                .expect("a tls twin");
            let kind = crate::bench::scenario::ClientKind::STN;
            let (a, b) = (c.spec(&kind, 1, 2), twin.spec(&kind, 1, 2));
            assert_eq!(a.seed, b.seed);
            assert!(a.early_data && !b.early_data);
            assert_eq!(a.suite, "tls_idempotent");
        }
        // Not part of a default run.
        assert!(!Suite::ALL.contains(&Suite::TlsIdempotent));
        assert_eq!(
            Suite::from_name("tls_idempotent"),
            Some(Suite::TlsIdempotent)
        );
    }
}
