//! The TLS test suite, written once for every runtime adapter (like
//! `client_suite`, whose [`Harness`] and [`ServerHost`] it uses):
//! `tls_suite!(TokioHarness);` in `tls_tokio.rs`, the same in
//! stn-asyncstd's `tls_asyncstd.rs` for async-std and smol.
//!
//! Real TLS on loopback: the reference server with a CA and certificate made
//! by rcgen for each test, and, for what it cannot do, small servers of the
//! test's own (one that never answers the ClientHello, one that sends a
//! fatal alert mid-exchange). Every test is bounded by
//! `client_suite::TEST_BOUND`; every server here serves a bounded number of
//! connections for a bounded time.
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use stn_driver::proto::TlsFailure;
use stn_driver::proto::{Channel, Task};
use stn_driver::proto::{Error as ProtoError, SocketError};
use stn_driver::tls::{self, rustls};
use stn_driver::{Builder, Client, Error};
use stn_server::tls::{SelfSigned, ServerTls};
use stn_server::{Fault, ServerConfig};

use crate::client_suite::{self, fast_timeouts, Harness, ServerHost};

/// The names the test certificates are valid for by default.
fn local_names() -> Vec<String> {
    vec!["localhost".into(), "127.0.0.1".into()]
}

fn self_signed(names: &[String]) -> SelfSigned {
    SelfSigned::generate(names).expect("certificate")
}

/// A TLS reference server (both links) with `cert`.
fn tls_server(cert: &SelfSigned, config: ServerConfig) -> ServerHost {
    ServerHost::start(ServerConfig {
        tls: Some(ServerTls::new(cert.server_config().expect("server config"))),
        ..config
    })
}

/// A client configuration trusting `ca_pem` (ALPN http/1.1).
fn trusting(ca_pem: &str) -> rustls::ClientConfig {
    let roots = tls::roots_from_pem(ca_pem.as_bytes()).expect("roots");
    tls::client_config(roots, &[b"http/1.1"]).expect("client config")
}

/// A TLS client on 127.0.0.1 for `short` and `long` ports.
fn tls_client<H: Harness>(
    config: rustls::ClientConfig,
    short: Option<u16>,
    long: Option<u16>,
    edit: impl FnOnce(Builder<H::Rt>) -> Builder<H::Rt>,
) -> Client<H::Rt> {
    let mut b = Client::<H::Rt>::builder()
        .endpoint("127.0.0.1")
        .seed(7)
        .tls(config)
        .configure(fast_timeouts);
    if let Some(p) = short {
        b = b.short_link_port(p);
    }
    if let Some(p) = long {
        b = b.long_link_port(p);
    }
    edit(b).build().expect("client")
}

fn short_task(body: &str) -> Task {
    Task::new(8, "/mars/hello2", body.to_owned()).channel(Channel::Short)
}

fn long_task(body: &str) -> Task {
    Task::new(8, "", body.to_owned()).channel(Channel::Long)
}

/// The TLS failure a short-link task ended with (a failed connect).
fn connect_failure(err: &Error) -> Option<TlsFailure> {
    match err {
        Error::Task {
            error: ProtoError::Connect { error, .. },
            ..
        } => error.tls_failure(),
        _ => None,
    }
}

/// Sends one short-link task that must fail; returns its error, after
/// checking nothing was banned (the endpoint is not the network's fault).
async fn failing_short<H: Harness>(client: &Client<H::Rt>) -> Error {
    let err = client
        .send(short_task("fails").retry_count(0))
        .await
        .expect_err("the handshake fails");
    let snap = client.snapshot().await.expect("driver running");
    assert!(
        snap.endpoints.iter().all(|e| !e.banned),
        "one TLS failure bans nothing: {snap:?}"
    );
    err
}

