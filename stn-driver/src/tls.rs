//! TLS on both links, shared by the adapters: the client configuration
//! helpers (roots, pinning, ALPN, resumption), the server name each
//! connection verifies, the handshake as a bounded phase of the connect, and
//! the mapping of rustls errors to the engine's [`TlsFailure`].
//!
//! The adapters only run the handshake ([`Runtime::start_tls`](crate::Runtime::start_tls):
//! tokio-rustls in stn-tokio, futures-rustls in stn-asyncstd); everything
//! else is here. The crypto provider is ring, for every configuration these
//! helpers make (see `docs/tls.md` for why).
//!
//! Without the `tls` feature (on by default) this module keeps only what
//! the driver's connections share with it ([`TlsIo`], [`TlsState`],
//! [`TlsStats`]): no rustls, no configuration helpers, and no client can be
//! given a TLS configuration, so [`TlsStart`] has no value.
//!
//! The engine sees a TLS connection as connected once its handshake is
//! done: a handshake that fails is a failed connect attempt
//! ([`ConnectError::tls`](stn_proto::ConnectError::tls)), raced like a
//! refused connect, and one that stalls is abandoned at the handshake
//! timeout (or the race's own attempt deadline, whichever comes first).

#[cfg(feature = "tls")]
use std::fmt;
use std::future::Future;
use std::io;
#[cfg(feature = "tls")]
use std::net::IpAddr;
use std::pin::Pin;
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

#[cfg(feature = "tls")]
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
#[cfg(feature = "tls")]
use rustls::client::WebPkiServerVerifier;
#[cfg(feature = "tls")]
use rustls::crypto::CryptoProvider;
#[cfg(feature = "tls")]
use rustls::pki_types::pem::PemObject;
#[cfg(feature = "tls")]
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
#[cfg(feature = "tls")]
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use stn_proto::TlsFailure;

use crate::runtime::{AsyncStream, AsyncTimer, BoxFuture};

#[cfg(feature = "tls")]
pub use rustls;

/// Default [`Builder::tls_handshake_timeout`](crate::Builder::tls_handshake_timeout):
/// 5 s from the TCP connect to the end of the handshake. The race's own
/// attempt deadline usually ends a stalled handshake sooner.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the adapter needs to run one client handshake.
#[cfg(feature = "tls")]
#[derive(Clone)]
pub struct TlsStart {
    /// The client configuration (shared by every connection of a client, so
    /// its session cache lets a reconnect resume).
    pub config: Arc<ClientConfig>,
    /// The name sent in SNI and verified against the certificate.
    pub server_name: ServerName<'static>,
}

#[cfg(feature = "tls")]
impl fmt::Debug for TlsStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsStart")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// What the adapter needs to run one client handshake: without the `tls`
/// feature no client has a TLS configuration, so there is none.
#[cfg(not(feature = "tls"))]
#[derive(Clone, Debug)]
pub enum TlsStart {}

/// A TLS client stream as the driver sees it: plaintext reads and writes
/// ([`AsyncStream`]) and how its handshake stands.
///
/// [`Runtime::start_tls`](crate::Runtime::start_tls) returns one either
/// with its handshake done or, when the session it resumes allows TLS 1.3
/// early data (0-RTT) and the configuration enables it
/// (`ClientConfig::enable_early_data`), still handshaking with
/// [`TlsState::early_room`] set. Then the driver may write up to that many
/// bytes at once (they go as early data) and drives the rest of the handshake
/// with [`poll_flush`](AsyncStream::poll_flush): it returns ready once the
/// handshake is done, with the early data resent if the server refused it
/// (tokio-rustls and futures-rustls do both).
pub trait TlsIo: AsyncStream {
    /// How the handshake stands now.
    fn tls_state(&mut self) -> TlsState;
}

/// How a client connection's TLS handshake stands ([`TlsIo::tls_state`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlsState {
    /// The handshake is still running.
    pub handshaking: bool,
    /// The server resumed an earlier session (TLS 1.3 PSK or a TLS 1.2
    /// session ticket/id), skipping the certificate flight. Known once the
    /// server's hello arrived.
    pub resumed: bool,
    /// While handshaking: how many more bytes may be written as early data.
    /// `None` once the handshake is done or when the session allows none.
    pub early_room: Option<usize>,
    /// The server accepted the early data (known once the handshake is done).
    pub early_accepted: bool,
}

