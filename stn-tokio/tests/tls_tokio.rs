//! The TLS suite ([`tls_suite`]) on tokio: both links over real TLS on
//! loopback, and each TLS failure (wrong CA, wrong name, expired
//! certificate, plaintext server, stalled handshake, wrong pin, alert
//! mid-exchange) ending its task with a typed error.
//!
//! ```text
//! cargo test -p stn-tokio --test tls_tokio
//! ```

#[macro_use]
mod client_suite;
#[macro_use]
mod tls_suite;
mod tokio_harness;

use tokio_harness::TokioHarness;

tls_suite!(TokioHarness);
