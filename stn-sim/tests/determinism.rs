//! Same seed, same trace; different seed, different trace.

mod common;

use common::*;
use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::clients::fresh_conn::{FreshConnClient, FreshConnConfig};
use stn_sim::link::{GilbertElliott, LossModel};
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;
use stn_sim::tcp::TcpStack;
use stn_sim::Simulation;

fn run(seed: u64) -> (u64, u64, usize) {
    let mut c = Preset::ThreeG.conditions().with_loss_percent(30.0);
    c.down.jitter = Duration::from_millis(20);
    c.up.loss = LossModel::GilbertElliott(GilbertElliott::with_rate_and_burst(
        0.3,
        stn_proto::Duration::from_millis(150),
    ));
    let mut sim = Simulation::new(seed);
    sim.add_host(server().ip(), PathSchedule::constant(c));
    sim.listen(
        server(),
        FixedResponseApp::new(2000, Duration::from_millis(5)),
    )
    .unwrap();
    let mut cfg = FreshConnConfig::okhttp_2017(server());
    cfg.max_calls = 15;
    let a = sim.add_client(FreshConnClient::new(cfg.clone()), TcpStack::linux_classic());
    let b = sim.add_client(FreshConnClient::new(cfg), TcpStack::xnu());
    sim.run_until_finished(Instant::from_secs(3600));
    let calls = sim.client(a).calls().len() + sim.client(b).calls().len();
    (sim.trace().hash(), sim.trace().len(), calls)
}

#[test]
fn same_seed_same_trace_hash() {
    let first = run(2017);
    assert_eq!(first.2, 30);
    assert!(first.1 > 100);
    assert_eq!(run(2017), first);
}

#[test]
fn different_seeds_give_different_traces() {
    let hashes: Vec<u64> = (1..=5).map(|s| run(s).0).collect();
    for i in 0..hashes.len() {
        for j in i + 1..hashes.len() {
            assert_ne!(hashes[i], hashes[j], "seeds {} and {}", i + 1, j + 1);
        }
    }
}
