//! How many candidates a short-link race gets (`Engine::short_race_width`):
//! a race that goes round until the deadline (stn) reaches every candidate,
//! a one-pass race (Mars) keeps `max_candidates`.

use super::*;

/// Six fixed IPs on port 80, five candidates per race.
fn six_ips(profile: Profile) -> Config {
    let ips = (1..=6).map(|i| ip(&format!("10.0.1.{i}")));
    let mut c = Config::for_profile(profile).short_link_ips(ips, 80);
    c.max_candidates = 5;
    c.hedge = None;
    c
}

/// The distinct addresses the task's race connects to while nothing answers,
/// over `span`.
fn raced(profile: Profile, span: Duration) -> BTreeSet<SocketAddr> {
    let mut h = H::new(six_ips(profile));
    // One attempt: a retry would race a fresh shuffle.
    h.submit(short_task("a").retry_count(0));
    h.advance(span);
    connects(&h.log).into_iter().map(|(_, a)| a).collect()
}

#[test]
fn a_cycling_stn_race_reaches_the_sixth_candidate() {
    // stn starts a fresh address 250 ms apart (no RTT hint) into 3 slots
    // and frees a slot per abandon (1.6 s after a start): all six by 2.1 s,
    // though `max_candidates` is 5.
    let got = raced(Profile::Stn, secs(3));
    assert_eq!(got.len(), 6, "every candidate raced: {got:?}");
}

#[test]
fn a_one_pass_mars_race_keeps_its_five() {
    // Mars races five (starts at 0, 2.5, 5, 10, 12.5 s) and gives up.
    let got = raced(Profile::Mars, secs(30));
    assert_eq!(got.len(), 5, "Mars's cut kept: {got:?}");
}

#[test]
fn a_pooled_connection_beyond_the_fifth_candidate_is_reused() {
    // The pool is searched for the race's candidates: with every candidate
    // in the race, an idle connection to any of them is found, wherever the
    // history ordered its address.
    let mut h = H::new(six_ips(Profile::Stn));
    let mut pooled = Vec::new();
    for body in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        let before = connects(&h.log).len();
        let id = h.submit(keep_alive_task(body));
        let fresh = connects(&h.log)[before..].to_vec();
        let conn = match fresh.first() {
            Some((conn, _)) => {
                h.ev(*conn, ConnEvent::Connected);
                *conn
            }
            None => *pooled.last().expect("a pooled connection is reused"),
        };
        h.ev(conn, ConnEvent::Received(ok_http("x")));
        assert!(h.outcome(id).is_ok());
        pooled.push(conn);
        h.advance(ms(10));
    }
    // One connection served every task: each later one took it from the pool.
    let first = pooled[0];
    assert!(pooled.iter().all(|c| *c == first), "reused: {pooled:?}");
}
