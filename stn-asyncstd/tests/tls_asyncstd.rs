//! The TLS suite (`stn_testkit::tls_suite`, one copy for both adapters)
//! on stn-asyncstd: under async-std's executor and under smol's, against
//! the reference server on its own tokio runtime thread.
//!
//! ```text
//! cargo test -p stn-asyncstd --test tls_asyncstd            # both executors
//! cargo test -p stn-asyncstd --test tls_asyncstd smol::     # smol only
//! ```

mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;

    stn_testkit::tls_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;

    stn_testkit::tls_suite!(SmolHarness);
}
