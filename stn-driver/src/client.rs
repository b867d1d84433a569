//! The user-facing API: [`Builder`] → [`Client`].

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_channel::{Sender, TrySendError};
use bytes::Bytes;
use futures_channel::oneshot;
use stn_proto::IdentifyDecision;
use stn_proto::NetworkKind;
use stn_proto::Profile;
use stn_proto::Response;
use stn_proto::Task;
use stn_proto::{config::LongLinkEndpoints, Config, Engine, JudgeRequest, Verdict};
use stn_proto::{LinkError, LinkName, LinkStatus, Report};

use crate::links::{LinkOptions, LinkUpdate};

use crate::clock::Clock;
use crate::driver::{Command, Control, Driver, DriverParts, Judge};
use crate::endpoint::{Endpoint, EndpointError};
use crate::error::Error;
use crate::events::{self, Events};
use crate::history::HistoryError;
use crate::hooks::{Identify, IdentifyRequest, IdentifyResponse};
use crate::outcome::{Finished, Snapshot};
use crate::pushes::{self, Pushes};
use crate::runtime::Runtime;

type ConfigEdit = Box<dyn FnOnce(&mut Config) + Send>;

/// Why [`Builder::build`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Neither an IP nor a host name was given.
    #[error("no endpoints: give at least one IP or host name")]
    NoEndpoints,
    /// Neither a short-link nor a long-link port was given.
    #[error("no ports: give a short-link port, a long-link port, or both")]
    NoPorts,
    /// An endpoint given as text is neither an IP, an `IP:port`, a host name
    /// nor a `host:port`.
    #[error(transparent)]
    InvalidEndpoint(#[from] EndpointError),
    /// The runtime cannot run the client from here (for tokio: `build()`
    /// was called outside a tokio runtime).
    #[error("no runtime: {0}")]
    NoRuntime(String),
    /// [`Builder::tls_server_name`] is neither a DNS name nor an IP address.
    #[error("invalid TLS server name {0:?}: not a DNS name or IP address")]
    InvalidServerName(String),
    /// Port 0 was given: nothing listens there.
    #[error("{0}: port 0 is not a port a server listens on (give 1 to 65535)")]
    ZeroPort(&'static str),
    /// [`Builder::timeout`] is zero or longer than a task may keep trying
    /// ([`Task::MAX_TOTAL_TIMEOUT`](stn_proto::Task::MAX_TOTAL_TIMEOUT), 600 s).
    #[error("timeout {0:?} is out of range: give more than 0 and at most 600 s")]
    InvalidTimeout(std::time::Duration),
    /// [`Builder::proxy`]'s address or credentials cannot be used.
    #[error(transparent)]
    InvalidProxy(#[from] crate::proxy::ProxyConfigError),
    /// A [`Builder::link`] cannot be added (a taken name, too many links,
    /// or no endpoint).
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Configures and starts a [`Client`]. Get one from [`Client::builder`]
/// (runtimes with a `Default`) or [`Builder::with_runtime`].
pub struct Builder<R> {
    runtime: R,
    profile: Profile,
    seed: u64,
    ips: Vec<IpAddr>,
    hosts: Vec<String>,
    backup_ips: Vec<IpAddr>,
    short_port: Option<u16>,
    /// Fixed IPs with their own short-link port.
    addrs: Vec<SocketAddr>,
    /// Host names with their own short-link port.
    host_ports: Vec<(String, u16)>,
    long_ports: Vec<u16>,
    /// Endpoints that did not parse; `build()` reports the first.
    endpoint_errors: Vec<EndpointError>,
    /// The first port 0 given, by what it was given for.
    zero_port: Option<&'static str>,
    /// The total timeout of tasks that set none.
    timeout: Option<std::time::Duration>,
    edits: Vec<ConfigEdit>,
    identify: Identify,
    identify_judge: Option<crate::hooks::IdentifyJudge>,
    judge: Option<Judge>,
    queue_capacity: usize,
    push_capacity: usize,
    event_capacity: usize,
    push_bytes: usize,
    read_budget: usize,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsOptions>,
    proxy: Option<crate::proxy::Proxy>,
    links: Vec<LinkOptions>,
}

/// Default [`Builder::read_budget`]: 72 MiB. The stn profile runs at most 64
/// short-link attempts at once, each response at most a 16 KiB head and a
/// 1 MiB body, plus one long-link frame of at most 1 MiB: 72 MiB holds all
/// of them whole, so legitimate responses never wait for the budget. (The
/// Mars profiles cap neither attempts nor bodies as tightly: set a budget to
/// match your own caps.)
pub const DEFAULT_READ_BUDGET: usize = 72 * 1024 * 1024;

/// Default [`Builder::event_capacity`]: 1024 entries per [`Events`] stream.
pub const DEFAULT_EVENT_CAPACITY: usize = 1024;

/// Default [`Builder::push_buffer_bytes`]: 4 MiB per [`Pushes`] stream.
pub const DEFAULT_PUSH_BYTES: usize = 4 * 1024 * 1024;

impl<R: fmt::Debug> fmt::Debug for Builder<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("runtime", &self.runtime)
            .field("profile", &self.profile)
            .field("seed", &self.seed)
            .field("ips", &self.ips)
            .field("hosts", &self.hosts)
            .field("short_port", &self.short_port)
            .field("addrs", &self.addrs)
            .field("host_ports", &self.host_ports)
            .field("long_ports", &self.long_ports)
            .field("config_edits", &self.edits.len())
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> Builder<R> {
    /// A builder that will run the client on `runtime`.
    pub fn with_runtime(runtime: R) -> Self {
        Builder {
            runtime,
            profile: Profile::Stn,
            seed: 0,
            ips: Vec::new(),
            hosts: Vec::new(),
            backup_ips: Vec::new(),
            short_port: None,
            addrs: Vec::new(),
            host_ports: Vec::new(),
            long_ports: Vec::new(),
            endpoint_errors: Vec::new(),
            zero_port: None,
            timeout: None,
            edits: Vec::new(),
            identify: Identify::Fixed(IdentifyDecision::Never),
            identify_judge: None,
            judge: None,
            queue_capacity: 1024,
            push_capacity: 256,
            event_capacity: DEFAULT_EVENT_CAPACITY,
            push_bytes: DEFAULT_PUSH_BYTES,
            read_budget: DEFAULT_READ_BUDGET,
            #[cfg(feature = "tls")]
            tls: None,
            proxy: None,
            links: Vec::new(),
        }
    }

    /// Adds a named long link besides the main one (Mars
    /// `CreateLonglink_ext`), connecting from the start; more can be added
    /// and removed at run time ([`Client::add_link`], [`Client::remove_link`]).
    /// [`build`](Self::build) fails with [`BuildError::Link`] if two share a
    /// name, more than [`MAX_LINKS`](stn_proto::MAX_LINKS) are given, or one
    /// has no endpoint.
    #[must_use]
    pub fn link(mut self, link: LinkOptions) -> Self {
        self.links.push(link);
        self
    }

    /// Adds an endpoint written as text: an IP (`10.0.0.1`, `::1`), a host
    /// name resolved with the runtime's resolver whenever the engine asks
    /// (`example.com`), or either with a port (`10.0.0.1:8080`,
    /// `[::1]:8080`, `example.com:8080`), which is then that endpoint's
    /// short-link port (others use [`short_link_port`](Self::short_link_port);
    /// the long link's ports come from [`long_link_port`](Self::long_link_port)
    /// for every endpoint).
    /// Text that is none of these makes [`build`](Self::build) fail with
    /// [`BuildError::InvalidEndpoint`] naming it.
    #[must_use]
    pub fn endpoint(mut self, endpoint: impl AsRef<str>) -> Self {
        match endpoint.as_ref().parse::<Endpoint>() {
            Ok(e) => self.add_endpoint(e),
            Err(e) => {
                self.endpoint_errors.push(e);
                self
            }
        }
    }

    /// Adds an IP and its short-link port (see [`endpoint`](Self::endpoint)).
    #[must_use]
    pub fn socket_addr(self, addr: SocketAddr) -> Self {
        self.add_endpoint(addr.into())
    }

    /// Adds a parsed [`Endpoint`] (see [`endpoint`](Self::endpoint)).
    /// Port 0 makes [`build`](Self::build) fail.
    #[must_use]
    pub fn add_endpoint(mut self, endpoint: Endpoint) -> Self {
        if endpoint.port() == Some(0) {
            self.endpoint_errors.push(EndpointError {
                input: endpoint.to_string(),
                reason: crate::endpoint::PORT_ZERO,
            });
            return self;
        }
        match (endpoint.ip(), endpoint.host_name(), endpoint.port()) {
            (Some(ip), _, Some(port)) => self.addrs.push(SocketAddr::new(ip, port)),
            (None, Some(name), Some(port)) => self.host_ports.push((name.to_owned(), port)),
            (Some(ip), _, None) => self.ips.push(ip),
            (None, Some(name), None) => self.hosts.push(name.to_owned()),
            (None, None, _) => {}
        }
        self
    }

    /// Adds a fixed IP.
    #[must_use]
    pub fn ip(mut self, ip: IpAddr) -> Self {
        self.ips.push(ip);
        self
    }

    /// Adds fixed IPs.
    #[must_use]
    pub fn ips(mut self, ips: impl IntoIterator<Item = IpAddr>) -> Self {
        self.ips.extend(ips);
        self
    }

    /// Adds a host name, resolved with the runtime's resolver.
    #[must_use]
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.hosts.push(host.into());
        self
    }

    /// Adds backup IPs, tried after the others.
    #[must_use]
    pub fn backup_ips(mut self, ips: impl IntoIterator<Item = IpAddr>) -> Self {
        self.backup_ips.extend(ips);
        self
    }

    /// The short-link (HTTP) port of every endpoint given without one.
    /// Without it (and without endpoints that carry a port) there is no
    /// short link: a task that can only use it is refused at `send` with
    /// [`SubmitError::NoShortLink`](stn_proto::SubmitError::NoShortLink).
    /// Port 0 makes [`build`](Self::build) fail.
    #[must_use]
    pub fn short_link_port(mut self, port: u16) -> Self {
        if port == 0 {
            self.zero_port.get_or_insert("short_link_port");
        }
        self.short_port = Some(port);
        self
    }

    /// Adds a long-link port (every port is tried with every IP). Without
    /// one there is no long link. Port 0 makes [`build`](Self::build) fail.
    #[must_use]
    pub fn long_link_port(mut self, port: u16) -> Self {
        if port == 0 {
            self.zero_port.get_or_insert("long_link_port");
        }
        self.long_ports.push(port);
        self
    }

    /// How long each task keeps trying, unless it sets its own
    /// [`total_timeout`](stn_proto::Task::total_timeout): a client-wide
    /// default. Within it a task whose attempts fail is retried and may be
    /// parked and replayed (Mars's zombie tasks), so "keep trying until",
    /// not "give up after the first failure". Without it each task's time
    /// comes from Mars's formula (its retries, server cost and the links'
    /// timeouts). More than 600 s, or zero, makes [`build`](Self::build)
    /// fail with [`BuildError::InvalidTimeout`].
    ///
    /// ```no_run
    /// # fn demo<R: stn_driver::Runtime>(b: stn_driver::Builder<R>) -> stn_driver::Builder<R> {
    /// b.timeout(std::time::Duration::from_secs(10))
    /// # }
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The profile the engine's constants come from (default [`Profile::Stn`]).
    #[must_use]
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Seed of the engine's random choices.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Most tasks the engine holds at once (more are refused with
    /// [`SubmitError::QueueFull`](stn_proto::SubmitError::QueueFull)).
    #[must_use]
    pub fn max_queued_tasks(self, n: usize) -> Self {
        self.configure(move |c| c.set_max_queued_tasks(n))
    }

    /// Most tasks in flight on the long link at once.
    #[must_use]
    pub fn max_in_flight_long(self, n: usize) -> Self {
        self.configure(move |c| c.long_mut().max_in_flight_tasks = n)
    }

    /// Any other override of the engine's [`Config`], applied after the
    /// profile and endpoints (in call order).
    #[must_use]
    pub fn configure(mut self, edit: impl FnOnce(&mut Config) + Send + 'static) -> Self {
        self.edits.push(Box::new(edit));
        self
    }

    /// Judges every response before its `send` completes (Mars `Buf2Resp`):
    /// `judge` decodes the response and returns a [`Verdict`] — accept it,
    /// retry the task, end it with a decode error, report an expired session
    /// (need-auth tasks then wait for [`Client::set_authed`]`(true)`), or
    /// retry every running task. It runs on the driver, so it should be
    /// quick; if it panics, the task ends with a decode error. Without a
    /// judge every response is accepted.
    ///
    /// ```no_run
    /// # fn demo<R: stn_driver::Runtime>(b: stn_driver::Builder<R>) -> stn_driver::Builder<R> {
    /// use stn_proto::Verdict;
    /// b.judge(|req| {
    ///     if req.response.body.starts_with(b"SESSION_EXPIRED") {
    ///         Verdict::SessionTimeout
    ///     } else {
    ///         Verdict::Accept
    ///     }
    /// })
    /// # }
    /// ```
    pub fn judge(
        mut self,
        judge: impl Fn(&JudgeRequest) -> Verdict + Send + Sync + 'static,
    ) -> Self {
        self.judge = Some(Arc::new(judge));
        self
    }

    /// Frames the long link with `codec` instead of Mars's 20-byte header
    /// (Mars `LongLinkEncoder`, for a deployment with its own packer). The
    /// codec also says which frames are noops, pushes and identify answers.
    /// Bodies stay capped by the long-link config's `codec.max_body_len`;
    /// `codec.client_version` applies to the default codec only. The server
    /// must speak the same codec: a client and server that disagree fail the
    /// link at the first frame with a decode error naming the cause.
    #[must_use]
    pub fn long_link_codec(self, codec: impl stn_proto::codec::LongLinkCodec + 'static) -> Self {
        let codec = stn_proto::codec::SharedCodec::new(codec);
        self.configure(move |c| c.long_mut().frame_codec = Some(codec))
    }

    /// Sends this identify packet on every new long-link connection, when
    /// the link asks (default: never). For a packet built per connection
    /// (rotating tokens) use [`identify_with`](Self::identify_with).
    #[must_use]
    pub fn identify(mut self, cmd_id: u32, body: impl Into<Bytes>) -> Self {
        self.identify = Identify::Fixed(IdentifyDecision::Now {
            body: body.into(),
            cmd_id,
        });
        self
    }

    /// Builds the identify packet for each new long-link connection (Mars
    /// `GetLongLinkIdentifyCheckBuffer`), called at the connection's first
    /// noop slot: [`IdentifyDecision::Now`] sends a packet (seq
    /// `0xFFFFFFFE`) instead of the noop, `Next` sends the noop and asks
    /// again at the next slot (3.5 min), `Never` not on this connection.
    /// It runs on the driver, so it should be quick; if it panics the
    /// answer is `Next`. Replaces [`identify`](Self::identify).
    ///
    /// ```no_run
    /// # fn demo<R: stn_driver::Runtime>(b: stn_driver::Builder<R>) -> stn_driver::Builder<R> {
    /// use std::sync::{Arc, Mutex};
    /// use stn_driver::proto::IdentifyDecision;
    /// let token = Arc::new(Mutex::new(String::from("token-1")));
    /// let current = token.clone();
    /// b.identify_with(move |_conn| IdentifyDecision::Now {
    ///     cmd_id: 9,
    ///     body: current.lock().unwrap().clone().into(),
    /// })
    /// .identify_verdict(|answer| answer.body.starts_with(b"OK"))
    /// # }
    /// ```
    #[must_use]
    pub fn identify_with(
        mut self,
        build: impl Fn(&IdentifyRequest) -> IdentifyDecision + Send + Sync + 'static,
    ) -> Self {
        self.identify = Identify::Build(Arc::new(build));
        self
    }

    /// Judges the server's answer to the identify packet (Mars
    /// `OnLongLinkIdentifyResponse`): `true` accepts it; `false` takes the
    /// long link down, and the next connection identifies again (with a
    /// packet from [`identify_with`](Self::identify_with) built anew). It
    /// runs on the driver; if it panics the answer is rejected. Without a
    /// verdict every answer is accepted.
    #[must_use]
    pub fn identify_verdict(
        mut self,
        verdict: impl Fn(&IdentifyResponse) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.identify_judge = Some(Arc::new(verdict));
        self
    }

    /// Entries buffered per [`Client::reports`] and [`Client::link_status`]
    /// stream (default [`DEFAULT_EVENT_CAPACITY`]); a full stream drops its
    /// oldest entry and counts it in [`Events::lagged`].
    #[must_use]
    pub fn event_capacity(mut self, n: usize) -> Self {
        self.event_capacity = n.max(1);
        self
    }

    /// Capacity of the queue of submissions waiting for the driver (a full
    /// queue makes `send` wait). It holds the app's own tasks; nothing a
    /// server sends is queued in the driver.
    #[must_use]
    pub fn queue_capacity(mut self, n: usize) -> Self {
        self.queue_capacity = n.max(1);
        self
    }

    /// Pushes buffered per [`Client::pushes`] stream before new ones are dropped.
    #[must_use]
    pub fn push_capacity(mut self, n: usize) -> Self {
        self.push_capacity = n.max(1);
        self
    }

    /// Bytes of push bodies buffered per [`Client::pushes`] stream before new
    /// ones are dropped (default [`DEFAULT_PUSH_BYTES`]).
    #[must_use]
    pub fn push_buffer_bytes(mut self, n: usize) -> Self {
        self.push_bytes = n;
        self
    }

    /// Most received bytes the client holds across all its connections
    /// (default [`DEFAULT_READ_BUDGET`]): partial responses and frames the
    /// engine is still assembling. When it is reached, readable connections
    /// wait instead of the client growing, until responses complete or their
    /// tasks time out. Keep it above the largest response the engine accepts
    /// (its HTTP head and body caps, its frame cap), or such a response can
    /// only time out. [`Snapshot::held_bytes`] shows the count.
    #[must_use]
    pub fn read_budget(mut self, bytes: usize) -> Self {
        self.read_budget = bytes.max(1);
        self
    }

    /// TLS on every connection, short and long link, with `config` (rustls;
    /// [`crate::tls`] makes them: webpki or custom PEM roots, SPKI pinning,
    /// ALPN). Its session cache is shared by all of this client's
    /// connections, so a reconnect to a server seen before resumes (TLS 1.3:
    /// one round trip less, no certificate flight). Each connection verifies
    /// the host name its IP was resolved from, or the IP itself for fixed
    /// IPs, unless [`tls_server_name`](Self::tls_server_name) names one.
    ///
    /// ```no_run
    /// # fn demo<R: stn_driver::Runtime>(b: stn_driver::Builder<R>) -> Result<stn_driver::Builder<R>, Box<dyn std::error::Error>> {
    /// use stn_driver::tls;
    /// let roots = tls::roots_from_pem(&std::fs::read("ca.pem")?)?;
    /// Ok(b.tls(tls::client_config(roots, &[b"http/1.1"])?).tls_server_name("api.example.com"))
    /// # }
    /// ```
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, config: rustls::ClientConfig) -> Self {
        self.tls.get_or_insert_with(Default::default).config = Some(Arc::new(config));
        self
    }

    /// The name every TLS connection sends (SNI) and verifies, whatever
    /// endpoint it goes to (a DNS name or an IP address).
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls_server_name(mut self, name: impl Into<String>) -> Self {
        self.tls.get_or_insert_with(Default::default).server_name = Some(name.into());
        self
    }

    /// Longest a TLS handshake may take after its TCP connect before the
    /// attempt fails with [`TlsFailure::HandshakeTimeout`](stn_proto::TlsFailure::HandshakeTimeout)
    /// (default [`DEFAULT_HANDSHAKE_TIMEOUT`](crate::tls::DEFAULT_HANDSHAKE_TIMEOUT);
    /// the race's attempt deadline may end it first).
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls_handshake_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.tls
            .get_or_insert_with(Default::default)
            .handshake_timeout = Some(timeout);
        self
    }

    /// Every connection, short and long link, goes through `proxy`: an HTTP
    /// CONNECT tunnel or SOCKS5, with credentials if given; host names are
    /// resolved by the proxy unless [`Proxy::local_dns`](crate::Proxy::local_dns).
    /// As in Mars, the proxy is tried before a direct connect: after 2
    /// failures of the proxy itself in a row, connects go direct for 30 s
    /// (doubling after each failed return to the proxy, up to 10 min),
    /// unless [`Proxy::proxy_only`](crate::Proxy::proxy_only). Racing and
    /// bans work on the endpoints behind the proxy; a failure of the proxy
    /// itself counts against none of them. TLS, if set, runs through the
    /// tunnel to the endpoint's own name. See `docs/proxies.md`.
    ///
    /// ```no_run
    /// # fn demo<R: stn_driver::Runtime>(b: stn_driver::Builder<R>) -> stn_driver::Builder<R> {
    /// use stn_driver::Proxy;
    /// b.proxy(Proxy::socks5("10.0.0.1:1080").credentials("alice", "s3cret"))
    /// # }
    /// ```
    #[must_use]
    pub fn proxy(mut self, proxy: crate::proxy::Proxy) -> Self {
        self.proxy = Some(proxy);
        self
    }

    /// The engine configuration this builder makes (applies and consumes
    /// the [`configure`](Self::configure) edits: call it once).
    ///
    /// # Errors
    ///
    /// [`BuildError`] if an endpoint is malformed, or no endpoint or no
    /// port was given.
    pub fn engine_config(&mut self) -> Result<Config, BuildError> {
        if let Some(e) = self.endpoint_errors.first() {
            return Err(e.clone().into());
        }
        if let Some(what) = self.zero_port {
            return Err(BuildError::ZeroPort(what));
        }
        if let Some(t) = self.timeout {
            if t.is_zero() || t > Task::MAX_TOTAL_TIMEOUT {
                return Err(BuildError::InvalidTimeout(t));
            }
        }
        if self.ips.is_empty()
            && self.hosts.is_empty()
            && self.addrs.is_empty()
            && self.host_ports.is_empty()
        {
            return Err(BuildError::NoEndpoints);
        }
        let own_ports = !self.addrs.is_empty() || !self.host_ports.is_empty();
        if self.short_port.is_none() && !own_ports && self.long_ports.is_empty() {
            return Err(BuildError::NoPorts);
        }
        let mut config = Config::for_profile(self.profile).seed(self.seed);
        config.short_link_mut().ips = self.ips.clone();
        config.short_link_mut().hosts = self.hosts.clone();
        config.short_link_mut().addrs = self.addrs.clone();
        config.short_link_mut().host_ports = self.host_ports.clone();
        config.short_link_mut().backup_ips = self.backup_ips.clone();
        // Without a short-link port the endpoints given without one have no
        // short-link candidates; tasks that could use it go long.
        config.short_link_mut().port = self.short_port.unwrap_or(0);
        if !self.long_ports.is_empty() {
            // Every endpoint is a long-link address on every long-link port.
            let mut ips = self.ips.clone();
            ips.extend(self.addrs.iter().map(SocketAddr::ip));
            let mut hosts = self.hosts.clone();
            hosts.extend(self.host_ports.iter().map(|(h, _)| h.clone()));
            let mut long = LongLinkEndpoints::default();
            long.hosts = hosts;
            long.ports = self.long_ports.clone();
            long.ips = ips;
            long.backup_ips = self.backup_ips.clone();
            config.set_long_link(Some(long));
        }
        for edit in self.edits.drain(..) {
            edit(&mut config);
        }
        Ok(config)
    }

    /// Starts the driver on the runtime and returns the client.
    ///
    /// # Errors
    ///
    /// [`BuildError`] if an endpoint is malformed, no endpoint or no port
    /// was given, or the runtime cannot
    /// spawn from here ([`Runtime::check`]). Never panics.
    pub fn build(mut self) -> Result<Client<R>, BuildError> {
        let config = self.engine_config()?;
        let proxy = self
            .proxy
            .as_ref()
            .map(crate::proxy::Proxy::checked)
            .transpose()?
            .map(crate::proxy::ProxyState::new);
        self.runtime.check().map_err(BuildError::NoRuntime)?;
        #[cfg(feature = "tls")]
        let tls = self
            .tls
            .take()
            .map(crate::tls::TlsOptions::finish)
            .transpose()?
            .flatten();
        #[cfg(not(feature = "tls"))]
        let tls = None;
        let rt: Arc<dyn Runtime> = Arc::new(self.runtime);
        let clock = Clock::new(rt.now());
        let mut engine = Engine::new(clock.to_proto(rt.now()), config);
        let mut links = BTreeMap::new();
        for options in std::mem::take(&mut self.links) {
            let (name, spec, hooks) = options.into_parts(engine.config().long());
            engine.add_link(clock.to_proto(rt.now()), name.clone(), spec)?;
            links.insert(name, hooks);
        }
        let (commands_tx, commands) = async_channel::bounded(self.queue_capacity);
        let (control_tx, control) = async_channel::unbounded();
        let driver = Driver::new(DriverParts {
            rt: rt.clone(),
            engine,
            clock,
            commands,
            control,
            read_budget: self.read_budget,
            identify: self.identify,
            identify_judge: self.identify_judge,
            links,
            judge: self.judge,
            tls,
            default_timeout: self.timeout,
            proxy,
        });
        rt.spawn(Box::pin(driver));
        Ok(Client {
            shared: Arc::new(Shared {
                commands: commands_tx,
                control: control_tx,
                next_ticket: AtomicU64::new(1),
                push_capacity: self.push_capacity,
                push_bytes: self.push_bytes,
                event_capacity: self.event_capacity,
            }),
            _runtime: PhantomData,
        })
    }
}

