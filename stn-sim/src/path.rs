//! A path between the client host and one server address: two independent
//! link directions, each with its own schedule of conditions.

use stn_proto::Instant;

use crate::link::{GilbertElliott, LinkConditions, LinkSchedule, LossModel};

/// Which way a packet travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Client to server (uplink).
    Up = 0,
    /// Server to client (downlink).
    Down = 1,
}

/// Conditions of both directions at one moment (what a preset describes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathConditions {
    /// Client → server.
    pub up: LinkConditions,
    /// Server → client.
    pub down: LinkConditions,
}

impl PathConditions {
    /// The same conditions both ways.
    pub fn symmetric(c: LinkConditions) -> Self {
        PathConditions { up: c, down: c }
    }

    /// Replaces the loss model of both directions, keeping delay and
    /// bandwidth: this is how presets combine ("3G + 30% loss" =
    /// `Preset::ThreeG.conditions().with_loss(LossModel::percent(30.0))`).
    pub fn with_loss(mut self, loss: LossModel) -> Self {
        self.up.loss = loss;
        self.down.loss = loss;
        self
    }

    /// [`PathConditions::with_loss`] with Bernoulli loss of `percent` each way.
    pub fn with_loss_percent(self, percent: f64) -> Self {
        self.with_loss(LossModel::percent(percent))
    }

    /// [`PathConditions::with_loss`] with Gilbert–Elliott bursty loss of
    /// average `rate` (0..1) in bursts lasting `mean_burst` on average, each
    /// way.
    pub fn with_bursty_loss(self, rate: f64, mean_burst: stn_proto::Duration) -> Self {
        self.with_loss(LossModel::GilbertElliott(
            GilbertElliott::with_rate_and_burst(rate, mean_burst),
        ))
    }

    /// The same path with every packet lost (an outage); delay and bandwidth
    /// are kept.
    pub fn outage(self) -> Self {
        self.with_loss(LossModel::OUTAGE)
    }

    /// Round-trip propagation delay (no jitter, no serialization).
    pub fn base_rtt(&self) -> stn_proto::Duration {
        self.up.delay + self.down.delay
    }
}

/// Both directions over time.
#[derive(Clone, Debug, PartialEq)]
pub struct PathSchedule {
    /// Client → server.
    pub up: LinkSchedule,
    /// Server → client.
    pub down: LinkSchedule,
}

impl PathSchedule {
    /// The same conditions forever.
    pub fn constant(c: PathConditions) -> Self {
        PathSchedule {
            up: LinkSchedule::constant(c.up),
            down: LinkSchedule::constant(c.down),
        }
    }

    /// From `at` on, both directions follow `c`.
    pub fn then_at(mut self, at: Instant, c: PathConditions) -> Self {
        self.up.set_at(at, c.up);
        self.down.set_at(at, c.down);
        self
    }

    /// `base`, except that every packet sent in `[from, until)` is lost
    /// (the benchmark's "100% loss for R seconds, then the normal network").
    ///
    /// ```
    /// use stn_sim::path::PathSchedule;
    /// use stn_sim::preset::Preset;
    /// use stn_proto::Instant;
    /// let s = PathSchedule::outage(Preset::ThreeG.conditions(), Instant::ZERO, Instant::from_secs(10));
    /// assert_eq!(s.up.at(Instant::from_secs(9)).loss, stn_sim::link::LossModel::OUTAGE);
    /// assert_eq!(s.up.at(Instant::from_secs(10)), &Preset::ThreeG.conditions().up);
    /// ```
    pub fn outage(base: PathConditions, from: Instant, until: Instant) -> Self {
        let s = if from == Instant::ZERO {
            PathSchedule::constant(base.outage())
        } else {
            PathSchedule::constant(base).then_at(from, base.outage())
        };
        s.then_at(until, base)
    }
}
