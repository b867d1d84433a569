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
/// arguments (`RUST_LOG=info`); its stderr lines arrive on the receiver,
/// read on a thread so waits on them can be bounded even if it stalls.
pub(crate) fn spawn_serve(extra: &[&str]) -> (KillOnDrop, mpsc::Receiver<String>) {
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
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// The first line of `lines` that contains `needle`, within [`LISTEN_BOUND`].
pub(crate) fn wait_for_line(lines: &mpsc::Receiver<String>, needle: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(LISTEN_BOUND)
            .unwrap_or_else(|_| panic!("stn serve logs {needle:?}"));
        if line.contains(needle) {
            return line;
        }
    }
}

/// Starts `stn serve` ([`spawn_serve`]) and waits (bounded) for it to log
/// both bound addresses.
pub(crate) fn serve(extra: &[&str]) -> Served {
    let (child, lines) = spawn_serve(extra);
    let (mut long, mut short) = (None, None);
    while long.is_none() || short.is_none() {
        let line = wait_for_line(&lines, " link listening");
        let addr: SocketAddr = line
            .rsplit("addr=")
            .next()
            .unwrap_or_default()
            .trim()
            .parse()
            .expect("an address");
        if line.contains("long link listening") {
            long = Some(addr);
        } else {
            short = Some(addr);
        }
    }
    Served {
        child,
        long: long.expect("long"),
        short: short.expect("short"),
    }
}
