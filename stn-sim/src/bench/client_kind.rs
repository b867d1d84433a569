//! Which client a run runs ([`ClientKind`]): its report name on each
//! platform, and how it is built for a run — the engine under a profile
//! ([`engine_client`]), a peer model ([`peer_client`]), with its TLS
//! ([`tls_config`]); the oracle is computed by the runner.

use std::net::SocketAddr;

use stn_proto::Duration;
use stn_proto::Profile;
use stn_proto::Rng;

use crate::bench::platform::Platform;
use crate::bench::run_spec::{candidate_ips, RunSpec, LONG_PORT, SERVER};
use crate::clients::peers::{NsUrlSession, OkHttp2017, OkHttp5};
use crate::clients::stn::{StnClient, StnClientConfig};
use crate::tls::TlsClientConfig;
use crate::workload::CallClient;

/// Which engine configuration a client runs.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineVariant {
    /// A profile's defaults (`stn`, `mars-2017` with banning off, `mars`).
    Profile(Profile),
    /// stn with overridden constants: **not** the default; labelled
    /// `stn-tuned` in every record.
    StnTuned,
}

/// A client of a run.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientKind {
    /// stn-proto's engine.
    Engine(EngineVariant),
    /// The platform's peer as benchmarked (NSURLSession per request on
    /// iOS; OkHttp 2.x per request on Android).
    PeerBenchmarked,
    /// OkHttp 2.x with the 60 s connect timeout of the published
    /// sensitivity runs (Android); NSURLSession as benchmarked on iOS.
    PeerSensitivity,
    /// The peer as its docs recommend: OkHttp 5 shared client (Android),
    /// NSURLSession shared session (iOS).
    PeerRecommended,
    /// The physical limit (peers.md §8.3), non-clairvoyant.
    Oracle,
}

impl ClientKind {
    /// `stn`.
    pub const STN: ClientKind = ClientKind::Engine(EngineVariant::Profile(Profile::Stn));
    /// `mars-2017`.
    pub const MARS_2017: ClientKind = ClientKind::Engine(EngineVariant::Profile(Profile::Mars2017));
    /// `mars`.
    pub const MARS: ClientKind = ClientKind::Engine(EngineVariant::Profile(Profile::Mars));
    /// `stn-tuned`.
    pub const STN_TUNED: ClientKind = ClientKind::Engine(EngineVariant::StnTuned);

    /// The report name on `platform`.
    pub fn name(&self, platform: Platform) -> &'static str {
        match (self, platform) {
            (ClientKind::Engine(EngineVariant::Profile(Profile::Stn)), _) => "stn",
            (ClientKind::Engine(EngineVariant::Profile(Profile::Mars2017)), _) => "mars-2017",
            (ClientKind::Engine(EngineVariant::Profile(Profile::Mars)), _) => "mars",
            (ClientKind::Engine(EngineVariant::StnTuned), _) => "stn-tuned",
            (ClientKind::PeerBenchmarked | ClientKind::PeerSensitivity, Platform::Ios) => {
                "nsurlsession"
            }
            (ClientKind::PeerBenchmarked, Platform::Android | Platform::Android65) => "okhttp-2017",
            (ClientKind::PeerSensitivity, Platform::Android | Platform::Android65) => {
                "okhttp-2017-60s"
            }
            (ClientKind::PeerRecommended, Platform::Ios) => "nsurlsession-shared",
            (ClientKind::PeerRecommended, Platform::Android | Platform::Android65) => "okhttp-5",
            (ClientKind::Oracle, _) => "oracle",
        }
    }
}

/// What `stn-tuned` changes, for the records' `note`.
pub const STN_TUNED_NOTE: &str = "TUNED, not the default: \
     timeouts.{wifi,mobile}.base_first_packet = 4 s (Mars: 12 s / 15 s; size term and max unchanged)";

/// The override of `stn-tuned`: the base of the first-packet timeout is
/// 4 s instead of Mars's 12 s
/// (Wi-Fi) / 15 s (mobile). The size term (`send_len / min_rate`) and the
/// cap stay, so large requests keep their allowance. Under heavy loss a TCP
/// exchange that has not answered within ~4 s is usually stuck in
/// exponential RTO back-off, and a fresh connection is faster; the cost is
/// for servers slower than 4 s, which must then set `server_process_cost`.
///
/// Under heavy loss it helps the short link and **hurts the long link** (a
/// first-packet timeout there drops the whole link), and it spends more
/// connection attempts (`stn-sim bench` prints `stn-tuned`'s targets beside
/// `stn`'s): the engine has one knob for both channels, so a per-channel
/// setting is what to adopt, not this.
pub fn stn_tuned_config(cfg: &mut stn_proto::Config) {
    cfg.timeouts_mut().wifi.base_first_packet = Duration::from_secs(4);
    cfg.timeouts_mut().mobile.base_first_packet = Duration::from_secs(4);
}

