//! Link presets: Apple Network Link Conditioner profiles as used by the Mars
//! benchmark (peers.md §4) and the benchmark's custom "N% loss" profiles.
//!
//! NLC values are the widely reported preset values (down / up); delay is
//! one-way per direction. Queues are dummynet's default 50 packets.

use stn_proto::Duration;

use crate::link::{LinkConditions, LossModel};
use crate::path::PathConditions;

/// A named link profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Preset {
    /// NLC "3G": 780 kbit/s down, 330 kbit/s up, 100 ms each way (RTT 200 ms), no loss.
    ThreeG,
    /// NLC "Edge" (the benchmark's "2G"): 240 kbit/s down / 200 kbit/s up,
    /// 400 ms down / 440 ms up (RTT 840 ms), no loss.
    Edge,
    /// NLC "LTE": 50 Mbit/s down, 10 Mbit/s up, 50 ms down / 65 ms up, no
    /// loss (the matrix takes its rates).
    Lte,
    /// NLC "Very Bad Network": 1 Mbit/s, 10% loss and 500 ms each way.
    VeryBadNetwork,
    /// NLC "100% Loss": every packet lost, no delay, unlimited bandwidth.
    FullLoss,
    /// The benchmark's custom "N% Loss": N% Bernoulli loss each way.
    ///
    /// The benchmark does not state its base path; **assumption:** 30 ms each
    /// way (60 ms RTT) with unlimited bandwidth, so loss is the only effect.
    LossPercent(f64),
}

impl Preset {
    /// One-way delay of the base path assumed by [`Preset::LossPercent`].
    pub const LOSS_BASE_ONE_WAY: Duration = Duration::from_millis(30);

    /// The conditions of both directions.
    ///
    /// Combine presets with [`PathConditions::with_loss`]: e.g. "3G + 30%
    /// loss" is `Preset::ThreeG.conditions().with_loss_percent(30.0)`, which
    /// keeps 3G's delay and bandwidth and replaces its loss model.
    pub fn conditions(self) -> PathConditions {
        match self {
            Preset::ThreeG => PathConditions {
                down: shaped(780_000, 100, LossModel::None),
                up: shaped(330_000, 100, LossModel::None),
            },
            Preset::Edge => PathConditions {
                down: shaped(240_000, 400, LossModel::None),
                up: shaped(200_000, 440, LossModel::None),
            },
            Preset::Lte => PathConditions {
                down: shaped(50_000_000, 50, LossModel::None),
                up: shaped(10_000_000, 65, LossModel::None),
            },
            Preset::VeryBadNetwork => {
                PathConditions::symmetric(shaped(1_000_000, 500, LossModel::percent(10.0)))
            }
            Preset::FullLoss => PathConditions::symmetric(LinkConditions {
                loss: LossModel::OUTAGE,
                ..LinkConditions::default()
            }),
            Preset::LossPercent(n) => PathConditions::symmetric(LinkConditions {
                delay: Self::LOSS_BASE_ONE_WAY,
                loss: LossModel::percent(n),
                ..LinkConditions::default()
            }),
        }
    }

    /// A short name for reports ("3G", "2G/Edge", "30% Loss", ...).
    pub fn name(self) -> String {
        match self {
            Preset::ThreeG => "3G".into(),
            Preset::Edge => "2G (Edge)".into(),
            Preset::Lte => "LTE".into(),
            Preset::VeryBadNetwork => "Very Bad Network".into(),
            Preset::FullLoss => "100% Loss".into(),
            Preset::LossPercent(n) => format!("{n}% Loss"),
        }
    }
}

fn shaped(bps: u64, delay_ms: u64, loss: LossModel) -> LinkConditions {
    LinkConditions {
        delay: Duration::from_millis(delay_ms),
        bandwidth_bps: Some(bps),
        loss,
        ..LinkConditions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_values() {
        let g3 = Preset::ThreeG.conditions();
        assert_eq!(g3.base_rtt(), Duration::from_millis(200));
        assert_eq!(
            (g3.down.bandwidth_bps, g3.up.bandwidth_bps),
            (Some(780_000), Some(330_000))
        );
        let edge = Preset::Edge.conditions();
        assert_eq!(edge.base_rtt(), Duration::from_millis(840));
        assert_eq!(edge.up.delay, Duration::from_millis(440));
        let vb = Preset::VeryBadNetwork.conditions();
        assert_eq!(vb.base_rtt(), Duration::from_millis(1000));
        assert_eq!(vb.up.loss, LossModel::Bernoulli { p: 0.1 });
        assert_eq!(Preset::FullLoss.conditions().down.loss, LossModel::OUTAGE);
        let l30 = Preset::LossPercent(30.0).conditions();
        assert_eq!(l30.base_rtt(), Duration::from_millis(60));
        assert_eq!(l30.up.bandwidth_bps, None);
        assert_eq!(l30.down.loss, LossModel::Bernoulli { p: 0.3 });
    }

    #[test]
    fn combining_keeps_shape_and_replaces_loss() {
        let c = Preset::ThreeG.conditions().with_loss_percent(30.0);
        assert_eq!(c.up.bandwidth_bps, Some(330_000));
        assert_eq!(c.base_rtt(), Duration::from_millis(200));
        assert_eq!(c.up.loss, LossModel::Bernoulli { p: 0.3 });
        assert_eq!(c.down.loss, LossModel::Bernoulli { p: 0.3 });
    }
}
