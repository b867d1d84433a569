//! stn over async-std (and smol).
//!
//! Not built yet: this crate will drive an `stn_proto` engine with async-std
//! sockets and timers, sharing one driver with `stn-tokio`. Until then it only
//! re-exports the core.
#![forbid(unsafe_code)]

pub use stn_proto as proto;
