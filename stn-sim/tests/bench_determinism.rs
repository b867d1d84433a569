//! Determinism of the bench: the same seed gives the same records and the
//! same trace hashes, twice in one process and across processes.

use stn_proto::Instant;
use stn_sim::bench::client_kind::ClientKind;
use stn_sim::bench::platform::Platform;
use stn_sim::bench::run_spec::{normal_network, RunSpec};
use stn_sim::bench::runner::{run_sequential, run_single};
use stn_sim::bench::suites::Sensitivity;
use stn_sim::bench::{run_suite, BenchOptions};
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;

fn spec(seed: u64, path: PathSchedule) -> RunSpec {
    RunSpec::published("det", "x", path, seed)
}

/// One hash over a handful of runs of every client kind.
fn fingerprint(seed: u64) -> (u64, Vec<String>) {
    let mut h = stn_sim::trace::Fnv64::new();
    let mut recs = Vec::new();
    let lossy = PathSchedule::constant(Preset::LossPercent(50.0).conditions());
    let outage = PathSchedule::outage(normal_network(), Instant::ZERO, Instant::from_secs(12));
    for platform in Platform::ALL {
        for c in [
            ClientKind::STN,
            ClientKind::STN_TUNED,
            ClientKind::MARS_2017,
            ClientKind::MARS,
            ClientKind::PeerBenchmarked,
            ClientKind::PeerRecommended,
            ClientKind::Oracle,
        ] {
            let r = run_sequential(&c, platform, &spec(seed, lossy.clone()), 8);
            h.write_u64(r.trace_hash);
            recs.push(format!("{:?}", r.record));
            let mut s = spec(seed, outage.clone());
            s.long_link = c == ClientKind::STN;
            let r = run_single(&c, platform, &s);
            h.write_u64(r.trace_hash);
            recs.push(format!("{:?}", r.record));
        }
    }
    for r in &recs {
        h.write(r.as_bytes());
    }
    (h.finish(), recs)
}

#[test]
fn same_seed_same_records_and_trace_hashes_twice_in_one_process() {
    let a = fingerprint(42);
    let b = fingerprint(42);
    assert_eq!(a.1, b.1);
    assert_eq!(a.0, b.0);
    let c = fingerprint(43);
    assert_ne!(a.0, c.0, "another seed changes the lossy runs");
    let q1 = run_suite(&Sensitivity, &BenchOptions::new(5, true));
    let q2 = run_suite(&Sensitivity, &BenchOptions::new(5, true));
    assert_eq!(q1, q2);
}

#[test]
#[ignore = "helper: run by the cross-process test"]
fn print_fingerprint() {
    let (h, _) = fingerprint(42);
    // The parent process reads this line.
    #[allow(clippy::print_stdout)]
    {
        println!("FINGERPRINT={h:016x}");
    }
}

#[test]
fn same_seed_same_hash_across_processes() {
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args(["--ignored", "--exact", "print_fingerprint", "--nocapture"])
        .output()
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("FINGERPRINT="))
        .unwrap_or_else(|| panic!("no fingerprint in child output: {stdout}"));
    let (h, _) = fingerprint(42);
    assert_eq!(line, format!("{h:016x}"));
}
