//! The engine op-sequence target: submits, cancels, connection
//! results, received bytes (valid, split anywhere, garbage), late events for
//! closed or unknown connections, resolve answers, network / app-state
//! changes and time advances, against a whole engine of every profile.

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;

use crate::engine::check::{ConnOp, World};
use crate::engine::{Event, Output};
use crate::io::IoAction;
use crate::long_link::IdentifyDecision;
use crate::net::NetworkKind;
use crate::profile::Profile;
use crate::time::Duration;

/// Most ops of one input that are run.
const MAX_OPS: usize = 200;
/// The input: a profile, engine set-up, and ops.
#[derive(Debug)]
struct EngineInput {
    setup: Setup,
    ops: Vec<Op>,
}

impl EngineInput {
    /// The set-up, then ops until the bytes run out (not `Vec`'s
    /// continue-flag encoding, under which random bytes give one or two ops).
    fn parse(data: &[u8]) -> Option<Self> {
        let mut u = Unstructured::new(data);
        let setup = Setup::arbitrary(&mut u).ok()?;
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            ops.push(Op::arbitrary(&mut u).ok()?);
        }
        Some(EngineInput { setup, ops })
    }
}

/// Engine set-up.
#[derive(Arbitrary, Debug)]
struct Setup {
    profile: ProfileChoice,
    seed: u64,
    /// Short link by host name (resolved) instead of IPs.
    hosts: bool,
    /// A long link is configured.
    long: bool,
    /// `max_queued_tasks` = 1 + this % 16 (small, so the cap is hit).
    max_queued: u8,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ProfileChoice {
    Mars2017,
    Mars,
    Stn,
}

/// One thing the application, the network or the clock does.
#[derive(Arbitrary, Debug, Clone)]
enum Op {
    Submit {
        channel: u8,
        priority: u8,
        retries: Option<u8>,
        flags: u8,
        body: u8,
    },
    /// Cancels the `n`-th submitted task (held or already finished).
    Cancel(u16),
    /// Something happens on the `pick`-th open connection.
    Conn {
        pick: u16,
        what: ConnOp,
    },
    /// A late event for a connection that ended (or was never opened): it
    /// must be ignored.
    Stale {
        pick: u16,
        what: ConnOp,
    },
    /// Connects every pending connection and answers every connected one.
    ServeAll,
    Resolve {
        pick: u16,
        fail: bool,
        n: u8,
    },
    Network(u8),
    Lost,
    Available(u8),
    Foreground(bool),
    Authed(bool),
    Identify(u8),
    /// A verdict on an awaited response (or on a task awaiting none).
    Judge {
        pick: u16,
        verdict: u8,
    },
    /// Steps through every deadline up to `ms` * 4 from now.
    Advance(u16),
    /// Calls `handle_timeout` late, at an arbitrary time, without stepping.
    Jump(u16),
    /// Calls `handle_timeout` with a `now` in the past (must be clamped).
    Backwards(u16),
    Shutdown,
}

fn profile(p: ProfileChoice) -> Profile {
    match p {
        ProfileChoice::Mars2017 => Profile::Mars2017,
        ProfileChoice::Mars => Profile::Mars,
        ProfileChoice::Stn => Profile::Stn,
    }
}

fn network(n: u8) -> NetworkKind {
    match n % 4 {
        0 => NetworkKind::Wifi,
        1 => NetworkKind::Mobile,
        2 => NetworkKind::Other,
        _ => NetworkKind::None,
    }
}

fn apply(w: &mut World, op: &Op) {
    match *op {
        Op::Submit {
            channel,
            priority,
            retries,
            flags,
            body,
        } => w.submit(channel, priority, retries, flags, body),
        Op::Cancel(i) => w.cancel(usize::from(i)),
        Op::Conn { pick, ref what } => w.conn(usize::from(pick), what.clone()),
        Op::Stale { pick, ref what } => w.stale(usize::from(pick), what),
        Op::ServeAll => w.serve_all(),
        Op::Resolve { pick, fail, n } => w.resolve(usize::from(pick), fail, n),
        Op::Network(n) => w.call(|e, now| e.network_changed(now, network(n))),
        Op::Lost => w.call(|e, now| e.network_lost(now)),
        Op::Available(n) => w.call(|e, now| e.network_available(now, network(n))),
        Op::Foreground(fg) => w.call(|e, now| e.set_foreground(now, fg)),
        Op::Authed(a) => w.call(|e, now| e.set_authed(now, a)),
        Op::Judge { pick, verdict } => w.judge(usize::from(pick), verdict),
        Op::Identify(k) => {
            let d = match k % 3 {
                0 => IdentifyDecision::Never,
                1 => IdentifyDecision::Next,
                _ => IdentifyDecision::Now {
                    body: Bytes::from_static(b"id"),
                    cmd_id: 99,
                },
            };
            w.call(|e, now| e.identify_answer(now, d));
        }
        Op::Advance(ms) => w.advance_to(w.now + Duration::from_millis(4 * u64::from(ms))),
        Op::Jump(ms) => w.jump_to(w.now + Duration::from_millis(2 * u64::from(ms))),
        Op::Backwards(ms) => w.jump_to(w.now - Duration::from_millis(u64::from(ms))),
        Op::Shutdown => w.shutdown(),
    }
}

/// Runs an arbitrary op list against an [`Engine`](crate::engine::Engine) of
/// any profile and checks (the checker, `engine::check`, is shared with the
/// engine's own proptest):
/// - every accepted task ends exactly once (`TaskFinished`), a refused submit
///   never (no id, nothing held); after the final shutdown all have ended;
/// - no action names a closed or unknown connection: `Send` only on one the
///   engine opened, that connected and has not been closed (by the engine or
///   by a failure / close event); `Close` once; every `Connect` a fresh id;
///   late events for ended or unknown connections are ignored;
/// - after every drain `poll_timeout` is not earlier than `now`;
/// - `handle_timeout` at the deadline makes progress (an action or a later
///   deadline), within a bounded number of steps;
/// - memory: held tasks ≤ `max_queued_tasks` and = accepted − finished;
///   in-flight caps; open connections ≤ 3 per short attempt + 3;
/// - nothing happens after shutdown (no connect, no deadline);
/// - determinism: a second run gives the same action trace.
pub fn engine_ops(data: &[u8]) {
    let Some(input) = EngineInput::parse(data) else {
        return;
    };
    let first = run(&input);
    let second = run(&input);
    assert!(first == second, "same inputs, different actions");
}

fn run(input: &EngineInput) -> Vec<Output> {
    let setup = &input.setup;
    let mut w = World::new(
        profile(setup.profile),
        setup.seed,
        setup.hosts,
        setup.long,
        1 + usize::from(setup.max_queued % 16),
    );
    for op in &input.ops {
        apply(&mut w, op);
    }
    w.finish();
    w.trace
}

/// What an input makes the engine do, for choosing seeds.
fn classify(data: &[u8]) -> Option<String> {
    let input = EngineInput::parse(data)?;
    let trace = run(&input);
    let profile = format!("{:?}", input.setup.profile).to_lowercase();
    let link = if input.setup.long { "long" } else { "short" };
    let finished = trace
        .iter()
        .filter(|a| matches!(a, Output::Event(Event::TaskFinished { .. })))
        .count();
    let ok = trace
        .iter()
        .filter(
            |a| matches!(a, Output::Event(Event::TaskFinished { outcome, .. }) if outcome.is_ok()),
        )
        .count();
    let sends = trace
        .iter()
        .filter(|a| matches!(a, Output::Io(IoAction::Send { .. })))
        .count();
    // The final shutdown ends every held task, so "failed" is any accepted
    // task that did not succeed.
    let shape = match (ok, sends, finished) {
        (1.., _, _) => "ok",
        (0, 1.., _) => "sends",
        (0, 0, 1..) => "failed",
        (0, 0, 0) => "idle",
    };
    Some(format!("{profile}_{link}_{shape}"))
}

/// Seed inputs: byte strings chosen so that every profile, with and without
/// a long link, is seen idle, sending, failing tasks and completing them.
pub(super) fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut seen = std::collections::BTreeMap::new();
    for bytes in super::random_inputs(0x454e_4749, 4000, 400) {
        if let Some(class) = classify(&bytes) {
            seen.entry(class).or_insert(bytes);
        }
    }
    seen.into_iter().collect()
}
