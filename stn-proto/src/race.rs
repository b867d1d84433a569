//! Connection racing: Mars's "complex connect" and RFC 8305 Happy Eyeballs as
//! one sans-IO state machine.
//!
//! A [`Race`] is given an ordered list of candidate addresses and tells the
//! caller when to open a TCP connection to which address ([`RaceAction::Connect`]),
//! when to close one ([`RaceAction::Cancel`]), what to record about each
//! attempt ([`RaceAction::Report`]) and how the race ended ([`RaceAction::Won`]
//! or [`RaceAction::Failed`]). The caller feeds back what the sockets did
//! ([`Race::handle_connected`], [`Race::handle_failed`]) and wakes the machine at
//! [`Race::poll_timeout`] through [`Race::handle_timeout`].
//!
//! # Rules (Mars `complexconnect.cc`, docs/mars-stn.md §3)
//!
//! 1. The first attempt starts at once.
//! 2. The next attempt starts when `now − last_start ≥ stagger` (or
//!    `error_stagger` if the most recent event was a failure) **and** fewer than
//!    `max_in_flight` attempts are in flight.
//! 3. Each attempt has its own deadline, `attempt_timeout` after its start; when
//!    it passes the attempt is closed ([`RaceAction::Cancel`]) and counts as a
//!    failure with [`ConnectError::AttemptTimeout`]. Any failure frees a slot.
//! 4. The first attempt to connect wins; every other attempt still in flight
//!    (under stn, passive ones too) is cancelled. Under the Mars profiles, losers started earlier than the winner
//!    are reported as `ETIMEDOUT` ([`ConnectError::TimedOut`]) and later ones are
//!    not reported, as Mars does.
//! 5. When nothing is in flight and no attempt may start any more, the race
//!    fails ([`RaceAction::Failed`]).
//!
//! Deadlines are exact: Mars since 2021 notices a timeout only when its
//! `select` wakes (at most every 10 s), which can stretch its worst case; the
//! Mars profiles here model the exact-deadline behaviour of v1.2 and earlier.
//! Not modelled here (they belong to the adapter or the engine): Mars's
//! per-family IPv4/IPv6 attempt timeouts, the optional noop verification
//! after connecting, proxy handshakes, and its 30-iteration loop guard.
//!
//! With 5 black-holed candidates the rules give (pinned in the tests):
//! - [`Profile::Mars`] (2.5 s): starts at 0, 2.5, 5, 10, 12.5 s, fails at 22.5 s
//!   (the third attempt fills the 3 slots, so the fourth waits for the first
//!   timeout at 10 s, the fifth for the second at 12.5 s);
//! - [`Profile::Mars2017`] (4 s): starts at 0, 4, 8, 12, 16 s, fails at 26 s —
//!   the schedule mars-stn.md quotes. The 3-slot limit never binds here: at
//!   12 s the first attempt has already timed out (10 s), so the stagger alone
//!   sets the schedule.
//!
//! # stn's own policy ([`Profile::Stn`]) and why
//!
//! - **Adaptive stagger** ([`AdaptiveStagger`]): `clamp(2·rtt + 50 ms, 100 ms,
//!   2 s)` from the caller's RTT hint, 250 ms without one (RFC 8305 §8:
//!   default Connection Attempt Delay 250 ms, minimum 100 ms, maximum 2 s) —
//!   except that without a hint an address is raced against its own
//!   still-connecting attempt only after the OS's SYN retransmission time
//!   (1 s): the path may simply be slower than 250 ms (2G), and an extra SYN
//!   there costs bandwidth for nothing. Two
//!   RTTs plus a margin let the first attempt finish its handshake on a healthy
//!   path before a second socket is opened, yet start the second long before
//!   the OS would retransmit a lost SYN (1 s).
//! - **A failure starts the next attempt at once** (`error_stagger` 0): a
//!   refusal or an unreachable route is definite news, so waiting out the
//!   stagger only adds latency (RFC 8305 §5 does the same).
//! - **Abandon and refresh** ([`AbandonPolicy`]): Linux before 6.5 retransmits
//!   a lost SYN after 1 s, then 3 s, 7 s, … (docs/peers.md §3.1), so under
//!   loss an attempt whose first two SYNs were lost sits idle until 3 s. An
//!   attempt not connected after `max(3·rtt, 1 s + rtt + 100 ms)` (1.6 s when no
//!   RTT is known, assuming 500 ms) is reported abandoned
//!   (a failure of its address, so a black hole is demoted; not for a floor
//!   attempt, below) and gives its slot to a fresh attempt, which sends a
//!   new SYN immediately. It is not closed: it stays open as a *passive
//!   probe* outside the slots, which can still win, until its own attempt
//!   timeout, a win or the race's end. Closing it would throw away the OS's
//!   own retransmissions of its SYN (1 s, 3 s, 7 s after its start), and the
//!   fresh SYNs fall between those instants, so an outage that ends just
//!   before one of them would be caught late (stn-sim sweep cell
//!   `outage-13.9s`). A probe that later ends by stn's timers gets no second
//!   verdict (no `Failed` report; `Lost` when another attempt wins). Probes
//!   are bounded by the abandon count below: at most 6 per race. 3·rtt is
//!   the usual data RTO (srtt + 4·rttvar);
//!   `1 s + rtt` is when the reply to the OS's first retransmission should
//!   have arrived. An attempt is only abandoned when a replacement may start, and
//!   after 6 abandonments in one race no more are abandoned, so an RTT hint
//!   that is far too small (the path got slower) costs a few seconds instead of
//!   a livelock of attempts that never live long enough to connect. (An
//!   abandoned attempt stays open, so it also connects on such a path.)
//! - **Mars's schedule as a floor** ([`ProbeFloor`]): stn's own starts (and
//!   so its sockets' retransmissions) fall off the instants where Mars's
//!   land — and after an outage that ends at one of
//!   Mars's instants, Mars's next SYN went out before stn's (stn-sim
//!   sensitivity suite: up to 0.4 s behind). So stn runs Mars's own rule 2 and
//!   3 underneath, with Mars's constants: a *floor attempt* starts at the race
//!   start and then whenever 2.5 s have passed since the last floor start and
//!   fewer than 3 floor attempts are open, and each lives its full 10 s
//!   attempt timeout. The race's first attempt is both the first floor attempt
//!   and the first slot attempt; a later floor start takes a slot only if a
//!   slot start is due at that very instant, otherwise it is *passive* from
//!   the start (outside the slots; it does not move the stagger). A floor
//!   attempt in a slot gives up its slot at its abandon time like any other
//!   and stays open, but gets no `Abandoned` report: it is judged as Mars
//!   judges its attempts, at its 10 s timeout or when another wins (the
//!   race's first attempt is a floor attempt, and reporting it would demote
//!   a good address after every outage longer than the abandon time).
//!   Passive attempts can win like any other. Consequence: while nothing
//!   answers, up to this race's deadline, every attempt a [`Profile::Mars`] race would have open
//!   at an instant, this race has open too, started at the same instant
//!   (candidates come from the one round-robin, so with distinct addresses
//!   the floor's can differ from Mars's), so the OS sends a SYN at every
//!   instant Mars's would, whatever its retransmission schedule; stn's fresh
//!   attempts come on top (pinned in the tests: a Mars-profile race and this
//!   one, both unanswered, compared attempt by attempt and, under the xnu and
//!   Linux SYN schedules, SYN by SYN). Mars sends no SYN after 19.5 s in a
//!   race of up to 5 candidates (its last is 7 s after its last start at
//!   12.5 s), so the 20 s cap loses none. The cost is sockets: at most
//!   `max_in_flight` + 3 floor attempts + 6 probes = 12 open at once
//!   ([`RaceConfig::max_open`]; Mars: 3), and more than 3 only while a race
//!   lasts beyond the first abandon time. A passive attempt that wins
//!   reports its connect time from its own start, seconds that include
//!   retransmitted SYNs: a caller that takes connect times as RTT samples
//!   should skip those (Karn's rule), or its RTT estimate grows.
//! - **Quiet in an outage** ([`QuietPolicy`], off unless configured): once
//!   nothing has answered for a few seconds and every candidate has been
//!   tried, only the floor (with [`ProbeFloor::pass_gap`]: Mars's passes and
//!   retry gaps) and one long-lived probe keep sockets open, so stn still
//!   sends every SYN Mars sends but not the dozens of fresh ones that an
//!   outage only swallows (and that reach the server together when it ends).
//!   The first answer ends the quiet.
//! - **Round-robin**: after one pass over the candidates the race goes round
//!   again (a 1-address list still gets fresh attempts) until its overall
//!   deadline: the caller's deadline or 20 s after the start, whichever is
//!   first (20 s ≈ Mars's 22.5 s worst case, 2 × its 10 s attempt timeout). From
//!   the second round on, an address is skipped once any of its attempts failed
//!   with a socket error ([`Race::handle_failed`], e.g. refused or unreachable):
//!   those usually fail within an RTT, and retrying them with no stagger would
//!   be a busy loop. Only addresses whose attempts ran into stn's own timers
//!   (attempt timeout, abandon) are retried, so every retry of an address costs
//!   at least `min(abandon time, attempt timeout)` of one of the
//!   `max_in_flight` slots — the attempt rate is bounded. (An OS `ETIMEDOUT`
//!   never arrives within a 10 s attempt timeout on Linux; if an adapter
//!   reports one, it is treated like any other socket error.)
//!   With a single address the stagger opens a second and third socket to it
//!   while the first is still connecting; on a healthy path the first connects
//!   within the stagger (2·RTT + 50 ms) and no second socket is opened.
//! - **Losers** still connecting when another attempt wins are reported as
//!   lost, which carries no verdict: a slower handshake is
//!   not evidence that an address is bad (Mars's `ETIMEDOUT` for every earlier
//!   loser can ban a good address whose one SYN was lost). The exception
//!   ([`LoserReports::Outpaced`]): a loser on another address, started
//!   before the winner and unanswered for twice the winner's connect time
//!   plus 100 ms, is outpaced — most likely a black hole,
//!   which would otherwise stay first in the order forever. The ban module
//!   decides what to record. On stn's short link
//!   ([`LoserReports::OutpacedAtThreshold`]) such a loser that has not yet
//!   waited the threshold at the win is handed over open (`Linger`) and
//!   judged at the threshold by the engine (Outpaced if still unanswered,
//!   nothing if it connects): at 40 ms RTT the next address starts one
//!   stagger (130 ms) later and wins ~45 ms after, before the ~190 ms
//!   threshold, so a black hole ordered first was otherwise never judged.
//!
//! When the overall deadline passes, every attempt in flight (passive ones
//! included) is cancelled and reported as failed with
//! [`ConnectError::AttemptTimeout`], and the race fails with
//! [`FailReason::Deadline`]. The deadline applies to every profile. (The
//! engine's short link gives its races no 20 s cap of their own under stn,
//! only the task's deadline; see
//! [`Config::for_profile`](crate::engine::Config::for_profile).)
//!
//! # Example
//!
//! (The example runs as the unit test `examples::race`.)

