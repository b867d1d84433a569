//! The binding tests' harness: the library and the generator this build
//! made, the reference server (`stn serve`, plain and TLS), and the foreign
//! toolchains (a missing one skips its test with a message, unless
//! `STN_FFI_REQUIRE_TOOLS` is set, as CI sets it).
#![allow(dead_code, clippy::print_stderr)] // each test uses a subset; skips say why on stderr

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long `stn serve` may take to log its addresses (a loaded CI machine).
const LISTEN_BOUND: Duration = Duration::from_secs(60);

/// The `stn` binary: `$STN_BIN`, else built with cargo. The one place that
/// names the package the binary comes from.
pub(crate) fn stn_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("STN_BIN") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "STN_BIN={} is not a file", path.display());
        return path;
    }
    let status = Command::new(cargo())
        .args(["build", "--quiet", "-p", "stn-cli", "--bin", "stn"])
        .status()
        .expect("run cargo build for the stn binary");
    assert!(status.success(), "cargo build -p stn-cli --bin stn failed");
    let path = profile_dir().join(format!("stn{}", std::env::consts::EXE_SUFFIX));
    assert!(path.is_file(), "cargo built no {}", path.display());
    path
}

fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| "cargo".into(), PathBuf::from)
}

/// `target/<profile>`: where this test binary's build put its artifacts
/// (the test runs from `target/<profile>/deps`).
pub(crate) fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps")
        .to_path_buf()
}

/// The target directory.
pub(crate) fn target_dir() -> PathBuf {
    profile_dir()
        .parent()
        .expect("target/<profile> has a parent")
        .to_path_buf()
}

/// A fresh scratch directory under `target/ffi-tests`.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = target_dir().join("ffi-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// The library cargo built with this test: the package's cdylib, in
/// `deps` (test builds do not copy it up to `target/<profile>`).
pub(crate) fn cdylib() -> PathBuf {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    let path = profile_dir()
        .join("deps")
        .join(format!("{DLL_PREFIX}stn_ffi{DLL_SUFFIX}"));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// Generates `language`'s bindings from the library into `out`.
pub(crate) fn generate(language: &str, out: &Path) {
    let output = Command::new(env!("CARGO_BIN_EXE_uniffi-bindgen"))
        .args(["generate", "--no-format", "--library"])
        .arg(cdylib())
        .args(["--language", language, "--out-dir"])
        .arg(out)
        .output()
        .expect("run uniffi-bindgen");
    assert!(
        output.status.success(),
        "uniffi-bindgen generate --language {language} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Whether a missing toolchain fails the test instead of skipping it.
fn tools_required() -> bool {
    std::env::var_os("STN_FFI_REQUIRE_TOOLS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// `found`, or (if `None`) a skip: `false` after printing why, or a panic
/// when tools are required.
pub(crate) fn found_or_skip<T>(test: &str, what: &str, found: Option<T>) -> Option<T> {
    if found.is_none() {
        let why =
            format!("{test}: skipped: {what} not found (install it with `bash .ci/ffi-setup.sh`)");
        assert!(!tools_required(), "{why}; STN_FFI_REQUIRE_TOOLS is set");
        eprintln!("{why}");
    }
    found
}

/// The tools `bash .ci/ffi-setup.sh` installs, under the target directory.
pub(crate) fn tools_dir() -> PathBuf {
    target_dir().join("ffi-tools")
}

/// `$var` if set, else the first of `candidates` that exists.
pub(crate) fn locate(var: &str, candidates: &[PathBuf]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(var) {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    candidates.iter().find(|p| p.exists()).cloned()
}

/// `program` found on `PATH`.
pub(crate) fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Runs `command`, echoing its output, and fails the test unless it
/// succeeds and its stdout has `closing` (its "N passed, 0 failed" line).
pub(crate) fn run_and_check(what: &str, command: &mut Command, closing: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("run {what}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("---- {what} stdout ----\n{stdout}---- {what} stderr ----\n{stderr}");
    assert!(output.status.success(), "{what} failed ({})", output.status);
    assert!(
        stdout.contains(closing),
        "{what} printed no {closing:?} line"
    );
}

/// Kills the child whatever happens.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One `stn serve` and the addresses it logged.
pub(crate) struct Served {
    _child: KillOnDrop,
    /// The long link's address.
    pub(crate) long: SocketAddr,
    /// The short link's address.
    pub(crate) short: SocketAddr,
}

/// Starts `stn serve` on loopback ports the OS picks, with `extra` flags,
/// and waits (bounded) until it logs both addresses.
pub(crate) fn serve(extra: &[&str]) -> Served {
    let mut child = KillOnDrop(
        Command::new(stn_bin())
            .args(["serve", "--long", "127.0.0.1:0", "--short", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start stn serve"),
    );
    let stderr = child.0.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    // Reads the log to its end, so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            for link in ["long", "short"] {
                if line.contains(&format!("{link} link listening")) {
                    let addr = line
                        .rsplit("addr=")
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .to_owned();
                    let _ = tx.send((link, addr));
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
        if link == "long" {
            long = Some(addr);
        } else {
            short = Some(addr);
        }
    }
    Served {
        _child: child,
        long: long.expect("long"),
        short: short.expect("short"),
    }
}

/// What the foreign test programs run against: a plain server that pushes
/// every 100 ms, a TLS server with a self-signed CA, a CA that is not the
/// server's, and a port nothing listens on.
pub(crate) struct Servers {
    plain: Served,
    tls: Served,
    ca_pem: PathBuf,
    wrong_ca_pem: PathBuf,
    refused_port: u16,
}

impl Servers {
    /// Starts both servers; files go to `dir`.
    pub(crate) fn start(dir: &Path) -> Self {
        let ca_pem = dir.join("ca.pem");
        let wrong_ca_pem = dir.join("wrong-ca.pem");
        std::fs::write(&wrong_ca_pem, other_ca()).expect("write the wrong CA");
        let plain = serve(&["--push-every-ms", "100"]);
        let ca_out = ca_pem.to_str().expect("a UTF-8 path");
        let tls = serve(&["--tls-self-signed", "--tls-ca-out", ca_out]);
        // An ephemeral port, closed again: connects to it are refused.
        let refused_port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("an ephemeral port")
            .port();
        Servers {
            plain,
            tls,
            ca_pem,
            wrong_ca_pem,
            refused_port,
        }
    }

    /// The environment the test programs read.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("STN_PLAIN_SHORT", self.plain.short.port().to_string()),
            ("STN_PLAIN_LONG", self.plain.long.port().to_string()),
            ("STN_TLS_SHORT", self.tls.short.port().to_string()),
            ("STN_TLS_LONG", self.tls.long.port().to_string()),
            ("STN_CA_PEM", self.ca_pem.display().to_string()),
            ("STN_WRONG_CA_PEM", self.wrong_ca_pem.display().to_string()),
            ("STN_REFUSED_PORT", self.refused_port.to_string()),
        ]
    }
}

/// A CA certificate (PEM) no server here uses.
fn other_ca() -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "not the server's CA");
    params.self_signed(&key).expect("a self-signed CA").pem()
}
