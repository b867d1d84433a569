use std::net::SocketAddr;

use proptest::prelude::*;

use super::*;
use crate::time::{Duration, Instant};

fn addr(s: &str) -> ProxyTarget {
    ProxyTarget::Addr(s.parse::<SocketAddr>().unwrap())
}

fn creds() -> Credentials {
    Credentials::new("alice", "s3cret").unwrap()
}

fn http(target: ProxyTarget, c: Option<Credentials>) -> ProxyHandshake {
    ProxyHandshake::new(ProxyProtocol::HttpConnect, target, c)
}

fn socks(target: ProxyTarget, c: Option<Credentials>) -> ProxyHandshake {
    ProxyHandshake::new(ProxyProtocol::Socks5, target, c)
}

fn sent(hs: &mut ProxyHandshake) -> Vec<u8> {
    hs.poll_transmit().map(|b| b.to_vec()).unwrap_or_default()
}

// ---------------------------------------------------------------- HTTP

#[test]
fn connect_request_names_the_target_and_carries_basic_auth() {
    let mut hs = http(addr("10.0.0.7:8080"), Some(creds()));
    let req = String::from_utf8(sent(&mut hs)).unwrap();
    assert_eq!(
        req,
        "CONNECT 10.0.0.7:8080 HTTP/1.1\r\nHost: 10.0.0.7:8080\r\n\
         Proxy-Authorization: Basic YWxpY2U6czNjcmV0\r\n\r\n"
    );
    assert!(hs.poll_transmit().is_none(), "one request");
    let mut v6 = http(addr("[2001:db8::1]:443"), None);
    assert!(sent(&mut v6)
        .starts_with(b"CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443\r\n\r\n"));
    // A v4-mapped address goes as the IPv4 it is.
    let mut mapped = http(addr("[::ffff:10.0.0.1]:80"), None);
    assert!(sent(&mut mapped).starts_with(b"CONNECT 10.0.0.1:80 "));
    let mut name = http(ProxyTarget::name("api.example.com", 443).unwrap(), None);
    assert!(sent(&mut name).starts_with(b"CONNECT api.example.com:443 HTTP/1.1\r\n"));
}

#[test]
fn a_2xx_opens_the_tunnel_and_leaves_the_rest() {
    let mut hs = http(addr("10.0.0.7:80"), None);
    sent(&mut hs);
    let answer =
        b"HTTP/1.0 200 Connection established\r\nProxy-agent: tinyproxy/1.11.1\r\n\r\nhello";
    let used = hs.handle_input(answer);
    assert_eq!(hs.status(), HandshakeStatus::Open);
    assert_eq!(&answer[used..], b"hello");
    assert_eq!(
        hs.status_line(),
        Some("HTTP/1.0 200 Connection established")
    );
    // Nothing more is taken.
    assert_eq!(hs.handle_input(b"more"), 0);
}

#[test]
fn interim_heads_are_skipped_and_bare_newlines_accepted() {
    let mut hs = http(addr("10.0.0.7:80"), None);
    let answer = b"HTTP/1.1 100 Continue\n\nHTTP/1.1 204 No Content\n\nX";
    let used = hs.handle_input(answer);
    assert_eq!(hs.status(), HandshakeStatus::Open);
    assert_eq!(&answer[used..], b"X");
    assert_eq!(hs.status_line(), Some("HTTP/1.1 204 No Content"));
}

#[test]
fn non_2xx_answers_fail_with_their_status() {
    for (status, target_failure) in [
        (407, false),
        (403, false),
        (400, false),
        (500, true),
        (502, true),
        (503, true),
        (504, true),
        (301, false),
    ] {
        let mut hs = http(addr("10.0.0.7:80"), None);
        hs.handle_input(
            format!("HTTP/1.1 {status} Whatever\r\nContent-Length: 5\r\n\r\nbody!").as_bytes(),
        );
        let want = ProxyFailure::HttpStatus(status);
        assert_eq!(hs.status(), HandshakeStatus::Failed(want));
        assert_eq!(want.is_target_failure(), target_failure, "{status}");
    }
    assert_eq!(
        ProxyFailure::HttpStatus(407).to_string(),
        "the HTTP proxy answered CONNECT with 407 Proxy Authentication Required"
    );
}

