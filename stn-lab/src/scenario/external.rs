//! Any program as one more client of a scenario (`--client NAME=COMMAND`):
//! the lab starts it in the client namespace for every run, tells it the
//! server and the workload in environment variables, and reads one JSON
//! line of results from its standard output.
//!
//! The program is `sh -c COMMAND` in its own process group, with the lab's
//! environment plus [`environment`]'s variables, stdin closed. It must make
//! the scenario's calls and print exactly one non-empty line on stdout:
//!
//! ```json
//! {"successes": 20, "attempts": 21, "total_s": 12.5, "p50_ms": 64.0, "p95_ms": 1480.2, "calls_ms": [63.1, 64.0]}
//! ```
//!
//! `calls_ms` (every call's duration in order, one per attempt) is
//! optional; `p50_ms` and `p95_ms` are nearest-rank percentiles of the
//! successful calls, `null` (or absent) without successes. Anything else —
//! a non-zero exit, no line or several, a line that is not that object,
//! more than [`STDOUT_CAP`] bytes, or running past its bound — is that
//! run's failure, reported on the client's row; the lab goes on. When the
//! program ends (or is killed at its bound) whatever is left of its process
//! group is killed, so nothing of it runs into the next run.

use std::fmt;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use stn_server::DEFAULT_CGI_PATH;
use stn_sim::scenario::{Scenario, WorkloadKind};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::super::emulator::LinkEmulator;
use super::real::call_plan;
use super::report::{FailedRun, RealRunStats};
use super::summary::RunSummary;

/// Most bytes read from a program's stdout; past it the program is killed
/// and the run fails (one line of results is far smaller, even with
/// `calls_ms` for thousands of calls).
pub const STDOUT_CAP: usize = 1024 * 1024;
/// Bytes of a program's stderr kept (the end) for its failure message.
const STDERR_TAIL: usize = 2048;
/// Longest a client name may be.
const MAX_NAME: usize = 32;

/// A program run as a client of the scenario: `--client NAME=COMMAND`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalClient {
    /// Its row's name (`[A-Za-z0-9_.-]`, at most 32 characters).
    pub name: String,
    /// A shell command (`sh -c`), e.g. `stn-lab/clients/curl.sh`.
    pub command: String,
}

impl std::str::FromStr for ExternalClient {
    type Err = String;

    /// `NAME=COMMAND`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, command) = s
            .split_once('=')
            .ok_or_else(|| format!("--client {s:?}: expected NAME=COMMAND"))?;
        let (name, command) = (name.trim(), command.trim());
        let name_ok = !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !name_ok {
            return Err(format!(
                "--client {s:?}: the name must be 1..={MAX_NAME} characters of [A-Za-z0-9_.-]"
            ));
        }
        if command.is_empty() {
            return Err(format!("--client {s:?}: the command is empty"));
        }
        Ok(ExternalClient {
            name: name.to_owned(),
            command: command.to_owned(),
        })
    }
}

/// What a program reported for one run.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramReport {
    /// Calls that got the right response.
    pub successes: u64,
    /// Calls made (a failed call counts one).
    pub attempts: u64,
    /// From the first call's start to the last call's end, seconds.
    pub total_s: f64,
    /// Median successful call, ms.
    pub p50_ms: Option<f64>,
    /// 95th percentile successful call, ms.
    pub p95_ms: Option<f64>,
    /// Every call's duration in order, ms, when given.
    pub calls_ms: Option<Vec<f64>>,
}

impl ProgramReport {
    /// The run's summary: `target` successes asked for, `connects` counted
    /// by the emulator.
    pub(super) fn summary(&self, target: u64, connects: u64) -> RunSummary {
        RunSummary {
            attempts: self.attempts,
            successes: self.successes,
            ok: self.successes >= target,
            total_s: self.total_s,
            p50_s: self.p50_ms.map(|ms| ms / 1e3),
            p95_s: self.p95_ms.map(|ms| ms / 1e3),
            connects: Some(connects),
        }
    }
}

/// Why a program's run gave no figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramFailure {
    /// `sh` could not be started.
    Spawn(String),
    /// It exited with a failure status.
    Exit {
        /// The status, as the OS reported it.
        status: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// It ran past its bound and was killed.
    TimedOut {
        /// The bound.
        bound: Duration,
        /// The end of its stderr.
        stderr: String,
    },
    /// It printed more than [`STDOUT_CAP`] bytes and was killed.
    OutputTooLarge,
    /// It exited successfully without one valid result line.
    BadOutput {
        /// What is wrong with the output.
        why: String,
        /// The end of its stderr.
        stderr: String,
    },
}

fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; stderr: {stderr}")
    }
}

impl fmt::Display for ProgramFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgramFailure::Spawn(e) => write!(f, "could not start: {e}"),
            ProgramFailure::Exit { status, stderr } => {
                write!(f, "{status}{}", stderr_note(stderr))
            }
            ProgramFailure::TimedOut { bound, stderr } => write!(
                f,
                "killed after its bound of {:.0} s{}",
                bound.as_secs_f64(),
                stderr_note(stderr)
            ),
            ProgramFailure::OutputTooLarge => {
                write!(f, "printed more than {STDOUT_CAP} bytes on stdout (killed)")
            }
            ProgramFailure::BadOutput { why, stderr } => {
                write!(f, "bad output: {why}{}", stderr_note(stderr))
            }
        }
    }
}

/// Everything one run of a program is told.
#[derive(Clone, Debug)]
pub(super) struct ProgramContext<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) client: &'a str,
    pub(super) run: u32,
    pub(super) runs: u32,
    /// The emulator's loss and jitter seed of this run.
    pub(super) seed: u64,
    pub(super) short: SocketAddr,
    pub(super) long: Option<SocketAddr>,
    /// Cap on one call of a sequential workload.
    pub(super) call_cap: Duration,
    /// Start no call after this.
    pub(super) run_budget: Duration,
}

impl ProgramContext<'_> {
    /// When the lab kills the program: the run budget plus one call's cap,
    /// the longest a built-in client's run can last.
    pub(super) fn bound(&self) -> Duration {
        let (_, _, cap) = call_plan(&self.scenario.workload.kind, self.call_cap);
        self.run_budget + cap
    }
}

/// The variables a program gets (see `docs/lab.md`, "Any client").
pub(super) fn environment(cx: &ProgramContext<'_>) -> Vec<(&'static str, String)> {
    let w = &cx.scenario.workload;
    let (target, max_calls, cap) = call_plan(&w.kind, cx.call_cap);
    let secs = |d: Duration| format!("{}", d.as_secs_f64());
    vec![
        ("STN_LAB_CLIENT", cx.client.to_owned()),
        ("STN_LAB_SCENARIO", cx.scenario.name.clone()),
        ("STN_LAB_RUN", cx.run.to_string()),
        ("STN_LAB_RUNS", cx.runs.to_string()),
        ("STN_LAB_SEED", cx.seed.to_string()),
        ("STN_LAB_SERVER_IP", cx.short.ip().to_string()),
        ("STN_LAB_SHORT_PORT", cx.short.port().to_string()),
        (
            "STN_LAB_LONG_PORT",
            cx.long.map(|a| a.port().to_string()).unwrap_or_default(),
        ),
        (
            "STN_LAB_URL",
            format!("http://{}{DEFAULT_CGI_PATH}", cx.short),
        ),
        ("STN_LAB_CGI_PATH", DEFAULT_CGI_PATH.to_owned()),
        (
            "STN_LAB_HELLO_CMD_ID",
            stn_server::DEFAULT_HELLO_CMD_ID.to_string(),
        ),
        (
            "STN_LAB_WORKLOAD",
            match w.kind {
                WorkloadKind::Sequential { .. } => "sequential",
                WorkloadKind::Single => "single",
            }
            .to_owned(),
        ),
        ("STN_LAB_SUCCESSES", target.to_string()),
        ("STN_LAB_MAX_CALLS", max_calls.to_string()),
        ("STN_LAB_REQUEST_BYTES", w.request_bytes.to_string()),
        ("STN_LAB_RESPONSE_BYTES", w.response_bytes.to_string()),
        ("STN_LAB_CALL_TIMEOUT_S", secs(cap)),
        ("STN_LAB_RUN_BUDGET_S", secs(cx.run_budget)),
        ("STN_LAB_KILL_AFTER_S", secs(cx.bound())),
        (
            "STN_LAB_CHANNEL",
            if w.long_link { "long" } else { "short" }.to_owned(),
        ),
        (
            "STN_LAB_KEEP_ALIVE",
            if w.keep_alive_server { "1" } else { "0" }.to_owned(),
        ),
        (
            "STN_LAB_RETRY_COUNT",
            w.retry_count.map(|r| r.to_string()).unwrap_or_default(),
        ),
        ("STN_LAB_DNS_COPIES", w.dns_copies.to_string()),
    ]
}

