//! Short-link (HTTP/1.1) tests of the reference server over real loopback
//! sockets: requests are the exact bytes stn-proto's encoder produces (or raw
//! text for what it cannot produce), responses are parsed with stn-proto's
//! `ResponseParser`.

mod common;

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use common::{
    assert_silent, bounded, eventually, read_response, read_until_end, start, LongClient,
};
use stn_proto::codec::http::{
    encode_request, HttpError, HttpLimits, Progress, RequestHead, ResponseParser,
};
use stn_proto::codec::longlink::Frame;
use stn_server::{hello_response_body, Fault, ServerConfig, ServerHandle};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The request a Mars client sends: `Connection: close` unless overridden.
fn mars_request(addr: SocketAddr, cgi: &str, body: &[u8], keep_alive: bool) -> BytesMut {
    let mut head = RequestHead::new(cgi, Some("stn.test"), addr);
    if keep_alive {
        head = head.with_header("Connection", "Keep-Alive");
    }
    let mut wire = BytesMut::new();
    encode_request(&head, body, &mut wire).expect("encode");
    wire
}

async fn connect(server: &ServerHandle) -> TcpStream {
    TcpStream::connect(server.short_addr().expect("short link"))
        .await
        .expect("connect")
}

/// Sends `wire` on a new connection and reads one response.
async fn exchange(
    server: &ServerHandle,
    wire: &[u8],
) -> (TcpStream, stn_proto::codec::http::HttpResponse) {
    let mut stream = connect(server).await;
    stream.write_all(wire).await.unwrap();
    let response = read_response(&mut stream).await.expect("a response");
    (stream, response)
}

