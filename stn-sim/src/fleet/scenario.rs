//! Fleet scenario files (TOML), run by `stn-sim fleet --scenario F.toml`.
//!
//! Unknown keys are errors. The built-in scenario,
//! `stn-sim/scenarios/fleet.toml` ([`DEFAULT_FLEET_SCENARIO`]), shows and
//! explains every key; docs/fleet.md describes the model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stn_proto::{Duration, Instant};

use crate::listen::Capacity;

/// The built-in scenario's text.
pub const DEFAULT_FLEET_SCENARIO: &str = include_str!("../../scenarios/fleet.toml");

/// The kinds of client a fleet can be made of.
pub const KINDS: [&str; 4] = ["stn", "mars", "mars-2017", "okhttp-5"];

/// A scenario that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FleetScenarioError {
    /// Not TOML, or not this format.
    #[error("fleet scenario: {0}")]
    Parse(#[from] toml::de::Error),
    /// Parsed, but inconsistent.
    #[error("fleet scenario: {0}")]
    Invalid(String),
}

/// One group of clients.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// How many clients.
    pub clients: u32,
    /// The whole group sits behind one carrier-grade NAT: one source
    /// address for all its clients (default: an address each).
    #[serde(default)]
    pub cgnat: bool,
    /// The group's kind in the mixed fleet (default: drawn from `[mix]`).
    #[serde(default)]
    pub mixed_kind: Option<String>,
}

/// The server's capacity, as written.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    /// Half-open connections kept.
    pub syn_backlog: u32,
    /// Completed connections waiting for accept (default: `syn_backlog`).
    #[serde(default)]
    pub accept_backlog: Option<u32>,
    /// Connections accepted per second.
    pub accept_rate: f64,
    /// Server CPU per accepted connection, microseconds.
    #[serde(default)]
    pub handshake_cost_us: u64,
    /// Server CPU per TLS handshake (ClientHello answered), milliseconds.
    #[serde(default)]
    pub tls_cost_ms: f64,
    /// CPU workers sharing the handshake work (default 1).
    #[serde(default)]
    pub workers: Option<u32>,
}

/// What goes wrong, and when.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum OutageKind {
    /// Every client's access link loses every packet.
    Partition,
    /// The server host is down: it forgets its connections and drops every
    /// segment.
    ServerDown,
}

/// The outage, as written.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OutageFile {
    /// Partition or server down.
    pub kind: OutageKind,
    /// Start, seconds.
    pub from_s: f64,
    /// End, seconds.
    pub until_s: f64,
}

/// The call schedule, as written.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CallsFile {
    /// The earliest call, seconds.
    pub from_s: f64,
    /// The latest call (exclusive), seconds.
    pub until_s: f64,
    /// After a failed call the app calls again this many seconds later.
    pub retry_after_s: f64,
    /// Calls per client at most (the first and its retries).
    pub max_calls: u32,
}

/// A fleet scenario, as written.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FleetScenario {
    /// Name in the report.
    pub name: String,
    /// Root seed.
    #[serde(default = "one")]
    pub seed: u64,
    /// The fleets to run, each alone against its own copy of the server:
    /// the kinds of [`KINDS`] or `mixed`.
    pub fleets: Vec<String>,
    /// Virtual seconds simulated at most.
    pub horizon_s: f64,
    /// TLS 1.3 on every connection.
    #[serde(default)]
    pub tls: bool,
    /// Clients call on stn's long link (engines only; default short link).
    #[serde(default)]
    pub long_link: bool,
    /// The server keeps connections alive (default true).
    #[serde(default = "yes")]
    pub keep_alive_server: bool,
    /// How many times the resolver answers the server's one address.
    #[serde(default = "one_usize")]
    pub dns_copies: usize,
    /// Width of the time series' bins, milliseconds (default 1000).
    #[serde(default = "second_ms")]
    pub bin_ms: u64,
    /// The clients.
    #[serde(rename = "group")]
    pub groups: Vec<Group>,
    /// Weights of the kinds in the mixed fleet (default: equal).
    #[serde(default)]
    pub mix: BTreeMap<String, u32>,
    /// The server.
    pub server: ServerFile,
    /// The outage.
    pub outage: OutageFile,
    /// The calls.
    pub calls: CallsFile,
}

fn one() -> u64 {
    1
}
fn one_usize() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn second_ms() -> u64 {
    1000
}

fn at(s: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(s.max(0.0))
}

impl FleetScenario {
    /// Parses and checks `text`.
    pub fn parse(text: &str) -> Result<Self, FleetScenarioError> {
        let s: FleetScenario = toml::from_str(text)?;
        s.check()?;
        Ok(s)
    }

