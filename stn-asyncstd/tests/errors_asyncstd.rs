//! The errors suite (`stn-tokio/tests/errors_suite`, one copy for both
//! adapters) on stn-asyncstd, under async-std's executor and under smol's.
//!
//! ```text
//! cargo test -p stn-asyncstd --test errors_asyncstd
//! ```

#[macro_use]
#[path = "../../stn-tokio/tests/client_suite/mod.rs"]
mod client_suite;
#[macro_use]
#[path = "../../stn-tokio/tests/errors_suite/mod.rs"]
mod errors_suite;
mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;
    use crate::{client_suite, errors_suite};

    errors_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;
    use crate::{client_suite, errors_suite};

    errors_suite!(SmolHarness);
}
