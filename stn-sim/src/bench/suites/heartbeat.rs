//! Suite `heartbeat` (opt-in: `--suite heartbeat`, not in a default run):
//! the long link's heartbeat against a NAT that forgets idle flows
//! ([`crate::middlebox`]), per hour of background.
//!
//! The phone starts in the foreground on the network `wifi:home`, its long
//! link connects, and after a minute the app goes to the background for 12
//! hours (6 with `--quick`). A NAT at the phone's edge forgets a flow idle
//! longer than its timeout (120, 300, 600 or 900 s); the forgotten flow's
//! next packet is dropped silently and the later ones meet an RST (`rst`)
//! or nothing (`black-hole`). The `switch` cells move the phone between two
//! networks with their own NATs every 2 hours: the app tells the engine the
//! network changed and its label, and every binding is lost. Now and then
//! (every 5 to 35 min, the same seeded times for every client) the app sends
//! a task on the long link.
//!
//! Per run: heartbeats (noops written: each wakes the radio) and
//! long-link connections per hour, link drops (lost while up, not by a
//! network change), tasks whose frame was written into a flow the NAT had
//! already forgotten, and per network the interval the record ended with
//! and the background hours until it last changed. Clients: `mars` (its
//! smart heartbeat on Android, a fixed 3.5 min on iOS, as Mars builds it)
//! and `stn`, on the published two platforms (the iOS TCP stack too).
//! Targets for stn: no more drops and no more dead-link tasks than Mars; on
//! every network an interval within 30 s below the NAT timeout (or its 10
//! min ceiling, Mars's `MaxHeartInterval`, when the NAT keeps flows longer),
//! reached in at most a third of the background time Mars takes to its own
//! value.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::SocketAddr;

use stn_proto::Rng;
use stn_proto::{Channel, Duration, Engine, Instant, LinkStatus, NetworkKind, Profile};

use crate::bench::client_kind::heartbeat_of_platform;
use crate::bench::long_server::LongLinkServerApp;
use crate::bench::platform::Platform;
use crate::bench::record::{HeartbeatFigures, NetworkFigures, RunRecord};
use crate::bench::run_spec::{LONG_PORT, REQUEST_LEN, SERVER};
use crate::bench::suite::{of_suite, run_seed, BenchOptions, Suite};
use crate::bench::targets::TargetCheck;
use crate::client::{ClientCx, SimClient};
use crate::clients::stn::{StnClient, StnClientConfig, WireLog};
use crate::middlebox::{AfterExpiry, Nat, NatConfig, NatSchedule};
use crate::path::PathSchedule;
use crate::preset::Preset;
use crate::report::chart::LineChart;
use crate::socket::{SocketEvent, SocketId};
use crate::workload::{CallClient, CallId, CallSpec};
use crate::Simulation;

/// Suite `heartbeat`.
#[derive(Clone, Copy, Debug)]
pub struct Heartbeat;

/// When the app goes to the background.
const BACKGROUND_AT: Instant = Instant::from_secs(60);
/// The NAT timeouts of the single-network cells, in seconds.
pub const NAT_TIMEOUTS: [u64; 4] = [120, 300, 600, 900];
/// How long a `switch` cell stays on each network.
const VISIT: Duration = Duration::from_secs(2 * 3600);
/// Both profiles' ceiling (Mars's `MaxHeartInterval`).
const CEILING: Duration = Duration::from_secs(600);
/// How far below the NAT timeout (or the ceiling) a learned interval may be.
const WITHIN: Duration = Duration::from_secs(30);

/// One network of a cell: from `from` on, the phone is on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Visit {
    /// The app's label of it.
    pub label: &'static str,
    /// Its kind.
    pub kind: NetworkKind,
    /// Its NAT's idle timeout.
    pub nat: Duration,
    /// When the phone moves onto it.
    pub from: Instant,
}

/// One scenario of the suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Its name in the records.
    pub name: String,
    /// The networks, in time order (the first from the start).
    pub visits: Vec<Visit>,
    /// What a forgotten flow's later packets meet.
    pub after: AfterExpiry,
}

