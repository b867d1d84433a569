//! The pluggable long-link codec suite (`stn-tokio/tests/codec_suite`, one
//! copy for both adapters) on stn-asyncstd, under async-std's executor and
//! under smol's. The reference server runs on a tokio runtime thread of its
//! own (`client_suite::ServerHost`).
//!
//! ```text
//! cargo test -p stn-asyncstd --test long_link_codec
//! ```

#[macro_use]
#[path = "../../stn-tokio/tests/client_suite/mod.rs"]
mod client_suite;
#[macro_use]
#[path = "../../stn-tokio/tests/codec_suite/mod.rs"]
mod codec_suite;
mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::codec_suite;
    use crate::harness::AsyncStdHarness;

    codec_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::codec_suite;
    use crate::harness::SmolHarness;

    codec_suite!(SmolHarness);
}
