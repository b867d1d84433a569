//! stn over tokio.
//!
//! Not built yet: this crate will own an `stn_proto` engine and execute its
//! actions with tokio sockets, DNS and timers (the `Client` API, the reference
//! server and the `stn` CLI). Until then it only re-exports the core.
#![forbid(unsafe_code)]

pub use stn_proto as proto;
