//! Every knob of the [`Config`](crate::Config), by the part of the engine it
//! tunes. A `Config` starts from a [`Profile`](crate::Profile)
//! ([`Config::for_profile`](crate::Config::for_profile)); its methods hand out
//! these types, for an app that changes one.
//!
//! They are plain data: public fields to read and set, and
//! `#[non_exhaustive]`, so they are made by a profile or `Default` and then
//! edited, never written out as a literal, and a new knob is not a breaking
//! change. A knob the engine derives itself (the long link's foreground flag,
//! the monitor's seed) is not among their public fields.
//!
//! ```
//! use stn_proto::{Config, Duration, Profile};
//!
//! let mut config = Config::for_profile(Profile::Stn);
//! config.long_mut().heartbeat.interval = Duration::from_secs(60);
//! if let Some(adaptive) = &mut config.timeouts_mut().adaptive {
//!     adaptive.first_packet_floor = Duration::from_secs(3);
//! }
//! ```

pub use crate::ban::{BanConfig, ReloadPolicy};
pub use crate::engine::{
    ChannelChoice, HedgePolicy, HttpRetry, LongLinkEndpoints, NoNetworkPolicy, PoolConfig,
    ShortLinkEndpoints, ZombiePolicy, STN_MAX_ABANDONS,
};
pub use crate::heartbeat::{HeartbeatConfig, RttScaledTimeout};
pub use crate::limit::{AntiAvalancheConfig, FlowLimitConfig, FrequencyLimitConfig};
pub use crate::long_link::LongLinkConfig;
pub use crate::monitor::{ActivityConfig, ConnectMonitorConfig, ReconnectBackoff};
pub use crate::race::{
    AbandonPolicy, AdaptiveStagger, LoserReports, ProbeFloor, QuietPolicy, RaceConfig,
};
pub use crate::short_link::{ExchangeConfig, ExchangeTimeouts};
pub use crate::smart_heartbeat::{
    MarsSmartConfig, SearchConfig, SmartHeartbeatConfig, MAX_RECORDS,
};
pub use crate::timeout::{
    AdaptiveConfig, DynamicTimeoutConfig, NetworkTimeouts, RttConfig, SizeClassCosts, TimeoutConfig,
};
