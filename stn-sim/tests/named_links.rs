//! Two named long links in the simulator besides the main one: `mirror`
//! to the server's long-link port, `dead` to a port nobody listens on.
//! Calls cycle main, mirror, dead: every call on the main link and on
//! `mirror` succeeds, every call on `dead` fails with the refusal, and the
//! reports name the link each call ran on.

use stn_proto::config::LongLinkEndpoints;
use stn_proto::{ConnectError, Duration, LinkName, LinkSpec, Profile};
use stn_sim::bench::client_kind::{engine_client, EngineVariant};
use stn_sim::bench::platform::Platform;
use stn_sim::bench::run_spec::{RunSpec, LONG_PORT, SERVER};
use stn_sim::bench::runner::run_engine_sequential;
use stn_sim::clients::stn::StnClient;
use stn_sim::link::LinkConditions;
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::workload::CallFailure;

fn spec(seed: u64) -> RunSpec {
    let link = LinkConditions {
        delay: Duration::from_millis(50),
        ..LinkConditions::default()
    };
    let path = PathSchedule::constant(PathConditions::symmetric(link));
    RunSpec {
        long_link: true,
        ..RunSpec::published("links", "two-named-links", path, seed)
    }
}

fn endpoints(port: u16) -> LongLinkEndpoints {
    let mut ep = LongLinkEndpoints::default();
    ep.ips = vec![SERVER.ip()];
    ep.ports = vec![port];
    ep
}

#[test]
fn a_refused_named_link_fails_its_calls_while_the_others_succeed() {
    let (mirror, dead) = (
        LinkName::new("mirror").unwrap(),
        LinkName::new("dead").unwrap(),
    );
    for seed in [1, 2, 3] {
        let sp = spec(seed);
        let platform = Platform::Android;
        let client = engine_client(&EngineVariant::Profile(Profile::Stn), platform, &sp);
        let mut cfg = client.config().clone();
        let long = cfg.engine.long().clone();
        cfg.links = vec![
            (
                mirror.clone(),
                LinkSpec::new(endpoints(LONG_PORT), long.clone()),
            ),
            (
                dead.clone(),
                LinkSpec::new(endpoints(LONG_PORT + 100), long),
            ),
        ];
        cfg.call_links = vec![None, Some(mirror.clone()), Some(dead.clone())];
        let (r, reports) =
            run_engine_sequential(StnClient::new(cfg).keep_reports(), platform, &sp, 20);
        assert!(r.violations.is_empty(), "seed {seed}: {:?}", r.violations);
        let failed = r.calls.iter().filter(|c| !c.is_ok()).count();
        assert!(
            failed >= 9,
            "seed {seed}: {failed} of {} calls failed",
            r.calls.len()
        );
        for c in &r.calls {
            match c.id.0 % 3 {
                2 => assert_eq!(
                    c.result,
                    Err(CallFailure::ConnectFailed(ConnectError::Refused)),
                    "seed {seed}: call {} on dead",
                    c.id.0
                ),
                _ => assert!(
                    c.is_ok(),
                    "seed {seed}: call {} failed: {:?}",
                    c.id.0,
                    c.result
                ),
            }
        }
        // Every attempt that carried a request names its link: the main
        // link's none, the others theirs; none ran on `dead`.
        let named = |l: &LinkName| {
            reports
                .iter()
                .filter(|r| r.link.as_ref() == Some(l))
                .count()
        };
        assert!(named(&mirror) >= 10, "seed {seed}: mirror reports");
        assert_eq!(named(&dead), 0, "seed {seed}: dead carried nothing");
        assert!(reports.iter().filter(|r| r.link.is_none()).count() >= 10);
    }
}
