//! Proxy or direct, per connect: the proxy's own failure handling.
//!
//! Mars tries the proxy first whenever one is set: on the short link every
//! attempt uses the current preference (initially "proxy") except a task's
//! last retry, which flips it, and the preference becomes whatever route
//! last succeeded (`shortlink_task_manager.cc`, `default_use_proxy_`); the
//! long link always goes through the proxy. Mars's `ProxyIsAvailable`
//! (`proxy_test.cc`) is a probe the app runs itself.
//!
//! [`ProxyRoute`] keeps Mars's rule (proxy first, sticky to what works,
//! the other route after failures) per connect rather than per task, for
//! both links:
//!
//! - Only failures of the proxy itself count: a proxy that cannot reach
//!   the endpoint behind it ([`ProxyFailure::is_target_failure`]) works,
//!   and that failure is the endpoint's.
//! - After [`RouteConfig::failures_to_switch`] such failures in a row (2)
//!   connects go direct for [`RouteConfig::bypass`] (30 s, doubling after
//!   each failed return to the proxy, at most
//!   [`RouteConfig::max_bypass`], 10 min); then the next connect tries the
//!   proxy again, and one more proxy failure sends it back to direct.
//! - While direct, as many direct failures in a row go back to the proxy
//!   at once (a network where only the proxy gets out).
//! - A connect through the proxy that opens its tunnel resets everything:
//!   the proxy is preferred again.
//! - [`Fallback::Never`]: always the proxy (an app that must not connect
//!   directly).
//!
//! Results of connects started on the other route before a switch (still
//! in flight when it happened) change nothing, except a tunnel that
//! opened: that is proof the proxy works.
//!
//! ```
//! use stn_proto::proxy::{ProxyFailure, ProxyRoute, Route, RouteConfig, RouteResult};
//! use stn_proto::{Duration, Instant};
//!
//! let mut route = ProxyRoute::new(RouteConfig::default());
//! let t = Instant::from_secs(1);
//! assert_eq!(route.route(t), Route::Proxy);
//! route.on_result(t, Route::Proxy, RouteResult::ProxyFailed(ProxyFailure::Refused));
//! route.on_result(t, Route::Proxy, RouteResult::ProxyFailed(ProxyFailure::Refused));
//! assert_eq!(route.route(t), Route::Direct);
//! // 30 s later the proxy is tried again.
//! assert_eq!(route.route(t + Duration::from_secs(30)), Route::Proxy);
//! ```

use super::ProxyFailure;
use crate::time::{Duration, Instant};

/// How a connect goes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Route {
    /// Through the proxy.
    Proxy,
    /// Straight to the endpoint.
    Direct,
}

/// Whether connects may bypass a failing proxy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fallback {
    /// Go direct while the proxy fails (Mars's short link).
    #[default]
    Direct,
    /// Only ever through the proxy.
    Never,
}

/// The knobs of [`ProxyRoute`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouteConfig {
    /// Whether to go direct while the proxy fails.
    pub fallback: Fallback,
    /// Failures in a row of the current route that switch to the other
    /// (at least 1).
    pub failures_to_switch: u32,
    /// The first time connects bypass a failing proxy.
    pub bypass: Duration,
    /// The longest bypass (each failed return to the proxy doubles it).
    pub max_bypass: Duration,
}

impl Default for RouteConfig {
    /// Fallback to direct after 2 proxy failures in a row, for 30 s
    /// doubling up to 10 min.
    fn default() -> Self {
        RouteConfig {
            fallback: Fallback::Direct,
            failures_to_switch: 2,
            bypass: Duration::from_secs(30),
            max_bypass: Duration::from_secs(600),
        }
    }
}

/// How a connect on a route ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteResult {
    /// The route worked: the tunnel opened (proxy), or the TCP connect
    /// completed (direct).
    Connected,
    /// The proxy failed ([`Route::Proxy`] only). A failure of the target
    /// behind the proxy ([`ProxyFailure::is_target_failure`]) counts as
    /// the proxy working.
    ProxyFailed(ProxyFailure),
    /// A direct connect failed.
    DirectFailed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Through the proxy; `failures` proxy failures in a row.
    Proxy { failures: u32 },
    /// Direct until `until`; `failures` direct failures in a row.
    Direct { failures: u32, until: Instant },
}

/// The route of each connect when a proxy is set (see the module docs).
/// Deterministic; time is passed in; no timers of its own (the bypass
/// ends when [`route`](Self::route) is next asked).
#[derive(Clone, Debug)]
pub struct ProxyRoute {
    config: RouteConfig,
    state: State,
    /// The next bypass's length.
    bypass: Duration,
}

impl ProxyRoute {
    /// Starts on the proxy.
    pub fn new(config: RouteConfig) -> Self {
        let config = RouteConfig {
            failures_to_switch: config.failures_to_switch.max(1),
            max_bypass: config.max_bypass.max(config.bypass),
            ..config
        };
        ProxyRoute {
            state: State::Proxy { failures: 0 },
            bypass: config.bypass,
            config,
        }
    }

    /// The route for a connect starting at `now`.
    pub fn route(&mut self, now: Instant) -> Route {
        if let State::Direct { until, .. } = self.state {
            if now >= until {
                // The bypass is over: try the proxy; one failure ends it.
                self.state = State::Proxy {
                    failures: self.config.failures_to_switch - 1,
                };
            }
        }
        match self.state {
            State::Proxy { .. } => Route::Proxy,
            State::Direct { .. } => Route::Direct,
        }
    }

    /// Whether connects are bypassing the proxy now (without ending a
    /// bypass that is over, as [`route`](Self::route) would).
    pub fn bypassing(&self) -> bool {
        matches!(self.state, State::Direct { .. })
    }

    /// A connect that went out on `route` ended with `result`.
    pub fn on_result(&mut self, now: Instant, route: Route, result: RouteResult) {
        let n = self.config.failures_to_switch;
        match (route, result, self.state) {
            (Route::Proxy, RouteResult::Connected, _) => self.trust_proxy(),
            (Route::Proxy, RouteResult::ProxyFailed(f), State::Proxy { .. })
                if f.is_target_failure() =>
            {
                self.trust_proxy();
            }
            (Route::Proxy, RouteResult::ProxyFailed(_), State::Proxy { failures }) => {
                let failures = failures.saturating_add(1);
                if failures >= n && self.config.fallback == Fallback::Direct {
                    self.state = State::Direct {
                        failures: 0,
                        until: now + self.bypass,
                    };
                    self.bypass = self.bypass.saturating_mul(2).min(self.config.max_bypass);
                } else {
                    self.state = State::Proxy { failures };
                }
            }
            (Route::Direct, RouteResult::Connected, State::Direct { until, .. }) => {
                self.state = State::Direct { failures: 0, until };
            }
            (Route::Direct, RouteResult::DirectFailed, State::Direct { failures, until }) => {
                let failures = failures.saturating_add(1);
                self.state = if failures >= n {
                    State::Proxy { failures: n - 1 }
                } else {
                    State::Direct { failures, until }
                };
            }
            // Results of the other route's connects, from before a switch.
            _ => {}
        }
    }

    /// A new network: the proxy is preferred again, with a fresh bypass.
    pub fn reset(&mut self) {
        self.trust_proxy();
    }

    fn trust_proxy(&mut self) {
        self.state = State::Proxy { failures: 0 };
        self.bypass = self.config.bypass;
    }
}
