//! The profiles against each other on a small lossy-network model: stn's
//! default must be at least as good as `mars` (and `mars_2017`) and better
//! when the link is lossy or coming back from an outage.
//!
//! The model is deliberately simple (the full one is stn-sim): every packet
//! is lost independently with probability `loss`, or always during an outage;
//! a TCP connect retransmits its SYN after 1, 3, 7, 15 s (Linux's 1 s initial
//! RTO, doubling); data is retransmitted after 1 s, doubling; the server
//! answers at once. The client is the Mars benchmark loop (reference §10):
//! short link only, one task at a time, `retry_count = 0`, the resolver
//! answering the same IP four times and banning disabled.

#![allow(clippy::print_stdout)] // the numbers are the point of these tests

use std::collections::BTreeMap;

use bytes::Bytes;
use std::net::IpAddr;
use stn_proto::ConnectError;
use stn_proto::Profile;
use stn_proto::Rng;
use stn_proto::{Channel, Task};
use stn_proto::{Config, Engine, Event, Input, Output};
use stn_proto::{ConnEvent, ConnId, IoAction};
use stn_proto::{Duration, Instant};

struct Net {
    loss: f64,
    rtt: Duration,
    outage_until: Instant,
    rng: Rng,
}

impl Net {
    fn delivered(&mut self, at: Instant) -> bool {
        at >= self.outage_until && !self.rng.chance(self.loss)
    }

    /// When a round trip started at `t` first gets through (both directions),
    /// retransmitting on `schedule`; `None` if it never does.
    fn round_trip(&mut self, t: Instant, schedule: &[u64]) -> Option<Instant> {
        for &s in schedule {
            let send = t + Duration::from_millis(s);
            let back = send + self.rtt / 2;
            if self.delivered(send) && self.delivered(back) {
                return Some(send + self.rtt);
            }
        }
        None
    }
}

const SYN: [u64; 5] = [0, 1_000, 3_000, 7_000, 15_000];
const DATA: [u64; 7] = [0, 1_000, 3_000, 7_000, 15_000, 31_000, 63_000];

struct Outcome {
    total: Duration,
    attempts: u32,
    successes: u32,
}

/// Runs the benchmark loop until `successes` tasks succeeded (or `limit` passed).
fn bench(profile: Profile, loss: f64, outage: Duration, successes: u32, seed: u64) -> Outcome {
    let ip: IpAddr = "10.0.0.1".parse().expect("ip");
    let mut config = Config::for_profile(profile).seed(seed);
    config.short_link_mut().ips = vec![ip; 4];
    config.short_link_mut().port = 8080;
    config.ban_mut().enabled = false;
    let t0 = Instant::from_secs(10);
    let mut net = Net {
        loss,
        rtt: Duration::from_millis(100),
        outage_until: t0 + outage,
        rng: Rng::derive(seed, 99),
    };
    let mut engine = Engine::new(t0, config);
    let mut now = t0;
    let mut events: BTreeMap<(Instant, u64), (ConnId, ConnEvent)> = BTreeMap::new();
    let mut seq = 0u64;
    let mut live: BTreeMap<ConnId, ()> = BTreeMap::new();
    let mut attempts = 0;
    let mut ok = 0;
    let limit = t0 + Duration::from_secs(4 * 3600);
    let task = || {
        Task::new(0, "/mars/hello2", Bytes::from_static(b"hello world!"))
            .channel(Channel::Short)
            .retry_count(0)
            .limit_frequency(false)
    };
    engine.submit(now, task()).expect("submit");
    loop {
        while let Some(a) = engine.poll_output() {
            match a {
                Output::Io(IoAction::Connect { conn, .. }) => {
                    live.insert(conn, ());
                    seq += 1;
                    match net.round_trip(now, &SYN) {
                        Some(t) => events.insert((t, seq), (conn, ConnEvent::Connected)),
                        None => events.insert(
                            (now + Duration::from_secs(31), seq),
                            (conn, ConnEvent::ConnectFailed(ConnectError::TimedOut)),
                        ),
                    };
                }
                Output::Io(IoAction::Send { conn, .. }) => {
                    seq += 1;
                    if let Some(t) = net.round_trip(now, &DATA) {
                        let body = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                        events.insert(
                            (t, seq),
                            (conn, ConnEvent::Received(Bytes::from_static(body))),
                        );
                    }
                }
                Output::Io(IoAction::Close { conn }) => {
                    live.remove(&conn);
                }
                Output::Event(Event::TaskFinished { outcome, .. }) => {
                    attempts += 1;
                    if outcome.is_ok() {
                        ok += 1;
                    }
                    if ok < successes {
                        engine.submit(now, task()).expect("submit");
                    }
                }
                _ => {}
            }
        }
        if ok >= successes || now > limit {
            break;
        }
        let next_event = events.keys().next().map(|k| k.0);
        let next_timer = engine.poll_timeout();
        let t = match (next_event, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        now = now.max(t);
        if next_event == Some(t) {
            let key = *events.keys().next().expect("event");
            let (conn, ev) = events.remove(&key).expect("event");
            if live.contains_key(&conn) {
                if matches!(ev, ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_)) {
                    live.remove(&conn);
                }
                engine.handle_input(now, Input::Conn { conn, event: ev });
            }
        } else {
            engine.handle_timeout(now);
        }
    }
    Outcome {
        total: now - t0,
        attempts,
        successes: ok,
    }
}

