//! TLS settings of a client ([`TlsConfig`]) and the SPKI pins apps write
//! the way OkHttp's `CertificatePinner` does (`sha256/BASE64`).

#[cfg(feature = "tls")]
use base64::engine::general_purpose::STANDARD;
#[cfg(feature = "tls")]
use base64::Engine as _;
#[cfg(feature = "tls")]
use stn_tokio::proto::Duration;
#[cfg(feature = "tls")]
use stn_tokio::tls;
#[cfg(feature = "tls")]
use stn_tokio::tls::rustls::pki_types::pem::PemObject;
#[cfg(feature = "tls")]
use stn_tokio::tls::rustls::pki_types::CertificateDer;
use stn_tokio::ClientBuilder;

use crate::error::{ErrorKind, StnError};

/// Which certificate authorities a client trusts.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum TlsRoots {
    /// The Mozilla root program's CAs, built in (the same on every device).
    Webpki,
    /// The platform's trust store (Linux CA bundles, the macOS keychain, the
    /// Windows store), read at build time.
    Platform,
    /// The CAs in this PEM text (one or more `BEGIN CERTIFICATE` blocks): a
    /// private CA, or a test server's.
    PemCa {
        /// The PEM text.
        pem: String,
    },
}

/// TLS on both links.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct TlsConfig {
    /// The CAs trusted.
    pub roots: TlsRoots,
    /// SPKI SHA-256 pins (`sha256/BASE64`, as OkHttp writes them, or 64 hex
    /// digits): the server must also present a certificate (its leaf or a
    /// CA in its chain) whose public key has one of them. Empty: no pinning.
    #[uniffi(default)]
    pub spki_pins: Vec<String>,
    /// The name every connection sends (SNI) and verifies, whatever endpoint
    /// it goes to (`None`: the host name the endpoint came from, or its IP).
    #[uniffi(default)]
    pub server_name: Option<String>,
    /// ALPN protocols offered, in order (empty: none).
    #[uniffi(default)]
    pub alpn: Vec<String>,
    /// The longest a handshake may take after its TCP connect, in ms
    /// (`None`: 5 s).
    #[uniffi(default)]
    pub handshake_timeout_ms: Option<u64>,
}

/// The error of every TLS call in a library built without the `tls`
/// feature: the records stay, so one set of bindings fits both builds.
#[cfg(not(feature = "tls"))]
pub(crate) fn not_built() -> StnError {
    StnError::new(
        ErrorKind::Config,
        "tls: this stn-ffi library was built without TLS (the `tls` feature)",
    )
}

#[cfg(not(feature = "tls"))]
impl TlsConfig {
    /// Refused: there is no TLS in this build.
    pub(crate) fn apply(self, _b: ClientBuilder) -> Result<ClientBuilder, StnError> {
        Err(not_built())
    }
}

#[cfg(feature = "tls")]
impl TlsConfig {
    /// `b` with TLS set up as this says.
    pub(crate) fn apply(self, mut b: ClientBuilder) -> Result<ClientBuilder, StnError> {
        let roots = match &self.roots {
            TlsRoots::Webpki => tls::webpki_roots(),
            TlsRoots::Platform => tls::platform_roots()?,
            TlsRoots::PemCa { pem } => tls::roots_from_pem(pem.as_bytes())?,
        };
        let alpn: Vec<&[u8]> = self.alpn.iter().map(|p| p.as_bytes()).collect();
        let config = if self.spki_pins.is_empty() {
            tls::client_config(roots, &alpn)?
        } else {
            let pins = self
                .spki_pins
                .iter()
                .map(|p| parse_pin(p))
                .collect::<Result<Vec<_>, _>>()?;
            tls::pinned_config(roots, pins, &alpn)?
        };
        b = b.tls(config);
        if let Some(name) = self.server_name {
            b = b.tls_server_name(name);
        }
        if let Some(ms) = self.handshake_timeout_ms {
            b = b.tls_handshake_timeout(Duration::from_millis(ms));
        }
        Ok(b)
    }
}

/// A pin written as `sha256/BASE64` or as 64 hex digits.
#[cfg(feature = "tls")]
fn parse_pin(pin: &str) -> Result<[u8; 32], StnError> {
    let bad = || {
        StnError::new(
            ErrorKind::Config,
            format!("tls.spki_pins: {pin:?} is neither sha256/BASE64 (a 32-byte SHA-256 in base64) nor 64 hex digits"),
        )
    };
    let bytes = match pin.strip_prefix("sha256/") {
        Some(b64) => STANDARD.decode(b64).map_err(|_| bad())?,
        None if pin.len() == 64 => (0..32)
            .map(|i| u8::from_str_radix(pin.get(2 * i..2 * i + 2).unwrap_or("x"), 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| bad())?,
        None => return Err(bad()),
    };
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| bad())
}

/// The SPKI pins (`sha256/BASE64`) of every certificate in `pem`, in order:
/// what to give [`TlsConfig::spki_pins`] to pin a server's key or its CA's.
#[uniffi::export]
pub fn spki_pins_of_pem(pem: String) -> Result<Vec<String>, StnError> {
    #[cfg(not(feature = "tls"))]
    {
        let _ = pem;
        Err(not_built())
    }
    #[cfg(feature = "tls")]
    spki_pins_of(&pem)
}

#[cfg(feature = "tls")]
fn spki_pins_of(pem: &str) -> Result<Vec<String>, StnError> {
    let mut pins = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        let cert =
            cert.map_err(|e| StnError::new(ErrorKind::Config, format!("bad certificate: {e}")))?;
        pins.push(format!(
            "sha256/{}",
            STANDARD.encode(tls::spki_sha256(&cert)?)
        ));
    }
    if pins.is_empty() {
        return Err(StnError::from(tls::TlsConfigError::NoCertificates));
    }
    Ok(pins)
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_in_both_forms_and_others_are_refused() {
        let raw = [0xab; 32];
        let b64 = format!("sha256/{}", STANDARD.encode(raw));
        assert_eq!(parse_pin(&b64), Ok(raw));
        assert_eq!(parse_pin(&"ab".repeat(32)), Ok(raw));
        for bad in [
            "",
            "sha256/",
            "sha256/AAAA",
            &"ab".repeat(31),
            &"zz".repeat(32),
            "sha1/abc",
        ] {
            let err = parse_pin(bad).expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::Config, "{bad:?}");
            assert!(err.to_string().contains("tls.spki_pins"), "{err}");
        }
    }
}
