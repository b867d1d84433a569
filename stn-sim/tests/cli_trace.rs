//! `stn-sim trace`: one run's events and hash, reproducible per seed.

use std::process::Command;

fn trace(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_stn-sim"))
        .arg("trace")
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn hash(out: &str) -> &str {
    out.lines()
        .last()
        .and_then(|l| l.strip_prefix("trace hash: "))
        .unwrap_or_else(|| panic!("no hash line in\n{out}"))
}

#[test]
fn same_seed_same_trace_other_seed_other_hash() {
    let a = trace(&["--seed", "1"]);
    let b = trace(&["--seed", "1"]);
    assert_eq!(a, b);
    assert_eq!(hash(&a).len(), 16);
    let c = trace(&["--seed", "2"]);
    assert_ne!(hash(&a), hash(&c));
    // One event per line: packets delivered and dropped (30 % loss), socket events.
    assert!(a.lines().count() > 20);
    assert!(a.contains(" deliver ") && a.contains("DROP(") && a.contains("client 0 socket"));
}

#[test]
fn scenario_and_client_can_be_chosen() {
    let example = format!("{}/scenarios/example.toml", env!("CARGO_MANIFEST_DIR"));
    let out = trace(&[
        "--seed",
        "4",
        "--scenario",
        &example,
        "--client",
        "okhttp-2017",
    ]);
    assert!(
        out.contains("# scenario 3g-bursty-outage client okhttp-2017 seed 4 run 0:"),
        "{out}"
    );
}

#[test]
fn a_matrix_cell_replays_as_the_bench_ran_it() {
    let out = trace(&["--matrix-cell", "android sweep outage-13.9s"]);
    // The network is back at 13.9 s; the call completes after it.
    assert!(out.contains("client 0 note workload-call-ok"), "{out}");
    assert!(out.contains("# matrix cell android sweep outage-13.9s client stn seed 1 run 0:"));
    let mars = trace(&[
        "--matrix-cell",
        "android sweep outage-13.9s",
        "--client",
        "mars-2017",
    ]);
    assert_ne!(hash(&out), hash(&mars));
    let o = Command::new(env!("CARGO_BIN_EXE_stn-sim"))
        .args(["trace", "--matrix-cell", "nowhere"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no matrix or tls cell \"nowhere\""));
}

#[test]
fn a_tls_cell_replays_with_its_handshakes() {
    let out = trace(&["--matrix-cell", "ios tls loss-0% fresh", "--quick"]);
    assert!(out.contains("# matrix cell ios tls loss-0% fresh client stn seed 1 run 0:"));
    // Every call on a fresh connection: TCP up, then the TLS handshake.
    assert!(out.contains("socket 0: TcpConnected"), "{out}");
    assert!(out.contains("socket 0: Connected"), "{out}");
    assert!(out.contains("client 0 note workload-call-ok"), "{out}");
}
