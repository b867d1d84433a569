//! Every profile-dependent constant of every machine, for the three profiles
//! side by side: `knob: type = [mars-2017, mars, stn], "Mars constant"`.
//!
//! Each knob is a function of the profile; the machines' `for_profile`
//! constructors take their values from here and nowhere else. A knob's
//! rustdoc says why stn (or mars-2017) differs; a knob without one is the
//! same everywhere or differs only in following an older Mars. Mars names are
//! those of the `Tencent/mars` sources (`mars/stn/config.h`, the `.cc` file
//! named); `docs/mars-stn.md §N` describes the behaviour. `docs/profiles.md`
//! is rendered from this table (`profile::tests` checks it).

use crate::ban::ReloadPolicy;
use crate::codec::longlink::{DEFAULT_MAX_BODY, DEFAULT_MAX_HEAD};
use crate::engine::{
    ChannelChoice, HedgePolicy, HttpRetry, NoNetworkPolicy, PoolConfig, ZombiePolicy,
    STN_MAX_ABANDONS,
};
use crate::heartbeat::RttScaledTimeout;
use crate::monitor::ReconnectBackoff;
use crate::net::NetworkKind;
use crate::profile::Profile;
use crate::race::{AbandonPolicy, AdaptiveStagger, LoserReports, ProbeFloor, QuietPolicy};
use crate::smart_heartbeat::{MarsSmartConfig, SearchConfig, SmartHeartbeatConfig};
use crate::time::Duration;
use crate::timeout::{AdaptiveConfig, DynamicTimeoutConfig, NetworkTimeouts};

#[cfg(test)]
use super::render::{Knob, Render, Section};

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
const fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}
const fn min(n: u64) -> Duration {
    Duration::from_secs(60 * n)
}
const fn secs5(t: [u64; 5]) -> [Duration; 5] {
    [s(t[0]), s(t[1]), s(t[2]), s(t[3]), s(t[4])]
}
const MIB: u64 = 1024 * 1024;

