//! The benchmark's suites, one module each, and [`ALL`], the one place a
//! suite is registered: a new suite is a module with a type that
//! implements [`Suite`] and a line in [`ALL`].

pub mod bursty;
pub mod heartbeat;
pub mod long_link;
pub mod loss;
pub mod matrix;
pub mod recommended;
pub mod sensitivity;
pub mod size;
pub mod tls;
pub mod tls_idempotent;

pub use bursty::Bursty;
pub use heartbeat::Heartbeat;
pub use long_link::LongLink;
pub use loss::Loss;
pub use matrix::Matrix;
pub use recommended::Recommended;
pub use sensitivity::Sensitivity;
pub use size::{RequestSize, ResponseSize};
pub use tls::Tls;
pub use tls_idempotent::TlsIdempotent;

use crate::bench::cell::Cell;
use crate::bench::gate::CellVerdict;
use crate::bench::record::RunRecord;
use crate::bench::Suite;

/// Every suite, in report order (the opt-in ones, which a run without
/// `--suite` leaves out, too).
pub static ALL: [&dyn Suite; 11] = [
    &Loss,
    &Sensitivity,
    &RequestSize,
    &ResponseSize,
    &LongLink,
    &Bursty,
    &Recommended,
    &Matrix,
    &Tls,
    &TlsIdempotent,
    &Heartbeat,
];

/// The suites a run without `--suite` runs, in report order.
pub fn default_run() -> impl Iterator<Item = &'static dyn Suite> {
    ALL.iter().copied().filter(|s| s.in_default_run())
}

/// The suite called `name`.
pub fn named(name: &str) -> Option<&'static dyn Suite> {
    ALL.iter().copied().find(|s| s.name() == name)
}

/// The gate's verdicts in `records`, per suite gated per cell that has
/// any, in report order.
pub fn gate_verdicts(records: &[RunRecord]) -> Vec<(&'static dyn Suite, Vec<CellVerdict>)> {
    ALL.iter()
        .map(|s| (*s, s.verdicts(records)))
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// The cell whose [`Cell::key`] is `key` in any suite gated per cell
/// (quick or full size), the first in report order.
pub fn find_cell(key: &str, quick: bool) -> Option<Cell> {
    ALL.iter()
        .flat_map(|s| s.cells(quick))
        .find(|c| c.key() == key)
}
