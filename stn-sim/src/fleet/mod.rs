//! `stn-sim fleet`: many client hosts, each on its own access link, share
//! one server host of finite capacity through an outage and its recovery.
//!
//! - [`caller`]: a phone's app: one call, called again after a failure;
//! - [`scenario`]: the scenario file (fleet, server capacity, outage, calls);
//! - [`run`]: one fleet through a scenario, sampled into time bins;
//! - [`summary`]: the per-fleet figures, their table and chart.
//!
//! Every client is the one the bench runs: stn-proto's engine under its
//! profile, or a peer model. docs/fleet.md describes the model and its
//! limits.

pub mod caller;
pub mod run;
pub mod scenario;
pub mod summary;