impl TlsState {
    /// How `conn`'s handshake stands (what a rustls-based [`TlsIo`] returns).
    #[cfg(feature = "tls")]
    pub fn of(conn: &mut rustls::ClientConnection) -> Self {
        let handshaking = conn.is_handshaking();
        TlsState {
            handshaking,
            resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            early_room: conn
                .early_data()
                .filter(|_| handshaking)
                .map(|early| early.bytes_left()),
            early_accepted: conn.is_early_data_accepted(),
        }
    }
}

/// What the client's TLS handshakes did, in [`Snapshot::tls`](crate::Snapshot::tls).
/// Handshake times run from the TCP connect to the handshake's end: they are
/// not part of any TCP connect time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlsStats {
    /// Handshakes that completed.
    pub handshakes: u64,
    /// Of those, how many resumed a session.
    pub resumed: u64,
    /// Handshakes that failed or timed out (abandoned ones not counted).
    pub failed: u64,
    /// The sum of the completed handshakes' durations.
    pub handshake_time: Duration,
    /// The last completed handshake's duration.
    pub last_handshake: Option<Duration>,
    /// Completed handshakes that sent early data (TLS 1.3 0-RTT: a request
    /// of a task that allows it, on a resumed session that allows it).
    pub early_data: u64,
    /// Of those, how many the server accepted (a refused one was resent
    /// after the handshake).
    pub early_accepted: u64,
}

#[cfg(feature = "tls")]
/// Why a TLS configuration could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// The PEM text held no certificate.
    #[error("no certificate found in the PEM data")]
    NoCertificates,
    /// A PEM certificate could not be decoded or added as a root.
    #[error("bad root certificate: {0}")]
    BadCertificate(String),
    /// rustls refused the configuration.
    #[error("TLS configuration refused: {0}")]
    Rustls(String),
    /// The platform's trust store gave no usable certificate.
    #[error("no usable root certificate in the platform's trust store{}", platform_errors(.0))]
    NoPlatformRoots(Vec<String>),
}

#[cfg(feature = "tls")]
fn platform_errors(errors: &[String]) -> String {
    if errors.is_empty() {
        String::new()
    } else {
        format!(": {}", errors.join("; "))
    }
}

#[cfg(feature = "tls")]
/// The crypto provider every configuration here uses: ring.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(feature = "tls")]
/// The Mozilla root program's CAs (the `webpki-roots` crate): the same
/// trust on every platform, with no system files read.
pub fn webpki_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

#[cfg(feature = "tls")]
/// The platform's trusted CAs (`rustls-native-certs`: the CA bundle named by
/// `SSL_CERT_FILE`/`SSL_CERT_DIR` or the distribution's on Linux, the
/// keychain on macOS, the system store on Windows), read now. Certificates
/// the store holds but rustls cannot use are skipped.
///
/// # Errors
///
/// [`TlsConfigError::NoPlatformRoots`] if none is usable, with what the
/// store reported.
pub fn platform_roots() -> Result<RootCertStore, TlsConfigError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (_added, _skipped) = roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        return Err(TlsConfigError::NoPlatformRoots(
            found.errors.iter().map(ToString::to_string).collect(),
        ));
    }
    Ok(roots)
}

#[cfg(feature = "tls")]
/// The certificates in `pem` (one or more `BEGIN CERTIFICATE` blocks) as
/// roots: a private CA, or a test server's self-signed CA.
///
/// # Errors
///
/// [`TlsConfigError`] if a block does not decode or none is present.
pub fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, TlsConfigError> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| TlsConfigError::BadCertificate(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| TlsConfigError::BadCertificate(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(TlsConfigError::NoCertificates);
    }
    Ok(roots)
}

