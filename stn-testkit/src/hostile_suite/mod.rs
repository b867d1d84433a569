//! Hostile servers against the client, written once for every runtime
//! adapter (the [`Harness`] of `client_suite`): each test starts a server
//! that misbehaves in one way on loopback, sends tasks at it, and asserts
//! that every task ends with a typed error naming the cause and that the
//! client's memory stays within its budgets — the driver's own counters
//! ([`Snapshot`](stn_driver::Snapshot)) and the test binary's counting
//! allocator ([`Counting`]), whose peak is reset at the start of each test
//! (the tests of one binary run one at a time, see [`serial`]).
//!
//! The servers are plain threads with blocking sockets, so the client side
//! can be any runtime. Every server loop is bounded in count and time
//! ([`SERVER_BOUND`]), and every test by `client_suite::TEST_BOUND`.
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use stn_driver::proto::codec::longlink::{self, CodecConfig, Frame, FrameDecoder};
use stn_driver::proto::LimitKind;
use stn_driver::proto::{Channel, Task};
use stn_driver::proto::{Error as ProtoError, ProtocolError, TimeoutKind};
use stn_driver::{Builder, Client, Error, Snapshot};

use crate::client_suite::{bounded, fast_timeouts, Harness};

/// Longest any hostile server keeps a connection busy.
pub const SERVER_BOUND: Duration = Duration::from_secs(20);

/// The read budget the tests give the client: 8 MiB, room for the four
/// concurrent responses of a test at stn's caps (16 KiB head + 1 MiB body
/// each), far below what the servers send.
pub const READ_BUDGET: usize = 8 * 1024 * 1024;

/// The tighter budget of [`read_budget_holds`]: below what its responses
/// would hold together.
pub const TIGHT_BUDGET: usize = 2 * 1024 * 1024;

/// Most the process may grow during one test beyond its live heap at the
/// start: the read budget, the engine's per-exchange caps (a 1 MiB body or
/// frame being assembled, copied once into a response) and the runtime's
/// and servers' own buffers. The floods below send 10–100 times as much.
pub const GROWTH_BOUND: usize = 24 * 1024 * 1024;

// ------------------------------------------------------------ the allocator

/// A global allocator that counts live heap bytes and their peak. Install it
/// in the test binary: `#[global_allocator] static A: Counting = Counting;`.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to the system allocator unchanged; the
// counters are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

