//! The simulation: the event loop over the network and the clients.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use stn_proto::Instant;
use stn_proto::Rng;

use crate::client::{ClientCx, ClientId, ClientState, SimClient};
use crate::host::{PortMode, ServerApp, ServerCost, ServerHost};
use crate::link::LinkStats;
use crate::network::{NetEvent, Network, STREAM_CLIENT};
use crate::path::PathSchedule;
use crate::tcp::TcpStack;
use crate::trace::Trace;

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every client reported [`SimClient::is_finished`].
    AllFinished,
    /// No event is left.
    Idle,
    /// The time limit came first (the clock stands at the limit).
    TimeLimit,
}

/// Errors when configuring a simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// No host was added at this address.
    #[error("no host at {0}")]
    UnknownHost(IpAddr),
}

#[derive(Debug)]
struct Slot<C> {
    client: C,
    state: ClientState,
}

/// A deterministic simulation: one root seed, one client host, any number
/// of server hosts each behind its own path, and client models of type `C`
/// (use `Box<dyn SimClient>` to mix kinds).
///
/// ```
/// use stn_sim::{Simulation, apps::FixedResponseApp, clients::fresh_conn::{FreshConnClient, FreshConnConfig}};
/// use stn_sim::{host::PortMode, path::PathSchedule, preset::Preset, tcp::TcpStack};
/// use stn_proto::{Duration, Instant};
///
/// let server: std::net::SocketAddr = "10.0.0.2:8080".parse().unwrap();
/// let mut sim = Simulation::new(7);
/// sim.add_host(server.ip(), PathSchedule::constant(Preset::ThreeG.conditions()))
///     .set_port(8080, PortMode::Listen(Box::new(FixedResponseApp::new(100, Duration::ZERO))));
/// let mut cfg = FreshConnConfig::okhttp_2017(server);
/// cfg.max_calls = 3;
/// let id = sim.add_client(FreshConnClient::new(cfg), TcpStack::linux_classic());
/// sim.run_until_finished(Instant::from_secs(60));
/// assert_eq!(sim.client(id).successes(), 3);
/// ```
#[derive(Debug)]
pub struct Simulation<C> {
    net: Network,
    slots: Vec<Slot<C>>,
}

impl<C: SimClient> Simulation<C> {
    /// The client host's address.
    pub const CLIENT_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

    /// An empty simulation at time zero; every random stream derives from
    /// `seed`.
    pub fn new(seed: u64) -> Self {
        Simulation {
            net: Network::new(seed, Self::CLIENT_IP),
            slots: Vec::new(),
        }
    }

    /// Whether the trace keeps events (default) or only their hash and
    /// count (for long runs). The hash is the same either way.
    pub fn keep_trace_events(&mut self, keep: bool) {
        self.net.trace.set_keep_events(keep);
    }

    /// The root seed.
    pub fn seed(&self) -> u64 {
        self.net.seed()
    }

    /// Adds a Linux server host at `ip` behind `path`; configure its ports on
    /// the returned host (unconfigured ports refuse). Adding the same IP
    /// again replaces host and path.
    pub fn add_host(&mut self, ip: IpAddr, path: PathSchedule) -> &mut ServerHost {
        self.add_host_with_stack(ip, path, TcpStack::linux_classic())
    }

    /// [`Simulation::add_host`] with an explicit server stack.
    pub fn add_host_with_stack(
        &mut self,
        ip: IpAddr,
        path: PathSchedule,
        stack: TcpStack,
    ) -> &mut ServerHost {
        self.net.add_host(ip, path, stack)
    }

    /// Sets how the port of `addr` treats connection attempts.
    pub fn set_port(&mut self, addr: SocketAddr, mode: PortMode) -> Result<(), SimError> {
        let host = self
            .net
            .host_mut(addr.ip())
            .ok_or(SimError::UnknownHost(addr.ip()))?;
        host.set_port(addr.port(), mode);
        Ok(())
    }

    /// Shorthand for `set_port(addr, PortMode::Listen(Box::new(app)))`.
    pub fn listen(
        &mut self,
        addr: SocketAddr,
        app: impl ServerApp + 'static,
    ) -> Result<(), SimError> {
        self.set_port(addr, PortMode::Listen(Box::new(app)))
    }

    /// Puts a middlebox (a NAT that forgets idle flows,
    /// [`crate::middlebox`]) at the client's edge of every path; `None`
    /// removes it.
    pub fn set_middlebox(&mut self, nat: Option<crate::middlebox::Nat>) {
        self.net.set_middlebox(nat);
    }

    /// The middlebox, if any.
    pub fn middlebox(&self) -> Option<&crate::middlebox::Nat> {
        self.net.middlebox()
    }

    /// The host at `ip`.
    pub fn host(&self, ip: IpAddr) -> Option<&ServerHost> {
        self.net.host(ip)
    }

    /// What connection attempts cost every server host so far, summed.
    pub fn server_cost(&self) -> ServerCost {
        let mut cost = ServerCost::default();
        for h in self.net.hosts() {
            cost.add(&h.cost());
        }
        cost
    }

    /// Packet counters of the path to `ip`: (up, down).
    pub fn link_stats(&self, ip: IpAddr) -> Option<(LinkStats, LinkStats)> {
        self.net.link_stats(ip)
    }

