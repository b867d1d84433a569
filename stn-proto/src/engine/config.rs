//! The engine's configuration (its values for each profile are in
//! `profile/configs.rs`).

use crate::ban::BanConfig;
use crate::limit::AntiAvalancheConfig;
use crate::net::{IpAddr, NetworkKind, SocketAddr};
use crate::profile::Profile;
use crate::short_link::ExchangeConfig;
use crate::time::Duration;
use crate::timeout::TimeoutConfig;

use crate::long_link::LongLinkConfig;

/// Abandonments allowed per race under [`Profile::Stn`] (why: the
/// `engine.race_max_abandons` knob in `docs/profiles.md`).
pub const STN_MAX_ABANDONS: u32 = 1000;

/// Where the short link connects (Mars `SetShortlinkSvrAddr`, `SetBackupIPs`,
/// `SetDebugIP`; reference §4.1).
///
/// Candidates, in priority order: the debug address alone if set (no DNS, no
/// bans); else the addresses of `hosts` (each resolved through
/// [`Output::Resolve`](super::Output::Resolve), Mars's `OnNewDns`) followed by
/// `ips`, ordered by the endpoint history (banned ones removed), then
/// `backup_ips` to fill up to [`Config::max_candidates()`]. Duplicates are kept: Mars's
/// benchmark returned one IP four times so that racing had several attempts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShortLinkEndpoints {
    /// A debug override: the only candidate when set.
    pub debug: Option<SocketAddr>,
    /// Host names to resolve through the app (first one is the `Host` header
    /// unless a task names its own host).
    pub hosts: Vec<String>,
    /// Host names with their own short-link port (`example.com:8443`),
    /// resolved like `hosts` and tried after them.
    pub host_ports: Vec<(String, u16)>,
    /// The short-link port of `hosts`, `ips` and `backup_ips`.
    pub port: u16,
    /// Fixed IPs, used like resolved ones.
    pub ips: Vec<IpAddr>,
    /// Fixed addresses with their own port (`10.0.0.1:8080`), used like
    /// `ips` and tried after them.
    pub addrs: Vec<SocketAddr>,
    /// Backup IPs, used after the others.
    pub backup_ips: Vec<IpAddr>,
}

impl ShortLinkEndpoints {
    /// Whether the short link has anywhere to connect: a debug address, an
    /// endpoint with its own port, or a port for the others (port 0 is none:
    /// a task that can only use the short link is then refused with
    /// [`SubmitError::NoShortLink`](super::SubmitError::NoShortLink), and a
    /// `Both` task uses the long link).
    pub fn is_configured(&self) -> bool {
        self.debug.is_some()
            || !self.addrs.is_empty()
            || !self.host_ports.is_empty()
            || self.port != 0
    }
}

/// Where the long link connects: like [`ShortLinkEndpoints`], with several
/// ports (every port × every IP, IP-major, as Mars does).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LongLinkEndpoints {
    /// A debug override: the only candidate when set.
    pub debug: Option<SocketAddr>,
    /// Host names to resolve through the app.
    pub hosts: Vec<String>,
    /// Ports, tried for every IP.
    pub ports: Vec<u16>,
    /// Fixed IPs, used like resolved ones.
    pub ips: Vec<IpAddr>,
    /// Backup IPs, used after the others.
    pub backup_ips: Vec<IpAddr>,
}

/// Which link a [`Channel::Both`](crate::task::Channel::Both) task uses, and when that is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelChoice {
    /// Mars: decided once, at submit (long if connected then, else short; no
    /// later migration).
    AtSubmit,
    /// stn: decided at every attempt, so a retry after the long link dropped
    /// goes out on the short link at once, and a task queued while the long
    /// link was down uses it as soon as it is up.
    PerAttempt,
}

/// What happens to tasks while the app says there is no network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoNetworkPolicy {
    /// Mars: network-status-sensitive tasks fail at once with "no network"
    /// (unless the long link is connected); the others are sent anyway.
    FailSensitive,
    /// stn: nothing is dispatched while there is no network; every task waits
    /// (within its deadline) for the network to come back.
    WaitAll,
}

/// Which failed tasks are parked as zombies (Mars `zombie_task_manager.cc`)
/// and replayed on signs of connectivity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ZombiePolicy {
    /// Never park; a failed task ends at once.
    Off,
    /// Mars: park only tasks with an explicit `total_timeout` that has time
    /// left; the budget is `total_timeout` from submission.
    TotalTimeoutOnly,
    /// Also park tasks without a `total_timeout`, until their computed task
    /// deadline. Not the default of any profile: in a loop of calls (the
    /// benchmark) a call that would have failed keeps trying until its
    /// deadline while the next call could have started, and under heavy loss
    /// on the long link that made stn slower than Mars (stn-sim bench).
    UntilDeadline,
}

