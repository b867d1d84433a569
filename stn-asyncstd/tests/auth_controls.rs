//! Auth per host and user and the long link's run-time switch through the
//! public API (the shared `stn_testkit::auth_controls_suite`), under
//! async-std's executor and under smol's.
//!
//! ```text
//! cargo test -p stn-asyncstd --test auth_controls
//! ```

mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;

    stn_testkit::auth_controls_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;

    stn_testkit::auth_controls_suite!(SmolHarness);
}
