//! The errors suite ([`errors_suite`]) on tokio: errors that name their
//! cause, keep the `io::Error`, and the retry and limit defaults.
//!
//! ```text
//! cargo test -p stn-tokio --test errors_tokio
//! ```

#[macro_use]
mod client_suite;
#[macro_use]
mod errors_suite;
mod tokio_harness;

use tokio_harness::TokioHarness;

errors_suite!(TokioHarness);
