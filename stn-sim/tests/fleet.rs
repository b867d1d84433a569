//! A small fleet through an outage: the same seed gives the same figures,
//! and the figures agree with each other.

use stn_sim::fleet::run::run_fleet;
use stn_sim::fleet::scenario::FleetScenario;
use stn_sim::fleet::summary::FleetSummary;

/// 60 clients (ten behind one NAT address), a server that takes 40
/// connections/s with an 8-connection SYN backlog, a 10 s outage.
fn scenario(kind: &str, tls: bool) -> FleetScenario {
    let text = format!(
        r#"
name = "small"
seed = 7
fleets = ["stn", "mars", "okhttp-5", "mixed"]
horizon_s = 200
tls = {tls}
[[group]]
clients = 50
[[group]]
clients = 10
cgnat = true
mixed_kind = "mars-2017"
[server]
syn_backlog = 8
accept_rate = 40
handshake_cost_us = 500
tls_cost_ms = 2.0
[outage]
kind = "{kind}"
from_s = 5
until_s = 15
[calls]
from_s = 2
until_s = 15
retry_after_s = 1.0
max_calls = 5
"#
    );
    FleetScenario::parse(&text).unwrap()
}

fn consistent(s: &FleetSummary, run: &stn_sim::fleet::run::FleetRun) {
    let served = run.clients.iter().filter(|c| c.served().is_some()).count() as u64;
    let calls: u64 = run.clients.iter().map(|c| c.records.len() as u64).sum();
    assert_eq!(s.clients, 60);
    assert_eq!(served + s.unserved_clients, s.clients, "{s:?}");
    assert_eq!(
        calls,
        served + s.failed_calls,
        "one success per served client"
    );
    for c in &run.clients {
        assert!(c.records.len() <= 5, "max_calls holds");
        assert!(c
            .records
            .windows(2)
            .all(|w| !w[0].is_ok() && w[0].finished <= w[1].started));
    }
    assert!(s.pending_served <= s.pending && s.pending <= s.clients);
    assert!(s.pending > 30, "most calls fall in the outage: {s:?}");
    let sum = |f: fn(&stn_sim::fleet::run::Bin) -> u64| run.bins.iter().map(f).sum::<u64>();
    assert_eq!(
        sum(|b| b.syns),
        s.server_syns,
        "the bins add up to the server's count"
    );
    assert_eq!(sum(|b| b.accepted), s.accepted);
    assert_eq!(sum(|b| b.overflows), s.overflows);
    assert_eq!(sum(|b| b.served), served);
    assert!(s.accepted <= s.server_handshakes && s.wasted_handshakes <= s.server_handshakes);
    assert!(s.server_handshakes <= s.server_syns && s.connects <= s.syns_sent);
    // Served shares come in order, after the outage's end.
    let t: Vec<f64> = [s.t50_s, s.t99_s, s.t100_s].into_iter().flatten().collect();
    assert!(t.windows(2).all(|w| w[0] <= w[1]) && t.iter().all(|x| *x >= 0.0));
    assert_eq!(s.t50_s.is_some(), s.pending_served * 2 >= s.pending);
}

#[test]
fn same_seed_same_fleet_and_the_counts_agree() {
    for (kind, tls) in [("partition", false), ("server-down", true)] {
        let sc = scenario(kind, tls);
        for fleet in &sc.fleets {
            let a = run_fleet(&sc, fleet);
            let b = run_fleet(&sc, fleet);
            let (sa, sb) = (
                FleetSummary::of(&a, sc.outage_window()),
                FleetSummary::of(&b, sc.outage_window()),
            );
            assert_eq!(sa, sb, "{kind} {fleet}");
            assert_eq!(a.bins, b.bins);
            consistent(&sa, &a);
            if tls {
                assert!(sa.server_tls_handshakes > 0, "{sa:?}");
            }
        }
    }
}

#[test]
fn a_small_server_overflows_and_its_queue_is_bounded() {
    let sc = scenario("partition", false);
    let run = run_fleet(&sc, "stn");
    let s = FleetSummary::of(&run, sc.outage_window());
    assert!(s.overflows > 0, "60 phones against an 8-SYN backlog: {s:?}");
    assert!(s.peak_accept_queue <= 8);
}
