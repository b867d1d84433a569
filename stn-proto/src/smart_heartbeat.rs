//! The smart heartbeat: how long the long link may stay idle between two
//! heartbeats on the current network, learned per network (Mars
//! `SmartHeartbeat`, `mars/stn/src/smart_heartbeat.cc`; docs/heartbeat.md).
//!
//! A NAT or a carrier gateway on the path forgets a TCP flow that stays
//! idle longer than its timeout; the next packet of that flow is dropped
//! and the link is dead without either end knowing. A heartbeat every
//! 3.5 min keeps most such flows alive but wakes the phone's radio 17
//! times an hour; a heartbeat slower than the timeout kills the link.
//! This machine picks the interval per network, from what past heartbeats
//! on it proved:
//!
//! - [`SmartHeartbeatConfig::Fixed`]: always `HeartbeatConfig::interval`
//!   (Mars on every platform but Android, or with an encoder that sets
//!   `longlink_noop_interval`).
//! - [`SmartHeartbeatConfig::Mars`]: Mars's algorithm as its source has it
//!   (`mars` module): +60 s after 5 successes, back 80 s and stable after 2
//!   failures, the minimum while the app is active, a doze-style detector,
//!   a +20 s probe after 7 stable days.
//! - [`SmartHeartbeatConfig::Search`]: stn's bracketing search (`search`
//!   module): one success proves an idle time, steps of 60 s (or a quarter
//!   of the proof) up from 4.5 min to the first failure, then 20 s steps
//!   inside the bracket, at most two lost probes; tasks are never written
//!   on a link idle beyond what was proven (a noop goes first).
//!
//! One [`SmartHeartbeat`] lives as long as the long link (across its
//! connections, and across the app disabling it); the long link feeds it
//! the events Mars's `LongLink` gives its `SmartHeartbeat`: a connection
//! established, a heartbeat slot fired, a heartbeat (noop or identify)
//! sent with the link's idle time, its answer, the link lost, and asks it
//! for the interval at every arm of the heartbeat's slot. Records of at
//! most [`MAX_RECORDS`] networks are kept, keyed by the label the app
//! gives (Mars `getCurrNetLabel`), and persisted with the endpoint history
//! ([`SmartHeartbeat::encode`], [`SmartHeartbeat::decode`]). Days are
//! measured on the `now` values passed in.

mod mars;
mod persist;
mod records;
mod search;
#[cfg(test)]
mod tests;

use crate::net::NetworkKind;
use crate::time::{Duration, Instant};

pub use mars::MarsSmartConfig;
pub(crate) use persist::DecodedRecords;
pub use search::SearchConfig;

/// Most networks whose records are kept (Mars `MAX_INI_SECTIONS`, which
/// lets the file reach 21 sections: it trims only once it has more than
/// 20); the least recently changed one goes first.
pub const MAX_RECORDS: usize = 20;

/// Which algorithm picks the heartbeat interval.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SmartHeartbeatConfig {
    /// Always `HeartbeatConfig::interval` (Mars off Android: its
    /// `SmartHeartbeat` is only built `#ifdef ANDROID`).
    Fixed,
    /// Mars's `SmartHeartbeat`.
    Mars(MarsSmartConfig),
    /// stn's bracketing search.
    Search(SearchConfig),
}

/// What the app is doing, as the heartbeat cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AppState {
    /// In the foreground.
    pub(crate) foreground: bool,
    /// Mars `ActiveLogic::IsActive`: foreground, or background for less
    /// than 10 min.
    pub(crate) active: bool,
}

/// Why the link ended, for a heartbeat that was awaiting its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkLoss {
    /// The noop (or identify) answer did not come in time (Mars
    /// `kEctSocketRecvErr`).
    HeartbeatTimeout,
    /// The peer (or a middlebox) closed or reset the connection.
    Peer,
    /// Anything else: a task's timer, a decode error, the app or a network
    /// change took the link down.
    Other,
}

/// The current network's record, for the app and the simulator
/// ([`Engine::heartbeat_state`](crate::Engine::heartbeat_state)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeartbeatState {
    /// The network's label (`""` if the app gave none).
    pub network: String,
    /// The interval the record holds now: Mars's `curHeart`; under stn the
    /// interval of the next probe, or the settled one.
    pub learned: Duration,
    /// Whether learning ended on this network (Mars `stable`; stn: the
    /// search settled).
    pub stable: bool,
    /// The interval last given to the heartbeat.
    pub in_use: Duration,
}

