//! One TCP connection, polled by the driver itself.
//!
//! A [`Conn`] is a socket (or its connect) and its queue of unsent writes.
//! The driver polls it when its [waker](crate::ready) fires: the connect
//! completes, queued writes go out in order (small ones coalesced into one
//! write), and one read goes into the driver's shared read buffer, which the
//! caller hands to the engine at once. No task per connection, no channel
//! between the engine and its sockets, and no buffer per connection: an idle
//! or connecting socket holds no read buffer at all. Dropping a `Conn`
//! ([`IoAction::Close`](stn_proto::IoAction::Close)) closes the socket at
//! once, even mid-connect.
//!
//! With TLS the connect has two phases: the TCP connect, then the handshake
//! ([`crate::tls`]); the engine is told the connection is up only after
//! both, and a failed handshake is a failed connect. A handshake that may
//! send early data (TLS 1.3 0-RTT) has a third state between them: the
//! engine is told how much it may write early, what it writes goes out with
//! the ClientHello, and flushes drive the handshake to its end.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use stn_proto::CloseReason;
use stn_proto::ConnectError;

use crate::ready::TokenWaker;
use crate::runtime::{AsyncStream, AsyncTimer, BoxFuture, Runtime};
use crate::tls::{self, Handshake, TlsIo, TlsStart};

/// Size of the driver's read buffer: a received chunk is at most this many bytes.
pub const READ_CHUNK: usize = 64 * 1024;

/// Writes queued behind the first are copied into one write up to this size
/// (one syscall for the frames of a burst, as a buffered writer would).
const COALESCE: usize = 16 * 1024;
/// Maps a failed connect to the engine's vocabulary (a failure through a
/// proxy carries its [`ProxyError`](crate::ProxyError) and becomes
/// [`ConnectError::Proxy`]).
pub fn connect_error(e: &io::Error) -> ConnectError {
    if let Some(failure) = crate::proxy::ProxyError::failure_of(e) {
        return ConnectError::Proxy(failure);
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ConnectError::Refused,
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => ConnectError::Reset,
        io::ErrorKind::TimedOut => ConnectError::TimedOut,
        io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
            ConnectError::Unreachable
        }
        _ => ConnectError::Other(e.raw_os_error().unwrap_or(-1)),
    }
}

/// Maps a read or write failure on an open connection to the engine's
/// vocabulary (a TLS stream's rustls errors become [`CloseReason::tls`]).
pub fn close_reason(e: &io::Error) -> CloseReason {
    if let Some(failure) = tls::failure_of(e) {
        return CloseReason::tls(failure);
    }
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => CloseReason::Reset,
        io::ErrorKind::UnexpectedEof => CloseReason::Eof,
        _ => CloseReason::Error(e.raw_os_error().unwrap_or(-1)),
    }
}

/// What polling a connection produced.
#[derive(Debug)]
pub(crate) enum Step {
    /// Nothing more until its waker fires.
    Idle,
    /// Readable, but the read budget is used up: poll again once it frees.
    Starved,
    /// The connect completed (with TLS: the handshake too).
    Connected,
    /// The TCP connect completed and the TLS handshake started.
    TcpConnected,
    /// The handshake may carry this many bytes of early data: what the
    /// engine writes now goes out as 0-RTT data.
    EarlyData(u32),
    /// `n` bytes arrived; they are in the read buffer's first `n` bytes.
    Data(usize),
    /// The connect failed, with the I/O error behind it (the OS's, or the
    /// TLS library's for a failed handshake) when there was one.
    ConnectFailed(ConnectError, Option<io::Error>),
    /// The connection ended (EOF, reset or an I/O error), with the I/O error
    /// when there was one.
    Closed(CloseReason, Option<io::Error>),
}

enum State {
    Connecting(BoxFuture<io::Result<Box<dyn AsyncStream>>>),
    Handshaking(Handshake),
    Early(Early),
    Open(Box<dyn AsyncStream>),
    /// Between two states (and after a failed handshake): polls do nothing.
    Closed,
}

/// A TLS stream still handshaking that may send early data: writes go out
/// as 0-RTT data and flushes drive the handshake (see [`tls::TlsIo`]).
struct Early {
    stream: Box<dyn TlsIo>,
    /// The handshake timeout, still running.
    timer: Pin<Box<dyn AsyncTimer>>,
    started: Instant,
    /// Some early data was written.
    sent: bool,
}