/// One run of a program on the kernel, through the emulator.
#[derive(Clone, Debug)]
pub(super) struct ExternalRun {
    pub(super) scenario: Arc<Scenario>,
    pub(super) client: ExternalClient,
    pub(super) emulator: Arc<LinkEmulator>,
    pub(super) short: SocketAddr,
    pub(super) long: Option<SocketAddr>,
    pub(super) seed: u64,
    pub(super) run: u32,
    pub(super) runs: u32,
    pub(super) call_cap: Duration,
    pub(super) run_budget: Duration,
}

impl ExternalRun {
    /// Runs the program (call on the client namespace's runtime, so it is
    /// started inside that namespace): its figures, or why it gave none,
    /// each with what the emulator carried meanwhile.
    pub(super) async fn run(self) -> Result<RealRunStats, FailedRun> {
        let cx = ProgramContext {
            scenario: &self.scenario,
            client: &self.client.name,
            run: self.run,
            runs: self.runs,
            seed: self.seed,
            short: self.short,
            long: self.long,
            call_cap: self.call_cap,
            run_budget: self.run_budget,
        };
        let env = environment(&cx);
        let (target, _, _) = call_plan(&self.scenario.workload.kind, self.call_cap);
        // t = 0 of the link schedule is the program's start.
        self.emulator.set_path(&self.scenario.path, self.seed);
        let result = run_program(&self.client.command, &env, cx.bound()).await;
        let emulator = self.emulator.stats();
        match result {
            Ok(report) => Ok(RealRunStats {
                summary: report.summary(target, emulator.up.connects),
                emulator,
                calls_ms: report.calls_ms,
            }),
            Err(e) => Err(FailedRun {
                run: self.run,
                reason: e.to_string(),
                emulator,
            }),
        }
    }
}

