//! The client through proxies, written once for every runtime adapter
//! (`proxy_suite!(TokioHarness);`): real proxy servers from Debian packages
//! started by the tests ([`servers`]: tinyproxy for HTTP CONNECT with Basic
//! auth, microsocks for SOCKS5 with and without username/password, dante
//! for SOCKS5), and hostile proxies written here (refusing, stalling after
//! the greeting, answering garbage, CONNECT answers that are not 200, an
//! endless answer head) with bounded time and, under the counting
//! allocator of [`hostile_suite`](crate::hostile_suite), bounded memory.
//!
//! A test whose proxy binary is missing prints why and passes without
//! running (CI installs them: `.ci/proxy-setup.sh`). The tests run one at a
//! time ([`hostile_suite::serial`](crate::hostile_suite::serial)) so that
//! the allocator's peak is one test's. Every test is bounded by
//! `client_suite::TEST_BOUND`; nothing asserts a duration.

pub mod servers;

use std::error::Error as _;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use bytes::BytesMut;
use stn_driver::proto::proxy::ProxyFailure;
use stn_driver::proto::{Channel, ConnectError, Error as ProtoError, Task};
use stn_driver::{Builder, Client, Error, Proxy};
use stn_server::tls::{SelfSigned, ServerTls};
use stn_server::ServerConfig;

use crate::client_suite::{fast_timeouts, Harness, ServerHost};
use crate::hostile_suite::{Hostile, Memory, Peer};
use servers::{RealProxy, PASSWORD, USER};

fn short_task(body: &str) -> Task {
    Task::new(8, "/mars/hello2", body.to_owned()).channel(Channel::Short)
}

fn long_task(body: &str) -> Task {
    Task::new(8, "", body.to_owned()).channel(Channel::Long)
}

/// A client of `server` (both links) at `endpoint` through `proxy`.
fn client_via<H: Harness>(
    endpoint: &str,
    server: &ServerHost,
    proxy: Proxy,
    edit: impl FnOnce(Builder<H::Rt>) -> Builder<H::Rt>,
) -> Client<H::Rt> {
    let b = Client::<H::Rt>::builder()
        .endpoint(endpoint)
        .short_link_port(server.short().port())
        .long_link_port(server.long().port())
        .seed(7)
        .configure(fast_timeouts)
        .proxy(proxy);
    edit(b).build().expect("client")
}

/// Sends a short-link and a long-link task and checks both answers.
async fn both_links_work<R: stn_driver::Runtime>(client: &Client<R>, what: &str) {
    let short = client.send(short_task("via-short")).await;
    assert!(short.is_ok(), "{what}: short link: {short:?}");
    let long = client.send(long_task("via-long")).await;
    assert!(long.is_ok(), "{what}: long link: {long:?}");
}

/// The error a one-shot short-link task ends with (it must fail).
async fn fails<R: stn_driver::Runtime>(client: &Client<R>) -> Error {
    let reply = client.send(short_task("x").retry_count(0)).await;
    reply.expect_err("the task fails")
}

/// The proxy failure a task ended with, with the checks every such error
/// passes: the message names the proxy, and the `ProxyError` is the
/// `io::Error`'s payload and the error's source.
fn proxy_failure(err: &Error, proxy: &str) -> ProxyFailure {
    let text = err.to_string();
    assert!(text.contains(proxy), "the message names the proxy: {text}");
    let p = err
        .proxy_error()
        .unwrap_or_else(|| panic!("a ProxyError: {err:?}"));
    assert_eq!(p.proxy, proxy);
    let source = err.source().expect("a source");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("an io::Error");
    assert!(io
        .get_ref()
        .is_some_and(|e| e.is::<stn_driver::ProxyError>()));
    match err.task_error() {
        Some(ProtoError::Connect {
            error: ConnectError::Proxy(f),
            ..
        }) => {
            assert_eq!(*f, p.failure);
            *f
        }
        other => panic!("a proxy connect error, not {other:?}: {err}"),
    }
}

// ------------------------------------------------------------ real servers

