//! `stn lab --scenario FILE.toml`: a stn-sim scenario file run on the real
//! kernel through the [link emulator](super::LinkEmulator), and again in the
//! simulator, side by side.
//!
//! Each client of the scenario runs alone, one run after another, on a
//! fresh emulated link whose schedule starts at the run's first call (as
//! the simulator gives each client its own copy of the network); every run
//! of every client is repeated `runs` times (at least 3), each with the
//! emulator's loss streams seeded from the simulator's seed of that run.
//! The simulated side runs the same scenario with stn-sim's Linux ≥ 6.5 TCP
//! model, the kernel the lab runs on.
//!
//! The server namespace serves both of the reference server's links (short
//! on [`ScenarioLabConfig::server_port`], long on
//! [`ScenarioLabConfig::long_port`]); the scenario's `workload.channel`
//! says which one the engine clients use, as in the simulator (the peers
//! use the short link either way). External programs
//! ([`ExternalClient`], `--client NAME=COMMAND`) run as more clients beside
//! them, on the kernel only.

mod clients;
mod external;
mod real;
mod report;
mod simulated;
mod summary;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use stn_sim::scenario::run_seed;

use super::emulator::LinkEmulator;
use super::netns::{LabNet, Names};
use super::{kernel_release, LabHosts, NetSpec};
use clients::RealClient;
use external::ExternalRun;
use real::RealRun;

pub use external::{parse_result, ExternalClient, ProgramFailure, ProgramReport, STDOUT_CAP};
pub use report::{AgreementReport, AgreementRow, FailedRun, RealRunStats, TIE};
/// The scenario files this module runs: stn-sim's.
pub use stn_sim::scenario::Scenario;
pub use summary::{RunSummary, Spread};

/// Fewest runs per row: a median and a range need three.
pub const MIN_RUNS: u32 = 3;

/// How `stn lab --scenario` runs a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioLabConfig {
    /// The lab network.
    pub net: NetSpec,
    /// Root seed (as `stn-sim run --seed`).
    pub seed: u64,
    /// Runs per client; the scenario's `runs`, raised to [`MIN_RUNS`].
    pub runs: u32,
    /// Cap on one call of a sequential workload.
    pub call_cap: Duration,
    /// Cap on one run of one client.
    pub run_budget: Duration,
    /// Pause between runs, so the previous run's closing packets drain.
    pub settle: Duration,
    /// The reference server's short-link port.
    pub server_port: u16,
    /// The reference server's long-link port (the simulator's, 8081).
    pub long_port: u16,
    /// Programs run as more clients, after the scenario's, in this order.
    pub external: Vec<ExternalClient>,
}

impl ScenarioLabConfig {
    /// Defaults for `scenario`: seed 1 (stn-sim's default), its runs (at
    /// least 3), 120 s per call, 600 s per run.
    pub fn for_scenario(scenario: &Scenario) -> Self {
        ScenarioLabConfig {
            net: NetSpec::default(),
            seed: 1,
            runs: scenario.runs.max(MIN_RUNS),
            call_cap: Duration::from_secs(120),
            run_budget: Duration::from_secs(600),
            settle: Duration::from_millis(500),
            server_port: stn_sim::bench::run_spec::SERVER.port(),
            long_port: stn_sim::bench::run_spec::LONG_PORT,
            external: Vec::new(),
        }
    }
}

/// Checks that the lab can run `scenario` on this kernel.
///
/// # Errors
///
/// An iOS scenario (xnu's TCP is not this kernel's).
pub fn check(scenario: &Scenario) -> anyhow::Result<()> {
    if scenario.platform != "android" {
        bail!(
            "scenario {}: platform {} needs xnu's TCP stack; the lab runs Linux (use platform = \"android\")",
            scenario.name,
            scenario.platform
        );
    }
    Ok(())
}

/// Checks the external clients of a run of `scenario`: names unique and
/// not those of the scenario's clients.
///
/// # Errors
///
/// The name that clashes.
pub fn check_external(scenario: &Scenario, external: &[ExternalClient]) -> anyhow::Result<()> {
    for (i, c) in external.iter().enumerate() {
        if scenario.clients.contains(&c.name) {
            bail!(
                "--client {}: the scenario already has a client of that name",
                c.name
            );
        }
        if external[..i].iter().any(|o| o.name == c.name) {
            bail!("--client {}: given twice", c.name);
        }
    }
    Ok(())
}

