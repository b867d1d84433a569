//! The lab's network: two namespaces joined by a veth pair, deleted on drop,
//! and tokio runtimes whose sockets live inside one namespace.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;

use anyhow::{bail, Context};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::NetSpec;

/// Runs a command to completion; an error carries its stderr.
pub(super) fn run(program: &str, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {program}"))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .with_context(|| format!("writing to {program}"))?;
    }
    let out = child
        .wait_with_output()
        .with_context(|| format!("waiting for {program}"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The names the lab uses for one [`NetSpec`].
#[derive(Clone, Debug)]
pub(super) struct Names {
    pub(super) cli_ns: String,
    pub(super) srv_ns: String,
    pub(super) cli_if: String,
    pub(super) srv_if: String,
    pub(super) client_ip: Ipv4Addr,
    pub(super) server_ip: Ipv4Addr,
}

impl Names {
    pub(super) fn new(spec: &NetSpec) -> anyhow::Result<Names> {
        let p = &spec.prefix;
        // Interface names are at most 15 bytes; `-c`/`-s` are added.
        if p.is_empty()
            || p.len() > 13
            || !p
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            bail!("lab prefix {p:?} must be 1..=13 characters of [A-Za-z0-9_-]");
        }
        let (c, s) = (u32::from(spec.client_ip), u32::from(spec.server_ip));
        if c >> 2 != s >> 2 || c & 3 == 0 || c & 3 == 3 || s & 3 == 0 || s & 3 == 3 || c == s {
            bail!(
                "lab addresses {} and {} must be the two hosts of one /30",
                spec.client_ip,
                spec.server_ip
            );
        }
        Ok(Names {
            cli_ns: format!("{p}-cli"),
            srv_ns: format!("{p}-srv"),
            cli_if: format!("{p}-c"),
            srv_if: format!("{p}-s"),
            client_ip: spec.client_ip,
            server_ip: spec.server_ip,
        })
    }
}

/// Both namespaces and the veth pair between them. Dropping it deletes the
/// namespaces (the veth pair goes with them), also on panic or Ctrl-C.
#[derive(Debug)]
pub(super) struct LabNet {
    pub(super) names: Names,
}

impl LabNet {
    /// Deletes stale namespaces of the same names, then creates fresh ones
    /// joined by a veth pair (the nftables lab).
    pub(super) fn create(names: Names) -> anyhow::Result<LabNet> {
        let net = LabNet::create_namespaces(names)?;
        let n = &net.names;
        run(
            "ip",
            &[
                "link", "add", &n.cli_if, "netns", &n.cli_ns, "type", "veth", "peer", "name",
                &n.srv_if, "netns", &n.srv_ns,
            ],
            None,
        )?;
        for (ns, dev, ip) in [
            (&n.cli_ns, &n.cli_if, n.client_ip),
            (&n.srv_ns, &n.srv_if, n.server_ip),
        ] {
            let addr = format!("{ip}/30");
            run("ip", &["-n", ns, "addr", "add", &addr, "dev", dev], None)?;
            run("ip", &["-n", ns, "link", "set", dev, "up"], None)?;
        }
        Ok(net)
    }

    /// Deletes stale namespaces of the same names, then creates the two
    /// namespaces with only their loopback up (the emulator adds its TUN
    /// devices).
    pub(super) fn create_namespaces(names: Names) -> anyhow::Result<LabNet> {
        delete_namespaces(&names);
        run("ip", &["netns", "add", &names.cli_ns], None)?;
        // From here on the guard cleans up whatever was made.
        let net = LabNet { names };
        let n = &net.names;
        run("ip", &["netns", "add", &n.srv_ns], None)?;
        for ns in [&n.cli_ns, &n.srv_ns] {
            run("ip", &["-n", ns, "link", "set", "lo", "up"], None)?;
        }
        Ok(net)
    }
}

impl Drop for LabNet {
    fn drop(&mut self) {
        delete_namespaces(&self.names);
    }
}

fn delete_namespaces(names: &Names) {
    for ns in [&names.cli_ns, &names.srv_ns] {
        if namespace_exists(ns) {
            if let Err(e) = run("ip", &["netns", "delete", ns], None) {
                tracing::warn!(%ns, "could not delete lab namespace: {e:#}");
            }
        }
    }
}

/// Whether `ip netns` lists a namespace of this name.
pub(super) fn namespace_exists(ns: &str) -> bool {
    run("ip", &["netns", "list"], None).is_ok_and(|list| {
        list.lines()
            .any(|l| l.split_whitespace().next() == Some(ns))
    })
}

/// Moves the calling thread into the network namespace `ns` (setns(2)
/// moves only this thread; threads it spawns inherit it).
fn enter_namespace(ns: &str) -> anyhow::Result<()> {
    let path = format!("/var/run/netns/{ns}");
    let file = File::open(&path).with_context(|| format!("opening {path}"))?;
    rustix::thread::move_into_link_name_space(
        file.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .with_context(|| format!("entering network namespace {path}"))
}

/// Runs `f` on a short-lived thread inside the network namespace `ns`, so
/// whatever it creates (a TUN device, a socket) belongs to that namespace.
pub(super) fn in_namespace<T: Send>(
    ns: &str,
    f: impl FnOnce() -> anyhow::Result<T> + Send,
) -> anyhow::Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                enter_namespace(ns)?;
                f()
            })
            .join()
            .map_err(|_| anyhow::anyhow!("a thread in namespace {ns} panicked"))?
    })
}

/// A current-thread tokio runtime on its own OS thread, which first moves
/// itself into a network namespace: every socket its tasks open lives there.
/// Spawn work with [`NsRuntime::handle`]; dropping it stops the runtime
/// (cancelling its tasks) and joins the thread.
#[derive(Debug)]
pub(super) struct NsRuntime {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl NsRuntime {
    pub(super) fn start(ns: &str) -> anyhow::Result<NsRuntime> {
        let ns = ns.to_owned();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("{ns}-rt"))
            .spawn(move || {
                let setup = || -> anyhow::Result<tokio::runtime::Runtime> {
                    enter_namespace(&ns)?;
                    Ok(tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?)
                };
                match setup() {
                    Ok(rt) => {
                        let (stop_tx, stop_rx) = oneshot::channel::<()>();
                        if ready_tx.send(Ok((rt.handle().clone(), stop_tx))).is_ok() {
                            rt.block_on(async {
                                let _ = stop_rx.await;
                            });
                        }
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })
            .context("spawning a namespace thread")?;
        let (handle, stop) = ready_rx
            .recv()
            .context("namespace thread died during setup")??;
        Ok(NsRuntime {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub(super) fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for NsRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
