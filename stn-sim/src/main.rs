//! `stn-sim`: the deterministic simulator's command line.
//!
//! ```text
//! stn-sim bench [--quick] [--seed N] [--suite NAME]... [--no-tuned] [--out DIR]
//!               [--known-misses FILE] [--write-known-misses FILE]
//! stn-sim run SCENARIO.toml [--seed N] [--out DIR]
//! stn-sim trace [--seed N] [--scenario SCENARIO.toml | --matrix-cell KEY [--quick]] [--client NAME] [--run N]
//! stn-sim fleet [--scenario F.toml] [--clients N] [--fleet NAME]... [--tls] [--seed N] [--out DIR]
//! ```
//!
//! - `bench` runs the benchmark suites of `docs/stn-benchmark.md`
//!   (all of them unless `--suite` picks some; the opt-in suites
//!   `tls_idempotent`, TLS 0-RTT for idempotent calls, and `heartbeat`,
//!   the smart heartbeat against a NAT's idle timeout, only when picked), writes `report.md` (every published-style table), `report.json` and SVG charts into `--out`
//!   (default `target/stn-bench/`, cleared of the previous run's files
//!   first, so it holds one run), and prints a short summary on stdout:
//!   the headline table, targets and gates met and missed, where the
//!   report is (`--full` prints the whole report instead). Progress goes
//!   to stderr: a progress bar on a terminal, one line per run otherwise
//!   (logs); the speed line ends it. Stdout is the same for the same
//!   command.
//! - `bench --known-misses FILE` (the matrix and tls gates in CI) exits
//!   non-zero when a matrix or tls cell misses the gate and is not listed in FILE (see
//!   `stn_sim::bench::gate`); listed cells that now pass are named so the
//!   list can shrink; it refuses a list that names a cell with no traced
//!   cause in `stn-sim/miss-reasons.txt` (embedded: the report prints each
//!   miss with its cause). `--write-known-misses FILE` writes the current
//!   misses in that format.
//! - `run` runs a scenario file (format: `stn_sim::scenario`) and prints the
//!   same tables; `--out` also writes the report files.
//! - `trace` prints one run's simulator trace, one event per line, then its
//!   hash. Without `--scenario` it runs a built-in one (stn on 3G + 30 %
//!   loss, three calls); `--matrix-cell "android sweep outage-13.9s"`
//!   (or a tls cell, `--matrix-cell "ios tls loss-30% long"`)
//!   replays a matrix cell (its key as the gate prints it; `--run` is the
//!   seed index 0–4, `--quick` the quick size).
//! - `fleet` runs a fleet scenario (format: `stn_sim::fleet::scenario`;
//!   default: the built-in `stn-sim/scenarios/fleet.toml`, 10,000 clients
//!   through a 30 s outage): each fleet in turn against its own server,
//!   prints the per-fleet table, writes `fleet.md`, `fleet.json` and
//!   `fleet.svg` (the time series) into `--out` (default
//!   `target/stn-fleet/`). Wall time and peak memory go to stderr.
//!
//! The default seed is [`DEFAULT_SEED`] (1), so a bare `stn-sim bench`
//! always reproduces the same report.

// The CLI's job is printing; the workspace lints warn on print macros to
// keep them out of library code.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use stn_sim::bench::record::{Report, RunRecord};
use stn_sim::bench::suites::{self, Sensitivity};
use stn_sim::bench::{run_suite, BenchOptions, Suite};
use stn_sim::report::{self, table};
use stn_sim::scenario::{Scenario, DEFAULT_TRACE_SCENARIO};

/// The root seed when `--seed` is not given.
const DEFAULT_SEED: u64 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "stn-sim",
    version,
    about = "Deterministic lossy-network simulator for stn: the Mars STN benchmark, scenarios, traces",
    long_about = None,
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the benchmark suites; print the published-style tables; write
    /// report.md, report.json and SVG charts.
    Bench(BenchArgs),
    /// Run a scenario file (TOML; see the rustdoc of stn_sim::scenario and
    /// stn-sim/scenarios/example.toml) and print its tables.
    Run(RunArgs),
    /// Print one run's event trace (one event per line) and its hash.
    Trace(TraceArgs),
    /// Simulate fleets of clients sharing one server through an outage
    /// (docs/fleet.md); print the per-fleet figures, write the chart.
    Fleet(FleetArgs),
}

