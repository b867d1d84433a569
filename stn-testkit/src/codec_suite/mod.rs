//! The pluggable long-link codec, written once for every runtime adapter
//! (like `client_suite`, whose [`Harness`] and [`ServerHost`] it uses): a
//! client and the reference server both speaking [`VarintCodec`], a real
//! format unlike Mars's header, carry tasks, pushes, noops and identify; a
//! client whose server speaks Mars's header fails its task with a decode
//! error naming the cause; oversize length headers are refused on both
//! sides before their bodies are read. Real loopback sockets, every wait
//! bounded.
//!
//! ```text
//! cargo test -p stn-tokio --test long_link_codec
//! cargo test -p stn-asyncstd --test long_link_codec
//! ```
pub mod varint;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stn_driver::proto::codec::SharedCodec;
use stn_driver::proto::{Channel, Error as ProtoError, LinkStatus, ProtocolError, Task};
use stn_driver::{Client, Runtime};
use stn_server::ServerConfig;

use crate::client_suite::{bounded, builder, fast_timeouts, Harness, ServerHost};
use varint::VarintCodec;

/// The identify packet's cmd id (any id the server does not treat as hello).
const IDENTIFY_CMD: u32 = 9;

fn long_task(body: impl Into<bytes::Bytes>) -> Task {
    Task::new(8, "", body).channel(Channel::Long).retry_count(0)
}

/// A reference server framing its long link with [`VarintCodec`].
fn varint_server() -> ServerHost {
    ServerHost::start(ServerConfig {
        long_link_codec: Some(SharedCodec::new(VarintCodec)),
        ..ServerConfig::default()
    })
}

