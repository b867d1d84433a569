//! A banned endpoint that has connected before is raced last, not left out,
//! by a race that goes round until its deadline (`Engine::proven_banned`).

use super::*;

const LIVE: &str = "10.0.1.1";
const DEAD: &str = "10.0.1.2";

/// Two fixed IPs; `LIVE` connected once and then failed until banned.
fn live_banned(profile: Profile) -> H {
    let mut c = Config::for_profile(profile).short_link_ips([ip(LIVE), ip(DEAD)], 80);
    c.hedge = None;
    let mut h = H::new(c);
    let live = SocketAddr::new(ip(LIVE), 80);
    h.e.endpoint_history_mut().record(h.now, live, true);
    for _ in 0..16 {
        if h.e.endpoint_history_mut().is_banned(h.now, live) {
            break;
        }
        // Failures within 10 s of the last are not recorded (Mars's rate limit).
        h.advance(secs(11));
        h.e.endpoint_history_mut().record(h.now, live, false);
    }
    assert!(
        h.e.endpoint_history_mut().is_banned(h.now, live),
        "set-up: live banned"
    );
    h
}

fn raced_ips(h: &H) -> Vec<IpAddr> {
    let mut seen = Vec::new();
    for (_, a) in connects(&h.log) {
        if !seen.contains(&a.ip()) {
            seen.push(a.ip());
        }
    }
    seen
}

#[test]
fn stn_races_a_banned_proven_endpoint_after_the_others() {
    let mut h = live_banned(Profile::Stn);
    let id = h.submit(short_task("a").retry_count(0));
    // DEAD at 0, LIVE one stagger (250 ms) later; nothing abandoned yet.
    h.advance(ms(1000));
    assert_eq!(raced_ips(&h), [ip(DEAD), ip(LIVE)], "dead first, live last");
    let (conn, _) = *connects(&h.log)
        .iter()
        .find(|(_, a)| a.ip() == ip(LIVE))
        .expect("a connect to the live endpoint");
    serve_short(&mut h, conn, "ok");
    assert!(h.outcome(id).is_ok());
}

#[test]
fn a_banned_endpoint_that_never_connected_stays_out() {
    let mut h = live_banned(Profile::Stn);
    // Ban the other one too, without a success: a black hole's record.
    let dead = SocketAddr::new(ip(DEAD), 80);
    for _ in 0..16 {
        if h.e.endpoint_history_mut().is_banned(h.now, dead) {
            break;
        }
        h.advance(secs(11));
        h.e.endpoint_history_mut().record(h.now, dead, false);
    }
    let mut three = h.e.config.short_link.ips.clone();
    three.push(ip("10.0.1.3"));
    h.e.config.short_link.ips = three;
    h.submit(short_task("a").retry_count(0));
    h.advance(secs(2));
    // 10.0.1.3 (no record) first; the proven LIVE after it; DEAD never.
    assert_eq!(raced_ips(&h), [ip("10.0.1.3"), ip(LIVE)]);
}

#[test]
fn mars_leaves_a_banned_endpoint_out() {
    let mut h = live_banned(Profile::Mars);
    h.submit(short_task("a").retry_count(0));
    h.advance(secs(30));
    assert_eq!(raced_ips(&h), [ip(DEAD)]);
}