#[derive(Debug, Args)]
struct FleetArgs {
    /// The fleet scenario (TOML); default: the built-in one
    /// (stn-sim/scenarios/fleet.toml).
    #[arg(long, value_name = "F.toml")]
    scenario: Option<PathBuf>,
    /// Scale the groups to about this many clients in all.
    #[arg(long, value_name = "N")]
    clients: Option<u64>,
    /// Run only these fleets (repeatable): stn, mars, mars-2017, okhttp-5, mixed.
    #[arg(long = "fleet", value_name = "NAME")]
    fleets: Vec<String>,
    /// TLS on every connection (whatever the scenario says).
    #[arg(long)]
    tls: bool,
    /// Root seed (default: the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Directory for fleet.md, fleet.json and fleet.svg.
    #[arg(long, value_name = "DIR", default_value = "target/stn-fleet")]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// Fewer calls and runs: 50 successes instead of 500, 10 calls instead
    /// of 50, one sensitivity run instead of 3.
    #[arg(long)]
    quick: bool,
    /// Root seed; every run's seed derives from it.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Run only this suite (repeatable; the list is in the help text).
    #[arg(long = "suite", value_name = "NAME", value_parser = parse_suite, help = suite_help())]
    suites: Vec<&'static dyn Suite>,
    /// Leave out `stn-tuned` (stn with overridden constants, labelled).
    #[arg(long)]
    no_tuned: bool,
    /// Directory for report.md, report.json and the charts.
    #[arg(long, value_name = "DIR", default_value = "target/stn-bench")]
    out: PathBuf,
    /// Matrix and tls gate: exit non-zero when a matrix or tls cell misses
    /// and is not in this list (one `platform scenario` per line, `#`
    /// comments).
    #[arg(long, value_name = "FILE")]
    known_misses: Option<PathBuf>,
    /// Write the matrix and tls cells that miss, in the known-misses format.
    #[arg(long, value_name = "FILE")]
    write_known_misses: Option<PathBuf>,
    /// Print the whole report (report.md) on stdout instead of the summary.
    #[arg(long)]
    full: bool,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The scenario file.
    #[arg(value_name = "SCENARIO.toml")]
    scenario: PathBuf,
    /// Root seed.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Also write report.md and report.json into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct TraceArgs {
    /// Root seed.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// A scenario file; default: a built-in one (stn, 3G + 30 % loss, three calls).
    #[arg(long, value_name = "SCENARIO.toml")]
    scenario: Option<PathBuf>,
    /// Which of the scenario's clients to trace; default: its first one.
    #[arg(long, value_name = "NAME")]
    client: Option<String>,
    /// Which run of the scenario (each run has its own derived seed).
    #[arg(long, default_value_t = 0)]
    run: u32,
    /// A matrix cell instead of a scenario: its key (`platform scenario`,
    /// as the gate and the known-misses list print it).
    #[arg(long, value_name = "KEY", conflicts_with = "scenario")]
    matrix_cell: Option<String>,
    /// With `--matrix-cell`: the quick size (fewer calls), as `bench --quick`.
    #[arg(long, requires = "matrix_cell")]
    quick: bool,
}

/// `--suite`'s help: every suite of the registry, and which are opt-in.
fn suite_help() -> String {
    let names: Vec<String> = suites::ALL
        .iter()
        .map(|s| {
            if s.in_default_run() {
                s.name().to_owned()
            } else {
                format!("{} (opt-in)", s.name())
            }
        })
        .collect();
    format!(
        "Run only this suite (repeatable): {}. Default: every suite but the opt-in ones",
        names.join(", ")
    )
}

