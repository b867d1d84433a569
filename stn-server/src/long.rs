//! One long-link connection: read whole frames within the byte budget,
//! answer noop / identify / hello, forward pushes, apply faults, and close
//! connections that idle, trickle or stop reading.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::ServerStream;
use bytes::{BufMut, Bytes, BytesMut};
use stn_proto::codec::longlink::{Frame, HEADER_LEN, IDENTIFY_SEQ};
use stn_proto::codec::LongLinkCodec;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::admission::Slot;
use super::budget::Charge;
use super::frames::FrameReader;
use super::inbuf::InBuf;
use super::{
    bump, close_gracefully, discard_until_closed, encode_frame, hello_response_body,
    identify_response_body, reset_mid_response, stopped, Fault, LinkQueue, Shared, GARBAGE,
    PUSH_QUEUE,
};

/// What a received frame is, for answering it (the server's dispatch table,
/// shared with the fuzz target).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrameKind {
    /// [`Fault::NeverRespond`] is in force: not answered.
    Unanswered,
    /// seq [`IDENTIFY_SEQ`]: answered at once with [`identify_response_body`].
    Identify,
    /// A noop by the codec ([`LongLinkCodec::is_noop`]; Mars: cmd id 6):
    /// answered at once with [`LongLinkCodec::noop_response`] (Mars: echoed).
    Noop,
    /// The hello cmd id: answered after the delay, subject to the fault.
    Hello,
    /// Anything else: ignored.
    Unknown,
}

/// Classifies `frame` (see [`FrameKind`]).
pub(crate) fn classify(
    frame: &Frame,
    hello_cmd_id: u32,
    fault: Fault,
    codec: &dyn LongLinkCodec,
) -> FrameKind {
    if fault == Fault::NeverRespond {
        FrameKind::Unanswered
    } else if frame.seq == IDENTIFY_SEQ {
        FrameKind::Identify
    } else if codec.is_noop(frame) {
        FrameKind::Noop
    } else if frame.cmd_id == hello_cmd_id {
        FrameKind::Hello
    } else {
        FrameKind::Unknown
    }
}

/// The answer to `frame` of `kind` that the server writes (after the delay,
/// and subject to the fault, for a hello), if any: identify → same cmd id
/// and seq with [`identify_response_body`]; noop → the codec's
/// `noop_response` (Mars: the frame echoed); hello → same cmd id and seq
/// with [`hello_response_body`].
pub(crate) fn answer(
    frame: &Frame,
    kind: FrameKind,
    response_size: Option<usize>,
    codec: &dyn LongLinkCodec,
) -> Option<Frame> {
    match kind {
        FrameKind::Identify => Some(Frame::new(
            frame.cmd_id,
            frame.seq,
            identify_response_body(&frame.body),
        )),
        FrameKind::Noop => Some(codec.noop_response(frame)),
        FrameKind::Hello => Some(Frame::new(
            frame.cmd_id,
            frame.seq,
            hello_response_body(&frame.body, response_size),
        )),
        FrameKind::Unanswered | FrameKind::Unknown => None,
    }
}

/// How the connection's main loop ended.
enum End {
    /// The peer closed its side, or the socket failed.
    PeerGone,
    /// The server is stopping.
    Stop,
    /// A frame could not be decoded: close.
    ProtocolError,
    /// No whole frame for the idle timeout.
    Idle,
    /// A frame started arriving and did not finish within the request
    /// timeout.
    FrameTimeout,
    /// A write made no progress within the write timeout: the peer does not
    /// read (or is gone).
    WriteStalled,
    /// [`Fault::ResetMidResponse`]: send half of this, then reset.
    Reset(Bytes),
    /// [`Fault::Garbage`] / [`Fault::OversizeLength`] was sent: answer nothing
    /// more, wait (boundedly) for the client to give up.
    Silent,
}

/// A hello answer waiting for its processing delay, with the fault in force
/// when its request arrived. The response is built at once, so what is held
/// is exactly what is charged (not the read buffer the request came in).
struct Pending {
    response: Frame,
    fault: Fault,
}

