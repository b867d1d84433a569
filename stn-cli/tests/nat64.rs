//! NAT64 for real: `stn send` in an IPv6-only network namespace reaches
//! `stn serve` in an IPv4-only one through tayga, a NAT64 translator on a
//! TUN device in a router namespace between them, with the server named by
//! an IPv4 literal (and by a host name with only an A record). The client
//! has no IPv4 route at all: it must find the network's NAT64 prefix from
//! the AAAA answer for `ipv4only.arpa` (RFC 7050), which a small DNS server
//! in this test gives (the router's DNS64, as a carrier's would), and
//! synthesise the server's IPv6 address (RFC 6052). The prefix is
//! `2001:db8:64::/64`, a network-specific one whose embedding skips the
//! "u" octet, so nothing in the client can assume `64:ff9b::/96`.
//!
//! ```text
//!  n64-cli                      n64-rtr                          n64-srv
//!  2001:db8:1::2 ── veth ── 2001:db8:1::1   tayga (TUN)   192.0.2.1 ── veth ── 192.0.2.2
//!  stn send                 DNS (this test)  2001:db8:64::/64 <-> 192.168.255.0/24   stn serve
//! ```
//!
//! Needs root, `ip`, `/dev/net/tun` and tayga (`apt-get install tayga`;
//! `.ci/proxy-setup.sh`); skips with a message otherwise.
//!
//! ```text
//! cargo test -p stn-cli --test nat64
//! ```
#![allow(clippy::print_stderr)] // the skip says why on stderr

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TAYGA: &str = "/usr/sbin/tayga";
const PREFIX: &str = "2001:db8:64::";
const PREFIX_LEN: u8 = 64;
const CLIENT_V6: &str = "2001:db8:1::2";
const ROUTER_V6: &str = "2001:db8:1::1";
const SERVER_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const POOL: &str = "192.168.255.0/24";
/// A host name the test's DNS answers with an A record only.
const A_ONLY_HOST: &str = "server.nat64.test";

fn stn() -> &'static str {
    env!("CARGO_BIN_EXE_stn")
}

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        return Some("not root".into());
    }
    if !Path::new(TAYGA).exists() {
        return Some(format!("{TAYGA} missing (apt-get install tayga)"));
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun missing".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("`ip` (iproute2) missing".into());
    }
    None
}

/// Runs `ip args…`, panicking with its stderr on failure.
fn ip(args: &[&str]) {
    run("ip", args);
}