#[test]
fn garbage_fails_at_its_first_byte_and_an_endless_head_at_the_cap() {
    let mut hs = http(addr("10.0.0.7:80"), None);
    assert_eq!(hs.handle_input(b"\x05\x00garbage"), 1);
    assert_eq!(hs.status(), HandshakeStatus::Failed(ProxyFailure::BadHttp));

    let mut hs = http(addr("10.0.0.7:80"), None).with_max_head(1024);
    let mut fed = 0;
    hs.handle_input(b"HTTP/1.1 200 OK\r\n");
    while hs.status() == HandshakeStatus::InProgress && fed < 1 << 20 {
        fed += hs.handle_input(b"X-Endless: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    assert_eq!(
        hs.status(),
        HandshakeStatus::Failed(ProxyFailure::HeadTooLarge)
    );
    assert!(fed < 1024, "stopped at the cap, took {fed}");

    for bad in [
        &b"HTTP/1.1 20 OK\r\n\r\n"[..],
        b"HTTP/2 200\r\n\r\n",
        b"HTTP/1.1 2000\r\n\r\n",
    ] {
        let mut hs = http(addr("10.0.0.7:80"), None);
        hs.handle_input(bad);
        assert_eq!(
            hs.status(),
            HandshakeStatus::Failed(ProxyFailure::BadHttp),
            "{bad:?}"
        );
    }
}

#[test]
fn a_close_before_the_answer_fails_and_after_it_changes_nothing() {
    let mut hs = http(addr("10.0.0.7:80"), None);
    hs.handle_input(b"HTTP/1.1 200");
    hs.handle_eof();
    assert_eq!(hs.status(), HandshakeStatus::Failed(ProxyFailure::Closed));
    let mut hs = http(addr("10.0.0.7:80"), None);
    hs.handle_input(b"HTTP/1.1 200 OK\r\n\r\n");
    hs.handle_eof();
    assert_eq!(hs.status(), HandshakeStatus::Open);
}

#[test]
fn status_lines_are_kept_printable_and_short() {
    let mut hs = http(addr("10.0.0.7:80"), None);
    let mut answer = b"HTTP/1.1 502 Bad\x01Gateway ".to_vec();
    answer.extend(std::iter::repeat_n(b'z', 500));
    answer.extend_from_slice(b"\r\n\r\n");
    hs.handle_input(&answer);
    let line = hs.status_line().unwrap();
    assert!(line.starts_with("HTTP/1.1 502 Bad?Gateway zz") && line.len() == 120);
}

#[test]
fn invalid_names_fail_before_anything_is_sent() {
    assert!(ProxyTarget::name("has space", 1).is_none());
    assert!(ProxyTarget::name("", 1).is_none());
    assert!(ProxyTarget::name("a".repeat(256), 1).is_none());
    assert!(ProxyTarget::name("a".repeat(255), 1).is_some());
    let bad = ProxyTarget::Name {
        host: "evil\r\nHost: x".into(),
        port: 1,
    };
    let mut hs = http(bad.clone(), None);
    assert!(hs.poll_transmit().is_none());
    assert_eq!(
        hs.status(),
        HandshakeStatus::Failed(ProxyFailure::InvalidTarget)
    );
    let mut hs = socks(bad, None);
    assert!(hs.poll_transmit().is_none());
}

#[test]
fn credentials_are_checked() {
    assert!(Credentials::new("", "x").is_err());
    assert!(Credentials::new("a:b", "x").is_err());
    assert!(Credentials::new("a", "x\ny").is_err());
    assert!(Credentials::new("a".repeat(256), "x").is_err());
    assert!(Credentials::new("a", "b:c").is_ok());
    // Never the password in a log.
    assert!(!format!("{:?}", creds()).contains("s3cret"));
}

// --------------------------------------------------------------- SOCKS5

#[test]
fn socks5_without_auth_ipv4_ipv6_and_names() {
    for (target, request) in [
        (
            addr("10.0.0.7:8080"),
            vec![5, 1, 0, 1, 10, 0, 0, 7, 0x1f, 0x90],
        ),
        (
            addr("[2001:db8::1]:443"),
            [
                &[5u8, 1, 0, 4][..],
                &"2001:db8::1"
                    .parse::<std::net::Ipv6Addr>()
                    .unwrap()
                    .octets(),
                &[1, 187],
            ]
            .concat(),
        ),
        (
            ProxyTarget::name("example.com", 80).unwrap(),
            [&[5u8, 1, 0, 3, 11][..], b"example.com", &[0, 80]].concat(),
        ),
    ] {
        let mut hs = socks(target, None);
        assert_eq!(sent(&mut hs), [5, 1, 0], "greeting: one method, none");
        assert_eq!(hs.handle_input(&[5, 0]), 2);
        assert_eq!(sent(&mut hs), request);
        assert_eq!(hs.status(), HandshakeStatus::InProgress);
        let reply = [5, 0, 0, 1, 127, 0, 0, 1, 0x04, 0x38, 0xAA];
        assert_eq!(hs.handle_input(&reply), 10);
        assert_eq!(hs.status(), HandshakeStatus::Open);
    }
}

#[test]
fn socks5_with_username_and_password() {
    let mut hs = socks(addr("10.0.0.7:80"), Some(creds()));
    assert_eq!(sent(&mut hs), [5, 1, 2]);
    hs.handle_input(&[5, 2]);
    assert_eq!(
        sent(&mut hs),
        [&[1u8, 5][..], b"alice", &[6], b"s3cret"].concat()
    );
    hs.handle_input(&[1, 0]);
    assert_eq!(sent(&mut hs), [5, 1, 0, 1, 10, 0, 0, 7, 0, 80]);
    // A reply with a domain-name bound address, in pieces.
    for b in [5u8, 0, 0, 3, 4, b'h', b'o', b's'] {
        hs.handle_input(&[b]);
        assert_eq!(hs.status(), HandshakeStatus::InProgress);
    }
    assert_eq!(hs.handle_input(&[b't', 0, 1, 9]), 3);
    assert_eq!(hs.status(), HandshakeStatus::Open);
}

#[test]
fn socks5_failures_are_named() {
    type Case = (Option<Credentials>, Vec<&'static [u8]>, ProxyFailure);
    let cases: Vec<Case> = vec![
        (None, vec![b"HTTP/1.1 400"], ProxyFailure::BadGreeting),
        (None, vec![&[5, 0xFF]], ProxyFailure::NoAcceptableMethod),
        (None, vec![&[5, 2]], ProxyFailure::UnexpectedMethod(2)),
        (
            Some(creds()),
            vec![&[5, 0]],
            ProxyFailure::UnexpectedMethod(0),
        ),
        (
            Some(creds()),
            vec![&[5, 2], &[1, 1]],
            ProxyFailure::AuthRejected(1),
        ),
        (
            Some(creds()),
            vec![&[5, 2], &[5, 0]],
            ProxyFailure::BadAuthReply,
        ),
        (None, vec![&[5, 0], &[5, 5]], ProxyFailure::Socks5Reply(5)),
        (
            None,
            vec![&[5, 0], &[5, 2, 0, 1]],
            ProxyFailure::Socks5Reply(2),
        ),
        (None, vec![&[5, 0], &[4, 0]], ProxyFailure::BadSocks5Reply),
        (
            None,
            vec![&[5, 0], &[5, 0, 0, 9, 1]],
            ProxyFailure::BadSocks5Reply,
        ),
    ];
    for (c, replies, want) in cases {
        let mut hs = socks(addr("10.0.0.7:80"), c);
        for r in &replies {
            sent(&mut hs);
            hs.handle_input(r);
        }
        assert_eq!(hs.status(), HandshakeStatus::Failed(want), "{replies:?}");
    }
    assert!(ProxyFailure::Socks5Reply(5).is_target_failure());
    assert!(!ProxyFailure::Socks5Reply(2).is_target_failure());
    assert!(!ProxyFailure::AuthRejected(1).is_target_failure());
    assert_eq!(
        ProxyFailure::Socks5Reply(5).to_string(),
        "the SOCKS5 proxy answered CONNECT with reply 5: connection refused"
    );
    assert_eq!(socks5_reply_meaning(3), "network unreachable");
    assert_eq!(socks5_reply_meaning(0x42), "unassigned code");
}

#[test]
fn every_failure_has_its_own_code() {
    let mut all = vec![
        ProxyFailure::Unresolved,
        ProxyFailure::Refused,
        ProxyFailure::Unreachable,
        ProxyFailure::ConnectTimedOut,
        ProxyFailure::Io(5),
        ProxyFailure::Reset,
        ProxyFailure::Closed,
        ProxyFailure::Timeout,
        ProxyFailure::BadGreeting,
        ProxyFailure::NoAcceptableMethod,
        ProxyFailure::BadAuthReply,
        ProxyFailure::BadSocks5Reply,
        ProxyFailure::BadHttp,
        ProxyFailure::HeadTooLarge,
        ProxyFailure::InvalidTarget,
    ];
    all.extend((0..=255).map(ProxyFailure::UnexpectedMethod));
    all.extend((0..=255).map(ProxyFailure::AuthRejected));
    all.extend((0..=255).map(ProxyFailure::Socks5Reply));
    all.extend((100..=999).map(ProxyFailure::HttpStatus));
    let codes: std::collections::BTreeSet<i32> = all.iter().map(|f| f.code()).collect();
    assert_eq!(codes.len(), all.len());
    assert!(codes
        .iter()
        .all(|&c| c < crate::TlsFailure::CODE_BASE - 0x200));
    for f in &all {
        assert!(!f.to_string().is_empty());
    }
}

proptest! {
    /// Any bytes, in any chunks: no panic, never more taken than given,
    /// the buffer within its cap, and the same end as fed at once.
    #[test]
    fn any_answer_in_any_chunks(
        socks5 in any::<bool>(),
        with_creds in any::<bool>(),
        answer in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(1usize..40, 0..30),
    ) {
        let make = || {
            let c = with_creds.then(creds);
            let t = addr("10.0.0.7:80");
            let hs = if socks5 { socks(t, c) } else { http(t, c) };
            hs.with_max_head(256)
        };
        let mut whole = make();
        let used_whole = whole.handle_input(&answer);
        let mut chunked = make();
        let mut rest = &answer[..];
        let mut used = 0;
        for cut in cuts.iter().copied().chain(std::iter::repeat(7)) {
            if rest.is_empty() { break; }
            let (now, later) = rest.split_at(cut.min(rest.len()));
            let n = chunked.handle_input(now);
            prop_assert!(n <= now.len());
            prop_assert!(chunked.buffered() <= 262);
            used += n;
            if n < now.len() { break; }
            rest = later;
            chunked.poll_transmit();
        }
        prop_assert_eq!(whole.status(), chunked.status());
        prop_assert_eq!(used_whole, used);
    }
}

// ---------------------------------------------------------------- route

fn t(s: u64) -> Instant {
    Instant::from_secs(s)
}

const REFUSED: RouteResult = RouteResult::ProxyFailed(ProxyFailure::Refused);

#[test]
fn two_proxy_failures_go_direct_and_the_bypass_doubles() {
    let mut r = ProxyRoute::new(RouteConfig::default());
    r.on_result(t(0), Route::Proxy, REFUSED);
    assert_eq!(r.route(t(0)), Route::Proxy, "one failure is not enough");
    r.on_result(t(0), Route::Proxy, REFUSED);
    assert_eq!(r.route(t(1)), Route::Direct);
    assert!(r.bypassing());
    r.on_result(t(1), Route::Direct, RouteResult::Connected);
    assert_eq!(r.route(t(29)), Route::Direct);
    // The bypass ends: one proxy failure sends it back, for twice as long.
    assert_eq!(r.route(t(30)), Route::Proxy);
    r.on_result(t(30), Route::Proxy, REFUSED);
    assert_eq!(r.route(t(89)), Route::Direct);
    assert_eq!(r.route(t(90)), Route::Proxy);
    // A tunnel that opens: the proxy is trusted again, the bypass fresh.
    r.on_result(t(90), Route::Proxy, RouteResult::Connected);
    r.on_result(t(91), Route::Proxy, REFUSED);
    assert_eq!(r.route(t(91)), Route::Proxy);
    r.on_result(t(91), Route::Proxy, REFUSED);
    assert_eq!(r.route(t(120)), Route::Direct);
    assert_eq!(r.route(t(121)), Route::Proxy);
}

#[test]
fn the_bypass_is_capped() {
    let mut r = ProxyRoute::new(RouteConfig::default());
    let mut now = t(0);
    for _ in 0..20 {
        r.on_result(now, Route::Proxy, REFUSED);
        r.on_result(now, Route::Proxy, REFUSED);
        now += Duration::from_secs(3600);
        assert_eq!(r.route(now), Route::Proxy);
    }
    r.on_result(now, Route::Proxy, REFUSED);
    assert_eq!(r.route(now + Duration::from_secs(599)), Route::Direct);
    assert_eq!(r.route(now + Duration::from_secs(600)), Route::Proxy);
}

#[test]
fn target_failures_prove_the_proxy_works() {
    let mut r = ProxyRoute::new(RouteConfig::default());
    r.on_result(t(0), Route::Proxy, REFUSED);
    let target = RouteResult::ProxyFailed(ProxyFailure::Socks5Reply(5));
    r.on_result(t(0), Route::Proxy, target);
    r.on_result(t(0), Route::Proxy, REFUSED);
    assert_eq!(r.route(t(0)), Route::Proxy, "the count started over");
    for _ in 0..10 {
        r.on_result(t(0), Route::Proxy, target);
    }
    assert_eq!(r.route(t(0)), Route::Proxy);
}

#[test]
fn direct_failures_go_back_to_the_proxy_and_stale_results_change_nothing() {
    let mut r = ProxyRoute::new(RouteConfig::default());
    r.on_result(t(0), Route::Proxy, REFUSED);
    r.on_result(t(0), Route::Proxy, REFUSED);
    // A proxy failure from before the switch, and a direct failure.
    r.on_result(t(1), Route::Proxy, REFUSED);
    r.on_result(t(1), Route::Direct, RouteResult::DirectFailed);
    assert_eq!(r.route(t(1)), Route::Direct);
    r.on_result(t(1), Route::Direct, RouteResult::DirectFailed);
    assert_eq!(
        r.route(t(2)),
        Route::Proxy,
        "direct fails too: the proxy again"
    );
    // One more proxy failure: direct again (for 60 s now).
    r.on_result(t(2), Route::Proxy, REFUSED);
    assert_eq!(r.route(t(61)), Route::Direct);
    // A late tunnel from an older connect: trusted.
    r.on_result(t(3), Route::Proxy, RouteResult::Connected);
    assert_eq!(r.route(t(3)), Route::Proxy);
    // Direct results while on the proxy change nothing.
    r.on_result(t(4), Route::Direct, RouteResult::DirectFailed);
    r.on_result(t(4), Route::Direct, RouteResult::DirectFailed);
    assert_eq!(r.route(t(4)), Route::Proxy);
}

#[test]
fn never_falls_back_when_told_not_to_and_resets_on_a_new_network() {
    let mut never = ProxyRoute::new(RouteConfig {
        fallback: Fallback::Never,
        ..RouteConfig::default()
    });
    for _ in 0..10 {
        never.on_result(t(0), Route::Proxy, REFUSED);
    }
    assert_eq!(never.route(t(0)), Route::Proxy);
    let mut r = ProxyRoute::new(RouteConfig::default());
    r.on_result(t(0), Route::Proxy, REFUSED);
    r.on_result(t(0), Route::Proxy, REFUSED);
    r.reset();
    assert_eq!(r.route(t(1)), Route::Proxy);
}

proptest! {
    /// Any sequence of results: never Direct under `Never`; a bypass never
    /// outlasts the cap; a tunnel always restores the proxy.
    #[test]
    fn route_laws(ops in proptest::collection::vec((0u8..5, 0u64..100), 0..200)) {
        let mut r = ProxyRoute::new(RouteConfig::default());
        let mut never = ProxyRoute::new(RouteConfig { fallback: Fallback::Never, ..RouteConfig::default() });
        let mut now = t(0);
        for (op, dt) in ops {
            now += Duration::from_secs(dt);
            let result = match op {
                0 => RouteResult::Connected,
                1 => REFUSED,
                2 => RouteResult::ProxyFailed(ProxyFailure::HttpStatus(502)),
                3 => RouteResult::DirectFailed,
                _ => RouteResult::ProxyFailed(ProxyFailure::Timeout),
            };
            let route = r.route(now);
            r.on_result(now, route, result);
            if route == Route::Proxy && result == RouteResult::Connected {
                prop_assert_eq!(r.route(now), Route::Proxy);
            }
            prop_assert_eq!(r.route(now + Duration::from_secs(600)), Route::Proxy);
            never.on_result(now, Route::Proxy, result);
            prop_assert_eq!(never.route(now), Route::Proxy);
        }
    }
}
