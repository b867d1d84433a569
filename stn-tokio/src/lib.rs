//! stn over tokio.
//!
//! This crate will own an `stn_proto` engine and execute its actions with
//! tokio sockets, DNS and timers (the `Client` API). It already holds the
//! reference [`server`] that speaks the Mars sample protocol, and the `stn`
//! CLI that runs it.
#![forbid(unsafe_code)]

pub use stn_proto as proto;

pub mod server;

pub use server::{Fault, Server, ServerConfig, ServerHandle, Stats};
