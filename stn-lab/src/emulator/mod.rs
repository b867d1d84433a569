//! The lab's link emulator, in the style of mahimahi: the client and server
//! namespaces each get a TUN device instead of a veth pair, and this
//! process carries every IP packet between them through stn-sim's own
//! [`Link`](stn_sim::link::Link) model, one per direction, in real time —
//! delay, jitter, bandwidth with a bounded drop-tail queue, Bernoulli and
//! Gilbert–Elliott loss, scripted outages — so a scenario file means the
//! same link in the simulator and on the real kernel.
//!
//! Topology: `<prefix>-c` in `<prefix>-cli` holds the client address with
//! the server address as its point-to-point peer, and `<prefix>-s` in
//! `<prefix>-srv` the reverse, so the kernels route to each other through
//! the TUN devices and nothing else. Only IPv4 is forwarded; the emulator
//! writes a packet only to the other namespace's device, so no packet can
//! leave the two namespaces.
//!
//! Timing: the link model returns each packet's delivery instant; a
//! per-direction task writes it out when that instant comes (tokio's timer,
//! millisecond granularity). [`DirectionStats::max_late`] measures how late
//! the writes really were on this machine.

mod direction;
mod packet;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;
use stn_proto::Rng;
use stn_sim::link::{LinkConditions, LinkSchedule};
use stn_sim::path::PathSchedule;
use tokio::sync::oneshot;

use super::netns::{in_namespace, run, Names};
pub use direction::DirectionStats;
use direction::{pipe, DirectionShared};

/// MTU of both TUN devices: Ethernet's, as on a phone's mobile link.
const MTU: u16 = 1500;

/// What both directions did since the last [`LinkEmulator::set_path`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmulatorStats {
    /// Client → server.
    pub up: DirectionStats,
    /// Server → client.
    pub down: DirectionStats,
}

/// The running emulator: two TUN devices and the thread that moves packets
/// between them. Dropping it stops the thread and closes the devices
/// (which removes them).
#[derive(Debug)]
pub struct LinkEmulator {
    up: DirectionShared,
    down: DirectionShared,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LinkEmulator {
    /// Creates the TUN devices in the (existing, empty) namespaces of
    /// `names`, gives them their addresses and starts forwarding over a
    /// perfect link until [`LinkEmulator::set_path`].
    pub(super) fn start(names: &Names) -> anyhow::Result<LinkEmulator> {
        let cli = open_tun(&names.cli_ns, &names.cli_if)?;
        let srv = open_tun(&names.srv_ns, &names.srv_if)?;
        address(
            &names.cli_ns,
            &names.cli_if,
            names.client_ip,
            names.server_ip,
        )?;
        address(
            &names.srv_ns,
            &names.srv_if,
            names.server_ip,
            names.client_ip,
        )?;
        let perfect = LinkSchedule::constant(LinkConditions::default());
        let up = DirectionShared::new(perfect.clone(), 0);
        let down = DirectionShared::new(perfect, 0);
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<anyhow::Result<()>>();
        let (up_state, down_state) = (up.clone(), down.clone());
        let thread = std::thread::Builder::new()
            .name("stnlab-emulator".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.into()));
                        return;
                    }
                };
                rt.block_on(async move {
                    let devices = tun::AsyncDevice::new(cli)
                        .and_then(|c| Ok((c, tun::AsyncDevice::new(srv)?)))
                        .context("registering the TUN devices with the emulator's runtime");
                    let (cli, srv) = match devices {
                        Ok((c, s)) => (Arc::new(c), Arc::new(s)),
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    tokio::select! {
                        r = pipe(cli.clone(), srv.clone(), up_state) => {
                            tracing::error!("emulator uplink stopped: {r:?}");
                        }
                        r = pipe(srv, cli, down_state) => {
                            tracing::error!("emulator downlink stopped: {r:?}");
                        }
                        _ = stop_rx => {}
                    }
                });
            })
            .context("spawning the emulator thread")?;
        ready_rx
            .recv()
            .context("the emulator thread died during setup")??;
        Ok(LinkEmulator {
            up,
            down,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// Starts `path` at t = 0 now (its outage schedule counts from here),
    /// with loss and jitter streams derived from `seed` and zeroed counters.
    pub fn set_path(&self, path: &PathSchedule, seed: u64) {
        let mut rng = Rng::derive(seed, 0x7E11);
        self.up.reset(path.up.clone(), rng.next_u64());
        self.down.reset(path.down.clone(), rng.next_u64());
    }

    /// Both directions' counters since the last [`LinkEmulator::set_path`].
    pub fn stats(&self) -> EmulatorStats {
        EmulatorStats {
            up: self.up.stats(),
            down: self.down.stats(),
        }
    }
}

impl Drop for LinkEmulator {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Creates the TUN device `dev` inside namespace `ns` (a TUN device belongs
/// to the namespace of the thread that creates it).
fn open_tun(ns: &str, dev: &str) -> anyhow::Result<tun::Device> {
    in_namespace(ns, || {
        let mut config = tun::Configuration::default();
        config.tun_name(dev).mtu(MTU).layer(tun::Layer::L3);
        // Addresses are set with `ip` below, where a point-to-point peer
        // can be named.
        config.platform_config(|p| {
            p.ensure_root_privileges(false);
        });
        tun::create(&config).with_context(|| format!("creating TUN device {dev} in {ns}"))
    })
}

/// `ip addr add LOCAL peer PEER dev DEV; ip link set DEV up` in `ns`, and
/// CUBIC on the route to the peer.
fn address(ns: &str, dev: &str, local: Ipv4Addr, peer: Ipv4Addr) -> anyhow::Result<()> {
    let (local, peer) = (local.to_string(), format!("{peer}/32"));
    run(
        "ip",
        &["-n", ns, "addr", "add", &local, "peer", &peer, "dev", dev],
        None,
    )?;
    run(
        "ip",
        &["-n", ns, "link", "set", dev, "mtu", &MTU.to_string(), "up"],
        None,
    )?;
    // The phones' and the simulator's congestion control, whatever the
    // host's default (a new namespace inherits it, and BBR paces and reacts
    // to loss differently). A per-route `congctl` rather than the
    // namespace's sysctl: outside the initial namespace the kernel refuses a
    // default not in `tcp_allowed_congestion_control`, while a route's
    // algorithm is taken by both the connecting and the accepting socket
    // (tcp_ca_dst_init, tcp_ca_openreq_child).
    run(
        "ip",
        &[
            "-n", ns, "route", "replace", &peer, "dev", dev, "proto", "kernel", "scope", "link",
            "src", &local, "congctl", "cubic",
        ],
        None,
    )
    .context("setting CUBIC on the route to the peer")?;
    Ok(())
}
