//! HTTP/1.1 keep-alive for the pooled peer models: a request without
//! `Connection: close`, and a server that keeps connections open.

use std::collections::BTreeMap;

use bytes::Bytes;
use stn_proto::{Duration, Instant};

use crate::host::{ServerApp, ServerConnId, ServerReplies};
use crate::http;

/// A `POST path` request that leaves the connection open for reuse (no
/// `Connection` header: HTTP/1.1 defaults to keep-alive).
///
/// ```
/// let r = stn_sim::clients::peers::keep_alive_post("/mars/hello2", "h", b"hi");
/// assert_eq!(stn_sim::http::message_len(&r), Ok(Some(r.len())));
/// ```
pub fn keep_alive_post(path: &str, host: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

/// `true` when the message head at the start of `msg` says
/// `Connection: close` (the connection must not be reused).
pub(crate) fn says_close(msg: &[u8]) -> bool {
    let end = msg
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(msg.len());
    let Ok(head) = std::str::from_utf8(&msg[..end]) else {
        return true;
    };
    head.split("\r\n").skip(1).any(|line| {
        line.split_once(':').is_some_and(|(n, v)| {
            n.trim().eq_ignore_ascii_case("connection") && v.trim().eq_ignore_ascii_case("close")
        })
    })
}

/// An HTTP/1.1 server answering every complete request with the same `200`
/// response after a processing delay, keeping the connection open
/// (pipelined requests are answered in order). Requests carrying
/// `Connection: close` are answered and the connection closed, as a real
/// server does.
///
/// `reset_after`: once a connection has served that many responses, the
/// next request on it is answered with a RST — a server that forgot the
/// connection (restart, NAT or middlebox timeout), i.e. a **stale pooled
/// connection** as the client sees it.
#[derive(Clone, Debug)]
pub struct KeepAliveApp {
    response: Bytes,
    /// Processing delay between the last request byte and the response.
    pub delay: Duration,
    /// Reset a connection's request after this many served on it.
    pub reset_after: Option<u64>,
    pending: BTreeMap<ServerConnId, (Vec<u8>, u64)>,
    served: u64,
    resets: u64,
}

impl KeepAliveApp {
    /// Answers `200` with a body of `body_len` bytes after `delay`.
    pub fn new(body_len: usize, delay: Duration) -> Self {
        let body: Vec<u8> = (0..body_len).map(|i| (i % 251) as u8).collect();
        let mut response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        response.extend_from_slice(&body);
        KeepAliveApp {
            response: Bytes::from(response),
            delay,
            reset_after: None,
            pending: BTreeMap::new(),
            served: 0,
            resets: 0,
        }
    }

    /// Builder: see [`KeepAliveApp::reset_after`].
    pub fn with_reset_after(mut self, n: u64) -> Self {
        self.reset_after = Some(n);
        self
    }

    /// Requests answered so far.
    pub fn served(&self) -> u64 {
        self.served
    }

    /// Requests answered with a RST so far.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// Total bytes of each response (head + body).
    pub fn response_len(&self) -> usize {
        self.response.len()
    }
}

impl ServerApp for KeepAliveApp {
    fn on_data(
        &mut self,
        _now: Instant,
        conn: ServerConnId,
        data: &[u8],
        replies: &mut ServerReplies,
    ) {
        let (buf, count) = self.pending.entry(conn).or_default();
        buf.extend_from_slice(data);
        loop {
            match http::message_len(buf) {
                Ok(Some(n)) if buf.len() >= n => {
                    if self.reset_after.is_some_and(|limit| *count >= limit) {
                        self.resets += 1;
                        self.pending.remove(&conn);
                        replies.abort(Duration::ZERO);
                        return;
                    }
                    let close = says_close(buf);
                    buf.drain(..n);
                    *count += 1;
                    self.served += 1;
                    replies.send(self.delay, self.response.clone());
                    if close {
                        self.pending.remove(&conn);
                        replies.close(self.delay);
                        return;
                    }
                }
                Ok(_) => return,
                Err(_) => {
                    self.pending.remove(&conn);
                    replies.abort(Duration::ZERO);
                    return;
                }
            }
        }
    }

    fn on_peer_closed(&mut self, _now: Instant, conn: ServerConnId, replies: &mut ServerReplies) {
        self.pending.remove(&conn);
        replies.close(Duration::ZERO);
    }

    fn on_reset(&mut self, _now: Instant, conn: ServerConnId) {
        self.pending.remove(&conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_detection() {
        assert!(says_close(&http::response(200, b"x")));
        assert!(says_close(&http::post("/", "h", b"x")));
        assert!(!says_close(&keep_alive_post("/", "h", b"x")));
        let app = KeepAliveApp::new(3, Duration::ZERO);
        assert!(!says_close(&app.response));
    }

    #[test]
    fn pipelined_requests_answered_in_order() {
        let mut app = KeepAliveApp::new(3, Duration::ZERO);
        let mut two = keep_alive_post("/", "h", b"a");
        two.extend(keep_alive_post("/", "h", b"b"));
        let mut r = ServerReplies::default();
        app.on_data(Instant::ZERO, ServerConnId(0), &two, &mut r);
        assert_eq!(r.actions().len(), 2);
        assert_eq!(app.served(), 2);
    }

    #[test]
    fn reset_after_limit() {
        let mut app = KeepAliveApp::new(3, Duration::ZERO).with_reset_after(1);
        let req = keep_alive_post("/", "h", b"a");
        let mut r = ServerReplies::default();
        app.on_data(Instant::ZERO, ServerConnId(0), &req, &mut r);
        app.on_data(Instant::ZERO, ServerConnId(0), &req, &mut r);
        assert_eq!((app.served(), app.resets()), (1, 1));
        assert!(matches!(r.actions()[1].1, crate::host::ServerAction::Abort));
    }
}
