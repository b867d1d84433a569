//! The real-kernel lab, short version: 10% loss with 5 calls per client and
//! one 3 s outage, in network namespaces with nftables. Skips (passing, with
//! a message) where not root or `ip`/`nft` are missing.

mod lab_support;

use std::net::Ipv4Addr;
use std::time::Duration;

use stn_lab::{self as lab, LabClient, LabConfig, NetSpec};

#[test]
// The skip line and the measured table are this test's output.
#[allow(clippy::print_stdout, clippy::print_stderr)]
fn short_lab_loss_and_outage() {
    if let Err(why) = lab::preflight() {
        // Visible with --nocapture; the test passes where it cannot run.
        eprintln!("{}", lab::skip_message(&why));
        return;
    }
    // Names of its own, so a concurrent `stn lab` or lab test is not disturbed.
    let prefix = lab_support::unique_prefix("stnlt");
    let outage = Duration::from_secs(3);
    let config = LabConfig {
        net: NetSpec {
            prefix: prefix.clone(),
            client_ip: Ipv4Addr::new(10, 231, 1, 1),
            server_ip: Ipv4Addr::new(10, 231, 1, 2),
        },
        loss_percents: vec![10],
        outages: vec![outage],
        calls: 5,
        clients: vec![LabClient::Stn, LabClient::Peer],
        call_cap: Duration::from_secs(40),
        server_port: 8080,
    };
    let rt = lab_support::runtime();
    // The whole short lab is bounded well under CI's two minutes.
    let report = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(100), lab::run(&config)).await })
        .expect("the short lab ends within 100 s")
        .expect("the lab runs");
    println!("{}", report.markdown());

    // The namespaces (and with them the veth pair) are gone.
    lab_support::assert_namespaces_gone(&prefix);

    // 10% loss: the rule really dropped packets, and every stn call
    // succeeded within its own deadline (the engine's; the lab's cap is
    // far above it and the call ended with a response).
    let row = &report.loss[0];
    assert_eq!(row.loss_percent, 10);
    assert!(row.packets_seen > 0, "traffic was counted");
    assert!(
        row.packets_dropped > 0 && row.packets_dropped < row.packets_seen / 2,
        "about 10% dropped: {} of {}",
        row.packets_dropped,
        row.packets_seen
    );
    let stn = &row.series[0];
    assert_eq!(stn.client, LabClient::Stn);
    assert_eq!(
        (stn.successes, stn.calls),
        (5, 5),
        "stn failures: {:?}",
        stn.failures
    );
    assert!(stn.max.expect("successes have times") < config.call_cap);
    let peer = &row.series[1];
    assert_eq!(
        (peer.client, peer.calls, peer.attempts),
        (LabClient::Peer, 5, 5)
    );

    // The outage: nothing completes before it ends; stn's call completes
    // after it, within a few seconds of the restore.
    let row = &report.outages[0];
    assert!(row.restored_after >= outage);
    let stn = &row.results[0];
    assert_eq!(stn.client, LabClient::Stn);
    assert!(stn.ok, "stn's outage call failed: {:?}", stn.error);
    assert!(
        stn.at >= outage,
        "stn completed at {:?}, before the 3 s outage ended",
        stn.at
    );
    assert!(
        stn.at < outage + Duration::from_secs(10),
        "stn took {:?} after a 3 s outage",
        stn.at
    );
    for r in &row.results {
        if r.ok {
            assert!(
                r.at >= outage,
                "{} completed during the outage ({:?})",
                r.client,
                r.at
            );
        }
    }
}
