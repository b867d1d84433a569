//! The benchmark of `reference/stn-benchmark.md`, reproduced in the
//! simulator: suites, the stn engine as a simulated client, and the records
//! every run produces.

pub mod record;