/// Which HTTP statuses other than 200 a short-link task retries (an attempt
/// answered with any other status ends with [`Error::Http`](crate::error::Error::Http)
/// either way; this decides whether the task then retries, if it has
/// retries left). Set in [`Config::http_retry`].
///
/// ```
/// use stn_proto::{config::HttpRetry, Config};
/// use stn_proto::Profile;
/// assert_eq!(Config::for_profile(Profile::Mars).http_retry(), HttpRetry::EveryStatus);
/// let stn = Config::for_profile(Profile::Stn).http_retry();
/// assert!(!stn.retries(404) && stn.retries(429) && stn.retries(503));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpRetry {
    /// Mars: every status other than 200 is retried (`__SingleRespHandle`
    /// treats them all as a network failure), so a 404 with `retry_count(2)`
    /// is asked three times.
    EveryStatus,
    /// stn: client errors (4xx) end the task at once, except 408 (Request
    /// Timeout) and 429 (Too Many Requests), which say "try again"; every
    /// other status (5xx, an unexpected 1xx/2xx/3xx) is retried. Asking again
    /// for a missing CGI or a malformed request gets the same answer.
    NotClientErrors,
}

impl HttpRetry {
    /// Whether an attempt answered with `status` may be retried.
    pub const fn retries(self, status: u16) -> bool {
        match self {
            HttpRetry::EveryStatus => status != 200,
            HttpRetry::NotClientErrors => {
                !matches!(status, 400..=499) || status == 408 || status == 429
            }
        }
    }
}

/// Everything the [`Engine`](super::Engine) needs, for one profile.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// The profile these values came from (reports and logs).
    pub(crate) profile: Profile,
    /// Root seed of every random choice (candidate shuffles, jitter).
    pub(crate) seed: u64,
    /// Short-link endpoints.
    pub(crate) short_link: ShortLinkEndpoints,
    /// Long-link endpoints; `None` = no long link (every task goes short).
    pub(crate) long_link: Option<LongLinkEndpoints>,
    /// Most candidates handed to one race, on both links (Mars
    /// `kNumMakeCount` = 5); see [`long_link_races_every_candidate`](Self::long_link_races_every_candidate).
    pub(crate) max_candidates: usize,
    /// Whether a long-link connect races every candidate instead of the
    /// first [`max_candidates`](Self::max_candidates) (stn). Mars races five
    /// and, if all five are dead, waits for its reconnect schedule (5 s and
    /// more) with the live endpoints never tried. The race stops at the first
    /// connect, so the extra candidates cost nothing when an early one works.
    pub(crate) long_link_races_every_candidate: bool,
    /// Short-link racing and HTTP caps.
    pub(crate) exchange: ExchangeConfig,
    /// Long-link machine configuration (racing, codec, heartbeat, monitor).
    pub(crate) long: LongLinkConfig,
    /// Timeout constants and stn's adaptive layer.
    pub(crate) timeouts: TimeoutConfig,
    /// Whether long-link tasks get the adaptive per-attempt timeouts of
    /// [`TimeoutConfig::adaptive`] (when set) or always Mars's formulas. A
    /// timeout on the long link fails every task on it and drops the link,
    /// so a short timeout costs far more there than on a short link.
    pub(crate) long_link_adaptive_timeouts: bool,
    /// Ban rule and candidate ordering.
    pub(crate) ban: BanConfig,
    /// Anti-avalanche limits.
    pub(crate) limits: AntiAvalancheConfig,
    /// Delay before retrying after a failure that was not a timeout (Mars
    /// `DEF_TASK_RETRY_INTERNAL` = 1 s).
    pub(crate) retry_interval: Duration,
    /// Delay before retrying after an attempt timeout (Mars: 1 s as well).
    pub(crate) retry_interval_after_timeout: Duration,
    /// Which non-200 HTTP statuses are retried: every one under the Mars
    /// profiles ([`HttpRetry::EveryStatus`], Mars's behaviour), all but
    /// 4xx other than 408 and 429 under stn ([`HttpRetry::NotClientErrors`]).
    pub(crate) http_retry: HttpRetry,
    /// A network change redoes running attempts without consuming a retry
    /// (stn); Mars consumes one.
    pub(crate) free_retry_on_network_change: bool,
    /// How `Both` tasks pick their link.
    pub(crate) channel_choice: ChannelChoice,
    /// A long-link task with no retry left whose first-packet or read-write
    /// timer dropped the link gets one more attempt within its deadline
    /// (stn; Mars: none). Only for tasks that may be hedged.
    pub(crate) long_link_rescue: bool,
    /// A connect whose race tried every candidate and met only refusals
    /// and permanent TLS failures ends the tasks that can only use that
    /// link, at once, with that error (stn), instead of retrying, parking or
    /// leaving them queued for the long link until their deadline (Mars).
    /// A permanent TLS failure of the long link ends its waiters under
    /// every profile.
    pub(crate) connect_refusal_ends_task: bool,
    /// A short-link request of a task that allows it may go as TLS early
    /// data (stn; Mars: never).
    pub(crate) early_data: bool,
    /// Behaviour without network.
    pub(crate) no_network: NoNetworkPolicy,
    /// Zombie parking.
    pub(crate) zombies: ZombiePolicy,
    /// A parked task is replayed after this long if no task started meanwhile
    /// (Mars: 60 s).
    pub(crate) zombie_idle_restart: Duration,
    /// How long to wait for an answer to [`Output::Resolve`](super::Output::Resolve)
    /// (Mars: 2 s for `OnNewDns`).
    pub(crate) resolve_timeout: Duration,
    /// How long a resolve answer is reused (Mars resolves for every attempt:
    /// zero). Cleared on network change.
    pub(crate) resolve_ttl: Duration,
    /// Most tasks held at once (queued, running or parked); more → [`SubmitError::QueueFull`](super::SubmitError::QueueFull).
    pub(crate) max_queued_tasks: usize,
    /// Most short-link attempts in flight at once (Mars: unlimited).
    pub(crate) max_in_flight_short: usize,
    /// Hedged short-link requests ([`HedgePolicy`](super::HedgePolicy);
    /// Mars: none).
    pub(crate) hedge: Option<super::HedgePolicy>,
    /// The short link's keep-alive socket pool, for tasks that send
    /// `Connection: Keep-Alive` ([`PoolConfig`](super::PoolConfig); `None`:
    /// every exchange closes its connection).
    pub(crate) socket_pool: Option<super::PoolConfig>,
    /// The network at start.
    pub(crate) network: NetworkKind,
    /// Whether the app is in the foreground at start.
    pub(crate) foreground: bool,
}