/// The smart heartbeat of one long link. See the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct SmartHeartbeat {
    kind: Kind,
    fixed: Duration,
    /// The label the app gave (Mars reads `getCurrNetLabel` at every
    /// connect; stn treats "no label" as one network of its own).
    label: String,
    network: NetworkKind,
    /// The last interval handed out.
    in_use: Duration,
}

#[derive(Clone, Debug)]
enum Kind {
    Fixed,
    Mars(Box<mars::MarsSmart>),
    Search(Box<search::SearchSmart>),
}

impl SmartHeartbeat {
    /// A machine for `config`; `fixed` is `HeartbeatConfig::interval`: the
    /// interval of [`SmartHeartbeatConfig::Fixed`], and while the app is
    /// active.
    pub(crate) fn new(config: &SmartHeartbeatConfig, fixed: Duration) -> Self {
        let kind = match config {
            SmartHeartbeatConfig::Fixed => Kind::Fixed,
            SmartHeartbeatConfig::Mars(c) => Kind::Mars(Box::new(mars::MarsSmart::new(c.clone()))),
            SmartHeartbeatConfig::Search(c) => {
                Kind::Search(Box::new(search::SearchSmart::new(c.clone())))
            }
        };
        SmartHeartbeat {
            in_use: fixed,
            kind,
            fixed,
            label: String::new(),
            network: NetworkKind::Wifi,
        }
    }

    /// The app's label of the current network (Mars `getCurrNetLabel`),
    /// taken into account at the next connect.
    pub(crate) fn set_label(&mut self, label: &str) {
        if self.label != label {
            self.label = label.to_owned();
        }
    }

    /// The network changed to `kind` (doze detection counts on mobile
    /// networks only). Under stn, a network without a label loses its
    /// record: nothing says the new one has the same NAT.
    pub(crate) fn set_network(&mut self, kind: NetworkKind) {
        self.network = kind;
        if let Kind::Search(s) = &mut self.kind {
            if self.label.is_empty() {
                s.forget("");
            }
        }
    }

    /// A connection is established (Mars `OnLongLinkEstablished`).
    pub(crate) fn on_established(&mut self, now: Instant) {
        let (label, network) = (self.label.clone(), self.network);
        match &mut self.kind {
            Kind::Fixed => {}
            Kind::Mars(m) => m.on_established(now, &label, network),
            Kind::Search(s) => s.on_established(now, &label),
        }
    }

    /// A heartbeat slot fired at `now` (`first`: the slot at connect).
    /// Mars judges the alarm's drift here (`JudgeDozeStyle`).
    pub(crate) fn on_slot(&mut self, now: Instant, first: bool, app: AppState) {
        if let Kind::Mars(m) = &mut self.kind {
            if !first {
                m.judge_doze(now, app.active, self.network.is_mobile());
            }
        }
    }

    /// A heartbeat (noop or identify) was written; the link had been idle
    /// (no byte either way) for `idle` (Mars `OnHeartbeatStart`). stn
    /// learns from background heartbeats only: in the foreground the
    /// user's traffic, and a lossy moment, say nothing of the path's idle
    /// limit.
    pub(crate) fn on_heartbeat_start(&mut self, now: Instant, idle: Duration, app: AppState) {
        let in_use = self.in_use;
        match &mut self.kind {
            Kind::Fixed => {}
            Kind::Mars(m) => m.on_heartbeat_start(now),
            Kind::Search(s) if app.foreground => s.abandon(),
            Kind::Search(s) => s.on_heartbeat_start(idle, in_use),
        }
    }

    /// The heartbeat was answered (Mars `OnHeartResult(true, false)`).
    pub(crate) fn on_answer(&mut self, now: Instant) {
        match &mut self.kind {
            Kind::Fixed => {}
            Kind::Mars(m) => m.on_heart_result(now, true, false),
            Kind::Search(s) => {
                s.on_result(now, true);
            }
        }
    }

