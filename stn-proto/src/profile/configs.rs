//! Every machine's configuration for a profile: the `for_profile`
//! constructors and the `Default`s that are a profile's values (stn's). Each
//! takes its values from [`knobs`](super::knobs) and nowhere else, so the
//! machines' own modules import no profile table.

use crate::ban::BanConfig;
use crate::codec::http::HttpLimits;
use crate::codec::longlink::CodecConfig;
use crate::engine::{Config, PoolConfig, ShortLinkEndpoints};
use crate::heartbeat::HeartbeatConfig;
use crate::limit::{AntiAvalancheConfig, FlowLimitConfig, FrequencyLimitConfig};
use crate::long_link::LongLinkConfig;
use crate::monitor::{ActivityConfig, ConnectMonitorConfig};
use crate::race::RaceConfig;
use crate::short_link::ExchangeConfig;
use crate::timeout::TimeoutConfig;

use super::Profile;

impl CodecConfig {
    /// The values of `profile`: the `codec` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::codec as k;
        CodecConfig {
            client_version: k::client_version(profile),
            max_body_len: k::max_body_len(profile),
            max_head_len: k::max_head_len(profile),
        }
    }
}

impl Default for CodecConfig {
    fn default() -> Self {
        CodecConfig::for_profile(Profile::Stn)
    }
}

impl HttpLimits {
    /// The values of `profile`: the `http` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::http as k;
        HttpLimits {
            max_head_len: k::max_head_len(profile),
            max_headers: k::max_headers(profile),
            max_body_len: k::max_body_len(profile),
            read_until_close: k::read_until_close(profile),
        }
    }
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}

impl HeartbeatConfig {
    /// The values of `profile`: the `heartbeat` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::heartbeat as k;
        HeartbeatConfig {
            interval: k::interval(profile),
            response_timeout: k::response_timeout(profile),
            late_response_timeout: k::late_response_timeout(profile),
            late_after: k::late_after(profile),
            rtt_scaled: k::rtt_scaled(profile),
            smart: k::smart(profile),
        }
    }
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}

impl RaceConfig {
    /// The values of profile `p`: the `race` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(p: Profile) -> Self {
        use crate::profile::knobs::race as k;
        RaceConfig {
            stagger: k::stagger(p),
            error_stagger: k::error_stagger(p),
            max_in_flight: k::max_in_flight(p),
            attempt_timeout: k::attempt_timeout(p),
            adaptive_stagger: k::adaptive_stagger(p),
            abandon: k::abandon(p),
            floor: k::floor(p),
            max_rounds: k::max_rounds(p),
            overall_timeout: k::overall_timeout(p),
            loser_reports: k::loser_reports(p),
            quiet: k::quiet(p),
        }
    }
}

impl Default for RaceConfig {
    fn default() -> Self {
        RaceConfig::for_profile(Profile::Stn)
    }
}

impl LongLinkConfig {
    /// The values of `profile`: the `long_link` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    ///
    /// The race, codec, heartbeat and monitor are those of the same profile.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::long_link as k;
        LongLinkConfig {
            race: RaceConfig::for_profile(profile),
            codec: CodecConfig::for_profile(profile),
            frame_codec: None,
            heartbeat: HeartbeatConfig::for_profile(profile),
            monitor: ConnectMonitorConfig::for_profile(profile),
            max_in_flight_tasks: k::max_in_flight_tasks(profile),
            batch_on_task_deadline: k::batch_on_task_deadline(profile),
            wait_follows_link_progress: k::wait_follows_link_progress(profile),
            foreground: true,
        }
    }
}

impl Default for LongLinkConfig {
    fn default() -> Self {
        LongLinkConfig::for_profile(Profile::Stn)
    }
}

impl FrequencyLimitConfig {
    /// The values of `profile`: the `frequency` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::frequency as k;
        FrequencyLimitConfig {
            max_records: k::max_records(profile),
            max_count: k::max_count(profile),
            clear_interval: k::clear_interval(profile),
            keep_window: k::keep_window(profile),
            keep_min_count: k::keep_min_count(profile),
            keep_count_cap: k::keep_count_cap(profile),
        }
    }
}

impl FlowLimitConfig {
    /// The values of `profile`: the `flow` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::flow as k;
        FlowLimitConfig {
            capacity: k::capacity(profile),
            active_drain_per_sec: k::active_drain_per_sec(profile),
            inactive_drain_per_sec: k::inactive_drain_per_sec(profile),
            inactive_level_cap: k::inactive_level_cap(profile),
        }
    }
}

impl AntiAvalancheConfig {
    /// The constants for `profile` (the same in every profile, see the module docs).
    pub fn for_profile(profile: Profile) -> Self {
        AntiAvalancheConfig {
            frequency: FrequencyLimitConfig::for_profile(profile),
            flow: FlowLimitConfig::for_profile(profile),
        }
    }
}

impl Default for FrequencyLimitConfig {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}

impl Default for FlowLimitConfig {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}

impl ActivityConfig {
    /// The values of `profile`: the `activity` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::activity as k;
        ActivityConfig {
            inactive_after: k::inactive_after(profile),
            fg_short: k::fg_short(profile),
            fg_long: k::fg_long(profile),
        }
    }
}

impl ConnectMonitorConfig {
    /// The values of `profile`: the `monitor` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::monitor as k;
        ConnectMonitorConfig {
            activity: ActivityConfig::for_profile(profile),
            task_intervals: k::task_intervals(profile),
            auto_intervals: k::auto_intervals(profile),
            inactive_slack: k::inactive_slack(profile),
            disconnect_settle: k::disconnect_settle(profile),
            backoff: k::backoff(profile),
            immediate_on_foreground: k::immediate_on_foreground(profile),
            seed: 0,
        }
    }
}

