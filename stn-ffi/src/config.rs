//! The client's configuration as one record ([`ClientConfig`]), checked and
//! turned into the Rust [`ClientBuilder`](stn_tokio::ClientBuilder).

use std::net::IpAddr;

use stn_tokio::proto;
use stn_tokio::proto::Duration;
use stn_tokio::ClientBuilder;

use crate::error::{ErrorKind, StnError};
use crate::tls::TlsConfig;

/// Which set of constants the engine runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum Profile {
    /// The constants Mars STN had in its 2017 benchmark.
    Mars2017,
    /// Today's Mars constants.
    Mars,
    /// stn's own defaults (the default): adaptive to the measured RTT and
    /// loss, each difference from Mars documented in `docs/profiles.md`.
    Stn,
}

/// Client-wide timeouts (a task's own deadlines are on the task).
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct Timeouts {
    /// The longest a TLS handshake may take after its TCP connect, in ms
    /// (`None`: 5 s).
    #[uniffi(default)]
    pub tls_handshake_ms: Option<u64>,
    /// The pause before retrying after a failure that was not a timeout, in
    /// ms (`None`: the profile's, 1 s in Mars).
    #[uniffi(default)]
    pub retry_interval_ms: Option<u64>,
    /// Each attempt's allowance before the server's cost, in ms, from which
    /// Mars's task timeout is computed (`None`: the profile's, 15 s).
    #[uniffi(default)]
    pub attempt_allowance_ms: Option<u64>,
}

/// Queues and budgets. Every value must be at least 1 (`None`: the default).
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct Limits {
    /// Received bytes the client holds across all connections (partial
    /// replies); readers wait when it is reached (default 72 MiB).
    #[uniffi(default)]
    pub read_budget_bytes: Option<u64>,
    /// Tasks the engine holds at once; more are refused.
    #[uniffi(default)]
    pub max_queued_tasks: Option<u32>,
    /// Tasks in flight on the long link at once.
    #[uniffi(default)]
    pub max_in_flight_long: Option<u32>,
    /// Sends waiting for the driver before `send` waits (default 1024).
    #[uniffi(default)]
    pub queue_capacity: Option<u32>,
    /// Pushes buffered for a listener before new ones are dropped (default 256).
    #[uniffi(default)]
    pub push_capacity: Option<u32>,
    /// Bytes of push bodies buffered for a listener (default 4 MiB).
    #[uniffi(default)]
    pub push_buffer_bytes: Option<u64>,
    /// Reports and statuses buffered for a listener before the oldest are
    /// dropped (default 1024).
    #[uniffi(default)]
    pub event_capacity: Option<u32>,
}

/// A fixed identify packet sent on every new long-link connection (for one
/// built per connection, give the client an `IdentifyHandler`).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct IdentifyPacket {
    /// Its command id.
    pub cmd_id: u32,
    /// Its body.
    pub body: Vec<u8>,
}

/// Everything a client is built from. Only `endpoints` and a port are
/// needed; the rest has the Rust client's defaults.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ClientConfig {
    /// IPs or host names, each optionally with its own short-link port:
    /// `10.0.0.1`, `::1`, `example.com`, `10.0.0.1:8080`, `[::1]:8080`,
    /// `example.com:8080`. Host names are resolved by the OS whenever the
    /// engine asks.
    pub endpoints: Vec<String>,
    /// The short-link (HTTP) port of the endpoints given without one.
    #[uniffi(default)]
    pub short_link_port: Option<u16>,
    /// The long link's ports, tried on every endpoint (none: no long link).
    #[uniffi(default)]
    pub long_link_ports: Vec<u16>,
    /// IPs tried after the endpoints.
    #[uniffi(default)]
    pub backup_ips: Vec<String>,
    /// The engine's constants (`None`: [`Profile::Stn`]).
    #[uniffi(default)]
    pub profile: Option<Profile>,
    /// TLS on both links (`None`: plain TCP).
    #[uniffi(default)]
    pub tls: Option<TlsConfig>,
    /// Client-wide timeouts.
    #[uniffi(default)]
    pub timeouts: Timeouts,
    /// Queues and budgets.
    #[uniffi(default)]
    pub limits: Limits,
    /// A fixed identify packet for every long-link connection.
    #[uniffi(default)]
    pub identify: Option<IdentifyPacket>,
    /// Hedge short-link requests (stn profile: a request unanswered for
    /// about 4 RTTs is sent once more on a fresh connection), for the tasks
    /// that allow it (`hedge` on the task: its replay is harmless). False
    /// turns hedging off for every task.
    #[uniffi(default = true)]
    pub hedge: bool,
    /// Seed of the engine's random choices.
    #[uniffi(default)]
    pub seed: u64,
}