use std::collections::{BTreeSet, VecDeque};

use crate::net::{ConnectError, SocketAddr};
use crate::time::{Duration, Instant, MonotonicClock};

#[cfg(test)]
mod tests;

/// Adapts the stagger between attempt starts to the measured RTT:
/// `clamp(rtt_factor · rtt + margin, min, max)`.
///
/// ```
/// use stn_proto::config::AdaptiveStagger;
/// use stn_proto::Duration;
/// let a = AdaptiveStagger::default();
/// assert_eq!(a.stagger_for(Duration::from_millis(10)), Duration::from_millis(100));
/// assert_eq!(a.stagger_for(Duration::from_millis(200)), Duration::from_millis(450));
/// assert_eq!(a.stagger_for(Duration::from_secs(5)), Duration::from_secs(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdaptiveStagger {
    /// Lower bound (RFC 8305 §8: 100 ms recommended, never below 10 ms).
    pub min: Duration,
    /// Upper bound (RFC 8305 §8: 2 s).
    pub max: Duration,
    /// How many RTTs to wait before starting the next attempt.
    pub rtt_factor: u32,
    /// Added to `rtt_factor · rtt` to absorb jitter.
    pub margin: Duration,
}

impl Default for AdaptiveStagger {
    /// stn's choice: `clamp(2·rtt + 50 ms, 100 ms, 2 s)`.
    fn default() -> Self {
        AdaptiveStagger {
            min: Duration::from_millis(100),
            max: Duration::from_secs(2),
            rtt_factor: 2,
            margin: Duration::from_millis(50),
        }
    }
}

impl AdaptiveStagger {
    /// The stagger for a measured RTT. Monotone in `rtt`, within `min..=max`
    /// (if `min > max`, `max` wins).
    pub fn stagger_for(&self, rtt: Duration) -> Duration {
        let raw = rtt
            .saturating_mul(self.rtt_factor)
            .saturating_add(self.margin);
        raw.max(self.min).min(self.max)
    }
}

