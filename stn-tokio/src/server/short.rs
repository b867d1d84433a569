//! One short-link (HTTP/1.1) connection: parse requests, route them to the
//! CGI handler, answer, keep alive or close, apply faults.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::request::{Request, RequestParser};
use super::{
    bump, close_gracefully, discard_until_closed, hello_response_body, reset_mid_response, stopped,
    Fault, Shared, GARBAGE,
};

/// Read-buffer headroom reserved before each read.
const READ_CHUNK: usize = 16 * 1024;
/// The `Content-Length` sent by [`Fault::OversizeLength`]: 1 TiB.
const OVERSIZE_CONTENT_LENGTH: u64 = 1 << 40;

/// What to do with the connection after a response.
enum Next {
    KeepAlive,
    Close,
    /// The peer is gone or the server stops: just drop the socket.
    Drop,
    /// A fault already decided the socket's fate.
    Fault(FaultEnd),
}

enum FaultEnd {
    Reset(Bytes),
    Silent,
}

/// Serves one accepted short-link connection until it closes.
pub(super) async fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    conn: u64,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    tracing::debug!(conn, %peer, "short link open");
    let next = run(&mut stream, conn, &shared, &mut stop).await;
    match next {
        Next::KeepAlive | Next::Drop => {}
        Next::Close => close_gracefully(&mut stream, &mut stop).await,
        Next::Fault(FaultEnd::Reset(wire)) => {
            tracing::info!(conn, %peer, "fault: resetting short link mid-response");
            reset_mid_response(stream, &wire).await;
        }
        Next::Fault(FaultEnd::Silent) => discard_until_closed(&mut stream, &mut stop).await,
    }
    tracing::debug!(conn, %peer, "short link done");
}

async fn run(
    stream: &mut TcpStream,
    conn: u64,
    shared: &Shared,
    stop: &mut watch::Receiver<bool>,
) -> Next {
    let config = &shared.config;
    let mut parser = RequestParser::new(config.request_limits());
    let mut buf = BytesMut::new();
    loop {
        let request = loop {
            match parser.parse(&mut buf) {
                Ok(Some(request)) => break request,
                Ok(None) => {}
                Err(err) => {
                    bump(&shared.counters.protocol_errors);
                    bump(&shared.counters.short_error_responses);
                    tracing::warn!(conn, %err, "bad HTTP request");
                    let status = err.status();
                    let wire = response(
                        status,
                        err.to_string().as_bytes(),
                        false,
                        config.idle_timeout,
                    );
                    if stream.write_all(&wire).await.is_err() {
                        return Next::Drop;
                    }
                    return Next::Close;
                }
            }
            if parser.take_continue()
                && stream
                    .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                    .await
                    .is_err()
            {
                return Next::Drop;
            }
            if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                buf.reserve(READ_CHUNK);
            }
            tokio::select! {
                _ = stopped(stop) => return Next::Drop,
                read = tokio::time::timeout(config.idle_timeout, stream.read_buf(&mut buf)) => match read {
                    Err(_) => {
                        tracing::debug!(conn, "short link idle: closing");
                        return Next::Close;
                    }
                    Ok(Ok(0)) => {
                        if parser.in_request(&buf) {
                            tracing::debug!(conn, "peer closed mid-request");
                        }
                        return Next::Drop;
                    }
                    Ok(Err(_)) => return Next::Drop,
                    Ok(Ok(_)) => {}
                },
            }
        };
        match respond(stream, conn, shared, stop, request).await {
            Next::KeepAlive => {}
            other => return other,
        }
    }
}

async fn respond(
    stream: &mut TcpStream,
    conn: u64,
    shared: &Shared,
    stop: &mut watch::Receiver<bool>,
    request: Request,
) -> Next {
    let config = &shared.config;
    let counters = &shared.counters;
    let fault = shared.fault();
    if fault == Fault::NeverRespond {
        bump(&counters.faults_injected);
        tracing::debug!(conn, target = %request.target, "fault: not answering");
        return Next::Fault(FaultEnd::Silent);
    }
    let keep_alive = request.keep_alive();
    let path = request.path();
    let status = if !config.cgi_paths.iter().any(|p| p == path) {
        404
    } else if request.method != "POST" {
        405
    } else {
        200
    };
    if status != 200 {
        bump(&counters.short_error_responses);
        tracing::debug!(conn, status, method = %request.method, target = %request.target, "short link error response");
        let wire = response(status, &[], keep_alive, config.idle_timeout);
        return finish(stream, &wire, keep_alive).await;
    }

    if !config.delay.is_zero() {
        tokio::select! {
            _ = stopped(stop) => return Next::Drop,
            _ = tokio::time::sleep(config.delay) => {}
        }
    }
    let body = hello_response_body(&request.body, config.response_size);
    match fault {
        Fault::None | Fault::NeverRespond => {
            let wire = response(200, &body, keep_alive, config.idle_timeout);
            let next = finish(stream, &wire, keep_alive).await;
            if !matches!(next, Next::Drop) {
                bump(&counters.short_requests_served);
            }
            next
        }
        Fault::ResetMidResponse => {
            bump(&counters.faults_injected);
            let wire = response(200, &body, keep_alive, config.idle_timeout);
            Next::Fault(FaultEnd::Reset(wire))
        }
        Fault::Garbage => {
            bump(&counters.faults_injected);
            tracing::info!(conn, "fault: sending garbage");
            let _ = stream.write_all(GARBAGE).await;
            Next::Fault(FaultEnd::Silent)
        }
        Fault::OversizeLength => {
            bump(&counters.faults_injected);
            tracing::info!(conn, "fault: sending an oversize Content-Length");
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {OVERSIZE_CONTENT_LENGTH}\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes()).await;
            Next::Fault(FaultEnd::Silent)
        }
    }
}

async fn finish(stream: &mut TcpStream, wire: &[u8], keep_alive: bool) -> Next {
    if stream.write_all(wire).await.is_err() {
        return Next::Drop;
    }
    if keep_alive {
        Next::KeepAlive
    } else {
        Next::Close
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// A complete response: status line, headers, body.
fn response(status: u16, body: &[u8], keep_alive: bool, idle: Duration) -> Bytes {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n",
        reason(status),
        body.len()
    );
    if status == 405 {
        head.push_str("Allow: POST\r\n");
    }
    if keep_alive {
        head.push_str(&format!(
            "Connection: keep-alive\r\nKeep-Alive: timeout={}\r\n",
            idle.as_secs().max(1)
        ));
    } else {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut wire = BytesMut::with_capacity(head.len() + body.len());
    wire.extend_from_slice(head.as_bytes());
    wire.extend_from_slice(body);
    wire.freeze()
}
