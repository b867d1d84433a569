//! One TCP connection: connect, then read and write until closed.
//!
//! Each connection is one spawned task that owns its socket. Reads go to the
//! driver as [`Input::Conn`] events through the bounded event queue (a slow
//! driver makes readers wait: memory stays bounded); writes come from the
//! driver in order through the connection's own queue. When the driver drops
//! that queue's sender ([`Action::Close`](stn_proto::engine::Action::Close)),
//! the task ends at once and the socket is closed, even mid-connect.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;

use async_channel::{Receiver, Sender};
use bytes::Bytes;
use futures_core::Stream;
use stn_proto::engine::Input;
use stn_proto::io::{CloseReason, ConnEvent, ConnId};
use stn_proto::net::ConnectError;

use crate::runtime::{AsyncStream, BoxFuture};

/// Size of each read: a received chunk is at most this many bytes.
pub const READ_CHUNK: usize = 64 * 1024;

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

/// Counts live connection tasks (a leak check for tests and snapshots).
#[derive(Debug)]
pub(crate) struct LiveGuard(Arc<AtomicUsize>);

impl LiveGuard {
    pub(crate) fn new(counter: &Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        LiveGuard(counter.clone())
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

enum Step {
    Data(Bytes),
    Closed(CloseReason),
    /// The driver dropped the write queue: stop now.
    Abort,
}

/// The connection task.
pub(crate) async fn run(
    conn: ConnId,
    addr: SocketAddr,
    connect: BoxFuture<io::Result<Box<dyn AsyncStream>>>,
    events: Sender<Input>,
    writes: Receiver<Bytes>,
    live: LiveGuard,
) {
    let _live = live;
    let mut writes = pin!(writes);
    let mut out: VecDeque<Bytes> = VecDeque::new();
    let mut connect = connect;

    // Connect, unless the driver closes first (that drops the connect).
    let connected = poll_fn(|cx| {
        loop {
            match writes.as_mut().poll_next(cx) {
                Poll::Ready(Some(data)) => out.push_back(data),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => break,
            }
        }
        connect.as_mut().poll(cx).map(Some)
    })
    .await;
    let mut stream = match connected {
        None => return,
        Some(Err(e)) => {
            tracing::debug!(%conn, %addr, error = %e, "connect failed");
            let event = ConnEvent::ConnectFailed(connect_error(&e));
            let _ = events.send(Input::Conn { conn, event }).await;
            return;
        }
        Some(Ok(stream)) => stream,
    };
    drop(connect);
    if events
        .send(Input::Conn {
            conn,
            event: ConnEvent::Connected,
        })
        .await
        .is_err()
    {
        return;
    }

    let mut buf = vec![0u8; READ_CHUNK];
    let mut offset = 0usize;
    loop {
        let step = poll_fn(|cx| {
            loop {
                match writes.as_mut().poll_next(cx) {
                    Poll::Ready(Some(data)) => out.push_back(data),
                    Poll::Ready(None) => return Poll::Ready(Step::Abort),
                    Poll::Pending => break,
                }
            }
            let mut wrote = false;
            while let Some(front) = out.front() {
                if offset >= front.len() {
                    out.pop_front();
                    offset = 0;
                    continue;
                }
                match stream.poll_write(cx, &front[offset..]) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Step::Closed(CloseReason::Reset)),
                    Poll::Ready(Ok(n)) => {
                        offset += n;
                        wrote = true;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Step::Closed(close_reason(&e))),
                    Poll::Pending => break,
                }
            }
            if wrote {
                if let Poll::Ready(Err(e)) = stream.poll_flush(cx) {
                    return Poll::Ready(Step::Closed(close_reason(&e)));
                }
            }
            match stream.poll_read(cx, &mut buf) {
                Poll::Ready(Ok(0)) => Poll::Ready(Step::Closed(CloseReason::Eof)),
                Poll::Ready(Ok(n)) => Poll::Ready(Step::Data(Bytes::copy_from_slice(&buf[..n]))),
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
                Poll::Ready(Err(e)) => Poll::Ready(Step::Closed(close_reason(&e))),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        let event = match step {
            Step::Abort => return,
            Step::Data(data) => ConnEvent::Received(data),
            Step::Closed(reason) => ConnEvent::Closed(reason),
        };
        let terminal = matches!(event, ConnEvent::Closed(_));
        if terminal {
            tracing::debug!(%conn, %addr, ?event, "connection closed");
        }
        if events.send(Input::Conn { conn, event }).await.is_err() || terminal {
            return;
        }
    }
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
