//! `stn lab`: arguments, skip check, Ctrl-C, printing.

use std::time::Duration;

use anyhow::{bail, Context};

use super::{preflight, run, skip_message, LabClient, LabConfig, NetSpec};

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
    /// Namespace/interface name prefix (namespaces <PREFIX>-cli, <PREFIX>-srv).
    #[arg(long, value_name = "PREFIX", default_value = "stnlab")]
    pub prefix: String,
    /// Print the report as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
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
    if let Err(why) = preflight() {
        println!("{}", skip_message(&why));
        return Ok(());
    }
    let finished = tokio::select! {
        report = run(&config) => Some(report),
        _ = tokio::signal::ctrl_c() => None,
    };
    // The lab future is dropped by now: its guards deleted the namespaces.
    let Some(report) = finished else {
        eprintln!("interrupted: lab network deleted");
        std::process::exit(130);
    };
    let report = report.context("real-kernel lab")?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        println!("{}", report.markdown());
    }
    Ok(())
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