fn run(program: &str, args: &[&str]) -> Output {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "`{program} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The three namespaces, tayga, the DNS server and the reference server;
/// everything is torn down on drop.
struct Nat64Net {
    p: String,
    dir: PathBuf,
    children: Vec<Child>,
    dns: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Nat64Net {
    fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.p)
    }

    fn build() -> Nat64Net {
        let p = format!("n64{}", std::process::id() % 10_000);
        let dir = std::env::temp_dir().join(format!("stn-{p}"));
        let mut net = Nat64Net {
            p: p.clone(),
            dir,
            children: Vec::new(),
            dns: None,
        };
        net.teardown_namespaces();
        std::fs::create_dir_all(&net.dir).expect("scratch dir");
        let (cli, rtr, srv) = (net.ns("cli"), net.ns("rtr"), net.ns("srv"));
        for ns in [&cli, &rtr, &srv] {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        let (c, rc, s, rs, tun) = (
            format!("{p}-c"),
            format!("{p}-rc"),
            format!("{p}-s"),
            format!("{p}-rs"),
            format!("{p}-tun"),
        );
        ip(&[
            "link", "add", &c, "netns", &cli, "type", "veth", "peer", "name", &rc, "netns", &rtr,
        ]);
        ip(&[
            "link", "add", &s, "netns", &srv, "type", "veth", "peer", "name", &rs, "netns", &rtr,
        ]);
        // nodad: the addresses are usable at once (no duplicate detection wait).
        ip(&[
            "-n",
            &cli,
            "addr",
            "add",
            &format!("{CLIENT_V6}/64"),
            "dev",
            &c,
            "nodad",
        ]);
        ip(&[
            "-n",
            &rtr,
            "addr",
            "add",
            &format!("{ROUTER_V6}/64"),
            "dev",
            &rc,
            "nodad",
        ]);
        ip(&[
            "-n",
            &srv,
            "addr",
            "add",
            &format!("{SERVER_V4}/24"),
            "dev",
            &s,
        ]);
        ip(&["-n", &rtr, "addr", "add", "192.0.2.1/24", "dev", &rs]);
        for (ns, dev) in [(&cli, &c), (&rtr, &rc), (&rtr, &rs), (&srv, &s)] {
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        // The client's only way out is IPv6 to the router; the server's
        // answers to the translator's pool go back to the router.
        ip(&[
            "-n", &cli, "-6", "route", "add", "default", "via", ROUTER_V6,
        ]);
        ip(&["-n", &srv, "route", "add", "default", "via", "192.0.2.1"]);
        run(
            "ip",
            &[
                "netns",
                "exec",
                &rtr,
                "sysctl",
                "-qw",
                "net.ipv4.ip_forward=1",
                "net.ipv6.conf.all.forwarding=1",
            ],
        );
        // tayga on a TUN device in the router.
        let conf = net.dir.join("tayga.conf");
        std::fs::write(
            &conf,
            format!(
                "tun-device {tun}\nipv4-addr 192.168.255.1\nprefix {PREFIX}/{PREFIX_LEN}\n\
                 dynamic-pool {POOL}\ndata-dir {}\n",
                net.dir.display()
            ),
        )
        .expect("tayga.conf");
        let conf = conf.to_string_lossy().into_owned();
        run(
            "ip",
            &["netns", "exec", &rtr, TAYGA, "-c", &conf, "--mktun"],
        );
        ip(&["-n", &rtr, "link", "set", &tun, "up"]);
        ip(&["-n", &rtr, "addr", "add", "192.0.2.1", "dev", &tun]);
        ip(&["-n", &rtr, "addr", "add", ROUTER_V6, "dev", &tun, "nodad"]);
        ip(&["-n", &rtr, "route", "add", POOL, "dev", &tun]);
        ip(&[
            "-n",
            &rtr,
            "route",
            "add",
            &format!("{PREFIX}/{PREFIX_LEN}"),
            "dev",
            &tun,
        ]);
        let tayga = Command::new("ip")
            .args(["netns", "exec", &rtr, TAYGA, "-c", &conf, "-d"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tayga starts");
        net.children.push(tayga);
        // The client's resolver: `ip netns exec` mounts this over /etc/resolv.conf.
        let etc = PathBuf::from("/etc/netns").join(&cli);
        std::fs::create_dir_all(&etc).expect("/etc/netns");
        std::fs::write(
            etc.join("resolv.conf"),
            format!("nameserver {ROUTER_V6}\noptions timeout:1 attempts:3\n"),
        )
        .expect("resolv.conf");
        net.dns = Some(dns_server(&rtr));
        net
    }

    /// Starts `stn serve` in the server namespace on `short` and `long`;
    /// its log goes to `serve.log`.
    fn serve(&mut self, short: u16, long: u16) {
        let log = self.dir.join("serve.log");
        let file = std::fs::File::create(&log).expect("serve.log");
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns("srv"), stn(), "serve"])
            .args(["--short", &format!("{SERVER_V4}:{short}")])
            .args(["--long", &format!("{SERVER_V4}:{long}")])
            .env("RUST_LOG", "stn_server=debug,stn=info")
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("stn serve starts");
        self.children.push(child);
        let until = Instant::now() + Duration::from_secs(10);
        while !self.serve_log().contains("stn server running") {
            assert!(
                Instant::now() < until,
                "stn serve did not start: {}",
                self.serve_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn serve_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default()
    }

    /// Runs `stn send args…` in the client namespace (bounded by 30 s).
    fn send(&self, args: &[&str]) -> Output {
        let mut child = Command::new("timeout")
            .args(["30", "ip", "netns", "exec", &self.ns("cli"), stn(), "send"])
            .args(args)
            .env("RUST_LOG", "stn=info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("stn send starts");
        let _ = child.stdin.take();
        child.wait_with_output().expect("stn send ends")
    }

    fn teardown_namespaces(&self) {
        for role in ["cli", "rtr", "srv"] {
            let _ = Command::new("ip")
                .args(["netns", "delete", &self.ns(role)])
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(PathBuf::from("/etc/netns").join(self.ns("cli")));
    }
}

impl Drop for Nat64Net {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some((stop, thread)) = self.dns.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
        self.teardown_namespaces();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The router's DNS, on `[ROUTER_V6]:53` in namespace `ns`: `ipv4only.arpa`
/// has A 192.0.0.170 and .171 and the AAAA a DNS64 synthesises from them
/// under the prefix; [`A_ONLY_HOST`] has only an A record (the server's);
/// every other name is NXDOMAIN.
fn dns_server(ns: &str) -> (Arc<AtomicBool>, JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let path = format!("/var/run/netns/{ns}");
    let stop2 = stop.clone();
    let thread = std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("namespace file");
        rustix::thread::move_into_link_name_space(
            std::os::fd::AsFd::as_fd(&file),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )
        .expect("enter the router namespace");
        let addr: SocketAddr = format!("[{ROUTER_V6}]:53").parse().expect("addr");
        let socket = UdpSocket::bind(addr).expect("bind the DNS server");
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let _ = ready_tx.send(());
        let mut buf = [0u8; 512];
        while !stop2.load(Ordering::Relaxed) {
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                if let Some(reply) = dns_reply(&buf[..n]) {
                    let _ = socket.send_to(&reply, from);
                }
            }
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("DNS server up");
    (stop, thread)
}

/// The answer to one DNS query (RFC 1035 §4.1), or `None` for garbage.
fn dns_reply(query: &[u8]) -> Option<Vec<u8>> {
    if query.len() < 12 || query[4..6] != [0, 1] {
        return None;
    }
    // The question: labels, then type and class.
    let mut i = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*query.get(i)?);
        i += 1;
        if len == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(query.get(i..i + len)?).to_ascii_lowercase());
        i += len;
    }
    let qtype = u16::from_be_bytes([*query.get(i)?, *query.get(i + 1)?]);
    let question = &query[12..i + 4];
    let name = labels.join(".");
    let wka = [Ipv4Addr::new(192, 0, 0, 170), Ipv4Addr::new(192, 0, 0, 171)];
    let prefix: Ipv6Addr = PREFIX.parse().ok()?;
    let records: Option<Vec<Vec<u8>>> = match (name.as_str(), qtype) {
        ("ipv4only.arpa", 1) => Some(wka.iter().map(|a| a.octets().to_vec()).collect()),
        ("ipv4only.arpa", 28) => Some(
            wka.iter()
                .map(|a| synthesize(prefix, *a).octets().to_vec())
                .collect(),
        ),
        (A_ONLY_HOST, 1) => Some(vec![SERVER_V4.octets().to_vec()]),
        ("ipv4only.arpa" | A_ONLY_HOST, _) => Some(Vec::new()),
        _ => None,
    };
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&query[0..2]);
    // QR, opcode 0, RD copied, RA; rcode 0 or 3 (NXDOMAIN).
    let rd = query[2] & 1;
    out.push(0x80 | rd);
    out.push(if records.is_some() { 0x80 } else { 0x83 });
    let records = records.unwrap_or_default();
    out.extend_from_slice(&[0, 1]);
    out.extend_from_slice(&(records.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(question);
    for rdata in records {
        out.extend_from_slice(&[0xC0, 12]); // the question's name
        out.extend_from_slice(&qtype.to_be_bytes());
        out.extend_from_slice(&[0, 1, 0, 0, 0, 60]); // IN, TTL 60 s
        out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(&rdata);
    }
    Some(out)
}

/// RFC 6052 §2.2 for a /64 prefix: the IPv4 address in bits 72..103 (the
/// "u" octet, bits 64..71, stays zero). Written out here, independently of
/// stn_proto::nat64, which the client uses.
fn synthesize(prefix: Ipv6Addr, v4: Ipv4Addr) -> Ipv6Addr {
    let mut o = prefix.octets();
    o[9..13].copy_from_slice(&v4.octets());
    Ipv6Addr::from(o)
}

fn assert_ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{what}: {stdout}\n{stderr}");
    stderr
}

#[test]
fn ipv6_only_client_reaches_an_ipv4_literal_through_nat64() {
    if let Some(why) = missing() {
        eprintln!("skipped: the NAT64 test needs root, ip, /dev/net/tun and tayga: {why}");
        return;
    }
    let mut net = Nat64Net::build();
    let (short, long) = (8080, 8081);
    net.serve(short, long);

    // The client namespace has no IPv4 route: only NAT64 gets it out.
    let routes = run("ip", &["-n", &net.ns("cli"), "-4", "route", "show"]);
    assert!(
        routes.stdout.is_empty(),
        "no IPv4 route in the client namespace"
    );

    let to = format!("{SERVER_V4}:{short}");
    let logs = assert_ok(
        &net.send(&["--to", &to, "--count", "3"]),
        "short link to an IPv4 literal",
    );
    assert!(
        logs.contains(&format!(
            "NAT64 prefix discovered prefix={PREFIX}/{PREFIX_LEN}"
        )),
        "the client found the prefix: {logs}"
    );
    let to = format!("{SERVER_V4}:{long}");
    assert_ok(
        &net.send(&["--to", &to, "--channel", "long", "--count", "3"]),
        "long link to an IPv4 literal",
    );
    // A host name with only an A record (no DNS64 answer for it).
    let to = format!("{A_ONLY_HOST}:{short}");
    assert_ok(
        &net.send(&["--to", &to, "--count", "2"]),
        "short link to an A-only name",
    );

    // The server saw the connections from the translator's IPv4 pool.
    let log = net.serve_log();
    let opens = log
        .lines()
        .filter(|l| l.contains("short link open"))
        .count();
    let via_pool = log
        .lines()
        .filter(|l| l.contains("link open") && l.contains("peer=192.168.255."))
        .count();
    assert!(
        opens >= 2 && via_pool >= 3,
        "connections came through tayga's pool: {log}"
    );
}
