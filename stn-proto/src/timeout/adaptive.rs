//! The per-network timeout machine the engine owns: Mars's formulas for the
//! Mars profiles, stn's adaptive values (clamped to Mars's) for `Stn`.

use super::{
    backoff, first_packet_timeout, long_polling_read_write_timeout, mul_count, packet_gap_timeout,
    read_write_timeout, transfer_time, AttemptInput, AttemptOutcome, AttemptSample, DynState,
    DynamicTimeout, RttConfig, RttEstimator, ThroughputEstimator, TimeoutConfig,
};
use crate::error::TimeoutKind;
use crate::net::NetworkKind;
use crate::time::{Duration, Instant, MonotonicClock};

/// Constants of stn's adaptive layer ([`TimeoutConfig::adaptive`]).
///
/// With `rto` from the `RttEstimator` and `tput` the throughput estimate
/// (Mars's `MinRate` until a transfer was measured), for an attempt that is
/// not long polling:
///
/// ```text
/// own   = server_cost + rto_multiplier·rto + send_len/tput + n·min(TaskDelay, srtt)
/// F     = min(backoff(max(own, first_packet_floor, first_packet_floor_rtts·srtt)), F_mars)
/// RW    = min(F + max(kMaxRecvLen/tput, receive_floor), RW_mars)
/// gap   = min(backoff(max(packet_gap_rto_multiplier·rto, packet_gap_floor)), gap_mars)
/// ```
/// where `backoff` multiplies by `backoff_percent`/100 per consecutive
/// timeout. Before any RTT sample every value is Mars's. Long-polling
/// attempts always use Mars's values (the server holds them on purpose).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdaptiveConfig {
    /// The RTT estimator's constants.
    pub rtt: RttConfig,
    /// `k` in `k·rto` (2: one RTO for the request, one for the response).
    pub rto_multiplier: u32,
    /// Shortest first-packet timeout, 2 s: protects slow servers, and covers
    /// one TCP retransmission at Linux's initial 1 s RTO.
    pub first_packet_floor: Duration,
    /// The floor in smoothed RTTs, when that is longer than
    /// `first_packet_floor`: on a long path the TCP underneath needs several
    /// RTTs to repair one lost segment, and a fixed floor would fire first.
    pub first_packet_floor_rtts: u32,
    /// Shortest allowance for receiving the response after the first-packet
    /// deadline (1 s).
    pub receive_floor: Duration,
    /// Packet-gap timeout in RTOs (4: survives two backed-off retransmissions).
    pub packet_gap_rto_multiplier: u32,
    /// Shortest packet-gap timeout (3 s).
    pub packet_gap_floor: Duration,
    /// Escalation per consecutive timeout, in percent (200 = doubling).
    pub backoff_percent: u32,
}

impl AdaptiveConfig {
    /// stn's defaults (see the fields).
    pub const STN: AdaptiveConfig = AdaptiveConfig {
        rtt: RttConfig::STN,
        rto_multiplier: 2,
        first_packet_floor: Duration::from_secs(2),
        first_packet_floor_rtts: 5,
        receive_floor: Duration::from_secs(1),
        packet_gap_rto_multiplier: 4,
        packet_gap_floor: Duration::from_secs(3),
        backoff_percent: 200,
    };
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        Self::STN
    }
}

#[cfg(test)]
/// The deadlines of one attempt, each no later than the task's deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AttemptTimeouts {
    /// No byte received by then: first-packet timeout.
    pub first_packet: Instant,
    /// Exchange not complete by then: read-write timeout.
    pub read_write: Instant,
    /// Longest silence allowed after a received packet (measured from the
    /// last one; never longer than the time left to the task's deadline).
    pub packet_gap: Duration,
}

