//! Script tests of the connection machine: two ends wired back to back,
//! a segment timeline in (which copies the path drops), the instants of the
//! retransmissions out. The expected instants come from the rules cited in
//! the machine (and `docs/sim-tcp.md`), worked through by hand. Timers
//! fire at their exact instants here (`TimerPolicy::Exact`) unless a test
//! says otherwise, so the instants are the rules' own; one test puts
//! Linux's timer wheel back.

use super::*;
use crate::tcp::TimerPolicy;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u64) -> Instant {
    Instant::from_millis(n)
}

/// Two ends wired back to back with a fixed one-way delay and a loss filter
/// per direction (by index of the segment sent, from 0).
struct Pair {
    now: Instant,
    a: TcpConn,
    b: Option<TcpConn>,
    b_stack: TcpStack,
    owd: Duration,
    in_flight: Vec<(Instant, bool, Segment)>,
    drop_a: Vec<usize>,
    drop_b: Vec<usize>,
    a_sends: Vec<(Instant, Segment)>,
    b_sends: Vec<(Instant, Segment)>,
    a_events: Vec<(Instant, SocketEvent)>,
    b_events: Vec<SocketEvent>,
    /// The server answers every chunk it receives with this many bytes.
    b_reply: Option<usize>,
}

impl Pair {
    fn new(owd_ms: u64, a_stack: TcpStack, drop_a: Vec<usize>, drop_b: Vec<usize>) -> Self {
        Self::with_timers(owd_ms, a_stack, drop_a, drop_b, TimerPolicy::Exact)
    }

    fn with_timers(
        owd_ms: u64,
        a_stack: TcpStack,
        drop_a: Vec<usize>,
        drop_b: Vec<usize>,
        timers: TimerPolicy,
    ) -> Self {
        Self::build(owd_ms, a_stack, drop_a, drop_b, timers, Cached::default())
    }

    /// The client's host has `cached` for the server.
    fn build(
        owd_ms: u64,
        mut a_stack: TcpStack,
        drop_a: Vec<usize>,
        drop_b: Vec<usize>,
        timers: TimerPolicy,
        cached: Cached,
    ) -> Self {
        a_stack.timers = timers;
        let a = TcpConn::connect(
            Instant::ZERO,
            addr("10.0.0.1:40000"),
            addr("10.0.0.2:80"),
            a_stack,
            cached,
        );
        let mut p = Pair {
            now: Instant::ZERO,
            a,
            b: None,
            b_stack: TcpStack {
                timers,
                ..TcpStack::linux_classic()
            },
            owd: ms(owd_ms),
            in_flight: Vec::new(),
            drop_a,
            drop_b,
            a_sends: Vec::new(),
            b_sends: Vec::new(),
            a_events: Vec::new(),
            b_events: Vec::new(),
            b_reply: None,
        };
        p.pump();
        p
    }

    fn linux(owd_ms: u64) -> Self {
        Self::new(owd_ms, TcpStack::linux_classic(), Vec::new(), Vec::new())
    }

    fn pump(&mut self) {
        loop {
            let mut moved = false;
            while let Some(s) = self.a.poll_transmit() {
                moved = true;
                let i = self.a_sends.len();
                self.a_sends.push((self.now, s.clone()));
                if !self.drop_a.contains(&i) {
                    self.in_flight.push((self.now + self.owd, true, s));
                }
            }
            while let Some(e) = self.a.poll_event() {
                self.a_events.push((self.now, e));
            }
            if let Some(b) = self.b.as_mut() {
                while let Some(s) = b.poll_transmit() {
                    moved = true;
                    let i = self.b_sends.len();
                    self.b_sends.push((self.now, s.clone()));
                    if !self.drop_b.contains(&i) {
                        self.in_flight.push((self.now + self.owd, false, s));
                    }
                }
                let mut replies = 0;
                while let Some(e) = b.poll_event() {
                    if matches!(e, SocketEvent::Data(_)) {
                        replies += 1;
                    }
                    self.b_events.push(e);
                }
                if let Some(n) = self.b_reply {
                    for _ in 0..replies {
                        b.send(self.now, &vec![5u8; n]).unwrap();
                        moved = true;
                    }
                }
            }
            if !moved {
                break;
            }
        }
    }