/// Serves one accepted long-link connection until it closes.
pub(super) async fn serve(
    mut stream: ServerStream,
    peer: SocketAddr,
    conn: u64,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    slot: Slot,
) {
    let (push_tx, push_rx) = mpsc::channel(PUSH_QUEUE);
    let queued = Arc::new(AtomicUsize::new(0));
    shared.links().insert(
        conn,
        LinkQueue {
            tx: push_tx,
            queued: queued.clone(),
        },
    );
    shared
        .counters
        .long_connections_open
        .fetch_add(1, Ordering::Relaxed);
    tracing::debug!(conn, %peer, "long link open");

    let mut pushes = push_rx;
    let end = Connection {
        shared: &shared,
        conn,
        stream: &mut stream,
        input: InBuf::new(&shared.budget),
        output: Charge::new(&shared.budget),
        pending: BTreeMap::new(),
        next_pending: 0,
        queued: &queued,
    }
    .run(&mut pushes, &mut stop)
    .await;

    shared.links().remove(&conn);
    // Pushes still queued were charged to the budget by `Shared::push`.
    pushes.close();
    while let Ok(wire) = pushes.try_recv() {
        shared.budget.release(wire.len());
    }
    shared
        .counters
        .long_connections_open
        .fetch_sub(1, Ordering::Relaxed);
    let idle = shared.config.idle_timeout;
    match end {
        End::PeerGone => tracing::debug!(conn, %peer, "long link closed by peer"),
        End::Stop => tracing::debug!(conn, %peer, "long link closed: server stopping"),
        End::ProtocolError => close_gracefully(&mut stream, &mut stop).await,
        End::Idle => {
            bump(&shared.counters.idle_closes);
            tracing::debug!(conn, %peer, "closing long link: no frame for the idle timeout");
            close_gracefully(&mut stream, &mut stop).await;
        }
        End::FrameTimeout => {
            bump(&shared.counters.deadline_closes);
            tracing::debug!(conn, %peer, "closing long link: frame not complete within the request timeout");
            close_gracefully(&mut stream, &mut stop).await;
        }
        End::WriteStalled => {
            bump(&shared.counters.write_timeouts);
            tracing::debug!(conn, %peer, "resetting long link: peer not reading");
            super::listen::reset_served(stream);
        }
        End::Reset(wire) => {
            tracing::info!(conn, %peer, "fault: resetting long link mid-response");
            reset_mid_response(stream, &wire).await;
        }
        End::Silent => discard_until_closed(&mut stream, &mut stop, idle).await,
    }
    drop(slot);
}

struct Connection<'a> {
    shared: &'a Shared,
    conn: u64,
    stream: &'a mut ServerStream,
    input: InBuf<'a>,
    /// Delayed replies held, charged to the budget.
    output: Charge<'a>,
    /// Delayed hello answers by due time (ties in arrival order).
    pending: BTreeMap<(Instant, u64), Pending>,
    next_pending: u64,
    /// Bytes of pushes queued for this connection (`Shared::push` adds).
    queued: &'a AtomicUsize,
}

