//! Starts the reference server in-process on ephemeral loopback ports, then
//! does one raw long-link exchange (a hello frame) and one short-link
//! exchange (a Mars-style HTTP POST), using stn-proto's codecs by hand.
//!
//! ```text
//! cargo run -p stn-server --example serve
//! ```

use std::time::Duration;

use bytes::BytesMut;
use stn_proto::codec::http::{encode_request, HttpLimits, Progress, RequestHead, ResponseParser};
use stn_proto::codec::longlink::{self, CodecConfig, Frame, FrameDecoder};
use stn_server::{Server, ServerConfig, DEFAULT_HELLO_CMD_ID};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("info").init();
    let server = Server::start(ServerConfig {
        delay: Duration::from_millis(10),
        response_size: Some(32),
        ..ServerConfig::default()
    })
    .await?;

    // Long link: one hello frame, answered with the same cmd id and seq.
    let mut long = TcpStream::connect(server.long_addr().expect("long link")).await?;
    let request = Frame::new(DEFAULT_HELLO_CMD_ID, 1, &b"hello over the long link"[..]);
    long.write_all(&longlink::encode_to_bytes(&request, 0)?)
        .await?;
    let mut decoder = FrameDecoder::new(CodecConfig::default());
    let mut buf = BytesMut::new();
    let response = loop {
        if let Some(frame) = decoder.decode(&mut buf)? {
            break frame;
        }
        anyhow::ensure!(long.read_buf(&mut buf).await? > 0, "long link closed");
    };
    tracing::info!(
        cmd_id = response.cmd_id,
        seq = response.seq,
        body = %String::from_utf8_lossy(&response.body),
        "long-link response"
    );

    // Short link: the request bytes a Mars client sends, then one response.
    let addr = server.short_addr().expect("short link");
    let mut short = TcpStream::connect(addr).await?;
    let mut wire = BytesMut::new();
    let head = RequestHead::new("/mars/hello2", None, addr);
    encode_request(&head, b"hello over the short link", &mut wire)?;
    short.write_all(&wire).await?;
    let mut parser = ResponseParser::new(HttpLimits::default());
    let mut chunk = [0u8; 4096];
    let response = loop {
        let n = short.read(&mut chunk).await?;
        if n == 0 {
            break parser.finish_eof()?;
        }
        if let Progress::Complete(response) = parser.feed(&chunk[..n])? {
            break response;
        }
    };
    tracing::info!(
        status = response.status,
        body = %String::from_utf8_lossy(&response.body),
        "short-link response"
    );

    tracing::info!(stats = ?server.stats(), "done");
    server.shutdown().await;
    Ok(())
}