fn total(profile: Profile, loss: f64, seeds: u64) -> (Duration, u32) {
    let mut t = Duration::ZERO;
    let mut a = 0;
    for seed in 0..seeds {
        let o = bench(profile, loss, Duration::ZERO, 30, seed);
        assert_eq!(o.successes, 30, "{profile} at {loss} finished");
        t += o.total;
        a += o.attempts;
    }
    (t, a)
}

#[test]
fn stn_is_at_least_as_fast_as_mars_and_faster_under_loss() {
    for loss in [0.0, 0.1, 0.2, 0.3] {
        let (stn, stn_attempts) = total(Profile::Stn, loss, 6);
        let (mars, mars_attempts) = total(Profile::Mars, loss, 6);
        let (m17, _) = total(Profile::Mars2017, loss, 6);
        println!(
            "loss {loss}: stn {stn:?} ({stn_attempts} attempts), mars {mars:?} ({mars_attempts}), mars_2017 {m17:?}"
        );
        assert!(
            stn <= mars,
            "loss {loss}: stn {stn:?} slower than mars {mars:?}"
        );
        assert!(
            stn <= m17,
            "loss {loss}: stn {stn:?} slower than mars_2017 {m17:?}"
        );
        if loss >= 0.2 {
            assert!(
                stn.as_secs_f64() < 0.9 * mars.as_secs_f64(),
                "loss {loss}: stn {stn:?} not clearly faster than mars {mars:?}"
            );
        }
    }
}

/// Mean and worst delay from the end of the outage to the first success, over
/// outages of 2 s to 30 s in 0.7 s steps (so no profile's fixed stagger can
/// line up with the end of the outage by luck).
fn recovery(profile: Profile) -> (f64, f64) {
    let mut sum = 0.0;
    let mut worst = 0.0f64;
    let mut n = 0.0;
    for k in 0..40u64 {
        let outage = Duration::from_millis(2_000 + 700 * k);
        let o = bench(profile, 0.0, outage, 1, k);
        assert_eq!(o.successes, 1);
        let lag = (o.total.as_secs_f64() - outage.as_secs_f64()).max(0.0);
        sum += lag;
        worst = worst.max(lag);
        n += 1.0;
    }
    (sum / n, worst)
}

#[test]
fn stn_recovers_from_an_outage_faster_than_mars() {
    let (stn_mean, stn_worst) = recovery(Profile::Stn);
    let (mars_mean, mars_worst) = recovery(Profile::Mars);
    let (m17_mean, m17_worst) = recovery(Profile::Mars2017);
    println!(
        "recovery lag mean/worst: stn {stn_mean:.2}/{stn_worst:.2} s, mars {mars_mean:.2}/{mars_worst:.2} s, mars_2017 {m17_mean:.2}/{m17_worst:.2} s"
    );
    assert!(stn_mean < mars_mean && stn_mean < m17_mean);
    assert!(stn_worst <= mars_worst && stn_worst <= m17_worst);
}
