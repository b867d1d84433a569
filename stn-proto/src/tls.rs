//! Why a TLS handshake or a TLS-protected exchange failed, in the engine's
//! vocabulary.
//!
//! The engine does not run TLS: the adapter does the handshake after the TCP
//! connect and reports the connection connected only once it completes. A
//! failed handshake is a failed connect attempt, reported as
//! [`ConnectError::Tls`](crate::ConnectError::Tls); a TLS failure on an open connection (a fatal alert,
//! a corrupt record) closes it with [`CloseReason::Tls`](crate::CloseReason::Tls). Every machine
//! treats them as the connect failures and socket errors it already handles,
//! and a task that ends on one carries
//! [`SocketError::Tls`](crate::SocketError::Tls) or the connect error itself.

/// What went wrong in TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The server's certificate chain does not lead to a trusted root (wrong
    /// CA, self-signed certificate not in the roots).
    UnknownIssuer,
    /// The certificate is not valid for the server name the client asked for.
    NameMismatch,
    /// The certificate has expired (or is not yet valid).
    Expired,
    /// The certificate's public key matches none of the pinned SPKI hashes.
    PinMismatch,
    /// The certificate was rejected for another reason (bad signature,
    /// revoked, unsupported, malformed, wrong usage).
    BadCertificate,
    /// The peer does not speak TLS (a plaintext server answered the
    /// ClientHello with bytes that are not a TLS record).
    NotTls,
    /// The peer closed the connection during the handshake (plaintext
    /// servers that give up on a ClientHello do this).
    ClosedInHandshake,
    /// The handshake did not complete within the handshake timeout.
    HandshakeTimeout,
    /// The peer sent a fatal TLS alert, with its alert code (RFC 8446 §6).
    Alert(u8),
    /// No common protocol version, cipher suite or ALPN protocol.
    Negotiation,
    /// The configured server name is not a valid DNS name or IP address.
    InvalidServerName,
    /// Another TLS protocol error (corrupt or unexpected record, decrypt
    /// failure).
    Protocol,
}

impl TlsFailure {
    /// The first of the codes of [`TlsFailure::code`] (negative: no OS
    /// error code is, so the two never collide in a log or a hash).
    pub const CODE_BASE: i32 = -0x7_0000;

    /// A stable number for this failure (for logs, metrics and hashes).
    pub const fn code(self) -> i32 {
        let offset = match self {
            TlsFailure::UnknownIssuer => 1,
            TlsFailure::NameMismatch => 2,
            TlsFailure::Expired => 3,
            TlsFailure::PinMismatch => 4,
            TlsFailure::BadCertificate => 5,
            TlsFailure::NotTls => 6,
            TlsFailure::ClosedInHandshake => 7,
            TlsFailure::HandshakeTimeout => 8,
            TlsFailure::Negotiation => 9,
            TlsFailure::InvalidServerName => 10,
            TlsFailure::Protocol => 11,
            TlsFailure::Alert(code) => 0x100 + code as i32,
        };
        Self::CODE_BASE - offset
    }

    /// True if the server (not the client's configuration or the network)
    /// is to blame: its certificate, its protocol. Every failure is still
    /// a failed attempt against that endpoint.
    pub const fn is_certificate(self) -> bool {
        matches!(
            self,
            TlsFailure::UnknownIssuer
                | TlsFailure::NameMismatch
                | TlsFailure::Expired
                | TlsFailure::PinMismatch
                | TlsFailure::BadCertificate
        )
    }

    /// True if reconnecting to the same server with the same configuration
    /// will meet the same failure: its certificate, a server that does not
    /// speak TLS, no common version, suite or ALPN protocol, a server name
    /// that is not one. A stalled handshake, a close or an alert mid-way
    /// may be the network's and may heal.
    pub const fn is_permanent(self) -> bool {
        self.is_certificate()
            || matches!(
                self,
                TlsFailure::NotTls | TlsFailure::Negotiation | TlsFailure::InvalidServerName
            )
    }
}

