//! Helpers shared by the server integration tests: a time bound for every
//! test, raw long-link frame I/O, and a raw HTTP exchange.
#![allow(dead_code)] // each test file uses a subset

use std::future::Future;
use std::io;
use std::time::Duration;

use bytes::BytesMut;
use stn_proto::codec::http::{HttpError, HttpLimits, HttpResponse, Progress, ResponseParser};
use stn_proto::codec::longlink::{self, CodecConfig, DecodeError, Frame, FrameDecoder};
use stn_server::{Server, ServerConfig, ServerHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upper bound for any one test, so nothing can hang CI.
pub(crate) const TEST_BOUND: Duration = Duration::from_secs(20);

/// Runs `fut` under [`TEST_BOUND`]; panics if it does not finish.
pub(crate) async fn bounded<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(TEST_BOUND, fut)
        .await
        .expect("test exceeded its time bound")
}

/// Starts a server with `config` (both links on 127.0.0.1:0 unless changed).
pub(crate) async fn start(config: ServerConfig) -> ServerHandle {
    Server::start(config).await.expect("server starts")
}

/// A raw long-link client: a TCP stream plus a frame decoder.
pub(crate) struct LongClient {
    pub(crate) stream: TcpStream,
    pub(crate) decoder: FrameDecoder,
    pub(crate) buf: BytesMut,
}

impl LongClient {
    pub(crate) async fn connect(server: &ServerHandle) -> Self {
        let stream = TcpStream::connect(server.long_addr().expect("long link"))
            .await
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        LongClient {
            stream,
            decoder: FrameDecoder::new(CodecConfig::default()),
            buf: BytesMut::new(),
        }
    }

    pub(crate) async fn send(&mut self, frame: &Frame) {
        let wire = longlink::encode_to_bytes(frame, 0).expect("encode");
        self.stream.write_all(&wire).await.expect("write");
    }

    /// The next frame; `Err` on a decode error, panics on EOF.
    pub(crate) async fn recv(&mut self) -> Result<Frame, DecodeError> {
        loop {
            if let Some(frame) = self.decoder.decode(&mut self.buf)? {
                return Ok(frame);
            }
            let n = self.stream.read_buf(&mut self.buf).await.expect("read");
            assert!(n > 0, "server closed the long link");
        }
    }

    /// Sends a noop and waits for its echo: proves the server has registered
    /// this connection (for pushes) and answered everything sent before.
    pub(crate) async fn sync(&mut self) {
        self.send(&Frame::noop()).await;
        assert_eq!(self.recv().await.unwrap(), Frame::noop());
    }
}

/// Reads until EOF or an error; returns the bytes and how it ended.
pub(crate) async fn read_until_end(stream: &mut TcpStream) -> (Vec<u8>, io::Result<()>) {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) => return (got, Ok(())),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(err) => return (got, Err(err)),
        }
    }
}

/// Asserts that nothing arrives on `stream` for `quiet` and that it stays
/// open. (A negative check: it cannot pass by accident if bytes do arrive.)
pub(crate) async fn assert_silent(stream: &mut TcpStream, quiet: Duration) {
    let mut byte = [0u8; 1];
    match tokio::time::timeout(quiet, stream.read(&mut byte)).await {
        Err(_) => {}
        Ok(Ok(0)) => panic!("connection closed, expected it open and silent"),
        Ok(Ok(_)) => panic!("got a byte, expected silence"),
        Ok(Err(err)) => panic!("read failed: {err}, expected silence"),
    }
}

/// Reads one HTTP response from `stream` with stn-proto's parser.
pub(crate) async fn read_response(stream: &mut TcpStream) -> Result<HttpResponse, HttpError> {
    read_response_with(stream, HttpLimits::default()).await
}

/// [`read_response`] with explicit limits.
pub(crate) async fn read_response_with(
    stream: &mut TcpStream,
    limits: HttpLimits,
) -> Result<HttpResponse, HttpError> {
    let mut parser = ResponseParser::new(limits);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return parser.finish_eof();
        }
        if let Progress::Complete(response) = parser.feed(&chunk[..n])? {
            return Ok(response);
        }
    }
}

/// Polls `check` on the server's stats until it holds (the server counts
/// some things just after the client can observe them).
pub(crate) async fn eventually(server: &ServerHandle, check: impl Fn(&stn_server::Stats) -> bool) {
    loop {
        if check(&server.stats()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
