//! Named long links besides the main one (Mars `CreateLonglink_ext`): what
//! the app gives for one ([`LinkOptions`]), what it is told about each
//! ([`LinkUpdate`]), and the hooks the driver answers each link's identify
//! question with.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use stn_proto::config::{LongLinkConfig, LongLinkEndpoints};
use stn_proto::{IdentifyDecision, LinkName, LinkSpec, LinkStatus};

use crate::hooks::{Identify, IdentifyJudge, IdentifyRequest, IdentifyResponse};

type LinkEdit = Box<dyn FnOnce(&mut LongLinkConfig) + Send>;

/// A named long link to add ([`Builder::link`](crate::Builder::link),
/// [`Client::add_link`](crate::Client::add_link)): its endpoints, and,
/// if they differ from the main link's, its identify packet, codec,
/// heartbeat and other long-link settings. A task runs on it with
/// [`Task::on_link`](stn_proto::Task::on_link).
///
/// ```
/// use stn_driver::LinkOptions;
/// use stn_driver::proto::LinkName;
///
/// let push = LinkOptions::new(LinkName::new("push").unwrap())
///     .addr("127.0.0.1:8082".parse().unwrap())
///     .identify(9, "token")
///     .configure(|long| long.heartbeat.interval = stn_driver::proto::Duration::from_secs(60));
/// assert_eq!(push.name().as_str(), "push");
/// ```
pub struct LinkOptions {
    name: LinkName,
    endpoints: LongLinkEndpoints,
    identify: Identify,
    identify_judge: Option<IdentifyJudge>,
    edits: Vec<LinkEdit>,
}

impl fmt::Debug for LinkOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkOptions")
            .field("name", &self.name)
            .field("endpoints", &self.endpoints)
            .field("edits", &self.edits.len())
            .finish_non_exhaustive()
    }
}

impl LinkOptions {
    /// A link named `name`, with no endpoint yet, no identify packet and the
    /// main link's long-link settings.
    pub fn new(name: LinkName) -> Self {
        LinkOptions {
            name,
            endpoints: LongLinkEndpoints::default(),
            identify: Identify::Fixed(IdentifyDecision::Never),
            identify_judge: None,
            edits: Vec::new(),
        }
    }

    /// Its name.
    pub fn name(&self) -> &LinkName {
        &self.name
    }

    /// Connects to `addr` (its IP, and its port on every IP).
    #[must_use]
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.endpoints.ips.push(addr.ip());
        if !self.endpoints.ports.contains(&addr.port()) {
            self.endpoints.ports.push(addr.port());
        }
        self
    }

    /// Connects to `ip` on the link's ports.
    #[must_use]
    pub fn ip(mut self, ip: IpAddr) -> Self {
        self.endpoints.ips.push(ip);
        self
    }

    /// Resolves `host` and connects to its addresses on the link's ports.
    #[must_use]
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.endpoints.hosts.push(host.into());
        self
    }

    /// A port the link connects to on every IP.
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.endpoints.ports.push(port);
        self
    }

    /// Sends this identify packet on every new connection of the link.
    #[must_use]
    pub fn identify(mut self, cmd_id: u32, body: impl Into<Bytes>) -> Self {
        self.identify = Identify::Fixed(IdentifyDecision::Now {
            cmd_id,
            body: body.into(),
        });
        self
    }

    /// Builds the identify packet for each new connection of the link (as
    /// [`Builder::identify_with`](crate::Builder::identify_with)).
    #[must_use]
    pub fn identify_with(
        mut self,
        build: impl Fn(&IdentifyRequest) -> IdentifyDecision + Send + Sync + 'static,
    ) -> Self {
        self.identify = Identify::Build(Arc::new(build));
        self
    }

    /// Judges the server's answer to the link's identify packet (as
    /// [`Builder::identify_verdict`](crate::Builder::identify_verdict)).
    #[must_use]
    pub fn identify_verdict(
        mut self,
        verdict: impl Fn(&IdentifyResponse) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.identify_judge = Some(Arc::new(verdict));
        self
    }

    /// Frames the link with `codec` (as
    /// [`Builder::long_link_codec`](crate::Builder::long_link_codec)).
    #[must_use]
    pub fn codec(self, codec: impl stn_proto::codec::LongLinkCodec + 'static) -> Self {
        let codec = stn_proto::codec::SharedCodec::new(codec);
        self.configure(move |c| c.frame_codec = Some(codec))
    }

    /// Edits the link's long-link settings (heartbeat, racing, reconnect,
    /// tasks in flight), which start as the main link's.
    #[must_use]
    pub fn configure(mut self, edit: impl FnOnce(&mut LongLinkConfig) + Send + 'static) -> Self {
        self.edits.push(Box::new(edit));
        self
    }

    /// The engine's part, from the main link's settings `base`, and the
    /// driver's.
    pub(crate) fn into_parts(self, base: &LongLinkConfig) -> (LinkName, LinkSpec, LinkHooks) {
        let mut long = base.clone();
        for edit in self.edits {
            edit(&mut long);
        }
        let hooks = LinkHooks {
            identify: self.identify,
            identify_judge: self.identify_judge,
            status: None,
        };
        (self.name, LinkSpec::new(self.endpoints, long), hooks)
    }
}

/// A named link's status changed ([`Client::links_status`](crate::Client::links_status)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkUpdate {
    /// The link.
    pub link: LinkName,
    /// Its new status.
    pub status: LinkStatus,
}

/// What the driver keeps for one named link.
pub(crate) struct LinkHooks {
    pub(crate) identify: Identify,
    pub(crate) identify_judge: Option<IdentifyJudge>,
    /// Its last status.
    pub(crate) status: Option<LinkStatus>,
}

impl LinkHooks {
    /// The endpoint the link is up to.
    pub(crate) fn addr(&self) -> Option<SocketAddr> {
        match self.status {
            Some(LinkStatus::Connected { addr }) => Some(addr),
            _ => None,
        }
    }
}
