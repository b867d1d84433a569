//! OkHttp 2.x exactly as the Mars benchmark ran it (peers.md §0, §1.2, §8.1).

use std::net::SocketAddr;

use stn_proto::{Duration, Instant};

use crate::client::{ClientCx, SimClient};
use crate::clients::fresh_conn::{CallError, FreshConnClient, FreshConnConfig};
use crate::clients::peers::{syns_sent, Kernel};
use crate::socket::{SocketEvent, SocketId};
use crate::tcp::TcpStack;
use crate::workload::{
    CallClient, CallCost, CallFailure, CallId, CallOutcome, CallSpec, CallSuccess,
};

/// OkHttp 2.x as benchmarked: `new OkHttpClient()` per call, POST to an IP
/// literal with `Connection: close`, so exactly one route and one TCP attempt
/// per call; the connect timeout cuts the kernel's SYN schedule; an idle read
/// timeout; any timeout or exchange failure fails the call (2.x never
/// recovers an `InterruptedIOException`, and a fresh connection that fails
/// mid-exchange is not retried).
///
/// Each call runs on its own [`FreshConnClient`] limited to one call — which
/// is literally "a new client per call".
///
/// Modelled: connect timeout per attempt, read timeout from the request
/// handed to the socket to the first byte and between bytes.
/// Not modelled: the 10 s write timeout (the seam has no send-buffer
/// progress; a kernel send buffer takes the benchmark's small request at
/// once, so it cannot fire there), DNS (IP literal), the process-wide route
/// database (a one-IP host is unaffected by it).
#[derive(Debug)]
pub struct OkHttp2017 {
    base: FreshConnConfig,
    stack: TcpStack,
    call: Option<Running>,
    outcomes: Vec<CallOutcome>,
}

#[derive(Debug)]
struct Running {
    id: CallId,
    started: Instant,
    connected: Option<Instant>,
    inner: FreshConnClient,
}

impl OkHttp2017 {
    /// OkHttp's default timeouts: connect, read (and write) 10 s.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// The connect timeout of the published OkHttp sensitivity runs
    /// ("OkHttp 的连接超时由默认的 10s 修改为 60s").
    pub const SENSITIVITY_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

    /// As benchmarked: 10 s connect and read timeouts on `kernel`.
    pub fn benchmarked(server: SocketAddr, kernel: Kernel) -> Self {
        Self::with_config(FreshConnConfig::okhttp_2017(server), kernel.stack())
    }

    /// The sensitivity-test variant: connect timeout 60 s, read timeout 10 s.
    pub fn sensitivity(server: SocketAddr, kernel: Kernel) -> Self {
        let mut cfg = FreshConnConfig::okhttp_2017(server);
        cfg.connect_timeout = Self::SENSITIVITY_CONNECT_TIMEOUT;
        Self::with_config(cfg, kernel.stack())
    }

    /// Any fresh-connection configuration (its call limits and body length
    /// are overridden per call) on any stack.
    pub fn with_config(base: FreshConnConfig, stack: TcpStack) -> Self {
        OkHttp2017 {
            base,
            stack,
            call: None,
            outcomes: Vec::new(),
        }
    }

    /// The TCP stack to add this client with.
    pub fn stack(&self) -> TcpStack {
        self.stack.clone()
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.base.connect_timeout
    }

    fn check_done(&mut self) {
        let Some(run) = self.call.as_ref() else {
            return;
        };
        let Some(rec) = run.inner.calls().first() else {
            return;
        };
        let connect_time = run.connected.unwrap_or(rec.finished) - run.started;
        let cost = CallCost {
            connects: 1,
            syns: syns_sent(&self.stack.syn_schedule, connect_time),
            requests: u32::from(run.connected.is_some()),
            reused: false,
        };
        let result = match rec.result {
            Ok((status, response_len)) => Ok(CallSuccess {
                status,
                response_len,
            }),
            Err(e) => Err(failure(e)),
        };
        self.outcomes.push(CallOutcome {
            id: run.id,
            result,
            cost,
        });
        self.call = None;
    }
}

fn failure(e: CallError) -> CallFailure {
    match e {
        CallError::ConnectTimeout => CallFailure::ConnectTimeout,
        CallError::ConnectFailed(c) => CallFailure::ConnectFailed(c),
        CallError::ReadTimeout => CallFailure::ReadTimeout,
        CallError::Reset => CallFailure::Reset,
        CallError::UnexpectedEof => CallFailure::UnexpectedEof,
        CallError::BadResponse => CallFailure::BadResponse,
    }
}

impl CallClient for OkHttp2017 {
    fn start_call(&mut self, cx: &mut ClientCx<'_>, id: CallId, spec: &CallSpec) {
        if self.call.is_some() {
            // One synchronous call at a time, like the benchmark's thread.
            self.outcomes.push(CallOutcome {
                id,
                result: Err(CallFailure::Rejected),
                cost: CallCost::default(),
            });
            return;
        }
        let mut cfg = self.base.clone();
        cfg.request_body_len = spec.request_len;
        cfg.target_successes = 1;
        cfg.max_calls = 1;
        let mut inner = FreshConnClient::new(cfg);
        inner.start(cx);
        self.call = Some(Running {
            id,
            started: cx.now(),
            connected: None,
            inner,
        });
        self.check_done();
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        let Some(run) = self.call.as_mut() else {
            return;
        };
        // TCP up: `TcpConnected` on a TLS socket, `Connected` on a plain one.
        if matches!(event, SocketEvent::Connected | SocketEvent::TcpConnected)
            && run.connected.is_none()
        {
            run.connected = Some(cx.now());
        }
        run.inner.on_socket_event(cx, socket, event);
        self.check_done();
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        if let Some(run) = self.call.as_mut() {
            run.inner.on_wakeup(cx);
        }
        self.check_done();
    }

    fn poll_outcome(&mut self) -> Option<CallOutcome> {
        if self.outcomes.is_empty() {
            None
        } else {
            Some(self.outcomes.remove(0))
        }
    }
}
