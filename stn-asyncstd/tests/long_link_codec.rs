//! The pluggable long-link codec suite (`stn_testkit::codec_suite`, one
//! copy for both adapters) on stn-asyncstd, under async-std's executor and
//! under smol's. The reference server runs on a tokio runtime thread of its
//! own (`client_suite::ServerHost`).
//!
//! ```text
//! cargo test -p stn-asyncstd --test long_link_codec
//! ```

mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;

    stn_testkit::codec_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;

    stn_testkit::codec_suite!(SmolHarness);
}
