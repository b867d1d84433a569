//! `stn lab`: arguments, skip check, Ctrl-C, printing.

use std::time::Duration;

use anyhow::{bail, Context};

use super::{
    preflight, run, scenario, scenario_preflight, scenario_skip_message, skip_message, zero_rtt,
    LabClient, LabConfig, NetSpec,
};

/// Arguments of `stn lab`.
#[derive(Debug, Clone, clap::Args)]
pub struct LabArgs {
    /// Short run: 5 calls, loss 0,10, one 3 s outage (explicit options win).
    #[arg(long)]
    pub quick: bool,
    /// Loss rates in percent per direction, comma-separated, or `none`
    /// [default: 0,10,30; quick: 0,10].
    #[arg(long, value_name = "LIST")]
    pub loss: Option<String>,
    /// 100% outage lengths in seconds, comma-separated, or `none`
    /// [default: 5,15,25; quick: 3].
    #[arg(long, value_name = "LIST")]
    pub outages: Option<String>,
    /// Sequential calls per client per loss rate [default: 50; quick: 5].
    #[arg(long, value_name = "N")]
    pub calls: Option<usize>,
    /// Clients, comma-separated: stn, mars-2017, peer [default: all].
    #[arg(long, value_name = "LIST")]
    pub clients: Option<String>,
    /// The lab's own cap on one call, in seconds.
    #[arg(long, value_name = "S", default_value_t = 120)]
    pub call_cap_secs: u64,
    /// Namespace/interface name prefix (namespaces `<PREFIX>-cli`, `<PREFIX>-srv`).
    #[arg(long, value_name = "PREFIX", default_value = "stnlab")]
    pub prefix: String,
    /// Print the report as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    /// Run this stn-sim scenario file on the kernel through the link
    /// emulator (TUN devices and stn-sim's link model) and in the simulator
    /// (Linux >= 6.5 TCP), side by side; the loss, outage, calls and clients
    /// options do not apply.
    #[arg(long, value_name = "FILE.toml")]
    pub scenario: Option<std::path::PathBuf>,
    /// Scenario runs per client [default: the file's `runs`, at least 3].
    #[arg(long, value_name = "N", requires = "scenario")]
    pub runs: Option<u32>,
    /// Root seed of a scenario run (as `stn-sim run --seed`).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "scenario")]
    pub seed: u64,
    /// Run a program as one more client of the scenario (repeatable):
    /// `sh -c COMMAND` in the client namespace, told the server and the
    /// workload in STN_LAB_* environment variables, printing one JSON line
    /// (see docs/lab.md); its row is NAME.
    #[arg(long = "client", value_name = "NAME=COMMAND", requires = "scenario")]
    pub external: Vec<String>,
    /// A scenario run's budget in seconds: no call starts after it, and an
    /// external client is killed at it plus one call cap.
    #[arg(long, value_name = "S", default_value_t = 600, requires = "scenario")]
    pub run_budget_secs: u64,
    /// Measure TLS 1.3 early data (0-RTT) on a real path through the link
    /// emulator: plain, TLS and TLS with early data, --calls each
    /// [default: 10]; the loss, outage and clients options do not apply.
    #[arg(long, conflicts_with = "scenario")]
    pub zero_rtt: bool,
    /// The --zero-rtt path's round trip in ms.
    #[arg(long, value_name = "MS", default_value_t = 200, requires = "zero_rtt", value_parser = clap::value_parser!(u64).range(1..=5000))]
    pub rtt_ms: u64,
}

/// Splits a comma-separated list; `none` or an empty string is empty.
fn list<T: std::str::FromStr>(s: &str, what: &str) -> anyhow::Result<Vec<T>>
where
    T::Err: std::fmt::Display,
{
    let s = s.trim();
    if s.is_empty() || s == "none" {
        return Ok(Vec::new());
    }
    s.split(',')
        .map(|item| {
            item.trim()
                .parse::<T>()
                .map_err(|e| anyhow::anyhow!("bad {what} {item:?}: {e}"))
        })
        .collect()
}

