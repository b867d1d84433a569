//! Per-network learning through the engine: the network's label, the smart
//! heartbeat's records across export and import and across disabling the
//! long link.

use super::*;
use crate::ImportError;

/// A stn engine with a long link on the network "wifi:a", in the
/// background, its long link up.
fn background_on(label: &str) -> (H, LongServer) {
    let mut h = H::new(long_cfg(Profile::Stn));
    h.e.set_network_label(h.now, label);
    h.drain();
    let s = long_up(&mut h);
    h.e.set_foreground(h.now, false);
    h.drain();
    (h, s)
}

/// A fresh stn engine that imported `saved` at wall-clock `wall`, on the
/// network `label`, its long link up.
fn imported_on(saved: &[u8], wall: u64, label: &str) -> H {
    let mut h = H::new(long_cfg(Profile::Stn));
    h.e.import_history(saved, wall, h.now).expect("imports");
    h.e.set_network_label(h.now, label);
    h.drain();
    long_up(&mut h);
    h
}

/// Waits for the next noop and answers it.
fn answer_next_noop(h: &mut H, s: &mut LongServer) {
    for _ in 0..1000 {
        let out = h.advance(secs(1));
        if s.frames(&out).iter().any(Frame::is_noop) {
            reply(h, s, Frame::noop());
            return;
        }
    }
    panic!("no noop: {:?}", h.log);
}

#[test]
fn the_label_switches_the_endpoint_history_and_names_the_record() {
    let (h, _) = background_on("wifi:a");
    assert_eq!(h.e.endpoint_history().network_label(), "wifi:a");
    let st = h.e.heartbeat_state().expect("a record once connected");
    assert_eq!(st.network, "wifi:a");
    assert_eq!(
        (st.learned, st.stable),
        (secs(270), false),
        "the first probe"
    );
}

#[test]
fn a_learned_interval_survives_export_and_import() {
    let (mut h, mut s) = background_on("wifi:a");
    answer_next_noop(&mut h, &mut s);
    assert_eq!(
        h.e.heartbeat_state().map(|st| st.learned),
        Some(ms(337_500))
    );
    let saved = h.e.export_history(1_700_000_000);
    // Another engine, days later on the wall clock.
    let fresh = imported_on(&saved, 1_700_000_000 + 3 * 86_400, "wifi:a");
    let st = fresh.e.heartbeat_state().expect("state");
    assert_eq!((st.network.as_str(), st.learned), ("wifi:a", ms(337_500)));
    // Another network starts from nothing.
    let other = imported_on(&saved, 1_700_000_000, "mobile:b");
    assert_eq!(
        other.e.heartbeat_state().map(|st| st.learned),
        Some(secs(270))
    );
}

#[test]
fn an_endpoint_history_alone_still_imports() {
    let (h, _) = background_on("wifi:a");
    let v1 = h.e.endpoint_history().export(1_700_000_000);
    assert_eq!(v1[4], 1, "version 1");
    let mut fresh = H::new(long_cfg(Profile::Stn));
    assert!(fresh
        .e
        .import_history(&v1, 1_700_000_000, fresh.now)
        .is_ok());
    // And the endpoint history reads the engine's file, skipping its section.
    let v2 = h.e.export_history(1_700_000_000);
    assert_eq!(v2[4], 2, "version 2");
    let mut history = EndpointHistory::new(crate::ban::BanConfig::default());
    assert!(history.import(&v2, 1_700_000_000, T0).is_ok());
}

#[test]
fn a_malformed_heartbeat_section_changes_nothing() {
    let (mut h, mut s) = background_on("wifi:a");
    answer_next_noop(&mut h, &mut s);
    let good = h.e.export_history(1_700_000_000);
    let bad = h.e.endpoint_history().export_with_sections(
        1_700_000_000,
        &[(crate::ban::SECTION_HEARTBEAT, vec![2, 5, 1])],
    );
    let mut fresh = H::new(long_cfg(Profile::Stn));
    let before = fresh.e.export_history(1_700_000_000);
    assert_eq!(
        fresh.e.import_history(&bad, 1_700_000_000, fresh.now),
        Err(ImportError::BadSection(crate::ban::SECTION_HEARTBEAT))
    );
    assert_eq!(fresh.e.export_history(1_700_000_000), before);
    assert!(fresh
        .e
        .import_history(&good, 1_700_000_000, fresh.now)
        .is_ok());
}

#[test]
fn disabling_the_long_link_keeps_what_its_heartbeat_learned() {
    let (mut h, mut s) = background_on("wifi:a");
    answer_next_noop(&mut h, &mut s);
    h.e.set_long_link_enabled(h.now, false);
    h.drain();
    // While disabled the records are still exported.
    let saved = h.e.export_history(1_700_000_000);
    let fresh = imported_on(&saved, 1_700_000_000, "wifi:a");
    assert_eq!(
        fresh.e.heartbeat_state().map(|st| st.learned),
        Some(ms(337_500))
    );
    // And the link enabled again starts from them.
    h.e.set_long_link_enabled(h.now, true);
    h.drain();
    let c = connects(&h.log);
    let (conn, _) = *c
        .iter()
        .rev()
        .find(|(_, a)| a.port() == 8080)
        .expect("reconnect");
    h.ev(conn, ConnEvent::Connected);
    assert_eq!(
        h.e.heartbeat_state().map(|st| st.learned),
        Some(ms(337_500))
    );
}

#[test]
fn the_mars_profile_learns_nothing_without_a_label() {
    let mut h = H::new(long_cfg(Profile::Mars));
    long_up(&mut h);
    assert_eq!(
        h.e.heartbeat_state(),
        None,
        "Mars: an empty net label clears the record"
    );
    let mut f = H::new(long_cfg(Profile::Mars2017));
    long_up(&mut f);
    assert_eq!(f.e.heartbeat_state(), None, "mars-2017: a fixed interval");
}
