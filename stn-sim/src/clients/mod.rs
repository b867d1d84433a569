//! The client models: everything a run can put on the client host and
//! compare.
//!
//! - [`stn`]: stn-proto's engine, under any profile, driven through its
//!   sans-IO API ([`stn::StnClient`]);
//! - [`peers`]: the clients the Mars benchmark compared against (OkHttp
//!   2017 and 5, NSURLSession as benchmarked and as recommended), with
//!   [`fresh_conn`], the one-connection-per-call client under OkHttp 2017;
//! - [`oracle`]: the physical limit, a lower bound no client beats.
//!
//! The engine and the peers are [`crate::workload::CallClient`]s: a
//! workload ([`crate::workload::SequentialWorkload`],
//! [`crate::workload::SingleShot`]) hands them calls and they act through
//! the socket seam ([`crate::client::ClientCx`]). The oracle is not a
//! simulated client: it walks the same links and computes the earliest
//! completion instead.

pub mod fresh_conn;
pub mod oracle;
pub mod peers;
pub mod stn;