    /// The established link is gone after `idle` without a byte: a
    /// heartbeat awaiting its answer has failed for `loss` (Mars
    /// `OnHeartResult(false, timeout)` at the end of `__RunReadWrite`), then
    /// the disconnect (`OnLongLinkDisconnect`). Returns whether to reconnect
    /// at once: stn lost the link to a probe beyond the proven idle time, so
    /// the network itself is fine. stn also takes a background link the
    /// peer closed or reset after an idle time beyond the proof, with no
    /// heartbeat pending (a server's or gateway's own idle limit), as such
    /// a loss.
    pub(crate) fn on_link_lost(
        &mut self,
        now: Instant,
        loss: LinkLoss,
        idle: Duration,
        app: AppState,
    ) -> bool {
        match &mut self.kind {
            Kind::Fixed => false,
            Kind::Mars(m) => {
                m.on_heart_result(now, false, loss == LinkLoss::HeartbeatTimeout);
                m.on_disconnect(now);
                false
            }
            Kind::Search(s) => match loss {
                LinkLoss::Peer if !app.foreground && s.idle_close(now, idle) => true,
                LinkLoss::HeartbeatTimeout | LinkLoss::Peer => s.on_result(now, false),
                LinkLoss::Other => {
                    s.abandon();
                    false
                }
            },
        }
    }

    /// A connect failed (Mars `OnLongLinkDisconnect` on `kConnectFailed`).
    pub(crate) fn on_connect_failed(&mut self, now: Instant) {
        if let Kind::Mars(m) = &mut self.kind {
            m.on_disconnect(now);
        }
    }

    /// The interval to arm the heartbeat's slot with now (Mars
    /// `GetNextHeartbeatInterval`, called after every write and slot).
    /// While the app is active (stn: in the foreground) it is at most
    /// `HeartbeatConfig::interval` (Mars's `MinHeartInterval`, which is its
    /// default).
    pub(crate) fn next_interval(&mut self, now: Instant, app: AppState) -> Duration {
        self.in_use = match &mut self.kind {
            Kind::Fixed => self.fixed,
            Kind::Mars(m) => m.next_interval(app.active, self.fixed),
            Kind::Search(s) => s.next_interval(now, app.foreground, self.fixed),
        };
        self.in_use
    }

    /// Whether the heartbeat's slot is re-armed as soon as the choice may
    /// change: at an answer (the next probe follows the proof at once) and
    /// when the app changes state (the foreground's interval applies at
    /// once). stn does; Mars asks only at the next write or slot.
    pub(crate) fn rearms_eagerly(&self) -> bool {
        matches!(self.kind, Kind::Search(_))
    }

    /// Whether a task written now, on a link idle for `idle`, could meet a
    /// binding that is already gone: stn then sends a noop first and writes
    /// the task on its answer. Mars writes at once.
    pub(crate) fn must_probe_first(&self, idle: Duration, app: AppState) -> bool {
        match &self.kind {
            Kind::Search(s) => !app.foreground && s.beyond_proven(idle),
            Kind::Fixed | Kind::Mars(_) => false,
        }
    }

    /// The current network's record.
    pub(crate) fn state(&self) -> Option<HeartbeatState> {
        let (learned, stable, network) = match &self.kind {
            Kind::Fixed => return None,
            Kind::Mars(m) => m.current()?,
            Kind::Search(s) => s.current()?,
        };
        Some(HeartbeatState {
            network,
            learned,
            stable,
            in_use: self.in_use,
        })
    }

    /// The records for storage (see [`persist`]); `latest` is the latest
    /// `now` seen and `wall_clock_secs` the wall-clock time matching it.
    pub(crate) fn encode(&self, latest: Instant, wall_clock_secs: u64, out: &mut Vec<u8>) {
        match &self.kind {
            Kind::Fixed => persist::encode_none(out),
            Kind::Mars(m) => persist::encode_mars(m.records(), latest, wall_clock_secs, out),
            Kind::Search(s) => persist::encode_search(s.records(), latest, wall_clock_secs, out),
        }
    }

    /// Validates stored records without applying them.
    pub(crate) fn decode(bytes: &[u8]) -> Result<DecodedRecords, persist::DecodeError> {
        persist::decode(bytes)
    }

    /// Merges decoded records (`wall_clock_secs` matching `now`); records
    /// of the other algorithm are skipped. Returns how many were taken.
    pub(crate) fn import(
        &mut self,
        records: DecodedRecords,
        wall_clock_secs: u64,
        now: Instant,
    ) -> usize {
        match &mut self.kind {
            Kind::Fixed => 0,
            Kind::Mars(m) => m.import(records.mars(wall_clock_secs, now)),
            Kind::Search(s) => s.import(records.search(wall_clock_secs, now)),
        }
    }
}