struct Shared {
    commands: Sender<Command>,
    control: Sender<Control>,
    next_ticket: AtomicU64,
    push_capacity: usize,
    push_bytes: usize,
    event_capacity: usize,
}

/// An stn client: sends tasks through the engine, over the runtime `R`.
///
/// Cheap to clone (all clones share one driver), `Send + Sync`, usable from
/// many tasks at once. The driver stops when [`shutdown`](Self::shutdown) is
/// called or the last clone is dropped; either way every pending
/// [`send`](Self::send) ends (with [`Error::Shutdown`]).
///
/// The runtime adapters give this type a short name (`stn_tokio::Client`).
///
/// ```no_run
/// use stn_driver::{Client, Error, Runtime};
/// use stn_driver::proto::{Channel, Task};
///
/// async fn hello<R: Runtime + Default>() -> Result<(), Box<dyn std::error::Error>> {
///     let client = Client::<R>::builder()
///         .endpoint("10.0.0.1")
///         .endpoint("example.com") // resolved by the runtime when the engine asks
///         .short_link_port(8080)
///         .long_link_port(8081)
///         .build()?;
///     let mut pushes = client.pushes();
///     let reply = client.send(Task::new(8, "/mars/hello2", "hi").channel(Channel::Short)).await?;
///     println!("{:?}", reply.body);
///     if let Some(push) = pushes.next().await {
///         println!("push {}", push.cmd_id);
///     }
///     client.shutdown().await;
///     assert_eq!(client.send(Task::new(8, "", "late")).await, Err(Error::Shutdown));
///     Ok(())
/// }
/// ```
pub struct Client<R> {
    shared: Arc<Shared>,
    _runtime: PhantomData<fn() -> R>,
}

