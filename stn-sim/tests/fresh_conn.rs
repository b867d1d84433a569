//! The fresh-connection-per-request client (OkHttp-2017 skeleton) end to end.

mod common;

use common::*;
use stn_proto::ConnectError;
use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::clients::fresh_conn::{CallError, FreshConnClient, FreshConnConfig};
use stn_sim::host::PortMode;
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;
use stn_sim::tcp::{TcpStack, HEADER_BYTES};
use stn_sim::Simulation;

fn cfg(calls: u64) -> FreshConnConfig {
    let mut c = FreshConnConfig::okhttp_2017(server());
    c.max_calls = calls;
    c
}

#[test]
fn clean_path_call_takes_two_rtts_plus_serialization() {
    let c = Preset::LossPercent(0.0).conditions();
    let mut sim = Simulation::new(1);
    sim.add_host(server().ip(), PathSchedule::constant(c));
    sim.listen(
        server(),
        FixedResponseApp::new(100, Duration::from_millis(7)),
    )
    .unwrap();
    let id = sim.add_client(FreshConnClient::new(cfg(5)), TcpStack::linux_classic());
    sim.run_until_finished(Instant::from_secs(60));
    let calls = sim.client(id).calls();
    assert_eq!(calls.len(), 5);
    for call in calls {
        assert!(matches!(call.result, Ok((200, _))), "{call:?}");
        // Handshake RTT, request up, 7 ms processing, response down.
        assert_eq!(call.duration(), 2 * c.base_rtt() + Duration::from_millis(7));
    }
    // Calls are sequential, back to back.
    assert_eq!(calls[1].started, calls[0].finished);
    assert_eq!(sim.host(server().ip()).unwrap().accepted(), 5);
}

#[test]
fn full_loss_fails_every_call_at_the_connect_timeout() {
    let mut sim = Simulation::new(2);
    sim.add_host(
        server().ip(),
        PathSchedule::constant(Preset::FullLoss.conditions()),
    );
    sim.listen(server(), FixedResponseApp::new(100, Duration::ZERO))
        .unwrap();
    let id = sim.add_client(FreshConnClient::new(cfg(3)), TcpStack::linux_classic());
    sim.run_until_finished(Instant::from_secs(600));
    let calls = sim.client(id).calls();
    assert_eq!(calls.len(), 3);
    for (i, call) in calls.iter().enumerate() {
        assert_eq!(call.result, Err(CallError::ConnectTimeout));
        assert_eq!(call.started, Instant::from_secs(10 * i as u64));
        assert_eq!(call.duration(), Duration::from_secs(10));
    }
}

#[test]
fn silent_server_fails_at_the_read_timeout() {
    let c = Preset::LossPercent(0.0).conditions();
    let mut sim = Simulation::new(3);
    sim.add_host(server().ip(), PathSchedule::constant(c))
        .set_port(8080, PortMode::Listen(Box::new(SilentApp)));
    let id = sim.add_client(FreshConnClient::new(cfg(1)), TcpStack::linux_classic());
    sim.run_until_finished(Instant::from_secs(60));
    let call = sim.client(id).calls()[0];
    assert_eq!(call.result, Err(CallError::ReadTimeout));
    assert_eq!(
        call.finished,
        Instant::ZERO + c.base_rtt() + Duration::from_secs(10)
    );
}

#[test]
fn refused_port_fails_the_call_at_once() {
    let c = Preset::LossPercent(0.0).conditions();
    let mut sim = Simulation::new(4);
    sim.add_host(server().ip(), PathSchedule::constant(c))
        .set_port(8080, PortMode::Refuse);
    let id = sim.add_client(FreshConnClient::new(cfg(2)), TcpStack::linux_classic());
    sim.run_until_finished(Instant::from_secs(60));
    for call in sim.client(id).calls() {
        assert_eq!(
            call.result,
            Err(CallError::ConnectFailed(ConnectError::Refused))
        );
        assert_eq!(call.duration(), c.base_rtt());
    }
}

#[test]
fn sensitivity_run_matches_the_syn_schedule_and_the_10s_timeout() {
    // peers.md §3.3, OkHttp 2.x on classic Linux: 100% loss for R seconds.
    // R = 5 → the fourth SYN (nominally 7 s, 7.168 s on the timer wheel)
    // connects; R = 10 → no SYN in [10 s, 10 s) → fail at 10 s.
    let base = Preset::ThreeG.conditions();
    let hs = base.up.serialization(HEADER_BYTES)
        + base.up.delay
        + base.down.serialization(HEADER_BYTES)
        + base.down.delay;
    for (r, expect_ok_at) in [(5u64, Some(7u64)), (10, None)] {
        let mut sim = Simulation::new(r);
        sim.add_host(
            server().ip(),
            PathSchedule::outage(base, Instant::ZERO, Instant::from_secs(r)),
        );
        sim.listen(server(), FixedResponseApp::new(100, Duration::ZERO))
            .unwrap();
        let id = sim.add_client(FreshConnClient::new(cfg(1)), TcpStack::linux_classic());
        sim.run_until_finished(Instant::from_secs(60));
        let call = sim.client(id).calls()[0];
        match expect_ok_at {
            Some(s) => {
                assert!(call.result.is_ok(), "{call:?}");
                // Connected at s + RTT; then one more RTT plus serialization.
                let syn = TcpStack::linux_classic().syn_times(Instant::ZERO).0[3];
                assert_eq!(syn.as_nanos() / 1_000_000_000, s);
                let t = call.finished - syn - hs;
                assert!(
                    t > base.base_rtt() && t < base.base_rtt() + Duration::from_millis(50),
                    "{t:?}"
                );
            }
            None => {
                assert_eq!(call.result, Err(CallError::ConnectTimeout));
                assert_eq!(call.finished, Instant::from_secs(10));
            }
        }
    }
}

#[test]
fn lossy_3g_benchmark_shape() {
    // 3G + 30% loss, OkHttp-2017 shape: most calls succeed, some fail on the
    // 10 s timeouts (peers.md §3.2 estimates ≈2% fail, mean ≈2 s).
    let mut sim = Simulation::new(30);
    sim.keep_trace_events(false);
    sim.add_host(
        server().ip(),
        PathSchedule::constant(Preset::ThreeG.conditions().with_loss_percent(30.0)),
    );
    sim.listen(server(), FixedResponseApp::new(100, Duration::ZERO))
        .unwrap();
    let mut c = cfg(1000);
    c.target_successes = 100;
    let id = sim.add_client(FreshConnClient::new(c), TcpStack::linux_classic());
    sim.run_until_finished(Instant::from_secs(100_000));
    let client = sim.client(id);
    assert_eq!(client.successes(), 100);
    let ok: Vec<f64> = client
        .calls()
        .iter()
        .filter(|c| c.result.is_ok())
        .map(|c| c.duration().as_secs_f64())
        .collect();
    let mean = ok.iter().sum::<f64>() / ok.len() as f64;
    assert!(mean > 0.5 && mean < 5.0, "mean {mean}");
    let failed = client.calls().len() - 100;
    assert!(failed < 30, "failed {failed}");
}
