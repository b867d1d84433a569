//! The driver's side of a proxy: the route of each connect, the
//! placeholders of remote DNS, and what each connect's end says about the
//! proxy.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use stn_proto::proxy::{ProxyFailure, ProxyRoute, ProxyTarget, Route, RouteConfig, RouteResult};
use stn_proto::{ConnId, ConnectError, Duration, Instant};

use super::connect::{direct_to_name, through_proxy};
use super::names::Placeholders;
use super::Settings;
use crate::dial::Dialer;
use crate::runtime::{AsyncStream, BoxFuture, Runtime};

/// A connect the engine closed before it ended is evidence against the
/// proxy only after this long without an answer (the OS's first SYN
/// retransmission): a race's loser closed sooner says nothing.
const UNANSWERED: Duration = Duration::from_secs(1);

/// A connect in progress.
#[derive(Clone, Copy, Debug)]
struct Pending {
    route: Route,
    started: Instant,
}

/// What the driver keeps for its proxy.
pub(crate) struct ProxyState {
    settings: Arc<Settings>,
    route: ProxyRoute,
    names: Placeholders,
    pending: BTreeMap<ConnId, Pending>,
    /// When a tunnel last opened.
    last_tunnel: Option<Instant>,
}

impl ProxyState {
    pub(crate) fn new(settings: Settings) -> Self {
        let mut config = RouteConfig::default();
        config.fallback = settings.fallback;
        ProxyState {
            settings: Arc::new(settings),
            route: ProxyRoute::new(config),
            names: Placeholders::default(),
            pending: BTreeMap::new(),
            last_tunnel: None,
        }
    }

    /// The answer to the engine's lookup of `host` when the proxy resolves
    /// names: its placeholder (`None`: resolve it locally, because names
    /// are resolved locally, the proxy is being bypassed, or the table is
    /// full).
    pub(crate) fn placeholder(&mut self, now: Instant, host: &str) -> Option<IpAddr> {
        if !self.settings.remote_dns || self.route.route(now) == Route::Direct {
            return None;
        }
        self.names.of(host)
    }

    /// The connect of `conn` to `addr`, through the proxy or direct.
    pub(crate) fn connect(
        &mut self,
        now: Instant,
        rt: &Arc<dyn Runtime>,
        conn: ConnId,
        addr: SocketAddr,
        dialer: &Dialer,
    ) -> BoxFuture<io::Result<Box<dyn AsyncStream>>> {
        let route = self.route.route(now);
        self.pending.insert(
            conn,
            Pending {
                route,
                started: now,
            },
        );
        let name = self.names.host(addr.ip()).map(str::to_owned);
        match (route, name) {
            (Route::Proxy, name) => {
                let target = name
                    .and_then(|host| ProxyTarget::name(host, addr.port()))
                    .unwrap_or(ProxyTarget::Addr(addr));
                through_proxy(rt.clone(), self.settings.clone(), target, dialer.clone())
            }
            (Route::Direct, Some(host)) => {
                direct_to_name(rt.clone(), host, addr.port(), dialer.clone())
            }
            (Route::Direct, None) => dialer.connect(addr),
        }
    }

    /// `conn`'s connect completed (the tunnel is open, or the direct TCP
    /// connect is done).
    pub(crate) fn connected(&mut self, now: Instant, conn: ConnId) {
        if let Some(p) = self.pending.remove(&conn) {
            if p.route == Route::Proxy {
                self.last_tunnel = Some(now);
            }
            self.route.on_result(now, p.route, RouteResult::Connected);
        }
    }

    /// `conn`'s connect failed with `error`.
    pub(crate) fn failed(&mut self, now: Instant, conn: ConnId, error: &ConnectError) {
        let Some(p) = self.pending.remove(&conn) else {
            return;
        };
        let result = match (p.route, error.proxy_failure()) {
            (Route::Proxy, Some(f)) => RouteResult::ProxyFailed(f),
            // The tunnel opened (a TLS failure after it): the proxy worked.
            (Route::Proxy, None) => RouteResult::Connected,
            (Route::Direct, _) => RouteResult::DirectFailed,
        };
        self.route.on_result(now, p.route, result);
    }

    /// The engine closed `conn` (a connect it no longer wants, or an open
    /// connection). A connect through the proxy left unanswered for
    /// [`UNANSWERED`], with no tunnel opened since it started, counts as
    /// the proxy not answering (a black-holed proxy is found this way).
    pub(crate) fn closed(&mut self, now: Instant, conn: ConnId) {
        let Some(p) = self.pending.remove(&conn) else {
            return;
        };
        let tunnel_since = self.last_tunnel.is_some_and(|t| t >= p.started);
        if p.route == Route::Proxy && now >= p.started + UNANSWERED && !tunnel_since {
            self.route.on_result(
                now,
                Route::Proxy,
                RouteResult::ProxyFailed(ProxyFailure::Timeout),
            );
        }
    }

    /// A new network: the proxy is tried first again.
    pub(crate) fn network_changed(&mut self) {
        self.route.reset();
    }

    /// Whether connects bypass the proxy now.
    pub(crate) fn bypassing(&self) -> bool {
        self.route.bypassing()
    }

    /// The proxy as a URL without credentials.
    pub(crate) fn label(&self) -> &str {
        &self.settings.label
    }
}