impl<R> Clone for Client<R> {
    fn clone(&self) -> Self {
        Client {
            shared: self.shared.clone(),
            _runtime: PhantomData,
        }
    }
}

impl<R> fmt::Debug for Client<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("closed", &self.shared.commands.is_closed())
            .finish_non_exhaustive()
    }
}

/// Cancels the task if the `send` future is dropped before it ends.
struct CancelOnDrop<'a> {
    control: &'a Sender<Control>,
    ticket: u64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.control.try_send(Control::Cancel(self.ticket));
        }
    }
}

impl<R: Runtime + Default> Client<R> {
    /// A builder on the runtime's default instance.
    pub fn builder() -> Builder<R> {
        Builder::with_runtime(R::default())
    }
}

impl<R> Client<R> {
    /// Sends a task and waits for its response.
    ///
    /// Dropping the returned future cancels the task (the engine closes its
    /// connections).
    ///
    /// **The server may see a short-link request twice**: a retry resends it
    /// under every profile, and under the default (stn) profile a task marked
    /// `Task::hedge(true)` (its replay is harmless) whose request of at most
    /// 8 KiB gets no answer for about 4 RTTs (0.6–3 s) is hedged, sent once
    /// more on a fresh connection (twice at most per attempt; the first
    /// response wins). Use `retry_count(0)` and leave `hedge` off for a
    /// request that must not repeat, or `configure(|c| c.set_hedge(None))`
    /// to hedge no task. Under the stn profile
    /// a 4xx status other than 408 and 429 is not retried
    /// ([`Config::http_retry`](stn_proto::Config::http_retry)).
    ///
    /// # Errors
    ///
    /// [`Error::Task`] with the engine's typed error (and, when the task ran
    /// out of time after failed attempts, what the last one ran into; the
    /// `io::Error` behind it as the [`source`](std::error::Error::source)),
    /// [`Error::Refused`] if the engine refused the task, [`Error::Shutdown`]
    /// after a shutdown. `docs/errors.md` lists every error, its cause and
    /// what to do.
    pub fn send(&self, task: Task) -> impl Future<Output = Result<Response, Error>> + '_ {
        self.submit(task, |finished| finished.outcome)
    }

    /// Like [`send`](Self::send), with the task's id and attempt count.
    pub fn send_detailed(&self, task: Task) -> impl Future<Output = Finished> + '_ {
        self.submit(task, |finished| finished)
    }

    /// Both `send`s: one future that maps its own result (an `async fn`
    /// awaiting another would hold the task twice, its argument and the
    /// inner future's, in every call in flight).
    async fn submit<T>(&self, task: Task, map: impl FnOnce(Finished) -> T) -> T {
        let shared = &self.shared;
        let ticket = shared.next_ticket.fetch_add(1, Ordering::Relaxed);
        let (reply, rx) = oneshot::channel();
        let shutdown = || Finished {
            id: None,
            outcome: Err(Error::Shutdown),
            attempts: 0,
        };
        let submit = Command::Submit {
            ticket,
            task,
            reply,
        };
        // Every call in flight is a future of this size: only a full queue
        // waits, in a box, so neither the task nor the queue's waiting state
        // sizes them all.
        let queued = match shared.commands.try_send(submit) {
            Ok(()) => Queued::Sent,
            Err(TrySendError::Full(submit)) => Queued::Wait(Box::pin(shared.commands.send(submit))),
            Err(TrySendError::Closed(_)) => Queued::Closed,
        };
        match queued {
            Queued::Sent => {}
            Queued::Wait(wait) => {
                if wait.await.is_err() {
                    return map(shutdown());
                }
            }
            Queued::Closed => return map(shutdown()),
        }
        let mut guard = CancelOnDrop {
            control: &shared.control,
            ticket,
            armed: true,
        };
        // Canceled: the driver dropped the reply without sending (it is gone).
        let finished = rx.await.map_or_else(|_| shutdown(), |f| *f);
        guard.armed = false;
        map(finished)
    }

    /// A stream of the server's pushes on the long link, from now on. Each
    /// stream gets every push; one that is not read keeps at most the
    /// builder's [`push_capacity`](Builder::push_capacity) (later ones are
    /// dropped with a warning) and at most
    /// [`push_buffer_bytes`](Builder::push_buffer_bytes) of push bodies.
    pub fn pushes(&self) -> Pushes {
        let (sub, rx) = pushes::channel(self.shared.push_capacity, self.shared.push_bytes);
        let _ = self.shared.control.try_send(Control::Subscribe(sub));
        rx
    }

    /// The app's network changed (Mars `OnNetworkChange`): bans reset, the
    /// long link reconnects, running attempts are redone.
    pub fn network_changed(&self, kind: NetworkKind) {
        let _ = self.shared.control.try_send(Control::NetworkChanged(kind));
    }

    /// The network went away.
    pub fn network_lost(&self) {
        let _ = self.shared.control.try_send(Control::NetworkLost);
    }

    /// The network is available (again).
    pub fn network_available(&self, kind: NetworkKind) {
        let _ = self
            .shared
            .control
            .try_send(Control::NetworkAvailable(kind));
    }

    /// The current network's label, e.g. `"wifi:<ssid>"` or
    /// `"mobile:<carrier>"` (Mars `getCurrNetLabel`): endpoint history and
    /// the smart heartbeat's learned interval are kept per label. Give it
    /// with every [`network_changed`](Self::network_changed).
    pub fn set_network_label(&self, label: impl Into<String>) {
        let _ = self
            .shared
            .control
            .try_send(Control::NetworkLabel(label.into()));
    }

    /// The app went to the foreground (`true`) or the background.
    pub fn set_foreground(&self, foreground: bool) {
        let _ = self
            .shared
            .control
            .try_send(Control::Foreground(foreground));
    }

    /// Whether the app's session is authenticated on every host and for
    /// every user (the simple form of Mars `MakesureAuthed`). Tasks with
    /// [`Task::need_authed`](stn_proto::Task::need_authed) wait until it
    /// is; a [`Verdict::SessionTimeout`] from the [judge](Builder::judge)
    /// sets it back to `false` for that task's host and user. Forgets every
    /// [`set_host_authed`](Self::set_host_authed) answer. Starts `false`.
    pub fn set_authed(&self, authed: bool) {
        let _ = self.shared.control.try_send(Control::Authed(authed));
    }

    // ---- auth per host and user, and the long link's switch ----

    /// Whether `user_id` is authenticated on `host` (Mars
    /// `MakesureAuthed(host, user_id)`): a need-auth task waits only for
    /// its own host (its [`Task::host`](stn_proto::Task::host), else the
    /// first short-link host; a long-only task the first long-link host;
    /// `""` for a link with addresses only) and its
    /// [`Task::user_id`](stn_proto::Task::user_id) (`None` is a user like
    /// any other). A session timeout de-authenticates only the host and
    /// user of the task that reported it. Overrides
    /// [`set_authed`](Self::set_authed) for that host and user until the
    /// next `set_authed`; at most 1024 such answers are kept (more are
    /// dropped with a WARN).
    ///
    /// ```no_run
    /// # async fn demo<R: stn_driver::Runtime>(client: stn_driver::Client<R>) {
    /// use stn_driver::proto::Task;
    /// // Alice logged in on api.example.com; Bob's tasks keep waiting.
    /// client.set_host_authed("api.example.com", Some("alice"), true);
    /// let task = Task::new(7, "/cgi-bin/inbox", "x")
    ///     .host("api.example.com")
    ///     .user_id("alice")
    ///     .need_authed(true);
    /// let _ = client.send(task).await;
    /// # }
    /// ```
    pub fn set_host_authed(&self, host: &str, user_id: Option<&str>, authed: bool) {
        let _ = self.shared.control.try_send(Control::HostAuthed {
            host: host.to_owned(),
            user_id: user_id.map(str::to_owned),
            authed,
        });
    }

    /// Turns the long link off (`false`) or back on (Mars
    /// `DisableLongLink`, which has no way back). Off: the link is closed
    /// and does not reconnect; tasks that may use the short link go there
    /// (their attempt on the long link is interrupted and retried); a task
    /// that can only use the long link ends at once with
    /// [`Error::Task`](crate::Error::Task)`(Local(LongLinkDisabled))`,
    /// now or when sent later. On: a fresh long link connects at once.
    /// [`link_status`](Self::link_status) and
    /// [`snapshot`](Self::snapshot) show
    /// [`LinkStatus::Disabled`](stn_proto::LinkStatus::Disabled) while off.
    /// Nothing happens without a long link.
    ///
    /// ```no_run
    /// # async fn demo<R: stn_driver::Runtime>(client: stn_driver::Client<R>) {
    /// client.set_long_link_enabled(false); // e.g. the server asked to go short-only
    /// client.set_long_link_enabled(true);
    /// # }
    /// ```
    pub fn set_long_link_enabled(&self, enabled: bool) {
        let _ = self
            .shared
            .control
            .try_send(Control::LongLinkEnabled(enabled));
    }

    // ---- end of auth per host and the long link's switch ----

    /// A stream of every attempt's profile from now on (Mars
    /// `ReportTaskProfile`): the task, attempt number, link, endpoint,
    /// connect time, time to first byte, bytes each way, hedges and how it
    /// ended. Bounded ([`Builder::event_capacity`]): a stream read too
    /// slowly drops its oldest reports and counts them in
    /// [`Events::lagged`]. Ends once the client is shut down.
    ///
    /// ```no_run
    /// # async fn demo<R: stn_driver::Runtime>(client: stn_driver::Client<R>) {
    /// let mut reports = client.reports();
    /// while let Some(r) = reports.next().await {
    ///     println!("task {} attempt {} via {:?}: {:?}", r.task, r.attempt, r.endpoint, r.error);
    /// }
    /// # }
    /// ```
    pub fn reports(&self) -> Events<Report> {
        let (sub, rx) = events::channel(self.shared.event_capacity);
        let _ = self.shared.control.try_send(Control::SubscribeReports(sub));
        rx
    }

    /// A stream of the long link's status: first its status when the
    /// subscription reaches the client's task (if the long link has one
    /// yet), then every change (connecting, connected with its endpoint,
    /// disconnected, disabled), so an app need not poll
    /// [`snapshot`](Self::snapshot) and cannot miss a change that happened
    /// while it subscribed. Bounded like [`reports`](Self::reports)
    /// (drop-oldest, counted in [`Events::lagged`]). Ends once the client is
    /// shut down.
    ///
    /// ```no_run
    /// # async fn demo<R: stn_driver::Runtime>(client: stn_driver::Client<R>) {
    /// use stn_driver::proto::LinkStatus;
    /// let mut status = client.link_status();
    /// while let Some(s) = status.next().await {
    ///     if let LinkStatus::Connected { addr } = s {
    ///         println!("long link up to {addr}");
    ///     }
    /// }
    /// # }
    /// ```
    pub fn link_status(&self) -> Events<LinkStatus> {
        let (sub, rx) = events::channel(self.shared.event_capacity);
        let _ = self
            .shared
            .control
            .try_send(Control::SubscribeLinkStatus(sub));
        rx
    }

    /// Adds a named long link at run time (Mars `CreateLonglink_ext`): it
    /// connects at once, and tasks naming it
    /// ([`Task::on_link`](stn_proto::Task::on_link)) run on it.
    ///
    /// # Errors
    ///
    /// [`LinkError`] if the name is taken, [`MAX_LINKS`](stn_proto::MAX_LINKS)
    /// links exist, the link has no endpoint, or the client is shut down.
    ///
    /// ```no_run
    /// # async fn demo<R: stn_driver::Runtime>(client: stn_driver::Client<R>) -> Result<(), Box<dyn std::error::Error>> {
    /// use stn_driver::proto::{LinkName, Task};
    /// use stn_driver::LinkOptions;
    /// let push = LinkName::new("push")?;
    /// client.add_link(LinkOptions::new(push.clone()).addr("10.0.0.2:8082".parse()?)).await?;
    /// let answer = client.send(Task::new(7, "", "hi").on_link(push.clone())).await?;
    /// client.remove_link(&push).await?;
    /// # let _ = answer; Ok(()) }
    /// ```
    pub async fn add_link(&self, link: LinkOptions) -> Result<(), LinkError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .control
            .try_send(Control::AddLink(Box::new(link), tx))
            .map_err(|_| LinkError::ShutDown)?;
        rx.await.map_err(|_| LinkError::ShutDown)?
    }

    /// Removes a named long link: every task on it, queued or in flight,
    /// ends with [`LocalError::LinkRemoved`](stn_proto::LocalError::LinkRemoved)
    /// naming it; its connection closes.
    ///
    /// # Errors
    ///
    /// [`LinkError::Unknown`] if there is no such link, [`LinkError::ShutDown`]
    /// once the client is shut down.
    pub async fn remove_link(&self, link: &LinkName) -> Result<(), LinkError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .control
            .try_send(Control::RemoveLink(link.clone(), tx))
            .map_err(|_| LinkError::ShutDown)?;
        rx.await.map_err(|_| LinkError::ShutDown)?
    }

    /// A stream of the named long links' status changes, each naming its
    /// link (the main link's are in [`link_status`](Self::link_status)).
    /// Bounded like [`reports`](Self::reports). Ends once the client is
    /// shut down.
    pub fn links_status(&self) -> Events<LinkUpdate> {
        let (sub, rx) = events::channel(self.shared.event_capacity);
        let _ = self.shared.control.try_send(Control::SubscribeLinks(sub));
        rx
    }

    /// The endpoint ban history and the smart heartbeat's per-network
    /// records in the engine's persist format
    /// ([`Engine::export_history`](stn_proto::Engine::export_history)), to
    /// store and give to [`import_ban_history`](Self::import_ban_history) at
    /// the next start (entries are stamped against the wall clock; bans
    /// themselves are not kept, only each endpoint's record). `None` once
    /// shut down.
    ///
    /// ```no_run
    /// # async fn demo<R: stn_driver::Runtime>(old: stn_driver::Client<R>, new: stn_driver::Client<R>) -> Result<(), Box<dyn std::error::Error>> {
    /// if let Some(saved) = old.export_ban_history().await {
    ///     std::fs::write("stn-history.bin", &saved)?;
    /// }
    /// let accepted = new.import_ban_history(std::fs::read("stn-history.bin")?).await?;
    /// println!("{accepted} endpoint records restored");
    /// # Ok(()) }
    /// ```
    pub async fn export_ban_history(&self) -> Option<Vec<u8>> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .control
            .try_send(Control::ExportHistory(tx))
            .ok()?;
        rx.await.ok()
    }

    /// Loads history written by [`export_ban_history`](Self::export_ban_history)
    /// (of this or an earlier client, or an endpoint history alone):
    /// records of the current network order its candidates, others wait for
    /// their network; heartbeat records of the same profile's algorithm are
    /// merged. Returns how many entries and records were accepted (expired
    /// ones are skipped).
    ///
    /// # Errors
    ///
    /// [`HistoryError::Import`] if the bytes are not a valid history
    /// (nothing is imported), [`HistoryError::Shutdown`] after a shutdown.
    pub async fn import_ban_history(
        &self,
        bytes: impl Into<Vec<u8>>,
    ) -> Result<usize, HistoryError> {
        let (tx, rx) = oneshot::channel();
        self.shared
            .control
            .try_send(Control::ImportHistory(bytes.into(), tx))
            .map_err(|_| HistoryError::Shutdown)?;
        rx.await
            .map_err(|_| HistoryError::Shutdown)?
            .map_err(HistoryError::Import)
    }

    /// Redoes every task (Mars `RedoTasks`): resolved addresses are
    /// forgotten, running short-link attempts are stopped and started again,
    /// the long link reconnects and its tasks are redone, parked tasks are
    /// replayed. An interrupted attempt is free under the stn profile and
    /// uses a retry under the Mars ones
    /// ([`Config::free_retry_on_network_change`](stn_proto::Config::free_retry_on_network_change)).
    pub fn redo_tasks(&self) {
        let _ = self.shared.control.try_send(Control::RedoTasks);
    }

    /// Ends every task the client holds now (Mars `ClearTasks`): each
    /// pending [`send`](Self::send) ends once, with
    /// [`Error::Task`]`(`[`Cancelled`](stn_proto::Error::Cancelled)`)`.
    /// Tasks sent after this call are not affected.
    pub fn clear_tasks(&self) {
        let _ = self.shared.control.try_send(Control::ClearTasks);
    }

    /// Connects the long link now if it is down (Mars
    /// `MakesureLonglinkConnected`), without waiting for a task to need it;
    /// its monitor still spaces connects after a failure. Nothing happens
    /// if it is up or connecting. Watch [`link_status`](Self::link_status)
    /// for the result.
    pub fn make_sure_long_link_connected(&self) {
        let _ = self.shared.control.try_send(Control::MakeSureLongLink);
    }

    /// A debug snapshot of the driver and engine (`None` once shut down).
    pub async fn snapshot(&self) -> Option<Snapshot> {
        let (tx, rx) = oneshot::channel();
        self.shared.control.try_send(Control::Snapshot(tx)).ok()?;
        rx.await.ok()
    }

    /// Ends every pending task with [`Error::Shutdown`], closes every
    /// connection and stops the driver; later sends fail with
    /// [`Error::Shutdown`]. Returns once the driver has stopped.
    pub async fn shutdown(&self) {
        let (tx, rx) = oneshot::channel();
        if self.shared.control.try_send(Control::Shutdown(tx)).is_ok() {
            // Canceled: the driver is already gone, which is just as final.
            let _ = rx.await;
        }
    }

    /// Whether the client is shut down (or its driver is gone).
    pub fn is_shut_down(&self) -> bool {
        self.shared.commands.is_closed()
    }
}