/// Waits until the server's counters satisfy `check` (the test's own bound
/// ends a wait that never succeeds).
async fn eventually<H: Harness>(server: &ServerHost, check: impl Fn(&stn_server::Stats) -> bool) {
    while !check(&server.stats()) {
        H::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits (bounded by the test) until the client's long link is up. The
/// snapshot, not the status stream: the link may be up before a stream
/// subscribes.
async fn until_connected<H: Harness, R: Runtime>(client: &Client<R>) {
    client.make_sure_long_link_connected();
    loop {
        let snapshot = client.snapshot().await.expect("client running");
        if matches!(snapshot.long_link, Some(LinkStatus::Connected { .. })) {
            return;
        }
        H::sleep(Duration::from_millis(5)).await;
    }
}

/// Client and server on the varint codec: identify is sent and answered
/// (the app's verdict sees the answer), tasks are answered, a push arrives,
/// and the codec's own noops (`ping` → `pong`) keep the one link alive.
pub async fn codec_custom_end_to_end<H: Harness>() {
    let server = varint_server();
    let answers = Arc::new(Mutex::new(Vec::new()));
    let seen = answers.clone();
    let client = builder::<H>(&server)
        .long_link_codec(VarintCodec)
        .identify(IDENTIFY_CMD, "token-1")
        .identify_verdict(move |answer| {
            let mut seen = seen.lock().expect("answers");
            seen.push((answer.cmd_id, answer.body.clone()));
            true
        })
        // Noops every 200 ms of quiet, so the test sees several.
        .configure(|c| c.long_mut().heartbeat.interval = Duration::from_millis(200))
        .build()
        .expect("client");
    let mut pushes = client.pushes();
    until_connected::<H, _>(&client).await;

    for i in 0..3 {
        let body = format!("hello {i} over varint");
        let r = client
            .send(long_task(body.clone()))
            .await
            .expect("long task");
        assert_eq!(r.body, body);
    }
    // A body that needs a 2-byte varint length.
    let big = vec![b'x'; 1000];
    let r = client
        .send(long_task(big.clone()))
        .await
        .expect("long task");
    assert_eq!(r.body, big);

    assert_eq!(server.push(10_001, b"pushed over varint"), 1);
    let push = bounded::<H, _>(Duration::from_secs(5), pushes.next())
        .await
        .expect("push in time")
        .expect("push stream open");
    assert_eq!(
        (push.cmd_id, &push.body[..]),
        (10_001, &b"pushed over varint"[..])
    );

    eventually::<H>(&server, |s| {
        s.identifies_answered >= 1 && s.noops_answered >= 3
    })
    .await;
    {
        let answers = answers.lock().expect("answers");
        assert_eq!(answers.len(), 1, "{answers:?}");
        assert_eq!(answers[0].0, IDENTIFY_CMD);
        assert!(answers[0].1.ends_with(b"token-1"), "{answers:?}");
    }
    // Every pong was recognised as the codec's noop: no heartbeat timeout
    // took the link down, so it is still the first connection.
    let r = client
        .send(long_task("after the noops"))
        .await
        .expect("long");
    assert_eq!(r.body, "after the noops");
    let stats = server.stats();
    assert_eq!(stats.long_connections, 1, "{stats:?}");
    assert_eq!(stats.protocol_errors, 0, "{stats:?}");
    assert_eq!(stats.unknown_frames, 0, "{stats:?}");
    client.shutdown().await;
}

/// A client on the varint codec whose server speaks Mars's header: the
/// server's first frame (a push) fails the running task at once with a
/// decode error that names the cause, not a heartbeat or task timeout.
pub async fn codec_mismatch_is_a_decode_error<H: Harness>() {
    let server = ServerHost::healthy();
    // Default timeouts: with 1 s ones, a loaded machine could let the
    // task's first-packet timer expire before the push is read, and the
    // task would end with that timeout instead. The 10 s bound below still
    // fails the test if the mismatch is not what ends the task.
    let client = builder::<H>(&server)
        .long_link_codec(VarintCodec)
        .build()
        .expect("client");
    until_connected::<H, _>(&client).await;
    let c = client.clone();
    let send = H::spawn(async move { c.send(long_task("hi")).await });
    // The task's 9-byte frame is shorter than a Mars header, so the server
    // waits for more. The push goes out only once the client has the task
    // in flight with its frame written: then it is read after the task is on
    // the link and ends it. The server's counters cannot say this (bytes
    // buffered there do not say whose they are), and a push sent before the
    // task was submitted ends the link without it
    // (`codec_mismatch_before_the_task_ends_only_the_link`).
    until_in_flight::<H, _>(&client).await;
    // The client's link is up once its connect completes, which may be
    // before the server has accepted it.
    eventually::<H>(&server, |s| s.long_connections_open == 1).await;
    assert_eq!(server.push(10_001, b"a mars push"), 1);
    let err = bounded::<H, _>(Duration::from_secs(10), send)
        .await
        .expect("the task ends in time")
        .expect_err("the mismatch fails the task");
    match err.task_error() {
        Some(ProtoError::Protocol(ProtocolError::Other(why))) => {
            assert!(why.contains("magic byte 0 is 0x00"), "{why}");
        }
        other => panic!("expected a decode error, got {other:?} ({err})"),
    }
    assert!(
        err.to_string()
            .contains("varint codec: magic byte 0 is 0x00, expected 0xa5"),
        "{err}"
    );
    client.shutdown().await;
}

/// Waits (bounded by the test) until the client has one task in flight on
/// the long link with every byte written, on a link that is up.
async fn until_in_flight<H: Harness, R: Runtime>(client: &Client<R>) {
    loop {
        let snapshot = client.snapshot().await.expect("client running");
        if snapshot.long_in_flight == 1
            && snapshot.unsent_bytes == 0
            && matches!(snapshot.long_link, Some(LinkStatus::Connected { .. }))
        {
            return;
        }
        H::sleep(Duration::from_millis(5)).await;
    }
}

/// The order `codec_mismatch_is_a_decode_error` must exclude, forced: a
/// push that reaches the client before the task is submitted takes the
/// idle link down and fails nothing; the task submitted afterwards rides
/// the next connection (its own attempt, unharmed by the old link's
/// decoder) and the mismatch there ends it. A test that pushes once, before
/// the client has its task on the link, meets this order and then waits on
/// the second link for a push that never comes.
pub async fn codec_mismatch_before_the_task_ends_only_the_link<H: Harness>() {
    let server = ServerHost::healthy();
    let client = builder::<H>(&server)
        .long_link_codec(VarintCodec)
        // The waiting task gets its link back after 20 ms, not after the
        // monitor's default 5 s task interval.
        .configure(|c| {
            let monitor = &mut c.long_mut().monitor;
            monitor.task_intervals = [Duration::from_millis(20); 5];
            monitor.disconnect_settle = Duration::from_millis(20);
        })
        .build()
        .expect("client");
    until_connected::<H, _>(&client).await;
    // The client's link is up once its connect completes, which may be
    // before the server has accepted it.
    eventually::<H>(&server, |s| s.long_connections_open == 1).await;
    assert_eq!(server.push(10_001, b"a mars push"), 1);
    // The mismatch takes the link down; no task was on it.
    loop {
        let snapshot = client.snapshot().await.expect("client running");
        if !matches!(snapshot.long_link, Some(LinkStatus::Connected { .. })) {
            assert_eq!(snapshot.engine_tasks, 0, "{snapshot:?}");
            break;
        }
        H::sleep(Duration::from_millis(5)).await;
    }
    let c = client.clone();
    let send = H::spawn(async move { c.send_detailed(long_task("hi")).await });
    until_in_flight::<H, _>(&client).await;
    // The task is on a second connection, the only one the server has open.
    eventually::<H>(&server, |s| {
        s.long_connections == 2 && s.long_connections_open == 1
    })
    .await;
    assert_eq!(server.push(10_001, b"a mars push"), 1);
    let finished = bounded::<H, _>(Duration::from_secs(10), send)
        .await
        .expect("the task ends in time");
    assert_eq!(finished.attempts, 1, "{finished:?}");
    let err = finished.outcome.expect_err("the mismatch fails the task");
    assert!(
        matches!(
            err.task_error(),
            Some(ProtoError::Protocol(ProtocolError::Other(_)))
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("varint codec: magic byte 0 is 0x00, expected 0xa5"),
        "{err}"
    );
    client.shutdown().await;
}

/// Accepts one connection within 10 s.
fn accept_within(listener: &TcpListener) -> TcpStream {
    listener.set_nonblocking(true).expect("nonblocking");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).expect("blocking");
                return stream;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("no connection: {e}"),
        }
    }
}