    /// Adds a client whose connections use `stack`; it starts at the current
    /// time, when the run loop next runs.
    pub fn add_client(&mut self, client: C, stack: TcpStack) -> ClientId {
        let now = self.net.now;
        self.add_client_at(client, stack, now)
    }

    /// Adds a client on a host of its own: its sockets' source address is
    /// `ip` (clients behind one carrier-grade NAT share one), every segment
    /// it exchanges with any server crosses its own access link `path`
    /// (random streams of its own, from the root seed and its id), and it
    /// keeps its own TCP metrics. It starts at `start` (not before now).
    pub fn add_client_host(
        &mut self,
        client: C,
        stack: TcpStack,
        (ip, path): (IpAddr, &PathSchedule),
        start: Instant,
    ) -> ClientId {
        let id = self.add_client_at(client, stack, start.max(self.net.now));
        self.net.set_client_host(id, ip, path);
        id
    }

    /// The host at `ip`, mutably (to take it down, or change its limits,
    /// between runs of the loop).
    pub fn host_mut(&mut self, ip: IpAddr) -> Option<&mut ServerHost> {
        self.net.host_mut(ip)
    }

    /// How many clients were added.
    pub fn client_count(&self) -> usize {
        self.slots.len()
    }

    fn add_client_at(&mut self, client: C, stack: TcpStack, start: Instant) -> ClientId {
        let id = ClientId(u32::try_from(self.slots.len()).unwrap_or(u32::MAX));
        let rng = Rng::derive(self.net.seed(), STREAM_CLIENT | u64::from(id.0));
        self.slots.push(Slot {
            client,
            state: ClientState {
                rng,
                stack,
                wake_at: None,
                wake_generation: 0,
            },
        });
        self.net
            .queue
            .push(start, NetEvent::ClientStart { client: id });
        id
    }

    /// Runs TLS 1.3 ([`crate::tls`]) on every socket client `id` opens from
    /// now on (`None`: plain TCP, the default). Its tickets live as long as
    /// the client.
    pub fn set_client_tls(&mut self, id: ClientId, tls: Option<crate::tls::TlsClientConfig>) {
        self.net.set_client_tls(id, tls);
    }

    /// The client model `id`.
    ///
    /// # Panics
    /// If `id` was not returned by this simulation's `add_client`.
    pub fn client(&self, id: ClientId) -> &C {
        &self.slots[id.0 as usize].client
    }

    /// The client model `id`, mutably.
    ///
    /// # Panics
    /// If `id` was not returned by this simulation's `add_client`.
    pub fn client_mut(&mut self, id: ClientId) -> &mut C {
        &mut self.slots[id.0 as usize].client
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.net.now
    }

    /// The trace so far.
    pub fn trace(&self) -> &Trace {
        &self.net.trace
    }

    /// Runs every event up to and including `limit`; stops early only when
    /// no event is left.
    pub fn run_until(&mut self, limit: Instant) -> RunOutcome {
        self.run(limit, false)
    }

    /// Like [`Simulation::run_until`], but also stops as soon as every
    /// client is finished.
    pub fn run_until_finished(&mut self, limit: Instant) -> RunOutcome {
        self.run(limit, true)
    }

    fn run(&mut self, limit: Instant, stop_when_finished: bool) -> RunOutcome {
        loop {
            self.dispatch_pending();
            if stop_when_finished && self.slots.iter().all(|s| s.client.is_finished()) {
                return RunOutcome::AllFinished;
            }
            match self.net.queue.peek_time() {
                None => return RunOutcome::Idle,
                Some(t) if t > limit => {
                    self.net.now = self.net.now.max(limit);
                    return RunOutcome::TimeLimit;
                }
                Some(_) => {}
            }
            let Some((t, ev)) = self.net.queue.pop() else {
                return RunOutcome::Idle;
            };
            self.net.now = t;
            match ev {
                NetEvent::ClientStart { client } => self.with_client(client, |c, cx| c.start(cx)),
                NetEvent::ClientWake { client, generation } => {
                    let Some(slot) = self.slots.get_mut(client.0 as usize) else {
                        continue;
                    };
                    if slot.state.wake_generation != generation || slot.state.wake_at != Some(t) {
                        continue; // superseded
                    }
                    slot.state.wake_at = None;
                    self.with_client(client, |c, cx| c.on_wakeup(cx));
                }
                other => self.net.handle(other),
            }
        }
    }

    /// Hands queued socket events to their clients, recording each.
    fn dispatch_pending(&mut self) {
        while let Some((client, socket, event)) = self.net.pending.pop_front() {
            let now = self.net.now;
            self.net.trace.socket(now, client, socket, &event);
            self.with_client(client, |c, cx| c.on_socket_event(cx, socket, event));
        }
    }

    fn with_client(&mut self, id: ClientId, f: impl FnOnce(&mut C, &mut ClientCx<'_>)) {
        let Some(slot) = self.slots.get_mut(id.0 as usize) else {
            return;
        };
        let mut cx = ClientCx {
            id,
            net: &mut self.net,
            state: &mut slot.state,
        };
        f(&mut slot.client, &mut cx);
    }
}