/// Defines one `pub(crate) mod` per section with one `fn knob(Profile) -> T`
/// per knob, and (in tests) `sections()`, the table `docs/profiles.md` shows.
macro_rules! knobs {
    ($(
        $(#[doc = $sdoc:literal])*
        mod $section:ident {
            $(
                $(#[doc = $why:literal])*
                $name:ident: $ty:ty = [$m17:expr, $mars:expr, $stn:expr $(,)?], $mc:literal;
            )*
        }
    )*) => {
        $(
            $(#[doc = $sdoc])*
            pub(crate) mod $section {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[doc = concat!("`", stringify!($name), "` (Mars: ", $mc, ").")]
                    #[doc = ""]
                    $(#[doc = $why])*
                    pub(crate) fn $name(profile: Profile) -> $ty {
                        match profile {
                            Profile::Mars2017 => $m17,
                            Profile::Mars => $mars,
                            Profile::Stn => $stn,
                        }
                    }
                )*
            }
        )*

        /// Every section and knob, in definition order, with each value rendered.
        #[cfg(test)]
        pub(crate) fn sections() -> Vec<Section> {
            vec![$(
                Section {
                    name: stringify!($section),
                    doc: concat!($($sdoc, "\n",)*),
                    knobs: vec![$(
                        Knob {
                            name: stringify!($name),
                            mars: $mc,
                            values: Profile::ALL.map(|p| Render::render(&$section::$name(p))),
                            why: concat!($($why, "\n",)*),
                        },
                    )*],
                },
            )*]
        }
    };
}

knobs! {
    /// Connection racing (`race::RaceConfig`), the same machine on both links
    /// (Mars `ComplexConnect`, docs/mars-stn.md §3). Under stn at most 12
    /// sockets are open at once: 3 attempts in their slots, up to 3 floor
    /// attempts and up to 6 abandoned ones (one per abandonment) kept open as
    /// passive probes; Mars opens at most 3.
    mod race {
        /// The 4 s of mars-2017 is the interval until 2022 (and in the 2017
        /// benchmark). stn staggers by the measured RTT (`adaptive_stagger`)
        /// and uses 250 ms only while no RTT is known.
        stagger: Duration = [s(4), ms(2500), ms(250)], "kShortlinkConnInterval, kLonglinkConnInteral";
        /// A connect that failed fast (refused, reset) frees its slot at once
        /// under stn: waiting out the stagger after a definite failure only
        /// delays the next candidate.
        error_stagger: Duration = [s(4), ms(2500), Duration::ZERO], "ComplexConnect error interval (= interval)";
        max_in_flight: usize = [3, 3, 3], "kLonglinkConnMax";
        attempt_timeout: Duration = [s(10), s(10), s(10)], "kShortlinkConnTimeout, kLonglinkConnTimeout";
        /// RFC 8305 §8's connection-attempt delay from the RTT: a fixed 2.5 s
        /// wastes seconds per dead candidate on a fast path.
        adaptive_stagger: Option<AdaptiveStagger> = [None, None, Some(AdaptiveStagger::default())], "none";
        /// An attempt whose SYN looks lost (no answer within about 3 RTTs, at
        /// least the OS's 1 s SYN retransmission plus an RTT) is abandoned
        /// and its slot given to a fresh connect, instead of waiting out the
        /// OS's retransmission back-off for 10 s.
        abandon: Option<AbandonPolicy> = [None, None, Some(AbandonPolicy::default())], "none";
        /// Underneath, Mars's own attempt schedule (2.5 s, 3 open) runs as a
        /// floor whose attempts are never abandoned, so stn has a SYN on the
        /// wire at every instant Mars would, and a path far slower than the
        /// RTT hint still connects.
        floor: Option<ProbeFloor> = [None, None, Some(ProbeFloor::default())], "none";
        /// stn goes round the candidate list again until the overall deadline
        /// (none = until the deadline) instead of one pass.
        max_rounds: Option<u32> = [Some(1), Some(1), None], "one pass over the list";
        /// The race's own cap (none = only the caller's deadline); see
        /// `engine.short_link_race_overall_timeout` for the short link.
        overall_timeout: Option<Duration> = [None, None, Some(s(20))], "none";
        /// Mars counts losers ranked before the winner that were still
        /// connecting as timed out, which bans live endpoints that were merely
        /// slower; stn reports only the attempts that were outpaced.
        loser_reports: LoserReports = [LoserReports::MarsLowerIndexTimedOut, LoserReports::MarsLowerIndexTimedOut, LoserReports::Outpaced], "complex_connect.cc, lower index timed out";
        /// In an outage stn's fresh sockets only send SYNs into the void, and
        /// when it ends several of them reach the server within one RTT.
        /// `QuietPolicy` (with the floor's `pass_gap` at Mars's 1 s retry
        /// interval) keeps only the floor, Mars's own sockets and SYN
        /// instants, and one long-lived probe once nothing answered for 3 s.
        /// Not on under stn yet: turned on, one retry-0 matrix cell fails
        /// more calls than the gate allows (docs/economy.md).
        quiet: Option<QuietPolicy> = [None, None, None], "none";
    }

    /// The long link's default frame codec (`codec::longlink::CodecConfig`,
    /// the sample's 20-byte header, docs/mars-stn.md §5.1): Mars's framing in
    /// every profile.
    mod codec {
        client_version: u32 = [0, 0, 0], "SetClientVersion, default 0";
        /// Mars caps the whole package (head + body) at 1 MiB; stn caps the
        /// body and the header separately.
        max_body_len: usize = [DEFAULT_MAX_BODY, DEFAULT_MAX_BODY, DEFAULT_MAX_BODY], "package cap 1 MiB";
        /// Mars accepts any `head_length` within its package cap (and
        /// misbehaves below 20); a small cap keeps garbage from hiding frames.
        max_head_len: u32 = [DEFAULT_MAX_HEAD, DEFAULT_MAX_HEAD, DEFAULT_MAX_HEAD], "none";
    }

    /// Short-link HTTP response limits (`codec::http::HttpLimits`). Mars
    /// bounds only the head (8 KiB status line, 128 KiB header block,
    /// `mars/comm/http.cc`); its profiles get that bound plus caps where Mars
    /// has none.
    mod http {
        /// Short-link CGI responses are small, and a tight cap bounds what a
        /// broken or hostile peer can make the client hold (also below).
        max_head_len: usize = [(8 + 128) * 1024, (8 + 128) * 1024, 16 * 1024], "http.cc: 8 KiB + 128 KiB";
        max_headers: usize = [256, 256, 64], "none";
        max_body_len: usize = [16 * MIB as usize, 16 * MIB as usize, MIB as usize], "none";
        /// Mars never completes a response delimited by the connection close.
        read_until_close: bool = [false, false, false], "Content-Length or chunked required";
    }

    /// Long-link heartbeat (`heartbeat::HeartbeatConfig`, docs/mars-stn.md §5.3).
    mod heartbeat {
        /// Set by NAT and carrier-gateway idle timeouts, not by stn's speed.
        interval: Duration = [s(210), s(210), s(210)], "MinHeartInterval (3.5 min)";
        response_timeout: Duration = [s(8), s(8), s(8)], "longlink.cc __NoopReq: 8 * 1000";
        late_response_timeout: Duration = [s(5), s(5), s(5)], "longlink.cc __NoopReq: 5 * 1000 after a long sleep";
        late_after: Duration = [min(15), min(15), min(15)], "need_active_timeout (15 min)";
        /// The heartbeat machine's stn variant: the noop timeout from the
        /// RTT, clamped to [3 s, 8 s] (and never above the 5 s "late" value),
        /// so a dead link is noticed sooner while the 3 s floor still covers
        /// two TCP retransmissions at the usual 1 s minimum RTO. The engine
        /// does not use it (`engine.long_link_rtt_scaled_noop`).
        rtt_scaled: Option<RttScaledTimeout> = [None, None, Some(RttScaledTimeout { multiplier: 6, min: s(3), max: s(8) })], "none";
        /// How the interval is learned per network (docs/heartbeat.md).
        /// mars-2017's smart heartbeat was another algorithm (4.5 min
        /// minimum, 3 successes and 3 failures per step) that is not
        /// modelled: the 2017 benchmark ran in the foreground, at the
        /// minimum. Mars builds it on Android only (a simulated iOS client
        /// of the Mars profile uses `Fixed`). stn searches instead: one
        /// answer proves an idle time, steps of 60 s or a quarter of the
        /// proof to the first loss, then 20 s steps (at most two lost
        /// probes), no task written on a link idle beyond the proof, and
        /// down to 1 min where 3.5 min is too long.
        smart: SmartHeartbeatConfig = [SmartHeartbeatConfig::Fixed, SmartHeartbeatConfig::Mars(MarsSmartConfig::MARS), SmartHeartbeatConfig::Search(SearchConfig::STN)], "SmartHeartbeat (Android only)";
    }

    /// App activity columns (`monitor::ActivityConfig`, Mars `ActiveLogic`):
    /// Mars's in every profile; they only name the columns, the schedules
    /// differ.
    mod activity {
        /// Mars on Apple never starts this timer (use `Duration::MAX`).
        inactive_after: Duration = [min(10), min(10), min(10)], "INACTIVE_TIMEOUT (10 min)";
        fg_short: Duration = [s(60), s(60), s(60)], "kForgroundOneMinute";
        fg_long: Duration = [min(10), min(10), min(10)], "kForgroundTenMinute";
    }

    /// Long-link reconnect schedule (`monitor::ConnectMonitorConfig`,
    /// `longlink_connect_monitor.cc`, docs/mars-stn.md §5.5). Mars's
    /// `+rand()%20` salt, its no-account/no-network stretches and the HEAD
    /// inactive back-off table are not modelled.
    mod monitor {
        task_intervals: [Duration; 5] = [secs5([5, 10, 20, 30, 300]), secs5([5, 10, 20, 30, 300]), secs5([5, 10, 20, 30, 300])], "sg_interval[kTaskConnect]";
        /// mars-2017 is the v1.3 table.
        auto_intervals: [Duration; 5] = [secs5([15, 30, 240, 300, 600]), secs5([15, 30, 120, 300, 600]), secs5([15, 30, 120, 300, 600])], "sg_interval[kLongLinkConnect]";
        /// No inactive slack under stn: the back-off already decides.
        inactive_slack: Duration = [s(30), s(30), Duration::ZERO], "kInactiveBuffer";
        disconnect_settle: Duration = [ms(500), ms(500), ms(500)], "500 ms re-evaluation after a disconnect";
        /// The monitor's stn variant: the first retry 1 s after the failed
        /// attempt started, doubling per consecutive failure, capped by Mars's
        /// table for the column (never slower than Mars, ~10 extra attempts per
        /// 10 min), with up to 20 % seeded jitter so a fleet that lost the same
        /// server spreads out; a link up for 60 s resets it. The engine does
        /// not use it (`engine.long_link_reconnect_backoff`).
        backoff: Option<ReconnectBackoff> = [None, None, Some(ReconnectBackoff { first: s(1), factor: 2, max_jitter_permille: 200, stable_after: s(60) })], "plain tables";
        /// Coming to the foreground connects at once: the user is about to
        /// need the link.
        immediate_on_foreground: bool = [false, false, true], "auto interval";
    }

    /// The long-link machine (`long_link::LongLinkConfig`).
    mod long_link {
        /// Mars has no limit (1024 is effectively none); 64 bounds memory and
        /// the size of a batch failure.
        max_in_flight_tasks: usize = [1024, 1024, 64], "none";
        /// Under stn a task's deadline is the app's budget, not evidence
        /// against the link (the per-attempt timers are): it ends only that
        /// task instead of failing every task on the link and dropping it.
        batch_on_task_deadline: bool = [true, true, false], "task-timeout check triggers the batch error";
        /// Tasks pipelined behind others wait for the server to get to them:
        /// while responses keep arriving the link is alive, and timing the
        /// last task of a deep queue from its write would tear down a healthy
        /// link. A link that stops answering still times out one first-packet
        /// timeout after its last response.
        wait_follows_link_progress: bool = [false, false, true], "timers from the frame's first byte written";
    }

    /// Endpoint history and bans (`ban::BanConfig`, `simple_ipport_sort.cc`,
    /// docs/mars-stn.md §4.2). The 2017 benchmark itself disabled banning.
    mod ban {
        enabled: bool = [true, true, true], "banning on";
        fail_count: u8 = [3, 3, 3], "kBanFailCount";
        window: u8 = [8, 8, 8], "the last 8 outcomes";
        ban_time: Duration = [min(6), min(6), min(6)], "kBanTime";
        /// mars-2017 (v1.3) has a fixed 6 min ban.
        extend_per_consecutive: Duration = [Duration::ZERO, min(6), min(6)], "6 min per trailing failure beyond 3";
        max_ban_time: Duration = [min(6), min(30), min(30)], "kMaxBanTime";
        server_ban_time: Duration = [min(6), min(30), min(30)], "kServerBanTime";
        /// These rate limits stay under stn: they are what stops a 3-way race
        /// on duplicate addresses from banning an endpoint after one outage.
        success_update_interval: Duration = [s(10), s(10), s(10)], "kSuccessUpdateInterval";
        fail_update_interval: Duration = [s(10), s(10), s(10)], "kFailUpdateInterval";
        /// stn only ever bans less than Mars: a success after a failure lifts
        /// the ban at once.
        success_lifts_ban: bool = [false, false, true], "none";
        /// stn forgets one failure per 30 failure-free minutes.
        decay_interval: Option<Duration> = [None, None, Some(min(30))], "none";
        interleave_v6_v4: bool = [false, true, true], "IPv6-first interleave (HEAD)";
        /// stn orders families as RFC 8305 §4: the family whose best
        /// endpoint failed less goes first (IPv6 on a tie), so a broken
        /// IPv6 costs one stagger once, not on every connect.
        first_family_by_history: bool = [false, false, true], "none (IPv6 always first)";
        avoid_adjacent_duplicates: bool = [false, true, true], "adjacent duplicates spread (HEAD)";
        /// Reloaded history orders but never bans under stn: it may be a day
        /// old.
        reload_policy: ReloadPolicy = [ReloadPolicy::Mars, ReloadPolicy::Mars, ReloadPolicy::OrderingOnly], "history reloaded per network";
        history_expiry: Duration = [min(24 * 60), min(24 * 60), min(24 * 60)], "kRecordTimeout (24 h)";
        max_entries: usize = [512, 512, 512], "none";
        max_networks: usize = [16, 16, 16], "none";
    }

    /// Anti-avalanche frequency limit (`limit::FrequencyLimitConfig`,
    /// `frequency_limit.cc`, docs/mars-stn.md §7): Mars's in every profile.
    mod frequency {
        max_records: usize = [30, 30, 30], "MAX_RECORD_COUNT";
        max_count: u32 = [105, 105, 105], "RECORD_INTERCEPT_COUNT";
        clear_interval: Duration = [min(60), min(60), min(60)], "RUN_CLEAR_RECORDS_INTERVAL_MINUTE";
        keep_window: Duration = [min(10), min(10), min(10)], "NOT_CLEAR_INTERCEPT_INTERVAL_MINUTE";
        keep_min_count: u32 = [75, 75, 75], "NOT_CLEAR_INTERCEPT_COUNT";
        keep_count_cap: u32 = [99, 99, 99], "NOT_CLEAR_INTERCEPT_COUNT_RETRY";
    }

    /// Anti-avalanche flow limit, bytes and bytes per second
    /// (`limit::FlowLimitConfig`, `flow_limit.cc`): Mars's in every profile.
    /// Some Mars revisions use a tenth of each.
    mod flow {
        capacity: u64 = [80 * MIB, 80 * MIB, 80 * MIB], "kMaxVol";
        active_drain_per_sec: u64 = [80 * MIB / 3600, 80 * MIB / 3600, 80 * MIB / 3600], "kActiveSpeed";
        inactive_drain_per_sec: u64 = [20 * MIB / 3600, 20 * MIB / 3600, 20 * MIB / 3600], "kInactiveSpeed";
        inactive_level_cap: u64 = [60 * MIB, 60 * MIB, 60 * MIB], "kInactiveMinvol";
    }

    /// Task and attempt timeouts (`timeout::TimeoutConfig`,
    /// docs/mars-stn.md §2.2–2.5).
    mod timeouts {
        task_read_write: Duration = [s(15), s(15), s(15)], "task timeout (15000 + server_cost + 5000) × (retries + 1)";
        task_attempt_margin: Duration = [s(5), s(5), s(5)], "the 5000 of the task timeout";
        long_polling_margin: Duration = [s(5), s(5), s(5)], "long-polling 5000";
        wifi: NetworkTimeouts = [NetworkTimeouts::MARS_WIFI, NetworkTimeouts::MARS_WIFI, NetworkTimeouts::MARS_WIFI], "kBaseFirstPackageWifiTimeout, kMaxFirstPackageWifiTimeout, kDynTimeFirstPackageWifiTimeout, kWifiMinRate, kWifiPackageInterval, kWifiTaskDelay";
        mobile: NetworkTimeouts = [NetworkTimeouts::MARS_MOBILE, NetworkTimeouts::MARS_MOBILE, NetworkTimeouts::MARS_MOBILE], "kBaseFirstPackageGPRSTimeout, kMaxFirstPackageGPRSTimeout, kDynTimeFirstPackageGPRSTimeout, kGPRSMinRate, kGPRSPackageInterval, kGPRSTaskDelay";
        max_recv_len: usize = [64 * 1024, 64 * 1024, 64 * 1024], "kMaxRecvLen";
        /// v1.2/v1.3 added the task delay for every task in flight; today's
        /// Mars counts at most 5.
        in_flight_cap: Option<usize> = [None, Some(5), Some(5)], "min(tasks in flight, 5)";
        dynamic: DynamicTimeoutConfig = [DynamicTimeoutConfig::MARS, DynamicTimeoutConfig::MARS, DynamicTimeoutConfig::MARS], "dynamic_timeout.cc, kDynTime*";
        /// Per-attempt timeouts from the measured RTT and loss on top of
        /// Mars's formulas (`timeout::AdaptiveConfig` documents its own
        /// constants); the engine applies them to the short link only
        /// (`engine.long_link_adaptive_timeouts`).
        adaptive: Option<AdaptiveConfig> = [None, None, Some(AdaptiveConfig::STN)], "none";
    }

    /// The short link's keep-alive socket pool (`engine::PoolConfig`,
    /// `socket_pool.h`), for tasks that send `Connection: Keep-Alive`.
    mod pool {
        /// Mars keeps a connection for the server's keep-alive timeout;
        /// capped at 5 min here.
        max_idle: Duration = [min(5), min(5), min(5)], "server keep-alive timeout";
        max_idle_conns: usize = [5, 5, 5], "5 cached sockets";
        disable_after_stale: Duration = [min(5), min(5), min(5)], "BAN_INTERVAL";
        /// A stale pooled connection is not the task's fault: stn redoes the
        /// attempt at once without using a retry; Mars pays a retry.
        free_retry_on_stale: bool = [false, false, true], "costs a retry";
        /// On a lossy or slow path a timeout says nothing about the
        /// connection, and turning the pool off makes every later call pay a
        /// fresh handshake: under stn only a connection the peer closed or
        /// reset before answering is stale.
        stale_on_timeout: bool = [true, true, false], "any failure before a response";
    }

    /// The engine's own knobs (`engine::Config`) and the engine's choices
    /// among the machines' variants.
    mod engine {
        seed: u64 = [0, 0, 0], "none (set one per client)";
        short_link_port: u16 = [80, 80, 80], "SetShortlinkSvrAddr port";
        network: NetworkKind = [NetworkKind::Wifi, NetworkKind::Wifi, NetworkKind::Wifi], "the network at start";
        foreground: bool = [true, true, true], "the app state at start";
        max_candidates: usize = [5, 5, 5], "kNumMakeCount";
        /// Mars races five and, if all five are dead, waits for its reconnect
        /// schedule (5 s and more) with the live endpoints never tried. The
        /// race stops at the first connect, so the extra candidates cost
        /// nothing when an early one works.
        long_link_races_every_candidate: bool = [false, false, true], "kNumMakeCount";
        /// A timeout on the long link fails every task on it and drops the
        /// link, so a short timeout costs far more there than on a short
        /// link: in the stn-sim long-link suite under 30–70 % loss the
        /// adaptive timeouts made stn slower than Mars.
        long_link_adaptive_timeouts: bool = [true, true, false], "none (no adaptive layer)";
        /// In the stn-sim long-link suite under 50–70 % loss the RTT-scaled
        /// noop timeout made stn slower than Mars (a noop reply often takes
        /// more than the scaled 3 s there), so the long link keeps Mars's
        /// fixed 8 s.
        long_link_rtt_scaled_noop: Option<RttScaledTimeout> = [None, None, None], "fixed noop timeout";
        /// Reconnecting sooner on a link that keeps failing cost more than it
        /// saved in the stn-sim long-link suite under 50–70 % loss, so the
        /// long link keeps Mars's tables (coming to the foreground still
        /// reconnects at once).
        long_link_reconnect_backoff: Option<ReconnectBackoff> = [None, None, None], "plain tables";
        /// A short-link race loser ranked before the winner and not yet
        /// past the outpaced threshold is kept open until the threshold (the
        /// engine's verdict probes) and reported failed if it has not
        /// answered by then: a black hole ordered first is judged even when
        /// the next address wins within the threshold, so it is demoted
        /// instead of costing every call a stagger. The long link's race
        /// keeps `race.loser_reports`.
        short_link_loser_reports: LoserReports = [LoserReports::MarsLowerIndexTimedOut, LoserReports::MarsLowerIndexTimedOut, LoserReports::OutpacedAtThreshold], "complex_connect.cc, lower index timed out";
        /// Connection attempts whose SYNs look lost are abandoned and
        /// replaced for the whole race (the race module's default stops after
        /// 6): after an outage a fresh SYN goes out every ~0.5 s, so the first
        /// success follows the end of the outage by 0.3 s on average instead
        /// of 1 s (Mars). The attempt rate stays bounded by 3 slots per at
        /// least 1.1 s plus at most one floor attempt per 2.5 s; the engine
        /// scales the RTT hint up after the second failed race in a row (×2,
        /// ×4, up to ×8) so a path that became much slower than the hint is not
        /// abandoned forever.
        race_max_abandons: Option<u32> = [None, None, Some(STN_MAX_ABANDONS)], "none";
        /// No 20 s cap of its own on a short-link race, only the task's
        /// deadline: capped, a race that ran into its 20 s failed and the
        /// retry started a new race 250 ms later, a quarter second without
        /// fresh SYNs that also put the new race's floor 250 ms off Mars's
        /// instants (stn-sim sensitivity suite, 25–35 s outages: up to 0.25 s
        /// behind Mars). The cost: a task's race keeps its candidate list up
        /// to the task's deadline, where the capped race's retry re-resolved
        /// after 20 s. A long-link race keeps the cap.
        short_link_race_overall_timeout: Option<Duration> = [None, None, None], "none";
        /// The attempt already waited out a timeout; a fast failure (refused,
        /// reset) retried at once could spin, hence 250 ms below.
        retry_interval_after_timeout: Duration = [s(1), s(1), Duration::ZERO], "DEF_TASK_RETRY_INTERNAL";
        retry_interval: Duration = [s(1), s(1), ms(250)], "DEF_TASK_RETRY_INTERNAL";
        /// The same request gets the same answer: a 4xx other than 408 and
        /// 429 ends the task instead of being retried.
        http_retry: HttpRetry = [HttpRetry::EveryStatus, HttpRetry::EveryStatus, HttpRetry::NotClientErrors], "__SingleRespHandle: every non-200 is a network failure";
        /// A connect whose every candidate refused or failed TLS permanently
        /// meets the same answers if made again at once: the tasks that can
        /// only use that link end with that error (its address and cause)
        /// within the one connect round, instead of retrying, parking or
        /// waiting for the long link until their deadline. Mars retries a
        /// short-link refusal, and a failed long-link connect reaches only
        /// the tasks already sent (`__BatchErrorRespHandle`, running tasks
        /// only): the queued ones wait for their task timeout.
        connect_refusal_ends_task: bool = [false, false, true], "__BatchErrorRespHandle (running tasks only)";
        /// The change is not the task's fault: running attempts are redone
        /// without using a retry.
        free_retry_on_network_change: bool = [false, false, true], "RedoTasks consumes a retry";
        /// A retry after the long link dropped goes out on the short link at
        /// once, and a task queued while the long link was down uses it as
        /// soon as it is up.
        channel_choice: ChannelChoice = [ChannelChoice::AtSubmit, ChannelChoice::AtSubmit, ChannelChoice::PerAttempt], "decided at submit";
        /// A long-link task whose first-packet or read-write timer tore the
        /// link down, with no retry left but time before its deadline, is
        /// sent once more on the next connection without using a retry (a
        /// second such timeout ends it): the long link's hedge, so only for
        /// a task that may be hedged (`Task::hedge`, `Config::hedge`). The
        /// stalled link is still dropped at Mars's timer; waiting longer on
        /// it cost more than it saved (docs/long-link-timeouts.md).
        long_link_rescue: bool = [false, false, true], "none (the batch error ends a task with no retry left)";
        /// A short-link request whose task allows it (`Task::early_data`)
        /// goes as TLS 0-RTT early data on a fresh connection that resumes a
        /// session: one round trip sooner. Mars runs no TLS of its own.
        early_data: bool = [false, false, true], "none (no TLS)";
        /// Every task waits (within its deadline) for the network instead of
        /// burning its attempts on connects that cannot succeed.
        no_network: NoNetworkPolicy = [NoNetworkPolicy::FailSensitive, NoNetworkPolicy::FailSensitive, NoNetworkPolicy::WaitAll], "network-status-sensitive tasks fail";
        zombies: ZombiePolicy = [ZombiePolicy::TotalTimeoutOnly, ZombiePolicy::TotalTimeoutOnly, ZombiePolicy::TotalTimeoutOnly], "zombie_task_manager.cc";
        /// Parked tasks are replayed on any sign of connectivity, including a
        /// successful connect, and 1 s after they failed when nothing else
        /// happens, instead of sitting out an outage that already ended.
        zombie_idle_restart: Duration = [s(60), s(60), s(1)], "zombie_task_manager.cc RETRY_INTERVAL";
        resolve_timeout: Duration = [s(2), s(2), s(2)], "OnNewDns deadline (2 s)";
        /// No app round trip (possibly seconds on a lossy link) per attempt;
        /// answers are dropped as soon as an attempt could not connect to any
        /// of their addresses, and on a network change.
        resolve_ttl: Duration = [Duration::ZERO, Duration::ZERO, s(30)], "resolves for every attempt";
        max_queued_tasks: usize = [1024, 1024, 1024], "none";
        /// A burst of tasks cannot open hundreds of sockets.
        max_in_flight_short: usize = [usize::MAX, usize::MAX, 64], "unlimited";
        /// A short-link request that gets no answer for about 4 RTTs is
        /// hedged on a fresh connection: under loss an exchange stuck in
        /// TCP's retransmission back-off otherwise waits for the first-packet
        /// timeout.
        hedge: Option<HedgePolicy> = [None, None, Some(HedgePolicy::default())], "none";
        socket_pool: Option<PoolConfig> = [Some(PoolConfig::for_profile(Profile::Mars2017)), Some(PoolConfig::for_profile(Profile::Mars)), Some(PoolConfig::for_profile(Profile::Stn))], "socket_pool.h, Keep-Alive tasks only";
    }
}