/// A TLS client with `config` sends one short-link task to `port`, which
/// must fail the handshake; returns the TLS failure, after checking the
/// error names it.
async fn handshake_fails<H: Harness>(
    config: rustls::ClientConfig,
    port: u16,
    edit: impl FnOnce(Builder<H::Rt>) -> Builder<H::Rt>,
) -> Option<TlsFailure> {
    let client = tls_client::<H>(config, Some(port), None, edit);
    let err = failing_short::<H>(&client).await;
    let failure = connect_failure(&err);
    if let Some(f) = failure {
        assert!(err.to_string().contains(&f.to_string()), "{err}");
    }
    // A certificate the client refused: the rustls error itself is kept,
    // inside the io::Error that is the error's source.
    if matches!(
        failure,
        Some(TlsFailure::UnknownIssuer | TlsFailure::NameMismatch | TlsFailure::Expired)
    ) {
        assert!(
            matches!(err.tls_error(), Some(rustls::Error::InvalidCertificate(_))),
            "{err}: {:?}",
            err.tls_error()
        );
        let source = std::error::Error::source(&err).expect("a source");
        assert!(
            source.downcast_ref::<std::io::Error>().is_some(),
            "{source}"
        );
    }
    client.shutdown().await;
    failure
}

// ---------------------------------------------------------------- the tests

/// Both links over TLS: responses arrive, each link's connection did one
/// handshake, the server saw no TLS failure.
pub async fn happy_path<H: Harness>() {
    let cert = self_signed(&local_names());
    let config = cert.server_config().expect("server config");
    happy_path_on::<H>(&cert, config).await;
}

/// The happy path against a server that accepts early data: it drives
/// rustls by hand (`server::early_tls`) instead of through tokio-rustls,
/// on both links.
pub async fn happy_path_early_data_server<H: Harness>() {
    let cert = self_signed(&local_names());
    let mut config = cert.server_config().expect("server config");
    stn_server::tls::enable_early_data(&mut config);
    happy_path_on::<H>(&cert, config).await;
}

async fn happy_path_on<H: Harness>(cert: &SelfSigned, config: rustls::ServerConfig) {
    let server = ServerHost::start(ServerConfig {
        tls: Some(ServerTls::new(config)),
        ..ServerConfig::default()
    });
    let client = tls_client::<H>(
        trusting(&cert.ca_pem),
        Some(server.short().port()),
        Some(server.long().port()),
        |b| b,
    );
    let short = client.send(short_task("over tls")).await.expect("short ok");
    assert_eq!(short.body, "over tls");
    for i in 0..20 {
        let body = format!("long {i}");
        let long = client.send(long_task(&body)).await.expect("long ok");
        assert_eq!(long.body, body.as_bytes());
    }
    // A large body crosses many TLS records both ways.
    let big = "x".repeat(200_000);
    assert_eq!(client.send(short_task(&big)).await.expect("big").body, big);
    assert_eq!(
        client.send(long_task(&big)).await.expect("big long").body,
        big
    );
    let snap = client.snapshot().await.expect("driver running");
    assert!(snap.tls.handshakes >= 2, "{:?}", snap.tls);
    assert_eq!(snap.tls.failed, 0);
    assert!(snap.tls.last_handshake.is_some());
    assert_eq!(server.stats().tls_failures, 0);
    client.shutdown().await;
}

/// A host-name endpoint is verified by that name (the certificate names
/// only `localhost`, not the IP it resolves to).
pub async fn host_name_is_the_server_name<H: Harness>() {
    let cert = self_signed(&["localhost".to_owned()]);
    let server = tls_server(&cert, ServerConfig::default());
    let client = Client::<H::Rt>::builder()
        .endpoint("localhost")
        .short_link_port(server.short().port())
        .tls(trusting(&cert.ca_pem))
        .configure(fast_timeouts)
        .build()
        .expect("client");
    let r = client
        .send(short_task("sni"))
        .await
        .expect("verified as localhost");
    assert_eq!(r.body, "sni");
    client.shutdown().await;
}

