//! The connect through a proxy, as one future: the proxy's address, the TCP
//! connect to it, the handshake machine driven over the socket within its
//! timeout, and the tunnel as the connection's stream.

use std::future::poll_fn;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use stn_proto::proxy::{HandshakeStatus, ProxyFailure, ProxyHandshake, ProxyTarget};

use super::{target_text, ProxyError, ProxyHost, Settings};
use crate::dial::Dialer;
use crate::runtime::{AsyncStream, AsyncTimer, BoxFuture, Runtime};

/// Bytes read per call during the handshake: the most a tunnel's first
/// bytes can arrive with its answer, and all the handshake holds beside
/// its own reply buffer.
const HANDSHAKE_READ: usize = 512;

/// Connects to `target` through the proxy of `settings`: resolves the
/// proxy's name if it has one, connects, and runs the handshake. The
/// stream is the tunnel (with any bytes the proxy sent after its answer).
pub(crate) fn through_proxy(
    rt: Arc<dyn Runtime>,
    settings: Arc<Settings>,
    target: ProxyTarget,
    dialer: Dialer,
) -> BoxFuture<io::Result<Box<dyn AsyncStream>>> {
    Box::pin(async move {
        let fail = |failure: ProxyFailure, answer: Option<String>, io: Option<io::Error>| {
            ProxyError {
                proxy: settings.label.clone(),
                target: target_text(&target),
                failure,
                answer,
                io,
            }
            .into_io()
        };
        let addr = match &settings.host {
            ProxyHost::Ip(addr) => *addr,
            ProxyHost::Name(host, port) => match rt.resolve(host.clone()).await {
                Ok(ips) if !ips.is_empty() => SocketAddr::new(ips[0], *port),
                Ok(_) => return Err(fail(ProxyFailure::Unresolved, None, None)),
                Err(e) => return Err(fail(ProxyFailure::Unresolved, None, Some(e))),
            },
        };
        let mut stream = match dialer.connect(addr).await {
            Ok(stream) => stream,
            Err(e) => return Err(fail(connect_failure(&e), None, Some(e))),
        };
        let mut hs = ProxyHandshake::new(
            settings.protocol,
            target.clone(),
            settings.credentials.clone(),
        );
        let timer = rt.new_timer(rt.now() + settings.handshake_timeout);
        match run_handshake(stream.as_mut(), &mut hs, timer).await {
            Ok(leftover) => Ok(Box::new(Tunnel {
                inner: stream,
                leftover,
            }) as Box<dyn AsyncStream>),
            Err((failure, io)) => {
                let answer = hs.status_line().map(str::to_owned);
                Err(fail(failure, answer, io))
            }
        }
    })
}

/// Connects straight to the host a placeholder stands for: resolves it
/// and connects to its first address (the proxy is being bypassed).
pub(crate) fn direct_to_name(
    rt: Arc<dyn Runtime>,
    host: String,
    port: u16,
    dialer: Dialer,
) -> BoxFuture<io::Result<Box<dyn AsyncStream>>> {
    Box::pin(async move {
        let ips: Vec<IpAddr> = rt.resolve(host.clone()).await?;
        let Some(ip) = ips.first() else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host} did not resolve"),
            ));
        };
        dialer.connect(SocketAddr::new(*ip, port)).await
    })
}

/// What a failed TCP connect to the proxy was.
fn connect_failure(e: &io::Error) -> ProxyFailure {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ProxyFailure::Refused,
        io::ErrorKind::TimedOut => ProxyFailure::ConnectTimedOut,
        io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
            ProxyFailure::Unreachable
        }
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => ProxyFailure::Reset,
        _ => ProxyFailure::Io(e.raw_os_error().unwrap_or(0)),
    }
}

/// What a failed read or write during the handshake was.
fn socket_failure(e: io::Error) -> (ProxyFailure, Option<io::Error>) {
    let failure = match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ProxyFailure::Reset,
        io::ErrorKind::UnexpectedEof => ProxyFailure::Closed,
        _ => ProxyFailure::Io(e.raw_os_error().unwrap_or(0)),
    };
    (failure, Some(e))
}

/// Drives `hs` over `stream` until the tunnel opens (returning the bytes
/// read past the proxy's answer), the handshake fails or `timer` fires.
async fn run_handshake(
    stream: &mut dyn AsyncStream,
    hs: &mut ProxyHandshake,
    mut timer: Pin<Box<dyn AsyncTimer>>,
) -> Result<Bytes, (ProxyFailure, Option<io::Error>)> {
    let mut out: Option<Bytes> = None;
    let mut chunk = [0u8; HANDSHAKE_READ];
    let mut leftover = Bytes::new();
    poll_fn(|cx: &mut Context<'_>| loop {
        if out.is_none() {
            out = hs.poll_transmit();
        }
        if let Some(buf) = out.as_mut() {
            match stream.poll_write(cx, buf) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err((ProxyFailure::Reset, None))),
                Poll::Ready(Ok(n)) => {
                    let _ = buf.split_to(n.min(buf.len()));
                    if buf.is_empty() {
                        out = None;
                    }
                    continue;
                }
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(socket_failure(e))),
                Poll::Pending => {}
            }
        } else if let Poll::Ready(Err(e)) = stream.poll_flush(cx) {
            return Poll::Ready(Err(socket_failure(e)));
        }
        match hs.status() {
            HandshakeStatus::Open => return Poll::Ready(Ok(std::mem::take(&mut leftover))),
            HandshakeStatus::Failed(f) => return Poll::Ready(Err((f, None))),
            HandshakeStatus::InProgress => {}
        }
        match stream.poll_read(cx, &mut chunk) {
            Poll::Ready(Ok(0)) => {
                hs.handle_eof();
                continue;
            }
            Poll::Ready(Ok(n)) => {
                let n = n.min(chunk.len());
                let used = hs.handle_input(&chunk[..n]);
                if used < n {
                    leftover = Bytes::copy_from_slice(&chunk[used..n]);
                }
                continue;
            }
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(socket_failure(e))),
            Poll::Pending => {}
        }
        return match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err((ProxyFailure::Timeout, None))),
            Poll::Pending => Poll::Pending,
        };
    })
    .await
}

/// The tunnel: the connection to the proxy, with the target's first bytes
/// if they came with the proxy's answer.
struct Tunnel {
    inner: Box<dyn AsyncStream>,
    leftover: Bytes,
}

impl AsyncStream for Tunnel {
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        if !self.leftover.is_empty() {
            let n = buf.len().min(self.leftover.len());
            buf[..n].copy_from_slice(&self.leftover.split_to(n));
            return Poll::Ready(Ok(n));
        }
        self.inner.poll_read(cx, buf)
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.inner.poll_write(cx, buf)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.inner.poll_flush(cx)
    }
}