    /// The built-in scenario.
    pub fn builtin() -> Self {
        // The file is part of the crate and checked by its tests.
        Self::parse(DEFAULT_FLEET_SCENARIO).unwrap_or_else(|e| panic!("{e}"))
    }

    fn check(&self) -> Result<(), FleetScenarioError> {
        let bad = |m: String| Err(FleetScenarioError::Invalid(m));
        for f in &self.fleets {
            if f != "mixed" && !KINDS.contains(&f.as_str()) {
                return bad(format!(
                    "unknown fleet {f:?} (one of {KINDS:?} or \"mixed\")"
                ));
            }
        }
        let kinds = self
            .mix
            .keys()
            .chain(self.groups.iter().filter_map(|g| g.mixed_kind.as_ref()));
        for k in kinds {
            if !KINDS.contains(&k.as_str()) {
                return bad(format!("unknown client kind {k:?} (one of {KINDS:?})"));
            }
        }
        if !self.mix.is_empty() && self.mix.values().all(|w| *w == 0) {
            return bad("[mix] has no positive weight".into());
        }
        if self.clients() == 0 {
            return bad("no clients".into());
        }
        let o = &self.outage;
        if !(0.0 <= o.from_s && o.from_s <= o.until_s && o.until_s <= self.horizon_s) {
            return bad("outage: need 0 <= from_s <= until_s <= horizon_s".into());
        }
        let c = &self.calls;
        if !(0.0 <= c.from_s && c.from_s <= c.until_s && c.until_s <= self.horizon_s) {
            return bad("calls: need 0 <= from_s <= until_s <= horizon_s".into());
        }
        if self.server.accept_rate <= 0.0 || self.server.syn_backlog == 0 {
            return bad("server: accept_rate and syn_backlog must be positive".into());
        }
        if c.retry_after_s < 0.0 || c.max_calls == 0 {
            return bad("calls: need retry_after_s >= 0 and max_calls >= 1".into());
        }
        if self.bin_ms == 0 {
            return bad("bin_ms must be positive".into());
        }
        Ok(())
    }

    /// Clients in all groups.
    pub fn clients(&self) -> u64 {
        self.groups.iter().map(|g| u64::from(g.clients)).sum()
    }

    /// Scales every group so that the fleet has about `total` clients
    /// (each group at least one).
    pub fn scale_to(&mut self, total: u64) {
        let now = self.clients().max(1) as f64;
        for g in &mut self.groups {
            let n = (f64::from(g.clients) * total as f64 / now).round();
            g.clients = (n as u32).max(1);
        }
    }

    /// The server's capacity.
    pub fn capacity(&self) -> Capacity {
        let s = &self.server;
        Capacity {
            syn_backlog: s.syn_backlog,
            accept_backlog: s.accept_backlog.unwrap_or(s.syn_backlog),
            accept_rate: s.accept_rate,
            handshake_cost: Duration::from_micros(s.handshake_cost_us),
            tls_cost: Duration::from_secs_f64(s.tls_cost_ms.max(0.0) / 1e3),
            workers: s.workers.unwrap_or(1).max(1),
        }
    }

    /// The outage's start and end.
    pub fn outage_window(&self) -> (Instant, Instant) {
        (at(self.outage.from_s), at(self.outage.until_s))
    }

    /// The call schedule's window.
    pub fn call_window(&self) -> (Instant, Instant) {
        (at(self.calls.from_s), at(self.calls.until_s))
    }

    /// The end of the simulation at the latest.
    pub fn horizon(&self) -> Instant {
        at(self.horizon_s)
    }

    /// The weights of the mixed fleet, in [`KINDS`] order.
    pub fn mix_weights(&self) -> Vec<(&'static str, u32)> {
        KINDS
            .iter()
            .map(|k| {
                let w = if self.mix.is_empty() {
                    1
                } else {
                    self.mix.get(*k).copied().unwrap_or(0)
                };
                (*k, w)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_scenario_parses_and_typos_do_not() {
        let s = FleetScenario::builtin();
        assert_eq!(s.clients(), 10_000);
        assert_eq!(s.capacity().accept_rate, 2000.0);
        let typo = DEFAULT_FLEET_SCENARIO.replace("syn_backlog", "syn_backlg");
        assert!(FleetScenario::parse(&typo).is_err());
        let fleet = DEFAULT_FLEET_SCENARIO.replace("\"okhttp-5\", \"mixed\"", "\"okhttp\"");
        assert!(FleetScenario::parse(&fleet).is_err());
    }
}
