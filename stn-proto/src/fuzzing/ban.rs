//! The endpoint history / ban op-sequence target.

use arbitrary::{Arbitrary, Unstructured};

use crate::ban::{BanConfig, EndpointHistory};
use crate::net::{IpAddr, SocketAddr};
use crate::profile::Profile;
use crate::rng::Rng;
use crate::time::{Duration, Instant};

/// Wall-clock seconds matching `Instant::ZERO` in this target.
const WALL_ORIGIN: u64 = 1_700_000_000;

#[derive(Arbitrary, Debug)]
struct BanInput {
    profile: ProfileChoice,
    disabled: bool,
    tweak: Option<Tweak>,
    rng_seed: u64,
    ops: Vec<BanOp>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ProfileChoice {
    Mars2017,
    Mars,
    Stn,
}

/// Small caps and odd rule constants, to reach eviction and edge cases.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Tweak {
    fail_count: u8,
    window: u8,
    max_entries: u8,
    max_networks: u8,
    update_interval_secs: u8,
}

#[derive(Arbitrary, Debug, Clone)]
enum BanOp {
    /// A connection outcome, some time after the previous op.
    Record { addr: u8, ok: bool, step: Step },
    /// The server asks to ban an IP for some minutes.
    ServerBan { addr: u8, minutes: u8 },
    /// A probe says the IP works again.
    RemoveIp { addr: u8 },
    /// Order a candidate list (pool indices).
    Order { candidates: Vec<u8> },
    /// Query one endpoint (ban state, expiry).
    Query { addr: u8 },
    /// Join a network (label from a small set).
    Switch { label: u8 },
    /// Network change without a label.
    Reset,
    /// Time passes.
    Advance { step: Step },
    /// Export, import into a fresh history, compare.
    RoundTrip { wall_offset: u32 },
    /// Import arbitrary bytes.
    ImportRaw { bytes: Vec<u8> },
    /// Import arbitrary content behind a valid magic, version and checksum.
    ImportChecksummed { body: Vec<u8> },
    /// Import our own export with one byte changed.
    ImportFlipped { at: u16, xor: u8 },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Step {
    Secs(u8),
    Minutes(u8),
    Hours(u8),
}

impl Step {
    fn duration(self) -> Duration {
        match self {
            Step::Secs(s) => Duration::from_secs(u64::from(s)),
            Step::Minutes(m) => Duration::from_secs(60 * u64::from(m)),
            Step::Hours(h) => Duration::from_secs(3600 * u64::from(h % 32)),
        }
    }
}

/// Eight endpoints: IPv4 with two ports on one IP, IPv6, and an IPv4-mapped
/// IPv6 address that is the same IP as entry 0 after canonicalisation.
fn pool(i: u8) -> SocketAddr {
    let (ip, port) = match i % 8 {
        0 => (IpAddr::from([10, 0, 0, 1]), 443),
        1 => (IpAddr::from([10, 0, 0, 1]), 80),
        2 => (IpAddr::from([10, 0, 0, 2]), 443),
        3 => (IpAddr::from([10, 0, 0, 3]), 443),
        4 => (IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]), 443),
        5 => (IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, 2]), 443),
        6 => (IpAddr::from([0, 0, 0, 0, 0, 0xffff, 0x0a00, 0x0001]), 443),
        _ => (IpAddr::from([10, 0, 0, 4]), 8080),
    };
    SocketAddr::new(ip, port)
}

fn label(i: u8) -> String {
    match i % 6 {
        0 => String::new(),
        1 => "wifi:home".into(),
        2 => "wifi:office".into(),
        3 => "mobile:46000".into(),
        4 => "caf\u{e9}".into(),
        // Longer than the persisted maximum: kept in memory, not exported.
        _ => "x".repeat(300),
    }
}

fn config_for(input: &BanInput) -> BanConfig {
    let profile = match input.profile {
        ProfileChoice::Mars2017 => Profile::Mars2017,
        ProfileChoice::Mars => Profile::Mars,
        ProfileChoice::Stn => Profile::Stn,
    };
    let mut c = BanConfig::for_profile(profile);
    c.enabled = !input.disabled;
    if let Some(t) = input.tweak {
        c.fail_count = t.fail_count % 10;
        c.window = t.window % 10;
        c.max_entries = usize::from(t.max_entries % 10);
        c.max_networks = usize::from(t.max_networks % 5);
        let interval = Duration::from_secs(u64::from(t.update_interval_secs % 30));
        c.success_update_interval = interval;
        c.fail_update_interval = interval;
    }
    c
}

