//! The hostile-server suite (`stn-tokio/tests/hostile_suite`, one copy for
//! both adapters) on stn-asyncstd: once under async-std's executor and once
//! under smol's. Heap growth is measured with a counting allocator; the
//! tests run one at a time.
//!
//! ```text
//! cargo test -p stn-asyncstd --test hostile_servers_asyncstd
//! ```

#[macro_use]
#[path = "../../stn-tokio/tests/client_suite/mod.rs"]
mod client_suite;
#[macro_use]
#[path = "../../stn-tokio/tests/hostile_suite/mod.rs"]
mod hostile_suite;
mod harness;

#[global_allocator]
static ALLOC: hostile_suite::Counting = hostile_suite::Counting;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;
    use crate::{client_suite, hostile_suite};

    hostile_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;
    use crate::{client_suite, hostile_suite};

    hostile_suite!(SmolHarness);
}