    fn run_until(&mut self, end: Instant) {
        loop {
            let next_pkt = self.in_flight.iter().map(|x| x.0).min();
            let next_timer = [
                self.a.poll_timeout(),
                self.b.as_ref().and_then(|b| b.poll_timeout()),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(t) = [next_pkt, next_timer].into_iter().flatten().min() else {
                break;
            };
            if t > end {
                break;
            }
            self.now = t;
            if let Some(i) = self.in_flight.iter().position(|x| x.0 == t) {
                let (_, to_b, seg) = self.in_flight.remove(i);
                if to_b {
                    match self.b.as_mut() {
                        Some(b) => b.handle_segment(t, &seg),
                        None => {
                            self.b = Some(TcpConn::accept(
                                t,
                                seg.dst,
                                &seg,
                                self.b_stack.clone(),
                                Cached::default(),
                            ))
                        }
                    }
                } else {
                    self.a.handle_segment(t, &seg);
                }
            } else {
                self.a.handle_timeout(t);
                if let Some(b) = self.b.as_mut() {
                    b.handle_timeout(t);
                }
            }
            self.pump();
        }
        self.now = end;
    }

    fn send_a(&mut self, data: &[u8]) {
        self.a.send(self.now, data).unwrap();
        self.pump();
    }

    /// When each copy of the client segment starting at `seq` with a
    /// payload left.
    fn a_copies(&self, seq: u64) -> Vec<Instant> {
        self.a_sends
            .iter()
            .filter(|(_, s)| s.seq == seq && !s.payload.is_empty())
            .map(|(t, _)| *t)
            .collect()
    }

    fn received_by_b(&self) -> Vec<u8> {
        self.b_events
            .iter()
            .filter_map(|e| match e {
                SocketEvent::Data(d) => Some(d.to_vec()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    fn connected_at(&self) -> Option<Instant> {
        self.a_events
            .iter()
            .find(|(_, e)| *e == SocketEvent::Connected)
            .map(|(t, _)| *t)
    }
}

#[test]
fn handshake_transfer_and_close() {
    let mut p = Pair::linux(50);
    p.run_until(at(100));
    assert_eq!(p.connected_at(), Some(at(100)));
    let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    p.send_a(&data);
    p.a.close(p.now);
    p.pump();
    p.run_until(at(5000));
    assert_eq!(p.received_by_b(), data);
    assert_eq!(p.b_events.first(), Some(&SocketEvent::Connected));
    assert_eq!(p.b_events.last(), Some(&SocketEvent::Closed));
    let now = p.now;
    p.b.as_mut().unwrap().close(now);
    p.pump();
    p.run_until(at(100_000));
    assert_eq!(p.a_events.last().map(|e| &e.1), Some(&SocketEvent::Closed));
    assert!(p.a.is_closed());
    assert!(p.b.as_ref().unwrap().is_closed());
}

/// Linux: a lost request on a connection whose handshake measured 200 ms.
/// The RTO is 3·RTT = 600 ms (`tcp_rtt_estimator`'s first sample), the
/// loss probe 2·srtt + 200 ms = 600 ms, capped at the RTO: the probe at
/// +600 ms; it restarts the RTO from itself, which fires 600 ms later and
/// doubles.
#[test]
fn linux_probe_then_rto_for_a_lost_request() {
    let mut p = Pair::new(100, TcpStack::linux_classic(), vec![2, 3], Vec::new());
    p.run_until(at(200));
    // Sent so far: SYN (0), ACK (1). The request (2) and the probe (3) are
    // lost; the RTO copy arrives.
    p.send_a(b"hello");
    p.run_until(at(10_000));
    assert_eq!(p.received_by_b(), b"hello");
    assert_eq!(p.a_copies(1), vec![at(200), at(800), at(1400)]);
}

/// Linux's floor on a short path (10 ms RTT): the first sample gives
/// rttvar = max(2·RTT, `TCP_RTO_MIN`) = 200 ms, so the RTO is
/// srtt + 200 ms = 210 ms (`tcp_set_rto`), and the loss probe's
/// 2·srtt + 200 ms = 220 ms (one segment out, `tcp_schedule_loss_probe`)
/// is capped at it: the probe at +210 ms, the RTO 210 ms after the probe,
/// then doubled (`inet_csk_reset_xmit_timer` with `icsk_backoff` 1).
#[test]
fn linux_minimum_rto_on_a_short_path() {
    let mut p = Pair::new(5, TcpStack::linux_classic(), vec![2, 3, 4], Vec::new());
    p.run_until(at(20));
    p.send_a(b"hello");
    p.run_until(at(10_000));
    assert_eq!(p.received_by_b(), b"hello");
    assert_eq!(p.a_copies(1), vec![at(20), at(230), at(440), at(860)]);
}

/// The same on Linux's timer wheel (HZ = 250): the probe armed at 200 ms
/// for 600 ms (150 jiffies, level 1, 8-jiffy buckets) fires at jiffy 208,
/// 832 ms; the RTO it re-arms for 600 ms expires at jiffy 358, bucket 360:
/// 1.44 s.
#[test]
fn linux_timers_fire_late_on_the_wheel() {
    let mut p = Pair::with_timers(
        100,
        TcpStack::linux_classic(),
        vec![2, 3],
        Vec::new(),
        TimerPolicy::LinuxHz250,
    );
    p.run_until(at(200));
    p.send_a(b"hello");
    p.run_until(at(10_000));
    assert_eq!(p.received_by_b(), b"hello");
    assert_eq!(p.a_copies(1), vec![at(200), at(832), at(1440)]);
}

/// Linux, with a cached RTT of 1 s for the server (`tcp_init_metrics`): the
/// handshake measured 200 ms, below the cache, so the first RTO is
/// 1 s + 2 s = 3 s while srtt stays 200 ms: the probe still goes at
/// +600 ms, the RTO 3 s after it. The copy that gets through is acked with
/// a 200 ms echo sample, which brings the RTO back to the estimator's.
#[test]
fn linux_cached_rtt_sets_the_first_rto() {
    let cached = Cached {
        rtt: Some(ms(1000)),
        rttvar: None,
    };
    let mut p = Pair::build(
        100,
        TcpStack::linux_classic(),
        vec![2, 3],
        Vec::new(),
        TimerPolicy::Exact,
        cached,
    );
    p.run_until(at(200));
    p.send_a(b"hello");
    p.run_until(at(10_000));
    assert_eq!(p.received_by_b(), b"hello");
    assert_eq!(p.a_copies(1), vec![at(200), at(800), at(3800)]);
    // A cache below the handshake's srtt changes nothing.
    let low = Cached {
        rtt: Some(ms(150)),
        rttvar: None,
    };
    let mut p = Pair::build(
        100,
        TcpStack::linux_classic(),
        vec![2, 3],
        Vec::new(),
        TimerPolicy::Exact,
        low,
    );
    p.run_until(at(200));
    p.send_a(b"hello");
    p.run_until(at(10_000));
    assert_eq!(p.a_copies(1), vec![at(200), at(800), at(1400)]);
}

/// What a finished connection reports to its host's cache: on Linux both
/// sides report their srtt once, when their FIN is acknowledged; a reset
/// connection reports nothing.
#[test]
fn linux_reports_srtt_when_the_connection_finishes() {
    let mut p = Pair::linux(50);
    p.run_until(at(100));
    p.send_a(b"hello");
    p.run_until(at(1000));
    assert_eq!(p.a.take_metrics(), None);
    p.a.close(p.now);
    p.pump();
    p.run_until(at(1200));
    let now = p.now;
    p.b.as_mut().unwrap().close(now);
    p.pump();
    p.run_until(at(2000));
    let srtt = |c: &TcpConn| c.rto.srtt();
    let a_srtt = srtt(&p.a);
    assert!(a_srtt.is_some());
    assert_eq!(
        p.a.take_metrics(),
        Some(MetricsReport::Linux { srtt: a_srtt })
    );
    assert_eq!(p.a.take_metrics(), None);
    let b = p.b.as_mut().unwrap();
    let b_srtt = srtt(b);
    assert_eq!(
        b.take_metrics(),
        Some(MetricsReport::Linux { srtt: b_srtt })
    );
    // Reset: nothing.
    let mut p = Pair::linux(50);
    p.run_until(at(100));
    let now = p.now;
    p.a.abort(now);
    assert_eq!(p.a.take_metrics(), None);
}

/// Linux, the SYN lost: the request the second SYN made echoes that SYN, so
/// the handshake sample is the true RTT (100 ms): RTO 300 ms, PTO 400 ms;
/// a lost request goes again after 300 ms.
#[test]
fn linux_lost_syn_leaves_a_true_rtt_sample() {
    let mut p = Pair::new(50, TcpStack::linux_classic(), vec![0, 3], Vec::new());
    p.run_until(at(1100));
    assert_eq!(p.connected_at(), Some(at(1100)));
    p.send_a(b"hello");
    p.run_until(at(10_000));
    assert_eq!(p.a_copies(1), vec![at(1100), at(1400)]);
}

/// Linux, the SYN-ACK lost: the client's second SYN (at 1 s) finds the
/// server's request, which answers at once with the first SYN's echo, so
/// the handshake sample is 1 s + RTT = 1.1 s: srtt 1.1 s, rttvar 2.2 s,
/// RTO 3.3 s, PTO 2·1.1 + 0.2 = 2.4 s. A lost request waits 2.4 s — not
/// the 3 s `TCP_TIMEOUT_FALLBACK`, which applies only without any sample.
#[test]
fn linux_lost_synack_inflates_the_first_rtt_sample() {
    for stack in [TcpStack::linux_classic(), TcpStack::linux_6_5()] {
        let mut p = Pair::new(50, stack, vec![3], vec![0]);
        p.run_until(at(1100));
        assert_eq!(p.connected_at(), Some(at(1100)));
        p.send_a(b"hello");
        p.run_until(at(10_000));
        assert_eq!(p.a_copies(1), vec![at(1100), at(3500)]);
    }
    // xnu (client) samples the same echo: srtt 1.1 s, rttvar 0.55 s,
    // RTO 200 ms + 3.3 s; its probe, 1.5·3.3 s, yields to the RTO.
    let mut p = Pair::new(50, TcpStack::xnu(), vec![3], vec![0]);
    p.run_until(at(1100));
    p.send_a(b"hello");
    p.run_until(at(10_000));
    assert_eq!(p.a_copies(1), vec![at(1100), at(4600)]);
}

/// `tcp_init_metrics`' fallback: a SYN-ACK after a retransmitted SYN that
/// carries no echo leaves no sample, so RTO, rttvar and mdev are 3 s.
#[test]
fn linux_falls_back_to_three_seconds_without_any_sample() {
    let mut c = TcpConn::connect(
        at(0),
        addr("10.0.0.1:40000"),
        addr("10.0.0.2:80"),
        TcpStack {
            timers: TimerPolicy::Exact,
            ..TcpStack::linux_classic()
        },
        Cached::default(),
    );
    c.handle_timeout(at(1000)); // the second SYN
    let synack = Segment {
        src: addr("10.0.0.2:80"),
        dst: addr("10.0.0.1:40000"),
        flags: Flags::SYN.with(Flags::ACK),
        seq: 0,
        ack: 1,
        payload: Bytes::new(),
        ts_val: at(1050),
        ts_ecr: None,
        sack: SackBlocks::default(),
    };
    c.handle_segment(at(1100), &synack);
    while c.poll_transmit().is_some() {}
    c.send(at(1100), b"hello").unwrap();
    while c.poll_transmit().is_some() {}
    // No srtt: the probe comes after TCP_TIMEOUT_INIT (1 s), before the
    // 3 s RTO, which then runs from the probe.
    assert_eq!(c.poll_timeout(), Some(at(2100)));
    c.handle_timeout(at(2100));
    assert!(c
        .poll_transmit()
        .is_some_and(|s| s.payload.as_ref() == b"hello"));
    assert_eq!(c.poll_timeout(), Some(at(5100)));
}

/// Linux RACK-TLP: four segments, the last two lost. When the first two
/// are acknowledged (one RTT later), two are still out: PTO = 2·srtt +
/// 2 ms. The probe resends the last segment; its SACK makes RACK mark the
/// third lost at once (sent more than RACK.rtt before the probe, which was
/// delivered), and recovery resends it. The first two are never resent.
#[test]
fn linux_tail_loss_probe_and_rack_repair_two_lost_segments() {
    let mut p = Pair::linux(50);
    p.run_until(at(100));
    // Client sends so far: SYN (0), ACK (1); segments 2..5 are the data.
    p.drop_a = vec![4, 5];
    let data = vec![9u8; 4 * 1460];
    p.send_a(&data);
    p.run_until(at(5000));
    assert_eq!(p.received_by_b(), data);
    let seq = |k: u64| 1 + k * 1460;
    assert_eq!(p.a_copies(seq(0)), vec![at(100)]);
    assert_eq!(p.a_copies(seq(1)), vec![at(100)]);
    // ACKs of the first two at 200 ms: srtt ≈ 100 ms, PTO 202 ms from then.
    let probe = p.a_copies(seq(3));
    assert_eq!(probe.len(), 2);
    let srtt = ms(100);
    assert_eq!(probe[1], at(200) + srtt * 2 + ms(2));
    // The probe's SACK returns one RTT later and the third goes at once.
    assert_eq!(p.a_copies(seq(2)), vec![at(100), probe[1] + ms(100)]);
}

/// RACK's reordering window: three segments, the first lost, the other two
/// SACKed one RTT later. Fewer than three SACKed: RACK waits RTT/4 (the
/// lowest RTT over four, plus the timer's 2 ms slack) past RACK.rtt before
/// it calls the first lost.
#[test]
fn linux_rack_waits_a_quarter_rtt_for_reordering() {
    let mut p = Pair::linux(50);
    p.run_until(at(100));
    p.drop_a = vec![2];
    let data = vec![9u8; 3 * 1460];
    p.send_a(&data);
    p.run_until(at(5000));
    assert_eq!(p.received_by_b(), data);
    // Sent at 100 ms; SACKs at 200 ms; lost at 100 + 100 + 25 (+ 2) ms.
    assert_eq!(p.a_copies(1), vec![at(100), at(227)]);
}

/// The delayed-ACK machine on a request/response exchange: the server
/// answers the first request after a quick pure ACK; once it has answered
/// within `ato` it is in ping-pong mode and the answer carries the ACK.
#[test]
fn linux_server_acks_the_first_request_at_once_then_piggybacks() {
    let mut p = Pair::linux(50);
    p.b_reply = Some(100);
    p.run_until(at(100));
    p.send_a(b"first");
    p.run_until(at(1000));
    p.send_a(b"second");
    p.run_until(at(2000));
    let pure_acks: Vec<Instant> = p
        .b_sends
        .iter()
        .filter(|(_, s)| s.payload.is_empty() && s.flags == Flags::ACK)
        .map(|(t, _)| *t)
        .collect();
    // Not counting the handshake's ACK: the first request's quick ACK.
    assert_eq!(pure_acks, vec![at(150)]);
    // A request the server does not answer: its ACK waits 40 ms.
    p.b_reply = None;
    p.send_a(b"third");
    p.run_until(at(3000));
    let last_ack = p
        .b_sends
        .iter()
        .rev()
        .find(|(_, s)| s.payload.is_empty())
        .map(|(t, _)| *t);
    assert_eq!(last_ack, Some(at(2000) + ms(50) + ms(40)));
}

/// A Linux server's SYN-ACKs for a client whose ACKs never arrive: the
/// timer doubles from 1 s and each duplicate SYN is answered at once and
/// restarts the current interval (`tcp_check_req`).
#[test]
fn linux_server_answers_duplicate_syns_and_pushes_its_timer() {
    // Every server segment lost: the client sends SYNs at 0, 1, 3, 7 s.
    let mut p = Pair::new(50, TcpStack::linux_classic(), Vec::new(), (0..20).collect());
    p.run_until(at(12_000));
    let synacks: Vec<u64> = p
        .b_sends
        .iter()
        .map(|(t, _)| (*t - Instant::ZERO).as_millis() as u64)
        .collect();
    // First at 50 ms. The second SYN (1.05 s) meets the timer (1.05 s) and
    // is answered first, pushing the timer to 2.05 s; it fires (→ 4.05 s);
    // the third SYN at 3.05 s is answered and pushes it to 5.05 s; it fires
    // (→ 9.05 s); the fourth SYN at 7.05 s pushes it to 11.05 s.
    assert_eq!(synacks, vec![50, 1050, 2050, 3050, 5050, 7050, 11_050]);
}

/// Linux gives up by time: 924.6 s after the first retransmission
/// (`tcp_retries2` 15 through `tcp_model_timeout`), however many
/// retransmissions that took.
#[test]
fn linux_gives_up_on_a_black_hole_after_924_6_seconds() {
    let mut p = Pair::linux(50);
    p.run_until(at(100));
    p.drop_a = (2..200).collect();
    p.send_a(b"hello");
    p.run_until(at(2_000_000));
    let copies = p.a_copies(1);
    let timed_out = p
        .a_events
        .iter()
        .find(|(_, e)| *e == SocketEvent::TimedOut)
        .map(|(t, _)| *t)
        .expect("timed out");
    // The clock runs from the first timeout's retransmission (the probe
    // does not start it: `__tcp_retransmit_skb` leaves `retrans_stamp`).
    let first_rto = copies[2];
    assert!(timed_out - first_rto >= ms(924_600));
    assert!(timed_out - first_rto < ms(924_600) + Duration::from_secs(120));
    // The request, the probe, then 15 timeouts doubling from 600 ms to 120 s.
    assert_eq!(copies.len(), 17);
}

/// xnu-4570's probe on a 200 ms path: srtt 200 ms, rttvar 100 ms, so
/// REXMTVAL 600 ms and the RTO 800 ms; the probe, max(2·srtt, 1.5·600 ms)
/// = 900 ms, yields to the RTO and the RTO moves to 800 + 600 ms. The
/// probe at +800 ms, the RTO at +1.4 s.
#[test]
fn xnu_probe_takes_the_rto_slot_and_pushes_the_rto() {
    let mut p = Pair::new(100, TcpStack::xnu(), vec![2, 3], Vec::new());
    p.run_until(at(200));
    p.send_a(b"hello");
    p.run_until(at(10_000));
    assert_eq!(p.a_copies(1), vec![at(200), at(1000), at(1600)]);
}

/// xnu's Early Retransmit: two segments out, the first lost; the one
/// duplicate ACK (SACKing the second) is enough with so few outstanding.
#[test]
fn xnu_early_retransmit_on_one_duplicate_ack() {
    let mut p = Pair::new(50, TcpStack::xnu(), Vec::new(), Vec::new());
    p.run_until(at(100));
    p.drop_a = vec![2];
    let data = vec![9u8; 2 * 1460];
    p.send_a(&data);
    p.run_until(at(5000));
    assert_eq!(p.received_by_b(), data);
    assert_eq!(p.a_copies(1), vec![at(100), at(200)]);
}

/// A timeout resends only what was not SACKed (Linux keeps the scoreboard
/// through `tcp_enter_loss`).
#[test]
fn linux_sack_spares_delivered_segments_from_retransmission() {
    let mut p = Pair::linux(50);
    p.run_until(at(100));
    // Segments 2 (first) and 4 (third) lost.
    p.drop_a = vec![2, 4];
    let data = vec![9u8; 3 * 1460];
    p.send_a(&data);
    p.run_until(at(10_000));
    assert_eq!(p.received_by_b(), data);
    assert_eq!(p.a_copies(1 + 1460).len(), 1);
    assert_eq!(p.a_copies(1).len(), 2);
    assert_eq!(p.a_copies(1 + 2 * 1460).len(), 2);
}
