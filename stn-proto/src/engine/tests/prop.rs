//! The engine's state-machine property test: random submits, cancels,
//! connects that succeed, fail or hang, received bytes (valid, split anywhere,
//! garbage), late events for ended connections, resolve answers, network and
//! app-state changes, and time advances. After every step it checks the engine's invariants:
//!
//! - every task ends at most once, and (after the final shutdown) exactly once;
//! - no action names a connection that is closed (or was never opened), and
//!   every `Connect` uses a fresh id;
//! - `poll_timeout` is never earlier than `now` after a drain;
//! - `handle_timeout` at the deadline always makes progress (an action, or a
//!   later deadline);
//! - queues and buffers stay within their caps.
//!
//! The model and the checks are `engine::check::World`, shared with the
//! `engine_ops` fuzz target; this file only generates the ops.

use bytes::Bytes;
use proptest::prelude::*;

use crate::engine::check::{ConnOp, World};
use crate::long_link::IdentifyDecision;
use crate::net::NetworkKind;
use crate::profile::Profile;
use crate::time::Duration;

#[derive(Clone, Debug)]
enum Op {
    Submit {
        channel: u8,
        priority: u8,
        retries: Option<u8>,
        flags: u8,
        body: u8,
    },
    Cancel(usize),
    /// Adds, removes, or submits a long task to one of three named links.
    AddLink(u8),
    RemoveLink(u8),
    LinkSubmit {
        link: u8,
        priority: u8,
        retries: Option<u8>,
        flags: u8,
        body: u8,
    },
    LinkIdentify(u8, u8),
    /// Something happens on the `pick`-th open connection.
    Conn {
        pick: usize,
        what: ConnOp,
    },
    /// A late event for an ended (or never opened) connection.
    Stale {
        pick: usize,
        what: ConnOp,
    },
    /// Connect every pending connection and answer every connected one.
    ServeAll,
    Resolve {
        pick: usize,
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
        pick: usize,
        verdict: u8,
    },
    /// Step through every deadline up to `ms` from now.
    Advance(u32),
    /// Call `handle_timeout` late, at an arbitrary time, without stepping.
    Jump(u32),
    /// Call `handle_timeout` with a `now` in the past (must be clamped).
    Backwards(u32),
    Shutdown,
}

fn conn_op() -> impl Strategy<Value = ConnOp> {
    prop_oneof![
        4 => Just(ConnOp::Connected),
        2 => (0u8..5).prop_map(ConnOp::Failed),
        5 => any::<u16>().prop_map(|split| ConnOp::Valid { split }),
        1 => proptest::collection::vec(any::<u8>(), 1..40).prop_map(ConnOp::Garbage),
        1 => (0u8..3).prop_map(ConnOp::Closed),
        1 => any::<u16>().prop_map(ConnOp::Early),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..3, 0u8..6, proptest::option::of(0u8..3), any::<u8>(), 0u8..16).prop_map(
            |(channel, priority, retries, flags, body)| Op::Submit {
                channel,
                priority,
                retries,
                flags,
                body
            }
        ),
        1 => any::<usize>().prop_map(Op::Cancel),
        1 => (0u8..3).prop_map(Op::AddLink),
        1 => (0u8..3).prop_map(Op::RemoveLink),
        3 => (0u8..3, 0u8..6, proptest::option::of(0u8..3), any::<u8>(), 0u8..16).prop_map(
            |(link, priority, retries, flags, body)| Op::LinkSubmit {
                link,
                priority,
                retries,
                flags,
                body
            }
        ),
        1 => (0u8..3, 0u8..3).prop_map(|(k, d)| Op::LinkIdentify(k, d)),
        2 => Just(Op::ServeAll),
        10 => (any::<usize>(), conn_op()).prop_map(|(pick, what)| Op::Conn { pick, what }),
        1 => (any::<usize>(), conn_op()).prop_map(|(pick, what)| Op::Stale { pick, what }),
        2 => (any::<usize>(), any::<bool>(), 0u8..5).prop_map(|(pick, fail, n)| Op::Resolve {
            pick,
            fail,
            n
        }),
        1 => (0u8..4).prop_map(Op::Network),
        1 => Just(Op::Lost),
        1 => (0u8..3).prop_map(Op::Available),
        1 => any::<bool>().prop_map(Op::Foreground),
        1 => any::<bool>().prop_map(Op::Authed),
        1 => (0u8..3).prop_map(Op::Identify),
        3 => (any::<usize>(), 0u8..5).prop_map(|(pick, verdict)| Op::Judge { pick, verdict }),
        5 => (0u32..40_000).prop_map(Op::Advance),
        1 => (0u32..10_000).prop_map(Op::Backwards),
        1 => (0u32..90_000).prop_map(Op::Jump),
        1 => (0u8..20).prop_map(|k| if k == 0 { Op::Shutdown } else { Op::Jump(u32::from(k) * 10) }),
    ]
}