#[cfg(feature = "tls")]
/// A client configuration trusting `roots`, TLS 1.3 and 1.2 with ring,
/// rustls' in-memory session cache (256 sessions; a reconnect to a server
/// seen before resumes), `alpn` offered in order (empty: no ALPN) and early
/// data enabled: a resumed session whose server allows it may carry the
/// request of a task that allows it ([`Task::early_data()`](stn_proto::Task::early_data))
/// as TLS 1.3 0-RTT data; no other request is ever sent early.
///
/// # Errors
///
/// [`TlsConfigError::Rustls`] if rustls refuses the protocol versions.
pub fn client_config(roots: RootCertStore, alpn: &[&[u8]]) -> Result<ClientConfig, TlsConfigError> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsConfigError::Rustls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // Offers 0-RTT where a resumed session allows it; the engine writes
    // early only the requests of tasks that allow it (`Task::early_data`).
    config.enable_early_data = true;
    Ok(config)
}

#[cfg(feature = "tls")]
/// Like [`client_config`], and the server must also present a certificate
/// (its leaf or a CA in the chain it sends) whose SubjectPublicKeyInfo
/// hashes (SHA-256) to one of `pins` (mobile apps' certificate pinning, as
/// OkHttp's `CertificatePinner` does). The chain is still verified against
/// `roots` first. A mismatch ends the handshake with
/// [`TlsFailure::PinMismatch`].
///
/// # Errors
///
/// [`TlsConfigError`] if `pins` is empty or rustls refuses the configuration.
pub fn pinned_config(
    roots: RootCertStore,
    pins: Vec<[u8; 32]>,
    alpn: &[&[u8]],
) -> Result<ClientConfig, TlsConfigError> {
    if pins.is_empty() {
        return Err(TlsConfigError::Rustls("no SPKI pins given".into()));
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|e| TlsConfigError::Rustls(e.to_string()))?;
    let mut config = client_config(RootCertStore::empty(), alpn)?;
    config
        .dangerous()
        .set_certificate_verifier(Arc::new(PinnedVerifier { inner, pins }));
    Ok(config)
}

#[cfg(feature = "tls")]
/// SHA-256 of a certificate's DER SubjectPublicKeyInfo: the value to pin
/// (`openssl x509 -pubkey | openssl pkey -pubin -outform der | sha256sum`).
///
/// # Errors
///
/// [`TlsConfigError::BadCertificate`] if `cert` does not parse.
pub fn spki_sha256(cert: &CertificateDer<'_>) -> Result<[u8; 32], TlsConfigError> {
    let parsed = webpki::EndEntityCert::try_from(cert)
        .map_err(|e| TlsConfigError::BadCertificate(e.to_string()))?;
    let spki = parsed.subject_public_key_info();
    let digest = ring::digest::digest(&ring::digest::SHA256, spki.as_ref());
    let mut out = [0; 32];
    out.copy_from_slice(digest.as_ref());
    Ok(out)
}

#[cfg(feature = "tls")]
/// WebPKI verification, then the SPKI pin check.
#[derive(Debug)]
struct PinnedVerifier {
    inner: Arc<WebPkiServerVerifier>,
    pins: Vec<[u8; 32]>,
}

#[cfg(feature = "tls")]
impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )?;
        let pinned = std::iter::once(end_entity)
            .chain(intermediates)
            .filter_map(|c| spki_sha256(c).ok())
            .any(|hash| self.pins.contains(&hash));
        if pinned {
            Ok(verified)
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(feature = "tls")]
/// The TLS side of a client: its configuration and how each connection's
/// server name is chosen.
#[derive(Clone)]
pub(crate) struct ClientTls {
    pub(crate) config: Arc<ClientConfig>,
    /// Overrides every connection's name (`Builder::tls_server_name`).
    pub(crate) server_name: Option<ServerName<'static>>,
    pub(crate) handshake_timeout: Duration,
}

#[cfg(feature = "tls")]
impl ClientTls {
    /// The name to verify for a connection to `ip`: the configured one, else
    /// the host name `ip` was resolved from, else the IP itself (verified
    /// against the certificate's IP addresses).
    pub(crate) fn name_for(
        &self,
        ip: IpAddr,
        host: Option<&str>,
    ) -> Result<ServerName<'static>, TlsFailure> {
        if let Some(name) = &self.server_name {
            return Ok(name.clone());
        }
        match host {
            Some(host) => {
                ServerName::try_from(host.to_owned()).map_err(|_| TlsFailure::InvalidServerName)
            }
            None => Ok(ServerName::IpAddress(ip.into())),
        }
    }
}

