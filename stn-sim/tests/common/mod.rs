//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;

use stn_proto::{Duration, Instant};
use stn_sim::apps::FixedResponseApp;
use stn_sim::client::{ClientCx, SimClient};
use stn_sim::clients::peers::KeepAliveApp;
use stn_sim::host::{ServerApp, ServerConnId, ServerReplies};
use stn_sim::link::{GilbertElliott, LossModel};
use stn_sim::path::{Direction, PathConditions, PathSchedule};
use stn_sim::preset::Preset;
use stn_sim::socket::{SocketEvent, SocketId};
use stn_sim::tcp::Flags;
use stn_sim::trace::TraceEvent;
use stn_sim::Simulation;

pub const SERVER: &str = "10.0.0.2:8080";

pub fn server() -> SocketAddr {
    SERVER.parse().unwrap()
}

/// Port 8080 of the `i`-th server host, `10.0.0.{2 + i}` ([`server`] is
/// the first).
pub fn nth_server(i: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 2 + i], 8080))
}

/// Adds server hosts `nth_server(0..hosts)`, each behind its own copy of
/// `path`, answering every request with `response_len` bytes at once over
/// keep-alive connections or closing each (`Connection: close`).
pub fn add_servers<C: SimClient>(
    sim: &mut Simulation<C>,
    hosts: u8,
    path: &PathSchedule,
    keep_alive: bool,
    response_len: usize,
) {
    for i in 0..hosts {
        sim.add_host(nth_server(i).ip(), path.clone());
        if keep_alive {
            sim.listen(
                nth_server(i),
                KeepAliveApp::new(response_len, Duration::ZERO),
            )
            .unwrap();
        } else {
            sim.listen(
                nth_server(i),
                FixedResponseApp::new(response_len, Duration::ZERO),
            )
            .unwrap();
        }
    }
}

/// The hard networks of the swarm tests: Edge, Very Bad, 50 % loss, Edge
/// with bursty 20 % loss (200 ms bursts) and 3G + 10 % with ±80 ms jitter.
pub fn hard_networks() -> Vec<(&'static str, PathConditions)> {
    let mut bursty = Preset::Edge.conditions();
    bursty.up.loss = LossModel::GilbertElliott(GilbertElliott::with_rate_and_burst(
        0.2,
        Duration::from_millis(200),
    ));
    bursty.down.loss = bursty.up.loss;
    let mut jittery = Preset::ThreeG.conditions().with_loss_percent(10.0);
    jittery.up.jitter = Duration::from_millis(80);
    jittery.down.jitter = Duration::from_millis(80);
    vec![
        ("Edge", Preset::Edge.conditions()),
        ("Very Bad", Preset::VeryBadNetwork.conditions()),
        ("50% loss", Preset::LossPercent(50.0).conditions()),
        ("Edge + bursty 20%", bursty),
        ("3G + 10% + jitter", jittery),
    ]
}

/// Connects once at start, sends `payload` when connected, records every
/// event with its time. Finished on the first terminal event or once
/// `expect_reply` bytes arrived.
#[derive(Debug, Default)]
pub struct OneShot {
    pub target: Option<SocketAddr>,
    pub payload: Vec<u8>,
    pub expect_reply: usize,
    pub socket: Option<SocketId>,
    pub events: Vec<(Instant, SocketEvent)>,
    pub received: usize,
    pub done: bool,
}

impl OneShot {
    pub fn new(target: SocketAddr, payload: Vec<u8>, expect_reply: usize) -> Self {
        OneShot {
            target: Some(target),
            payload,
            expect_reply,
            ..Default::default()
        }
    }

    pub fn time_of(&self, f: impl Fn(&SocketEvent) -> bool) -> Option<Instant> {
        self.events.iter().find(|(_, e)| f(e)).map(|(t, _)| *t)
    }
}

impl SimClient for OneShot {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        self.socket = self.target.map(|t| cx.connect(t));
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        self.events.push((cx.now(), event.clone()));
        match event {
            SocketEvent::Connected => {
                if self.expect_reply == 0 && self.payload.is_empty() {
                    self.done = true;
                } else {
                    cx.send(socket, &self.payload).unwrap();
                }
            }
            SocketEvent::Data(d) => {
                self.received += d.len();
                if self.received >= self.expect_reply {
                    self.done = true;
                }
            }
            _ => self.done = true,
        }
    }

    fn on_wakeup(&mut self, _cx: &mut ClientCx<'_>) {}

    fn is_finished(&self) -> bool {
        self.done
    }
}

/// Counts request bytes; once `expect` arrived, replies with `reply_len` bytes.
#[derive(Debug)]
pub struct SinkApp {
    pub expect: usize,
    pub reply_len: usize,
    pub got: usize,
}

impl ServerApp for SinkApp {
    fn on_data(
        &mut self,
        _now: Instant,
        _conn: ServerConnId,
        data: &[u8],
        replies: &mut ServerReplies,
    ) {
        self.got += data.len();
        if self.got >= self.expect {
            replies.send(Duration::ZERO, vec![b'k'; self.reply_len]);
        }
    }
}

/// Accepts and never answers.
#[derive(Debug)]
pub struct SilentApp;

impl ServerApp for SilentApp {
    fn on_data(
        &mut self,
        _now: Instant,
        _conn: ServerConnId,
        _data: &[u8],
        _replies: &mut ServerReplies,
    ) {
    }
}

/// Send times (for uplink packets: delivery minus `owd`, or drop time) of
/// uplink segments matching `flags_filter`.
pub fn uplink_times(
    events: &[TraceEvent],
    owd: Duration,
    pred: impl Fn(u8, usize) -> bool,
) -> Vec<Instant> {
    let mut v: Vec<Instant> = events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Delivered {
                at,
                dir: Direction::Up,
                packet,
            } if pred(packet.flags, packet.len) => Some(*at - owd),
            TraceEvent::Dropped {
                at,
                dir: Direction::Up,
                packet,
                ..
            } if pred(packet.flags, packet.len) => Some(*at),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

pub fn is_syn(flags: u8, _len: usize) -> bool {
    flags & Flags::SYN.bits() != 0 && flags & Flags::ACK.bits() == 0
}
