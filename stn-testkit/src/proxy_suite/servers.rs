//! Real proxy servers from Debian packages, started by the tests: tinyproxy
//! (HTTP CONNECT with Basic auth), microsocks and dante (SOCKS5). Each runs
//! in the foreground on a free loopback port with a configuration written
//! to a temporary directory, and is killed when dropped.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The credentials the tests' proxies accept.
pub const USER: &str = "alice";
/// The password the tests' proxies accept.
pub const PASSWORD: &str = "s3cret";

/// A proxy server process.
pub struct RealProxy {
    /// Its listening address.
    pub addr: SocketAddr,
    child: Child,
    dir: PathBuf,
    log: Option<PathBuf>,
}

impl RealProxy {
    /// tinyproxy on loopback, requiring Basic auth with [`USER`] and
    /// [`PASSWORD`]; `None` (with a message) when `tinyproxy` is not
    /// installed.
    pub fn tinyproxy() -> Option<Self> {
        let bin = find("tinyproxy")?;
        let port = free_port();
        let dir = scratch("tinyproxy");
        let log = dir.join("tinyproxy.log");
        let conf = dir.join("tinyproxy.conf");
        // No ConnectPort line: CONNECT to every port is allowed.
        std::fs::write(
            &conf,
            format!(
                "Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 64\n\
                 Allow 127.0.0.1\nBasicAuth {USER} {PASSWORD}\n\
                 LogFile \"{}\"\nLogLevel Connect\n",
                log.display()
            ),
        )
        .expect("tinyproxy.conf");
        let child = Command::new(bin)
            .arg("-d")
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tinyproxy starts");
        Self::wait_up(child, port, dir, Some(log))
    }

    /// microsocks on loopback, with username/password auth when `auth`;
    /// `None` (with a message) when `microsocks` is not installed.
    pub fn microsocks(auth: bool) -> Option<Self> {
        let bin = find("microsocks")?;
        let port = free_port();
        let dir = scratch("microsocks");
        let mut cmd = Command::new(bin);
        cmd.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
        if auth {
            cmd.args(["-u", USER, "-P", PASSWORD]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("microsocks starts");
        Self::wait_up(child, port, dir, None)
    }

    /// dante's `danted` on loopback without authentication; `None` (with a
    /// message) when it is not installed.
    pub fn dante() -> Option<Self> {
        let bin = find("danted")?;
        let port = free_port();
        let dir = scratch("danted");
        let conf = dir.join("danted.conf");
        let log = dir.join("danted.log");
        std::fs::write(
            &conf,
            format!(
                "logoutput: {}\ninternal: 127.0.0.1 port = {port}\nexternal: 127.0.0.1\n\
                 clientmethod: none\nsocksmethod: none\n\
                 user.privileged: root\nuser.unprivileged: nobody\n\
                 client pass {{ from: 127.0.0.0/8 to: 0.0.0.0/0 }}\n\
                 socks pass {{ from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect }}\n",
                log.display()
            ),
        )
        .expect("danted.conf");
        let child = Command::new(bin)
            .arg("-f")
            .arg(&conf)
            .arg("-p")
            .arg(dir.join("danted.pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("danted starts");
        Self::wait_up(child, port, dir, Some(log))
    }

    /// Waits up to 5 s for the proxy to accept connections.
    fn wait_up(mut child: Child, port: u16, dir: PathBuf, log: Option<PathBuf>) -> Option<Self> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let until = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
            if Instant::now() > until || matches!(child.try_wait(), Ok(Some(_))) {
                let _ = child.kill();
                let log = log.as_deref().map(read_log).unwrap_or_default();
                panic!("the proxy on {addr} did not start; its log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(RealProxy {
            addr,
            child,
            dir,
            log,
        })
    }

    /// What the proxy logged so far (tinyproxy: one line per request).
    pub fn log(&self) -> String {
        self.log.as_deref().map(read_log).unwrap_or_default()
    }
}

impl Drop for RealProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The path of `name` in `/usr/sbin`, `/usr/bin` or `/usr/local/*`, or
/// `None` after saying the test is skipped.
#[allow(clippy::print_stderr)] // the skip says why on stderr
fn find(name: &str) -> Option<PathBuf> {
    let found = ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists());
    if found.is_none() {
        eprintln!(
            "skipped: {name} is not installed (apt-get install -y tinyproxy dante-server \
             microsocks; .ci/proxy-setup.sh does it)"
        );
    }
    found
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A fresh directory for one proxy's files.
fn scratch(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "stn-proxy-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