#[tokio::test]
async fn mars_post_gets_200_and_connection_close_is_honoured() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let addr = server.short_addr().unwrap();
        let wire = mars_request(addr, "/mars/hello2", b"hello stn", false);
        let (mut stream, response) = exchange(&server, &wire).await;
        assert_eq!(response.status, 200);
        assert_eq!(response.header("content-length"), Some("9"));
        assert_eq!(response.header("connection"), Some("close"));
        assert_eq!(response.into_result().unwrap(), &b"hello stn"[..]);
        // Closed after the response.
        let (rest, end) = read_until_end(&mut stream).await;
        assert!(rest.is_empty());
        end.expect("a clean close");
        eventually(&server, |s| s.short_requests_served == 1).await;
        assert_eq!(server.stats().short_connections, 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn configured_response_size_and_extra_cgi_paths() {
    bounded(async {
        let server = start(ServerConfig {
            response_size: Some(5000),
            cgi_paths: vec!["/mars/hello2".into(), "/cgi-bin/echo".into()],
            ..ServerConfig::default()
        })
        .await;
        let addr = server.short_addr().unwrap();
        for cgi in ["/mars/hello2", "/cgi-bin/echo"] {
            let (_, response) = exchange(&server, &mars_request(addr, cgi, b"x", false)).await;
            assert_eq!(response.status, 200);
            assert_eq!(response.header("content-length"), Some("5000"));
            assert_eq!(response.body, hello_response_body(b"x", Some(5000)));
        }
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn unknown_path_is_404() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let addr = server.short_addr().unwrap();
        let (_, response) = exchange(&server, &mars_request(addr, "/nope", b"x", false)).await;
        assert_eq!(response.status, 404);
        assert_eq!(
            &response.body[..],
            b"no CGI at /nope; this server answers /mars/hello2\n"
        );
        assert_eq!(response.into_result(), Err(HttpError::Status(404)));
        assert_eq!(server.stats().short_error_responses, 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn non_post_is_405() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let (_, response) = exchange(
            &server,
            b"GET /mars/hello2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert_eq!(response.status, 405);
        assert_eq!(response.header("allow"), Some("POST"));
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn keep_alive_serves_several_requests_on_one_connection() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let addr = server.short_addr().unwrap();
        let mut stream = connect(&server).await;
        for i in 0..3 {
            let body = format!("request {i}");
            stream
                .write_all(&mars_request(addr, "/mars/hello2", body.as_bytes(), true))
                .await
                .unwrap();
            let response = read_response(&mut stream).await.unwrap();
            assert_eq!(response.status, 200);
            assert_eq!(response.header("connection"), Some("keep-alive"));
            assert!(response
                .header("keep-alive")
                .unwrap()
                .starts_with("timeout="));
            assert_eq!(response.body, body.as_bytes());
        }
        // A 404 keeps the connection too, then `Connection: close` ends it.
        stream
            .write_all(&mars_request(addr, "/nope", b"", true))
            .await
            .unwrap();
        assert_eq!(read_response(&mut stream).await.unwrap().status, 404);
        stream
            .write_all(&mars_request(addr, "/mars/hello2", b"last", false))
            .await
            .unwrap();
        assert_eq!(read_response(&mut stream).await.unwrap().body, &b"last"[..]);
        let (rest, _) = read_until_end(&mut stream).await;
        assert!(rest.is_empty());
        assert_eq!(server.stats().short_connections, 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn pipelined_requests_split_byte_by_byte() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let addr = server.short_addr().unwrap();
        let mut wire = mars_request(addr, "/mars/hello2", b"one", true);
        wire.extend_from_slice(&mars_request(addr, "/mars/hello2", b"two", false));
        let mut stream = connect(&server).await;
        stream.set_nodelay(true).unwrap();
        for byte in wire.iter() {
            stream.write_all(&[*byte]).await.unwrap();
        }
        let (all, _) = read_until_end(&mut stream).await;
        let mut parser = ResponseParser::new(HttpLimits::default());
        let Progress::Complete(first) = parser.feed(&all).unwrap() else {
            panic!("first response incomplete")
        };
        assert_eq!(first.body, &b"one"[..]);
        let second = &all[all.len() - parser.excess_len() as usize..];
        let second =
            stn_proto::codec::http::decode_response(second, HttpLimits::default()).unwrap();
        assert_eq!(second.body, &b"two"[..]);
        assert_eq!(second.header("connection"), Some("close"));
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn bad_requests_get_4xx_and_close() {
    bounded(async {
        let server = start(ServerConfig {
            max_http_body: 100,
            max_http_head: 1024,
            ..ServerConfig::default()
        })
        .await;
        let cases: [(&[u8], u16); 4] = [
            (
                b"POST /mars/hello2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
                411,
            ),
            (b"POST /mars/hello2 HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413),
            (b"POST /mars/hello2 HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
            (&[b'A'; 2000], 431),
        ];
        for (wire, status) in cases {
            let (mut stream, response) = exchange(&server, wire).await;
            assert_eq!(response.status, status);
            assert_eq!(response.header("connection"), Some("close"));
            let (rest, _) = read_until_end(&mut stream).await;
            assert!(rest.is_empty());
        }
        assert_eq!(server.stats().protocol_errors, 4);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn expect_continue_is_honoured() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let mut stream = connect(&server).await;
        stream
            .write_all(b"POST /mars/hello2 HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        // The interim 100 comes before the body is sent; the parser skips it.
        let mut interim = [0u8; 25];
        tokio::io::AsyncReadExt::read_exact(&mut stream, &mut interim).await.unwrap();
        assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
        stream.write_all(b"body").await.unwrap();
        let response = read_response(&mut stream).await.unwrap();
        assert_eq!(response.into_result().unwrap(), &b"body"[..]);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn delay_is_honoured() {
    bounded(async {
        let server = start(ServerConfig {
            delay: Duration::from_secs(1),
            ..ServerConfig::default()
        })
        .await;
        let addr = server.short_addr().unwrap();
        let mut slow = connect(&server).await;
        slow.write_all(&mars_request(addr, "/mars/hello2", b"late", false))
            .await
            .unwrap();
        let slow = tokio::spawn(async move { read_response(&mut slow).await });
        // Noops are not delayed: a long-link exchange sent after the request
        // completes while the request is still held.
        let mut long = LongClient::connect(&server).await;
        long.send(&Frame::noop()).await;
        assert_eq!(long.recv().await.unwrap(), Frame::noop());
        assert!(
            !slow.is_finished(),
            "the delayed response came before the noop echo"
        );
        assert_eq!(server.stats().short_requests_served, 0);
        let response = slow.await.unwrap().unwrap();
        assert_eq!(response.into_result().unwrap(), &b"late"[..]);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn fault_never_respond() {
    bounded(async {
        let server = start(ServerConfig {
            fault: Fault::NeverRespond,
            ..ServerConfig::default()
        })
        .await;
        let addr = server.short_addr().unwrap();
        let mut stream = connect(&server).await;
        stream
            .write_all(&mars_request(addr, "/mars/hello2", b"x", false))
            .await
            .unwrap();
        // The request was read in full, and nothing comes back.
        eventually(&server, |s| s.faults_injected == 1).await;
        assert_silent(&mut stream, Duration::from_millis(200)).await;
        server.shutdown().await;
        // Shutdown closes the stalled connection.
        let (rest, _) = read_until_end(&mut stream).await;
        assert!(rest.is_empty());
    })
    .await;
}

#[tokio::test]
async fn fault_reset_mid_response() {
    bounded(async {
        let server = start(ServerConfig {
            fault: Fault::ResetMidResponse,
            response_size: Some(2000),
            ..ServerConfig::default()
        })
        .await;
        let addr = server.short_addr().unwrap();
        let mut stream = connect(&server).await;
        stream
            .write_all(&mars_request(addr, "/mars/hello2", b"x", false))
            .await
            .unwrap();
        let (got, end) = read_until_end(&mut stream).await;
        assert!(
            got.starts_with(b"HTTP/1.1 200 OK\r\n"),
            "half a response arrives first"
        );
        let mut parser = ResponseParser::new(HttpLimits::default());
        assert_eq!(
            parser.feed(&got),
            Ok(Progress::Partial),
            "and never all of it"
        );
        assert!(parser.body_received() < 2000);
        assert_eq!(end.expect_err("reset").kind(), ErrorKind::ConnectionReset);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn fault_garbage() {
    bounded(async {
        let server = start(ServerConfig {
            fault: Fault::Garbage,
            ..ServerConfig::default()
        })
        .await;
        let addr = server.short_addr().unwrap();
        let mut stream = connect(&server).await;
        stream
            .write_all(&mars_request(addr, "/mars/hello2", b"x", false))
            .await
            .unwrap();
        assert_eq!(
            read_response(&mut stream).await,
            Err(HttpError::BadStatusLine)
        );
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn fault_oversize_length() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        server.set_fault(Fault::OversizeLength);
        assert_eq!(server.fault(), Fault::OversizeLength);
        let addr = server.short_addr().unwrap();
        let mut stream = connect(&server).await;
        stream
            .write_all(&mars_request(addr, "/mars/hello2", b"x", false))
            .await
            .unwrap();
        let err = read_response(&mut stream).await.unwrap_err();
        assert!(
            matches!(err, HttpError::BodyTooLarge { len, .. } if len == 1 << 40),
            "{err:?}"
        );
        // No body and no close: the client has to give up on its own.
        assert_silent(&mut stream, Duration::from_millis(100)).await;
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn config_errors() {
    bounded(async {
        let none = stn_server::Server::start(ServerConfig {
            long_addr: None,
            short_addr: None,
            ..ServerConfig::default()
        })
        .await;
        assert!(matches!(none, Err(stn_server::ServerError::Config(_))));
        let bad_cgi = stn_server::Server::start(ServerConfig {
            cgi_paths: vec!["nope".into()],
            ..ServerConfig::default()
        })
        .await;
        assert!(matches!(bad_cgi, Err(stn_server::ServerError::Config(_))));
        // A port in use.
        let server = start(ServerConfig::default()).await;
        let taken = stn_server::Server::start(ServerConfig {
            long_addr: server.long_addr(),
            ..ServerConfig::default()
        })
        .await;
        assert!(matches!(taken, Err(stn_server::ServerError::Bind { .. })));
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn shutdown_completes_with_a_client_that_does_not_read() {
    bounded(async {
        let server = start(ServerConfig {
            response_size: Some(32 * 1024 * 1024),
            ..ServerConfig::default()
        })
        .await;
        let addr = server.short_addr().unwrap();
        let mut stream = connect(&server).await;
        stream
            .write_all(&mars_request(addr, "/mars/hello2", b"x", false))
            .await
            .unwrap();
        // The server is now stuck writing 32 MiB nobody reads.
        eventually(&server, |s| s.short_connections == 1).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        server.shutdown().await;
        drop(stream);
    })
    .await;
}