impl Default for ActivityConfig {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}

impl Default for ConnectMonitorConfig {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}

impl BanConfig {
    /// The values of `profile`: the `ban` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::ban as k;
        BanConfig {
            enabled: k::enabled(profile),
            fail_count: k::fail_count(profile),
            window: k::window(profile),
            ban_time: k::ban_time(profile),
            extend_per_consecutive: k::extend_per_consecutive(profile),
            max_ban_time: k::max_ban_time(profile),
            server_ban_time: k::server_ban_time(profile),
            success_update_interval: k::success_update_interval(profile),
            fail_update_interval: k::fail_update_interval(profile),
            success_lifts_ban: k::success_lifts_ban(profile),
            decay_interval: k::decay_interval(profile),
            interleave_v6_v4: k::interleave_v6_v4(profile),
            first_family_by_history: k::first_family_by_history(profile),
            avoid_adjacent_duplicates: k::avoid_adjacent_duplicates(profile),
            reload_policy: k::reload_policy(profile),
            history_expiry: k::history_expiry(profile),
            max_entries: k::max_entries(profile),
            max_networks: k::max_networks(profile),
        }
    }
}

impl Default for BanConfig {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}

impl ExchangeConfig {
    /// The race and HTTP limits of a profile.
    pub fn for_profile(p: Profile) -> Self {
        let mut race = RaceConfig::for_profile(p);
        race.loser_reports = crate::profile::knobs::engine::short_link_loser_reports(p);
        ExchangeConfig {
            race,
            http: HttpLimits::for_profile(p),
        }
    }
}

impl Default for ExchangeConfig {
    fn default() -> Self {
        ExchangeConfig::for_profile(Profile::Stn)
    }
}

impl TimeoutConfig {
    /// The values of `profile`: the `timeouts` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::timeouts as k;
        TimeoutConfig {
            task_read_write: k::task_read_write(profile),
            task_attempt_margin: k::task_attempt_margin(profile),
            long_polling_margin: k::long_polling_margin(profile),
            wifi: k::wifi(profile),
            mobile: k::mobile(profile),
            max_recv_len: k::max_recv_len(profile),
            in_flight_cap: k::in_flight_cap(profile),
            dynamic: k::dynamic(profile),
            adaptive: k::adaptive(profile),
        }
    }
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}

impl PoolConfig {
    /// The values of profile `p`: the `pool` table of `docs/profiles.md`
    /// (defined in `stn-proto/src/profile/knobs.rs`), which says why the
    /// profiles differ.
    pub fn for_profile(p: Profile) -> Self {
        use crate::profile::knobs::pool as k;
        PoolConfig {
            max_idle: k::max_idle(p),
            max_idle_conns: k::max_idle_conns(p),
            disable_after_stale: k::disable_after_stale(p),
            free_retry_on_stale: k::free_retry_on_stale(p),
            stale_on_timeout: k::stale_on_timeout(p),
        }
    }
}

impl Config {
    /// The values of a profile; endpoints are empty (fill them in).
    ///
    /// Every value, and why [`Profile::Stn`] differs from Mars, is in one
    /// table: `stn-proto/src/profile/knobs.rs`, rendered as `docs/profiles.md`.
    pub fn for_profile(profile: Profile) -> Self {
        use crate::profile::knobs::engine as k;
        let mut long = LongLinkConfig::for_profile(profile);
        long.heartbeat.rtt_scaled = k::long_link_rtt_scaled_noop(profile);
        long.monitor.backoff = k::long_link_reconnect_backoff(profile);
        let mut exchange = ExchangeConfig::for_profile(profile);
        exchange.race.overall_timeout = k::short_link_race_overall_timeout(profile);
        if let Some(max) = k::race_max_abandons(profile) {
            for race in [&mut exchange.race, &mut long.race] {
                if let Some(a) = race.abandon.as_mut() {
                    a.max_abandons = max;
                }
            }
        }
        Config {
            profile,
            seed: k::seed(profile),
            short_link: ShortLinkEndpoints {
                port: k::short_link_port(profile),
                ..ShortLinkEndpoints::default()
            },
            long_link: None,
            max_candidates: k::max_candidates(profile),
            long_link_races_every_candidate: k::long_link_races_every_candidate(profile),
            exchange,
            long,
            timeouts: TimeoutConfig::for_profile(profile),
            long_link_adaptive_timeouts: k::long_link_adaptive_timeouts(profile),
            ban: BanConfig::for_profile(profile),
            limits: AntiAvalancheConfig::for_profile(profile),
            retry_interval: k::retry_interval(profile),
            retry_interval_after_timeout: k::retry_interval_after_timeout(profile),
            free_retry_on_network_change: k::free_retry_on_network_change(profile),
            http_retry: k::http_retry(profile),
            channel_choice: k::channel_choice(profile),
            long_link_rescue: k::long_link_rescue(profile),
            connect_refusal_ends_task: k::connect_refusal_ends_task(profile),
            early_data: k::early_data(profile),
            no_network: k::no_network(profile),
            zombies: k::zombies(profile),
            zombie_idle_restart: k::zombie_idle_restart(profile),
            resolve_timeout: k::resolve_timeout(profile),
            resolve_ttl: k::resolve_ttl(profile),
            max_queued_tasks: k::max_queued_tasks(profile),
            max_in_flight_short: k::max_in_flight_short(profile),
            hedge: k::hedge(profile),
            socket_pool: k::socket_pool(profile),
            network: k::network(profile),
            foreground: k::foreground(profile),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::for_profile(Profile::Stn)
    }
}