/// Runs `scenario` on the kernel through the emulator and in the
/// simulator.
///
/// # Errors
///
/// [`check`] refused it, or the lab itself failed (a command, the server,
/// a namespace, the TUN devices). Failed calls are results, not errors.
pub async fn run(
    scenario: &Scenario,
    config: &ScenarioLabConfig,
) -> anyhow::Result<AgreementReport> {
    check(scenario)?;
    check_external(scenario, &config.external)?;
    let scenario = Arc::new(scenario.clone());
    let names = Names::new(&config.net)?;
    // Declared first so it is dropped last (after the devices and runtimes).
    let net = LabNet::create_namespaces(names.clone()).context("creating the lab namespaces")?;
    let emulator = Arc::new(LinkEmulator::start(&names).context("starting the link emulator")?);
    let hosts = LabHosts::start_with(
        &names,
        stn_server::ServerConfig {
            response_size: Some(scenario.workload.response_bytes),
            ..stn_server::ServerConfig::default()
        },
        config.server_port,
        Some(config.long_port),
    )
    .await?;
    let (cli_rt, server_addr, long_addr) = (&hosts.cli_rt, hosts.server_addr, hosts.long_addr);
    tracing::info!(scenario = %scenario.name, runs = config.runs, "scenario lab up");

    let mut rows = Vec::new();
    for name in &scenario.clients {
        let mut row = AgreementRow::new(name);
        for run in 0..config.runs {
            let seed = run_seed(config.seed, &scenario.name, run);
            if let Some(client) = RealClient::for_name(name) {
                tokio::time::sleep(config.settle).await;
                // Each run starts from kernels that remember nothing of the
                // peer, as each simulated run does (Linux's tcp_metrics
                // cache, docs/sim-tcp.md).
                for ns in [&names.cli_ns, &names.srv_ns] {
                    super::netns::run("ip", &["-n", ns, "tcp_metrics", "flush", "all"], None)
                        .context("flushing the kernel's TCP metrics")?;
                }
                let job = RealRun {
                    scenario: scenario.clone(),
                    name: name.clone(),
                    client,
                    emulator: emulator.clone(),
                    server: server_addr,
                    long: long_addr,
                    seed,
                    call_cap: config.call_cap,
                    run_budget: config.run_budget,
                };
                let (summary, stats) = cli_rt.handle().spawn(job.run()).await??;
                tracing::info!(
                    client = %name,
                    run,
                    total_s = summary.total_s,
                    attempts = summary.attempts,
                    ok = summary.ok,
                    "real run done"
                );
                row.real.push(RealRunStats::new(summary, &stats));
            }
            let scenario = scenario.clone();
            let (name, sim_seed) = (name.clone(), config.seed);
            let sim = tokio::task::spawn_blocking(move || {
                simulated::simulate(&scenario, &name, sim_seed, run)
            })
            .await?;
            row.sim.extend(sim);
        }
        rows.push(row);
    }
    for client in &config.external {
        let mut row = AgreementRow::external(&client.name, &client.command);
        for run in 0..config.runs {
            tokio::time::sleep(config.settle).await;
            let job = ExternalRun {
                scenario: scenario.clone(),
                client: client.clone(),
                emulator: emulator.clone(),
                short: server_addr,
                long: long_addr,
                seed: run_seed(config.seed, &scenario.name, run),
                run,
                runs: config.runs,
                call_cap: config.call_cap,
                run_budget: config.run_budget,
            };
            match cli_rt.handle().spawn(job.run()).await? {
                Ok(stats) => {
                    tracing::info!(
                        client = %client.name,
                        run,
                        total_s = stats.summary.total_s,
                        attempts = stats.summary.attempts,
                        ok = stats.summary.ok,
                        "external run done"
                    );
                    row.real.push(stats);
                }
                Err(failed) => {
                    tracing::warn!(client = %client.name, run, reason = %failed.reason, "external run failed");
                    row.failed.push(failed);
                }
            }
        }
        rows.push(row);
    }

    hosts.shutdown().await?;
    drop(emulator);
    drop(net);
    Ok(AgreementReport {
        scenario: scenario.name.clone(),
        kernel: kernel_release(),
        sim_stack: simulated::STACK_NAME.to_owned(),
        seed: config.seed,
        runs: config.runs,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_android_scenarios_run_on_the_kernel() {
        let parse = |text: &str| Scenario::from_toml(text, "t.toml").unwrap();
        assert!(check(&parse("clients = [\"stn\", \"okhttp-5\"]")).is_ok());
        let ios = check(&parse("platform = \"ios\"\nclients = [\"nsurlsession\"]")).unwrap_err();
        assert!(ios.to_string().contains("xnu"), "{ios}");
        // Both links run.
        assert!(check(&parse(
            "clients = [\"stn\"]\n[workload]\nchannel = \"long\"",
        ))
        .is_ok());
        // External clients need names of their own.
        let s = parse("clients = [\"stn\", \"okhttp-2017\"]");
        let ext = |list: &[&str]| -> Vec<ExternalClient> {
            list.iter().map(|c| c.parse().unwrap()).collect()
        };
        assert!(check_external(&s, &ext(&["curl=./c.sh", "wget=./w.sh"])).is_ok());
        assert!(check_external(&s, &ext(&["stn=./c.sh"])).is_err());
        assert!(check_external(&s, &ext(&["curl=./c.sh", "curl=./d.sh"])).is_err());
        // At least three runs, whatever the file says.
        let c = ScenarioLabConfig::for_scenario(&parse("clients = [\"stn\"]\nruns = 1"));
        assert_eq!(c.runs, MIN_RUNS);
    }
}
