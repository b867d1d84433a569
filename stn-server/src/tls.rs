//! TLS on the reference server (tokio-rustls): the stream both links serve
//! on, the accept-side handshake, certificate loading and (for `stn serve
//! --tls-self-signed` and tests) a CA and server certificate made at start.
//!
//! Both links terminate TLS the same way: the handshake runs in the
//! connection's own task, bounded by the request timeout, before the link's
//! protocol starts; a client that fails it is closed and counted
//! ([`Stats::tls_failures`](super::Stats)). Plaintext (no
//! [`ServerConfig::tls`](super::ServerConfig::tls)) serves the TCP stream as
//! it always did.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
#[cfg(feature = "self-signed")]
use std::time::SystemTime;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::early_tls::EarlyTls;
pub use super::early_tls::{enable_early_data, MAX_EARLY_DATA};
pub use rustls::ServerConfig as TlsServerConfig;

/// A rustls server configuration in [`ServerConfig::tls`](super::ServerConfig::tls)
/// (shared; two are equal when they are the same configuration).
#[derive(Clone, Debug)]
pub struct ServerTls(pub Arc<TlsServerConfig>);

impl ServerTls {
    /// Wraps `config`.
    pub fn new(config: TlsServerConfig) -> Self {
        ServerTls(Arc::new(config))
    }
}

impl PartialEq for ServerTls {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ServerTls {}

/// One accepted connection: plain TCP, or TLS over it (tokio-rustls, or
/// the hand-driven stream that reads early data when the configuration
/// allows it).
pub(super) enum ServerStream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    Early(Box<EarlyTls>),
}

impl ServerStream {
    /// The TCP socket underneath.
    pub(super) fn tcp(&self) -> &TcpStream {
        match self {
            ServerStream::Plain(s) => s,
            ServerStream::Tls(s) => s.get_ref().0,
            ServerStream::Early(s) => s.tcp(),
        }
    }

    /// The client's early data (0-RTT) was accepted.
    pub(super) fn early_accepted(&self) -> bool {
        matches!(self, ServerStream::Early(s) if s.early_accepted())
    }

    /// True for a TLS stream: reads may be served from rustls' buffer
    /// without the socket being readable.
    pub(super) fn is_tls(&self) -> bool {
        !matches!(self, ServerStream::Plain(_))
    }
}