/// tinyproxy with Basic auth: both links through it with the right
/// password (its log shows the CONNECTs), a 407 naming the proxy with a
/// wrong one, and a host-name endpoint resolved by the proxy with TLS to
/// that name through the tunnel.
pub async fn tinyproxy_http_connect<H: Harness>() {
    let Some(proxy) = RealProxy::tinyproxy() else {
        return;
    };
    let url = format!("http://{}", proxy.addr);
    let server = ServerHost::healthy();
    let good = Proxy::http(proxy.addr.to_string())
        .credentials(USER, PASSWORD)
        .proxy_only();
    let client = client_via::<H>("127.0.0.1", &server, good, |b| b);
    both_links_work(&client, "tinyproxy").await;
    let log = proxy.log();
    for port in [server.short().port(), server.long().port()] {
        assert!(
            log.contains(&format!("CONNECT 127.0.0.1:{port} HTTP/1.1")),
            "tinyproxy saw the tunnel to {port}: {log}"
        );
    }
    client.shutdown().await;

    let wrong = Proxy::http(proxy.addr.to_string())
        .credentials(USER, "wrong")
        .proxy_only();
    let client = client_via::<H>("127.0.0.1", &server, wrong, |b| b);
    let err = fails(&client).await;
    // tinyproxy 1.11 answers a CONNECT with bad credentials 401 (407 is
    // the RFC's status for it; both are the proxy's refusal).
    let failure = proxy_failure(&err, &url);
    let ProxyFailure::HttpStatus(status @ (401 | 407)) = failure else {
        panic!("an authentication refusal, not {failure:?}: {err}");
    };
    let answer = err
        .proxy_error()
        .and_then(|p| p.answer.clone())
        .unwrap_or_default();
    assert!(
        answer.starts_with("HTTP/1.") && answer.contains(&status.to_string()),
        "the proxy's own status line: {answer:?}"
    );
    assert_eq!(
        err.io_error().map(std::io::Error::kind),
        Some(std::io::ErrorKind::PermissionDenied)
    );
    client.shutdown().await;

    // TLS through the tunnel to "localhost", which the proxy resolves.
    let cert = SelfSigned::generate(&["localhost".to_owned()]).expect("certificate");
    let tls_server = ServerHost::start(ServerConfig {
        tls: Some(ServerTls::new(cert.server_config().expect("server config"))),
        ..ServerConfig::default()
    });
    let roots = stn_driver::tls::roots_from_pem(cert.ca_pem.as_bytes()).expect("roots");
    let config = stn_driver::tls::client_config(roots, &[b"http/1.1"]).expect("client config");
    let good = Proxy::http(proxy.addr.to_string())
        .credentials(USER, PASSWORD)
        .proxy_only();
    let client = client_via::<H>("localhost", &tls_server, good, |b| b.tls(config));
    both_links_work(&client, "tinyproxy, TLS to localhost").await;
    let snap = client.snapshot().await.expect("snapshot");
    assert!(snap.tls.handshakes >= 2, "TLS ran: {:?}", snap.tls);
    let log = proxy.log();
    assert!(
        log.contains(&format!("CONNECT localhost:{}", tls_server.short().port())),
        "the proxy was asked for the name: {log}"
    );
    client.shutdown().await;
}

/// microsocks with username/password, and without: both links through
/// each, names resolved by the proxy; a wrong password and no credentials
/// against the proxy that wants them fail with what the proxy said.
pub async fn microsocks_socks5<H: Harness>() {
    let Some(auth) = RealProxy::microsocks(true) else {
        return;
    };
    let Some(open) = RealProxy::microsocks(false) else {
        return;
    };
    let server = ServerHost::healthy();
    let with_auth = Proxy::socks5(auth.addr.to_string())
        .credentials(USER, PASSWORD)
        .proxy_only();
    let client = client_via::<H>("localhost", &server, with_auth, |b| b);
    both_links_work(&client, "microsocks with auth").await;
    client.shutdown().await;
    let no_auth = Proxy::socks5(open.addr.to_string()).proxy_only();
    let client = client_via::<H>("127.0.0.1", &server, no_auth, |b| b);
    both_links_work(&client, "microsocks without auth").await;
    client.shutdown().await;

    let url = format!("socks5://{} (remote DNS)", auth.addr);
    let wrong = Proxy::socks5(auth.addr.to_string())
        .credentials(USER, "wrong")
        .proxy_only();
    let client = client_via::<H>("127.0.0.1", &server, wrong, |b| b);
    let err = fails(&client).await;
    assert!(
        matches!(proxy_failure(&err, &url), ProxyFailure::AuthRejected(s) if s != 0),
        "{err}"
    );
    client.shutdown().await;
    let none = Proxy::socks5(auth.addr.to_string()).proxy_only();
    let client = client_via::<H>("127.0.0.1", &server, none, |b| b);
    let err = fails(&client).await;
    assert_eq!(
        proxy_failure(&err, &url),
        ProxyFailure::NoAcceptableMethod,
        "{err}"
    );
    client.shutdown().await;
}