/// The TLS server name of the benchmark's service (tickets are kept per
/// name, so every endpoint of the service shares them).
pub const TLS_SERVER_NAME: &str = "hello.mars.example";

/// Whose TLS a client runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsOf {
    /// An engine client: stn's driver (resumption, 5 s handshake timeout),
    /// whatever the profile; `early_data`: the driver offers early data
    /// ([`engine_offers_early_data`]).
    Engine {
        /// Offer early data when a ticket allows it.
        early_data: bool,
    },
    /// A peer model: resumption; the handshake under the peer's own timers.
    Peer,
}

/// The TLS configuration of a client run as `of`.
pub fn tls_config(of: TlsOf) -> TlsClientConfig {
    match of {
        TlsOf::Engine { early_data } => {
            let mut c = TlsClientConfig::stn(TLS_SERVER_NAME);
            c.early_data = early_data;
            c
        }
        TlsOf::Peer => TlsClientConfig::peer(TLS_SERVER_NAME),
    }
}

/// Whether the driver of `client` offers TLS early data: its tasks allow
/// it (the calls are idempotent) and its profile sends early data (stn's
/// `engine.early_data`; the Mars profiles send none, so their driver offers
/// none and their handshakes stay those of early data off).
pub fn engine_offers_early_data(client: &StnClient) -> bool {
    let cfg = client.config();
    cfg.early_data && cfg.engine.profile() == Profile::Stn
}

/// The TLS side of an engine client.
pub(crate) fn engine_tls(client: &StnClient) -> TlsOf {
    TlsOf::Engine {
        early_data: engine_offers_early_data(client),
    }
}

/// Mars builds its smart heartbeat on Android only (`#ifdef ANDROID` in
/// `longlink.cc`): a Mars-profile client on iOS keeps the fixed interval.
/// stn's runs everywhere.
pub fn heartbeat_of_platform(engine: &mut stn_proto::Config, platform: Platform) {
    if platform == Platform::Ios && engine.profile() != Profile::Stn {
        engine.long_mut().heartbeat.smart = stn_proto::config::SmartHeartbeatConfig::Fixed;
    }
}

/// The engine client of `variant` for `spec` on `platform`.
pub fn engine_client(variant: &EngineVariant, platform: Platform, spec: &RunSpec) -> StnClient {
    let profile = match variant {
        EngineVariant::Profile(p) => *p,
        EngineVariant::StnTuned => Profile::Stn,
    };
    let name = ClientKind::Engine(variant.clone()).name(platform);
    let mut cfg = StnClientConfig::new(
        name,
        profile,
        candidate_ips(spec),
        SERVER.port(),
        spec.long_link.then_some(LONG_PORT),
        platform.stack(),
    );
    cfg.engine.set_seed(Rng::derive(spec.seed, 0xE6).next_u64());
    cfg.retry_count = spec.retry_count;
    // Against a keep-alive server the app asks for keep-alive (Mars's socket
    // pool); the published harness's server closed every connection.
    cfg.keep_alive = spec.keep_alive_server;
    cfg.early_data = spec.early_data;
    heartbeat_of_platform(&mut cfg.engine, platform);
    if *variant == EngineVariant::StnTuned {
        stn_tuned_config(&mut cfg.engine);
    }
    let early = cfg.early_data;
    let client = StnClient::new(cfg);
    // The attempt reports say which requests went early (the records'
    // `early_sends`).
    if early {
        client.keep_reports()
    } else {
        client
    }
}

/// The peer client of `kind` on `platform` for `spec` (any kind that is
/// neither an engine nor the oracle).
pub fn peer_client(kind: &ClientKind, platform: Platform, spec: &RunSpec) -> Box<dyn CallClient> {
    let routes: Vec<SocketAddr> = candidate_ips(spec)
        .into_iter()
        .map(|ip| SocketAddr::new(ip, SERVER.port()))
        .collect();
    match (kind, platform) {
        (ClientKind::PeerBenchmarked | ClientKind::PeerSensitivity, Platform::Ios) => {
            // One IP literal as benchmarked; with dead endpoints, the
            // resolver's whole answer (the model tries routes in order).
            let mut cfg = NsUrlSession::benchmarked_config(SERVER);
            if !spec.candidates.is_empty() {
                cfg.routes = routes;
            }
            Box::new(crate::clients::peers::PeerClient::new(cfg))
        }
        (ClientKind::PeerSensitivity, _) => {
            Box::new(OkHttp2017::sensitivity(SERVER, platform.kernel()))
        }
        (ClientKind::PeerRecommended, Platform::Ios) => Box::new(NsUrlSession::recommended(routes)),
        (ClientKind::PeerRecommended, _) => {
            Box::new(OkHttp5::recommended(routes, platform.kernel()))
        }
        _ => Box::new(OkHttp2017::benchmarked(SERVER, platform.kernel())),
    }
}