impl Cell {
    /// The middlebox's schedule.
    fn schedule(&self) -> NatSchedule {
        let config = |v: &Visit| NatConfig {
            idle_timeout: v.nat,
            after_expiry: self.after,
        };
        let mut s = NatSchedule::constant(config(&self.visits[0]));
        for v in &self.visits[1..] {
            s = s.then_at(v.from, Some(config(v)));
        }
        s
    }

    /// Background time on `label` within `[BACKGROUND_AT, until)`.
    fn background_on(&self, label: &str, until: Instant, end: Instant) -> Duration {
        let mut total = Duration::ZERO;
        for (i, v) in self.visits.iter().enumerate() {
            let to = self.visits.get(i + 1).map_or(end, |n| n.from).min(until);
            let from = v.from.max(BACKGROUND_AT);
            if v.label == label && to > from {
                total += to - from;
            }
        }
        total
    }
}

fn home(nat: u64, from: Instant) -> Visit {
    Visit {
        label: "wifi:home",
        kind: NetworkKind::Wifi,
        nat: Duration::from_secs(nat),
        from,
    }
}

fn cellular(nat: u64, from: Instant) -> Visit {
    Visit {
        label: "mobile:carrier",
        kind: NetworkKind::Mobile,
        nat: Duration::from_secs(nat),
        from,
    }
}

/// How long the background lasts.
pub fn background_hours(quick: bool) -> u64 {
    if quick {
        6
    } else {
        12
    }
}

/// The suite's cells: each NAT timeout with either expiry, then two
/// network switches (with RSTs).
pub fn cells(quick: bool) -> Vec<Cell> {
    let mut out = Vec::new();
    for nat in NAT_TIMEOUTS {
        for after in [AfterExpiry::Reset, AfterExpiry::BlackHole] {
            out.push(Cell {
                name: format!("nat-{nat}s {}", after.name()),
                visits: vec![home(nat, Instant::ZERO)],
                after,
            });
        }
    }
    let end = Instant::ZERO + Duration::from_secs(background_hours(quick) * 3600);
    for (wifi, mobile) in [(900, 300), (600, 120)] {
        let mut visits = vec![home(wifi, Instant::ZERO)];
        let mut at = BACKGROUND_AT + VISIT;
        while at < end {
            let v = if visits.len() % 2 == 1 {
                cellular(mobile, at)
            } else {
                home(wifi, at)
            };
            visits.push(v);
            at += VISIT;
        }
        out.push(Cell {
            name: format!("switch home-{wifi}s/cell-{mobile}s rst"),
            visits,
            after: AfterExpiry::Reset,
        });
    }
    out
}

/// What the app does at an instant.
#[derive(Clone, Copy, Debug)]
enum Step {
    Background,
    Network(Visit),
    Task,
}

/// The app: the engine behind [`StnClient`], plus its script.
struct App {
    inner: StnClient,
    first: Visit,
    script: VecDeque<(Instant, Step)>,
    calls: u64,
    failed: u64,
    /// Start of each call in flight.
    started: std::collections::BTreeMap<CallId, Instant>,
    /// Sum of the calls' durations.
    busy: Duration,
    network_changes: Vec<Instant>,
}

impl App {
    fn wake(&self, cx: &mut ClientCx<'_>) {
        let engine = self.inner.engine().and_then(Engine::poll_timeout);
        let script = self.script.front().map(|(t, _)| *t);
        let next = match (engine, script) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        cx.set_wakeup(next);
    }

    fn collect(&mut self, now: Instant) {
        while let Some(o) = self.inner.poll_outcome() {
            if o.result.is_err() {
                self.failed += 1;
            }
            if let Some(t) = self.started.remove(&o.id) {
                self.busy += now - t;
            }
        }
    }
}