impl core::fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TlsFailure::UnknownIssuer => {
                f.write_str("the server's certificate is not signed by a trusted CA")
            }
            TlsFailure::NameMismatch => {
                f.write_str("the server's certificate is not valid for the server name")
            }
            TlsFailure::Expired => f.write_str("the server's certificate has expired"),
            TlsFailure::PinMismatch => {
                f.write_str("the server's public key matches no pinned SPKI hash")
            }
            TlsFailure::BadCertificate => f.write_str("the server's certificate is invalid"),
            TlsFailure::NotTls => f.write_str("the server does not speak TLS (plaintext reply)"),
            TlsFailure::ClosedInHandshake => {
                f.write_str("the server closed the connection during the TLS handshake")
            }
            TlsFailure::HandshakeTimeout => f.write_str("the TLS handshake timed out"),
            TlsFailure::Alert(code) => write!(f, "the server sent TLS alert {code}"),
            TlsFailure::Negotiation => {
                f.write_str("no common TLS version, cipher suite or ALPN protocol")
            }
            TlsFailure::InvalidServerName => f.write_str("the TLS server name is invalid"),
            TlsFailure::Protocol => f.write_str("TLS protocol error"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::CloseReason;
    use crate::net::ConnectError;

    #[test]
    fn every_failure_has_its_own_code_and_variant() {
        let mut all = vec![
            TlsFailure::UnknownIssuer,
            TlsFailure::NameMismatch,
            TlsFailure::Expired,
            TlsFailure::PinMismatch,
            TlsFailure::BadCertificate,
            TlsFailure::NotTls,
            TlsFailure::ClosedInHandshake,
            TlsFailure::HandshakeTimeout,
            TlsFailure::Negotiation,
            TlsFailure::InvalidServerName,
            TlsFailure::Protocol,
        ];
        all.extend((0..=255).map(TlsFailure::Alert));
        let codes: std::collections::BTreeSet<i32> = all.iter().map(|f| f.code()).collect();
        assert_eq!(codes.len(), all.len(), "two failures share a code");
        assert!(codes.iter().all(|&c| c < TlsFailure::CODE_BASE));
        for f in all {
            assert_eq!(ConnectError::tls(f), ConnectError::Tls(f));
            assert_eq!(ConnectError::tls(f).tls_failure(), Some(f));
            assert_eq!(CloseReason::tls(f).tls_failure(), Some(f));
        }
    }

    #[test]
    fn permanent_failures_are_those_a_reconnect_meets_again() {
        assert!(TlsFailure::UnknownIssuer.is_permanent());
        assert!(TlsFailure::PinMismatch.is_permanent());
        assert!(TlsFailure::NotTls.is_permanent());
        assert!(TlsFailure::Negotiation.is_permanent());
        assert!(!TlsFailure::HandshakeTimeout.is_permanent());
        assert!(!TlsFailure::ClosedInHandshake.is_permanent());
        assert!(!TlsFailure::Alert(40).is_permanent());
        assert!(!TlsFailure::Protocol.is_permanent());
    }

    #[test]
    fn os_errors_are_not_tls_failures() {
        for code in [-1, 0, 1, 104, 111, i32::MAX, TlsFailure::CODE_BASE] {
            assert_eq!(ConnectError::Other(code).tls_failure(), None, "{code}");
            assert_eq!(CloseReason::Error(code).tls_failure(), None, "{code}");
        }
        assert_eq!(ConnectError::Refused.tls_failure(), None);
        assert_eq!(CloseReason::Eof.tls_failure(), None);
    }

    #[test]
    fn errors_name_the_tls_cause() {
        let e = ConnectError::tls(TlsFailure::UnknownIssuer);
        assert_eq!(
            e.to_string(),
            "TLS handshake failed: the server's certificate is not signed by a trusted CA"
        );
        let c = CloseReason::tls(TlsFailure::Alert(80));
        assert_eq!(c.to_string(), "TLS failed: the server sent TLS alert 80");
        assert_eq!(
            ConnectError::Other(5).to_string(),
            "connect failed (os error 5)"
        );
    }
}
