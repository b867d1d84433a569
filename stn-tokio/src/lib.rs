//! stn over tokio.
//!
//! [`Client`] runs an `stn_proto` engine through the runtime-agnostic
//! [`stn_driver`] with tokio sockets, DNS (`tokio::net::lookup_host`) and
//! timers ([`TokioRuntime`]); see the [`client`] module for an example. The
//! crate also holds the reference [`server`] that speaks the Mars sample
//! protocol, and the `stn` CLI (`stn serve`, `stn send`).
#![forbid(unsafe_code)]

pub use stn_driver::tls;
pub use stn_proto as proto;

pub mod client;
#[cfg(feature = "cli")]
pub mod lab;
pub mod server;

pub use client::{Client, ClientBuilder, Error, Finished, Push, Pushes, Snapshot, TokioRuntime};
pub use server::{Fault, Server, ServerConfig, ServerHandle, Stats};