impl SimClient for App {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        let first = self.first;
        self.inner.with_engine(cx, |e, now| {
            e.set_network_label(now, first.label);
            e.network_changed(now, first.kind);
        });
        self.wake(cx);
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        self.inner.on_socket_event(cx, socket, event);
        self.collect(cx.now());
        self.wake(cx);
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        let now = cx.now();
        while let Some((_, step)) = self.script.front().copied().filter(|(t, _)| *t <= now) {
            self.script.pop_front();
            match step {
                Step::Background => self
                    .inner
                    .with_engine(cx, |e, now| e.set_foreground(now, false)),
                Step::Network(v) => {
                    self.network_changes.push(now);
                    self.inner.with_engine(cx, |e, now| {
                        e.set_network_label(now, v.label);
                        e.network_changed(now, v.kind);
                    });
                }
                Step::Task => {
                    let id = CallId(self.calls);
                    self.calls += 1;
                    self.started.insert(id, now);
                    self.inner.start_call(
                        cx,
                        id,
                        &CallSpec {
                            request_len: REQUEST_LEN,
                        },
                    );
                }
            }
        }
        self.collect(now);
        self.inner.on_wakeup(cx);
        self.collect(now);
        self.wake(cx);
    }

    fn is_finished(&self) -> bool {
        false
    }
}

/// The app's script in `cell`: the background, each network change, and
/// tasks at seeded times (5 to 35 min apart).
fn script(cell: &Cell, end: Instant, seed: u64) -> VecDeque<(Instant, Step)> {
    let mut steps = vec![(BACKGROUND_AT, Step::Background)];
    steps.extend(cell.visits[1..].iter().map(|v| (v.from, Step::Network(*v))));
    let mut rng = Rng::derive(seed, 0x7A5C);
    let mut at = BACKGROUND_AT;
    loop {
        at += Duration::from_secs(300 + rng.below(1800));
        if at >= end {
            break;
        }
        steps.push((at, Step::Task));
    }
    steps.sort_by_key(|(t, _)| *t);
    steps.into()
}

/// The engine client of `profile` on `platform`, its long link to the
/// server, every task on it.
fn engine(profile: Profile, platform: Platform, seed: u64) -> StnClient {
    let name = match profile {
        Profile::Stn => "stn",
        Profile::Mars => "mars",
        Profile::Mars2017 => "mars-2017",
    };
    let mut cfg = StnClientConfig::new(
        name,
        profile,
        vec![SERVER.ip()],
        SERVER.port(),
        Some(LONG_PORT),
        platform.stack(),
    );
    cfg.engine.set_seed(Rng::derive(seed, 0xE6).next_u64());
    cfg.channel = Channel::Long;
    cfg.retry_count = None;
    heartbeat_of_platform(&mut cfg.engine, platform);
    StnClient::new(cfg).keep_wire_log()
}

/// One run: `profile` on `platform` through `cell`.
pub fn run(cell: &Cell, profile: Profile, platform: Platform, seed: u64, quick: bool) -> RunRecord {
    let hours = background_hours(quick);
    let end = BACKGROUND_AT + Duration::from_secs(hours * 3600);
    let mut sim = Simulation::new(seed);
    sim.keep_trace_events(false);
    sim.add_host(
        SERVER.ip(),
        PathSchedule::constant(Preset::Lte.conditions()),
    );
    let long = SocketAddr::new(SERVER.ip(), LONG_PORT);
    let _ = sim.listen(long, LongLinkServerApp::new(100, Duration::ZERO));
    sim.set_middlebox(Some(Nat::new(cell.schedule())));
    let app = App {
        inner: engine(profile, platform, seed),
        first: cell.visits[0],
        script: script(cell, end, seed),
        calls: 0,
        failed: 0,
        started: std::collections::BTreeMap::new(),
        busy: Duration::ZERO,
        network_changes: Vec::new(),
    };
    let id = sim.add_client(app, platform.stack());
    sim.run_until(end);
    let app = sim.client(id);
    let log = app.inner.wire_log().cloned().unwrap_or_default();
    let figures = figures(cell, app, &log, end);
    let name = app.inner.config().name.clone();
    let violations = app.inner.violations();
    let server = sim.server_cost();
    RunRecord {
        suite: Heartbeat.name().to_owned(),
        scenario: cell.name.clone(),
        platform: platform.name().to_owned(),
        client: name,
        channel: "long".to_owned(),
        run: 0,
        successes: figures.tasks - figures.failed_tasks,
        attempts: figures.tasks,
        total_s: (end - BACKGROUND_AT).as_secs_f64(),
        mean_s: 0.0,
        p50_s: 0.0,
        p95_s: 0.0,
        p99_s: 0.0,
        completion_s: None,
        ok: violations.is_empty(),
        connects: Some(figures.connects),
        syns: None,
        server_syns: Some(server.syns),
        server_handshakes: Some(server.tcp_handshakes),
        server_tls_handshakes: None,
        wasted_handshakes: Some(server.wasted_handshakes),
        sim_s: Some((sim.now() - Instant::ZERO).as_secs_f64()),
        note: violations
            .first()
            .map(|v| format!("ENGINE CONTRACT VIOLATIONS ({}): {v}", violations.len())),
        early_sends: None,
        heartbeat: Some(figures),
    }
}