/// A reconnect resumes the TLS 1.3 session the first connection got (the
/// client's connections share rustls' session cache).
pub async fn reconnect_resumes<H: Harness>() {
    let cert = self_signed(&local_names());
    // The server closes idle keep-alive connections quickly, so each task
    // needs a new connection.
    let server = tls_server(
        &cert,
        ServerConfig {
            long_addr: None,
            idle_timeout: Duration::from_millis(50),
            ..ServerConfig::default()
        },
    );
    let client = tls_client::<H>(
        trusting(&cert.ca_pem),
        Some(server.short().port()),
        None,
        |b| b,
    );
    for i in 0..3 {
        let body = format!("again {i}");
        assert_eq!(
            client.send(short_task(&body)).await.expect("ok").body,
            body.as_bytes()
        );
        // Until the server has closed the kept connection.
        while server.stats().short_connections_open > 0 {
            H::sleep(Duration::from_millis(10)).await;
        }
    }
    let snap = client.snapshot().await.expect("driver running");
    assert!(snap.tls.handshakes >= 3, "{:?}", snap.tls);
    assert!(snap.tls.resumed >= 2, "reconnects resume: {:?}", snap.tls);
    client.shutdown().await;
}

/// A TLS reference server (short link only) whose sessions allow early
/// data and that closes idle keep-alive connections quickly, so each task
/// needs a new connection.
fn early_data_server(cert: &SelfSigned) -> ServerHost {
    let mut config = cert.server_config().expect("server config");
    stn_server::tls::enable_early_data(&mut config);
    ServerHost::start(ServerConfig {
        tls: Some(ServerTls::new(config)),
        long_addr: None,
        idle_timeout: Duration::from_millis(50),
        ..ServerConfig::default()
    })
}

/// Sends `task` on a fresh connection (after the server closed the last
/// one) and checks the echo; returns the task's last report.
async fn fresh_echo<H: Harness>(
    client: &Client<H::Rt>,
    server: &ServerHost,
    reports: &mut stn_driver::Events<stn_driver::proto::Report>,
    task: Task,
) -> stn_driver::proto::Report {
    while server.stats().short_connections_open > 0 {
        H::sleep(Duration::from_millis(10)).await;
    }
    let body = task.body.clone();
    let reply = client.send(task).await.expect("answered");
    assert_eq!(reply.body, body);
    let mut last = None;
    while let Some(report) = reports.try_next() {
        last = Some(report);
    }
    last.expect("a report")
}

/// Until `server` has counted `n` requests served (it counts once a
/// response is written, which the client may see first); then its stats.
async fn served<H: Harness>(server: &ServerHost, n: u64) -> stn_server::Stats {
    while server.stats().short_requests_served < n {
        H::sleep(Duration::from_millis(5)).await;
    }
    server.stats()
}

/// TLS 1.3 0-RTT: once a session is resumable, the request of a task that
/// allows early data goes in the handshake's first flight and the server
/// reads it before the handshake ends; a task that does not allow it waits
/// for the handshake as before.
pub async fn early_data_on_resumption<H: Harness>() {
    let cert = self_signed(&local_names());
    let server = early_data_server(&cert);
    let client = tls_client::<H>(
        trusting(&cert.ca_pem),
        Some(server.short().port()),
        None,
        |b| b,
    );
    let mut reports = client.reports();
    // Kept alive until the server closes it idle: the connection lives past
    // the client's Finished, after which the server sends the tickets the
    // next connection resumes (one closed on its 0-RTT reply gets none).
    let kept = |body: &str| short_task(body).header("Connection", "Keep-Alive");
    let early = |body: &str| kept(body).early_data(true);
    // The first connection has no session to resume: nothing goes early.
    let first = fresh_echo::<H>(&client, &server, &mut reports, early("first")).await;
    assert!(!first.early_data, "{first:?}");
    for i in 0..3 {
        let report =
            fresh_echo::<H>(&client, &server, &mut reports, early(&format!("early {i}"))).await;
        assert!(report.early_data, "resumed and allowed: {report:?}");
        assert!(report.handshake_time.is_some(), "{report:?}");
    }
    // Not allowed: sent after the handshake even on a resumed session.
    let late = fresh_echo::<H>(&client, &server, &mut reports, kept("not early")).await;
    assert!(!late.early_data, "{late:?}");
    let snap = client.snapshot().await.expect("driver running");
    assert_eq!(snap.tls.early_data, 3, "{:?}", snap.tls);
    assert_eq!(snap.tls.early_accepted, 3, "{:?}", snap.tls);
    assert!(snap.tls.resumed >= 4, "{:?}", snap.tls);
    let stats = served::<H>(&server, 5).await;
    assert_eq!(stats.short_requests_served, 5, "each request served once");
    // The server accepts early data on every resumption that offers it; the
    // last task's connection offered it but sent none.
    assert!(stats.tls_early_data >= 3, "{stats:?}");
    assert_eq!(stats.tls_failures, 0);
    client.shutdown().await;
}

