//! Socket setup: listeners with the configured backlog, and the options of
//! every accepted socket (no Nagle delay, TCP keepalive).

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol, SockRef, Socket, TcpKeepalive, Type};
use tokio::net::{TcpListener, TcpStream};

use super::ServerConfig;

/// Binds a listener on `addr` with `backlog` pending connections (the
/// kernel caps it at `net.core.somaxconn`).
pub(super) fn bind(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // A restarted server can rebind while old connections sit in TIME_WAIT.
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    TcpListener::from_std(socket.into())
}

/// Sets the options of an accepted socket. Failures are logged, not fatal:
/// the connection works without them.
pub(super) fn configure(stream: &TcpStream, config: &ServerConfig) {
    // Small frames and responses should leave at once.
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(%err, "cannot set TCP_NODELAY");
    }
    if let Some(idle) = config.keepalive_idle {
        // Reaps peers that vanished without a FIN or RST reaching us (a
        // phone that lost its network, a NAT that forgot the mapping):
        // nothing else notices them on a connection the server never
        // writes to.
        let keepalive = TcpKeepalive::new()
            .with_time(idle)
            .with_interval(config.keepalive_interval)
            .with_retries(config.keepalive_probes);
        if let Err(err) = SockRef::from(stream).set_tcp_keepalive(&keepalive) {
            tracing::debug!(%err, "cannot set TCP keepalive");
        }
    }
}

/// Closes a refused connection with a reset: no TIME_WAIT state is left
/// on the server for a flood of them.
pub(super) fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
    drop(stream);
}

/// [`reset`] for a served connection (TLS or not): no close_notify, a reset.
pub(super) fn reset_served(stream: super::ServerStream) {
    let _ = stream.tcp().set_zero_linger();
    drop(stream);
}