/// The run's figures from the app's counts and the wire log.
fn figures(cell: &Cell, app: &App, log: &WireLog, end: Instant) -> HeartbeatFigures {
    let background = |t: &Instant| *t >= BACKGROUND_AT;
    let heartbeats = log
        .writes
        .iter()
        .filter(|w| w.heartbeat && background(&w.at))
        .count() as u64;
    let dead_link_tasks = log
        .writes
        .iter()
        .filter(|w| !w.heartbeat && w.binding_alive == Some(false))
        .count() as u64;
    let mut connects = 0;
    let mut drops = 0;
    let mut up = false;
    for (t, status) in &log.link {
        match status {
            LinkStatus::Connected { .. } => {
                up = true;
                if background(t) {
                    connects += 1;
                }
            }
            LinkStatus::Disconnected | LinkStatus::Disabled => {
                if up && background(t) && !app.network_changes.contains(t) {
                    drops += 1;
                }
                up = false;
            }
            _ => {}
        }
    }
    let mut networks: Vec<NetworkFigures> = Vec::new();
    for v in &cell.visits {
        if networks.iter().any(|n| n.label == v.label) {
            continue;
        }
        networks.push(network(cell, log, v, end));
    }
    HeartbeatFigures {
        hours: (end - BACKGROUND_AT).as_secs_f64() / 3600.0,
        heartbeats,
        connects,
        drops,
        tasks: app.calls,
        dead_link_tasks,
        failed_tasks: app.failed,
        task_mean_s: app.busy.as_secs_f64() / (app.calls - app.started.len() as u64).max(1) as f64,
        networks,
    }
}

/// The record `v.label` ended with, and when it last changed.
fn network(cell: &Cell, log: &WireLog, v: &Visit, end: Instant) -> NetworkFigures {
    let mut last: Option<(Duration, bool)> = None;
    let mut changed = BACKGROUND_AT;
    for (t, state) in &log.heartbeat {
        let Some(s) = state.as_ref().filter(|s| s.network == v.label) else {
            continue;
        };
        let now = Some((s.learned, s.stable));
        if now != last {
            last = now;
            changed = *t;
        }
    }
    let (final_s, stable) = match last {
        Some((learned, stable)) => (Some(learned.as_secs_f64()), stable),
        None => (None, false),
    };
    NetworkFigures {
        label: v.label.to_owned(),
        nat_s: v.nat.as_secs_f64(),
        final_s,
        stable,
        converged_h: stable
            .then(|| cell.background_on(v.label, changed, end).as_secs_f64() / 3600.0),
    }
}

/// Whether `n` ended within [`WITHIN`] below its NAT timeout (or the
/// ceiling).
fn on_target(n: &NetworkFigures) -> bool {
    let target = n.nat_s.min(CEILING.as_secs_f64());
    n.stable
        && n.final_s
            .is_some_and(|f| f < target && f >= target - WITHIN.as_secs_f64())
}

