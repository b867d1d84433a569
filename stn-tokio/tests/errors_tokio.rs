//! The errors suite (`stn_testkit::errors_suite`) on tokio: errors that name their
//! cause, keep the `io::Error`, and the retry and limit defaults.
//!
//! ```text
//! cargo test -p stn-tokio --test errors_tokio
//! ```

mod tokio_harness;

use tokio_harness::TokioHarness;

stn_testkit::errors_suite!(TokioHarness);
