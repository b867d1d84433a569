//! One call by each lab client: stn's [`Client`] (short link, retry 0, the
//! server's IP four times, as in the Mars benchmark) and the peer, reqwest
//! set up like OkHttp 2.x in that benchmark.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use stn_proto::task::{Channel, Task};
use stn_proto::Profile;

use super::LabClient;
use crate::server::DEFAULT_CGI_PATH;
use crate::Client;

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

/// A distinct body per call: Mars's frequency limit refuses floods of
/// identical requests, which the benchmark's bodies were not.
fn body(label: &str, index: usize) -> Vec<u8> {
    let mut b = format!("{label}:{index}:").into_bytes();
    b.resize(BODY_SIZE.max(b.len()), b'x');
    b
}

/// The stn client for `profile`, as the benchmark ran Mars: short link
/// only, one server IP given four times (so the racing connect can race),
/// and for `mars-2017` the IP ban disabled.
pub(super) fn stn_client(profile: Profile, server: SocketAddr) -> anyhow::Result<Client> {
    let mut builder = Client::builder()
        .ips([server.ip(); 4])
        .short_link_port(server.port())
        .profile(profile);
    if profile == Profile::Mars2017 {
        builder = builder.configure(|c| c.ban.enabled = false);
    }
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
    let body = body(label, index);
    let mut task = Task::new(8, DEFAULT_CGI_PATH, body.clone()).channel(Channel::Short);
    if let Some(r) = retry {
        task = task.retry_count(r);
    }
    let t0 = Instant::now();
    let (ok, attempts, error) = match tokio::time::timeout(cap, client.send_detailed(task)).await {
        Ok(done) => match done.outcome {
            Ok(resp) if resp.body.as_ref() == body.as_slice() => (true, done.attempts, None),
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
    let body = body(LabClient::Peer.name(), index);
    let t0 = Instant::now();
    let result = tokio::time::timeout(cap, peer_request(server, body.clone())).await;
    let ended = Instant::now();
    let (ok, error) = match result {
        Ok(Ok(resp)) if resp == body => (true, None),
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

async fn peer_request(server: SocketAddr, body: Vec<u8>) -> Result<Vec<u8>, String> {
    let client = reqwest::Client::builder()
        .connect_timeout(PEER_TIMEOUT)
        .read_timeout(PEER_TIMEOUT)
        .pool_max_idle_per_host(0)
        .no_proxy()
        .build()
        .map_err(|e| format!("building reqwest client: {e}"))?;
    let url = format!("http://{server}{DEFAULT_CGI_PATH}");
    let resp = client
        .post(url)
        .header(reqwest::header::CONNECTION, "close")
        .body(body)
        .send()
        .await
        .map_err(describe)?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let bytes = resp.bytes().await.map_err(describe)?;
    Ok(bytes.to_vec())
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
