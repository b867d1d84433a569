//! Connects through a proxy: a proxy that fails itself says nothing about
//! the endpoint behind it; one that cannot reach the endpoint does.

use super::*;
use crate::proxy::ProxyFailure;

/// One short-link task over two fixed IPs; the first connect fails with
/// `failure`, the second is served. Returns the first connect's address.
fn first_fails_with(failure: ProxyFailure) -> (H, SocketAddr) {
    let mut c =
        Config::for_profile(Profile::Stn).short_link_ips([ip("10.0.2.1"), ip("10.0.2.2")], 80);
    c.hedge = None;
    let mut h = H::new(c);
    let id = h.submit(short_task("x").retry_count(0));
    let (first, addr) = connects(&h.log)[0];
    h.ev(
        first,
        ConnEvent::ConnectFailed(ConnectError::Proxy(failure)),
    );
    let (second, other) = *connects(&h.log).last().expect("the next candidate");
    assert_ne!(other, addr, "the race moved on");
    serve_short(&mut h, second, "ok");
    assert_eq!(h.outcome(id).expect("served").body, &b"ok"[..]);
    (h, addr)
}

#[test]
fn a_failing_proxy_is_not_held_against_the_endpoint() {
    for failure in [
        ProxyFailure::Refused,
        ProxyFailure::Timeout,
        ProxyFailure::AuthRejected(1),
        ProxyFailure::HttpStatus(407),
        ProxyFailure::Socks5Reply(2),
    ] {
        let (h, addr) = first_fails_with(failure);
        assert!(
            h.e.endpoint_history().endpoint(addr).is_none(),
            "{failure:?} recorded against {addr}"
        );
    }
}

#[test]
fn a_proxy_that_cannot_reach_the_endpoint_counts_against_it() {
    for failure in [ProxyFailure::Socks5Reply(5), ProxyFailure::HttpStatus(502)] {
        let (h, addr) = first_fails_with(failure);
        let stats = h.e.endpoint_history().endpoint(addr).expect("recorded");
        assert_eq!(stats.records & 1, 1, "{failure:?} is a failure of {addr}");
    }
}
