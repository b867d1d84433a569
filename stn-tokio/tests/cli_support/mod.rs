//! Helpers shared by the tests that run the `stn` binary (`cli.rs`,
//! `cli_tls.rs`): the command, a child that is killed whatever happens, and
//! `stn serve` started with its bound addresses read from its log.
#![allow(dead_code)] // each test file uses a subset

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long `stn serve` may take to log an address (a loaded CI machine).
const LISTEN_BOUND: Duration = Duration::from_secs(20);

/// The `stn` binary under test.
pub(crate) fn stn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stn"))
}

/// Kills the child even if an assertion fails.
pub(crate) struct KillOnDrop(pub(crate) Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running `stn serve` and the addresses it logged.
pub(crate) struct Served {
    /// The process (killed on drop).
    pub(crate) child: KillOnDrop,
    /// The long link's bound address.
    pub(crate) long: SocketAddr,
    /// The short link's bound address.
    pub(crate) short: SocketAddr,
}

/// Starts `stn serve --long 127.0.0.1:0 --short 127.0.0.1:0` with `extra`
/// arguments and waits (bounded) for it to log both bound addresses. The
/// log is read on a thread so the wait is bounded even if it stalls.
pub(crate) fn serve(extra: &[&str]) -> Served {
    let mut child = KillOnDrop(
        stn()
            .args(["serve", "--long", "127.0.0.1:0", "--short", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn stn serve"),
    );
    let stderr = child.0.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            for link in ["long", "short"] {
                if line.contains(&format!("{link} link listening")) {
                    let addr = line.rsplit("addr=").next().unwrap_or_default().trim();
                    let _ = tx.send((link, addr.to_owned()));
                }
            }
        }
    });
    let (mut long, mut short) = (None, None);
    while long.is_none() || short.is_none() {
        let (link, addr) = rx
            .recv_timeout(LISTEN_BOUND)
            .expect("stn serve logs both addresses");
        let addr: SocketAddr = addr.parse().expect("an address");
        match link {
            "long" => long = Some(addr),
            _ => short = Some(addr),
        }
    }
    Served {
        child,
        long: long.expect("long"),
        short: short.expect("short"),
    }
}
