//! Auth per host and user and the long link's run-time switch through the
//! public API, on tokio (`stn_testkit::auth_controls_suite`, shared with stn-asyncstd).
//!
//! ```text
//! cargo test -p stn-tokio --test auth_controls
//! ```

mod tokio_harness;

use tokio_harness::TokioHarness;

stn_testkit::auth_controls_suite!(TokioHarness);
