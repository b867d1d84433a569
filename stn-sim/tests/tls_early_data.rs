//! TLS 0-RTT in the simulator with stn's engine (`Task::early_data`, stn's
//! `engine.early_data`): on a resumed fresh connection the request goes
//! with the ClientHello and the call completes one RTT sooner than the same
//! call with early data off; a server that rejects the early data still
//! answers the call in full (the socket resends the request after the
//! handshake).

use stn_proto::{Duration, Instant, Profile};
use stn_sim::apps::FixedResponseApp;
use stn_sim::bench::client_kind::{engine_client, tls_config, ClientKind, EngineVariant, TlsOf};
use stn_sim::bench::platform::Platform;
use stn_sim::bench::run_spec::{response_body, RunSpec, REQUEST_LEN, RESPONSE_LEN, SERVER};
use stn_sim::bench::runner::{run_engine_sequential, run_sequential};
use stn_sim::host::PortMode;
use stn_sim::path::PathSchedule;
use stn_sim::preset::Preset;
use stn_sim::tls::TlsServer;
use stn_sim::workload::{CallRecord, SequentialConfig, SequentialWorkload};
use stn_sim::Simulation;

/// The "N% Loss" path without loss: 30 ms each way.
const RTT: Duration = Duration::from_millis(60);

fn spec(early_data: bool) -> RunSpec {
    RunSpec {
        suite: "test".into(),
        scenario: "clean".into(),
        path: PathSchedule::constant(Preset::LossPercent(0.0).conditions()),
        request_len: REQUEST_LEN,
        response_len: RESPONSE_LEN,
        long_link: false,
        retry_count: Some(0),
        dns_copies: 1,
        candidates: Vec::new(),
        keep_alive_server: false,
        tls: true,
        early_data,
        seed: 7,
        run: 0,
    }
}

fn durations(calls: &[CallRecord]) -> Vec<Duration> {
    calls.iter().map(CallRecord::duration).collect()
}

fn stn() -> EngineVariant {
    EngineVariant::Profile(Profile::Stn)
}

#[test]
fn a_resumed_fresh_connection_call_is_one_rtt_sooner_with_early_data() {
    let platform = Platform::Android;
    let (on, on_reports) = {
        let s = spec(true);
        run_engine_sequential(engine_client(&stn(), platform, &s), platform, &s, 3)
    };
    let (off, off_reports) = {
        let s = spec(false);
        let c = engine_client(&stn(), platform, &s).keep_reports();
        run_engine_sequential(c, platform, &s, 3)
    };
    assert!(on.violations.is_empty() && off.violations.is_empty());
    assert!(on.record.ok && off.record.ok);
    let (a, b) = (durations(&on.calls), durations(&off.calls));
    // The first call has no ticket: TCP, the full handshake, the request.
    assert_eq!(b[0], RTT * 3);
    assert_eq!(a[0], b[0]);
    // Resumed: TCP + 1 RTT with early data, TCP + 2 RTT without.
    for i in 1..3 {
        assert_eq!(b[i], RTT * 3, "call {i} without early data");
        assert_eq!(a[i], RTT * 2, "call {i} with early data");
    }
    let early: Vec<bool> = on_reports.iter().map(|r| r.early_data).collect();
    assert_eq!(early, [false, true, true]);
    assert!(off_reports.iter().all(|r| !r.early_data));
    // The handshake time is still measured (Connected after the early send).
    assert_eq!(on_reports[1].handshake_time, Some(RTT));
    assert_eq!(on.record.early_sends, Some(2));
}

#[test]
fn mars_and_the_peers_send_nothing_early() {
    let platform = Platform::Android;
    for kind in [
        ClientKind::MARS,
        ClientKind::MARS_2017,
        ClientKind::PeerBenchmarked,
        ClientKind::PeerRecommended,
    ] {
        let on = run_sequential(&kind, platform, &spec(true), 3);
        let off = run_sequential(&kind, platform, &spec(false), 3);
        assert_eq!(
            durations(&on.calls),
            durations(&off.calls),
            "{}",
            kind.name(platform)
        );
        assert!(matches!(on.record.early_sends, None | Some(0)));
    }
}

/// Runs two stn calls against an early-data server that `restart` replaces
/// after the first call (a server whose ticket state is gone, or one with
/// early data off); returns the calls and the client's violations.
fn two_calls_with_a_restart(restart: impl FnOnce() -> TlsServer) -> (Vec<CallRecord>, Vec<String>) {
    let platform = Platform::Ios;
    let s = spec(true);
    let client = engine_client(&stn(), platform, &s)
        .keep_reports()
        .expect_body(response_body(RESPONSE_LEN));
    let stack = client.stack();
    let workload = SequentialWorkload::new(
        client,
        SequentialConfig {
            request_len: REQUEST_LEN,
            target_successes: 2,
            max_calls: 2,
        },
    );
    let mut sim = Simulation::new(s.seed);
    sim.add_host(SERVER.ip(), s.path.clone());
    let app = || Box::new(FixedResponseApp::new(RESPONSE_LEN, Duration::ZERO));
    sim.set_port(
        SERVER,
        PortMode::Listen(Box::new(TlsServer::new(app()).with_early_data(1))),
    )
    .unwrap();
    let id = sim.add_client(workload, stack);
    sim.set_client_tls(id, Some(tls_config(TlsOf::Engine { early_data: true })));
    let step = Duration::from_millis(1);
    while sim.client(id).records().is_empty() && sim.now() < Instant::from_secs(10) {
        let t = sim.now() + step;
        sim.run_until(t);
    }
    sim.set_port(SERVER, PortMode::Listen(Box::new(restart())))
        .unwrap();
    sim.run_until_finished(Instant::from_secs(30));
    let w = sim.client(id);
    let early: Vec<bool> = w.client().reports().iter().map(|r| r.early_data).collect();
    assert_eq!(early, [false, true], "the second request went early");
    (w.records().to_vec(), w.client().violations().to_vec())
}

#[test]
fn a_rejected_early_request_is_sent_again_and_answered_in_full() {
    let app = || Box::new(FixedResponseApp::new(RESPONSE_LEN, Duration::ZERO));
    // The server lost its sessions: a full handshake, the request again.
    let (calls, violations) = two_calls_with_a_restart(|| TlsServer::new(app()).with_early_data(2));
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(calls.len(), 2);
    for c in &calls {
        let ok = c.result.expect("answered");
        assert_eq!(ok.status, 200);
    }
    assert_eq!(calls[0].result, calls[1].result, "the same full answer");
    assert_eq!(calls[1].duration(), RTT * 3, "what early data off costs");
    // A server with early data off resumes and rejects: the same cost.
    let (calls, violations) = two_calls_with_a_restart(|| TlsServer::new(app()));
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(calls[0].result, calls[1].result);
    assert_eq!(calls[1].duration(), RTT * 3);
}