/// The timeout machine the engine owns per network, one API for every
/// profile.
///
/// It holds Mars's [`DynamicTimeout`] and stn's estimators. Feed it what
/// happened (`on_*`), ask it for an attempt's deadlines
/// ([`attempt_timeouts`](Self::attempt_timeouts)). Without
/// [`TimeoutConfig::adaptive`] (the Mars profiles) the deadlines are exactly
/// Mars's formulas with the machine's dynamic state; with it (`Stn`) they
/// adapt as documented on [`AdaptiveConfig`] and never exceed Mars's.
///
/// (The example runs as the unit test `examples::timeout_adaptive_adaptivetimeouts`.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AdaptiveTimeouts {
    config: TimeoutConfig,
    net: NetworkKind,
    clock: MonotonicClock,
    dynamic: DynamicTimeout,
    rtt: RttEstimator,
    throughput: ThroughputEstimator,
    consecutive_timeouts: u32,
}

impl AdaptiveTimeouts {
    /// A machine for network `net` with no history.
    pub(crate) fn new(config: TimeoutConfig, net: NetworkKind) -> Self {
        let rtt = config.adaptive.map_or(RttConfig::STN, |a| a.rtt);
        AdaptiveTimeouts {
            config,
            net,
            clock: MonotonicClock::new(),
            dynamic: DynamicTimeout::new(config.dynamic),
            rtt: RttEstimator::new(rtt),
            throughput: ThroughputEstimator::new(),
            consecutive_timeouts: 0,
        }
    }