/// Runs `sh -c command` with `env` added, bounded by `bound`, and parses
/// its result line.
pub(super) async fn run_program(
    command: &str,
    env: &[(&'static str, String)],
    bound: Duration,
) -> Result<ProgramReport, ProgramFailure> {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so its children (curl, …) can be killed with it.
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ProgramFailure::Spawn(e.to_string()))?;
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let mut tail = Vec::new();
    let outcome = {
        let work = async {
            tokio::try_join!(
                read_capped(stdout, STDOUT_CAP),
                async {
                    read_tail(stderr, &mut tail).await;
                    Ok(())
                },
                async { child.wait().await.map_err(|e| Ended::Io(e.to_string())) },
            )
        };
        tokio::time::timeout(bound, work).await
    };
    // Whatever of its group is still running (a child it left behind, or
    // all of it at the bound) goes now.
    if let Some(pid) = group {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.wait().await;
    let stderr = String::from_utf8_lossy(&tail).trim().to_owned();
    match outcome {
        Err(_) => Err(ProgramFailure::TimedOut { bound, stderr }),
        Ok(Err(Ended::TooLarge)) => Err(ProgramFailure::OutputTooLarge),
        Ok(Err(Ended::Io(e))) => Err(ProgramFailure::BadOutput {
            why: format!("reading its output: {e}"),
            stderr,
        }),
        Ok(Ok((_, (), status))) if !status.success() => Err(ProgramFailure::Exit {
            status: status.to_string(),
            stderr,
        }),
        Ok(Ok((out, (), _))) => {
            parse_result(&out).map_err(|why| ProgramFailure::BadOutput { why, stderr })
        }
    }
}

/// How reading a program's output ended early.
enum Ended {
    TooLarge,
    Io(String),
}

/// Reads `pipe` to its end, failing past `cap` bytes.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, cap: usize) -> Result<Vec<u8>, Ended> {
    let mut out = Vec::new();
    let Some(mut pipe) = pipe else {
        return Ok(out);
    };
    let mut buf = [0u8; 8192];
    loop {
        let n = pipe
            .read(&mut buf)
            .await
            .map_err(|e| Ended::Io(e.to_string()))?;
        if n == 0 {
            return Ok(out);
        }
        if out.len() + n > cap {
            return Err(Ended::TooLarge);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Reads `pipe` to its end (or a read error), keeping its last
/// [`STDERR_TAIL`] bytes in `tail`.
async fn read_tail(pipe: Option<impl AsyncRead + Unpin>, tail: &mut Vec<u8>) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            return;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
}

/// The one result line of a program's stdout.
///
/// # Errors
///
/// What is wrong with it, in a few words.
pub fn parse_result(stdout: &[u8]) -> Result<ProgramReport, String> {
    let text = std::str::from_utf8(stdout).map_err(|_| "stdout is not UTF-8".to_owned())?;
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = match lines.as_slice() {
        [] => return Err("no result line on stdout".into()),
        [one] => *one,
        more => {
            return Err(format!(
                "{} lines on stdout, expected one JSON line (diagnostics go to stderr)",
                more.len()
            ))
        }
    };
    let value: Value =
        serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {}", clip(line)))?;
    let obj = value
        .as_object()
        .ok_or_else(|| format!("not a JSON object: {}", clip(line)))?;
    let count = |key: &str| -> Result<u64, String> {
        obj.get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{key}: expected a non-negative integer"))
    };
    let number = |v: &Value, key: &str| -> Result<f64, String> {
        v.as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("{key}: expected a non-negative number"))
    };
    let optional = |key: &str| -> Result<Option<f64>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => number(v, key).map(Some),
        }
    };
    let successes = count("successes")?;
    let attempts = count("attempts")?;
    let total_s = number(obj.get("total_s").unwrap_or(&Value::Null), "total_s")?;
    let (p50_ms, p95_ms) = (optional("p50_ms")?, optional("p95_ms")?);
    if successes > attempts {
        return Err(format!(
            "successes ({successes}) exceed attempts ({attempts})"
        ));
    }
    match (successes > 0, p50_ms, p95_ms) {
        (true, Some(p50), Some(p95)) if p50 > p95 => {
            return Err(format!("p50_ms ({p50}) is above p95_ms ({p95})"))
        }
        (true, Some(_), Some(_)) | (false, None, None) => {}
        (true, _, _) => return Err("p50_ms and p95_ms: expected numbers with successes".into()),
        (false, _, _) => return Err("p50_ms and p95_ms: expected null without successes".into()),
    }
    let calls_ms = match obj.get("calls_ms") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            if items.len() as u64 != attempts {
                return Err(format!(
                    "calls_ms has {} entries for {attempts} attempts",
                    items.len()
                ));
            }
            Some(
                items
                    .iter()
                    .map(|v| number(v, "calls_ms[]"))
                    .collect::<Result<Vec<f64>, String>>()?,
            )
        }
        Some(_) => return Err("calls_ms: expected an array of numbers".into()),
    };
    Ok(ProgramReport {
        successes,
        attempts,
        total_s,
        p50_ms,
        p95_ms,
        calls_ms,
    })
}