/// Early data the server refuses (it cannot resume the session: another
/// server issued the ticket) is sent again after the handshake: the
/// request is answered once, nothing is lost.
pub async fn refused_early_data_is_resent<H: Harness>() {
    let cert = self_signed(&local_names());
    let issuer = early_data_server(&cert);
    let other = early_data_server(&cert);
    // Two clients sharing one configuration share its session cache, and
    // both servers are "127.0.0.1" to it.
    let config = trusting(&cert.ca_pem);
    let first = tls_client::<H>(config.clone(), Some(issuer.short().port()), None, |b| b);
    let reply = first.send(short_task("ticket")).await.expect("answered");
    assert_eq!(reply.body, "ticket");
    first.shutdown().await;
    let second = tls_client::<H>(config, Some(other.short().port()), None, |b| b);
    let mut reports = second.reports();
    let body = "x".repeat(3000);
    let task = short_task(&body).early_data(true).retry_count(0);
    let report = fresh_echo::<H>(&second, &other, &mut reports, task).await;
    assert!(report.early_data, "sent early: {report:?}");
    let snap = second.snapshot().await.expect("driver running");
    assert_eq!(snap.tls.early_data, 1, "{:?}", snap.tls);
    assert_eq!(snap.tls.early_accepted, 0, "refused: {:?}", snap.tls);
    assert_eq!(snap.tls.resumed, 0, "{:?}", snap.tls);
    let stats = served::<H>(&other, 1).await;
    assert_eq!(stats.tls_early_data, 0, "{stats:?}");
    assert_eq!(stats.short_requests_served, 1, "served once: {stats:?}");
    second.shutdown().await;
}

/// A handshake that stalls after the request went early (a server that
/// takes the ClientHello and its early data and never answers) is a failed
/// connect with its typed cause, like any stalled handshake; nothing banned.
pub async fn early_data_then_stalled_handshake<H: Harness>() {
    let cert = self_signed(&local_names());
    let issuer = early_data_server(&cert);
    let config = trusting(&cert.ca_pem);
    let first = tls_client::<H>(config.clone(), Some(issuer.short().port()), None, |b| b);
    first.send(short_task("ticket")).await.expect("answered");
    first.shutdown().await;
    // Never accepted: the kernel completes the TCP handshake from the
    // backlog and takes the first flight; nothing answers.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let second = tls_client::<H>(config, Some(port), None, |b| {
        b.tls_handshake_timeout(Duration::from_millis(300))
    });
    let mut reports = second.reports();
    let err = second
        .send(short_task("early").early_data(true).retry_count(0))
        .await
        .expect_err("the handshake stalls");
    assert_eq!(
        connect_failure(&err),
        Some(TlsFailure::HandshakeTimeout),
        "{err}"
    );
    let mut last = None;
    while let Some(report) = reports.try_next() {
        last = Some(report);
    }
    let report = last.expect("a report");
    assert!(report.early_data, "the request went early: {report:?}");
    let snap = second.snapshot().await.expect("driver running");
    assert_eq!(
        (snap.tls.failed, snap.tls.early_data),
        (1, 0),
        "{:?}",
        snap.tls
    );
    assert!(snap.endpoints.iter().all(|e| !e.banned), "{snap:?}");
    second.shutdown().await;
    drop(silent);
}

