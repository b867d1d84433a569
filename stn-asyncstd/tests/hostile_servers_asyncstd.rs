//! The hostile-server suite (`stn_testkit::hostile_suite`, one copy for
//! both adapters) on stn-asyncstd: once under async-std's executor and once
//! under smol's. Heap growth is measured with a counting allocator; the
//! tests run one at a time.
//!
//! ```text
//! cargo test -p stn-asyncstd --test hostile_servers_asyncstd
//! ```

mod harness;

#[global_allocator]
static ALLOC: stn_testkit::hostile_suite::Counting = stn_testkit::hostile_suite::Counting;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;

    stn_testkit::hostile_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;

    stn_testkit::hostile_suite!(SmolHarness);
}
