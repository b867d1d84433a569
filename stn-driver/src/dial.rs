//! Every TCP connect the driver makes goes through a [`Dialer`], which
//! reaches IPv4 addresses through NAT64 on an IPv6-only network.
//!
//! The local stack is probed as Mars's `local_ipstack_detect` does: a UDP
//! socket "connected" towards a global address of each family (no packet
//! is sent; the connect fails at once without a route). On an IPv6-only
//! network a connect to an IPv4 address (a fixed IP, a backup IP, an
//! A-only answer) first learns the network's NAT64 prefix from the AAAA
//! answer for `ipv4only.arpa` (RFC 7050, [`stn_proto::nat64::Nat64Map`]),
//! kept for ten minutes (a lookup that found none for 30 s) and forgotten
//! on a network change, and connects to the synthesised address (RFC
//! 6052). The engine never sees the synthesised
//! address: it races and bans the IPv4 endpoint the app named.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use stn_proto::nat64::{LocalStack, Lookup, Nat64Map, Target, IPV4ONLY_ARPA};

use crate::clock::Clock;
use crate::driver::TRACE_TARGET;
use crate::runtime::{AsyncStream, BoxFuture, Runtime};

/// The connects of one client (cheap to clone: shared state).
#[derive(Clone)]
pub(crate) struct Dialer {
    rt: Arc<dyn Runtime>,
    clock: Clock,
    nat64: Arc<Mutex<Nat64Map>>,
}

impl Dialer {
    /// A dialer on `rt`, with the local stack probed now.
    pub(crate) fn new(rt: Arc<dyn Runtime>, clock: Clock) -> Self {
        let stack = probe_stack();
        log_stack(stack);
        Dialer {
            rt,
            clock,
            nat64: Arc::new(Mutex::new(Nat64Map::new(stack))),
        }
    }

    /// A new network: probe the stack again and forget the prefix.
    pub(crate) fn network_changed(&self) {
        let stack = probe_stack();
        log_stack(stack);
        self.state().network_changed(stack);
    }

    fn state(&self) -> MutexGuard<'_, Nat64Map> {
        self.nat64.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn target(&self, addr: SocketAddr) -> Target {
        let now = self.clock.to_proto(self.rt.now());
        self.state().target(now, addr)
    }

    /// Connects to `addr` (through NAT64 if it is IPv4 on an IPv6-only
    /// network).
    pub(crate) fn connect(&self, addr: SocketAddr) -> BoxFuture<io::Result<Box<dyn AsyncStream>>> {
        let lookup = match self.target(addr) {
            Target::Connect(to) => return self.rt.connect(to),
            Target::Discover(lookup) => lookup,
        };
        let dialer = self.clone();
        Box::pin(async move {
            dialer.discover(lookup).await;
            match dialer.target(addr) {
                Target::Connect(to) => dialer.rt.connect(to).await,
                // The network changed during the lookup: this connect
                // belongs to the old one.
                Target::Discover(_) => Err(io::Error::new(
                    io::ErrorKind::NetworkUnreachable,
                    "the network changed while its NAT64 prefix was looked up",
                )),
            }
        })
    }

    /// Looks the prefix up (RFC 7050) and keeps the result.
    async fn discover(&self, lookup: Lookup) {
        let answer = match self.rt.resolve(IPV4ONLY_ARPA.to_owned()).await {
            Ok(answer) => Some(answer),
            Err(e) => {
                tracing::debug!(target: TRACE_TARGET, error = %e, "ipv4only.arpa did not resolve");
                None
            }
        };
        let now = self.clock.to_proto(self.rt.now());
        let mut map = self.state();
        if !map.is_current(lookup) {
            return;
        }
        match map.discovered(now, lookup, answer.as_deref()) {
            Some(p) => {
                tracing::info!(target: TRACE_TARGET, prefix = %p, "NAT64 prefix discovered");
            }
            None => {
                tracing::warn!(target: TRACE_TARGET, "IPv6-only network without a NAT64 prefix: IPv4 addresses are unreachable");
            }
        }
    }
}

fn log_stack(stack: LocalStack) {
    if stack.needs_nat64() {
        tracing::info!(target: TRACE_TARGET, "IPv6-only network: IPv4 addresses go through NAT64");
    } else {
        tracing::debug!(target: TRACE_TARGET, ?stack, "local IP stack");
    }
}

/// Which families have a route (see the module docs).
fn probe_stack() -> LocalStack {
    let v4 = route_exists(
        SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        SocketAddr::from(([8, 8, 8, 8], 80)),
    );
    let v6 = route_exists(
        SocketAddr::from(([0u16; 8], 0)),
        SocketAddr::from(([0x2000, 0, 0, 0, 0, 0, 0, 0], 80)),
    );
    LocalStack::from_routes(v4, v6)
}

/// Whether a UDP socket bound to `local` can be connected towards `remote`
/// (a route lookup; nothing is sent).
fn route_exists(local: SocketAddr, remote: SocketAddr) -> bool {
    UdpSocket::bind(local)
        .and_then(|s| s.connect(remote))
        .is_ok()
}