impl Connection<'_> {
    async fn run(
        &mut self,
        pushes: &mut mpsc::Receiver<Bytes>,
        stop: &mut watch::Receiver<bool>,
    ) -> End {
        let config = &self.shared.config;
        let idle_timeout = config.long_idle_timeout();
        let mut reader = FrameReader::with_codec(self.shared.codec.clone(), config.max_frame_body);
        let mut last_frame = Instant::now();
        // When the first byte of the frame in progress arrived.
        let mut frame_started: Option<Instant> = None;
        loop {
            // Answer the whole frames buffered while output has room; the
            // rest wait in the buffer (already charged) until it has.
            let mut took = false;
            while self.output.held() < config.max_pending_output && !self.output.budget_full() {
                match reader.next_frame(self.input.bytes()) {
                    Ok(Some(frame)) => {
                        took = true;
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
            if took {
                let now = Instant::now();
                last_frame = now;
                self.input.compact();
                frame_started = (!self.input.bytes().is_empty()).then_some(now);
            }
            let output_full = self.output.held() >= config.max_pending_output;
            // Held back by its own output, not waiting for the peer: no
            // read deadline runs meanwhile.
            let backlog = output_full || reader.ready(self.input.bytes());
            let idle_at = last_frame + idle_timeout;
            let (deadline, end) = match frame_started {
                Some(t) if t + config.request_timeout < idle_at => {
                    (t + config.request_timeout, End::FrameTimeout)
                }
                _ => (idle_at, End::Idle),
            };
            let next_due = self.pending.keys().next().map(|&(due, _)| due);
            let want = reader.wanted(self.input.bytes());
            tokio::select! {
                biased;
                _ = stopped(stop) => return End::Stop,
                Some(wire) = pushes.recv() => {
                    self.queued.fetch_sub(wire.len(), Ordering::Relaxed);
                    let written = self.write(&wire).await;
                    self.shared.budget.release(wire.len());
                    if let Some(end) = written {
                        return end;
                    }
                }
                _ = tokio::time::sleep_until(next_due.unwrap_or_else(Instant::now)),
                    if next_due.is_some() =>
                {
                    if let Some(end) = self.send_due().await {
                        return end;
                    }
                }
                _ = tokio::time::sleep_until(deadline), if !backlog => return end,
                // A whole frame waits for budget another connection holds.
                _ = self.output.budget_wait(), if backlog && !output_full => {}
                read = self.input.read_from(self.stream, want), if !backlog => {
                    match read {
                        Ok(0) | Err(_) => return End::PeerGone,
                        Ok(_) => {
                            frame_started.get_or_insert_with(Instant::now);
                        }
                    }
                }
            }
        }
    }

    async fn on_frame(&mut self, frame: Frame) -> Option<End> {
        let shared = self.shared;
        let counters = &shared.counters;
        bump(&counters.frames_received);
        let fault = shared.fault();
        let codec = shared.codec.get();
        let kind = classify(&frame, shared.config.hello_cmd_id, fault, codec);
        let Some(response) = answer(&frame, kind, shared.config.response_size, codec) else {
            let (counter, why) = if kind == FrameKind::Unanswered {
                (&counters.faults_injected, "fault: not answering")
            } else {
                (&counters.unknown_frames, "unknown cmd id: ignoring")
            };
            bump(counter);
            tracing::debug!(
                conn = self.conn,
                cmd_id = frame.cmd_id,
                seq = frame.seq,
                why,
                "frame not answered"
            );
            return None;
        };
        match kind {
            FrameKind::Identify => bump(&counters.identifies_answered),
            FrameKind::Noop => bump(&counters.noops_answered),
            _ => {
                let delay = shared.config.delay;
                if delay.is_zero() {
                    return self.answer_hello(&response, fault).await;
                }
                self.output.force_add(HEADER_LEN + response.body.len());
                let key = (Instant::now() + delay, self.next_pending);
                self.next_pending += 1;
                self.pending.insert(key, Pending { response, fault });
                return None;
            }
        }
        self.write_frame(&response).await
    }

    async fn send_due(&mut self) -> Option<End> {
        let now = Instant::now();
        while let Some(entry) = self.pending.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let Pending { response, fault } = entry.remove();
            let end = self.answer_hello(&response, fault).await;
            self.output.sub(HEADER_LEN + response.body.len());
            if end.is_some() {
                return end;
            }
        }
        None
    }

    async fn answer_hello(&mut self, response: &Frame, fault: Fault) -> Option<End> {
        let config = &self.shared.config;
        let counters = &self.shared.counters;
        match fault {
            Fault::None => {
                bump(&counters.long_requests_served);
                self.write_frame(response).await
            }
            Fault::NeverRespond => None,
            Fault::ResetMidResponse => {
                bump(&counters.faults_injected);
                match encode_frame(self.shared.codec.get(), response) {
                    Ok(wire) => Some(End::Reset(wire)),
                    Err(_) => Some(End::Reset(Bytes::from_static(GARBAGE))),
                }
            }
            Fault::Garbage => {
                bump(&counters.faults_injected);
                tracing::info!(conn = self.conn, "fault: sending garbage");
                let _ = self.write(GARBAGE).await;
                Some(End::Silent)
            }
            Fault::OversizeLength => {
                bump(&counters.faults_injected);
                tracing::info!(conn = self.conn, "fault: sending an oversize frame header");
                let mut header = BytesMut::with_capacity(HEADER_LEN);
                header.put_u32(HEADER_LEN as u32);
                header.put_u32(config.client_version);
                header.put_u32(response.cmd_id);
                header.put_u32(response.seq);
                header.put_u32(u32::MAX);
                let _ = self.write(&header).await;
                Some(End::Silent)
            }
        }
    }

    async fn write_frame(&mut self, frame: &Frame) -> Option<End> {
        // The body never exceeds u32::MAX: it is at most a received body, or
        // `response_size` bytes, and a huge configured size is a caller error.
        let wire = match encode_frame(self.shared.codec.get(), frame) {
            Ok(wire) => wire,
            Err(err) => {
                tracing::error!(conn = self.conn, %err, "cannot encode response");
                return Some(End::ProtocolError);
            }
        };
        self.write(&wire).await
    }

    /// Writes all of `wire` within the write timeout.
    async fn write(&mut self, wire: &[u8]) -> Option<End> {
        let timeout = self.shared.config.write_timeout;
        match tokio::time::timeout(timeout, self.stream.write_all(wire)).await {
            Ok(Ok(())) => None,
            Ok(Err(_)) => Some(End::PeerGone),
            Err(_) => Some(End::WriteStalled),
        }
    }
}
