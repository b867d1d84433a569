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

mod clients;
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
use real::RealRun;

pub use report::{AgreementReport, AgreementRow, RealRunStats, TIE};
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
    /// The reference server's port.
    pub server_port: u16,
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
            server_port: 8080,
        }
    }
}

/// Checks that the lab can run `scenario` on this kernel.
///
/// # Errors
///
/// An iOS scenario (xnu's TCP is not this kernel's) or a long-link
/// workload (the lab's clients use the short link).
pub fn check(scenario: &Scenario) -> anyhow::Result<()> {
    if scenario.platform != "android" {
        bail!(
            "scenario {}: platform {} needs xnu's TCP stack; the lab runs Linux (use platform = \"android\")",
            scenario.name,
            scenario.platform
        );
    }
    if scenario.workload.long_link {
        bail!(
            "scenario {}: the lab runs short-link workloads only (channel = \"short\")",
            scenario.name
        );
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
    let scenario = Arc::new(scenario.clone());
    let names = Names::new(&config.net)?;
    // Declared first so it is dropped last (after the devices and runtimes).
    let net = LabNet::create_namespaces(names.clone()).context("creating the lab namespaces")?;
    let emulator = Arc::new(LinkEmulator::start(&names).context("starting the link emulator")?);
    let hosts = LabHosts::start(
        &names,
        config.server_port,
        Some(scenario.workload.response_bytes),
    )
    .await?;
    let (cli_rt, server_addr) = (&hosts.cli_rt, hosts.server_addr);
    tracing::info!(scenario = %scenario.name, runs = config.runs, "scenario lab up");

    let mut rows = Vec::new();
    for name in &scenario.clients {
        let mut row = AgreementRow::new(name);
        for run in 0..config.runs {
            let seed = run_seed(config.seed, &scenario.name, run);
            if let Some(client) = RealClient::for_name(name) {
                tokio::time::sleep(config.settle).await;
                let job = RealRun {
                    scenario: scenario.clone(),
                    name: name.clone(),
                    client,
                    emulator: emulator.clone(),
                    server: server_addr,
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
    fn only_android_short_link_scenarios_run_on_the_kernel() {
        let parse = |text: &str| Scenario::from_toml(text, "t.toml").unwrap();
        assert!(check(&parse("clients = [\"stn\", \"okhttp-5\"]")).is_ok());
        let ios = check(&parse("platform = \"ios\"\nclients = [\"nsurlsession\"]")).unwrap_err();
        assert!(ios.to_string().contains("xnu"), "{ios}");
        let long = check(&parse(
            "clients = [\"stn\"]\n[workload]\nchannel = \"long\"",
        ))
        .unwrap_err();
        assert!(long.to_string().contains("short-link"), "{long}");
        // At least three runs, whatever the file says.
        let c = ScenarioLabConfig::for_scenario(&parse("clients = [\"stn\"]\nruns = 1"));
        assert_eq!(c.runs, MIN_RUNS);
    }
}