/// The TLS handshake a connection runs once its TCP connect completes.
pub(crate) struct TlsPlan {
    pub(crate) rt: Arc<dyn Runtime>,
    /// The handshake's parameters, or why there can be none (a bad name).
    pub(crate) start: Result<TlsStart, stn_proto::TlsFailure>,
    pub(crate) timeout: Duration,
}

/// How a connection's connect went, for the driver's TLS statistics.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handshaked {
    /// TCP connect to handshake done.
    pub(crate) duration: Duration,
    pub(crate) resumed: bool,
    /// Early data went out: whether the server accepted it.
    pub(crate) early: Option<bool>,
}

/// One connection: its socket, its unsent writes and its waker.
pub(crate) struct Conn {
    /// Where it connects (the driver keeps each endpoint's last I/O error).
    pub(crate) addr: SocketAddr,
    state: State,
    out: VecDeque<Bytes>,
    /// How much of `out`'s front is already written.
    written: usize,
    /// Bytes in `out` not yet written.
    unsent: usize,
    /// Received bytes the engine may still hold (see `Driver::held`).
    pub(crate) held: usize,
    handle: Arc<TokenWaker>,
    waker: Waker,
    /// The handshake to run after the TCP connect (TLS clients only).
    tls: Option<TlsPlan>,
    /// Set when a handshake completes, taken by the driver.
    pub(crate) handshaked: Option<Handshaked>,
    /// A flush returned pending (a TLS stream's buffered records): flush
    /// again on the next poll even if nothing new is written.
    flushing: bool,
    /// A write failed: the close is reported once what the peer sent before
    /// it is read. A server that refuses a request (413 for a body too
    /// large) answers and closes while the body is still going out; the
    /// answer is in the socket's receive queue and says more than the
    /// broken pipe or reset the write got.
    write_failed: Option<(CloseReason, Option<io::Error>)>,
}

impl Conn {
    /// A connection whose connect is `connect`.
    pub(crate) fn new(
        addr: SocketAddr,
        connect: BoxFuture<io::Result<Box<dyn AsyncStream>>>,
        (handle, waker): (Arc<TokenWaker>, Waker),
        tls: Option<TlsPlan>,
    ) -> Self {
        Conn {
            addr,
            state: State::Connecting(connect),
            out: VecDeque::new(),
            written: 0,
            unsent: 0,
            held: 0,
            handle,
            waker,
            tls,
            handshaked: None,
            flushing: false,
            write_failed: None,
        }
    }

    /// Its waker's handle (to unqueue before a poll, or schedule a poll).
    pub(crate) fn handle(&self) -> &TokenWaker {
        &self.handle
    }

    /// Bytes queued and not yet written.
    pub(crate) fn unsent(&self) -> usize {
        self.unsent
    }

    /// Queues `data` to be written after what is queued already.
    pub(crate) fn queue_write(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        self.unsent += data.len();
        self.out.push_back(data);
    }

