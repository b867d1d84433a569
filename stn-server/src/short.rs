//! One short-link (HTTP/1.1) connection: parse requests, route them to the
//! CGI handler, answer, keep alive or close, apply faults.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::ServerStream;
use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio::time::Instant;

use super::admission::Slot;
use super::budget::Charge;
use super::inbuf::InBuf;
use super::request::{Request, RequestParser};
use super::{
    bump, close_gracefully, discard_until_closed, hello_response_body, reset_mid_response, stopped,
    Fault, Shared, GARBAGE,
};

/// The `Content-Length` sent by [`Fault::OversizeLength`]: 1 TiB.
const OVERSIZE_CONTENT_LENGTH: u64 = 1 << 40;

/// What to do with the connection after a response.
enum Next {
    KeepAlive,
    Close,
    /// The peer is gone or the server stops: just drop the socket.
    Drop,
    /// The peer does not read what is written: reset.
    WriteStalled,
    /// A fault already decided the socket's fate.
    Fault(FaultEnd),
}

enum FaultEnd {
    Reset(Bytes),
    Silent,
}

/// Serves one accepted short-link connection until it closes.
pub(super) async fn serve(
    mut stream: ServerStream,
    peer: SocketAddr,
    conn: u64,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    slot: Slot,
) {
    tracing::debug!(conn, %peer, "short link open");
    shared
        .counters
        .short_connections_open
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let next = run(&mut stream, conn, &shared, &mut stop).await;
    match next {
        Next::KeepAlive | Next::Drop => {}
        Next::WriteStalled => {
            bump(&shared.counters.write_timeouts);
            tracing::debug!(conn, %peer, "resetting short link: peer not reading");
            super::listen::reset_served(stream);
        }
        Next::Close => close_gracefully(&mut stream, &mut stop).await,
        Next::Fault(FaultEnd::Reset(wire)) => {
            tracing::info!(conn, %peer, "fault: resetting short link mid-response");
            reset_mid_response(stream, &wire).await;
        }
        Next::Fault(FaultEnd::Silent) => {
            discard_until_closed(&mut stream, &mut stop, shared.config.idle_timeout).await;
        }
    }
    shared
        .counters
        .short_connections_open
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    tracing::debug!(conn, %peer, "short link done");
    drop(slot);
}

async fn run(
    stream: &mut ServerStream,
    conn: u64,
    shared: &Shared,
    stop: &mut watch::Receiver<bool>,
) -> Next {
    let config = &shared.config;
    let mut parser = RequestParser::new(config.request_limits());
    let mut input = InBuf::new(&shared.budget);
    loop {
        let waiting_since = Instant::now();
        // When the first byte of the request in progress arrived: from then
        // the whole head and body must come within the request timeout,
        // however slowly the bytes trickle in (slowloris).
        let mut started = (!input.bytes().is_empty()).then_some(waiting_since);
        let request = loop {
            match parser.parse(input.bytes()) {
                Ok(Some(request)) => break request,
                Ok(None) => {}
                Err(err) => {
                    bump(&shared.counters.protocol_errors);
                    bump(&shared.counters.short_error_responses);
                    tracing::warn!(conn, %err, "bad HTTP request");
                    let wire = response(
                        err.status(),
                        err.to_string().as_bytes(),
                        false,
                        config.idle_timeout,
                    );
                    return finish(stream, shared, &wire, false).await;
                }
            }
            if parser.take_continue() {
                if let Some(next) = write(stream, shared, b"HTTP/1.1 100 Continue\r\n\r\n").await {
                    return next;
                }
            }
            let deadline = match started {
                Some(t) => t + config.request_timeout,
                None => waiting_since + config.idle_timeout,
            };
            let want = parser.wanted(input.bytes());
            tokio::select! {
                _ = stopped(stop) => return Next::Drop,
                _ = tokio::time::sleep_until(deadline) => {
                    if started.is_none() {
                        tracing::debug!(conn, "short link idle: closing");
                        return Next::Close;
                    }
                    bump(&shared.counters.deadline_closes);
                    bump(&shared.counters.short_error_responses);
                    tracing::debug!(conn, "request not complete within the request timeout: closing");
                    let wire = response(408, b"request timeout", false, config.idle_timeout);
                    return finish(stream, shared, &wire, false).await;
                }
                read = input.read_from(stream, want) => match read {
                    Ok(0) => {
                        if parser.in_request(input.bytes()) {
                            tracing::debug!(conn, "peer closed mid-request");
                        }
                        return Next::Drop;
                    }
                    Err(_) => return Next::Drop,
                    Ok(_) => {
                        started.get_or_insert_with(Instant::now);
                    }
                },
            }
        };
        let next = respond(stream, conn, shared, stop, request).await;
        input.compact();
        match next {
            Next::KeepAlive => {}
            other => return other,
        }
    }
}

async fn respond(
    stream: &mut ServerStream,
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
        // The body says why, for the client's error message.
        let why = if status == 404 {
            format!(
                "no CGI at {path}; this server answers {}\n",
                config.cgi_paths.join(", ")
            )
        } else {
            format!(
                "{} is not allowed: the short link takes POST\n",
                request.method
            )
        };
        let wire = response(status, why.as_bytes(), keep_alive, config.idle_timeout);
        return finish(stream, shared, &wire, keep_alive).await;
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
            drop(body);
            let next = finish(stream, shared, &wire, keep_alive).await;
            if matches!(next, Next::KeepAlive | Next::Close) {
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
            match write(stream, shared, GARBAGE).await {
                Some(next) => next,
                None => Next::Fault(FaultEnd::Silent),
            }
        }
        Fault::OversizeLength => {
            bump(&counters.faults_injected);
            tracing::info!(conn, "fault: sending an oversize Content-Length");
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {OVERSIZE_CONTENT_LENGTH}\r\n\r\n"
            );
            match write(stream, shared, head.as_bytes()).await {
                Some(next) => next,
                None => Next::Fault(FaultEnd::Silent),
            }
        }
    }
}

/// Writes a response, then says whether the connection stays open.
async fn finish(stream: &mut ServerStream, shared: &Shared, wire: &[u8], keep_alive: bool) -> Next {
    if let Some(next) = write(stream, shared, wire).await {
        return next;
    }
    if keep_alive {
        Next::KeepAlive
    } else {
        Next::Close
    }
}

/// Writes all of `wire` within the write timeout, charging it to the byte
/// budget meanwhile. `Some`: the connection cannot go on.
async fn write(stream: &mut ServerStream, shared: &Shared, wire: &[u8]) -> Option<Next> {
    let mut charge = Charge::new(&shared.budget);
    charge.force_add(wire.len());
    match tokio::time::timeout(shared.config.write_timeout, stream.write_all(wire)).await {
        Ok(Ok(())) => None,
        Ok(Err(_)) => Some(Next::Drop),
        Err(_) => Some(Next::WriteStalled),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        408 => "Request Timeout",
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
