//! The recommended-usage peer models: connection reuse, keep-alive expiry,
//! retry of stale pooled connections, route racing, read timeouts.

mod common;

use common::nth_server;
use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::clients::peers::{KeepAliveApp, Kernel, NsUrlSession, OkHttp5, PeerClient};
use stn_sim::host::{PortMode, ServerApp, ServerConnId, ServerReplies};
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::preset::Preset;
use stn_sim::workload::{
    CallFailure, CallRecord, SequentialConfig, SequentialWorkload, SingleShot,
};
use stn_sim::Simulation;

/// The loss-free "N% Loss" base path: 30 ms each way, unlimited bandwidth,
/// so call durations are exact multiples of the RTT.
fn clean() -> PathConditions {
    Preset::LossPercent(0.0).conditions()
}

fn rtt() -> Duration {
    clean().base_rtt()
}

fn sequential(
    client: PeerClient,
    calls: u64,
    sim: &mut Simulation<SequentialWorkload<PeerClient>>,
) -> Vec<CallRecord> {
    let stack = client.stack();
    let cfg = SequentialConfig {
        request_len: 64,
        target_successes: calls,
        max_calls: calls,
    };
    let id = sim.add_client(SequentialWorkload::new(client, cfg), stack);
    sim.run_until_finished(Instant::from_secs(10_000));
    sim.client(id).records().to_vec()
}

fn one_host(app: impl ServerApp + 'static) -> Simulation<SequentialWorkload<PeerClient>> {
    let mut sim = Simulation::new(1);
    sim.add_host(nth_server(0).ip(), PathSchedule::constant(clean()));
    sim.listen(nth_server(0), app).unwrap();
    sim
}

#[test]
fn shared_clients_reuse_one_connection() {
    for client in [
        OkHttp5::recommended(vec![nth_server(0)], Kernel::LinuxClassic),
        NsUrlSession::recommended(vec![nth_server(0)]),
    ] {
        let name = client.config().name;
        let mut sim = one_host(KeepAliveApp::new(100, Duration::ZERO));
        let recs = sequential(client, 5, &mut sim);
        assert_eq!(recs.len(), 5);
        assert_eq!(
            recs[0].duration(),
            2 * rtt(),
            "{name}: handshake + exchange"
        );
        assert_eq!((recs[0].cost.connects, recs[0].cost.reused), (1, false));
        for r in &recs[1..] {
            assert!(r.is_ok());
            assert_eq!(
                r.duration(),
                rtt(),
                "{name}: a warm connection skips the handshake"
            );
            assert_eq!(
                (r.cost.connects, r.cost.syns, r.cost.requests, r.cost.reused),
                (0, 0, 1, true)
            );
        }
        assert_eq!(
            sim.host(nth_server(0).ip()).unwrap().accepted(),
            1,
            "{name}"
        );
    }
}

#[test]
fn a_connection_close_server_prevents_reuse() {
    let mut sim = one_host(FixedResponseApp::new(100, Duration::ZERO));
    let recs = sequential(
        OkHttp5::recommended(vec![nth_server(0)], Kernel::LinuxClassic),
        4,
        &mut sim,
    );
    assert!(recs
        .iter()
        .all(|r| r.is_ok() && r.cost.connects == 1 && !r.cost.reused));
    assert_eq!(sim.host(nth_server(0).ip()).unwrap().accepted(), 4);
}

#[test]
fn okhttp_retries_a_stale_pooled_connection_once_nsurlsession_does_not_retry_a_post() {
    // The server answers one request per connection, then resets the next
    // one: every reuse meets a stale connection.
    let mut sim = one_host(KeepAliveApp::new(100, Duration::ZERO).with_reset_after(1));
    let recs = sequential(
        OkHttp5::recommended(vec![nth_server(0)], Kernel::LinuxClassic),
        4,
        &mut sim,
    );
    assert!(recs.iter().all(CallRecord::is_ok), "{recs:?}");
    for r in &recs[1..] {
        // Request on the pooled connection (RST after 1 RTT), then a fresh one.
        assert_eq!(
            (r.cost.connects, r.cost.requests, r.cost.reused),
            (1, 2, true)
        );
        assert_eq!(r.duration(), 3 * rtt());
    }

    let mut sim = one_host(KeepAliveApp::new(100, Duration::ZERO).with_reset_after(1));
    let recs = sequential(NsUrlSession::recommended(vec![nth_server(0)]), 4, &mut sim);
    let results: Vec<_> = recs.iter().map(|r| r.result.map(|_| ())).collect();
    assert_eq!(
        results,
        vec![
            Ok(()),
            Err(CallFailure::Reset),
            Ok(()),
            Err(CallFailure::Reset)
        ]
    );
}