    /// Network change: forget everything learned (dynamic state, estimators,
    /// escalation) and continue on `net`.
    pub(crate) fn reset(&mut self, net: NetworkKind) {
        self.net = net;
        self.dynamic.reset();
        self.rtt.reset();
        self.throughput.reset();
        self.consecutive_timeouts = 0;
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &TimeoutConfig {
        &self.config
    }

    #[cfg(test)]
    /// The network this machine measures (selects the dynamic timeout's W/M
    /// limits).
    pub(crate) fn network(&self) -> NetworkKind {
        self.net
    }

    /// Mars's dynamic-timeout state.
    pub(crate) fn dyn_state(&self) -> DynState {
        self.dynamic.state()
    }

    #[cfg(test)]
    /// The RTT estimator.
    pub(crate) fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    #[cfg(test)]
    /// Throughput estimate in bytes per second, if a transfer was measured.
    pub(crate) fn throughput(&self) -> Option<u64> {
        self.throughput.estimate()
    }

    #[cfg(test)]
    /// Timeouts since the last success.
    pub(crate) fn consecutive_timeouts(&self) -> u32 {
        self.consecutive_timeouts
    }

    /// A TCP connect took `rtt` (one round trip).
    pub(crate) fn on_connect_sample(&mut self, rtt: Duration) {
        self.rtt.sample(rtt);
    }

    /// The first response byte arrived `cost` after sending `send_len` bytes.
    /// Once a throughput estimate exists the request's transfer time is
    /// subtracted; the rest (round trip plus server time) is an RTT sample, so
    /// the RTO learns the server's usual latency too.
    pub(crate) fn on_first_packet(&mut self, cost: Duration, send_len: usize) {
        let sample = match self.throughput.estimate() {
            Some(rate) => cost.saturating_sub(transfer_time(send_len, rate)),
            None => cost,
        };
        self.rtt.sample(sample);
    }

    #[cfg(test)]
    /// `bytes` were transferred in `dur` (feeds the throughput estimate).
    pub(crate) fn on_transfer(&mut self, bytes: usize, dur: Duration) {
        self.throughput.sample(bytes, dur);
    }

    /// An attempt's own timer fired (first-packet, long-poll, packet-gap
    /// or read-write; every one escalates alike): escalates stn's timeouts
    /// and records a failure in the dynamic timeout.
    pub(crate) fn on_timeout(&mut self, now: Instant, _kind: TimeoutKind) {
        let now = self.clock.observe(now);
        self.consecutive_timeouts = self.consecutive_timeouts.saturating_add(1);
        self.dynamic.record(now, self.net, AttemptOutcome::Failed);
    }

    /// An attempt failed for another reason (connect failure, reset): a
    /// failure for the dynamic timeout, no escalation.
    pub(crate) fn on_failure(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        self.dynamic.record(now, self.net, AttemptOutcome::Failed);
    }

    /// An attempt completed: resets escalation and records the sample in the
    /// dynamic timeout.
    pub(crate) fn on_success(&mut self, now: Instant, sample: AttemptSample) {
        let now = self.clock.observe(now);
        self.consecutive_timeouts = 0;
        self.dynamic
            .record(now, self.net, AttemptOutcome::Completed(sample));
    }

    fn mars_input(&self, input: &AttemptInput) -> AttemptInput {
        AttemptInput {
            dyn_state: self.dynamic.state(),
            ..*input
        }
    }

    fn rate(&self, net: NetworkKind) -> u64 {
        self.throughput
            .estimate()
            .unwrap_or(self.config.network(net).min_rate)
    }

    /// The first-packet timeout for `input` (its `dyn_state` is replaced by
    /// the machine's). Long polling: the long-polling timeout.
    pub(crate) fn first_packet_timeout(&self, input: &AttemptInput) -> Duration {
        if let Some(lpt) = input.long_polling {
            return lpt;
        }
        let mars = first_packet_timeout(&self.config, &self.mars_input(input));
        let (Some(a), Some(srtt)) = (self.config.adaptive, self.rtt.srtt()) else {
            return mars;
        };
        let col = self.config.network(input.net);
        let n = self.config.effective_in_flight(input.in_flight);
        let own = input
            .server_cost
            .unwrap_or(Duration::ZERO)
            .saturating_add(self.rtt.rto().saturating_mul(a.rto_multiplier))
            .saturating_add(transfer_time(input.send_len, self.rate(input.net)))
            .saturating_add(mul_count(col.task_delay.min(srtt), n));
        let floor = a
            .first_packet_floor
            .max(srtt.saturating_mul(a.first_packet_floor_rtts));
        backoff(
            own.max(floor),
            a.backoff_percent,
            self.consecutive_timeouts,
            mars,
        )
    }

    /// The read-write timeout for `input`.
    pub(crate) fn read_write_timeout(&self, input: &AttemptInput) -> Duration {
        if let Some(lpt) = input.long_polling {
            return long_polling_read_write_timeout(&self.config, input.net, lpt);
        }
        let mars_f = first_packet_timeout(&self.config, &self.mars_input(input));
        let mars = read_write_timeout(&self.config, input.net, mars_f);
        let Some(a) = self.config.adaptive.filter(|_| self.rtt.has_samples()) else {
            return mars;
        };
        let receive = transfer_time(self.config.max_recv_len, self.rate(input.net));
        self.first_packet_timeout(input)
            .saturating_add(receive.max(a.receive_floor))
            .min(mars)
    }

    /// The packet-gap timeout on `net`.
    pub(crate) fn packet_gap_timeout(&self, net: NetworkKind) -> Duration {
        let mars = packet_gap_timeout(&self.config, net);
        let Some(a) = self.config.adaptive.filter(|_| self.rtt.has_samples()) else {
            return mars;
        };
        let own = self.rtt.rto().saturating_mul(a.packet_gap_rto_multiplier);
        backoff(
            own.max(a.packet_gap_floor),
            a.backoff_percent,
            self.consecutive_timeouts,
            mars,
        )
    }

    #[cfg(test)]
    /// The deadlines of an attempt whose timers start at `now` (Mars's
    /// `start_send_time`: first byte written on a long link, connect done on
    /// a short link), each clamped to `task_deadline`.
    pub(crate) fn attempt_timeouts(
        &mut self,
        now: Instant,
        input: &AttemptInput,
        task_deadline: Instant,
    ) -> AttemptTimeouts {
        let now = self.clock.observe(now);
        AttemptTimeouts {
            first_packet: (now + self.first_packet_timeout(input)).min(task_deadline),
            read_write: (now + self.read_write_timeout(input)).min(task_deadline),
            packet_gap: self.packet_gap_timeout(input.net).min(task_deadline - now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use crate::test_util::ms;
    use proptest::prelude::*;

    const W: NetworkKind = NetworkKind::Wifi;
    const M: NetworkKind = NetworkKind::Mobile;

    fn machine(p: Profile, net: NetworkKind) -> AdaptiveTimeouts {
        AdaptiveTimeouts::new(TimeoutConfig::for_profile(p), net)
    }

    const T0: Instant = Instant::from_secs(100);
    const FAR: Instant = Instant::from_secs(10_000);

    #[test]
    fn mars_profiles_return_mars_formulas() {
        for p in [Profile::Mars2017, Profile::Mars] {
            let mut t = machine(p, W);
            // Samples must not change anything for Mars.
            t.on_connect_sample(ms(50));
            t.on_first_packet(ms(120), 200);
            t.on_transfer(100_000, ms(100));
            t.on_timeout(T0, TimeoutKind::FirstPacket);
            let got = t.attempt_timeouts(T0, &AttemptInput::new(W, 200), FAR);
            assert_eq!(got.first_packet, T0 + ms(12_016), "{p}");
            assert_eq!(got.read_write, T0 + ms(17_349), "{p}");
            assert_eq!(got.packet_gap, ms(8_000), "{p}");
            let mut input = AttemptInput::new(M, 200);
            input.in_flight = 7;
            let n = if p == Profile::Mars { 5 } else { 7 };
            let f = 15_048 + n * 3_000;
            let got = t.attempt_timeouts(T0, &input, FAR);
            assert_eq!(got.first_packet, T0 + ms(f), "{p}");
            assert_eq!(got.read_write, T0 + ms(f + 16_000), "{p}");
            assert_eq!(got.packet_gap, ms(12_000), "{p}");
        }
    }

    #[test]
    fn mars_uses_its_own_dynamic_state() {
        let mut t = machine(Profile::Mars, W);
        let mut input = AttemptInput::new(W, 200);
        input.server_cost = Some(Duration::ZERO);
        input.dyn_state = DynState::Excellent; // ignored: the machine is Evaluating
        assert_eq!(t.first_packet_timeout(&input), ms(12_016));
        for i in 0..10 {
            let sample = AttemptSample {
                bytes: 4_000,
                cost: ms(200),
            };
            t.on_success(T0 + Duration::from_secs(i), sample);
        }
        assert_eq!(t.dyn_state(), DynState::Excellent);
        input.dyn_state = DynState::Evaluating; // ignored again
        assert_eq!(t.first_packet_timeout(&input), ms(7_000));
        assert_eq!(t.read_write_timeout(&input), ms(12_333));
        // Default server cost (None) never gets the Excellent branch.
        assert_eq!(
            t.first_packet_timeout(&AttemptInput::new(W, 200)),
            ms(12_016)
        );
        // A timeout is a failure: back to Evaluating.
        t.on_timeout(T0 + Duration::from_secs(20), TimeoutKind::ReadWrite);
        assert_eq!(t.dyn_state(), DynState::Evaluating);
        assert_eq!(t.first_packet_timeout(&input), ms(12_016));
    }

    #[test]
    fn stn_before_samples_is_mars() {
        let mut t = machine(Profile::Stn, M);
        let got = t.attempt_timeouts(T0, &AttemptInput::new(M, 200), FAR);
        assert_eq!(got.first_packet, T0 + ms(15_048));
        assert_eq!(got.read_write, T0 + ms(31_048));
        assert_eq!(got.packet_gap, ms(12_000));
        // Throughput alone is not an RTT sample.
        t.on_transfer(50_000, ms(100));
        assert_eq!(
            t.first_packet_timeout(&AttemptInput::new(M, 200)),
            ms(15_048)
        );
    }

    #[test]
    fn stn_adapts_to_rtt_and_throughput() {
        let mut t = machine(Profile::Stn, W);
        t.on_connect_sample(ms(1_000));
        // rto = 1000 + max(200, 2000) = 3000; 2·rto + 16 ms.
        let input = AttemptInput::new(W, 200);
        assert_eq!(t.first_packet_timeout(&input), ms(6_016));
        // RW = F + 64 KiB at MinRate (5333 ms).
        assert_eq!(t.read_write_timeout(&input), ms(11_349));
        // gap = 4·rto = 12 s, capped at Mars's 8 s.
        assert_eq!(t.packet_gap_timeout(W), ms(8_000));

        // Measured throughput 64 KiB/s: send time 3 ms, receive 1000 ms.
        t.on_transfer(64 * 1024, Duration::from_secs(1));
        assert_eq!(t.first_packet_timeout(&input), ms(6_003));
        assert_eq!(t.read_write_timeout(&input), ms(7_003));

        // Server cost and in-flight tasks add up (n·min(TaskDelay, srtt)),
        // but never beyond Mars: here Mars's 500 + 16 + 2·1500 ms is shorter.
        let busy = AttemptInput {
            server_cost: Some(ms(500)),
            in_flight: 2,
            ..input
        };
        assert_eq!(t.first_packet_timeout(&busy), ms(3_516));

        let mut fast = machine(Profile::Stn, W);
        fast.on_connect_sample(ms(200)); // rto = 200 + max(200, 400) = 600
        fast.on_transfer(64 * 1024, Duration::from_secs(1));
        let busy = AttemptInput {
            server_cost: Some(ms(5_000)),
            ..busy
        };
        // 5000 + 2·600 + 3 + 2·min(1500, 200) ms; Mars would be 8016 ms.
        assert_eq!(fast.first_packet_timeout(&busy), ms(6_603));
        assert_eq!(first_packet_timeout(fast.config(), &busy), ms(8_016));
    }

    #[test]
    fn stn_first_packet_sample_subtracts_transfer_time_once_known() {
        let mut t = machine(Profile::Stn, W);
        t.on_first_packet(ms(400), 10_000);
        assert_eq!(t.rtt().srtt(), Some(ms(400)));
        t.reset(W);
        t.on_transfer(10_000, Duration::from_secs(1)); // 10 kB/s → 1 s for 10 kB
        t.on_first_packet(ms(1_300), 10_000);
        assert_eq!(t.rtt().srtt(), Some(ms(300)));
    }

    #[test]
    fn stn_floor_and_escalation_scripted() {
        let mut t = machine(Profile::Stn, W);
        t.on_connect_sample(ms(100));
        let input = AttemptInput::new(W, 200);
        let script = [
            (None, ms(2_000), ms(3_000)),
            (Some(TimeoutKind::FirstPacket), ms(4_000), ms(6_000)),
            (Some(TimeoutKind::PacketGap), ms(8_000), ms(8_000)),
            (Some(TimeoutKind::ReadWrite), ms(12_016), ms(8_000)),
            (Some(TimeoutKind::FirstPacket), ms(12_016), ms(8_000)),
        ];
        for (i, (event, f, gap)) in script.into_iter().enumerate() {
            if let Some(kind) = event {
                t.on_timeout(T0, kind);
            }
            assert_eq!(t.first_packet_timeout(&input), f, "step {i}");
            assert_eq!(t.packet_gap_timeout(W), gap, "step {i}");
        }
        assert_eq!(t.consecutive_timeouts(), 4);
        // A connect failure does not escalate; a success resets.
        t.on_failure(T0);
        assert_eq!(t.consecutive_timeouts(), 4);
        t.on_success(
            T0,
            AttemptSample {
                bytes: 300,
                cost: ms(250),
            },
        );
        assert_eq!(t.consecutive_timeouts(), 0);
        assert_eq!(t.first_packet_timeout(&input), ms(2_000));
    }

    #[test]
    fn the_floor_follows_a_long_rtt_and_comes_back_when_it_shrinks() {
        let mut t = machine(Profile::Stn, W);
        let input = AttemptInput::new(W, 200);
        // A 600 ms path: 2·rto is below 2 s, but TCP needs several RTTs to
        // repair one loss there, so the floor is 5 smoothed RTTs.
        for _ in 0..20 {
            t.on_connect_sample(ms(600));
        }
        assert_eq!(t.rtt().srtt(), Some(ms(600)));
        assert_eq!(t.first_packet_timeout(&input), ms(3_000));
        // The path gets short again: the floor is back to 2 s.
        for _ in 0..40 {
            t.on_connect_sample(ms(60));
        }
        assert!(t.rtt().srtt() < Some(ms(100)));
        assert_eq!(t.first_packet_timeout(&input), ms(2_000));
    }

    #[test]
    fn floor_yields_to_a_shorter_mars_value() {
        let mut t = machine(Profile::Stn, W);
        t.on_connect_sample(ms(100));
        let input = AttemptInput {
            server_cost: Some(ms(100)),
            ..AttemptInput::new(W, 200)
        };
        // Mars: 100 + 16 ms, shorter than the 2 s floor: Mars wins.
        assert_eq!(t.first_packet_timeout(&input), ms(116));
    }

    #[test]
    fn long_polling_uses_mars_values() {
        for p in Profile::ALL {
            let mut t = machine(p, W);
            t.on_connect_sample(ms(20));
            let input = AttemptInput {
                long_polling: Some(Duration::from_secs(60)),
                ..AttemptInput::new(W, 200)
            };
            let got = t.attempt_timeouts(T0, &input, FAR);
            assert_eq!(got.first_packet, T0 + ms(60_000), "{p}");
            assert_eq!(got.read_write, T0 + ms(65_333), "{p}");
        }
    }

    #[test]
    fn deadlines_are_clamped_to_the_task_deadline() {
        let mut t = machine(Profile::Mars, W);
        let deadline = T0 + ms(15_000);
        let got = t.attempt_timeouts(T0, &AttemptInput::new(W, 200), deadline);
        assert_eq!(got.first_packet, T0 + ms(12_016));
        assert_eq!(got.read_write, deadline);
        assert_eq!(got.packet_gap, ms(8_000));
        let got = t.attempt_timeouts(T0, &AttemptInput::new(W, 200), T0 + ms(5_000));
        assert_eq!(got.first_packet, T0 + ms(5_000));
        assert_eq!(got.packet_gap, ms(5_000));
        // A deadline already passed.
        let got = t.attempt_timeouts(T0, &AttemptInput::new(W, 200), T0 - ms(1));
        assert_eq!(got.first_packet, T0 - ms(1));
        assert_eq!(got.packet_gap, Duration::ZERO);
    }

    #[test]
    fn reset_forgets_everything() {
        let mut t = machine(Profile::Stn, W);
        t.on_connect_sample(ms(100));
        t.on_transfer(1_000, ms(10));
        for i in 0..4 {
            t.on_timeout(T0 + ms(i), TimeoutKind::FirstPacket);
        }
        assert_eq!(t.dyn_state(), DynState::Bad);
        t.reset(M);
        assert_eq!(t.network(), M);
        assert_eq!(t.dyn_state(), DynState::Evaluating);
        assert_eq!(t.consecutive_timeouts(), 0);
        assert_eq!(t.throughput(), None);
        assert!(!t.rtt().has_samples());
        let fresh = machine(Profile::Stn, M);
        let input = AttemptInput::new(M, 900);
        assert_eq!(
            t.first_packet_timeout(&input),
            fresh.first_packet_timeout(&input)
        );
    }

    // ---- property tests ----

    #[derive(Clone, Debug)]
    enum Event {
        Connect(u64),
        FirstPacket(u64, usize),
        Transfer(usize, u64),
        Timeout,
        Failure,
        Success(usize, u64),
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            (1u64..5_000).prop_map(Event::Connect),
            (0u64..20_000, 0usize..100_000).prop_map(|(c, l)| Event::FirstPacket(c, l)),
            (0usize..1_000_000, 0u64..10_000).prop_map(|(b, d)| Event::Transfer(b, d)),
            Just(Event::Timeout),
            Just(Event::Failure),
            (0usize..50_000, 0u64..8_000).prop_map(|(b, c)| Event::Success(b, c)),
        ]
    }

    fn profile() -> impl Strategy<Value = Profile> {
        prop_oneof![
            Just(Profile::Mars2017),
            Just(Profile::Mars),
            Just(Profile::Stn)
        ]
    }

    fn net() -> impl Strategy<Value = NetworkKind> {
        prop_oneof![
            Just(NetworkKind::Wifi),
            Just(NetworkKind::Mobile),
            Just(NetworkKind::Other),
            Just(NetworkKind::None),
        ]
    }

    fn server_cost() -> impl Strategy<Value = Option<Duration>> {
        prop_oneof![
            Just(None),
            Just(Some(Duration::ZERO)),
            (1u64..60_000).prop_map(|m| Some(ms(m))),
        ]
    }

    fn apply(t: &mut AdaptiveTimeouts, now: Instant, e: &Event) {
        match *e {
            Event::Connect(r) => t.on_connect_sample(ms(r)),
            Event::FirstPacket(c, l) => t.on_first_packet(ms(c), l),
            Event::Transfer(b, d) => t.on_transfer(b, ms(d)),
            Event::Timeout => t.on_timeout(now, TimeoutKind::FirstPacket),
            Event::Failure => t.on_failure(now),
            Event::Success(b, c) => t.on_success(
                now,
                AttemptSample {
                    bytes: b,
                    cost: ms(c),
                },
            ),
        }
    }

    fn run(p: Profile, net: NetworkKind, events: &[Event]) -> AdaptiveTimeouts {
        let mut t = machine(p, net);
        for (i, e) in events.iter().enumerate() {
            apply(&mut t, T0 + ms(700 * i as u64), e);
        }
        t
    }

    proptest! {
        #[test]
        fn monotone_in_send_len_and_in_flight(
            p in profile(), net in net(),
            events in proptest::collection::vec(event(), 0..30),
            spc in server_cost(),
            a in 0usize..2_000_000, b in 0usize..2_000_000,
            n1 in 0usize..20, n2 in 0usize..20,
        ) {
            let t = run(p, net, &events);
            let mk = |len, n| AttemptInput { in_flight: n, server_cost: spc, ..AttemptInput::new(net, len) };
            let (lo, hi) = (a.min(b), a.max(b));
            let (nlo, nhi) = (n1.min(n2), n1.max(n2));
            for n in [nlo, nhi] {
                prop_assert!(t.first_packet_timeout(&mk(lo, n)) <= t.first_packet_timeout(&mk(hi, n)));
                prop_assert!(t.read_write_timeout(&mk(lo, n)) <= t.read_write_timeout(&mk(hi, n)));
            }
            for len in [lo, hi] {
                prop_assert!(t.first_packet_timeout(&mk(len, nlo)) <= t.first_packet_timeout(&mk(len, nhi)));
                prop_assert!(t.read_write_timeout(&mk(len, nlo)) <= t.read_write_timeout(&mk(len, nhi)));
            }
            // The first-packet timeout never exceeds the read-write one.
            prop_assert!(t.first_packet_timeout(&mk(lo, nlo)) <= t.read_write_timeout(&mk(lo, nlo)));
        }

        #[test]
        fn stn_between_floor_and_mars(
            net in net(),
            events in proptest::collection::vec(event(), 0..30),
            spc in server_cost(),
            len in 0usize..2_000_000, n in 0usize..20,
        ) {
            let stn = run(Profile::Stn, net, &events);
            let mut mars = run(Profile::Mars, net, &events);
            // Same dynamic history, so same Mars value for the same input.
            prop_assert_eq!(stn.dyn_state(), mars.dyn_state());
            let input = AttemptInput { in_flight: n, server_cost: spc, ..AttemptInput::new(net, len) };
            let a = AdaptiveConfig::STN;
            let (sf, mf) = (stn.first_packet_timeout(&input), mars.first_packet_timeout(&input));
            prop_assert!(sf <= mf);
            prop_assert!(sf >= a.first_packet_floor.min(mf));
            let (srw, mrw) = (stn.read_write_timeout(&input), mars.read_write_timeout(&input));
            prop_assert!(srw <= mrw);
            prop_assert!(srw >= sf);
            let (sg, mg) = (stn.packet_gap_timeout(net), mars.packet_gap_timeout(net));
            prop_assert!(sg <= mg && sg >= a.packet_gap_floor.min(mg));
            if !stn.rtt().has_samples() {
                prop_assert_eq!((sf, srw, sg), (mf, mrw, mg));
            }
            // And through the attempt API (after every event's time).
            let start = Instant::from_secs(1_000);
            let got = mars.attempt_timeouts(start, &input, Instant::MAX);
            prop_assert_eq!(got.first_packet, start + mf);
        }

        #[test]
        fn attempt_deadlines_never_exceed_task_deadline(
            p in profile(), net in net(),
            events in proptest::collection::vec(event(), 0..20),
            spc in server_cost(),
            lp in proptest::option::of(0u64..120_000),
            len in 0usize..2_000_000, n in 0usize..20,
            start in 0u64..1_000_000, left in 0u64..100_000, before in any::<bool>(),
        ) {
            let mut t = run(p, net, &events);
            let now = Instant::from_millis(start);
            let deadline = if before { now - ms(left) } else { now + ms(left) };
            let input = AttemptInput {
                in_flight: n, server_cost: spc, long_polling: lp.map(ms),
                ..AttemptInput::new(net, len)
            };
            let got = t.attempt_timeouts(now, &input, deadline);
            prop_assert!(got.first_packet <= deadline);
            prop_assert!(got.read_write <= deadline);
            prop_assert!(got.packet_gap <= deadline - now);
            prop_assert!(got.first_packet <= got.read_write);
        }
    }

    quickcheck::quickcheck! {
        fn escalation_monotone_and_capped(rtt_ms: u16, len: u16, timeouts: u8, mobile: bool) -> bool {
            let net = if mobile { M } else { W };
            let mut t = machine(Profile::Stn, net);
            t.on_connect_sample(ms(u64::from(rtt_ms)));
            let input = AttemptInput::new(net, usize::from(len));
            let mars = first_packet_timeout(t.config(), &input);
            let mut last = t.first_packet_timeout(&input);
            for _ in 0..timeouts % 12 {
                t.on_timeout(T0, TimeoutKind::FirstPacket);
                let f = t.first_packet_timeout(&input);
                if f < last || f > mars {
                    return false;
                }
                last = f;
            }
            t.on_success(T0, AttemptSample { bytes: 100, cost: ms(100) });
            t.first_packet_timeout(&input) <= last
        }
    }

    #[test]
    fn deterministic() {
        let events = [
            Event::Connect(180),
            Event::FirstPacket(420, 300),
            Event::Transfer(20_000, 900),
            Event::Timeout,
            Event::Success(2_000, 350),
            Event::Timeout,
            Event::Timeout,
            Event::Failure,
            Event::Connect(900),
        ];
        let trace = |p| {
            let mut t = machine(p, M);
            let mut out = Vec::new();
            for (i, e) in events.iter().enumerate() {
                let now = T0 + Duration::from_secs(i as u64);
                apply(&mut t, now, e);
                let input = AttemptInput {
                    in_flight: i,
                    ..AttemptInput::new(M, 100 * i)
                };
                out.push((
                    t.dyn_state(),
                    t.attempt_timeouts(now, &input, now + ms(30_000)),
                ));
            }
            out
        };
        for p in Profile::ALL {
            assert_eq!(trace(p), trace(p), "{p}");
        }
        // Stn differs from Mars once it has samples.
        assert_ne!(trace(Profile::Stn), trace(Profile::Mars));
    }
}
