//! A simulated long-link server: Mars's sample framing (20-byte header,
//! `stn_proto::codec::longlink`), answering every request frame with a
//! response of the same `cmd_id` and `seq` and echoing noops (heartbeats).

use std::collections::BTreeMap;

use bytes::Bytes;
use stn_proto::codec::longlink::{encode_to_bytes, CodecConfig, Frame, FrameDecoder};
use stn_proto::{Duration, Instant};

use crate::host::{ServerApp, ServerConnId, ServerReplies};

/// The long-link server of the benchmark's "beyond" suites.
#[derive(Debug)]
pub struct LongLinkServerApp {
    body: Bytes,
    /// Processing delay before each response.
    pub delay: Duration,
    decoders: BTreeMap<ServerConnId, FrameDecoder>,
    served: u64,
}

impl LongLinkServerApp {
    /// Answers every request frame with a `body_len`-byte body after `delay`.
    pub fn new(body_len: usize, delay: Duration) -> Self {
        let body: Vec<u8> = (0..body_len).map(|i| (i % 251) as u8).collect();
        LongLinkServerApp {
            body: Bytes::from(body),
            delay,
            decoders: BTreeMap::new(),
            served: 0,
        }
    }

    /// Request frames answered (noops not counted).
    pub fn served(&self) -> u64 {
        self.served
    }
}

impl ServerApp for LongLinkServerApp {
    fn on_data(
        &mut self,
        _now: Instant,
        conn: ServerConnId,
        data: &[u8],
        replies: &mut ServerReplies,
    ) {
        let dec = self
            .decoders
            .entry(conn)
            .or_insert_with(|| FrameDecoder::new(CodecConfig::default()));
        let mut buf = data;
        loop {
            match dec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    let reply = if frame.is_noop() {
                        Frame::noop()
                    } else {
                        self.served += 1;
                        Frame::new(frame.cmd_id, frame.seq, self.body.clone())
                    };
                    match encode_to_bytes(&reply, 0) {
                        Ok(bytes) => replies.send(self.delay, bytes),
                        Err(_) => replies.abort(Duration::ZERO),
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    self.decoders.remove(&conn);
                    replies.abort(Duration::ZERO);
                    break;
                }
            }
        }
    }

    fn on_peer_closed(&mut self, _now: Instant, conn: ServerConnId, replies: &mut ServerReplies) {
        self.decoders.remove(&conn);
        replies.close(Duration::ZERO);
    }

    fn on_reset(&mut self, _now: Instant, conn: ServerConnId) {
        self.decoders.remove(&conn);
    }
}
