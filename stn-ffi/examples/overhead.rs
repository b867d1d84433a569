//! The Rust side of the per-call overhead benchmark (`stn-ffi/bench/run.sh`
//! runs it beside the Kotlin and Python ones against one `stn serve`):
//! sequential calls, each awaited before the next, timed per round.
//!
//! - `rust`: `stn_tokio::Client::send`, awaited from a thread outside the
//!   runtime whose one worker runs the driver (the bindings' shape);
//! - `rust-ffi-api`: the bindings' own object, `StnClient::send_blocking`,
//!   called from Rust (the wrapper's conversions, no foreign language).
//!
//! `cargo run --release -p stn-ffi --example overhead -- SHORT_PORT LONG_PORT CALLS ROUNDS`
#![allow(clippy::print_stdout)] // a benchmark prints its figures

use std::time::Instant;

use stn_ffi::{Channel, ClientConfig, Header, StnClient, Task};
use stn_tokio::proto;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [short, long, calls, rounds] = args.as_slice() else {
        return Err("usage: overhead SHORT_PORT LONG_PORT CALLS ROUNDS".into());
    };
    let (short, long): (u16, u16) = (short.parse()?, long.parse()?);
    let (calls, rounds): (u32, usize) = (calls.parse()?, rounds.parse()?);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let client = {
        let _inside = runtime.enter();
        stn_tokio::Client::builder()
            .endpoint("127.0.0.1")
            .short_link_port(short)
            .long_link_port(long)
            .build()?
    };
    for link in ["long", "short"] {
        let task = |i: u32| {
            let body = format!("bench {i:08}");
            match link {
                "long" => proto::Task::new(8, "", body).channel(proto::Channel::Long),
                _ => proto::Task::new(8, "/mars/hello2", body)
                    .channel(proto::Channel::Short)
                    .header("Connection", "Keep-Alive"),
            }
            .limit_frequency(false)
        };
        let per_round = measure(calls, rounds, |i| {
            runtime
                .block_on(client.send(task(i)))
                .map(drop)
                .map_err(|e| e.to_string())
        })?;
        report("rust", link, &per_round);
    }
    runtime.block_on(client.shutdown());

    let ffi = StnClient::new(
        ClientConfig {
            endpoints: vec!["127.0.0.1".into()],
            short_link_port: Some(short),
            long_link_ports: vec![long],
            backup_ips: vec![],
            profile: None,
            tls: None,
            timeouts: Default::default(),
            limits: Default::default(),
            identify: None,
            hedge: true,
            seed: 0,
        },
        None,
        None,
    )?;
    for link in ["long", "short"] {
        let per_round = measure(calls, rounds, |i| {
            ffi.send_blocking(ffi_task(link, i))
                .map(drop)
                .map_err(|e| e.to_string())
        })?;
        report("rust-ffi-api", link, &per_round);
    }
    ffi.shutdown_blocking()?;
    Ok(())
}

/// The bindings' task for `link`, as the Kotlin and Python benchmarks build it.
fn ffi_task(link: &str, i: u32) -> Task {
    let body = format!("bench {i:08}").into_bytes();
    let (cmd_id, cgi, channel, headers) = match link {
        "long" => (8, String::new(), Channel::Long, vec![]),
        _ => (
            8,
            "/mars/hello2".to_owned(),
            Channel::Short,
            vec![Header {
                name: "Connection".into(),
                value: "Keep-Alive".into(),
            }],
        ),
    };
    Task {
        cmd_id,
        cgi,
        body,
        channel: Some(channel),
        channel_strategy: None,
        host: None,
        headers,
        priority: 3,
        retry_count: None,
        server_process_cost_ms: None,
        total_timeout_ms: None,
        long_polling_ms: None,
        send_only: false,
        need_authed: false,
        user_id: None,
        limit_frequency: false,
        limit_flow: true,
        network_status_sensitive: false,
        hedge: true,
        early_data: false,
        user_tag: 0,
        body_source: None,
    }
}

/// Each round's wall time and this process's CPU time per call, in µs
/// (`calls` calls a round, after a warm-up round).
fn measure(
    calls: u32,
    rounds: usize,
    mut call: impl FnMut(u32) -> Result<(), String>,
) -> Result<Vec<(f64, f64)>, String> {
    for i in 0..calls {
        call(i)?;
    }
    let mut per_round = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let (start, cpu) = (Instant::now(), process_cpu_ns());
        for i in 0..calls {
            call(i)?;
        }
        let wall = start.elapsed().as_secs_f64() * 1e6;
        let cpu = (process_cpu_ns() - cpu) as f64 / 1e3;
        per_round.push((wall / f64::from(calls), cpu / f64::from(calls)));
    }
    Ok(per_round)
}

/// This process's CPU time so far, in ns: the sum of its threads' time on
/// a CPU (`/proc/self/task/*/schedstat`, Linux; 0 elsewhere).
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// One line: the median round's wall and CPU µs per call, and the fastest
/// round's wall time, the format every language's benchmark prints.
fn report(mode: &str, link: &str, per_round: &[(f64, f64)]) {
    let median = |f: fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = per_round.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0])
    };
    let (wall, fastest) = median(|r| r.0);
    let (cpu, _) = median(|r| r.1);
    println!("{mode:<16} {link:<6} wall {wall:8.1} us/call (fastest round {fastest:8.1})  cpu {cpu:8.1} us/call");
}