/// A config error naming the field.
fn bad(field: &str, why: impl std::fmt::Display) -> StnError {
    StnError::new(ErrorKind::Config, format!("{field}: {why}"))
}

/// `n` as a count of at least 1.
fn count(field: &str, n: u64) -> Result<usize, StnError> {
    if n == 0 {
        return Err(bad(field, "must be at least 1"));
    }
    usize::try_from(n).map_err(|_| bad(field, format!("{n} does not fit this platform's usize")))
}

impl ClientConfig {
    /// The Rust builder this configuration makes (endpoints and names are
    /// checked again, and reported by name, when it builds).
    pub(crate) fn builder(self) -> Result<ClientBuilder, StnError> {
        let mut b = stn_tokio::Client::builder()
            .profile(match self.profile.unwrap_or(Profile::Stn) {
                Profile::Mars2017 => proto::Profile::Mars2017,
                Profile::Mars => proto::Profile::Mars,
                Profile::Stn => proto::Profile::Stn,
            })
            .seed(self.seed);
        for endpoint in &self.endpoints {
            b = b.endpoint(endpoint);
        }
        if let Some(port) = self.short_link_port {
            if port == 0 {
                return Err(bad("short_link_port", "0 is not a port"));
            }
            b = b.short_link_port(port);
        }
        for &port in &self.long_link_ports {
            if port == 0 {
                return Err(bad("long_link_ports", "0 is not a port"));
            }
            b = b.long_link_port(port);
        }
        let backups = self
            .backup_ips
            .iter()
            .map(|ip| {
                ip.parse::<IpAddr>()
                    .map_err(|_| bad("backup_ips", format!("{ip:?} is not an IP address")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        b = b.backup_ips(backups);
        if let Some(tls) = self.tls {
            b = tls.apply(b)?;
        }
        b = self.timeouts.apply(b);
        b = self.limits.apply(b)?;
        if let Some(packet) = self.identify {
            b = b.identify(packet.cmd_id, packet.body);
        }
        if !self.hedge {
            b = b.configure(|c| c.set_hedge(None));
        }
        Ok(b)
    }
}

impl Timeouts {
    fn apply(self, mut b: ClientBuilder) -> ClientBuilder {
        // Without TLS there is no handshake for it to bound.
        #[cfg(feature = "tls")]
        if let Some(ms) = self.tls_handshake_ms {
            b = b.tls_handshake_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = self.retry_interval_ms {
            b = b.configure(move |c| c.set_retry_interval(Duration::from_millis(ms)));
        }
        if let Some(ms) = self.attempt_allowance_ms {
            b = b.configure(move |c| c.timeouts_mut().task_read_write = Duration::from_millis(ms));
        }
        b
    }
}

impl Limits {
    fn apply(self, mut b: ClientBuilder) -> Result<ClientBuilder, StnError> {
        if let Some(n) = self.read_budget_bytes {
            b = b.read_budget(count("limits.read_budget_bytes", n)?);
        }
        if let Some(n) = self.max_queued_tasks {
            b = b.max_queued_tasks(count("limits.max_queued_tasks", n.into())?);
        }
        if let Some(n) = self.max_in_flight_long {
            b = b.max_in_flight_long(count("limits.max_in_flight_long", n.into())?);
        }
        if let Some(n) = self.queue_capacity {
            b = b.queue_capacity(count("limits.queue_capacity", n.into())?);
        }
        if let Some(n) = self.push_capacity {
            b = b.push_capacity(count("limits.push_capacity", n.into())?);
        }
        if let Some(n) = self.push_buffer_bytes {
            b = b.push_buffer_bytes(count("limits.push_buffer_bytes", n)?);
        }
        if let Some(n) = self.event_capacity {
            b = b.event_capacity(count("limits.event_capacity", n.into())?);
        }
        Ok(b)
    }
}
