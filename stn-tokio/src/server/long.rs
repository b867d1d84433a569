//! One long-link connection: decode frames, answer noop / identify / hello,
//! forward pushes, apply faults.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use stn_proto::codec::longlink::{
    self, Frame, FrameDecoder, HEADER_LEN, IDENTIFY_SEQ, NOOP_CMD_ID,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{
    bump, close_gracefully, discard_until_closed, hello_response_body, identify_response_body,
    reset_mid_response, stopped, Fault, Shared, GARBAGE, PUSH_QUEUE,
};

/// Delayed responses one connection may hold; past it the server stops
/// reading from that client until some are sent (back-pressure, bounded
/// memory).
const MAX_PENDING: usize = 1024;
/// Read-buffer headroom reserved before each read.
const READ_CHUNK: usize = 64 * 1024;

/// How the connection's main loop ended.
enum End {
    /// The peer closed its side, or the socket failed.
    PeerGone,
    /// The server is stopping.
    Stop,
    /// A frame could not be decoded: close.
    ProtocolError,
    /// [`Fault::ResetMidResponse`]: send half of this, then reset.
    Reset(Bytes),
    /// [`Fault::Garbage`] / [`Fault::OversizeLength`] was sent: answer nothing
    /// more, wait for the client to give up.
    Silent,
}

/// A hello answer waiting for its processing delay, with the fault in force
/// when its request arrived.
struct Pending {
    request: Frame,
    fault: Fault,
}

/// Serves one accepted long-link connection until it closes.
pub(super) async fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    conn: u64,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let (push_tx, push_rx) = mpsc::channel(PUSH_QUEUE);
    shared.links().insert(conn, push_tx);
    shared
        .counters
        .long_connections_open
        .fetch_add(1, Ordering::Relaxed);
    tracing::debug!(conn, %peer, "long link open");

    let end = Connection {
        shared: &shared,
        conn,
        stream: &mut stream,
        pending: BTreeMap::new(),
        next_pending: 0,
    }
    .run(push_rx, &mut stop)
    .await;

    shared.links().remove(&conn);
    shared
        .counters
        .long_connections_open
        .fetch_sub(1, Ordering::Relaxed);
    match end {
        End::PeerGone => tracing::debug!(conn, %peer, "long link closed by peer"),
        End::Stop => tracing::debug!(conn, %peer, "long link closed: server stopping"),
        End::ProtocolError => close_gracefully(&mut stream, &mut stop).await,
        End::Reset(wire) => {
            tracing::info!(conn, %peer, "fault: resetting long link mid-response");
            reset_mid_response(stream, &wire).await;
        }
        End::Silent => discard_until_closed(&mut stream, &mut stop).await,
    }
}

struct Connection<'a> {
    shared: &'a Shared,
    conn: u64,
    stream: &'a mut TcpStream,
    /// Delayed hello answers by due time (ties in arrival order).
    pending: BTreeMap<(Instant, u64), Pending>,
    next_pending: u64,
}

