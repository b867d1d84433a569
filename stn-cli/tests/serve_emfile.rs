//! `stn serve` out of file descriptors: accept errors under EMFILE are
//! logged once per period, and the server serves again once descriptors
//! come back. The server's other hostile-client tests are stn-server's
//! `tests/hostile_clients.rs`; this one runs the `stn` binary.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upper bound of the test.
const TEST_BOUND: Duration = Duration::from_secs(60);
/// How long the server may take to start or answer: generous, so a loaded
/// machine does not fail.
const CLOSE_BOUND: Duration = Duration::from_secs(20);

/// Runs `test` on a two-thread runtime, bounded by [`TEST_BOUND`].
fn run<F: std::future::Future<Output = ()>>(test: F) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        tokio::time::timeout(TEST_BOUND, test)
            .await
            .expect("test exceeded its time bound");
    });
}

/// Out of descriptors: `stn serve` under `ulimit -n 48` meets 100
/// connections. Accept fails with EMFILE for as long as they are held
/// (retried every 50 ms), yet the log gets one line per 5 s period, not one
/// per attempt; once they go, the server accepts and serves again.
#[test]
fn accept_errors_under_emfile_do_not_flood_the_log() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    let stn = env!("CARGO_BIN_EXE_stn");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 48 && exec {stn} serve --long 127.0.0.1:0 --short 127.0.0.1:0"
        ))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stn serve");
    let stderr = child.stderr.take().expect("stderr");
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let reader = {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                lines.lock().unwrap().push(line);
            }
        })
    };
    let addr_of = |name: &str| -> Option<SocketAddr> {
        let lines = lines.lock().unwrap();
        let line = lines.iter().find(|l| l.contains("stn server running"))?;
        let start = line.find(&format!(" {name}="))? + name.len() + 2;
        let rest = &line[start..];
        rest[..rest.find(' ').unwrap_or(rest.len())].parse().ok()
    };
    run(async {
        let mut waited = Duration::ZERO;
        while addr_of("long").is_none() {
            assert!(
                waited < CLOSE_BOUND,
                "stn serve did not start: {:?}",
                lines.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
            waited += Duration::from_millis(50);
        }
        let (long, short) = (addr_of("long").unwrap(), addr_of("short").unwrap());
        let mut held = Vec::new();
        for _ in 0..100 {
            if let Ok(s) = TcpStream::connect(long).await {
                held.push(s);
            }
        }
        // Hold them through more than one log period's worth of retries.
        tokio::time::sleep(Duration::from_secs(6)).await;
        drop(held);
        // Serving again: a request on the short link is answered.
        let mut answered = false;
        for _ in 0..100 {
            if let Ok(mut s) = TcpStream::connect(short).await {
                let _ = s
                    .write_all(b"POST /mars/hello2 HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
                    .await;
                let mut response = Vec::new();
                let _ = tokio::time::timeout(CLOSE_BOUND, s.read_to_end(&mut response)).await;
                if response.starts_with(b"HTTP/1.1 200") {
                    answered = true;
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            answered,
            "server does not serve after the descriptors came back"
        );
    });
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    let lines = lines.lock().unwrap();
    let accept_lines = lines.iter().filter(|l| l.contains("accept failed")).count();
    // 6 s of retries every 50 ms is over 100 failures; one line per 5 s.
    assert!(
        (1..=3).contains(&accept_lines),
        "{accept_lines} accept-failure lines: {:?}",
        lines
            .iter()
            .filter(|l| l.contains("accept failed"))
            .collect::<Vec<_>>()
    );
}