impl Suite for Heartbeat {
    fn name(&self) -> &'static str {
        "heartbeat"
    }

    fn in_default_run(&self) -> bool {
        false
    }

    fn run(&self, opts: &BenchOptions, emit: &mut dyn FnMut(RunRecord)) {
        for cell in cells(opts.quick) {
            let seed = run_seed(opts.seed, self.name(), &cell.name, 0);
            for platform in Platform::ALL {
                for profile in [Profile::Mars, Profile::Stn] {
                    emit(run(&cell, profile, platform, seed, opts.quick));
                }
            }
        }
    }

    fn tables(&self, runs: &[RunRecord]) -> String {
        table(&of_suite(runs, self.name()))
    }

    fn charts(&self, _runs: &[RunRecord]) -> Vec<(String, LineChart)> {
        Vec::new()
    }

    fn in_headline(&self) -> bool {
        false
    }

    fn summary_section(&self, runs: &[RunRecord]) -> String {
        self.tables(runs)
    }

    fn targets(&self, r: &RunRecord, records: &[RunRecord]) -> Vec<TargetCheck> {
        targets(r, records)
    }
}

fn figures_of(r: &RunRecord) -> Option<&HeartbeatFigures> {
    r.heartbeat.as_ref()
}

/// stn's targets against `mars` in the same cell and platform.
fn targets(r: &RunRecord, records: &[RunRecord]) -> Vec<TargetCheck> {
    let Some(stn) = figures_of(r) else {
        return Vec::new();
    };
    // Mars learns on Android only: its figures there are what its
    // algorithm achieves, on either platform's stn run.
    let learning = Platform::Android.name();
    let Some(mars) = records
        .iter()
        .find(|m| {
            m.suite == r.suite
                && m.scenario == r.scenario
                && m.platform == learning
                && m.client == "mars"
        })
        .and_then(figures_of)
    else {
        return Vec::new();
    };
    let check = |target: &str, measured: f64, bound: f64, detail: String| {
        TargetCheck::of_run(r, target.to_owned(), measured, bound, detail)
    };
    let mut out = vec![
        check(
            "link drops vs mars (android)",
            stn.drops as f64,
            mars.drops as f64,
            format!("stn {} mars {}", stn.drops, mars.drops),
        ),
        check(
            "dead-link tasks vs mars (android)",
            stn.dead_link_tasks as f64,
            mars.dead_link_tasks as f64,
            format!("stn {} mars {}", stn.dead_link_tasks, mars.dead_link_tasks),
        ),
    ];
    for n in &stn.networks {
        let m = mars.networks.iter().find(|m| m.label == n.label);
        out.push(TargetCheck {
            met: on_target(n),
            ..check(
                &format!("{} interval within 30 s below the NAT", n.label),
                n.final_s.unwrap_or(f64::INFINITY),
                n.nat_s.min(CEILING.as_secs_f64()),
                format!("stable {}", n.stable),
            )
        });
        // Mars's own convergence time, where it has one (a Mars record that
        // never settles, or a fixed interval, bounds nothing).
        if let (Some(mine), Some(theirs)) = (n.converged_h, m.and_then(|m| m.converged_h)) {
            out.push(check(
                &format!("{} time to converge vs mars (android) / 3", n.label),
                mine,
                theirs / 3.0,
                format!("stn {mine:.2} h, mars {theirs:.2} h"),
            ));
        }
    }
    out
}

fn per_hour(n: u64, hours: f64) -> String {
    format!("{:.1}", n as f64 / hours.max(1e-9))
}

fn interval(n: &NetworkFigures) -> String {
    match (n.final_s, n.stable) {
        (None, _) => "fixed 210".to_owned(),
        (Some(f), true) => format!("{f:.0}"),
        (Some(f), false) => format!("{f:.0} (learning)"),
    }
}

fn converged(n: &NetworkFigures) -> String {
    match (n.final_s, n.converged_h) {
        (None, _) => "–".to_owned(),
        (_, Some(h)) => format!("{:.0}", h * 60.0),
        (_, None) => "never".to_owned(),
    }
}