#[derive(Debug)]
struct SilentApp;

impl ServerApp for SilentApp {
    fn on_data(&mut self, _: Instant, _: ServerConnId, _: &[u8], _: &mut ServerReplies) {}
}

#[test]
fn a_read_timeout_after_the_request_is_never_retried() {
    let mut sim = one_host(SilentApp);
    let recs = sequential(
        OkHttp5::recommended((0..1).map(nth_server).collect(), Kernel::LinuxClassic),
        1,
        &mut sim,
    );
    assert_eq!(recs[0].result, Err(CallFailure::ReadTimeout));
    assert_eq!(recs[0].duration(), rtt() + Duration::from_secs(10));
    assert_eq!((recs[0].cost.connects, recs[0].cost.requests), (1, 1));

    let mut sim = one_host(SilentApp);
    let recs = sequential(NsUrlSession::recommended(vec![nth_server(0)]), 1, &mut sim);
    // NSURLSession has no read timeout: its 60 s idle request timer ends the call.
    assert_eq!(recs[0].result, Err(CallFailure::RequestTimeout));
    assert_eq!(recs[0].duration(), Duration::from_secs(60));
}

/// Two routes: the first black-holed, the second healthy.
fn dead_then_live() -> Simulation<SequentialWorkload<PeerClient>> {
    let mut sim = Simulation::new(2);
    sim.add_host(nth_server(0).ip(), PathSchedule::constant(clean()))
        .set_port(8080, PortMode::BlackHole);
    sim.add_host(nth_server(1).ip(), PathSchedule::constant(clean()));
    sim.listen(nth_server(1), FixedResponseApp::new(100, Duration::ZERO))
        .unwrap();
    sim
}

#[test]
fn racing_skips_a_dead_first_address() {
    // OkHttp 5 fast fallback: the second route starts after 250 ms.
    let mut sim = dead_then_live();
    let recs = sequential(
        OkHttp5::recommended(vec![nth_server(0), nth_server(1)], Kernel::LinuxClassic),
        2,
        &mut sim,
    );
    for r in &recs {
        assert_eq!(r.duration(), Duration::from_millis(250) + 2 * rtt());
        assert_eq!(r.cost.connects, 2);
        assert_eq!(r.cost.syns, 2, "the dead route's one SYN and the winner's");
    }

    // NSURLSession Happy Eyeballs without pooling, to see the stagger adapt:
    // 1 s before any RTT sample, then the xnu RTO of the handshake RTT
    // (max(60 + 4·30, 100) + 200 = 380 ms).
    let mut sim = dead_then_live();
    let mut cfg = NsUrlSession::recommended_config(vec![nth_server(0), nth_server(1)]);
    cfg.pool = None;
    let recs = sequential(PeerClient::new(cfg), 2, &mut sim);
    assert_eq!(recs[0].duration(), Duration::from_secs(1) + 2 * rtt());
    assert_eq!(recs[1].duration(), Duration::from_millis(380) + 2 * rtt());
}

#[test]
fn idle_connections_expire_after_the_keep_alive() {
    let mut sim = Simulation::new(3);
    sim.add_host(nth_server(0).ip(), PathSchedule::constant(clean()));
    sim.listen(nth_server(0), KeepAliveApp::new(100, Duration::ZERO))
        .unwrap();
    let client = OkHttp5::recommended(vec![nth_server(0)], Kernel::LinuxClassic);
    let stack = client.stack();
    let id = sim.add_client(SingleShot::new(client, 64), stack);
    sim.run_until(Instant::from_secs(299));
    assert!(sim.client(id).record().unwrap().is_ok());
    assert_eq!(sim.client(id).client().idle_connections(), 1);
    assert_eq!(sim.host(nth_server(0).ip()).unwrap().open_connections(), 1);
    sim.run_until(Instant::from_secs(302));
    assert_eq!(sim.client(id).client().idle_connections(), 0);
    assert_eq!(sim.host(nth_server(0).ip()).unwrap().open_connections(), 0);
}
