//! The hostile-server suite ([`hostile_suite`]) on tokio: a 1xx flood, an
//! endless chunked body, a trickled body, garbage, a huge declared length,
//! stalled large bodies against the read budget, an unread push flood, and
//! long-link garbage and oversize frames. Heap growth is measured with a
//! counting allocator; the tests run one at a time.
//!
//! ```text
//! cargo test -p stn-tokio --test hostile_servers
//! ```

#[macro_use]
mod client_suite;
#[macro_use]
mod hostile_suite;

mod tokio_harness;

use tokio_harness::TokioHarness;

#[global_allocator]
static ALLOC: hostile_suite::Counting = hostile_suite::Counting;

hostile_suite!(TokioHarness);