/// A client that trusts another CA: the attempt fails as an unknown issuer.
pub async fn wrong_ca<H: Harness>() {
    let cert = self_signed(&local_names());
    let other = self_signed(&local_names());
    let server = tls_server(&cert, ServerConfig::default());
    let port = server.short().port();
    let failure = handshake_fails::<H>(trusting(&other.ca_pem), port, |b| b).await;
    assert_eq!(failure, Some(TlsFailure::UnknownIssuer));
    // The server notices the client's alert a moment after the client fails.
    while server.stats().tls_failures == 0 {
        H::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.stats().tls_failures, 1);
}

/// A certificate for another name; the same server asked for by the name
/// it has works.
pub async fn wrong_name<H: Harness>() {
    let cert = self_signed(&["stn.test".to_owned()]);
    let server = tls_server(&cert, ServerConfig::default());
    let port = server.short().port();
    let failure = handshake_fails::<H>(trusting(&cert.ca_pem), port, |b| b).await;
    assert_eq!(failure, Some(TlsFailure::NameMismatch));
    let named = tls_client::<H>(trusting(&cert.ca_pem), Some(port), None, |b| {
        b.tls_server_name("stn.test")
    });
    assert_eq!(
        named.send(short_task("named")).await.expect("ok").body,
        "named"
    );
    named.shutdown().await;
}

/// An expired certificate.
pub async fn expired_certificate<H: Harness>() {
    let day = Duration::from_secs(86_400);
    let now = SystemTime::now();
    let cert =
        SelfSigned::generate_valid(&local_names(), now - day * 30, now - day).expect("certificate");
    let server = tls_server(&cert, ServerConfig::default());
    let port = server.short().port();
    let failure = handshake_fails::<H>(trusting(&cert.ca_pem), port, |b| b).await;
    assert_eq!(failure, Some(TlsFailure::Expired));
}

/// A plaintext server: the HTTP one answers the ClientHello with an HTTP
/// error (not TLS), the long-link one closes on it.
pub async fn plaintext_server<H: Harness>() {
    let cert = self_signed(&local_names());
    let plain = ServerHost::healthy();
    let short = handshake_fails::<H>(trusting(&cert.ca_pem), plain.short().port(), |b| b).await;
    assert_eq!(short, Some(TlsFailure::NotTls));
    let long = handshake_fails::<H>(trusting(&cert.ca_pem), plain.long().port(), |b| b).await;
    assert_eq!(long, Some(TlsFailure::ClosedInHandshake));
}

/// A server that accepts TCP and never answers the ClientHello: the
/// handshake timeout ends the attempt with its own error.
pub async fn handshake_stalls<H: Harness>() {
    let cert = self_signed(&local_names());
    // Never accepted: the kernel completes the TCP handshake from the
    // backlog, and nothing ever answers.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let failure = handshake_fails::<H>(trusting(&cert.ca_pem), port, |b| {
        b.tls_handshake_timeout(Duration::from_millis(300))
    })
    .await;
    assert_eq!(failure, Some(TlsFailure::HandshakeTimeout));
    drop(silent);
}

/// SPKI pinning: the right pin connects, another one fails the handshake.
pub async fn spki_pinning<H: Harness>() {
    use rustls::pki_types::pem::PemObject;
    let cert = self_signed(&local_names());
    let server = tls_server(&cert, ServerConfig::default());
    let roots = || tls::roots_from_pem(cert.ca_pem.as_bytes()).expect("roots");
    let leaf =
        rustls::pki_types::CertificateDer::from_pem_slice(cert.chain_pem.as_bytes()).expect("leaf");
    let pin = tls::spki_sha256(&leaf).expect("spki");
    let pinned = tls::pinned_config(roots(), vec![pin], &[b"http/1.1"]).expect("config");
    let ok = tls_client::<H>(pinned, Some(server.short().port()), None, |b| b);
    assert_eq!(
        ok.send(short_task("pinned")).await.expect("ok").body,
        "pinned"
    );
    ok.shutdown().await;
    let wrong = tls::pinned_config(roots(), vec![[7; 32]], &[b"http/1.1"]).expect("config");
    let failure = handshake_fails::<H>(wrong, server.short().port(), |b| b).await;
    assert_eq!(failure, Some(TlsFailure::PinMismatch));
}