/// Reads until the peer closes (or 5 s pass); returns whether it closed.
fn closes_within(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut buf = [0u8; 256];
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
    false
}

/// A varint header announcing a 4 GiB body: the reference server closes the
/// connection without buffering it, and the client fails its task with
/// `FrameTooLarge` without buffering it either.
pub async fn codec_oversize_header_refused<H: Harness>() {
    // Server side: a raw client sends only the header.
    let server = varint_server();
    let mut raw = TcpStream::connect(server.long()).expect("connect");
    raw.write_all(&varint::header_announcing(8, 5, u32::MAX))
        .expect("write header");
    assert!(closes_within(&mut raw), "the server closes the connection");
    eventually::<H>(&server, |s| s.protocol_errors == 1).await;
    let stats = server.stats();
    assert!(stats.peak_buffered_bytes < 1 << 20, "{stats:?}");

    // Client side: a raw server answers the first frame with the header.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr: SocketAddr = listener.local_addr().expect("addr");
    let peer = std::thread::spawn(move || {
        let mut conn = accept_within(&listener);
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut buf = [0u8; 64];
        let n = conn.read(&mut buf).expect("the client's frame");
        assert!(n > 0 && buf[..2] == varint::MAGIC, "{:?}", &buf[..n]);
        conn.write_all(&varint::header_announcing(8, 1, u32::MAX))
            .expect("write header");
        closes_within(&mut conn)
    });
    let client = Client::<H::Rt>::builder()
        .endpoint("127.0.0.1")
        .long_link_port(addr.port())
        .long_link_codec(VarintCodec)
        .configure(fast_timeouts)
        .build()
        .expect("client");
    let err = bounded::<H, _>(Duration::from_secs(10), client.send(long_task("hi")))
        .await
        .expect("the task ends in time")
        .expect_err("refused");
    assert_eq!(
        err.task_error(),
        Some(&ProtoError::Protocol(ProtocolError::FrameTooLarge)),
        "{err:?}"
    );
    client.shutdown().await;
    assert!(
        peer.join().expect("peer thread"),
        "the client closed the link"
    );
}

/// Turns the suite into `#[test]`s for one harness.
#[macro_export]
macro_rules! codec_suite {
    ($h:ty) => {
        $crate::codec_suite!(@tests $h;
            codec_custom_end_to_end, codec_mismatch_is_a_decode_error,
            codec_mismatch_before_the_task_ends_only_the_link,
            codec_oversize_header_refused);
    };
    (@tests $h:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                $crate::client_suite::run::<$h>($crate::codec_suite::$name::<$h>());
            }
        )*
    };
}