impl LabArgs {
    /// The scenario and its lab configuration, when `--scenario` is given.
    ///
    /// # Errors
    ///
    /// The file cannot be read or is not a valid scenario the lab can run,
    /// or `--runs` is below [`scenario::MIN_RUNS`].
    pub fn scenario_config(
        &self,
    ) -> anyhow::Result<Option<(stn_sim::scenario::Scenario, scenario::ScenarioLabConfig)>> {
        let Some(path) = &self.scenario else {
            return Ok(None);
        };
        let s = stn_sim::scenario::Scenario::from_path(path)?;
        scenario::check(&s)?;
        let mut c = scenario::ScenarioLabConfig::for_scenario(&s);
        if let Some(runs) = self.runs {
            if !(scenario::MIN_RUNS..=100).contains(&runs) {
                bail!(
                    "--runs must be {}..=100 (a median and a range)",
                    scenario::MIN_RUNS
                );
            }
            c.runs = runs;
        }
        c.seed = self.seed;
        c.call_cap = Duration::from_secs(self.call_cap_secs.max(1));
        if self.run_budget_secs == 0 {
            bail!("--run-budget-secs must be positive");
        }
        c.run_budget = Duration::from_secs(self.run_budget_secs);
        c.external = self
            .external
            .iter()
            .map(|e| {
                e.parse::<scenario::ExternalClient>()
                    .map_err(anyhow::Error::msg)
            })
            .collect::<anyhow::Result<_>>()?;
        scenario::check_external(&s, &c.external)?;
        c.net = NetSpec {
            prefix: self.prefix.clone(),
            ..NetSpec::default()
        };
        Ok(Some((s, c)))
    }

    /// The `--zero-rtt` configuration, when it is asked for.
    pub fn zero_rtt_config(&self) -> Option<zero_rtt::ZeroRttConfig> {
        self.zero_rtt.then(|| zero_rtt::ZeroRttConfig {
            net: NetSpec {
                prefix: self.prefix.clone(),
                ..NetSpec::default()
            },
            rtt: Duration::from_millis(self.rtt_ms),
            calls: self.calls.unwrap_or(10),
            call_cap: Duration::from_secs(self.call_cap_secs.max(1)),
            ..zero_rtt::ZeroRttConfig::default()
        })
    }

    /// The lab configuration these arguments ask for.
    ///
    /// # Errors
    ///
    /// A malformed list or an out-of-range value.
    pub fn config(&self) -> anyhow::Result<LabConfig> {
        let mut c = if self.quick {
            LabConfig::quick()
        } else {
            LabConfig::default()
        };
        if let Some(s) = &self.loss {
            c.loss_percents = list(s, "loss percent")?;
            if let Some(p) = c.loss_percents.iter().find(|&&p| p > 100) {
                bail!("loss {p}% is over 100%");
            }
        }
        if let Some(s) = &self.outages {
            let secs: Vec<f64> = list(s, "outage length")?;
            if secs
                .iter()
                .any(|s| !s.is_finite() || *s < 0.0 || *s > 600.0)
            {
                bail!("outage lengths must be within 0..=600 s");
            }
            c.outages = secs.into_iter().map(Duration::from_secs_f64).collect();
        }
        if let Some(n) = self.calls {
            if n == 0 {
                bail!("--calls must be positive");
            }
            c.calls = n;
        }
        if let Some(s) = &self.clients {
            c.clients = list::<LabClient>(s, "client")?;
            if c.clients.is_empty() {
                bail!("--clients is empty");
            }
        }
        if self.call_cap_secs == 0 {
            bail!("--call-cap-secs must be positive");
        }
        c.call_cap = Duration::from_secs(self.call_cap_secs);
        c.net = NetSpec {
            prefix: self.prefix.clone(),
            ..NetSpec::default()
        };
        Ok(c)
    }
}

/// Runs `stn lab`: prints the skip line and returns `Ok` where the lab
/// cannot run, else runs it (Ctrl-C stops it and still deletes the
/// namespaces) and prints the report.
///
/// # Errors
///
/// Bad arguments, or the lab itself failed.
// Printing the report is what this command is for.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub async fn run_cli(args: LabArgs) -> anyhow::Result<()> {
    let config = args.config()?;
    if let Some(c) = args.zero_rtt_config() {
        if let Err(why) = scenario_preflight() {
            println!("{}", scenario_skip_message(&why));
            return Ok(());
        }
        let report = until_ctrl_c(zero_rtt::run(&c))
            .await
            .context("zero-RTT lab")?;
        print_report(args.json, || report.to_json(), || report.markdown());
        return Ok(());
    }
    if let Some((s, c)) = args.scenario_config()? {
        if let Err(why) = scenario_preflight() {
            println!("{}", scenario_skip_message(&why));
            return Ok(());
        }
        let report = until_ctrl_c(scenario::run(&s, &c))
            .await
            .with_context(|| format!("scenario {} on the real kernel", s.name))?;
        print_report(args.json, || report.to_json(), || report.markdown());
        return Ok(());
    }
    if let Err(why) = preflight() {
        println!("{}", skip_message(&why));
        return Ok(());
    }
    let report = until_ctrl_c(run(&config))
        .await
        .context("real-kernel lab")?;
    print_report(
        args.json,
        || report.to_json().to_string(),
        || report.markdown(),
    );
    Ok(())
}

