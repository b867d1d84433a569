//! The engine's place for the long link: its machine (none when no long
//! link is configured or the app disabled it), the endpoint of its last
//! connect, whether a connect waits for resolve answers, the refusal its
//! last connect met, and, while the app has the link disabled, what its
//! smart heartbeat learned.

use crate::error::Error;
use crate::long_link::LongLink;
use crate::net::SocketAddr;
use crate::smart_heartbeat::SmartHeartbeat;

/// The long link as the engine holds it.
#[derive(Debug)]
pub(super) struct LongSlot {
    link: Option<LongLink>,
    /// The app disabled the link: `link` is `None` though one is configured.
    disabled: bool,
    /// The endpoint since the last connect (kept after a disconnect: the
    /// failures of its tasks are reported after it).
    endpoint: Option<SocketAddr>,
    /// The monitor asked for a connect that waits for resolve answers.
    awaiting_resolve: bool,
    /// While disabled: the smart heartbeat of the machine that went, for
    /// the next one.
    parked_heartbeat: Option<SmartHeartbeat>,
    /// The last connect's race met only refusals and permanent TLS
    /// failures, and no connect started since: its error.
    refusal: Option<Error>,
}

impl LongSlot {
    /// The slot of a configured long link (`Some`) or of none.
    pub(super) fn new(link: Option<LongLink>) -> Self {
        LongSlot {
            link,
            disabled: false,
            endpoint: None,
            awaiting_resolve: false,
            parked_heartbeat: None,
            refusal: None,
        }
    }

    /// The machine, if the link is configured and enabled.
    pub(super) fn get(&self) -> Option<&LongLink> {
        self.link.as_ref()
    }

    pub(super) fn get_mut(&mut self) -> Option<&mut LongLink> {
        self.link.as_mut()
    }

    pub(super) fn is_connected(&self) -> bool {
        self.link.as_ref().is_some_and(LongLink::is_connected)
    }

    /// Tasks awaiting a response on the link.
    pub(super) fn in_flight(&self) -> usize {
        self.link.as_ref().map_or(0, LongLink::in_flight)
    }

    /// Connected, with room for another task under `max` in flight.
    pub(super) fn has_room(&self, max: usize) -> bool {
        self.link
            .as_ref()
            .is_some_and(|l| l.is_connected() && l.in_flight() < max)
    }

    /// Whether the app disabled the link.
    pub(super) fn is_disabled(&self) -> bool {
        self.disabled
    }

    /// The app disabled the link: the machine goes (its connect, if one
    /// waited, with it); what its smart heartbeat learned stays.
    pub(super) fn disable(&mut self) {
        self.parked_heartbeat = self.link.take().map(LongLink::into_smart_heartbeat);
        self.disabled = true;
        self.awaiting_resolve = false;
    }

    /// The app enabled the link again, with a fresh machine that keeps what
    /// the last one's smart heartbeat learned.
    pub(super) fn enable(&mut self, link: LongLink) {
        self.link = Some(match self.parked_heartbeat.take() {
            Some(smart) => link.with_smart_heartbeat(smart),
            None => link,
        });
        self.disabled = false;
    }

    /// The smart heartbeat of the link, or the parked one while disabled
    /// (`None` without a long link).
    pub(super) fn smart_heartbeat(&self) -> Option<&SmartHeartbeat> {
        match &self.link {
            Some(link) => Some(link.smart_heartbeat()),
            None => self.parked_heartbeat.as_ref(),
        }
    }

    pub(super) fn smart_heartbeat_mut(&mut self) -> Option<&mut SmartHeartbeat> {
        match &mut self.link {
            Some(link) => Some(link.smart_heartbeat_mut()),
            None => self.parked_heartbeat.as_mut(),
        }
    }

    /// The endpoint of the last connect.
    pub(super) fn endpoint(&self) -> Option<SocketAddr> {
        self.endpoint
    }

    /// The link connected to `addr`.
    pub(super) fn connected_to(&mut self, addr: SocketAddr) {
        self.endpoint = Some(addr);
    }

    /// Whether a connect waits for resolve answers.
    pub(super) fn awaits_resolve(&self) -> bool {
        self.awaiting_resolve
    }

    pub(super) fn set_awaiting_resolve(&mut self, waiting: bool) {
        self.awaiting_resolve = waiting;
    }

    /// The refusal the last connect met, while no connect has started since
    /// it (see [`set_refusal`](Self::set_refusal)).
    pub(super) fn refusal(&self) -> Option<&Error> {
        self.refusal.as_ref()
    }

    /// Records how the last connect ended: `Some` for a race that met only
    /// deterministic failures, `None` when a connect starts or the link
    /// goes down for any other cause.
    pub(super) fn set_refusal(&mut self, refusal: Option<Error>) {
        self.refusal = refusal;
    }
}
