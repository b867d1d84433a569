//! Fresh-connection-per-call clients on lossy links: failure rate, mean and
//! p90 of successful calls — to compare with the toy model of peers.md §3.2.
//!
//! `cargo run -p stn-sim --example fresh_conn_loss [seed]`
#![allow(clippy::print_stdout)]

use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::clients::fresh_conn::{FreshConnClient, FreshConnConfig};
use stn_sim::path::{PathConditions, PathSchedule};
use stn_sim::preset::Preset;
use stn_sim::tcp::TcpStack;
use stn_sim::Simulation;

fn main() {
    let seed: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let server: std::net::SocketAddr = "10.0.0.2:8080".parse().unwrap();
    let links: [(&str, PathConditions); 3] = [
        (
            "3G + 30%",
            Preset::ThreeG.conditions().with_loss_percent(30.0),
        ),
        (
            "3G + 50%",
            Preset::ThreeG.conditions().with_loss_percent(50.0),
        ),
        ("Very Bad", Preset::VeryBadNetwork.conditions()),
    ];
    let clients: [(&str, TcpStack, u64); 3] = [
        ("OkHttp, kernel < 6.5", TcpStack::linux_classic(), 10),
        ("OkHttp, kernel >= 6.5", TcpStack::linux_6_5(), 10),
        ("NSURLSession-ish (xnu, 60 s)", TcpStack::xnu(), 60),
    ];
    println!("| link | client | calls | fail % | mean ok (s) | p90 ok (s) |");
    println!("|---|---|---|---|---|---|");
    for (lname, link) in links {
        for (cname, stack, timeout) in clients.clone() {
            let mut sim = Simulation::new(seed);
            sim.keep_trace_events(false);
            sim.add_host(server.ip(), PathSchedule::constant(link));
            sim.listen(server, FixedResponseApp::new(100, Duration::ZERO))
                .unwrap();
            let mut cfg = FreshConnConfig::okhttp_2017(server);
            cfg.connect_timeout = Duration::from_secs(timeout);
            cfg.read_timeout = Duration::from_secs(timeout);
            let id = sim.add_client(FreshConnClient::new(cfg), stack);
            sim.run_until_finished(Instant::MAX);
            let c = sim.client(id);
            let mut ok: Vec<f64> = c
                .calls()
                .iter()
                .filter(|r| r.result.is_ok())
                .map(|r| r.duration().as_secs_f64())
                .collect();
            ok.sort_by(f64::total_cmp);
            let n = c.calls().len();
            let fail = 100.0 * (n - ok.len()) as f64 / n as f64;
            let mean = ok.iter().sum::<f64>() / ok.len().max(1) as f64;
            let p90 = ok.get(ok.len() * 9 / 10).copied().unwrap_or(f64::NAN);
            println!("| {lname} | {cname} | {n} | {fail:.1} | {mean:.2} | {p90:.2} |");
        }
    }
}