/// Runs the lab future; on Ctrl-C drops it (its guards delete the
/// namespaces) and exits 130.
#[allow(clippy::print_stderr)]
async fn until_ctrl_c<T>(lab: impl std::future::Future<Output = T>) -> T {
    tokio::select! {
        done = lab => done,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted: lab network deleted");
            std::process::exit(130);
        }
    }
}

#[allow(clippy::print_stdout)]
fn print_report(
    json: bool,
    as_json: impl FnOnce() -> String,
    as_markdown: impl FnOnce() -> String,
) {
    println!("{}", if json { as_json() } else { as_markdown() });
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        lab: LabArgs,
    }

    fn config(args: &[&str]) -> anyhow::Result<LabConfig> {
        let cli = Cli::try_parse_from(std::iter::once("lab").chain(args.iter().copied()))?;
        cli.lab.config()
    }

    #[test]
    fn defaults_quick_and_explicit_lists() {
        let full = config(&[]).unwrap();
        assert_eq!(full, LabConfig::default());
        let quick = config(&["--quick"]).unwrap();
        assert_eq!(quick, LabConfig::quick());
        let c = config(&[
            "--quick",
            "--loss",
            "30",
            "--outages",
            "none",
            "--clients",
            "stn,peer",
            "--calls",
            "7",
        ])
        .unwrap();
        assert_eq!(c.loss_percents, vec![30]);
        assert!(c.outages.is_empty());
        assert_eq!(c.clients, vec![LabClient::Stn, LabClient::Peer]);
        assert_eq!(c.calls, 7);
        assert_eq!(
            config(&["--outages", "2.5"]).unwrap().outages,
            vec![Duration::from_millis(2500)]
        );
    }

    #[test]
    fn scenario_options() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("lab").chain(args.iter().copied()))
                .map_err(anyhow::Error::from)
                .and_then(|cli| cli.lab.scenario_config())
        };
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/loss30.toml");
        assert!(parse(&[]).unwrap().is_none());
        let (s, c) = parse(&["--scenario", file, "--seed", "7"])
            .unwrap()
            .unwrap();
        assert_eq!(s.name, "lab-loss30");
        assert_eq!((c.runs, c.seed), (5, 7));
        let (_, c) = parse(&["--scenario", file, "--runs", "3"])
            .unwrap()
            .unwrap();
        assert_eq!(c.runs, 3);
        // A median and a range need three runs; --runs needs a scenario.
        assert!(parse(&["--scenario", file, "--runs", "2"]).is_err());
        assert!(parse(&["--runs", "3"]).is_err());
        assert!(parse(&["--scenario", "/nonexistent/x.toml"]).is_err());
        // External clients, repeatable, with their own names.
        let (_, c) = parse(&[
            "--scenario",
            file,
            "--client",
            "curl=stn-lab/clients/curl.sh",
            "--client",
            "other=./x --flag=1",
            "--run-budget-secs",
            "30",
        ])
        .unwrap()
        .unwrap();
        let names: Vec<(&str, &str)> = c
            .external
            .iter()
            .map(|e| (e.name.as_str(), e.command.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("curl", "stn-lab/clients/curl.sh"),
                ("other", "./x --flag=1")
            ]
        );
        assert_eq!(c.run_budget, Duration::from_secs(30));
        for bad in [
            &["--client", "curl=x"][..],
            &["--scenario", file, "--client", "nocommand"],
            &["--scenario", file, "--client", "stn=./x"],
            &["--scenario", file, "--run-budget-secs", "0"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            &["--loss", "101"][..],
            &["--loss", "x"],
            &["--clients", "okhttp"],
            &["--clients", "none"],
            &["--calls", "0"],
            &["--outages", "-1"],
            &["--call-cap-secs", "0"],
        ] {
            assert!(config(args).is_err(), "{args:?} should be refused");
        }
    }
}
