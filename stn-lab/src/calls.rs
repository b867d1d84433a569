//! One call by each lab client: stn's [`Client`] (short link, retry 0, the
//! server's IP four times, as in the Mars benchmark) and the peer, reqwest
//! set up like OkHttp 2.x in that benchmark or, for scenario runs, like
//! OkHttp 5 as recommended (one shared client with a connection pool).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use stn_proto::Profile;
use stn_proto::{Channel, Task};

use super::LabClient;
use stn_server::{hello_response_body, DEFAULT_CGI_PATH};
use stn_tokio::Client;

/// The peer's connect timeout and read timeout (OkHttp's defaults).
pub(super) const PEER_TIMEOUT: Duration = Duration::from_secs(10);
/// Request body size: small, like the benchmark's protobuf hello.
const BODY_SIZE: usize = 64;

/// How one call ended.
#[derive(Clone, Debug)]
pub(super) struct CallRecord {
    pub(super) ok: bool,
    pub(super) duration: Duration,
    pub(super) attempts: u32,
    pub(super) error: Option<String>,
    /// When it ended (to measure outage completion from the outage start).
    pub(super) ended: Instant,
}

/// What one call sends and expects back.
#[derive(Clone, Copy, Debug)]
pub(super) struct CallShape<'a> {
    /// Names the client in the request body.
    pub(super) label: &'a str,
    /// Request body bytes (at least the label and index).
    pub(super) request_bytes: usize,
    /// The server's `response_size`: `None` echoes the request.
    pub(super) response_size: Option<usize>,
}

impl<'a> CallShape<'a> {
    /// The plain lab's call: a 64-byte body, echoed.
    pub(super) fn echo(label: &'a str) -> Self {
        CallShape {
            label,
            request_bytes: BODY_SIZE,
            response_size: None,
        }
    }

    /// A distinct body per call: Mars's frequency limit refuses floods of
    /// identical requests, which the benchmark's bodies were not.
    fn body(&self, index: usize) -> Vec<u8> {
        let mut b = format!("{}:{index}:", self.label).into_bytes();
        b.resize(self.request_bytes.max(b.len()), b'x');
        b
    }

    /// The response the reference server gives to `body`.
    fn expected(&self, body: &[u8]) -> bytes::Bytes {
        hello_response_body(body, self.response_size)
    }
}

/// The stn client for `profile`, as the benchmark ran Mars: short link
/// only, the server's IP given four times (so the racing connect can race),
/// and for `mars-2017` the IP ban disabled.
pub(super) fn stn_client(profile: Profile, server: SocketAddr) -> anyhow::Result<Client> {
    stn_client_with(profile, server, None, 4, |_| {})
}

/// [`stn_client`] with the server's IP `copies` times, a long link to
/// `long_port` of the server's IP if given (every copy of the IP on that
/// port, as the simulator's client resolves its long-link host), and `tune`
/// applied to the engine configuration last.
pub(super) fn stn_client_with(
    profile: Profile,
    server: SocketAddr,
    long_port: Option<u16>,
    copies: usize,
    tune: impl FnOnce(&mut stn_proto::Config) + Send + 'static,
) -> anyhow::Result<Client> {
    let ban_off = profile == Profile::Mars2017;
    let mut builder = Client::builder()
        .ips(vec![server.ip(); copies.max(1)])
        .short_link_port(server.port());
    if let Some(port) = long_port {
        builder = builder.long_link_port(port);
    }
    let builder = builder.profile(profile).configure(move |c| {
        if ban_off {
            c.ban_mut().enabled = false;
        }
        tune(c);
    });
    Ok(builder.build()?)
}

/// One stn task (`retry` `Some(0)` as the benchmark; `None` the engine's
/// default), bounded by `cap`.
pub(super) async fn stn_call(
    client: &Client,
    label: &str,
    retry: Option<u8>,
    index: usize,
    cap: Duration,
) -> CallRecord {
    let how = StnCall {
        channel: Channel::Short,
        retry,
        keep_alive: false,
    };
    stn_call_with(client, CallShape::echo(label), how, index, cap).await
}

/// How [`stn_call_with`] sends its task.
#[derive(Clone, Copy, Debug)]
pub(super) struct StnCall {
    /// The task's channel (the long link needs a client built with one).
    pub(super) channel: Channel,
    /// Retry count (`None`: the engine's default).
    pub(super) retry: Option<u8>,
    /// Send `Connection: Keep-Alive` (Mars's socket pool then reuses the
    /// connection, as the simulator's stn client does against a keep-alive
    /// server).
    pub(super) keep_alive: bool,
}