    /// Advances the connection: the connect, then queued writes, then one
    /// read of at most `room` bytes into `buf` (none if `room` is 0).
    pub(crate) fn poll(&mut self, buf: &mut [u8], room: usize) -> Step {
        let waker = self.waker.clone();
        let mut cx = Context::from_waker(&waker);
        let stream = match &mut self.state {
            State::Connecting(connect) => {
                return match connect.as_mut().poll(&mut cx) {
                    Poll::Pending => Step::Idle,
                    Poll::Ready(Err(e)) => Step::ConnectFailed(connect_error(&e), Some(e)),
                    Poll::Ready(Ok(stream)) => match self.tls.take() {
                        None => {
                            self.state = State::Open(stream);
                            Step::Connected
                        }
                        Some(plan) => self.start_handshake(stream, plan),
                    },
                };
            }
            State::Handshaking(handshake) => {
                return match Pin::new(handshake).poll(&mut cx) {
                    Poll::Pending => Step::Idle,
                    Poll::Ready(done) => self.handshake_done(done),
                };
            }
            State::Early(_) => return self.poll_early(&mut cx),
            State::Open(stream) => stream.as_mut(),
            State::Closed => return Step::Idle,
        };
        if self.write_failed.is_none() {
            if let Err(failed) = write_queued(
                stream,
                &mut cx,
                &mut self.out,
                &mut self.written,
                &mut self.unsent,
                &mut self.flushing,
            ) {
                self.write_failed = Some(failed);
            }
        }
        let len = room.min(buf.len());
        if len == 0 {
            // After a failed write the close waits for nothing: what is
            // unread stays unread while the budget is used up.
            return match self.write_failed.take() {
                Some((reason, e)) => Step::Closed(reason, e),
                None => Step::Starved,
            };
        }
        loop {
            let step = match stream.poll_read(&mut cx, &mut buf[..len]) {
                Poll::Ready(Ok(0)) => Step::Closed(CloseReason::Eof, None),
                Poll::Ready(Ok(n)) => Step::Data(n.min(len)),
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Poll::Ready(Err(e)) => Step::Closed(close_reason(&e), Some(e)),
                Poll::Pending => Step::Idle,
            };
            // Data read after a failed write is delivered (the driver polls
            // again while data comes); then the write's failure closes.
            return match (step, self.write_failed.take()) {
                (Step::Data(n), failed) => {
                    self.write_failed = failed;
                    Step::Data(n)
                }
                (Step::Closed(CloseReason::Eof, _) | Step::Idle, Some((reason, e))) => {
                    Step::Closed(reason, e)
                }
                (step, _) => step,
            };
        }
    }
}

impl Conn {
    /// The TCP connect is done: the handshake starts, bounded by its
    /// timeout, on the next poll (the engine hears of the TCP connect first).
    fn start_handshake(&mut self, stream: Box<dyn AsyncStream>, plan: TlsPlan) -> Step {
        let start = match plan.start {
            Ok(start) => start,
            Err(failure) => return Step::ConnectFailed(ConnectError::tls(failure), None),
        };
        let timer = plan.rt.new_timer(plan.rt.now() + plan.timeout);
        let future = plan.rt.start_tls(stream, start);
        self.state = State::Handshaking(Handshake::new(future, timer, Instant::now()));
        self.handle.schedule();
        Step::TcpConnected
    }

    fn handshake_done(&mut self, done: io::Result<Box<dyn TlsIo>>) -> Step {
        let State::Handshaking(handshake) = std::mem::replace(&mut self.state, State::Closed)
        else {
            return Step::Idle;
        };
        let mut stream = match done {
            Ok(stream) => stream,
            Err(e) => return handshake_failed(e),
        };
        // Writes the engine queued meanwhile (or queues now, early) go out
        // on the next poll.
        self.handle.schedule();
        let state = stream.tls_state();
        match state.early_room {
            Some(room) if state.handshaking => {
                self.state = State::Early(Early {
                    stream,
                    timer: handshake.timer,
                    started: handshake.started,
                    sent: false,
                });
                Step::EarlyData(u32::try_from(room).unwrap_or(u32::MAX))
            }
            _ => self.open(stream, handshake.started, None),
        }
    }

    /// Writes what the engine queued as early data, then flushes, which
    /// drives the handshake; the connection is open once a flush completes.
    fn poll_early(&mut self, cx: &mut Context<'_>) -> Step {
        let State::Early(early) = &mut self.state else {
            return Step::Idle;
        };
        let before = self.unsent;
        let mut handshaking = true;
        let written = write_queued(
            early.stream.as_mut(),
            cx,
            &mut self.out,
            &mut self.written,
            &mut self.unsent,
            &mut handshaking,
        );
        early.sent |= self.unsent < before;
        if let Err((_, e)) = written {
            return handshake_failed(e.unwrap_or_else(|| io::ErrorKind::WriteZero.into()));
        }
        if handshaking {
            return match early.timer.as_mut().poll(cx) {
                Poll::Ready(()) => handshake_failed(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "TLS handshake timed out",
                )),
                Poll::Pending => Step::Idle,
            };
        }
        let State::Early(early) = std::mem::replace(&mut self.state, State::Closed) else {
            return Step::Idle;
        };
        let mut stream = early.stream;
        let accepted = early.sent.then(|| stream.tls_state().early_accepted);
        // What the engine queued after the early data goes out now.
        self.handle.schedule();
        self.open(stream, early.started, accepted)
    }

    /// The handshake is done: the connection is open.
    fn open(&mut self, mut stream: Box<dyn TlsIo>, started: Instant, early: Option<bool>) -> Step {
        self.handshaked = Some(Handshaked {
            duration: Instant::now().saturating_duration_since(started),
            resumed: stream.tls_state().resumed,
            early,
        });
        self.state = State::Open(stream);
        Step::Connected
    }
}