/// A fatal TLS alert in the middle of the exchange (after the handshake,
/// once the request arrived): the task fails with a socket error naming the
/// alert.
pub async fn alert_mid_exchange<H: Harness>() {
    let alerting = AlertServer::start();
    let client = tls_client::<H>(
        trusting(&alerting.cert.ca_pem),
        Some(alerting.addr.port()),
        None,
        |b| b,
    );
    let err = client
        .send(short_task("alert me").retry_count(0))
        .await
        .expect_err("the alert ends the exchange");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Socket(SocketError::Tls(TlsFailure::Alert(80)))),
        "{err}"
    );
    assert!(err.to_string().contains("TLS alert 80"), "{err}");
    client.shutdown().await;
}

/// The reference server's faults over TLS fail tasks as they do in the
/// clear: no answer times out, a reset is a socket error, garbage a
/// protocol error, an oversize length is refused.
pub async fn faults_over_tls<H: Harness>() {
    use stn_driver::proto::{ErrorFamily, ProtocolError, TimeoutKind};
    let cert = self_signed(&local_names());
    for (fault, channel) in [
        (Fault::NeverRespond, Channel::Short),
        (Fault::ResetMidResponse, Channel::Short),
        (Fault::ResetMidResponse, Channel::Long),
        (Fault::Garbage, Channel::Short),
        (Fault::Garbage, Channel::Long),
        (Fault::OversizeLength, Channel::Short),
        (Fault::OversizeLength, Channel::Long),
    ] {
        let server = tls_server(
            &cert,
            ServerConfig {
                fault,
                ..ServerConfig::default()
            },
        );
        let client = tls_client::<H>(
            trusting(&cert.ca_pem),
            Some(server.short().port()),
            Some(server.long().port()),
            |b| b,
        );
        let task = match channel {
            Channel::Long => long_task("boom"),
            _ => short_task("boom"),
        };
        let err = client
            .send(task.retry_count(0))
            .await
            .expect_err("the fault breaks the task");
        let e = err.task_error().cloned();
        let expected = match (fault, channel) {
            (Fault::NeverRespond, _) => {
                matches!(e, Some(ProtoError::Timeout(TimeoutKind::FirstPacket)))
            }
            (Fault::ResetMidResponse, _) => {
                e.as_ref().map(ProtoError::family) == Some(ErrorFamily::Socket)
            }
            (Fault::Garbage, _) => matches!(e, Some(ProtoError::Protocol(_) | ProtoError::Decode)),
            (Fault::OversizeLength, Channel::Long) => {
                e == Some(ProtoError::Protocol(ProtocolError::FrameTooLarge))
            }
            _ => e == Some(ProtoError::Protocol(ProtocolError::BodyTooLarge)),
        };
        assert!(expected, "{fault:?} on {channel:?}: {err:?}");
        assert_eq!(server.stats().tls_failures, 0, "{fault:?}");
        client.shutdown().await;
    }
}

// ------------------------------------------------- the alerting test server