impl Connection<'_> {
    async fn run(
        &mut self,
        mut pushes: mpsc::Receiver<Bytes>,
        stop: &mut watch::Receiver<bool>,
    ) -> End {
        let mut decoder = FrameDecoder::new(self.shared.config.codec());
        let mut buf = BytesMut::new();
        loop {
            if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                buf.reserve(READ_CHUNK);
            }
            let next_due = self.pending.keys().next().map(|&(due, _)| due);
            tokio::select! {
                biased;
                _ = stopped(stop) => return End::Stop,
                Some(wire) = pushes.recv() => {
                    if self.stream.write_all(&wire).await.is_err() {
                        return End::PeerGone;
                    }
                }
                _ = tokio::time::sleep_until(next_due.unwrap_or_else(Instant::now)),
                    if next_due.is_some() =>
                {
                    if let Some(end) = self.send_due().await {
                        return end;
                    }
                }
                read = self.stream.read_buf(&mut buf), if self.pending.len() < MAX_PENDING => {
                    match read {
                        Ok(0) | Err(_) => return End::PeerGone,
                        Ok(_) => {}
                    }
                    loop {
                        match decoder.decode(&mut buf) {
                            Ok(Some(frame)) => {
                                if let Some(end) = self.on_frame(frame).await {
                                    return end;
                                }
                            }
                            Ok(None) => break,
                            Err(err) => {
                                bump(&self.shared.counters.protocol_errors);
                                tracing::warn!(conn = self.conn, %err, "closing long link: undecodable frame");
                                return End::ProtocolError;
                            }
                        }
                    }
                }
            }
        }
    }

    async fn on_frame(&mut self, frame: Frame) -> Option<End> {
        let counters = &self.shared.counters;
        bump(&counters.frames_received);
        let fault = self.shared.fault();
        if fault == Fault::NeverRespond {
            bump(&counters.faults_injected);
            tracing::debug!(
                conn = self.conn,
                cmd_id = frame.cmd_id,
                seq = frame.seq,
                "fault: not answering"
            );
            return None;
        }
        if frame.seq == IDENTIFY_SEQ {
            bump(&counters.identifies_answered);
            let body = identify_response_body(&frame.body);
            return self
                .write_frame(&Frame::new(frame.cmd_id, frame.seq, body))
                .await;
        }
        if frame.cmd_id == NOOP_CMD_ID {
            bump(&counters.noops_answered);
            return self.write_frame(&frame).await;
        }
        if frame.cmd_id != self.shared.config.hello_cmd_id {
            bump(&counters.unknown_frames);
            tracing::debug!(
                conn = self.conn,
                cmd_id = frame.cmd_id,
                seq = frame.seq,
                "ignoring frame with unknown cmd id"
            );
            return None;
        }
        let delay = self.shared.config.delay;
        if delay.is_zero() {
            return self.answer_hello(&frame, fault).await;
        }
        let key = (Instant::now() + delay, self.next_pending);
        self.next_pending += 1;
        self.pending.insert(
            key,
            Pending {
                request: frame,
                fault,
            },
        );
        None
    }

    async fn send_due(&mut self) -> Option<End> {
        let now = Instant::now();
        while let Some(entry) = self.pending.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let Pending { request, fault } = entry.remove();
            if let Some(end) = self.answer_hello(&request, fault).await {
                return Some(end);
            }
        }
        None
    }

    async fn answer_hello(&mut self, request: &Frame, fault: Fault) -> Option<End> {
        let config = &self.shared.config;
        let body = hello_response_body(&request.body, config.response_size);
        let response = Frame::new(request.cmd_id, request.seq, body);
        let counters = &self.shared.counters;
        match fault {
            Fault::None => {
                bump(&counters.long_requests_served);
                self.write_frame(&response).await
            }
            Fault::NeverRespond => None,
            Fault::ResetMidResponse => {
                bump(&counters.faults_injected);
                match longlink::encode_to_bytes(&response, config.client_version) {
                    Ok(wire) => Some(End::Reset(wire)),
                    Err(_) => Some(End::Reset(Bytes::from_static(GARBAGE))),
                }
            }
            Fault::Garbage => {
                bump(&counters.faults_injected);
                tracing::info!(conn = self.conn, "fault: sending garbage");
                let _ = self.stream.write_all(GARBAGE).await;
                Some(End::Silent)
            }
            Fault::OversizeLength => {
                bump(&counters.faults_injected);
                tracing::info!(conn = self.conn, "fault: sending an oversize frame header");
                let mut header = BytesMut::with_capacity(HEADER_LEN);
                header.put_u32(HEADER_LEN as u32);
                header.put_u32(config.client_version);
                header.put_u32(request.cmd_id);
                header.put_u32(request.seq);
                header.put_u32(u32::MAX);
                let _ = self.stream.write_all(&header).await;
                Some(End::Silent)
            }
        }
    }

    async fn write_frame(&mut self, frame: &Frame) -> Option<End> {
        // The body never exceeds u32::MAX: it is at most a received body, or
        // `response_size` bytes, and a huge configured size is a caller error.
        let wire = match longlink::encode_to_bytes(frame, self.shared.config.client_version) {
            Ok(wire) => wire,
            Err(err) => {
                tracing::error!(conn = self.conn, %err, "cannot encode response");
                return Some(End::ProtocolError);
            }
        };
        match self.stream.write_all(&wire).await {
            Ok(()) => None,
            Err(_) => Some(End::PeerGone),
        }
    }
}