fn network(n: u8) -> NetworkKind {
    match n % 4 {
        0 => NetworkKind::Wifi,
        1 => NetworkKind::Mobile,
        2 => NetworkKind::Other,
        _ => NetworkKind::None,
    }
}

fn identify(k: u8) -> IdentifyDecision {
    match k {
        0 => IdentifyDecision::Never,
        1 => IdentifyDecision::Next,
        _ => IdentifyDecision::Now {
            body: Bytes::from_static(b"id"),
            cmd_id: 99,
        },
    }
}

fn apply(w: &mut World, op: Op) {
    match op {
        Op::Submit {
            channel,
            priority,
            retries,
            flags,
            body,
        } => w.submit(channel, priority, retries, flags, body),
        Op::Cancel(i) => w.cancel(i),
        Op::AddLink(k) => w.add_link(k),
        Op::RemoveLink(k) => w.remove_link(k),
        Op::LinkSubmit {
            link,
            priority,
            retries,
            flags,
            body,
        } => w.submit_on_link(link, priority, retries, flags, body),
        Op::LinkIdentify(k, d) => w.link_identify(k, identify(d)),
        Op::Conn { pick, what } => w.conn(pick, what),
        Op::Stale { pick, what } => w.stale(pick, &what),
        Op::ServeAll => w.serve_all(),
        Op::Resolve { pick, fail, n } => w.resolve(pick, fail, n),
        Op::Network(n) => w.call(|e, now| e.network_changed(now, network(n))),
        Op::Lost => w.call(|e, now| e.network_lost(now)),
        Op::Available(n) => w.call(|e, now| e.network_available(now, network(n))),
        Op::Foreground(fg) => w.call(|e, now| e.set_foreground(now, fg)),
        Op::Authed(a) => w.call(|e, now| e.set_authed(now, a)),
        Op::Identify(k) => {
            let d = identify(k);
            w.call(|e, now| e.identify_answer(now, d));
        }
        Op::Judge { pick, verdict } => w.judge(pick, verdict),
        Op::Advance(ms) => w.advance_to(w.now + Duration::from_millis(u64::from(ms))),
        Op::Jump(ms) => w.jump_to(w.now + Duration::from_millis(u64::from(ms))),
        Op::Backwards(ms) => w.jump_to(w.now - Duration::from_millis(u64::from(ms))),
        Op::Shutdown => w.shutdown(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn engine_invariants_hold_under_random_inputs(
        profile in 0u8..3,
        seed in any::<u64>(),
        hosts in any::<bool>(),
        long in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..150),
    ) {
        let profile = Profile::ALL[usize::from(profile)];
        let mut w = World::new(profile, seed, hosts, long, 12);
        for op in ops {
            apply(&mut w, op);
        }
        w.finish();
    }
}

/// The same random run twice gives the same action trace.
#[test]
fn random_runs_are_deterministic() {
    fn trace(seed: u64) -> Vec<String> {
        let mut w = World::new(Profile::Stn, seed, true, true, 12);
        let mut out = Vec::new();
        for i in 0..40u32 {
            apply(
                &mut w,
                Op::Submit {
                    channel: (i % 3) as u8,
                    priority: (i % 6) as u8,
                    retries: Some(1),
                    flags: 0,
                    body: (i % 4) as u8,
                },
            );
            apply(
                &mut w,
                Op::Conn {
                    pick: i as usize,
                    what: if i % 3 == 0 {
                        ConnOp::Failed(0)
                    } else {
                        ConnOp::Connected
                    },
                },
            );
            apply(
                &mut w,
                Op::Resolve {
                    pick: 0,
                    fail: false,
                    n: 2,
                },
            );
            apply(&mut w, Op::Advance(1_500));
            out.push(format!("{:?} {:?}", w.e.poll_timeout(), w.e.task_count()));
        }
        w.finish();
        out.extend(w.trace.iter().map(|a| format!("{a:?}")));
        out
    }
    let first = trace(42);
    assert!(first.len() > 40, "the run did something");
    assert_eq!(first, trace(42));
}
