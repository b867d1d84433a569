//! stn keeps an abandoned connect attempt open as a passive probe:
//! when an outage ends between two of stn's fresh SYNs, the kernel's own
//! retransmission of an older, abandoned attempt's SYN can get through
//! first. Pinned on the two sweep cells whose outage ends mid-second.

use std::process::Command;

use stn_sim::bench::client_kind::ClientKind;
use stn_sim::bench::runner::run_single;
use stn_sim::bench::suites::find_cell;

fn trace(cell: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_stn-sim"))
        .args(["trace", "--matrix-cell", cell])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The time column of a trace line, in s (`14.23s`, `900ms`, `0ns`).
fn time_s(line: &str) -> f64 {
    let t = line.split_whitespace().next().unwrap_or_default();
    let (num, scale) = if let Some(v) = t.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = t.strip_suffix("ns") {
        (v, 1e-9)
    } else if let Some(v) = t.strip_suffix("µs").or_else(|| t.strip_suffix("us")) {
        (v, 1e-6)
    } else {
        (t.strip_suffix('s').unwrap_or(t), 1.0)
    };
    num.parse::<f64>()
        .unwrap_or_else(|_| panic!("time in {line:?}"))
        * scale
}

#[test]
fn an_outage_ending_mid_second_is_caught_by_an_abandoned_attempts_syn() {
    let out = trace("android sweep outage-13.9s");
    // The SYN that got through after the outage (13.9 s) and its socket.
    let syn = out
        .lines()
        .find(|l| l.contains(" up ") && l.contains(" deliver ") && l.contains("[S]"))
        .unwrap_or_else(|| panic!("no SYN delivered:\n{out}"));
    let src = syn
        .split_whitespace()
        .find(|w| w.starts_with("10.0.0.1:"))
        .expect("client address");
    let sent: Vec<f64> = out
        .lines()
        .filter(|l| l.contains(" up ") && l.contains("[S]") && l.contains(&format!("{src} >")))
        .map(time_s)
        .collect();
    let delivered = time_s(syn);
    assert!(delivered > 13.9, "{syn}");
    // Linux sends a SYN's retransmissions 1 s and then 2 s apart: the one
    // delivered is the socket's third, started about 3 s earlier, so the
    // attempt was well past its abandon time (1.6 s without an RTT hint) —
    // closing it then would have lost this SYN.
    assert!(sent.len() >= 3, "{src}: {sent:?}");
    assert!(delivered - sent[0] >= 2.9, "{src}: {sent:?}");
    assert!(out.contains("client 0 note workload-call-ok"), "{out}");
}

#[test]
fn the_mid_second_sweep_cells_stay_within_the_gate_of_mars_2017() {
    // The gate allows stn 1.02x the best other client on a sweep cell; before
    // the abandoned attempts were kept, stn's fresh SYNs at 13.8 s and 14.4 s
    // straddled the outage end and it took 14.52 s against mars-2017's 14.12 s
    // at root seed 1.
    for key in ["android sweep outage-13.9s", "android sweep outage-14.0s"] {
        let cell = find_cell(key, true).expect("cell");
        for seed in 1..=4 {
            let done = |client: &ClientKind| {
                run_single(client, cell.platform, &cell.spec(client, seed, 0))
                    .record
                    .completion_s
                    .unwrap_or(f64::INFINITY)
            };
            let stn = done(&ClientKind::STN);
            let mars = done(&ClientKind::MARS_2017);
            assert!(
                stn <= 1.02 * mars,
                "{key} seed {seed}: stn {stn:.3} s vs mars-2017 {mars:.3} s"
            );
        }
    }
}
