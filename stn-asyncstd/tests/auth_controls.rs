//! Auth per host and user and the long link's run-time switch through the
//! public API (the shared `stn-tokio/tests/auth_controls_suite`), under
//! async-std's executor and under smol's.
//!
//! ```text
//! cargo test -p stn-asyncstd --test auth_controls
//! ```

#[macro_use]
#[path = "../../stn-tokio/tests/client_suite/mod.rs"]
mod client_suite;
#[macro_use]
#[path = "../../stn-tokio/tests/auth_controls_suite/mod.rs"]
mod auth_controls_suite;
mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;
    use crate::{auth_controls_suite, client_suite};

    auth_controls_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;
    use crate::{auth_controls_suite, client_suite};

    auth_controls_suite!(SmolHarness);
}