/// dante without authentication: both links through it; a target port
/// nothing listens on comes back as SOCKS5 reply 5, "connection refused",
/// a failure of that endpoint.
pub async fn dante_socks5<H: Harness>() {
    let Some(dante) = RealProxy::dante() else {
        return;
    };
    let server = ServerHost::healthy();
    let proxy = || Proxy::socks5(dante.addr.to_string()).proxy_only();
    let client = client_via::<H>("127.0.0.1", &server, proxy(), |b| b);
    both_links_work(&client, "dante").await;
    client.shutdown().await;

    let closed = refusing_port();
    let client = Client::<H::Rt>::builder()
        .endpoint(closed.to_string())
        .configure(fast_timeouts)
        .proxy(proxy())
        .build()
        .expect("client");
    let err = fails(&client).await;
    let failure = proxy_failure(&err, &format!("socks5://{} (remote DNS)", dante.addr));
    assert_eq!(failure, ProxyFailure::Socks5Reply(5), "{err}");
    assert!(failure.is_target_failure());
    assert!(
        err.to_string().contains("reply 5: connection refused"),
        "the RFC's meaning: {err}"
    );
    client.shutdown().await;

    // Racing behind the proxy: the refusing endpoint and the live one.
    let client = Client::<H::Rt>::builder()
        .endpoint(closed.to_string())
        .endpoint(server.short().to_string())
        .configure(fast_timeouts)
        .proxy(proxy())
        .build()
        .expect("client");
    for i in 0..4 {
        let reply = client.send(short_task("raced").retry_count(0)).await;
        assert!(
            reply.is_ok(),
            "call {i}: the race reaches the live endpoint: {reply:?}"
        );
    }
    client.shutdown().await;
}

// --------------------------------------------------------- hostile proxies

/// A loopback port nothing listens on.
fn refusing_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// Reads what the client sent (up to 1 s or `n` bytes).
fn read_at_least(peer: &mut Peer, n: usize) -> BytesMut {
    let mut buf = BytesMut::new();
    let until = std::time::Instant::now() + Duration::from_secs(1);
    while buf.len() < n && std::time::Instant::now() < until && peer.read_some(&mut buf) {}
    buf
}

fn stall(peer: &mut Peer) {
    read_at_least(peer, 3);
    while peer.live() && peer.read_some(&mut BytesMut::new()) {}
}

/// Reads the greeting or request (at least `n` bytes), sends `reply`.
fn answer(peer: &mut Peer, n: usize, reply: &[u8]) {
    read_at_least(peer, n);
    peer.send(reply);
}

fn http_garbage(peer: &mut Peer) {
    answer(peer, 16, b"\x00\x01\x02 this is not HTTP\r\n\r\n");
}

fn socks_garbage(peer: &mut Peer) {
    answer(peer, 3, b"HTTP/1.1 400 Bad Request\r\n\r\n");
}

fn forbidden(peer: &mut Peer) {
    answer(
        peer,
        16,
        b"HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden",
    );
}

fn bad_gateway(peer: &mut Peer) {
    answer(
        peer,
        16,
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n",
    );
}

fn endless_head(peer: &mut Peer) {
    read_at_least(peer, 16);
    if !peer.send(b"HTTP/1.1 200 Connection established\r\n") {
        return;
    }
    let lines =
        b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(1000);
    for _ in 0..1000 {
        if !peer.send(&lines) {
            return;
        }
    }
}

/// A client of `endpoint` (short link) through `proxy`.
fn short_client<H: Harness>(endpoint: SocketAddr, proxy: Proxy) -> Client<H::Rt> {
    Client::<H::Rt>::builder()
        .endpoint(endpoint.to_string())
        .configure(fast_timeouts)
        .proxy(proxy)
        .build()
        .expect("client")
}

