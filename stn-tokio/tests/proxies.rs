//! The proxy suite (`stn_testkit::proxy_suite`) on tokio: both links
//! through tinyproxy (HTTP CONNECT, Basic auth, TLS through the tunnel),
//! microsocks (SOCKS5 with and without username/password, remote DNS) and
//! dante, started by the tests (each skips with a message where its
//! binary is missing), and hostile proxies: refused, stalled, garbage,
//! 403, 502, an endless answer head. The tests run one at a time.
//!
//! ```text
//! cargo test -p stn-tokio --test proxies
//! ```

mod tokio_harness;

use tokio_harness::TokioHarness;

#[global_allocator]
static ALLOC: stn_testkit::hostile_suite::Counting = stn_testkit::hostile_suite::Counting;

stn_testkit::proxy_suite!(TokioHarness);
