//! The hostile-server suite (`stn_testkit::hostile_suite`) on tokio: a 1xx flood, an
//! endless chunked body, a trickled body, garbage, a huge declared length,
//! stalled large bodies against the read budget, an unread push flood, and
//! long-link garbage and oversize frames. Heap growth is measured with a
//! counting allocator; the tests run one at a time.
//!
//! ```text
//! cargo test -p stn-tokio --test hostile_servers
//! ```

mod tokio_harness;

use tokio_harness::TokioHarness;

#[global_allocator]
static ALLOC: stn_testkit::hostile_suite::Counting = stn_testkit::hostile_suite::Counting;

stn_testkit::hostile_suite!(TokioHarness);
