//! Test support both stn adapters share: the runtime-generic loopback
//! suites that stn-tokio and stn-asyncstd each run, and the scripted Mars
//! sample server built from captures of the real Mars.
//!
//! A suite is a set of `async fn`s generic over a [`Harness`] (how to run,
//! spawn and sleep on one runtime, and which [`Runtime`](stn_driver::Runtime)
//! the client uses), with a macro that declares one `#[test]` per function
//! for a harness:
//!
//! ```text
//! // stn-tokio/tests/client_tokio.rs
//! mod tokio_harness; // struct TokioHarness; impl stn_testkit::Harness for TokioHarness
//! stn_testkit::client_suite!(tokio_harness::TokioHarness);
//! ```
//!
//! | suite | macro | what it covers |
//! |---|---|---|
//! | [`client_suite`] | [`client_suite!`] | both links, racing and bans, faults, judge, cancel, shutdown, 10,000 tasks, Mars's hooks, the Mars sample server |
//! | [`errors_suite`] | [`errors_suite!`] | errors that name their cause, `source()`, retries per profile, the frequency limit |
//! | [`hostile_suite`] | [`hostile_suite!`] | servers that misbehave, against the client's memory budgets (with the [`Counting`](hostile_suite::Counting) allocator) |
//! | [`tls_suite`] | [`tls_suite!`] | TLS on both links, resumption, 0-RTT, every TLS failure |
//! | [`codec_suite`] | [`codec_suite!`] | a pluggable long-link codec ([`VarintCodec`](codec_suite::varint::VarintCodec)) |
//! | [`auth_controls_suite`] | [`auth_controls_suite!`] | auth per host and user, session timeouts, the long link's switch |
//! | [`proxy_suite`] | [`proxy_suite!`] | both links through real proxies (tinyproxy, microsocks, dante) and hostile ones, every proxy failure typed |
//!
//! The reference server ([`stn_server`]) runs on a tokio runtime thread of
//! its own ([`ServerHost`]), so the client side can be any runtime; every
//! test is bounded by [`TEST_BOUND`]. Not published: it exists for the
//! workspace's tests.

pub mod auth_controls_suite;
pub mod client_suite;
pub mod codec_suite;
pub mod errors_suite;
pub mod hostile_suite;
pub mod mars_sample;
pub mod proxy_suite;
pub mod tls_suite;

pub use client_suite::{bounded, run, Harness, ServerHost, TEST_BOUND};