/// At most 200 characters of `line`, for error messages.
fn clip(line: &str) -> String {
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"successes": 2, "attempts": 3, "total_s": 1.5, "p50_ms": 100, "p95_ms": 900.5, "calls_ms": [100, 500, 900.5]}"#;

    #[test]
    fn names_and_commands_parse() {
        let c: ExternalClient = "curl=stn-lab/clients/curl.sh --x=1".parse().unwrap();
        assert_eq!(c.name, "curl");
        assert_eq!(c.command, "stn-lab/clients/curl.sh --x=1");
        for bad in [
            "curl",
            "=x",
            "a b=x",
            "curl=",
            &format!("{}=x", "n".repeat(33)),
        ] {
            assert!(bad.parse::<ExternalClient>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_result_line_is_checked() {
        let r = parse_result(format!("\n{GOOD}\n\n").as_bytes()).unwrap();
        assert_eq!((r.successes, r.attempts), (2, 3));
        assert_eq!((r.p50_ms, r.p95_ms), (Some(100.0), Some(900.5)));
        assert_eq!(r.calls_ms.as_deref(), Some(&[100.0, 500.0, 900.5][..]));
        let s = r.summary(2, 3);
        assert!(s.ok);
        assert_eq!((s.p50_s, s.connects), (Some(0.1), Some(3)));
        assert!(!r.summary(3, 3).ok);
        let none =
            parse_result(br#"{"successes":0,"attempts":1,"total_s":10,"p50_ms":null}"#).unwrap();
        assert_eq!((none.p50_ms, none.calls_ms), (None, None));

        for (out, why) in [
            ("", "no result line"),
            ("hello\n{}", "2 lines"),
            ("{oops", "not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"attempts":1,"total_s":1}"#, "successes"),
            (r#"{"successes":-1,"attempts":1,"total_s":1}"#, "successes"),
            (r#"{"successes":1,"attempts":1,"total_s":"1"}"#, "total_s"),
            (r#"{"successes":2,"attempts":1,"total_s":1}"#, "exceed"),
            (
                r#"{"successes":1,"attempts":1,"total_s":1}"#,
                "with successes",
            ),
            (
                r#"{"successes":1,"attempts":1,"total_s":1,"p50_ms":5,"p95_ms":4}"#,
                "above p95_ms",
            ),
            (
                r#"{"successes":0,"attempts":1,"total_s":1,"p50_ms":5,"p95_ms":5}"#,
                "without successes",
            ),
            (
                r#"{"successes":1,"attempts":2,"total_s":1,"p50_ms":5,"p95_ms":5,"calls_ms":[5]}"#,
                "1 entries for 2",
            ),
            (
                r#"{"successes":1,"attempts":1,"total_s":1,"p50_ms":5,"p95_ms":5,"calls_ms":"5"}"#,
                "array",
            ),
        ] {
            let e = parse_result(out.as_bytes()).unwrap_err();
            assert!(e.contains(why), "{out:?}: {e}");
        }
        assert!(parse_result(&[0xff, b'\n']).unwrap_err().contains("UTF-8"));
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn run(command: &str, bound_ms: u64) -> Result<ProgramReport, ProgramFailure> {
        let env = vec![("STN_LAB_SUCCESSES", "4".to_owned())];
        rt().block_on(run_program(command, &env, Duration::from_millis(bound_ms)))
    }

    #[test]
    fn a_program_reports_through_its_environment() {
        let r = run(
            r#"echo diagnostics >&2; printf '{"successes": %s, "attempts": %s, "total_s": 0.5, "p50_ms": 1, "p95_ms": 2}\n' "$STN_LAB_SUCCESSES" "$STN_LAB_SUCCESSES""#,
            10_000,
        )
        .unwrap();
        assert_eq!((r.successes, r.attempts), (4, 4));
    }

    #[test]
    fn failures_are_reported_not_raised() {
        match run("echo broken >&2; exit 3", 10_000) {
            Err(ProgramFailure::Exit { status, stderr }) => {
                assert!(status.contains('3'), "{status}");
                assert_eq!(stderr, "broken");
            }
            other => panic!("{other:?}"),
        }
        let e = run("echo not json", 10_000).unwrap_err();
        assert!(
            matches!(&e, ProgramFailure::BadOutput { why, .. } if why.contains("not JSON")),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("bad output: not JSON"), "{e}");
        // A flood is cut off at the cap, not buffered.
        assert_eq!(
            run("yes 0123456789abcdef", 60_000),
            Err(ProgramFailure::OutputTooLarge)
        );
        // Past its bound the whole group is killed, also a child holding
        // stdout open.
        let pid_file = std::env::temp_dir().join(format!("stn-lab-ext-{}", std::process::id()));
        let e = run(
            &format!(
                "sleep 30 & echo $! > {}; echo started >&2; wait",
                pid_file.display()
            ),
            300,
        )
        .unwrap_err();
        assert!(
            matches!(&e, ProgramFailure::TimedOut { stderr, .. } if stderr == "started"),
            "{e:?}"
        );
        assert!(e.to_string().contains("killed after its bound"), "{e}");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let _ = std::fs::remove_file(&pid_file);
        // Gone, or a zombie waiting for its new parent to reap it. A
        // killed process still shows as running until the kernel schedules
        // it to die, so this waits (bounded) for that.
        let dead =
            |stat: &std::io::Result<String>| stat.as_deref().map_or(true, |s| s.contains(") Z "));
        let read = || std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        let mut stat = read();
        for _ in 0..500 {
            if dead(&stat) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            stat = read();
        }
        assert!(dead(&stat), "the group's sleep still runs: {stat:?}");
    }
}