/// A proxy nothing listens on: with `proxy_only` the task fails naming the
/// proxy and the refusal; by default, after two refusals the client goes
/// direct and the task succeeds, as Mars's short link falls back.
pub async fn refused_proxy<H: Harness>() {
    let server = ServerHost::healthy();
    let dead = refusing_port();
    let client = short_client::<H>(server.short(), Proxy::http(dead.to_string()).proxy_only());
    let err = fails(&client).await;
    assert_eq!(
        proxy_failure(&err, &format!("http://{dead}")),
        ProxyFailure::Refused
    );
    let p = err.proxy_error().expect("proxy error");
    assert_eq!(p.target, server.short().to_string(), "the tunnel asked for");
    assert!(p.source().is_some(), "the OS's refusal is its source");
    client.shutdown().await;

    let client = short_client::<H>(server.short(), Proxy::socks5(dead.to_string()));
    let reply = client.send(short_task("fallback").retry_count(3)).await;
    assert!(reply.is_ok(), "bypassed the dead proxy: {reply:?}");
    assert!(server.stats().short_requests_served >= 1);
    client.shutdown().await;
}

/// Proxies that accept and then stall, answer garbage, refuse with 403,
/// fail upstream with 502: each ends the task within the handshake timeout
/// or at once, with its own typed failure.
pub async fn hostile_answers<H: Harness>() {
    let target = refusing_port();
    type Case = (fn(&mut Peer), bool, ProxyFailure);
    let cases: [Case; 6] = [
        (stall, false, ProxyFailure::Timeout),
        (stall, true, ProxyFailure::Timeout),
        (http_garbage, false, ProxyFailure::BadHttp),
        (socks_garbage, true, ProxyFailure::BadGreeting),
        (forbidden, false, ProxyFailure::HttpStatus(403)),
        (bad_gateway, false, ProxyFailure::HttpStatus(502)),
    ];
    for (behave, socks5, want) in cases {
        let hostile = Hostile::start(behave);
        let addr = format!("127.0.0.1:{}", hostile.port());
        let (proxy, url) = if socks5 {
            (
                Proxy::socks5(&addr),
                format!("socks5://{addr} (remote DNS)"),
            )
        } else {
            (Proxy::http(&addr), format!("http://{addr}"))
        };
        let proxy = proxy
            .proxy_only()
            .handshake_timeout(Duration::from_millis(300));
        let client = short_client::<H>(target, proxy);
        let err = fails(&client).await;
        assert_eq!(proxy_failure(&err, &url), want, "{err}");
        assert!(hostile.accepted() >= 1);
        client.shutdown().await;
    }
}

/// A CONNECT answer whose head never ends: the handshake stops at its
/// 8 KiB cap (the proxy sends megabytes), and the client's heap grows by
/// far less than what was sent.
pub async fn endless_answer_head<H: Harness>() {
    let memory = Memory::start();
    let hostile = Hostile::start(endless_head);
    let client = short_client::<H>(
        refusing_port(),
        Proxy::http(format!("127.0.0.1:{}", hostile.port())).proxy_only(),
    );
    let err = fails(&client).await;
    let url = format!("http://127.0.0.1:{}", hostile.port());
    assert_eq!(proxy_failure(&err, &url), ProxyFailure::HeadTooLarge);
    client.shutdown().await;
    let growth = memory.peak_growth();
    assert!(growth < 4 * 1024 * 1024, "heap grew {growth} bytes");
}

/// Declares one `#[test]` per proxy test for the harness `$h` (install
/// [`Counting`](crate::hostile_suite::Counting) as the binary's allocator).
#[macro_export]
macro_rules! proxy_suite {
    ($h:ty) => {
        $crate::proxy_suite!(@tests $h;
            tinyproxy_http_connect, microsocks_socks5, dante_socks5,
            refused_proxy, hostile_answers, endless_answer_head);
    };
    (@tests $h:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                let _one = $crate::hostile_suite::serial();
                $crate::client_suite::run::<$h>($crate::proxy_suite::$name::<$h>());
            }
        )*
    };
}