fn parse_suite(s: &str) -> Result<&'static dyn Suite, String> {
    suites::named(s).ok_or_else(|| {
        let names: Vec<&str> = suites::ALL.iter().map(|s| s.name()).collect();
        format!("unknown suite {s:?}; use one of: {}", names.join(", "))
    })
}

/// Wall-clock time since `start`, for the speed line only.
struct Stopwatch(std::time::Instant);

impl Stopwatch {
    // The simulator never reads a clock; the CLI measures how fast it ran
    // (the speed line), and nothing it measures enters a report file.
    #[allow(clippy::disallowed_methods)]
    fn start() -> Self {
        Stopwatch(std::time::Instant::now())
    }

    fn secs(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// Virtual seconds a record simulated (the bench's `sim_s`, else its total).
fn simulated_s(r: &RunRecord) -> f64 {
    r.sim_s.unwrap_or(r.total_s)
}

fn speed_line(runs: &[RunRecord], wall: f64) -> String {
    let sim: f64 = runs.iter().map(simulated_s).sum();
    format!(
        "speed: {sim:.0} simulated s in {wall:.2} wall-clock s = {:.0} simulated s per wall-clock s ({} runs)",
        sim / wall.max(1e-9),
        runs.len()
    )
}

fn progress_line(r: &RunRecord, at: f64) -> String {
    let what = if r.completion_s.is_some() || (r.attempts == 1 && r.suite == Sensitivity.name()) {
        table::completion_cell(r)
    } else {
        format!("{} s, {} attempts", table::secs(r.total_s), r.attempts)
    };
    format!(
        "[{at:8.1}s] {} {} {} {} r{}: {what}{}",
        r.suite,
        r.scenario,
        r.platform,
        r.client,
        r.run + 1,
        if r.ok { "" } else { " (goal missed)" }
    )
}

/// The suites' progress bar on stderr: hidden when stderr is not a
/// terminal (indicatif draws nothing there).
fn progress_bar(suites: usize) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(suites as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed:>4} [{bar:24}] {pos}/{len} suites · {prefix}: {wide_msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The canonical command line of a bench run (no `--out`: where the files
/// go does not change them).
fn bench_command(a: &BenchArgs) -> String {
    let mut c = String::from("stn-sim bench");
    if a.quick {
        c.push_str(" --quick");
    }
    c.push_str(&format!(" --seed {}", a.seed));
    for s in &a.suites {
        c.push_str(&format!(" --suite {}", s.name()));
    }
    if a.no_tuned {
        c.push_str(" --no-tuned");
    }
    c
}

fn bench(a: BenchArgs) -> Result<(), String> {
    let suites: Vec<&dyn Suite> = if a.suites.is_empty() {
        suites::default_run().collect()
    } else {
        // In the order given, each once.
        let mut v: Vec<&dyn Suite> = Vec::new();
        for s in &a.suites {
            if !v.iter().any(|x| x.name() == s.name()) {
                v.push(*s);
            }
        }
        v
    };
    let names: Vec<&str> = suites.iter().map(|s| s.name()).collect();
    eprintln!(
        "stn-sim bench: suites {} (seed {}{}) -> {}",
        names.join(", "),
        a.seed,
        if a.quick { ", quick" } else { "" },
        a.out.display()
    );
    let clock = std::rc::Rc::new(Stopwatch::start());
    let mut opts = BenchOptions::new(a.seed, a.quick);
    opts.tuned = !a.no_tuned;
    // A bar on a terminal; on a pipe or file the bar is hidden and each run
    // is a line (a log to read back).
    let bar = progress_bar(suites.len());
    let c = std::rc::Rc::clone(&clock);
    let b = bar.clone();
    opts.progress = Some(Box::new(move |r: &RunRecord| {
        if b.is_hidden() {
            eprintln!("{}", progress_line(r, c.secs()));
        } else {
            // The suite is the bar's prefix.
            b.set_message(format!("{} {} {}", r.scenario, r.platform, r.client));
        }
    }));
    let mut report = Report::new(a.seed);
    for suite in suites {
        let t0 = clock.secs();
        bar.set_prefix(suite.name());
        let runs = run_suite(suite, &opts);
        bar.inc(1);
        bar.suspend(|| {
            eprintln!(
                "suite {} done: {} runs in {:.1} s",
                suite.name(),
                runs.len(),
                clock.secs() - t0
            );
        });
        report.runs.extend(runs);
    }
    bar.finish_and_clear();
    report.misses = stn_sim::bench::gate::misses(&report.runs);
    let wall = clock.secs();
    let command = bench_command(&a);
    let files = report::write_report_dir(&a.out, &report, &command)
        .map_err(|e| format!("writing {}: {e}", a.out.display()))?;
    if a.full {
        print!("{}", report::report_markdown(&report, &command));
    } else {
        print!(
            "{}",
            report::summary::summary(&report, &command, &a.out.display().to_string())
        );
    }
    eprintln!("wrote {} files into {}", files.len(), a.out.display());
    eprintln!("{}", speed_line(&report.runs, wall));
    matrix_gate(&a, &report.runs, &command)
}

/// The per-cell gates against the known-misses list (`--known-misses`),
/// and the list of today's misses (`--write-known-misses`).
fn matrix_gate(a: &BenchArgs, runs: &[RunRecord], command: &str) -> Result<(), String> {
    use stn_sim::bench::gate;
    // Every gated suite's cells alike (their keys differ by suite: tls
    // cells' scenarios start with `tls `).
    let mut verdicts = Vec::new();
    for (suite, mine) in suites::gate_verdicts(runs) {
        eprintln!(
            "{} gate: {} cells, {} misses",
            suite.name(),
            mine.len(),
            mine.iter().filter(|v| !v.met()).count()
        );
        verdicts.extend(mine);
    }
    if let Some(path) = &a.write_known_misses {
        std::fs::write(path, gate::known_misses_file(&verdicts, command))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    let Some(path) = &a.known_misses else {
        return Ok(());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading the known-misses list {}: {e}", path.display()))?;
    let known = gate::parse_known_misses(&text);
    let untraced = gate::untraced(&known);
    if !untraced.is_empty() {
        return Err(format!(
            "{} lists misses with no traced cause in stn-sim/miss-reasons.txt: {}",
            path.display(),
            untraced.join(", ")
        ));
    }
    if verdicts.is_empty() {
        return Err(
            "--known-misses given but the matrix suite did not run (nor the tls suite)".into(),
        );
    }
    let (new, fixed) = gate::check_known(&verdicts, &known);
    for k in &fixed {
        eprintln!("gate: `{k}` now passes: remove it from {}", path.display());
    }
    if new.is_empty() {
        eprintln!(
            "gate: every miss is a known one ({} listed in {})",
            known.len(),
            path.display()
        );
        return Ok(());
    }
    for k in &new {
        eprintln!("gate: NEW MISS `{k}`");
    }
    Err(format!(
        "{} cell(s) miss the gate and are not in {}",
        new.len(),
        path.display()
    ))
}

fn run(a: RunArgs) -> Result<(), String> {
    let scenario = Scenario::from_path(&a.scenario).map_err(|e| e.to_string())?;
    let clock = Stopwatch::start();
    let runs = scenario.run(a.seed, |r| {
        eprintln!("{}", progress_line(&r.record, clock.secs()));
    });
    let wall = clock.secs();
    let command = format!("stn-sim run {} --seed {}", a.scenario.display(), a.seed);
    let mut out = format!(
        "# Scenario `{}`\n\n- command: `{command}`\n- seed: {}\n\n",
        scenario.name, a.seed
    );
    out.push_str(&scenario.tables(&runs));
    print!("{out}");
    if let Some(dir) = &a.out {
        let mut report = Report::new(a.seed);
        report.runs = runs.clone();
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (name, text) in [
            ("report.md", out),
            ("report.json", report::report_json(&report)),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    eprintln!("{}", speed_line(&runs, wall));
    Ok(())
}

/// The process's peak resident memory in bytes (Linux; `None` elsewhere).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The CPU seconds (user + system) this process used so far (Linux;
/// `None` elsewhere).
fn cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which is in parentheses).
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // USER_HZ is 100 on every Linux the project runs on.
    Some(ticks / 100.0)
}

fn fleet(a: FleetArgs) -> Result<(), String> {
    use stn_sim::fleet::{run, scenario::FleetScenario, summary};
    let mut sc = match &a.scenario {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            FleetScenario::parse(&text).map_err(|e| e.to_string())?
        }
        None => FleetScenario::builtin(),
    };
    if let Some(n) = a.clients {
        sc.scale_to(n);
    }
    if !a.fleets.is_empty() {
        sc.fleets.clone_from(&a.fleets);
    }
    sc.tls |= a.tls;
    if let Some(seed) = a.seed {
        sc.seed = seed;
    }
    // Check the overrides as a file would be checked.
    let text = toml::to_string(&sc).map_err(|e| e.to_string())?;
    let sc = FleetScenario::parse(&text).map_err(|e| e.to_string())?;
    let window = sc.outage_window();
    let mut runs = Vec::new();
    let mut rows = Vec::new();
    for f in &sc.fleets {
        let clock = Stopwatch::start();
        let cpu0 = cpu_secs().unwrap_or(0.0);
        let r = run::run_fleet(&sc, f);
        let row = summary::FleetSummary::of(&r, window);
        let wall = clock.secs();
        let cpu = cpu_secs().unwrap_or(0.0) - cpu0;
        eprintln!(
            "fleet {f}: {} clients, {:.0} virtual s, {} events in {wall:.1} s wall, \
             {cpu:.1} s CPU ({:.1} µs CPU per event, {:.2} ms CPU per client); \
             peak RSS so far {:.0} MiB",
            row.clients,
            row.sim_s,
            row.events,
            cpu * 1e6 / row.events.max(1) as f64,
            cpu * 1e3 / row.clients.max(1) as f64,
            peak_rss().unwrap_or(0) as f64 / (1024.0 * 1024.0),
        );
        rows.push(row);
        runs.push(r);
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let (t0, t1) = window;
    let cap = sc.capacity();
    let mut md = format!(
        "# Fleet `{}`\n\n- command: `{command}`\n- seed: {}; {} clients; TLS: {}\n\
         - outage: {:?} from {:.1} s to {:.1} s; calls from {:.1} s to {:.1} s, \
         retried {:.1} s after a failure, {} calls at most\n\
         - server: SYN backlog {}, accept queue {}, {} accepts/s, {:?} CPU per connection, \
         {:?} per TLS hello, {} worker(s)\n\n",
        sc.name,
        sc.seed,
        sc.clients(),
        sc.tls,
        sc.outage.kind,
        t0.as_secs_f64(),
        t1.as_secs_f64(),
        sc.calls.from_s,
        sc.calls.until_s,
        sc.calls.retry_after_s,
        sc.calls.max_calls,
        cap.syn_backlog,
        cap.accept_backlog,
        cap.accept_rate,
        cap.handshake_cost,
        cap.tls_cost,
        cap.workers,
    );
    md.push_str(&summary::table(&rows, sc.tls));
    md.push_str(
        "\nserved: seconds after the outage's end until that share of the clients with a \
         pending call were served; failed: calls that failed (the app calls again); \
         unserved: clients never served; peaks: per second, from the outage's end on.\n",
    );
    print!("{md}");
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let write = |name: &str, body: &str| {
        let p = a.out.join(name);
        std::fs::write(&p, body).map_err(|e| format!("{}: {e}", p.display()))
    };
    write("fleet.md", &md)?;
    write(
        "fleet.json",
        &serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?,
    )?;
    let svg = summary::chart_svg(&runs, &sc.name).map_err(|e| e.to_string())?;
    write("fleet.svg", &svg)?;
    println!("\nwrote {}/fleet.{{md,json,svg}}", a.out.display());
    Ok(())
}

fn trace(a: TraceArgs) -> Result<(), String> {
    if let Some(key) = &a.matrix_cell {
        // A cell of any suite gated per cell (tls keys start `… tls `).
        let cell = suites::find_cell(key, a.quick).ok_or_else(|| {
                format!(
                    "no matrix or tls cell {key:?} (keys are `platform scenario`, as report.md prints them)"
                )
            })?;
        let client = a.client.clone().unwrap_or_else(|| "stn".to_owned());
        let t = cell.trace(&client, a.seed, a.run)?;
        print_trace(
            &t,
            &format!(
                "matrix cell {key} client {client} seed {} run {}",
                a.seed, a.run
            ),
        );
        return Ok(());
    }
    let scenario = match &a.scenario {
        Some(p) => Scenario::from_path(p).map_err(|e| e.to_string())?,
        None => {
            Scenario::from_toml(DEFAULT_TRACE_SCENARIO, "built-in").map_err(|e| e.to_string())?
        }
    };
    if a.run >= scenario.runs {
        return Err(format!(
            "--run {} but the scenario has {} run(s) (0-based)",
            a.run, scenario.runs
        ));
    }
    let client = match &a.client {
        Some(c) => c.clone(),
        None => scenario
            .clients
            .iter()
            .find(|c| *c != "oracle")
            .cloned()
            .ok_or("the scenario has only the oracle, which has no packet trace")?,
    };
    let t = scenario.trace(&client, a.seed, a.run)?;
    print_trace(
        &t,
        &format!(
            "scenario {} client {client} seed {} run {}",
            scenario.name, a.seed, a.run
        ),
    );
    Ok(())
}

/// Prints a trace, one event per line, then `# {what}: …` and its hash.
fn print_trace(t: &stn_sim::bench::runner::TraceRun, what: &str) {
    let mut out = String::with_capacity(t.events.len() * 80);
    for e in &t.events {
        out.push_str(e);
        out.push('\n');
    }
    out.push_str(&format!(
        "# {what}: {} events, ended at {:?} ({:?})\ntrace hash: {:016x}\n",
        t.events.len(),
        t.end,
        t.outcome,
        t.hash
    ));
    print!("{out}");
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(a) => bench(a),
        Command::Run(a) => run(a),
        Command::Trace(a) => trace(a),
        Command::Fleet(a) => fleet(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_is_canonical() {
        let cli = Cli::try_parse_from([
            "stn-sim", "bench", "--out", "/tmp/x", "--suite", "loss", "--quick",
        ])
        .unwrap();
        let Command::Bench(a) = cli.command else {
            panic!("not bench")
        };
        assert_eq!(
            bench_command(&a),
            "stn-sim bench --quick --seed 1 --suite loss"
        );
    }

    #[test]
    fn unknown_suite_lists_the_names() {
        let err = Cli::try_parse_from(["stn-sim", "bench", "--suite", "nope"]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("unknown suite \"nope\"") && msg.contains("sensitivity"),
            "{msg}"
        );
    }

    #[test]
    fn speed_line_divides_simulated_by_wall_time() {
        let r: RunRecord = serde_json::from_value(serde_json::json!({
            "suite": "loss", "scenario": "3g", "platform": "ios", "client": "stn",
            "channel": "short", "run": 0, "successes": 1, "attempts": 1, "total_s": 10.0,
            "mean_s": 1.0, "p50_s": 1.0, "p95_s": 1.0, "p99_s": 1.0, "completion_s": null,
            "ok": true, "sim_s": 40.0
        }))
        .unwrap();
        assert_eq!(
            speed_line(&[r.clone(), r], 2.0),
            "speed: 80 simulated s in 2.00 wall-clock s = 40 simulated s per wall-clock s (2 runs)"
        );
    }
}
