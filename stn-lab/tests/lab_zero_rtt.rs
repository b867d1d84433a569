//! TLS 1.3 early data on a real kernel path, short version: 100 ms round
//! trip through the link emulator, 3 calls per mode (`stn lab --zero-rtt`).
//! Checks what happened on the wire (handshakes resumed, early data sent
//! and accepted, every call answered), not how long it took: the timings
//! are the report's, printed. Skips (passing, with a message) where not
//! root, `ip` is missing or there is no `/dev/net/tun`.

mod lab_support;

use std::net::Ipv4Addr;
use std::time::Duration;

use stn_lab::zero_rtt::{self, Mode, ZeroRttConfig};
use stn_lab::{self as lab, NetSpec};

#[test]
// The skip line and the measured table are this test's output.
#[allow(clippy::print_stdout, clippy::print_stderr)]
fn early_data_on_a_delayed_path() {
    if let Err(why) = lab::scenario_preflight() {
        eprintln!("{}", lab::scenario_skip_message(&why));
        return;
    }
    let prefix = lab_support::unique_prefix("stnlz");
    let config = ZeroRttConfig {
        net: NetSpec {
            prefix: prefix.clone(),
            client_ip: Ipv4Addr::new(10, 231, 3, 1),
            server_ip: Ipv4Addr::new(10, 231, 3, 2),
        },
        rtt: Duration::from_millis(100),
        calls: 3,
        call_cap: Duration::from_secs(20),
        ..ZeroRttConfig::default()
    };
    let rt = lab_support::runtime();
    let report = rt
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(120), zero_rtt::run(&config)).await
        })
        .expect("the zero-RTT lab ends within 120 s")
        .expect("the lab runs");
    println!("{}", report.markdown());
    lab_support::assert_namespaces_gone(&prefix);

    let row = |mode| {
        report
            .rows
            .iter()
            .find(|r| r.mode == mode)
            .unwrap_or_else(|| panic!("a {mode:?} row"))
    };
    for r in &report.rows {
        assert_eq!((r.ok, r.calls), (3, 3), "{:?}: {:?}", r.mode, r.failures);
    }
    let plain = row(Mode::Plain);
    assert_eq!((plain.tls.handshakes, plain.tls.early_data), (0, 0));
    // Without early data: every later call resumes, none sends early.
    let tls = row(Mode::Tls);
    assert_eq!(
        (tls.tls.handshakes, tls.tls.resumed, tls.tls.early_data),
        (3, 2, 0)
    );
    // With it, on kept connections: every later call resumes and its request
    // goes early, accepted by the client's and the server's count.
    let early = row(Mode::TlsEarly);
    assert_eq!(
        (
            early.tls.handshakes,
            early.tls.resumed,
            early.tls.early_data,
            early.tls.early_accepted
        ),
        (3, 2, 2, 2),
        "{early:?}"
    );
    assert_eq!(early.server_early, 2);
    // Closed on each reply: the first full handshake's two tickets last two
    // calls (a connection closed on its 0-RTT reply gets no new ticket).
    let close = row(Mode::TlsEarlyClose);
    assert_eq!(
        (close.tls.early_data, close.tls.early_accepted),
        (2, 2),
        "{close:?}"
    );
}