/// When to give up on an attempt whose SYNs look lost and start a fresh one
/// (stn only; see the module docs for why).
///
/// An attempt is abandoned `max(rtt_factor · rtt, syn_rto + rtt + slack)` after
/// its start, where `rtt` is the race's RTT hint or `assumed_rtt`.
///
/// ```
/// use stn_proto::config::AbandonPolicy;
/// use stn_proto::Duration;
/// let p = AbandonPolicy::default();
/// assert_eq!(p.abandon_after(Some(Duration::from_millis(200))), Duration::from_millis(1300));
/// assert_eq!(p.abandon_after(Some(Duration::from_millis(800))), Duration::from_millis(2400));
/// assert_eq!(p.abandon_after(None), Duration::from_millis(1600));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AbandonPolicy {
    /// Multiple of the RTT after which a handshake is clearly late (3: the
    /// usual data RTO, srtt + 4·rttvar, is about 3·RTT).
    pub rtt_factor: u32,
    /// The OS's initial SYN retransmission timeout (1 s on Linux, RFC 6298).
    pub syn_rto: Duration,
    /// Extra wait beyond `syn_rto + rtt` for jitter.
    pub slack: Duration,
    /// RTT assumed when the race has no hint.
    pub assumed_rtt: Duration,
    /// After this many abandonments in one race, attempts run to their own
    /// timeout in their slots (guards against an RTT hint far below the
    /// real RTT). Also the bound on passive probes: each abandonment keeps
    /// one socket open.
    pub max_abandons: u32,
}

impl Default for AbandonPolicy {
    /// stn's choice: `max(3·rtt, 1 s + rtt + 100 ms)`, 500 ms assumed RTT, at
    /// most 6 abandonments per race.
    fn default() -> Self {
        AbandonPolicy {
            rtt_factor: 3,
            syn_rto: Duration::from_secs(1),
            slack: Duration::from_millis(100),
            assumed_rtt: Duration::from_millis(500),
            max_abandons: 6,
        }
    }
}

impl AbandonPolicy {
    /// How long after its start an attempt is abandoned, given the RTT hint.
    pub fn abandon_after(&self, rtt_hint: Option<Duration>) -> Duration {
        let rtt = rtt_hint.unwrap_or(self.assumed_rtt);
        let by_rtt = rtt.saturating_mul(self.rtt_factor);
        let by_syn = self.syn_rto.saturating_add(rtt).saturating_add(self.slack);
        by_rtt.max(by_syn)
    }
}

/// Mars's attempt schedule, kept under stn's own as a floor (stn only; see
/// the module docs for why).
///
/// A *floor attempt* starts when the race starts, then whenever `stagger` has
/// passed since the last floor start and fewer than `max_open` floor attempts
/// are open — Mars's rule 2 with Mars's constants. Each floor attempt stays
/// open until its own deadline, a win or the end of the race (at its abandon
/// time, like any attempt, it gives its slot to a fresh attempt and stays
/// open as a passive probe, so the OS keeps retransmitting its SYN; unlike
/// a slot attempt it is not reported abandoned).
///
/// ```
/// use stn_proto::config::{ProbeFloor, RaceConfig};
/// use stn_proto::Duration;
/// use stn_proto::Profile;
/// let f = ProbeFloor::default();
/// let mars = RaceConfig::for_profile(Profile::Mars);
/// assert_eq!((f.stagger, f.max_open), (mars.stagger, mars.max_in_flight));
/// assert_eq!(f.stagger, Duration::from_millis(2500));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProbeFloor {
    /// Minimum time between two floor starts (Mars "interval").
    pub stagger: Duration,
    /// Most floor attempts open at once (Mars `max_connect`; 0 is treated
    /// as 1).
    pub max_open: usize,
    /// Mars makes one pass over the candidates per race and retries the
    /// task this long after the race failed (1 s): with `Some`, once a pass's
    /// floor attempts (one per candidate) have all ended, the next pass
    /// starts this long after, so a one-address floor sends Mars's retry's
    /// SYNs too. `None`: the floor goes round at once.
    pub pass_gap: Option<Duration>,
}

impl Default for ProbeFloor {
    /// Today's Mars ([`Profile::Mars`](crate::Profile::Mars)): 2.5 s, 3
    /// open, round the list at once (no `pass_gap`).
    fn default() -> Self {
        ProbeFloor {
            stagger: Duration::from_millis(2500),
            max_open: 3,
            pass_gap: None,
        }
    }
}

/// What to report about attempts still connecting when another one wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoserReports {
    /// Mars: losers started before the winner are reported as failed with
    /// [`ConnectError::TimedOut`] (`ETIMEDOUT`); later ones are not reported.
    MarsLowerIndexTimedOut,
    /// Every loser is reported lost (no verdict).
    AllLost,
    /// stn: a loser on another address than the winner's, started before it
    /// and unanswered for at least twice the winner's connect time plus
    /// 100 ms, is reported outpaced (a failure in the endpoint history); the
    /// others as lost (no verdict). The same path answered the winner in that
    /// time, so the loser's address is most likely a black hole: without a
    /// verdict it would stay first in the order and cost every call a
    /// stagger. One lost SYN of a good address only reorders it (the history
    /// needs repeated failures to ban, and never bans the last candidate).
    Outpaced,
    /// stn's short link: as [`LoserReports::Outpaced`], except that such a
    /// loser that has not yet waited the threshold at the win is not judged
    /// then: the race hands its socket over, open, to its caller until the
    /// threshold since its start (at most its own attempt deadline), so a black hole ordered first, whose
    /// attempt a live second address beats within the stagger plus one
    /// connect, still gets its verdict. Whoever takes it over reports it
    /// outpaced if it has not answered by then, and
    /// nothing if it connects (merely slower).
    OutpacedAtThreshold,
}

/// Configuration of a `Race`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RaceConfig {
    /// Minimum time between two attempt starts (Mars "interval"). Used as is
    /// when `adaptive_stagger` is `None` or the race has no RTT hint.
    pub stagger: Duration,
    /// Minimum time between the last start and the next one when the most
    /// recent event was a failure (Mars "error_interval").
    pub error_stagger: Duration,
    /// Most attempts in flight at once (0 is treated as 1).
    pub max_in_flight: usize,
    /// Each attempt's own deadline, from its start (at least 1 ms is used).
    pub attempt_timeout: Duration,
    /// Derive the stagger from the RTT hint (stn).
    pub adaptive_stagger: Option<AdaptiveStagger>,
    /// Abandon attempts whose SYNs look lost (stn): report them and free
    /// their slot, keeping each open as a passive probe (up to
    /// `max_abandons` sockets beyond the slots and the floor).
    pub abandon: Option<AbandonPolicy>,
    /// Keep Mars's attempt schedule as a floor under this one (stn). Floor
    /// attempts may open up to `floor.max_open` sockets beyond
    /// `max_in_flight`.
    pub floor: Option<ProbeFloor>,
    /// Passes over the candidate list. `None`: go round until the overall
    /// deadline; with no deadline at all, one pass. `Some(0)` counts as 1.
    pub max_rounds: Option<u32>,
    /// The race gives up this long after its start (and in any case at the
    /// caller's deadline, whichever is first). `None`: only the caller's.
    pub overall_timeout: Option<Duration>,
    /// What to report about losers.
    pub loser_reports: LoserReports,
    /// Go quiet in an outage (stn): see [`QuietPolicy`]. Needs a `floor`;
    /// `None`: race on.
    pub quiet: Option<QuietPolicy>,
}

