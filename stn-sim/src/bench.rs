//! The benchmark of `docs/stn-benchmark.md`, reproduced in the
//! simulator: the suites, how each client is run, and the records every
//! run produces.
//!
//! # API (for the CLI and report writers)
//!
//! ```no_run
//! use stn_sim::bench::{run_suite, suites, BenchOptions};
//! let opts = BenchOptions::new(1, true); // seed 1, quick
//! for suite in suites::default_run() {
//!     let records = run_suite(suite, &opts); // Vec<RunRecord>
//!     println!("{}: {} records", suite.name(), records.len());
//! }
//! ```
//!
//! - [`Suite`]: a suite as a unit — its name, its runs, its report
//!   section, charts and heatmaps, and what judges it (targets per run,
//!   or a gate per cell); every suite is a module of [`suites`] and a line
//!   in [`suites::ALL`] (`loss`, `sensitivity`, `request_size`,
//!   `response_size`, `long_link`, `bursty`, `recommended`, `matrix`,
//!   `tls`, and the opt-in `tls_idempotent` and `heartbeat`);
//!   [`suites::named`],
//!   [`suites::default_run`].
//! - [`BenchOptions`] `{ seed, quick, tuned, progress }`: `quick` = 50
//!   successes instead of 500, 10 calls instead of 50, one sensitivity run
//!   instead of 3; `tuned` also runs `stn-tuned` (labelled, never the
//!   default); `progress: Option<Box<dyn Fn(&RunRecord)>>` sees each record.
//! - [`run_suite`]`(suite, &opts) -> Vec<RunRecord>`; [`run_suites`].
//! - Records ([`record::RunRecord`]): `client` is `stn`, `stn-tuned`,
//!   `mars-2017`, `mars`, `nsurlsession`, `okhttp-2017`, `okhttp-2017-60s`
//!   (sensitivity), `nsurlsession-shared`, `okhttp-5`, `oracle`; `platform`
//!   `ios` (xnu TCP), `android` (Linux < 6.5) or `android-6.5`; `scenario`
//!   `3g`, `2g`, `loss-30%`, `bursty-30%`, `outage-20s`, `outage-20s/fit`,
//!   `3g/64KiB-request`, …; `sim_s` the virtual seconds simulated.
//! - Judging: [`targets`] (per run, against the others of its scenario),
//!   [`gate`] (per [`cell::Cell`], against the best other client),
//!   [`fidelity`] (the published sensitivity rows, [`fidelity::compare`]).
//!
//! The figures the suites give (seed 1) are in the README's benchmark
//! results; `cargo run --release -p stn-sim -- bench` prints them.
//!
//! Pieces: [`platform`] (which phone), [`client_kind`] (which client, built
//! for a run; the client models are [`crate::clients`]), [`run_spec`] (the
//! run's network and servers; [`long_server`] is the long-link server
//! app), [`runner`] (one client's run into a record), [`cell`] (a gated
//! cell and its runs), [`suite`] (the trait and the blocks the suites
//! share), [`suites`].

pub mod cell;
pub mod client_kind;
pub mod covering;
pub mod fidelity;
pub mod gate;
pub mod long_server;
pub mod platform;
pub mod record;
pub mod run_spec;
pub mod runner;
pub mod suite;
pub mod suites;
pub mod targets;

pub use record::RunRecord;
pub use suite::{run_suite, run_suites, BenchOptions, Progress, Suite};