/// The TLS side of a client: without the `tls` feature a client has none.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
pub(crate) enum ClientTls {}

#[cfg(feature = "tls")]
/// What the builder collected about TLS.
#[derive(Default)]
pub(crate) struct TlsOptions {
    pub(crate) config: Option<Arc<ClientConfig>>,
    pub(crate) server_name: Option<String>,
    pub(crate) handshake_timeout: Option<Duration>,
}

#[cfg(feature = "tls")]
impl TlsOptions {
    /// The client's TLS, or none if no configuration was given (a server
    /// name or timeout alone turns nothing on).
    pub(crate) fn finish(self) -> Result<Option<ClientTls>, crate::BuildError> {
        let Some(config) = self.config else {
            return Ok(None);
        };
        let server_name = match self.server_name {
            Some(name) => Some(
                parse_server_name(&name).map_err(|_| crate::BuildError::InvalidServerName(name))?,
            ),
            None => None,
        };
        Ok(Some(ClientTls {
            config,
            server_name,
            handshake_timeout: self.handshake_timeout.unwrap_or(DEFAULT_HANDSHAKE_TIMEOUT),
        }))
    }
}

#[cfg(feature = "tls")]
/// Parses a server name for `Builder::tls_server_name`.
pub(crate) fn parse_server_name(name: &str) -> Result<ServerName<'static>, TlsFailure> {
    ServerName::try_from(name.to_owned()).map_err(|_| TlsFailure::InvalidServerName)
}

/// The TLS failure behind an I/O error from a TLS stream, if it is one
/// (rustls errors travel inside `io::Error`s of kind `InvalidData`).
pub fn failure_of(e: &io::Error) -> Option<TlsFailure> {
    #[cfg(feature = "tls")]
    {
        let inner = e.get_ref()?.downcast_ref::<rustls::Error>()?;
        Some(map_rustls(inner, false))
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = e;
        None
    }
}

/// The TLS failure a failed handshake stands for.
pub fn handshake_failure(e: &io::Error) -> TlsFailure {
    #[cfg(feature = "tls")]
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return map_rustls(inner, true);
    }
    match e.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => TlsFailure::ClosedInHandshake,
        io::ErrorKind::TimedOut => TlsFailure::HandshakeTimeout,
        _ => TlsFailure::Protocol,
    }
}

#[cfg(feature = "tls")]
/// rustls' error in the engine's vocabulary. `in_handshake`: a record that
/// is not TLS at all, before the handshake is done, means a plaintext peer.
fn map_rustls(e: &rustls::Error, in_handshake: bool) -> TlsFailure {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer => TlsFailure::UnknownIssuer,
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                TlsFailure::NameMismatch
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => TlsFailure::Expired,
            CertificateError::ApplicationVerificationFailure => TlsFailure::PinMismatch,
            _ => TlsFailure::BadCertificate,
        },
        E::NoCertificatesPresented | E::UnsupportedNameType => TlsFailure::BadCertificate,
        E::AlertReceived(alert) => TlsFailure::Alert(u8::from(*alert)),
        E::InvalidMessage(_) if in_handshake => TlsFailure::NotTls,
        E::PeerIncompatible(_) | E::NoApplicationProtocol => TlsFailure::Negotiation,
        _ => TlsFailure::Protocol,
    }
}

/// A handshake bounded by a timer: fails with `TimedOut` at the deadline.
pub(crate) struct Handshake {
    future: BoxFuture<io::Result<Box<dyn TlsIo>>>,
    /// The handshake timeout (it keeps running through early data).
    pub(crate) timer: Pin<Box<dyn AsyncTimer>>,
    /// When the TCP connect completed (the handshake's start).
    pub(crate) started: Instant,
}

impl Handshake {
    pub(crate) fn new(
        future: BoxFuture<io::Result<Box<dyn TlsIo>>>,
        timer: Pin<Box<dyn AsyncTimer>>,
        started: Instant,
    ) -> Self {
        Handshake {
            future,
            timer,
            started,
        }
    }
}