impl Config {
    /// The profile these values came from.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The root seed of every random choice (see [`seed`](Self::seed)).
    pub fn rng_seed(&self) -> u64 {
        self.seed
    }

    /// Sets the root seed of every random choice (candidate shuffles,
    /// jitter). Give every client its own: a fleet sharing one seed would
    /// jitter in lock-step.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    /// Where the short link connects.
    pub fn short_link(&self) -> &ShortLinkEndpoints {
        &self.short_link
    }

    /// Where the short link connects, to change.
    pub fn short_link_mut(&mut self) -> &mut ShortLinkEndpoints {
        &mut self.short_link
    }

    /// Where the long link connects; `None`: no long link.
    pub fn long_link(&self) -> Option<&LongLinkEndpoints> {
        self.long_link.as_ref()
    }

    /// Sets where the long link connects; `None`: no long link (every task
    /// goes short).
    pub fn set_long_link(&mut self, endpoints: Option<LongLinkEndpoints>) {
        self.long_link = endpoints;
    }

    /// The long-link machine's configuration (racing, codec, heartbeat,
    /// reconnect schedule, tasks in flight).
    pub fn long(&self) -> &LongLinkConfig {
        &self.long
    }

    /// The long-link machine's configuration, to change.
    pub fn long_mut(&mut self) -> &mut LongLinkConfig {
        &mut self.long
    }

    /// The short link's racing and HTTP limits.
    pub fn exchange(&self) -> &ExchangeConfig {
        &self.exchange
    }

    /// The short link's racing and HTTP limits, to change.
    pub fn exchange_mut(&mut self) -> &mut ExchangeConfig {
        &mut self.exchange
    }

    /// Timeout constants and stn's adaptive layer.
    pub fn timeouts(&self) -> &TimeoutConfig {
        &self.timeouts
    }

    /// Timeout constants and stn's adaptive layer, to change.
    pub fn timeouts_mut(&mut self) -> &mut TimeoutConfig {
        &mut self.timeouts
    }

    /// The ban rule and candidate ordering.
    pub fn ban(&self) -> &BanConfig {
        &self.ban
    }

    /// The ban rule and candidate ordering, to change (the 2017 benchmark
    /// turned banning off: `config.ban_mut().enabled = false`).
    pub fn ban_mut(&mut self) -> &mut BanConfig {
        &mut self.ban
    }