/// Runs an arbitrary op list against an [`EndpointHistory`] and checks:
/// - `order`: never empty for a non-empty input; a sub-multiset of the input;
///   no banned endpoint unless all are banned, and then exactly the ones
///   whose ban ends soonest; otherwise exactly the unbanned multiset;
///   deterministic for the same RNG state;
/// - bans: `is_banned` agrees with `ban_until`, which is in the future and
///   at which the ban is over; `next_expiry` is set exactly when something is
///   banned and is no later than any ban's end; nothing is banned when banning
///   is disabled;
/// - memory: at most `max_entries` endpoints remembered;
/// - persistence: export → import into a fresh history on the same network
///   → export gives the same bytes; an import that fails (raw bytes,
///   checksummed garbage, a flipped byte) changes nothing; imports never
///   panic.
pub fn ban_ops(data: &[u8]) {
    if let Ok(input) = BanInput::arbitrary_take_rest(Unstructured::new(data)) {
        run(&input);
    }
}

/// What a run exercised, for choosing seeds.
#[derive(Debug, Default)]
struct Seen {
    history_ban: bool,
    all_banned_order: bool,
    server_ban: bool,
    switch: bool,
    import_ok: bool,
}

fn run(input: &BanInput) -> Seen {
    let mut seen = Seen::default();
    let config = config_for(input);
    let mut history = EndpointHistory::new(config.clone());
    let mut rng = Rng::new(input.rng_seed);
    let mut now = Instant::from_secs(1000);

    for op in input.ops.iter().take(300) {
        match op {
            BanOp::Record { addr, ok, step } => {
                now += step.duration();
                let addr = pool(*addr);
                let recorded = history.record(now, addr, *ok);
                seen.history_ban |=
                    history.endpoint(addr).is_some() && history.is_banned(now, addr) && !*ok;
                if recorded {
                    let stats = history.endpoint(addr).expect("recorded endpoint is kept");
                    assert_eq!(stats.records & 1 == 1, !*ok, "newest bit is not the result");
                    assert_eq!(stats.history & 1 == 1, !*ok);
                    if *ok {
                        assert_eq!(stats.last_success, Some(now));
                    } else {
                        assert_eq!(stats.last_fail, Some(now));
                    }
                }
            }
            BanOp::ServerBan { addr, minutes } => {
                let d = Duration::from_secs(60 * u64::from(*minutes));
                history.server_ban(now, pool(*addr).ip(), d);
                seen.server_ban = true;
                // The pool has 6 distinct IPs; below that the cap may drop
                // this (shortest) ban at once, as documented.
                if config.enabled && *minutes > 0 && config.max_entries >= 6 {
                    assert!(
                        history.is_banned(now, pool(*addr)),
                        "server ban not in force"
                    );
                }
            }
            BanOp::RemoveIp { addr } => {
                let ip = pool(*addr).ip().to_canonical();
                history.remove_ip(ip);
                for i in 0..8 {
                    if pool(i).ip().to_canonical() == ip {
                        assert_eq!(history.endpoint(pool(i)), None);
                    }
                }
            }
            BanOp::Order { candidates } => {
                let candidates: Vec<SocketAddr> =
                    candidates.iter().take(16).map(|&i| pool(i)).collect();
                let all_banned =
                    !candidates.is_empty() && candidates.iter().all(|a| history.is_banned(now, *a));
                seen.all_banned_order |= all_banned;
                check_order(&history, now, &candidates, &mut rng);
            }
            BanOp::Query { addr } => check_ban(&history, now, pool(*addr)),
            BanOp::Switch { label: l } => {
                history.switch_network(now, &label(*l));
                seen.switch = true;
                assert_eq!(history.network_label(), label(*l));
            }
            BanOp::Reset => history.reset(now),
            BanOp::Advance { step } => now += step.duration(),
            BanOp::RoundTrip { wall_offset } => {
                let wall = WALL_ORIGIN + u64::from(*wall_offset);
                round_trip(&history, now, wall);
            }
            BanOp::ImportRaw { bytes } => {
                seen.import_ok |= import_checked(&mut history, bytes, now);
            }
            BanOp::ImportChecksummed { body } => {
                let mut bytes = b"STNH\x01".to_vec();
                bytes.extend_from_slice(body);
                let sum = fnv1a(&bytes);
                bytes.extend_from_slice(&sum.to_be_bytes());
                seen.import_ok |= import_checked(&mut history, &bytes, now);
            }
            BanOp::ImportFlipped { at, xor } => {
                let wall = wall_at(now);
                let mut bytes = history.export(wall);
                let i = usize::from(*at) % bytes.len();
                bytes[i] ^= xor;
                import_checked(&mut history, &bytes, now);
            }
        }
        assert!(
            history.len() <= config.max_entries.max(1),
            "too many entries"
        );
        for i in 0..8 {
            check_ban(&history, now, pool(i));
        }
        check_expiry(&history, now);
    }
    let all: Vec<SocketAddr> = (0..8).map(pool).collect();
    check_order(&history, now, &all, &mut rng);
    round_trip(&history, now, wall_at(now));
    seen
}

/// The wall clock matching `now` (one second of wall time per second).
fn wall_at(now: Instant) -> u64 {
    WALL_ORIGIN + now.since_origin().as_secs()
}

