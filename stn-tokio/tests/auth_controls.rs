//! Auth per host and user and the long link's run-time switch through the
//! public API, on tokio (`auth_controls_suite`, shared with stn-asyncstd).
//!
//! ```text
//! cargo test -p stn-tokio --test auth_controls
//! ```

#[macro_use]
mod client_suite;
#[macro_use]
mod auth_controls_suite;
mod tokio_harness;

use tokio_harness::TokioHarness;

auth_controls_suite!(TokioHarness);