/// A TLS 1.3 server (one connection, bounded in time) that completes the
/// handshake, waits for the request's first bytes, then sends a fatal
/// `internal_error` alert (80), encrypted with the connection's own traffic
/// key as a real server's alert is.
pub(crate) struct AlertServer {
    pub(crate) addr: SocketAddr,
    pub(crate) cert: SelfSigned,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AlertServer {
    pub(crate) fn start() -> Self {
        let cert = self_signed(&local_names());
        let config = alert_server_config(&cert);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        listener.set_nonblocking(true).expect("nonblocking");
        let thread = std::thread::spawn(move || {
            let deadline = Instant::now() + client_suite::TEST_BOUND;
            while Instant::now() < deadline {
                match listener.accept() {
                    Ok((tcp, _)) => {
                        // One connection is all a test makes.
                        // A failure here shows as the client's error
                        // (not the alert), which the test reports.
                        let _ = alert_one(tcp, config);
                        return;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        AlertServer {
            addr,
            cert,
            thread: Some(thread),
        }
    }
}

impl Drop for AlertServer {
    fn drop(&mut self) {
        // The thread ends after its one connection or its deadline; do not
        // wait for the deadline if the test failed before connecting.
        drop(self.thread.take());
    }
}

fn alert_server_config(cert: &SelfSigned) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut provider = rustls::crypto::ring::default_provider();
    // One known cipher suite, so the test can encrypt the alert itself.
    provider.cipher_suites = vec![rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256];
    let chain = CertificateDer::pem_slice_iter(cert.chain_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("chain");
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).expect("key");
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server config");
    config.enable_secret_extraction = true;
    config.send_tls13_tickets = 0;
    Arc::new(config)
}

fn alert_one(
    mut tcp: std::net::TcpStream,
    config: Arc<rustls::ServerConfig>,
) -> std::io::Result<()> {
    tcp.set_nonblocking(false)?;
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut conn = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)?;
    }
    while conn.wants_write() {
        conn.write_tls(&mut tcp)?;
    }
    // The request's first bytes (they may have come with the client's
    // Finished): the client is mid-exchange now.
    let mut first = [0u8; 64];
    for _ in 0..64 {
        match conn.reader().read(&mut first) {
            Ok(n) if n > 0 => break,
            Ok(_) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if conn.read_tls(&mut tcp)? == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                conn.process_new_packets().map_err(std::io::Error::other)?;
            }
            Err(e) => return Err(e),
        }
    }
    // Deprecated for kTLS (no tickets, no key updates): neither happens
    // here (tickets are off, the connection ends with this record).
    #[allow(deprecated)]
    let secrets = conn
        .dangerous_extract_secrets()
        .map_err(std::io::Error::other)?;
    let (seq, rustls::ConnectionTrafficSecrets::Aes128Gcm { key, iv }) = secrets.tx else {
        return Err(std::io::Error::other("unexpected cipher suite"));
    };
    let record = encrypted_alert(key.as_ref(), iv.as_ref(), seq, 80);
    tcp.write_all(&record)?;
    tcp.flush()?;
    // Let the client read it before the socket closes.
    std::thread::sleep(Duration::from_millis(200));
    Ok(())
}

/// A TLS 1.3 record carrying a fatal alert `description` (RFC 8446 §5.2):
/// inner plaintext = level, description, content type 21; nonce = IV xor
/// the sequence number; the record header is the additional data.
fn encrypted_alert(key: &[u8], iv: &[u8], seq: u64, description: u8) -> Vec<u8> {
    use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
    let mut body = vec![2, description, 21];
    let len = u16::try_from(body.len() + AES_128_GCM.tag_len()).expect("small");
    let header = [23, 3, 3, (len >> 8) as u8, len as u8];
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&iv[..12]);
    for (n, s) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
        *n ^= s;
    }
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, key).expect("key"));
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(header),
        &mut body,
    )
    .expect("seal");
    let mut record = header.to_vec();
    record.extend_from_slice(&body);
    record
}

/// Turns the suite into `#[test]`s for one harness.
#[macro_export]
macro_rules! tls_suite {
    ($h:ty) => {
        $crate::tls_suite!(@tests $h;
            happy_path, host_name_is_the_server_name, reconnect_resumes, wrong_ca, wrong_name,
            expired_certificate, plaintext_server, handshake_stalls, spki_pinning,
            alert_mid_exchange, faults_over_tls, early_data_on_resumption,
            happy_path_early_data_server, early_data_then_stalled_handshake,
            refused_early_data_is_resent);
    };
    (@tests $h:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                $crate::client_suite::run::<$h>($crate::tls_suite::$name::<$h>());
            }
        )*
    };
}