/// The suite's table: per cell and platform, Mars's and stn's figures
/// side by side.
fn table(runs: &[&RunRecord]) -> String {
    let hours = runs
        .iter()
        .find_map(|r| figures_of(r))
        .map_or(0.0, |f| f.hours);
    let mut out = format!(
        "The long link against a NAT at the phone's edge that forgets a flow idle longer \
         than its timeout (the next packet is lost, later ones meet an RST or a black hole), \
         {hours:.0} h in the background, tasks on the long link every 5–35 min; `switch` \
         cells change network every 2 h. Each cell: `mars / stn`. Heartbeats and \
         connects per hour of background; drops: the link lost while up (not by a network \
         change); dead-link tasks: task frames written into a forgotten flow; interval: what \
         the record ended with (s); converged: background minutes on that network until it \
         last changed (`never`: still learning). Mars runs its smart heartbeat on Android \
         only: on iOS it keeps 210 s (`docs/heartbeat.md`).\n\n"
    );
    out.push_str(
        "| tcp | cell | network (NAT) | heartbeats/h | connects/h | drops | dead-link tasks (of) | failed tasks | task mean (s) | interval (s) | converged (min) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in runs {
        if !keys.contains(&(r.scenario.as_str(), r.platform.as_str())) {
            keys.push((r.scenario.as_str(), r.platform.as_str()));
        }
    }
    for (scenario, platform) in keys {
        let of = |client: &str| {
            runs.iter()
                .find(|r| r.scenario == scenario && r.platform == platform && r.client == client)
                .and_then(|r| figures_of(r))
        };
        let (Some(m), Some(s)) = (of("mars"), of("stn")) else {
            continue;
        };
        let pair = |a: String, b: String| format!("{a} / {b}");
        // The run's own figures, on its first network's row.
        let run_cells = [
            pair(
                per_hour(m.heartbeats, m.hours),
                per_hour(s.heartbeats, s.hours),
            ),
            pair(per_hour(m.connects, m.hours), per_hour(s.connects, s.hours)),
            pair(m.drops.to_string(), s.drops.to_string()),
            format!(
                "{} / {} ({})",
                m.dead_link_tasks, s.dead_link_tasks, s.tasks
            ),
            pair(m.failed_tasks.to_string(), s.failed_tasks.to_string()),
            pair(
                format!("{:.2}", m.task_mean_s),
                format!("{:.2}", s.task_mean_s),
            ),
        ];
        for (i, n) in s.networks.iter().enumerate() {
            let mn = m.networks.get(i);
            let (tcp, cell, figures) = if i == 0 {
                (platform, scenario, run_cells.join(" | "))
            } else {
                ("", "", [""; 6].join(" | "))
            };
            let _ = writeln!(
                out,
                "| {tcp} | {cell} | {} ({:.0} s) | {figures} | {} | {} |",
                n.label,
                n.nat_s,
                pair(mn.map_or_else(String::new, interval), interval(n)),
                pair(mn.map_or_else(String::new, converged), converged(n)),
            );
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cells_cover_every_timeout_both_expiries_and_two_switches() {
        let c = cells(true);
        assert_eq!(c.len(), NAT_TIMEOUTS.len() * 2 + 2);
        let switch = c.last().expect("a switch cell");
        assert_eq!(switch.visits.len(), 3, "6 h: home, cell, home");
        assert_eq!(switch.visits[1].from, BACKGROUND_AT + VISIT);
        assert_eq!(
            switch.background_on("wifi:home", Instant::MAX, Instant::from_secs(6 * 3600 + 60)),
            Duration::from_secs(4 * 3600)
        );
        assert!(crate::bench::suites::default_run().all(|s| s.name() != "heartbeat"));
        assert_eq!(
            crate::bench::suites::named("heartbeat").map(|s| s.name()),
            Some("heartbeat")
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_record() {
        let cell = &cells(true)[2];
        let a = run(cell, Profile::Stn, Platform::Android, 7, true);
        let b = run(cell, Profile::Stn, Platform::Android, 7, true);
        assert_eq!(a, b);
        assert!(a.ok, "{:?}", a.note);
    }
}