/// [`stn_call`] of `shape`, sent as `how` says.
pub(super) async fn stn_call_with(
    client: &Client,
    shape: CallShape<'_>,
    how: StnCall,
    index: usize,
    cap: Duration,
) -> CallRecord {
    let StnCall {
        channel,
        retry,
        keep_alive,
    } = how;
    let body = shape.body(index);
    let expected = shape.expected(&body);
    // Echo calls, whose replay is harmless: marked as the simulator's
    // bench marks them, so both sides may hedge alike.
    let mut task = Task::new(8, DEFAULT_CGI_PATH, body)
        .channel(channel)
        .hedge(true);
    if let Some(r) = retry {
        task = task.retry_count(r);
    }
    if keep_alive {
        task = task.header("Connection", "Keep-Alive");
    }
    let t0 = Instant::now();
    let (ok, attempts, error) = match tokio::time::timeout(cap, client.send_detailed(task)).await {
        Ok(done) => match done.outcome {
            Ok(resp) if resp.body == expected => (true, done.attempts, None),
            Ok(_) => (false, done.attempts, Some("wrong response body".to_owned())),
            Err(e) => (false, done.attempts, Some(e.to_string())),
        },
        Err(_) => (false, 0, Some(format!("no end within the lab cap {cap:?}"))),
    };
    let ended = Instant::now();
    CallRecord {
        ok,
        duration: ended - t0,
        attempts,
        error,
        ended,
    }
}

/// One peer call: a new reqwest client (as `new OkHttpClient()` per call),
/// `Connection: close`, 10 s connect and 10 s read timeouts, no retry (one
/// route, an IP literal), no proxy; bounded by `cap`.
pub(super) async fn peer_call(server: SocketAddr, index: usize, cap: Duration) -> CallRecord {
    let shape = CallShape::echo(LabClient::Peer.name());
    match peer_client(PEER_TIMEOUT, false) {
        Ok(client) => peer_call_with(&client, true, server, shape, index, cap).await,
        Err(e) => failed_call(e),
    }
}

/// A reqwest client with `connect_timeout` and OkHttp's 10 s read timeout,
/// no proxy; `pooled` keeps idle connections (OkHttp 5's pool keeps 5 for
/// 5 min), else none (OkHttp 2.x as benchmarked, a client per call).
pub(super) fn peer_client(
    connect_timeout: Duration,
    pooled: bool,
) -> Result<reqwest::Client, String> {
    let builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .read_timeout(PEER_TIMEOUT)
        .no_proxy();
    let builder = if pooled {
        builder
            .pool_max_idle_per_host(5)
            .pool_idle_timeout(Duration::from_secs(300))
    } else {
        builder.pool_max_idle_per_host(0)
    };
    builder
        .build()
        .map_err(|e| format!("building reqwest client: {e}"))
}

/// A call that could not start.
pub(super) fn failed_call(error: String) -> CallRecord {
    let now = Instant::now();
    CallRecord {
        ok: false,
        duration: Duration::ZERO,
        attempts: 0,
        error: Some(error),
        ended: now,
    }
}

/// One peer call of `shape` on `client` (`close`: send `Connection:
/// close`), bounded by `cap`.
pub(super) async fn peer_call_with(
    client: &reqwest::Client,
    close: bool,
    server: SocketAddr,
    shape: CallShape<'_>,
    index: usize,
    cap: Duration,
) -> CallRecord {
    let body = shape.body(index);
    let expected = shape.expected(&body);
    let t0 = Instant::now();
    let result = tokio::time::timeout(cap, peer_request(client, close, server, body)).await;
    let ended = Instant::now();
    let (ok, error) = match result {
        Ok(Ok(resp)) if resp == expected => (true, None),
        Ok(Ok(_)) => (false, Some("wrong response body".to_owned())),
        Ok(Err(e)) => (false, Some(e)),
        Err(_) => (false, Some(format!("no end within the lab cap {cap:?}"))),
    };
    CallRecord {
        ok,
        duration: ended - t0,
        attempts: 1,
        error,
        ended,
    }
}

async fn peer_request(
    client: &reqwest::Client,
    close: bool,
    server: SocketAddr,
    body: Vec<u8>,
) -> Result<bytes::Bytes, String> {
    let url = format!("http://{server}{DEFAULT_CGI_PATH}");
    let mut request = client.post(url).body(body);
    if close {
        request = request.header(reqwest::header::CONNECTION, "close");
    }
    let resp = request.send().await.map_err(describe)?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    resp.bytes().await.map_err(describe)
}

/// A short reason: which phase failed and the innermost cause.
fn describe(e: reqwest::Error) -> String {
    // reqwest starts its read timer with the request (connect included),
    // so a 10 s timeout cannot tell a slow connect from a slow response.
    let phase = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connect failed"
    } else if e.is_body() || e.is_decode() {
        "body failed"
    } else {
        "request failed"
    };
    let mut cause: &dyn std::error::Error = &e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    format!("{phase}: {cause}")
}