/// What a race does in an outage (stn; see the module docs): once nothing
/// has answered (no connect, no socket error) for `after` since the race
/// started or last heard something, nor since the last candidate had its
/// first attempt, it closes every attempt but the floor's and starts no fresh ones until an
/// answer. The first floor attempt to reach its own deadline while quiet is
/// kept open instead, as the race's one long-lived probe, until `probe_for`
/// after its start: the OS keeps retransmitting its SYN on its own backed-off
/// schedule, as a peer's single long-timeout socket would.
///
/// ```
/// use stn_proto::config::QuietPolicy;
/// use stn_proto::Duration;
/// let q = QuietPolicy::default();
/// assert_eq!((q.after, q.probe_for), (Duration::from_secs(3), Duration::from_secs(60)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QuietPolicy {
    /// Silence after which the race goes quiet.
    pub after: Duration,
    /// Lifetime of the probe, from its start.
    pub probe_for: Duration,
}

impl Default for QuietPolicy {
    /// stn's choice: quiet after 3 s of silence (past the OS's first SYN
    /// retransmission and one abandon round), a probe of 60 s (NSURLSession's
    /// default request timeout).
    fn default() -> Self {
        QuietPolicy {
            after: Duration::from_secs(3),
            probe_for: Duration::from_secs(60),
        }
    }
}

impl RaceConfig {
    /// Most sockets a race opens at once: `max_in_flight` slots, the
    /// floor's `max_open` passive attempts and, under an [`AbandonPolicy`],
    /// one passive probe per abandonment (`max_abandons`; a floor attempt's
    /// abandonment counts too, so this is not tight).
    pub fn max_open(&self) -> usize {
        let floor = self.floor.map_or(0, |f| f.max_open.max(1));
        let probes = self.abandon.map_or(0, |p| p.max_abandons);
        let probes = usize::try_from(probes).unwrap_or(usize::MAX);
        self.max_in_flight
            .max(1)
            .saturating_add(floor)
            .saturating_add(probes)
    }

    /// The stagger a race with this RTT hint uses.
    pub fn stagger_for(&self, rtt_hint: Option<Duration>) -> Duration {
        match (self.adaptive_stagger, rtt_hint) {
            (Some(a), Some(rtt)) => a.stagger_for(rtt),
            _ => self.stagger,
        }
    }
}

/// Identifies one attempt of a race: its start order, from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct AttemptId(pub u32);

/// How one attempt ended, as reported in `RaceAction::Report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttemptResult {
    /// It connected (and won).
    Connected {
        /// From its start to the connection.
        connect_time: Duration,
    },
    /// It failed: an error from the socket, its own deadline
    /// ([`ConnectError::AttemptTimeout`]), the race's overall deadline (also
    /// `AttemptTimeout`), or, under Mars profiles, losing while started before
    /// the winner ([`ConnectError::TimedOut`]).
    Failed(ConnectError),
    /// stn cancelled it because its SYNs looked lost ([`AbandonPolicy`]).
    Abandoned,
    /// stn cancelled it because another attempt won (no verdict).
    Lost,
    /// stn cancelled it because another attempt, on another address and
    /// started later, won well before it answered
    /// ([`LoserReports::Outpaced`]): a failure of its address.
    Outpaced,
}

/// Why a race failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailReason {
    /// The candidate list was empty.
    NoCandidates,
    /// Every attempt failed and no more may start.
    Exhausted,
    /// The overall deadline passed.
    Deadline,
}

/// What the caller must do; drain with [`Race::poll_action`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RaceAction {
    /// Open a non-blocking TCP connection to `addr` for `attempt`.
    Connect {
        /// The new attempt.
        attempt: AttemptId,
        /// Where to connect.
        addr: SocketAddr,
    },
    /// Close `attempt`'s socket; any later result for it is ignored.
    Cancel {
        /// The attempt to close.
        attempt: AttemptId,
        /// Its address.
        addr: SocketAddr,
    },
    /// `attempt` lost the race but is not judged yet
    /// ([`LoserReports::OutpacedAtThreshold`]): its socket is the caller's
    /// now, to keep open until `until`. No `Cancel` or `Report` follows from
    /// the race; the caller reports it outpaced if it has
    /// neither connected nor failed by then (and closes it), nothing if it
    /// connects, and the socket's error if it fails.
    Linger {
        /// The losing attempt.
        attempt: AttemptId,
        /// Its address.
        addr: SocketAddr,
        /// When its verdict is due: its start plus twice the winner's
        /// connect time plus 100 ms (at most its own attempt deadline).
        until: Instant,
    },
    /// Record how `attempt` ended (for IP history and metrics).
    Report {
        /// The attempt.
        attempt: AttemptId,
        /// Its address.
        addr: SocketAddr,
        /// How it ended.
        result: AttemptResult,
    },
    /// The race is won: use `attempt`'s socket. Emitted exactly once on success.
    Won {
        /// The winning attempt.
        attempt: AttemptId,
        /// Its address.
        addr: SocketAddr,
        /// From its start to the connection.
        connect_time: Duration,
    },
    /// The race failed. Emitted exactly once, when nothing is in flight and no
    /// attempt may start any more (or the deadline passed).
    Failed {
        /// Why.
        reason: FailReason,
        /// The most recent attempt error, if any attempt failed.
        last_error: Option<ConnectError>,
        /// How many attempts were started.
        attempts: u32,
    },
}

/// Where an attempt stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttemptState {
    /// Still connecting.
    Connecting,
    /// It connected and won.
    Connected,
    /// It failed (socket error, its own or the overall deadline).
    Failed(ConnectError),
    /// Cancelled because another attempt won.
    Lost,
    /// Cancelled by [`Race::cancel`].
    Cancelled,
}

