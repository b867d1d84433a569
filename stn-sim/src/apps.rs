//! Simple server applications for tests and calibration.

use std::collections::BTreeMap;

use bytes::Bytes;
use stn_proto::{Duration, Instant};

use crate::host::{ServerApp, ServerConnId, ServerReplies};
use crate::http;

/// Echoes every chunk it receives after a fixed delay.
#[derive(Clone, Debug, Default)]
pub struct EchoApp {
    /// Processing delay before each echo.
    pub delay: Duration,
}

impl ServerApp for EchoApp {
    fn on_data(
        &mut self,
        _now: Instant,
        _conn: ServerConnId,
        data: &[u8],
        replies: &mut ServerReplies,
    ) {
        replies.send(self.delay, Bytes::copy_from_slice(data));
    }
}

/// An HTTP/1.1 server that answers every complete request with the same
/// response after a processing delay, then closes (`Connection: close`, as
/// in the benchmark's short link). Malformed requests get a RST.
#[derive(Clone, Debug)]
pub struct FixedResponseApp {
    response: Bytes,
    /// Processing delay between the last request byte and the response.
    pub delay: Duration,
    pending: BTreeMap<ServerConnId, Vec<u8>>,
    served: u64,
}

impl FixedResponseApp {
    /// Answers `200` with a body of `body_len` bytes after `delay`.
    pub fn new(body_len: usize, delay: Duration) -> Self {
        let body: Vec<u8> = (0..body_len).map(|i| (i % 251) as u8).collect();
        FixedResponseApp {
            response: Bytes::from(http::response(200, &body)),
            delay,
            pending: BTreeMap::new(),
            served: 0,
        }
    }

    /// Requests answered so far.
    pub fn served(&self) -> u64 {
        self.served
    }

    /// Total bytes of each response (head + body).
    pub fn response_len(&self) -> usize {
        self.response.len()
    }
}

impl ServerApp for FixedResponseApp {
    fn on_data(
        &mut self,
        _now: Instant,
        conn: ServerConnId,
        data: &[u8],
        replies: &mut ServerReplies,
    ) {
        let buf = self.pending.entry(conn).or_default();
        buf.extend_from_slice(data);
        match http::message_len(buf) {
            Ok(Some(n)) if buf.len() >= n => {
                self.pending.remove(&conn);
                self.served += 1;
                replies.send(self.delay, self.response.clone());
                replies.close(self.delay);
            }
            Ok(_) => {}
            Err(_) => {
                self.pending.remove(&conn);
                replies.abort(Duration::ZERO);
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
