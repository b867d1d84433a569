//! One TCP connection, polled by the driver itself.
//!
//! A [`Conn`] is a socket (or its connect) and its queue of unsent writes.
//! The driver polls it when its [waker](crate::ready) fires: the connect
//! completes, queued writes go out in order (small ones coalesced into one
//! write), and one read goes into the driver's shared read buffer, which the
//! caller hands to the engine at once. No task per connection, no channel
//! between the engine and its sockets, and no buffer per connection: an idle
//! or connecting socket holds no read buffer at all. Dropping a `Conn`
//! ([`IoAction::Close`](stn_proto::io::IoAction::Close)) closes the socket at
//! once, even mid-connect.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use stn_proto::io::CloseReason;
use stn_proto::net::ConnectError;

use crate::ready::TokenWaker;
use crate::runtime::{AsyncStream, BoxFuture};

/// Size of the driver's read buffer: a received chunk is at most this many bytes.
pub const READ_CHUNK: usize = 64 * 1024;

/// Writes queued behind the first are copied into one write up to this size
/// (one syscall for the frames of a burst, as a buffered writer would).
const COALESCE: usize = 16 * 1024;
/// Maps a failed connect to the engine's vocabulary.
pub fn connect_error(e: &io::Error) -> ConnectError {
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

/// Maps a read or write failure on an open connection to the engine's vocabulary.
pub fn close_reason(e: &io::Error) -> CloseReason {
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
    /// The connect completed.
    Connected,
    /// `n` bytes arrived; they are in the read buffer's first `n` bytes.
    Data(usize),
    /// The connect failed.
    ConnectFailed(ConnectError),
    /// The connection ended (EOF, reset or an I/O error).
    Closed(CloseReason),
}

enum State {
    Connecting(BoxFuture<io::Result<Box<dyn AsyncStream>>>),
    Open(Box<dyn AsyncStream>),
}

/// One connection: its socket, its unsent writes and its waker.
pub(crate) struct Conn {
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
}

impl Conn {
    /// A connection whose connect is `connect`.
    pub(crate) fn new(
        connect: BoxFuture<io::Result<Box<dyn AsyncStream>>>,
        (handle, waker): (Arc<TokenWaker>, Waker),
    ) -> Self {
        Conn {
            state: State::Connecting(connect),
            out: VecDeque::new(),
            written: 0,
            unsent: 0,
            held: 0,
            handle,
            waker,
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
                    Poll::Ready(Err(e)) => Step::ConnectFailed(connect_error(&e)),
                    Poll::Ready(Ok(stream)) => {
                        self.state = State::Open(stream);
                        Step::Connected
                    }
                };
            }
            State::Open(stream) => stream,
        };
        if let Err(reason) = write_queued(
            stream,
            &mut cx,
            &mut self.out,
            &mut self.written,
            &mut self.unsent,
        ) {
            return Step::Closed(reason);
        }
        let len = room.min(buf.len());
        if len == 0 {
            return Step::Starved;
        }
        loop {
            return match stream.poll_read(&mut cx, &mut buf[..len]) {
                Poll::Ready(Ok(0)) => Step::Closed(CloseReason::Eof),
                Poll::Ready(Ok(n)) => Step::Data(n.min(len)),
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Poll::Ready(Err(e)) => Step::Closed(close_reason(&e)),
                Poll::Pending => Step::Idle,
            };
        }
    }
}

/// Writes from the front of `out` until the socket would block or `out` is
/// empty, then flushes.
fn write_queued(
    stream: &mut Box<dyn AsyncStream>,
    cx: &mut Context<'_>,
    out: &mut VecDeque<Bytes>,
    written: &mut usize,
    unsent: &mut usize,
) -> Result<(), CloseReason> {
    let mut wrote = false;
    while !out.is_empty() {
        if coalesce(out, *written) {
            *written = 0;
        }
        let front = out[0].get(*written..).unwrap_or_default();
        match stream.poll_write(cx, front) {
            Poll::Ready(Ok(0)) => return Err(CloseReason::Reset),
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
            Poll::Ready(Err(e)) => return Err(close_reason(&e)),
            Poll::Pending => break,
        }
    }
    if wrote {
        if let Poll::Ready(Err(e)) = stream.poll_flush(cx) {
            return Err(close_reason(&e));
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
