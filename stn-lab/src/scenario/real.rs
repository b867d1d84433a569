//! The kernel's side of a scenario: one client's workload on real sockets
//! in the client namespace, through the link emulator.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use stn_proto::Channel;
use stn_sim::bench::client_kind::stn_tuned_config;
use stn_sim::scenario::{Scenario, WorkloadKind};

use super::super::calls::{self, CallRecord, CallShape, StnCall};
use super::super::emulator::{EmulatorStats, LinkEmulator};
use super::clients::RealClient;
use super::summary::RunSummary;

/// A single call's cap (the simulator's single-call limit).
const SINGLE_CAP: Duration = Duration::from_secs(300);

/// Everything one real run needs.
#[derive(Clone, Debug)]
pub(super) struct RealRun {
    /// The scenario.
    pub(super) scenario: Arc<Scenario>,
    /// Its client name (for labels) and how to run it.
    pub(super) name: String,
    /// How to run it.
    pub(super) client: RealClient,
    /// The emulator, whose path this run restarts at its t = 0.
    pub(super) emulator: Arc<LinkEmulator>,
    /// The reference server's short link.
    pub(super) server: SocketAddr,
    /// Its long link (every scenario lab serves one).
    pub(super) long: Option<SocketAddr>,
    /// Loss and jitter seed of the emulator for this run.
    pub(super) seed: u64,
    /// Cap on one call of a sequential workload.
    pub(super) call_cap: Duration,
    /// Cap on the whole run: a series still short of its successes then
    /// stops, not ok.
    pub(super) run_budget: Duration,
}

/// One side of a client's calls: how to make call `index`.
enum Caller {
    Engine(stn_tokio::Client),
    Peer {
        client: reqwest::Client,
        close: bool,
    },
    FreshPeer {
        connect_timeout: Duration,
    },
}

/// `(target successes, most calls, cap on one call)` of a workload: a
/// sequential series until its successes (at most 10× as many calls, each
/// capped by `call_cap`), or one call capped at the simulator's single-call
/// limit.
pub(super) fn call_plan(kind: &WorkloadKind, call_cap: Duration) -> (u64, u64, Duration) {
    match *kind {
        WorkloadKind::Sequential { successes } => {
            (successes, successes.saturating_mul(10), call_cap)
        }
        WorkloadKind::Single => (1, 1, SINGLE_CAP),
    }
}

impl RealRun {
    /// Runs the workload (call on the client namespace's runtime): the
    /// summary, and what the emulator did meanwhile.
    pub(super) async fn run(self) -> anyhow::Result<(RunSummary, EmulatorStats)> {
        let w = &self.scenario.workload;
        // t = 0 of the scenario's link schedule (outages count from here),
        // before the client exists: a long link connects from its first
        // task on this run's link, as in the simulator.
        self.emulator.set_path(&self.scenario.path, self.seed);
        let caller = match self.client {
            RealClient::Engine { profile, tuned } => {
                let tune = move |c: &mut stn_proto::Config| {
                    if tuned {
                        stn_tuned_config(c);
                    }
                };
                let long_port = if w.long_link {
                    let addr = self
                        .long
                        .context("a long-link scenario without a long-link server")?;
                    Some(addr.port())
                } else {
                    None
                };
                Caller::Engine(calls::stn_client_with(
                    profile,
                    self.server,
                    long_port,
                    w.dns_copies,
                    tune,
                )?)
            }
            RealClient::PooledPeer => Caller::Peer {
                client: calls::peer_client(Duration::from_secs(10), true)
                    .map_err(anyhow::Error::msg)?,
                // Against a server that closes (the simulator's
                // non-keep-alive app) each request needs its own connection.
                close: !w.keep_alive_server,
            },
            RealClient::FreshPeer { connect_timeout } => Caller::FreshPeer { connect_timeout },
        };
        let shape = CallShape {
            label: &self.name,
            request_bytes: w.request_bytes,
            response_size: Some(w.response_bytes),
        };
        let (target, max_calls, cap) = call_plan(&w.kind, self.call_cap);
        let t0 = Instant::now();
        let mut records: Vec<CallRecord> = Vec::new();
        let mut successes = 0;
        while successes < target && (records.len() as u64) < max_calls {
            if t0.elapsed() >= self.run_budget {
                tracing::warn!(client = %self.name, "run budget {:?} spent", self.run_budget);
                break;
            }
            let index = records.len();
            let record = caller.call(&self, shape, index, cap).await;
            tracing::debug!(
                client = %self.name,
                index,
                ok = record.ok,
                secs = record.duration.as_secs_f64(),
                error = record.error.as_deref().unwrap_or(""),
                "scenario call"
            );
            successes += u64::from(record.ok);
            records.push(record);
        }
        let end = records.last().map_or(t0, |r| r.ended);
        let stats = self.emulator.stats();
        if let Caller::Engine(client) = caller {
            client.shutdown().await;
        }
        let summary = RunSummary::new(
            records.len() as u64,
            records
                .iter()
                .filter(|r| r.ok)
                .map(|r| r.duration)
                .collect(),
            end.saturating_duration_since(t0),
            target,
            Some(stats.up.connects),
        );
        Ok((summary, stats))
    }
}

impl Caller {
    async fn call(
        &self,
        run: &RealRun,
        shape: CallShape<'_>,
        index: usize,
        cap: Duration,
    ) -> CallRecord {
        let w = &run.scenario.workload;
        match self {
            Caller::Engine(client) => {
                let how = StnCall {
                    channel: if w.long_link {
                        Channel::Long
                    } else {
                        Channel::Short
                    },
                    retry: w.retry_count,
                    keep_alive: w.keep_alive_server,
                };
                calls::stn_call_with(client, shape, how, index, cap).await
            }
            Caller::Peer { client, close } => {
                calls::peer_call_with(client, *close, run.server, shape, index, cap).await
            }
            Caller::FreshPeer { connect_timeout } => {
                match calls::peer_client(*connect_timeout, false) {
                    Ok(client) => {
                        calls::peer_call_with(&client, true, run.server, shape, index, cap).await
                    }
                    Err(e) => calls::failed_call(e),
                }
            }
        }
    }
}
