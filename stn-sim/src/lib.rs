//! Deterministic lossy-link simulator for stn.
//!
//! Not built yet: virtual time, per-direction link models, a TCP model, the
//! peer client models and the Mars STN benchmark land here. Until then it only
//! re-exports the core.
#![forbid(unsafe_code)]

pub use stn_proto as proto;
