//! The scenario file's client names, as real clients on the kernel.

use std::time::Duration;

use stn_proto::Profile;

/// How the lab runs one of a scenario's clients for real.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RealClient {
    /// stn's [`Client`](stn_tokio::Client) with a profile; `tuned` applies the
    /// simulator's `stn-tuned` overrides.
    Engine {
        /// The engine profile.
        profile: Profile,
        /// `stn-tuned`.
        tuned: bool,
    },
    /// reqwest like OkHttp 2.x as benchmarked: a client per call,
    /// `Connection: close`, this connect timeout, 10 s read timeout.
    FreshPeer {
        /// 10 s (`okhttp-2017`) or 60 s (`okhttp-2017-60s`).
        connect_timeout: Duration,
    },
    /// reqwest like OkHttp 5 as recommended: one shared client with a
    /// connection pool, 10 s connect and read timeouts.
    PooledPeer,
}

/// The peers' connect timeout (OkHttp's default).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The connect timeout of OkHttp's published sensitivity runs.
const SENSITIVITY_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

impl RealClient {
    /// The real client for a (validated) scenario client name; `None` for
    /// the oracle, which is a bound with no real counterpart, and for the
    /// iOS peers, which need xnu's TCP stack.
    pub(super) fn for_name(name: &str) -> Option<RealClient> {
        let engine = |profile, tuned| Some(RealClient::Engine { profile, tuned });
        match name {
            "stn" => engine(Profile::Stn, false),
            "stn-tuned" => engine(Profile::Stn, true),
            "mars-2017" => engine(Profile::Mars2017, false),
            "mars" => engine(Profile::Mars, false),
            "okhttp-2017" => Some(RealClient::FreshPeer {
                connect_timeout: CONNECT_TIMEOUT,
            }),
            "okhttp-2017-60s" => Some(RealClient::FreshPeer {
                connect_timeout: SENSITIVITY_CONNECT_TIMEOUT,
            }),
            "okhttp-5" => Some(RealClient::PooledPeer),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_android_scenario_client_but_the_oracle_runs_for_real() {
        for (name, platform) in stn_sim::scenario::CLIENT_NAMES {
            let real = RealClient::for_name(name);
            let expected = name != "oracle" && platform != Some("ios");
            assert_eq!(real.is_some(), expected, "{name}");
        }
        assert_eq!(
            RealClient::for_name("mars-2017"),
            Some(RealClient::Engine {
                profile: Profile::Mars2017,
                tuned: false
            })
        );
    }
}