fn check_order(history: &EndpointHistory, now: Instant, candidates: &[SocketAddr], rng: &mut Rng) {
    let mut replay = rng.clone();
    let out = history.order(now, candidates, rng);
    assert_eq!(
        out,
        history.order(now, candidates, &mut replay),
        "order not deterministic"
    );
    if candidates.is_empty() {
        assert!(out.is_empty());
        return;
    }
    assert!(!out.is_empty(), "order emptied a non-empty list");
    let ends: Vec<Option<Instant>> = candidates
        .iter()
        .map(|a| history.ban_until(now, *a))
        .collect();
    let unbanned: Vec<SocketAddr> = candidates
        .iter()
        .zip(&ends)
        .filter(|(_, e)| e.is_none())
        .map(|(a, _)| *a)
        .collect();
    let expected = if unbanned.is_empty() {
        let soonest = ends.iter().flatten().min().copied();
        candidates
            .iter()
            .zip(&ends)
            .filter(|(_, e)| **e == soonest)
            .map(|(a, _)| *a)
            .collect()
    } else {
        unbanned
    };
    let (mut got, mut want) = (out.clone(), expected);
    got.sort();
    want.sort();
    assert_eq!(
        got, want,
        "order kept the wrong endpoints: {candidates:?} -> {out:?}"
    );
}

fn check_ban(history: &EndpointHistory, now: Instant, addr: SocketAddr) {
    let until = history.ban_until(now, addr);
    assert_eq!(history.is_banned(now, addr), until.is_some());
    if !history.config().enabled {
        assert_eq!(until, None, "banned while banning is disabled");
    }
    if let Some(end) = until {
        assert!(end > now, "ban ends in the past");
        assert!(
            !history.is_banned(end, addr),
            "ban still in force at its end"
        );
        let next = history.next_expiry(now).expect("a ban but no next expiry");
        assert!(
            next > now && next <= end,
            "next expiry {next:?} after a ban end {end:?}"
        );
    }
}

fn check_expiry(history: &EndpointHistory, now: Instant) {
    let any_banned = (0..8).any(|i| history.is_banned(now, pool(i)));
    assert_eq!(
        history.next_expiry(now).is_some(),
        any_banned,
        "next_expiry disagrees with the bans"
    );
}

/// Export, import into a fresh history on the same network, export again.
fn round_trip(history: &EndpointHistory, now: Instant, wall: u64) {
    let bytes = history.export(wall);
    let mut copy = EndpointHistory::new(history.config().clone());
    copy.switch_network(now, history.network_label());
    copy.import(&bytes, wall, now).expect("own export imports");
    assert_eq!(
        copy.export(wall),
        bytes,
        "export -> import -> export differs"
    );
}

/// Imports `bytes`; on error nothing may change. Returns whether it worked.
fn import_checked(history: &mut EndpointHistory, bytes: &[u8], now: Instant) -> bool {
    let wall = wall_at(now);
    let before = history.export(wall);
    let len = history.len();
    match history.import(bytes, wall, now) {
        Ok(accepted) => {
            assert!(accepted <= crate::ban::MAX_IMPORT_ENTRIES);
            true
        }
        Err(_) => {
            assert_eq!(
                history.export(wall),
                before,
                "failed import changed the history"
            );
            assert_eq!(history.len(), len);
            false
        }
    }
}

/// FNV-1a 32, the persisted format's checksum.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// What an input exercises, for choosing seeds.
fn classify(data: &[u8]) -> Option<String> {
    let input = BanInput::arbitrary_take_rest(Unstructured::new(data)).ok()?;
    let seen = run(&input);
    let mut tags = Vec::new();
    for (on, tag) in [
        (seen.history_ban, "banned"),
        (seen.all_banned_order, "allbanned"),
        (seen.server_ban, "serverban"),
        (seen.switch, "switch"),
        (seen.import_ok, "import"),
    ] {
        if on {
            tags.push(tag);
        }
    }
    if tags.is_empty() {
        return None;
    }
    let profile = format!("{:?}", input.profile).to_lowercase();
    Some(format!("{profile}_{}", tags.join("_")))
}

/// Seed inputs: byte strings chosen so that every profile is seen with
/// history bans, everything banned, server bans, network switches and
/// successful imports. Random bytes rarely ban (three spaced failures of one
/// endpoint), so the search also tries inputs made of repeated short
/// patterns.
pub(super) fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut seen = std::collections::BTreeMap::new();
    let random = super::random_inputs(0x4241_4e53, 3000, 400);
    let patterns = super::random_inputs(0x5041_5454, 3000, 24).map(|p| p.repeat(12));
    for bytes in random.chain(patterns) {
        if let Some(class) = classify(&bytes) {
            seen.entry(class).or_insert(bytes);
        }
    }
    // The richest inputs first, at most 20.
    let mut seeds: Vec<(String, Vec<u8>)> = seen.into_iter().collect();
    seeds.sort_by_key(|(name, _)| core::cmp::Reverse(name.matches('_').count()));
    seeds.truncate(20);
    seeds
}
