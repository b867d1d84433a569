//! The benchmark of `reference/stn-benchmark.md`, reproduced in the
//! simulator: suites, the stn engine as a simulated client, and the records
//! every run produces.
//!
//! # API (for the CLI and report writers)
//!
//! ```no_run
//! use stn_sim::bench::{run_suite, BenchOptions, Suite};
//! let opts = BenchOptions::new(1, true); // seed 1, quick
//! for suite in Suite::ALL {
//!     let records = run_suite(suite, &opts); // Vec<RunRecord>
//!     println!("{}: {} records", suite.name(), records.len());
//! }
//! ```
//!
//! - [`Suite`]: `Suite::ALL`, [`Suite::name`] (`loss`, `sensitivity`,
//!   `request_size`, `response_size`, `long_link`, `bursty`, `recommended`),
//!   [`Suite::from_name`], [`Suite::is_published`].
//! - [`BenchOptions`] `{ seed, quick, tuned, progress }`: `quick` = 50
//!   successes instead of 500, 10 calls instead of 50, one sensitivity run
//!   instead of 3; `tuned` also runs `stn-tuned` (labelled, never the
//!   default); `progress: Option<Box<dyn Fn(&RunRecord)>>` sees each record.
//! - [`run_suite`]`(suite, &opts) -> Vec<RunRecord>`; [`run_suites`].
//! - Records ([`record::RunRecord`]): `client` is `stn`, `stn-tuned`,
//!   `mars-2017`, `mars`, `nsurlsession`, `okhttp-2017`, `okhttp-2017-60s`
//!   (sensitivity), `nsurlsession-shared`, `okhttp-5`, `oracle`; `platform`
//!   `ios` (xnu TCP) or `android` (Linux < 6.5); `scenario` `3g`, `2g`,
//!   `loss-30%`, `bursty-30%`, `outage-20s`, `outage-20s/fit`,
//!   `3g/64KiB-request`, …; `sim_s` the virtual seconds simulated.
//! - [`fidelity`]: the published sensitivity rows and [`fidelity::compare`].
//! - [`targets`]: issue point 7's targets evaluated on records.
//!
//! Pieces: [`stn_client`] (the engine behind the [`crate::workload::CallClient`]
//! seam), [`long_server`] (the long-link server app), [`scenario`] (platforms,
//! clients, runners), [`suite`].

pub mod fidelity;
pub mod long_server;
pub mod record;
pub mod scenario;
pub mod stn_client;
pub mod suite;
pub mod targets;

pub use record::RunRecord;
pub use suite::{run_suite, run_suites, BenchOptions, Progress, Suite};