/// Per-attempt statistics, from [`Race::attempts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AttemptStats {
    /// The attempt.
    pub id: AttemptId,
    /// Its address.
    pub addr: SocketAddr,
    /// Index of its address in the candidate list.
    pub candidate: usize,
    /// Which pass over the candidate list it belongs to (from 0).
    pub round: u32,
    /// When it started.
    pub started: Instant,
    /// Its own deadline.
    pub deadline: Instant,
    /// When it is to be abandoned (or, for a floor attempt, to give up its
    /// slot), if the abandon rule applies.
    pub abandon_at: Option<Instant>,
    /// It started at a floor instant ([`ProbeFloor`]): at its abandon time
    /// it is made passive without an `Abandoned` report.
    pub floor: bool,
    /// When it left the slots while keeping its socket open (at its abandon
    /// time, or at its start for a floor attempt started outside the
    /// slots). A passive attempt can still win.
    pub passive_since: Option<Instant>,
    /// It reached its abandon time in a slot and was reported
    /// abandoned (never a floor attempt); it stays open as
    /// a passive probe.
    pub abandoned: bool,
    /// When it ended, if it has.
    pub ended: Option<Instant>,
    /// When its TCP connect completed, if a TLS handshake then ran on it
    /// ([`Race::handle_tcp_connected`]): its connect time ends here.
    pub tcp_connected: Option<Instant>,
    /// Where it stands.
    pub state: AttemptState,
}

/// How a finished race ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RaceOutcome {
    /// An attempt connected.
    Won(AttemptId),
    /// No attempt connected.
    Failed(FailReason),
    /// [`Race::cancel`] was called.
    Cancelled,
}

/// Connection racing state machine. See the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct Race {
    config: RaceConfig,
    candidates: Vec<SocketAddr>,
    rtt_hint: Option<Duration>,
    stagger: Duration,
    deadline: Option<Instant>,
    max_rounds: u32,
    clock: MonotonicClock,
    attempts: Vec<AttemptStats>,
    /// Position in the (round, candidate) sequence of the next start.
    cursor: u64,
    last_start: Option<Instant>,
    /// The last start of a floor attempt.
    last_floor_start: Option<Instant>,
    /// Floor attempts started in the floor's current pass.
    floor_in_pass: usize,
    /// When the last floor attempt ended.
    last_floor_end: Option<Instant>,
    /// The most recent event (start or failure) was a failure.
    last_event_failed: bool,
    last_error: Option<ConnectError>,
    /// Addresses with an attempt that failed with a socket error; skipped after round 0.
    hard_failed: BTreeSet<SocketAddr>,
    abandons: u32,
    /// The race start or the last answer (a connect, a socket error).
    heard_at: Instant,
    /// Quiet in an outage ([`RaceConfig::quiet`]): only floor
    /// attempts and the probe run.
    quiet: bool,
    /// When the last candidate had its first attempt.
    tried_all_at: Option<Instant>,
    /// The long-lived probe kept while quiet, once there is one.
    probe: Option<AttemptId>,
    outcome: Option<RaceOutcome>,
    actions: VecDeque<RaceAction>,
}