fn grew(n: usize) {
    let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

/// Heap growth since [`Memory::start`]: the peak of live bytes above the
/// live bytes at the start.
pub(crate) struct Memory {
    base: usize,
}

impl Memory {
    pub(crate) fn start() -> Self {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        Memory { base }
    }

    pub(crate) fn peak_growth(&self) -> usize {
        PEAK.load(Ordering::Relaxed).saturating_sub(self.base)
    }
}

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the binary's one test slot, so the allocator's peak is one test's.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------- hostile servers

/// A server on 127.0.0.1 that runs `behave` on every accepted connection
/// (one thread each), for at most [`SERVER_BOUND`] and a number of
/// connections (64 unless [`start_with`](Self::start_with) says).
pub(crate) struct Hostile {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

/// What a connection's thread gets: the socket and the server's stop flag.
pub(crate) struct Peer {
    pub(crate) stream: TcpStream,
    stop: Arc<AtomicBool>,
    until: Instant,
}

impl Peer {
    /// Whether to keep going (not stopped, within the time bound).
    pub(crate) fn live(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && Instant::now() < self.until
    }

    /// Writes `data`; false once the client is gone or the bound is over.
    pub(crate) fn send(&mut self, data: &[u8]) -> bool {
        self.live() && self.stream.write_all(data).is_ok()
    }

    /// Reads what the client sent so far (waits up to 100 ms for it).
    pub(crate) fn read_some(&mut self, buf: &mut BytesMut) -> bool {
        let mut chunk = [0u8; 4096];
        match self.stream.read(&mut chunk) {
            Ok(0) => false,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(e) => matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    }
}

impl Hostile {
    pub(crate) fn start(behave: fn(&mut Peer)) -> Self {
        Self::start_with(behave, 64)
    }

    pub(crate) fn start_with(behave: fn(&mut Peer), max_conns: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (stop2, accepted2) = (stop.clone(), accepted.clone());
        let thread = std::thread::spawn(move || {
            let until = Instant::now() + SERVER_BOUND;
            let mut peers = Vec::new();
            while !stop2.load(Ordering::Relaxed)
                && Instant::now() < until
                && peers.len() < max_conns
            {
                match listener.accept() {
                    Ok((stream, _)) => {
                        accepted2.fetch_add(1, Ordering::Relaxed);
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
                        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
                        let mut peer = Peer {
                            stream,
                            stop: stop2.clone(),
                            until,
                        };
                        peers.push(std::thread::spawn(move || behave(&mut peer)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            for p in peers {
                let _ = p.join();
            }
        });
        Hostile {
            addr,
            stop,
            accepted,
            thread: Some(thread),
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.addr.port()
    }

    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads the request head (and whatever follows it) for at most 1 s.
fn read_request(peer: &mut Peer) {
    let mut buf = BytesMut::new();
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until && !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if !peer.read_some(&mut buf) {
            return;
        }
    }
}

/// Closes every connection at once.
fn close_at_once(_: &mut Peer) {}

/// Endless `100 Continue` interim responses.
fn interim_flood(peer: &mut Peer) {
    read_request(peer);
    let batch = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(1000);
    for _ in 0..4000 {
        if !peer.send(&batch) {
            return;
        }
    }
}

/// A 200 with a chunked body that never ends.
fn endless_chunked(peer: &mut Peer) {
    read_request(peer);
    if !peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") {
        return;
    }
    let mut chunk = b"4000\r\n".to_vec();
    chunk.resize(chunk.len() + 0x4000, b'x');
    chunk.extend_from_slice(b"\r\n");
    for _ in 0..10_000 {
        if !peer.send(&chunk) {
            return;
        }
    }
}

/// A 200 declaring 100 kB, then its body one byte every 20 ms.
fn trickled_body(peer: &mut Peer) {
    read_request(peer);
    if !peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n") {
        return;
    }
    for _ in 0..1000 {
        if !peer.send(b"x") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Bytes that are no HTTP at all.
fn garbage(peer: &mut Peer) {
    read_request(peer);
    noise(peer);
}

/// A fixed pseudo-random pattern, 6.4 MB of it.
fn noise(peer: &mut Peer) {
    let mut x: u32 = 0x9E37_79B9;
    let noise: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect();
    for _ in 0..100 {
        if !peer.send(&noise) {
            return;
        }
    }
}

/// A head claiming a 1 TiB body, then body bytes as fast as they go.
fn huge_length(peer: &mut Peer) {
    read_request(peer);
    if !peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n") {
        return;
    }
    let body = vec![b'x'; 64 * 1024];
    for _ in 0..1000 {
        if !peer.send(&body) {
            return;
        }
    }
}

/// A 200 declaring 900 kB that sends 800 kB of it, then stalls.
fn stalled_large_body(peer: &mut Peer) {
    read_request(peer);
    if !peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 900000\r\n\r\n") {
        return;
    }
    let body = vec![b'x'; 8000];
    for _ in 0..100 {
        if !peer.send(&body) {
            return;
        }
    }
    while peer.live() && peer.read_some(&mut BytesMut::new()) {}
}

/// A long-link server that echoes every frame and floods 32 KiB pushes.
fn push_flood(peer: &mut Peer) {
    let _ = peer.stream.set_read_timeout(Some(Duration::from_millis(1)));
    let mut decoder = FrameDecoder::new(CodecConfig::default());
    let mut input = BytesMut::new();
    let push = longlink::encode_to_bytes(
        &Frame::new(10_001, longlink::PUSH_SEQ, vec![b'p'; 32 * 1024]),
        0,
    )
    .expect("push frame");
    for _ in 0..20_000 {
        if !peer.read_some(&mut input) {
            return;
        }
        while let Ok(Some(frame)) = decoder.decode(&mut input) {
            let echo = longlink::encode_to_bytes(&frame, 0).expect("echo frame");
            if !peer.send(&echo) {
                return;
            }
        }
        if !peer.send(&push) {
            return;
        }
    }
}

/// Reads frames until the client has sent its first task (not a noop).
fn read_first_frame(peer: &mut Peer) {
    let mut decoder = FrameDecoder::new(CodecConfig::default());
    let mut buf = BytesMut::new();
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until && peer.read_some(&mut buf) {
        while let Ok(Some(frame)) = decoder.decode(&mut buf) {
            if !frame.is_noop() {
                return;
            }
        }
    }
}

/// Long-link garbage: bytes that are no frame header, once a task is sent.
fn long_garbage(peer: &mut Peer) {
    read_first_frame(peer);
    noise(peer);
}

/// A long-link frame header claiming a 4 GiB body, once a task is sent.
fn long_huge_length(peer: &mut Peer) {
    read_first_frame(peer);
    let mut head = longlink::encode_to_bytes(&Frame::new(8, 1, Vec::new()), 0)
        .expect("frame")
        .to_vec();
    // The body length is the header's last field (bytes 16..20).
    head[16..20].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
    if !peer.send(&head) {
        return;
    }
    let body = vec![b'x'; 64 * 1024];
    for _ in 0..1000 {
        if !peer.send(&body) {
            return;
        }
    }
}

// ------------------------------------------------------------------ clients

fn short_client<H: Harness>(server: &Hostile) -> Client<H::Rt> {
    Builder::<H::Rt>::with_runtime(H::Rt::default())
        .endpoint("127.0.0.1")
        .short_link_port(server.port())
        .read_budget(READ_BUDGET)
        .configure(fast_timeouts)
        .build()
        .expect("client")
}

fn long_client<H: Harness>(server: &Hostile) -> Client<H::Rt> {
    Builder::<H::Rt>::with_runtime(H::Rt::default())
        .endpoint("127.0.0.1")
        .long_link_port(server.port())
        .read_budget(READ_BUDGET)
        .push_buffer_bytes(256 * 1024)
        .configure(fast_timeouts)
        .build()
        .expect("client")
}

fn short_task(i: usize) -> Task {
    Task::new(8, "/mars/hello2", format!("hostile {i}"))
        .channel(Channel::Short)
        .retry_count(0)
}

fn long_task(i: usize) -> Task {
    Task::new(8, "", format!("hostile {i}"))
        .channel(Channel::Long)
        .retry_count(0)
}

/// Checks the driver's counters and the heap growth against the budgets.
fn within_budget(what: &str, snap: &Snapshot, memory: &Memory) {
    assert!(
        snap.peak_held_bytes <= snap.read_budget,
        "{what}: the driver held {} bytes, over its {}-byte budget: {snap:?}",
        snap.peak_held_bytes,
        snap.read_budget
    );
    let growth = memory.peak_growth();
    assert!(
        growth <= GROWTH_BOUND,
        "{what}: the heap grew by {growth} bytes, over {GROWTH_BOUND}"
    );
}

/// Sends `n` tasks at once; returns their outcomes, each bounded by 15 s.
async fn send_all<H: Harness>(
    client: &Client<H::Rt>,
    tasks: Vec<Task>,
) -> Vec<Result<stn_driver::proto::Response, Error>> {
    let mut joins = Vec::new();
    for task in tasks {
        let c = client.clone();
        joins.push(H::spawn(async move {
            bounded::<H, _>(Duration::from_secs(15), c.send(task)).await
        }));
    }
    let mut out = Vec::new();
    for j in joins {
        out.push(j.await.expect("the task ends within 15 s"));
    }
    out
}

/// Four short-link tasks at once against `behave`: each must end with
/// `expected`, within the budgets.
async fn short_tasks_end_with<H: Harness>(
    what: &str,
    behave: fn(&mut Peer),
    expected: ProtocolError,
) {
    let memory = Memory::start();
    let server = Hostile::start(behave);
    let client = short_client::<H>(&server);
    for r in send_all::<H>(&client, (0..4).map(short_task).collect()).await {
        assert_eq!(
            r.as_ref().err().and_then(Error::task_error),
            Some(&ProtoError::Protocol(expected.clone())),
            "{what}: {r:?}"
        );
    }
    let snap = client.snapshot().await.expect("driver running");
    client.shutdown().await;
    within_budget(what, &snap, &memory);
}

async fn long_error<H: Harness>(behave: fn(&mut Peer)) -> (ProtoError, Snapshot) {
    let server = Hostile::start(behave);
    let client = long_client::<H>(&server);
    let mut results = send_all::<H>(&client, vec![long_task(0)]).await;
    let error = match results.pop() {
        Some(Err(Error::Task { error, .. })) => error,
        other => panic!("expected a task error, got {other:?}"),
    };
    let snap = client.snapshot().await.expect("driver running");
    client.shutdown().await;
    (error, snap)
}

// -------------------------------------------------------------------- tests

/// Endless `100 Continue`: the interim heads are capped like one head.
pub async fn interim_flood_ends<H: Harness>() {
    short_tasks_end_with::<H>("1xx flood", interim_flood, ProtocolError::InterimTooLarge).await;
}

/// An endless chunked body ends at the body cap.
pub async fn endless_chunked_ends<H: Harness>() {
    short_tasks_end_with::<H>(
        "endless chunked body",
        endless_chunked,
        ProtocolError::BodyTooLarge,
    )
    .await;
}

/// A body trickled a byte at a time ends at the task's total timeout.
pub async fn trickled_body_ends<H: Harness>() {
    let memory = Memory::start();
    let server = Hostile::start(trickled_body);
    let client = short_client::<H>(&server);
    let started = Instant::now();
    let tasks = (0..4)
        .map(|i| short_task(i).total_timeout(Duration::from_secs(2)))
        .collect();
    for r in send_all::<H>(&client, tasks).await {
        match r {
            Err(Error::Task {
                error: ProtoError::Timeout(kind),
                ..
            }) => {
                assert!(
                    matches!(kind, TimeoutKind::Task | TimeoutKind::ReadWrite),
                    "{kind:?}"
                );
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    }
    assert!(started.elapsed() < Duration::from_secs(15));
    let snap = client.snapshot().await.expect("driver running");
    client.shutdown().await;
    within_budget("trickled body", &snap, &memory);
}

/// Garbage instead of a status line.
pub async fn garbage_ends<H: Harness>() {
    short_tasks_end_with::<H>("garbage", garbage, ProtocolError::BadStatusLine).await;
}

/// A head claiming a 1 TiB body fails at the head, before any body is kept.
pub async fn huge_length_ends<H: Harness>() {
    short_tasks_end_with::<H>(
        "huge Content-Length",
        huge_length,
        ProtocolError::BodyTooLarge,
    )
    .await;
}

/// Sixteen responses that each send 800 kB of 900 kB and stall: without a
/// budget the client would hold 12.8 MB; with a 2 MiB read budget it holds
/// at most that, readers wait, and the tasks end at their timeouts.
pub async fn read_budget_holds<H: Harness>() {
    let memory = Memory::start();
    let server = Hostile::start(stalled_large_body);
    let client = Builder::<H::Rt>::with_runtime(H::Rt::default())
        .endpoint("127.0.0.1")
        .short_link_port(server.port())
        .read_budget(TIGHT_BUDGET)
        .configure(fast_timeouts)
        .build()
        .expect("client");
    let tasks = (0..16)
        .map(|i| short_task(i).total_timeout(Duration::from_secs(3)))
        .collect();
    for r in send_all::<H>(&client, tasks).await {
        assert!(
            matches!(
                r,
                Err(Error::Task {
                    error: ProtoError::Timeout(_),
                    ..
                })
            ),
            "expected a timeout, got {r:?}"
        );
    }
    let snap = client.snapshot().await.expect("driver running");
    client.shutdown().await;
    assert!(
        snap.peak_held_bytes > TIGHT_BUDGET / 2,
        "the budget was reached: {snap:?}"
    );
    within_budget("stalled large bodies", &snap, &memory);
}

/// A push flood the app never reads: the task still succeeds, the stream
/// holds at most its byte budget, the rest is dropped and counted.
pub async fn unread_push_flood<H: Harness>() {
    let memory = Memory::start();
    let server = Hostile::start(push_flood);
    let client = long_client::<H>(&server);
    let _never_read = client.pushes();
    let r = bounded::<H, _>(Duration::from_secs(10), client.send(long_task(1)))
        .await
        .expect("the task ends in time");
    assert_eq!(r.expect("echoed").body, "hostile 1");
    // Let the flood run on for a while.
    let until = Instant::now() + Duration::from_secs(1);
    let mut snap = client.snapshot().await.expect("driver running");
    while Instant::now() < until {
        H::sleep(Duration::from_millis(50)).await;
        snap = client.snapshot().await.expect("driver running");
        assert!(snap.push_bytes <= 256 * 1024, "{snap:?}");
    }
    assert!(
        snap.pushes_dropped > 0,
        "the flood overflowed the stream: {snap:?}"
    );
    client.shutdown().await;
    drop(server);
    within_budget("unread push flood", &snap, &memory);
}

/// Long-link garbage and a frame claiming 4 GiB: typed errors, bounded memory.
pub async fn long_link_garbage_and_huge_frame<H: Harness>() {
    let memory = Memory::start();
    let (e, snap) = long_error::<H>(long_garbage).await;
    assert!(
        matches!(
            e,
            ProtoError::Protocol(
                ProtocolError::BadFrameHeader
                    | ProtocolError::VersionMismatch
                    | ProtocolError::FrameTooLarge
            )
        ),
        "{e}"
    );
    within_budget("long-link garbage", &snap, &memory);
    let (e, snap) = long_error::<H>(long_huge_length).await;
    assert_eq!(e, ProtoError::Protocol(ProtocolError::FrameTooLarge), "{e}");
    within_budget("long-link huge frame", &snap, &memory);
}

/// A server that closes every connection at once, with the default profile
/// and tasks that have a total timeout (so a failed task is parked and
/// replayed, Mars's zombie tasks): the reconnects are held by the existing
/// limits — the retry count, the parking replay interval, the frequency
/// limit (105 sends of one payload) — and each task ends with a typed
/// error: its total timeout or the frequency limit's rejection.
pub async fn reconnect_storm_is_capped<H: Harness>() {
    const TASKS: usize = 3;
    let memory = Memory::start();
    let server = Hostile::start_with(close_at_once, 2000);
    let client = Builder::<H::Rt>::with_runtime(H::Rt::default())
        .endpoint("127.0.0.1")
        .short_link_port(server.port())
        .read_budget(READ_BUDGET)
        .build()
        .expect("client");
    let tasks = (0..TASKS)
        .map(|i| {
            // A total timeout: the default profile parks such a task after a
            // failure and replays it (Mars's zombie tasks).
            Task::new(8, "/mars/hello2", format!("storm {i}"))
                .channel(Channel::Short)
                .total_timeout(Duration::from_secs(5))
        })
        .collect();
    let started = Instant::now();
    let results = send_all::<H>(&client, tasks).await;
    let accepted = server.accepted();
    for r in results {
        assert!(
            matches!(
                r,
                Err(Error::Task {
                    error: ProtoError::Timeout(TimeoutKind::Task)
                        | ProtoError::Rejected(LimitKind::Frequency),
                    ..
                })
            ),
            "the storm ends with the task's timeout or the frequency limit: {r:?} \
             ({accepted} connections in {:?})",
            started.elapsed()
        );
    }
    assert!(
        accepted <= TASKS * 106,
        "{accepted} connections for {TASKS} tasks: over the frequency limit's 105 each"
    );
    let snap = client.snapshot().await.expect("driver running");
    client.shutdown().await;
    within_budget("reconnect storm", &snap, &memory);
}

/// Declares the hostile suite's `#[test]`s for one [`Harness`].
#[macro_export]
macro_rules! hostile_suite {
    ($h:ty) => {
        $crate::hostile_suite!(@tests $h;
            interim_flood_ends, endless_chunked_ends, trickled_body_ends, garbage_ends,
            huge_length_ends, read_budget_holds, unread_push_flood,
            long_link_garbage_and_huge_frame, reconnect_storm_is_capped);
    };
    (@tests $h:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                let _one = $crate::hostile_suite::serial();
                $crate::client_suite::run::<$h>($crate::hostile_suite::$name::<$h>());
            }
        )*
    };
}
