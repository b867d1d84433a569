//! A gated cell: one condition (network, endpoints, TCP stack, link,
//! retry count, TLS), the clients compared on it, and how each runs over
//! [`SEEDS`] seeds. The suites gated per cell ([`crate::bench::suites::matrix`],
//! [`crate::bench::suites::tls`], [`crate::bench::suites::tls_idempotent`])
//! are lists of cells; the gate is [`crate::bench::gate`].

use stn_proto::Duration;

use crate::bench::client_kind::ClientKind;
use crate::bench::platform::Platform;
use crate::bench::record::RunRecord;
use crate::bench::run_spec::{Candidate, RunSpec, REQUEST_LEN, RESPONSE_LEN};
use crate::bench::runner::{run_sequential, run_single, run_traced, TraceRun};
use crate::path::PathSchedule;

/// Seeds (runs) per cell: the gate needs at least 5.
pub const SEEDS: u32 = 5;

/// A value of the link axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// Short link, a fresh connection per call (`Connection: close` server).
    Fresh,
    /// Short link against a keep-alive server.
    KeepAlive,
    /// The engines' long link (peers: keep-alive).
    Long,
}

impl LinkKind {
    /// `fresh`, `keepalive`, `long`: the link's word in cell names.
    pub fn label(self) -> &'static str {
        match self {
            LinkKind::Fresh => "fresh",
            LinkKind::KeepAlive => "keepalive",
            LinkKind::Long => "long",
        }
    }
}

/// One gated cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// The matrix's design row (value index per axis of
    /// [`crate::bench::suites::matrix::AXES`]); `None` for any other cell.
    pub row: Option<Vec<usize>>,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// The network over time.
    pub path: PathSchedule,
    /// Candidate list (`[Live]`: the live server alone).
    pub candidates: Vec<Candidate>,
    /// TCP stack and peers.
    pub platform: Platform,
    /// Which link.
    pub link: LinkKind,
    /// Engine retry count.
    pub retry: Option<u8>,
    /// The record's scenario name, e.g. the matrix's
    /// `rtt600 loss10% 3g jit0 bbl out-none keepalive retry0` (every axis
    /// value) or `sweep outage-12.3s`, or `tls loss-30% long`.
    pub name: String,
    /// Sequential successes, or `None`: one call at t = 0.
    pub calls: Option<u64>,
    /// The name of the suite the cell belongs to: the records' suite and
    /// the seeds' derivation.
    pub suite: &'static str,
    /// Every connection runs TLS 1.3 ([`crate::tls`]).
    pub tls: bool,
    /// The calls are idempotent: servers enable TLS early data and engine
    /// tasks allow it ([`RunSpec::early_data`]).
    pub early_data: bool,
    /// The (suite, scenario name) of the cell whose seeds this cell draws
    /// (`None`: its own): a variant that runs on the networks of its twin
    /// differs from it by the variant alone.
    pub twin: Option<(&'static str, String)>,
}

impl Cell {
    /// The clients compared in this cell (the oracle last).
    pub fn clients(&self) -> Vec<ClientKind> {
        let mut v = vec![ClientKind::STN, ClientKind::MARS_2017, ClientKind::MARS];
        let one_route_peer = self.platform != Platform::Ios;
        if !(one_route_peer && self.candidates.iter().any(|c| *c != Candidate::Live)) {
            v.push(ClientKind::PeerBenchmarked);
        }
        v.push(ClientKind::PeerRecommended);
        v.push(ClientKind::Oracle);
        v
    }

    /// The run description of `client` in seed `run` (root `seed`).
    pub fn spec(&self, client: &ClientKind, seed: u64, run: u32) -> RunSpec {
        let engine = matches!(client, ClientKind::Engine(_));
        let (seed_suite, seed_name) = match &self.twin {
            Some((suite, name)) => (*suite, name.as_str()),
            None => (self.suite, self.name.as_str()),
        };
        RunSpec {
            suite: self.suite.to_owned(),
            scenario: self.name.clone(),
            path: self.path.clone(),
            request_len: REQUEST_LEN,
            response_len: RESPONSE_LEN,
            long_link: self.link == LinkKind::Long && engine,
            retry_count: self.retry,
            dns_copies: 1,
            candidates: self.candidates.clone(),
            keep_alive_server: self.link != LinkKind::Fresh,
            tls: self.tls,
            early_data: self.early_data,
            seed: crate::bench::suite::run_seed(
                seed,
                seed_suite,
                &format!("{} {}", self.platform.name(), seed_name),
                run,
            ),
            run,
        }
    }

    /// `platform scenario`: the key of the gate and the known-misses list.
    pub fn key(&self) -> String {
        format!("{} {}", self.platform.name(), self.name)
    }

    /// The client of this cell whose report name is `name`.
    pub fn client_named(&self, name: &str) -> Option<ClientKind> {
        self.clients()
            .into_iter()
            .find(|c| c.name(self.platform) == name)
    }

    /// Runs `client` once (seed index `run`) with every trace event kept,
    /// exactly as the bench ran it (same spec, same hash).
    pub fn trace(&self, client: &str, seed: u64, run: u32) -> Result<TraceRun, String> {
        let kind = self.client_named(client).ok_or_else(|| {
            let names: Vec<&str> = self
                .clients()
                .iter()
                .map(|c| c.name(self.platform))
                .collect();
            format!(
                "client {client:?} is not in this cell (it has {})",
                names.join(", ")
            )
        })?;
        run_traced(
            &kind,
            self.platform,
            &self.spec(&kind, seed, run),
            self.calls,
        )
    }

    /// Runs every client of the cell over [`SEEDS`] seeds.
    pub fn run(&self, seed: u64, mut emit: impl FnMut(RunRecord)) {
        for run in 0..SEEDS {
            for client in self.clients() {
                let spec = self.spec(&client, seed, run);
                let res = match self.calls {
                    Some(n) => run_sequential(&client, self.platform, &spec, n),
                    None => run_single(&client, self.platform, &spec),
                };
                emit(res.record);
            }
        }
    }
}