impl Race {
    /// Starts a race at `now` over `candidates` (in order; duplicates are
    /// separate attempts). `rtt_hint` sets the adaptive stagger and the abandon
    /// time; `deadline` bounds the whole race. The first
    /// [`RaceAction::Connect`] is queued at once; an empty list queues
    /// [`RaceAction::Failed`] with [`FailReason::NoCandidates`].
    pub(crate) fn new(
        now: Instant,
        config: RaceConfig,
        candidates: Vec<SocketAddr>,
        rtt_hint: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Self {
        let own = config.overall_timeout.map(|t| now + t);
        let deadline = match (deadline, own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let max_rounds = match config.max_rounds {
            Some(n) => n.max(1),
            // Cycling needs a deadline to end; without one, one pass.
            None if deadline.is_some() => u32::MAX,
            None => 1,
        };
        let mut clock = MonotonicClock::new();
        clock.observe(now);
        let mut race = Race {
            stagger: config.stagger_for(rtt_hint),
            config,
            candidates,
            rtt_hint,
            deadline,
            max_rounds,
            clock,
            attempts: Vec::new(),
            cursor: 0,
            last_start: None,
            last_floor_start: None,
            floor_in_pass: 0,
            last_floor_end: None,
            last_event_failed: false,
            last_error: None,
            hard_failed: BTreeSet::new(),
            abandons: 0,
            heard_at: now,
            quiet: false,
            tried_all_at: None,
            probe: None,
            outcome: None,
            actions: VecDeque::new(),
        };
        if race.candidates.is_empty() {
            race.finish_failed(FailReason::NoCandidates);
        } else {
            race.drive(now);
        }
        race
    }

    /// The adapter saw `attempt` connect at `now`: it wins, every other attempt
    /// in flight is cancelled. Ignored for unknown or finished attempts and
    /// once the race is over. A connection reported after the overall deadline
    /// but before a [`Race::handle_timeout`] noticed it still wins: the socket
    /// is good and the caller asked for it.
    pub(crate) fn handle_connected(&mut self, now: Instant, attempt: AttemptId) {
        let now = self.clock.observe(now);
        let Some(i) = self.live_index(attempt) else {
            // Nothing to do for this attempt, but time moved: deadlines that
            // passed must still fire so `poll_timeout` stays ahead of `now`.
            self.drive(now);
            return;
        };
        // With TLS the TCP connect ended earlier: the connect time (the
        // RTT sample) is TCP's alone, not the handshake's round trips.
        let connect_time = self.attempts[i].tcp_connected.unwrap_or(now) - self.attempts[i].started;
        let addr = self.attempts[i].addr;
        self.end_attempt(i, now, AttemptState::Connected);
        self.push_report(i, AttemptResult::Connected { connect_time });
        let outpaced_after = connect_time
            .saturating_mul(2)
            .saturating_add(Duration::from_millis(100));
        for j in 0..self.attempts.len() {
            if self.attempts[j].state != AttemptState::Connecting {
                continue;
            }
            let loser = &self.attempts[j];
            let suspect = j < i && loser.addr != addr;
            let outpaced = suspect && now - loser.started >= outpaced_after;
            let abandoned = loser.abandoned;
            // Never past its own attempt deadline, where it would fail anyway.
            let until = (loser.started + outpaced_after).min(loser.deadline);
            let (loser_id, loser_addr) = (loser.id, loser.addr);
            self.end_attempt(j, now, AttemptState::Lost);
            if suspect
                && !outpaced
                && !abandoned
                && self.config.loser_reports == LoserReports::OutpacedAtThreshold
            {
                // Too early to tell a black hole from a slower path: the
                // caller keeps the socket until the threshold and judges it.
                self.actions.push_back(RaceAction::Linger {
                    attempt: loser_id,
                    addr: loser_addr,
                    until,
                });
                continue;
            }
            self.push_cancel(j);
            if abandoned {
                // It already had its verdict (Abandoned).
                self.push_report(j, AttemptResult::Lost);
                continue;
            }
            match self.config.loser_reports {
                LoserReports::AllLost => self.push_report(j, AttemptResult::Lost),
                LoserReports::Outpaced | LoserReports::OutpacedAtThreshold if outpaced => {
                    self.push_report(j, AttemptResult::Outpaced);
                }
                LoserReports::Outpaced | LoserReports::OutpacedAtThreshold => {
                    self.push_report(j, AttemptResult::Lost);
                }
                LoserReports::MarsLowerIndexTimedOut if j < i => {
                    self.push_report(j, AttemptResult::Failed(ConnectError::TimedOut));
                }
                LoserReports::MarsLowerIndexTimedOut => {}
            }
        }
        self.actions.push_back(RaceAction::Won {
            attempt,
            addr,
            connect_time,
        });
        self.outcome = Some(RaceOutcome::Won(attempt));
    }

    /// The adapter saw `attempt`'s TCP connect complete at `now`, and runs a
    /// TLS handshake on it before reporting it connected: the attempt stays
    /// in the race (its deadlines still run, so a stalled handshake is
    /// abandoned like a stalled connect) and its connect time is taken now.
    /// Ignored for unknown or finished attempts and once the race is over.
    pub(crate) fn handle_tcp_connected(&mut self, now: Instant, attempt: AttemptId) {
        let now = self.clock.observe(now);
        if let Some(i) = self.live_index(attempt) {
            self.attempts[i].tcp_connected.get_or_insert(now);
            self.heard(now);
        }
        self.drive(now);
    }

    /// The adapter saw `attempt` fail at `now` (its socket is already closed:
    /// no [`RaceAction::Cancel`] follows). Frees a slot. Ignored for unknown or
    /// finished attempts and once the race is over.
    pub(crate) fn handle_failed(&mut self, now: Instant, attempt: AttemptId, error: ConnectError) {
        let now = self.clock.observe(now);
        let Some(i) = self.live_index(attempt) else {
            self.drive(now);
            return;
        };
        let frees_slot = self.attempts[i].passive_since.is_none();
        self.end_attempt(i, now, AttemptState::Failed(error));
        self.push_report(i, AttemptResult::Failed(error));
        self.note_failure(error, frees_slot);
        self.hard_failed.insert(self.attempts[i].addr);
        self.heard(now);
        self.drive(now);
    }

    /// Processes every deadline at or before `now`. Idempotent; safe to call
    /// early.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        self.drive(now);
    }

    /// Aborts the race: every attempt in flight gets a [`RaceAction::Cancel`]
    /// (no reports: a cancelled attempt says nothing about its address) and
    /// the race ends as [`RaceOutcome::Cancelled`] without a `Won`/`Failed`
    /// action. Ignored once the race is over.
    pub(crate) fn cancel(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.outcome.is_some() {
            return;
        }
        for i in 0..self.attempts.len() {
            if self.attempts[i].state == AttemptState::Connecting {
                self.end_attempt(i, now, AttemptState::Cancelled);
                self.push_cancel(i);
            }
        }
        self.outcome = Some(RaceOutcome::Cancelled);
    }

    /// The next action, if any. Drain until `None` after every input.
    pub(crate) fn poll_action(&mut self) -> Option<RaceAction> {
        let action = self.actions.pop_front();
        // Drained: give the queue's room back, since thousands of attempts
        // may wait in flight, each otherwise holding room for several actions.
        if action.is_none() && self.actions.capacity() > 0 {
            self.actions = VecDeque::new();
        }
        action
    }

    /// When to call [`Race::handle_timeout`] next; `None` once finished. After
    /// a drain it is later than the latest `now` given.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if self.outcome.is_some() {
            return None;
        }
        let mut t = self.deadline.unwrap_or(Instant::MAX);
        for a in self
            .attempts
            .iter()
            .filter(|a| a.state == AttemptState::Connecting)
        {
            t = t.min(a.deadline);
            if let Some(ab) = a.abandon_at {
                t = t.min(ab);
            }
        }
        if !self.quiet && self.active() < self.max_in_flight() && self.next_candidate().is_some() {
            t = t.min(self.next_start_at());
        }
        if let Some(q) = self.quiet_at() {
            t = t.min(q);
        }
        if let Some(floor) = self.next_floor_start_at() {
            t = t.min(floor);
        }
        (t != Instant::MAX).then_some(t)
    }

    /// Attempts started so far.
    pub(crate) fn attempts_started(&self) -> u32 {
        u32::try_from(self.attempts.len()).unwrap_or(u32::MAX)
    }

    /// Attempts currently connecting (open sockets), passive ones included:
    /// at most [`RaceConfig::max_open`].
    pub(crate) fn in_flight(&self) -> usize {
        self.open().count()
    }

    /// Attempts connecting in one of the `max_in_flight` slots (not passive).
    pub(crate) fn active(&self) -> usize {
        self.open().filter(|a| a.passive_since.is_none()).count()
    }

    /// Whether the race is over (won, failed or cancelled). Queued actions may
    /// remain to be drained.
    pub(crate) fn is_finished(&self) -> bool {
        self.outcome.is_some()
    }

    #[cfg(any(test, fuzzing))]
    /// How the race ended, once it has.
    pub(crate) fn outcome(&self) -> Option<RaceOutcome> {
        self.outcome
    }

    /// Every attempt started so far, in start order (index = [`AttemptId`]).
    pub(crate) fn attempts(&self) -> &[AttemptStats] {
        &self.attempts
    }

    /// Whether the race failed having tried every candidate and met only
    /// deterministic failures ([`ConnectError::is_deterministic`]: a refusal
    /// or a permanent TLS failure), which the same race run again at once
    /// would meet again.
    pub(crate) fn failed_deterministically(&self) -> bool {
        if self.outcome != Some(RaceOutcome::Failed(FailReason::Exhausted)) {
            return false;
        }
        let tried: BTreeSet<SocketAddr> = self.attempts.iter().map(|a| a.addr).collect();
        self.candidates.iter().all(|c| tried.contains(c))
            && self
                .attempts
                .iter()
                .all(|a| matches!(a.state, AttemptState::Failed(e) if e.is_deterministic()))
    }

    /// One attempt's statistics.
    pub(crate) fn attempt(&self, id: AttemptId) -> Option<&AttemptStats> {
        self.attempts.get(usize::try_from(id.0).ok()?)
    }

    #[cfg(test)]
    /// The stagger this race uses (adapted to the RTT hint under stn).
    pub(crate) fn stagger(&self) -> Duration {
        self.stagger
    }

    #[cfg(test)]
    /// The overall deadline: the caller's or `overall_timeout` after the start,
    /// whichever is first.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    // ---- the one place where time-driven transitions happen ----

    fn drive(&mut self, now: Instant) {
        if self.outcome.is_some() {
            return;
        }
        // 1. Attempts past their own deadline fail (one floor attempt, while
        // quiet, becomes the probe instead).
        for i in 0..self.attempts.len() {
            let a = &self.attempts[i];
            if a.state == AttemptState::Connecting && a.deadline <= now {
                if self.keep_as_probe(i, now) {
                    continue;
                }
                let a = &self.attempts[i];
                let frees_slot = a.passive_since.is_none();
                let err = ConnectError::AttemptTimeout;
                self.end_attempt(i, now, AttemptState::Failed(err));
                self.push_cancel(i);
                self.push_timer_failure(i, err);
                self.note_failure(err, frees_slot);
            }
        }
        // 2. Silent past the SYN schedule: an outage, most likely. Fresh
        // sockets would only send SYNs into it (and, when it ends, several
        // of them reach the server at once); the floor keeps a SYN on the
        // wire wherever Mars has one.
        self.quiet_if_due(now);
        // 3. Abandon attempts whose SYNs look lost, if a fresh one may replace them.
        for i in 0..self.attempts.len() {
            if self.quiet {
                break;
            }
            let a = &self.attempts[i];
            if a.state != AttemptState::Connecting || a.abandon_at.is_none_or(|t| t > now) {
                continue;
            }
            let max = self.config.abandon.map_or(0, |p| p.max_abandons);
            let replaceable =
                self.deadline.is_none_or(|d| now < d) && self.next_candidate().is_some();
            if self.abandons >= max || !replaceable {
                self.attempts[i].abandon_at = None;
                continue;
            }
            self.abandons += 1;
            // The attempt gives up its slot but keeps its socket: the OS
            // keeps retransmitting its SYN on its own schedule, between the
            // fresh attempt's SYNs, so an outage that ends between two of
            // them is still caught. A slot attempt's address is told now (a
            // black hole is demoted) and a later end by stn's timers adds no
            // second verdict. A floor attempt gives none here: it is Mars's
            // own attempt, judged as Mars judges it (at its 10 s timeout or
            // when another wins); the race's first attempt is one, and
            // reporting it would demote a good address for every outage
            // that outlasts the abandon time.
            let a = &mut self.attempts[i];
            a.abandon_at = None;
            a.passive_since = Some(now);
            if !a.floor {
                a.abandoned = true;
                self.push_report(i, AttemptResult::Abandoned);
            }
            self.last_event_failed = true;
        }
        // 4. The overall deadline ends everything.
        if self.deadline.is_some_and(|d| d <= now) {
            for i in 0..self.attempts.len() {
                if self.attempts[i].state == AttemptState::Connecting {
                    let err = ConnectError::AttemptTimeout;
                    self.end_attempt(i, now, AttemptState::Failed(err));
                    self.push_cancel(i);
                    self.push_timer_failure(i, err);
                    self.note_failure(err, true);
                }
            }
            self.finish_failed(FailReason::Deadline);
            return;
        }
        // 5. Start attempts: first the floor's (Mars's schedule, bounded by
        // `floor.max_open`; one that falls when a slot start is due is that
        // start, any other is passive from the start), then into free slots
        // (bounded: each start fills a slot).
        while self.next_floor_start_at().is_some_and(|t| t <= now) {
            let Some((pos, candidate, round)) = self.next_candidate() else {
                break;
            };
            let in_slot = !self.quiet && self.slot_start_due(now);
            self.start(now, pos, candidate, round, true, in_slot);
        }
        while !self.quiet && self.slot_start_due(now) {
            let Some((pos, candidate, round)) = self.next_candidate() else {
                break;
            };
            self.start(now, pos, candidate, round, false, true);
        }
        // Trying the last candidate may have made the quiet due now.
        self.quiet_if_due(now);
        // 6. Nothing in flight and nothing left to start: the race failed.
        if self.in_flight() == 0 && self.next_candidate().is_none() {
            self.finish_failed(FailReason::Exhausted);
        }
    }

    /// Starts an attempt: in a slot (it counts against `max_in_flight`, sets
    /// the stagger and may be abandoned) or, for a floor attempt, passive.
    fn start(
        &mut self,
        now: Instant,
        pos: u64,
        candidate: usize,
        round: u32,
        floor: bool,
        in_slot: bool,
    ) {
        let id = AttemptId(self.attempts_started());
        let addr = self.candidates[candidate];
        let timeout = self.config.attempt_timeout.max(Duration::from_millis(1));
        let abandon_at = self.config.abandon.filter(|_| in_slot).and_then(|p| {
            let after = p.abandon_after(self.rtt_hint);
            (self.abandons < p.max_abandons && after < timeout).then(|| now + after)
        });
        self.attempts.push(AttemptStats {
            id,
            addr,
            candidate,
            round,
            started: now,
            deadline: now + timeout,
            abandon_at,
            floor,
            passive_since: (!in_slot).then_some(now),
            abandoned: false,
            ended: None,
            tcp_connected: None,
            state: AttemptState::Connecting,
        });
        self.cursor = pos + 1;
        if self.tried_all_at.is_none() && self.cursor >= self.candidates.len() as u64 {
            self.tried_all_at = Some(now);
        }
        if floor {
            if self.floor_pass_done() {
                self.floor_in_pass = 0;
            }
            self.floor_in_pass += 1;
            self.last_floor_start = Some(now);
        }
        if in_slot {
            self.last_start = Some(now);
            self.last_event_failed = false;
        }
        self.actions
            .push_back(RaceAction::Connect { attempt: id, addr });
    }

    /// The next (cursor position, candidate index, round) that may start, if
    /// any: round 0 takes every entry; later rounds skip addresses that failed
    /// with a socket error, and stop at `max_rounds`.
    fn next_candidate(&self) -> Option<(u64, usize, u32)> {
        let n = self.candidates.len() as u64;
        if n == 0 {
            return None;
        }
        // At most one full pass past the cursor is needed to find a usable entry.
        for pos in self.cursor..self.cursor.saturating_add(n) {
            let round = u32::try_from(pos / n).unwrap_or(u32::MAX);
            if round >= self.max_rounds {
                return None;
            }
            let idx = usize::try_from(pos % n).unwrap_or(0);
            if round == 0 || !self.hard_failed.contains(&self.candidates[idx]) {
                return Some((pos, idx, round));
            }
        }
        None
    }

    /// Whether a slot is free and the stagger since the last slot start has
    /// passed.
    fn slot_start_due(&self, now: Instant) -> bool {
        self.active() < self.max_in_flight() && self.next_start_at() <= now
    }

    fn next_start_at(&self) -> Instant {
        match self.last_start {
            None => Instant::ZERO,
            Some(t) if self.last_event_failed => t + self.config.error_stagger,
            Some(t) => t + self.stagger_to_next(),
        }
    }

    /// The stagger before the next slot attempt. Without an RTT hint (stn),
    /// an address is not raced against an attempt to itself that is still
    /// connecting before the OS would have retransmitted that attempt's SYN
    /// (`abandon.syn_rto`, 1 s): nothing says the SYN was lost rather than
    /// the path being slow (a 2G handshake takes well over 250 ms), and on a
    /// slow link each extra SYN costs bandwidth. Different addresses keep the
    /// 250 ms of RFC 8305; with an RTT hint the adaptive stagger applies.
    fn stagger_to_next(&self) -> Duration {
        let (None, Some(_), Some(p)) = (
            self.rtt_hint,
            self.config.adaptive_stagger,
            self.config.abandon,
        ) else {
            return self.stagger;
        };
        let Some((_, idx, _)) = self.next_candidate() else {
            return self.stagger;
        };
        let addr = self.candidates[idx];
        if self.open().any(|a| a.addr == addr) {
            self.stagger.max(p.syn_rto)
        } else {
            self.stagger
        }
    }

    /// When the next floor attempt is due, if the floor has room and a
    /// candidate is left: the race start, then `floor.stagger` after the last
    /// floor start (Mars's rule; Mars's error interval equals its interval).
    fn next_floor_start_at(&self) -> Option<Instant> {
        let floor = self.config.floor?;
        let open = self.open().filter(|a| a.floor).count();
        if open >= floor.max_open.max(1) || self.next_candidate().is_none() {
            return None;
        }
        let by_stagger = match self.last_floor_start {
            None => Instant::ZERO,
            Some(t) => t + floor.stagger,
        };
        match floor.pass_gap {
            Some(gap) if self.floor_pass_done() => {
                // Mars's race fails once its pass is over; its retry
                // starts the next race after the gap.
                if open > 0 {
                    return None;
                }
                Some(by_stagger.max(self.last_floor_end? + gap))
            }
            _ => Some(by_stagger),
        }
    }

    /// The floor's current pass has had one attempt per candidate.
    fn floor_pass_done(&self) -> bool {
        self.floor_in_pass >= self.candidates.len()
    }

    /// When the race goes quiet, if it may: `after` past the last thing
    /// heard and past the first attempt of the last candidate tried (an
    /// untried one may be the live one), and only with a floor to keep
    /// probing.
    fn quiet_at(&self) -> Option<Instant> {
        let after = self.config.quiet?.after;
        let tried_all = self.tried_all_at?;
        (!self.quiet && self.config.floor.is_some()).then(|| self.heard_at.max(tried_all) + after)
    }

    fn quiet_if_due(&mut self, now: Instant) {
        if self.quiet_at().is_some_and(|t| t <= now) {
            self.go_quiet(now);
        }
    }

    /// Closes every open attempt but the floor's (no verdict: the silence
    /// is the path's, not an address's; an abandoned one had its verdict)
    /// and stops fresh starts until [`Race::heard`].
    fn go_quiet(&mut self, now: Instant) {
        self.quiet = true;
        for i in 0..self.attempts.len() {
            let a = &mut self.attempts[i];
            if a.state != AttemptState::Connecting {
                continue;
            }
            if a.floor || Some(a.id) == self.probe {
                a.abandon_at = None;
                continue;
            }
            self.end_attempt(i, now, AttemptState::Lost);
            self.push_cancel(i);
            self.push_report(i, AttemptResult::Lost);
        }
    }

    /// While quiet and without a probe, the floor attempt `i` at its
    /// deadline stays open as the probe: for the floor it ends now (Mars's
    /// attempt would), for the OS its SYN keeps being retransmitted.
    fn keep_as_probe(&mut self, i: usize, now: Instant) -> bool {
        let Some(q) = self.config.quiet else {
            return false;
        };
        let a = &mut self.attempts[i];
        let until = a.started + q.probe_for;
        if !self.quiet || self.probe.is_some() || !a.floor || until <= now {
            return false;
        }
        a.floor = false;
        a.deadline = until;
        a.passive_since.get_or_insert(now);
        self.probe = Some(a.id);
        self.last_floor_end = Some(now);
        true
    }

    /// Something answered (a connect or a socket error): the path is up,
    /// so the race races again.
    fn heard(&mut self, now: Instant) {
        self.heard_at = now;
        self.quiet = false;
    }

    fn open(&self) -> impl Iterator<Item = &AttemptStats> {
        self.attempts
            .iter()
            .filter(|a| a.state == AttemptState::Connecting)
    }

    fn max_in_flight(&self) -> usize {
        self.config.max_in_flight.max(1)
    }

    fn live_index(&self, attempt: AttemptId) -> Option<usize> {
        if self.outcome.is_some() {
            return None;
        }
        let i = usize::try_from(attempt.0).ok()?;
        (self.attempts.get(i)?.state == AttemptState::Connecting).then_some(i)
    }

    /// Records a failure; only one that frees a slot makes the next slot
    /// start use `error_stagger` (a passive attempt's holds no slot).
    fn note_failure(&mut self, error: ConnectError, frees_slot: bool) {
        self.last_event_failed |= frees_slot;
        self.last_error = Some(error);
    }

    fn end_attempt(&mut self, i: usize, now: Instant, state: AttemptState) {
        let a = &mut self.attempts[i];
        a.state = state;
        a.ended = Some(now);
        a.abandon_at = None;
        if a.floor {
            self.last_floor_end = Some(now);
        }
    }

    fn push_cancel(&mut self, i: usize) {
        let a = &self.attempts[i];
        self.actions.push_back(RaceAction::Cancel {
            attempt: a.id,
            addr: a.addr,
        });
    }

    fn push_report(&mut self, i: usize, result: AttemptResult) {
        let a = &self.attempts[i];
        self.actions.push_back(RaceAction::Report {
            attempt: a.id,
            addr: a.addr,
            result,
        });
    }

    /// Reports a failure by stn's own timers, unless the attempt was
    /// already reported abandoned: that was its verdict,
    /// and a second one would count one unanswered SYN twice.
    fn push_timer_failure(&mut self, i: usize, error: ConnectError) {
        if !self.attempts[i].abandoned {
            self.push_report(i, AttemptResult::Failed(error));
        }
    }

    fn finish_failed(&mut self, reason: FailReason) {
        self.actions.push_back(RaceAction::Failed {
            reason,
            last_error: self.last_error,
            attempts: self.attempts_started(),
        });
        self.outcome = Some(RaceOutcome::Failed(reason));
    }
}
