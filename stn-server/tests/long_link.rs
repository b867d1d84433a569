//! Long-link tests of the reference server over real loopback sockets: a plain
//! tokio `TcpStream` speaks the Mars frame format through stn-proto's codec.

mod common;

use std::io::ErrorKind;
use std::time::Duration;

use bytes::Bytes;
use common::{assert_silent, bounded, eventually, read_until_end, start, LongClient};
use stn_proto::codec::longlink::{
    self, CodecConfig, DecodeError, Frame, FrameDecoder, IDENTIFY_SEQ, NOOP_CMD_ID, NOOP_SEQ,
    PUSH_SEQ,
};
use stn_server::{
    hello_response_body, identify_response_body, Fault, ServerConfig, DEFAULT_PUSH_CMD_ID, GARBAGE,
};
use tokio::io::AsyncWriteExt;

const HELLO: u32 = 8;

#[tokio::test]
async fn noop_is_echoed_with_its_seq() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let mut client = LongClient::connect(&server).await;
        client.send(&Frame::noop()).await;
        let echo = client.recv().await.unwrap();
        assert_eq!((echo.cmd_id, echo.seq), (NOOP_CMD_ID, NOOP_SEQ));
        assert!(echo.body.is_empty());
        // Any seq is echoed as is.
        client
            .send(&Frame::new(NOOP_CMD_ID, 77, Bytes::new()))
            .await;
        assert_eq!(client.recv().await.unwrap().seq, 77);
        let stats = server.stats();
        assert_eq!(stats.noops_answered, 2);
        assert_eq!(stats.long_connections, 1);
        assert_eq!(stats.long_connections_open, 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn hello_answers_with_same_seq_and_configured_size() {
    bounded(async {
        let server = start(ServerConfig {
            response_size: Some(1000),
            ..ServerConfig::default()
        })
        .await;
        let mut client = LongClient::connect(&server).await;
        client.send(&Frame::new(HELLO, 42, &b"hi"[..])).await;
        let response = client.recv().await.unwrap();
        assert_eq!((response.cmd_id, response.seq), (HELLO, 42));
        assert_eq!(response.body.len(), 1000);
        assert_eq!(response.body, hello_response_body(b"hi", Some(1000)));
        assert!(response.body.starts_with(b"Hello from stn! Hello"));
        assert_eq!(server.stats().long_requests_served, 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn hello_echoes_by_default_and_pipelines() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let mut client = LongClient::connect(&server).await;
        for seq in 1..=20u32 {
            let body = format!("request {seq}");
            client
                .send(&Frame::new(HELLO, seq, body.into_bytes()))
                .await;
        }
        for seq in 1..=20u32 {
            let response = client.recv().await.unwrap();
            assert_eq!((response.cmd_id, response.seq), (HELLO, seq));
            assert_eq!(response.body, format!("request {seq}").as_bytes());
        }
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn identify_is_answered_with_checkable_body() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let mut client = LongClient::connect(&server).await;
        client
            .send(&Frame::new(1234, IDENTIFY_SEQ, &b"auth-token"[..]))
            .await;
        let response = client.recv().await.unwrap();
        assert_eq!((response.cmd_id, response.seq), (1234, IDENTIFY_SEQ));
        assert_eq!(response.body, identify_response_body(b"auth-token"));
        assert_eq!(&response.body[..], b"stn-identify-ok:auth-token");
        assert_eq!(server.stats().identifies_answered, 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn unknown_cmd_ids_are_ignored() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let mut client = LongClient::connect(&server).await;
        client.send(&Frame::new(999, 5, &b"?"[..])).await;
        // The noop echo is the next frame: nothing was sent for cmd 999.
        client.sync().await;
        assert_eq!(server.stats().unknown_frames, 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn push_reaches_every_client_as_seq_zero() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        let mut a = LongClient::connect(&server).await;
        let mut b = LongClient::connect(&server).await;
        a.sync().await;
        b.sync().await;
        assert_eq!(server.push(3000, &b"news"[..]), 2);
        for client in [&mut a, &mut b] {
            let push = client.recv().await.unwrap();
            assert!(push.is_push());
            assert_eq!(
                (push.cmd_id, push.seq, &push.body[..]),
                (3000, PUSH_SEQ, &b"news"[..])
            );
        }
        assert_eq!(server.stats().pushes_sent, 2);
        // A closed client is no longer pushed to.
        drop(b);
        eventually(&server, |s| s.long_connections_open == 1).await;
        assert_eq!(server.push(3000, Bytes::new()), 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn periodic_push() {
    bounded(async {
        let server = start(ServerConfig {
            push_every: Some(Duration::from_millis(20)),
            ..ServerConfig::default()
        })
        .await;
        let mut client = LongClient::connect(&server).await;
        client.sync().await;
        let mut last = 0u64;
        for _ in 0..3 {
            let push = client.recv().await.unwrap();
            assert_eq!((push.cmd_id, push.seq), (DEFAULT_PUSH_CMD_ID, PUSH_SEQ));
            let text = std::str::from_utf8(&push.body).unwrap();
            let n: u64 = text.strip_prefix("push ").unwrap().parse().unwrap();
            assert!(n > last, "push numbers increase");
            last = n;
        }
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn frames_split_byte_by_byte() {
    bounded(async {
        let server = start(ServerConfig {
            response_size: Some(3),
            ..ServerConfig::default()
        })
        .await;
        let mut client = LongClient::connect(&server).await;
        let mut wire = Vec::new();
        for frame in [
            Frame::noop(),
            Frame::new(HELLO, 9, &b"split me"[..]),
            Frame::new(HELLO, IDENTIFY_SEQ, &b"id"[..]),
        ] {
            wire.extend_from_slice(&longlink::encode_to_bytes(&frame, 0).unwrap());
        }
        for byte in wire {
            client.stream.write_all(&[byte]).await.unwrap();
            client.stream.flush().await.unwrap();
        }
        assert_eq!(client.recv().await.unwrap(), Frame::noop());
        assert_eq!(
            client.recv().await.unwrap(),
            Frame::new(HELLO, 9, &b"Hel"[..])
        );
        let identify = client.recv().await.unwrap();
        assert_eq!(identify.seq, IDENTIFY_SEQ);
        assert_eq!(identify.body, identify_response_body(b"id"));
        assert_eq!(server.stats().frames_received, 3);
        server.shutdown().await;
    })
    .await;
}

/// A raw header: head length 20, version 0, the given cmd, seq and length.
fn header(cmd_id: u32, seq: u32, body_len: u32) -> Vec<u8> {
    [20, 0, cmd_id, seq, body_len]
        .iter()
        .flat_map(|v: &u32| v.to_be_bytes())
        .collect()
}

#[tokio::test]
async fn oversize_length_field_closes_the_connection() {
    bounded(async {
        let server = start(ServerConfig {
            max_frame_body: 1024,
            ..ServerConfig::default()
        })
        .await;
        // At the cap: fine.
        let mut client = LongClient::connect(&server).await;
        client.send(&Frame::new(HELLO, 1, vec![7u8; 1024])).await;
        assert_eq!(client.recv().await.unwrap().body.len(), 1024);

        // One over: the header alone closes the connection.
        client
            .stream
            .write_all(&header(HELLO, 2, 1025))
            .await
            .unwrap();
        let (rest, end) = read_until_end(&mut client.stream).await;
        assert!(rest.is_empty(), "nothing is answered");
        if let Err(err) = end {
            assert_eq!(err.kind(), ErrorKind::ConnectionReset);
        }
        eventually(&server, |s| {
            s.protocol_errors == 1 && s.long_connections_open == 0
        })
        .await;

        // The server carries on for other clients.
        let mut other = LongClient::connect(&server).await;
        other.sync().await;
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn wrong_client_version_closes_the_connection() {
    bounded(async {
        let server = start(ServerConfig {
            client_version: 0x0100_0000,
            ..ServerConfig::default()
        })
        .await;
        let mut client = LongClient::connect(&server).await;
        // Right version: answered with that version.
        let wire = longlink::encode_to_bytes(&Frame::noop(), 0x0100_0000).unwrap();
        client.stream.write_all(&wire).await.unwrap();
        client.decoder = FrameDecoder::new(CodecConfig {
            client_version: 0x0100_0000,
            ..CodecConfig::default()
        });
        assert_eq!(client.recv().await.unwrap(), Frame::noop());
        // Version 0: closed.
        client.send(&Frame::noop()).await;
        let (rest, _) = read_until_end(&mut client.stream).await;
        assert!(rest.is_empty());
        eventually(&server, |s| s.protocol_errors == 1).await;
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn delay_holds_hello_but_not_noop() {
    bounded(async {
        let server = start(ServerConfig {
            delay: Duration::from_secs(1),
            ..ServerConfig::default()
        })
        .await;
        let mut client = LongClient::connect(&server).await;
        client.send(&Frame::new(HELLO, 1, &b"slow"[..])).await;
        client.send(&Frame::new(HELLO, 2, &b"slow too"[..])).await;
        client.send(&Frame::noop()).await;
        // The noop, sent last, is answered first; the hellos follow in order.
        assert_eq!(client.recv().await.unwrap(), Frame::noop());
        assert_eq!(server.stats().long_requests_served, 0);
        assert_eq!(client.recv().await.unwrap().seq, 1);
        assert_eq!(client.recv().await.unwrap().seq, 2);
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
        let mut client = LongClient::connect(&server).await;
        client.send(&Frame::noop()).await;
        client.send(&Frame::new(HELLO, 1, &b"x"[..])).await;
        eventually(&server, |s| {
            s.frames_received == 2 && s.faults_injected == 2
        })
        .await;
        assert_silent(&mut client.stream, Duration::from_millis(200)).await;
        // Switching the fault off answers later requests.
        server.set_fault(Fault::None);
        client.sync().await;
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn fault_reset_mid_response() {
    bounded(async {
        let server = start(ServerConfig {
            response_size: Some(1000),
            fault: Fault::ResetMidResponse,
            ..ServerConfig::default()
        })
        .await;
        let mut client = LongClient::connect(&server).await;
        // Heartbeats still work.
        client.sync().await;
        let request = Frame::new(HELLO, 5, &b"x"[..]);
        client.send(&request).await;
        let full = longlink::encode_to_bytes(
            &Frame::new(HELLO, 5, hello_response_body(b"x", Some(1000))),
            0,
        )
        .unwrap();
        let (got, end) = read_until_end(&mut client.stream).await;
        assert!(got.len() < full.len(), "the response is cut short");
        assert_eq!(
            &got[..],
            &full[..got.len()],
            "what arrives is the real response's start"
        );
        let err = end.expect_err("the connection is reset, not closed");
        assert_eq!(err.kind(), ErrorKind::ConnectionReset);
        assert_eq!(server.stats().faults_injected, 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn fault_garbage() {
    bounded(async {
        let server = start(ServerConfig::default()).await;
        server.set_fault(Fault::Garbage);
        let mut client = LongClient::connect(&server).await;
        client.sync().await;
        client.send(&Frame::new(HELLO, 5, &b"x"[..])).await;
        let err = client.recv().await.unwrap_err();
        assert!(matches!(err, DecodeError::HeadLength { head_len, .. } if head_len.to_be_bytes() == GARBAGE[..4]));
        // The server says nothing more but keeps the connection open.
        assert_silent(&mut client.stream, Duration::from_millis(100)).await;
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn fault_oversize_length() {
    bounded(async {
        let server = start(ServerConfig {
            fault: Fault::OversizeLength,
            ..ServerConfig::default()
        })
        .await;
        let mut client = LongClient::connect(&server).await;
        client.send(&Frame::new(HELLO, 5, &b"x"[..])).await;
        let err = client.recv().await.unwrap_err();
        assert_eq!(
            err,
            DecodeError::BodyTooLarge {
                len: u32::MAX,
                max: CodecConfig::default().max_body_len
            }
        );
        assert_silent(&mut client.stream, Duration::from_millis(100)).await;
        server.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn shutdown_closes_connections() {
    bounded(async {
        let server = start(ServerConfig {
            short_addr: None,
            ..ServerConfig::default()
        })
        .await;
        assert!(server.short_addr().is_none());
        let mut client = LongClient::connect(&server).await;
        client.sync().await;
        let addr = server.long_addr().unwrap();
        server.shutdown().await;
        let (rest, _) = read_until_end(&mut client.stream).await;
        assert!(rest.is_empty());
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "listener closed"
        );
    })
    .await;
}
