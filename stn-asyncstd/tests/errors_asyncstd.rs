//! The errors suite (`stn_testkit::errors_suite`, one copy for both
//! adapters) on stn-asyncstd, under async-std's executor and under smol's.
//!
//! ```text
//! cargo test -p stn-asyncstd --test errors_asyncstd
//! ```

mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;

    stn_testkit::errors_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;

    stn_testkit::errors_suite!(SmolHarness);
}