    /// The anti-avalanche limits.
    pub fn limits(&self) -> &AntiAvalancheConfig {
        &self.limits
    }

    /// The anti-avalanche limits, to change.
    pub fn limits_mut(&mut self) -> &mut AntiAvalancheConfig {
        &mut self.limits
    }

    /// The short link's keep-alive socket pool; `None`: every exchange
    /// closes its connection.
    pub fn socket_pool(&self) -> Option<&super::PoolConfig> {
        self.socket_pool.as_ref()
    }

    /// The short link's keep-alive socket pool, to change (`None` when off).
    pub fn socket_pool_mut(&mut self) -> Option<&mut super::PoolConfig> {
        self.socket_pool.as_mut()
    }

    /// Sets the short link's keep-alive socket pool, for tasks that send
    /// `Connection: Keep-Alive`; `None`: every exchange closes its connection.
    pub fn set_socket_pool(&mut self, pool: Option<super::PoolConfig>) {
        self.socket_pool = pool;
    }

    /// Most tasks held at once (queued, running or parked); more are refused
    /// with [`SubmitError::QueueFull`](super::SubmitError::QueueFull).
    pub fn max_queued_tasks(&self) -> usize {
        self.max_queued_tasks
    }

    /// Sets the most tasks held at once (see [`max_queued_tasks`](Self::max_queued_tasks)).
    pub fn set_max_queued_tasks(&mut self, n: usize) {
        self.max_queued_tasks = n;
    }

    /// Delay before retrying after a failure that was not a timeout.
    pub fn retry_interval(&self) -> Duration {
        self.retry_interval
    }

    /// Sets the delay before retrying after a failure that was not a timeout.
    pub fn set_retry_interval(&mut self, interval: Duration) {
        self.retry_interval = interval;
    }

    /// Sets the most short-link attempts in flight at once (more wait in the
    /// queue).
    pub fn set_max_in_flight_short(&mut self, n: usize) {
        self.max_in_flight_short = n;
    }

    /// Most candidates handed to one race (Mars `kNumMakeCount` = 5); under
    /// stn the long link races every candidate anyway and the short link's
    /// race goes round all of them until the task's deadline.
    pub fn max_candidates(&self) -> usize {
        self.max_candidates
    }

    /// Sets the most candidates handed to one race, on both links.
    pub fn set_max_candidates(&mut self, n: usize) {
        self.max_candidates = n;
    }

    /// Which non-200 HTTP statuses a short-link task retries.
    pub fn http_retry(&self) -> HttpRetry {
        self.http_retry
    }

    /// Sets which non-200 HTTP statuses a short-link task retries (for
    /// example Mars's [`HttpRetry::EveryStatus`] under the stn profile).
    pub fn set_http_retry(&mut self, policy: HttpRetry) {
        self.http_retry = policy;
    }

    /// The hedging of slow short-link requests (`None`: never hedged).
    pub fn hedge(&self) -> Option<&super::HedgePolicy> {
        self.hedge.as_ref()
    }

    /// Sets the hedging of slow short-link requests for every task; `None`
    /// turns it off, and with it the long link's rescue of a task whose link
    /// stalled (a task can also opt out of both with `Task::hedge(false)`).
    ///
    /// ```
    /// use stn_proto::Config;
    /// let mut config = Config::default();
    /// assert!(config.hedge().is_some());
    /// config.set_hedge(None);
    /// assert!(config.hedge().is_none());
    /// ```
    pub fn set_hedge(&mut self, policy: Option<super::HedgePolicy>) {
        self.hedge = policy;
    }

    /// Sets which failed tasks are parked and replayed on signs of
    /// connectivity.
    pub fn set_zombies(&mut self, policy: ZombiePolicy) {
        self.zombies = policy;
    }

    /// Sets how long after it failed a parked task is replayed when nothing
    /// else happens.
    pub fn set_zombie_idle_restart(&mut self, after: Duration) {
        self.zombie_idle_restart = after;
    }

    /// Sets the short-link endpoints to fixed IPs on `port`.
    #[must_use]
    pub fn short_link_ips(mut self, ips: impl IntoIterator<Item = IpAddr>, port: u16) -> Self {
        self.short_link.ips = ips.into_iter().collect();
        self.short_link.port = port;
        self
    }

    /// Sets the long-link endpoints to fixed IPs on `port`.
    #[must_use]
    pub fn long_link_ips(mut self, ips: impl IntoIterator<Item = IpAddr>, port: u16) -> Self {
        self.long_link = Some(LongLinkEndpoints {
            ips: ips.into_iter().collect(),
            ports: vec![port],
            ..LongLinkEndpoints::default()
        });
        self
    }

    /// Sets the seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}