/// Where a submitted task's command went.
enum Queued<'a> {
    Sent,
    /// The queue was full: the send that waits for room.
    Wait(std::pin::Pin<Box<async_channel::Send<'a, Command>>>),
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}

    /// A runtime the tests never start; `unavailable` makes
    /// [`Runtime::check`] fail.
    #[derive(Debug, Default)]
    struct NoRuntime {
        unavailable: Option<&'static str>,
    }

    impl Runtime for NoRuntime {
        fn spawn(&self, _: crate::BoxFuture<()>) {}
        fn check(&self) -> Result<(), String> {
            self.unavailable.map_or(Ok(()), |why| Err(why.to_owned()))
        }
        fn new_timer(&self, _: std::time::Instant) -> std::pin::Pin<Box<dyn crate::AsyncTimer>> {
            unreachable!("not started in these tests")
        }
        fn connect(
            &self,
            _: std::net::SocketAddr,
        ) -> crate::BoxFuture<std::io::Result<Box<dyn crate::AsyncStream>>> {
            unreachable!("not started in these tests")
        }
        fn resolve(&self, _: String) -> crate::BoxFuture<std::io::Result<Vec<IpAddr>>> {
            unreachable!("not started in these tests")
        }
    }

    #[test]
    fn client_is_send_sync_clone() {
        assert_send_sync::<Client<NoRuntime>>();
    }

    #[test]
    fn builder_makes_the_engine_config() {
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let mut b = Client::<NoRuntime>::builder()
            .endpoint("192.0.2.1")
            .endpoint("example.invalid")
            .short_link_port(80)
            .long_link_port(8080)
            .long_link_port(443)
            .profile(Profile::Mars)
            .seed(9)
            .max_queued_tasks(5)
            .configure(|c| c.set_retry_interval(stn_proto::Duration::from_secs(3)));
        let c = b.engine_config().unwrap();
        assert_eq!(c.profile(), Profile::Mars);
        assert_eq!(c.rng_seed(), 9);
        assert_eq!(c.short_link().ips, vec![ip]);
        assert_eq!(c.short_link().hosts, vec!["example.invalid".to_owned()]);
        assert_eq!(c.short_link().port, 80);
        let long = c.long_link().unwrap();
        assert_eq!(long.ports, vec![8080, 443]);
        assert_eq!(long.ips, vec![ip]);
        assert_eq!(c.max_queued_tasks(), 5);
        assert_eq!(c.retry_interval(), stn_proto::Duration::from_secs(3));
    }

    #[test]
    fn endpoints_with_ports_and_socket_addrs() {
        let mut b = Client::<NoRuntime>::builder()
            .endpoint("192.0.2.1:8080")
            .endpoint("example.invalid:8443")
            .socket_addr("[2001:db8::1]:9090".parse().unwrap())
            .endpoint("192.0.2.9")
            .long_link_port(8081);
        let c = b.engine_config().unwrap();
        // Each endpoint keeps its own short-link port.
        let addrs: Vec<SocketAddr> = vec![
            "192.0.2.1:8080".parse().unwrap(),
            "[2001:db8::1]:9090".parse().unwrap(),
        ];
        assert_eq!(c.short_link().addrs, addrs);
        assert_eq!(
            c.short_link().host_ports,
            vec![("example.invalid".to_owned(), 8443)]
        );
        assert_eq!(
            c.short_link().ips,
            vec!["192.0.2.9".parse::<IpAddr>().unwrap()]
        );
        // No short_link_port: the endpoint without a port has no short link.
        assert_eq!(c.short_link().port, 0);
        // Every endpoint is a long-link address.
        let long = c.long_link().unwrap();
        assert_eq!(long.ports, vec![8081]);
        assert_eq!(long.hosts, vec!["example.invalid".to_owned()]);
        assert_eq!(long.ips.len(), 3);
        // A port on an endpoint alone is enough to have a short link.
        let mut b = Client::<NoRuntime>::builder().endpoint("localhost:1");
        let c = b.engine_config().unwrap();
        assert_eq!(c.short_link().host_ports, vec![("localhost".to_owned(), 1)]);
    }

    #[test]
    fn malformed_endpoints_fail_the_build_and_different_ports_do_not() {
        let err = Client::<NoRuntime>::builder()
            .endpoint("127.0.0.1:80:90")
            .short_link_port(80)
            .build()
            .unwrap_err();
        assert!(matches!(&err, BuildError::InvalidEndpoint(e) if e.input == "127.0.0.1:80:90"));
        assert!(err.to_string().contains("\"127.0.0.1:80:90\""), "{err}");
        for bad in [
            "",
            "host:",
            "[::1]",
            "a b:80",
            "10.0.0.256:80",
            "example.com:http",
        ] {
            let err = Client::<NoRuntime>::builder()
                .endpoint(bad)
                .short_link_port(80)
                .build()
                .unwrap_err();
            assert!(
                matches!(&err, BuildError::InvalidEndpoint(e) if e.input == bad),
                "{bad:?}: {err}"
            );
        }
        let mut b = Client::<NoRuntime>::builder()
            .short_link_port(79)
            .endpoint("10.0.0.1:80")
            .endpoint("10.0.0.2:81");
        let c = b.engine_config().unwrap();
        assert_eq!(c.short_link().port, 79);
        assert_eq!(c.short_link().addrs.len(), 2);
    }

    #[test]
    fn a_runtime_that_cannot_spawn_fails_the_build() {
        let err = Builder::with_runtime(NoRuntime {
            unavailable: Some("not here"),
        })
        .endpoint("10.0.0.1:80")
        .build()
        .unwrap_err();
        assert_eq!(err, BuildError::NoRuntime("not here".into()));
    }

    #[test]
    fn port_zero_a_url_and_an_out_of_range_timeout_fail_the_build() {
        let build = |b: Builder<NoRuntime>| b.build().map(drop).unwrap_err();
        let b = || Client::<NoRuntime>::builder().endpoint("10.0.0.1");
        assert_eq!(
            build(b().short_link_port(0)),
            BuildError::ZeroPort("short_link_port")
        );
        assert_eq!(
            build(b().long_link_port(0)).to_string(),
            "long_link_port: port 0 is not a port a server listens on (give 1 to 65535)"
        );
        let err = build(Client::<NoRuntime>::builder().socket_addr("10.0.0.1:0".parse().unwrap()));
        assert!(
            matches!(&err, BuildError::InvalidEndpoint(e) if e.input == "10.0.0.1:0"),
            "{err}"
        );
        let err = build(Client::<NoRuntime>::builder().endpoint("http://127.0.0.1:18080"));
        assert!(
            err.to_string().contains("a URL is not an endpoint"),
            "{err}"
        );
        for bad in [
            std::time::Duration::ZERO,
            std::time::Duration::from_secs(601),
        ] {
            assert_eq!(
                build(b().short_link_port(80).timeout(bad)),
                BuildError::InvalidTimeout(bad)
            );
        }
        let mut ok = b()
            .short_link_port(80)
            .timeout(std::time::Duration::from_secs(600));
        assert!(ok.engine_config().is_ok());
    }

    #[test]
    fn builder_needs_endpoints_and_ports() {
        let mut b = Client::<NoRuntime>::builder().short_link_port(80);
        assert_eq!(b.engine_config().unwrap_err(), BuildError::NoEndpoints);
        let mut b = Client::<NoRuntime>::builder().endpoint("10.0.0.1");
        assert_eq!(b.engine_config().unwrap_err(), BuildError::NoPorts);
        let mut b = Client::<NoRuntime>::builder()
            .endpoint("10.0.0.1")
            .long_link_port(1);
        assert!(b.engine_config().unwrap().long_link().is_some());
    }
}
