//! The TLS suite (`stn-tokio/tests/tls_suite`, one copy for both adapters)
//! on stn-asyncstd: under async-std's executor and under smol's, against
//! the reference server on its own tokio runtime thread.
//!
//! ```text
//! cargo test -p stn-asyncstd --test tls_asyncstd            # both executors
//! cargo test -p stn-asyncstd --test tls_asyncstd smol::     # smol only
//! ```

#[macro_use]
#[path = "../../stn-tokio/tests/client_suite/mod.rs"]
mod client_suite;
#[macro_use]
#[path = "../../stn-tokio/tests/tls_suite/mod.rs"]
mod tls_suite;
mod harness;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;
    use crate::{client_suite, tls_suite};

    tls_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;
    use crate::{client_suite, tls_suite};

    tls_suite!(SmolHarness);
}