impl Future for Handshake {
    type Output = io::Result<Box<dyn TlsIo>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(done) = self.future.as_mut().poll(cx) {
            return Poll::Ready(done);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "TLS handshake timed out",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    #[test]
    fn platform_roots_read_the_systems_ca_bundle() {
        // Where a distribution CA bundle exists (this project's machines and
        // CI: Debian's ca-certificates), its CAs load; elsewhere the error
        // says the store gave none.
        let bundle = std::path::Path::new("/etc/ssl/certs/ca-certificates.crt");
        match platform_roots() {
            Ok(roots) => assert!(!roots.is_empty()),
            Err(e) => {
                assert!(!bundle.exists(), "the bundle exists but: {e}");
                assert!(e.to_string().contains("platform's trust store"), "{e}");
            }
        }
        if bundle.exists() {
            let roots = platform_roots().expect("the bundle's CAs");
            assert!(roots.len() > 10, "{} roots", roots.len());
            client_config(roots, &[b"http/1.1"]).expect("a config");
        }
    }

    fn io_err(e: rustls::Error) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    #[test]
    fn certificate_errors_name_their_cause() {
        let cases = [
            (CertificateError::UnknownIssuer, TlsFailure::UnknownIssuer),
            (CertificateError::NotValidForName, TlsFailure::NameMismatch),
            (CertificateError::Expired, TlsFailure::Expired),
            (CertificateError::NotValidYet, TlsFailure::Expired),
            (
                CertificateError::ApplicationVerificationFailure,
                TlsFailure::PinMismatch,
            ),
            (CertificateError::BadSignature, TlsFailure::BadCertificate),
        ];
        for (cert, want) in cases {
            let e = io_err(rustls::Error::InvalidCertificate(cert));
            assert_eq!(handshake_failure(&e), want);
            assert_eq!(failure_of(&e), Some(want));
        }
    }

    #[test]
    fn plaintext_eof_alerts_and_timeouts_map() {
        let junk = io_err(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert_eq!(handshake_failure(&junk), TlsFailure::NotTls);
        assert_eq!(failure_of(&junk), Some(TlsFailure::Protocol));
        let alert = io_err(rustls::Error::AlertReceived(
            rustls::AlertDescription::HandshakeFailure,
        ));
        assert_eq!(handshake_failure(&alert), TlsFailure::Alert(40));
        let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert_eq!(handshake_failure(&eof), TlsFailure::ClosedInHandshake);
        assert_eq!(failure_of(&eof), None);
        let slow = io::Error::from(io::ErrorKind::TimedOut);
        assert_eq!(handshake_failure(&slow), TlsFailure::HandshakeTimeout);
    }

    #[test]
    fn pem_roots_load_and_garbage_is_refused() {
        assert_eq!(
            roots_from_pem(b"no pem here").err(),
            Some(TlsConfigError::NoCertificates)
        );
        let bad = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(matches!(
            roots_from_pem(bad),
            Err(TlsConfigError::BadCertificate(_))
        ));
        assert!(!webpki_roots().is_empty());
    }

    #[test]
    fn server_names_come_from_the_override_the_host_or_the_ip() {
        let config = Arc::new(
            client_config(webpki_roots(), &[b"http/1.1"]).unwrap_or_else(|e| panic!("{e}")),
        );
        let ip: IpAddr = [127, 0, 0, 1].into();
        let mut tls = ClientTls {
            config,
            server_name: None,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        };
        assert_eq!(tls.name_for(ip, None), Ok(ServerName::IpAddress(ip.into())));
        assert_eq!(
            tls.name_for(ip, Some("example.com")),
            Ok(ServerName::try_from("example.com").unwrap_or_else(|e| panic!("{e}")))
        );
        assert_eq!(
            tls.name_for(ip, Some("bad name!")),
            Err(TlsFailure::InvalidServerName)
        );
        tls.server_name = Some(parse_server_name("stn.test").unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(
            tls.name_for(ip, Some("example.com")),
            Ok(ServerName::try_from("stn.test").unwrap_or_else(|e| panic!("{e}")))
        );
    }
}