/// A handshake that failed (or timed out): a failed connect.
fn handshake_failed(e: io::Error) -> Step {
    Step::ConnectFailed(ConnectError::tls(tls::handshake_failure(&e)), Some(e))
}

/// Writes from the front of `out` until the socket would block or `out` is
/// empty, then flushes (again, if an earlier flush was pending).
fn write_queued(
    stream: &mut dyn AsyncStream,
    cx: &mut Context<'_>,
    out: &mut VecDeque<Bytes>,
    written: &mut usize,
    unsent: &mut usize,
    flushing: &mut bool,
) -> Result<(), (CloseReason, Option<io::Error>)> {
    let mut wrote = false;
    while !out.is_empty() {
        if coalesce(out, *written) {
            *written = 0;
        }
        let front = out[0].get(*written..).unwrap_or_default();
        match stream.poll_write(cx, front) {
            Poll::Ready(Ok(0)) => return Err((CloseReason::Reset, None)),
            Poll::Ready(Ok(n)) => {
                let n = n.min(front.len());
                wrote = true;
                *written += n;
                *unsent = unsent.saturating_sub(n);
                if *written >= out[0].len() {
                    out.pop_front();
                    *written = 0;
                }
            }
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Poll::Ready(Err(e)) => return Err((close_reason(&e), Some(e))),
            Poll::Pending => break,
        }
    }
    if wrote || *flushing {
        match stream.poll_flush(cx) {
            Poll::Ready(Ok(())) => *flushing = false,
            Poll::Ready(Err(e)) => return Err((close_reason(&e), Some(e))),
            Poll::Pending => *flushing = true,
        }
    }
    Ok(())
}

/// Joins the unwritten rest of `out`'s front with the writes behind it into
/// one buffer of at most [`COALESCE`] bytes, when there is more than one;
/// true if it did (the new front starts unwritten).
fn coalesce(out: &mut VecDeque<Bytes>, written: usize) -> bool {
    if out.len() < 2 || out[0].len().saturating_sub(written) + out[1].len() > COALESCE {
        return false;
    }
    let mut joined = BytesMut::with_capacity(COALESCE);
    joined.extend_from_slice(&out[0][written..]);
    out.pop_front();
    while let Some(next) = out.front() {
        if joined.len() + next.len() > COALESCE {
            break;
        }
        joined.extend_from_slice(next);
        out.pop_front();
    }
    out.push_front(joined.freeze());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_errors_map_to_the_engine_vocabulary() {
        let e = |k| io::Error::from(k);
        assert_eq!(
            connect_error(&e(io::ErrorKind::ConnectionRefused)),
            ConnectError::Refused
        );
        assert_eq!(
            connect_error(&e(io::ErrorKind::ConnectionReset)),
            ConnectError::Reset
        );
        assert_eq!(
            connect_error(&e(io::ErrorKind::TimedOut)),
            ConnectError::TimedOut
        );
        assert_eq!(
            connect_error(&e(io::ErrorKind::HostUnreachable)),
            ConnectError::Unreachable
        );
        assert_eq!(
            connect_error(&e(io::ErrorKind::NetworkUnreachable)),
            ConnectError::Unreachable
        );
        assert_eq!(
            connect_error(&io::Error::from_raw_os_error(99)),
            ConnectError::Other(99)
        );
        assert_eq!(
            connect_error(&e(io::ErrorKind::Other)),
            ConnectError::Other(-1)
        );
    }

    #[test]
    fn close_reasons_map_to_the_engine_vocabulary() {
        let e = |k| io::Error::from(k);
        assert_eq!(
            close_reason(&e(io::ErrorKind::ConnectionReset)),
            CloseReason::Reset
        );
        assert_eq!(
            close_reason(&e(io::ErrorKind::BrokenPipe)),
            CloseReason::Reset
        );
        assert_eq!(
            close_reason(&e(io::ErrorKind::UnexpectedEof)),
            CloseReason::Eof
        );
        assert_eq!(
            close_reason(&io::Error::from_raw_os_error(5)),
            CloseReason::Error(5)
        );
    }
}
