//! The proxy suite (`stn_testkit::proxy_suite`, one copy for both
//! adapters) on stn-asyncstd: once under async-std's executor and once
//! under smol's. Real proxies (tinyproxy, microsocks, dante) started by the
//! tests, and hostile ones; the tests run one at a time.
//!
//! ```text
//! cargo test -p stn-asyncstd --test proxies_asyncstd
//! ```

mod harness;

#[global_allocator]
static ALLOC: stn_testkit::hostile_suite::Counting = stn_testkit::hostile_suite::Counting;

/// The suite under async-std's executor.
mod async_std {
    use crate::harness::AsyncStdHarness;

    stn_testkit::proxy_suite!(AsyncStdHarness);
}

/// The suite under smol's executor.
#[cfg(feature = "smol")]
mod smol {
    use crate::harness::SmolHarness;

    stn_testkit::proxy_suite!(SmolHarness);
}
