//! The TLS suite (`stn_testkit::tls_suite`) on tokio: both links over real TLS on
//! loopback, and each TLS failure (wrong CA, wrong name, expired
//! certificate, plaintext server, stalled handshake, wrong pin, alert
//! mid-exchange) ending its task with a typed error.
//!
//! ```text
//! cargo test -p stn-tokio --test tls_tokio
//! ```

mod tokio_harness;

use tokio_harness::TokioHarness;

stn_testkit::tls_suite!(TokioHarness);