impl AsyncRead for ServerStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            ServerStream::Early(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ServerStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            ServerStream::Early(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_flush(cx),
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            ServerStream::Early(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            ServerStream::Early(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Runs the server side of the handshake on `stream` within `timeout`, or
/// hands the plain stream back when the server has no TLS. `None`: the
/// handshake failed or timed out (logged; the socket is closed).
pub(super) async fn accept(
    stream: TcpStream,
    tls: Option<&ServerTls>,
    timeout: Duration,
    conn: u64,
) -> Option<ServerStream> {
    let Some(config) = tls else {
        return Some(ServerStream::Plain(stream));
    };
    let accepted = if config.0.max_early_data_size > 0 {
        let accept = EarlyTls::accept(stream, config.0.clone());
        tokio::time::timeout(timeout, accept)
            .await
            .map(|done| done.map(|tls| ServerStream::Early(Box::new(tls))))
    } else {
        let accept = tokio_rustls::TlsAcceptor::from(config.0.clone()).accept(stream);
        tokio::time::timeout(timeout, accept)
            .await
            .map(|done| done.map(|tls| ServerStream::Tls(Box::new(tls))))
    };
    match accepted {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(err)) => {
            tracing::debug!(conn, %err, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!(conn, "TLS handshake timed out");
            None
        }
    }
}

/// Why a TLS server configuration could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsSetupError {
    /// The certificate file held no certificate, or one did not decode.
    #[error("bad certificate PEM: {0}")]
    Certificate(String),
    /// The key file held no private key, or it did not decode.
    #[error("bad private key PEM: {0}")]
    Key(String),
    /// rustls refused the certificate and key (they do not match, or the
    /// key type is unsupported).
    #[error("TLS configuration refused: {0}")]
    Rustls(String),
    /// Generating a self-signed certificate failed.
    #[error("cannot generate a certificate: {0}")]
    Generate(String),
}

/// A server configuration from a PEM certificate chain (leaf first) and a
/// PEM private key (PKCS#8, PKCS#1 or SEC1), with ALPN `http/1.1` (clients
/// that offer no ALPN are served too) and ring as the crypto provider.
///
/// # Errors
///
/// [`TlsSetupError`] naming the part that is wrong.
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<TlsServerConfig, TlsSetupError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsSetupError::Certificate(e.to_string()))?;
    if chain.is_empty() {
        return Err(TlsSetupError::Certificate("no certificate found".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsSetupError::Key(e.to_string()))?;
    let mut config = TlsServerConfig::builder_with_provider(stn_driver::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Rustls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsSetupError::Rustls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A CA and a server certificate it signed, made at start (rcgen).
#[cfg(feature = "self-signed")]
#[derive(Clone, Debug)]
pub struct SelfSigned {
    /// The CA certificate (PEM): the root a client trusts (`--ca`).
    pub ca_pem: String,
    /// The server's certificate chain (PEM): its leaf, then the CA.
    pub chain_pem: String,
    /// The server's private key (PEM, PKCS#8).
    pub key_pem: String,
}

#[cfg(feature = "self-signed")]
impl SelfSigned {
    /// A fresh CA ("stn test CA" and a unique suffix) and a leaf for `names` (DNS names or IP
    /// addresses), valid from a day ago for a year.
    ///
    /// # Errors
    ///
    /// [`TlsSetupError::Generate`] if a name is invalid or signing fails.
    pub fn generate(names: &[String]) -> Result<SelfSigned, TlsSetupError> {
        let day = Duration::from_secs(86_400);
        let now = SystemTime::now();
        Self::generate_valid(names, now - day, now + day * 365)
    }

    /// Like [`generate`](Self::generate), with the leaf valid only between
    /// `not_before` and `not_after` (an expired certificate for tests).
    ///
    /// # Errors
    ///
    /// [`TlsSetupError::Generate`] if a name is invalid or signing fails.
    pub fn generate_valid(
        names: &[String],
        not_before: SystemTime,
        not_after: SystemTime,
    ) -> Result<SelfSigned, TlsSetupError> {
        let gen = |e: rcgen::Error| TlsSetupError::Generate(e.to_string());
        let ca_key = rcgen::KeyPair::generate().map_err(gen)?;
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(gen)?;
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        // Each CA its own name, as distinct CAs have: a client trusting
        // another one finds no issuer for this chain at all.
        let serial = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, format!("stn test CA {serial:x}"));
        ca.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca.self_signed(&ca_key).map_err(gen)?;
        let leaf_key = rcgen::KeyPair::generate().map_err(gen)?;
        let mut leaf = rcgen::CertificateParams::new(names.to_vec()).map_err(gen)?;
        leaf.distinguished_name
            .push(rcgen::DnType::CommonName, "stn reference server");
        leaf.not_before = not_before.into();
        leaf.not_after = not_after.into();
        let leaf_cert = leaf.signed_by(&leaf_key, &ca_cert, &ca_key).map_err(gen)?;
        Ok(SelfSigned {
            ca_pem: ca_cert.pem(),
            chain_pem: format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
            key_pem: leaf_key.serialize_pem(),
        })
    }

    /// The server configuration for this certificate.
    ///
    /// # Errors
    ///
    /// [`TlsSetupError`] if rustls refuses it.
    pub fn server_config(&self) -> Result<TlsServerConfig, TlsSetupError> {
        server_config(self.chain_pem.as_bytes(), self.key_pem.as_bytes())
    }
}
