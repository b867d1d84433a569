//! A long-link server that holds the answers the test says to hold, so a
//! test can have tasks in flight at an instant of its choosing without
//! racing a timer: blocking std sockets on threads of its own (so it serves
//! any adapter), Mars's 20-byte framing, noops answered, every request
//! answered with its own body unless its body starts with `hold`, which is
//! answered only on [`HoldingServer::release`].

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::BytesMut;
use stn_driver::proto::codec::longlink::{self, CodecConfig, Frame, FrameDecoder};

/// Most connections one test opens (a bound on the accept loop).
const MAX_CONNECTIONS: usize = 16;

#[derive(Default)]
struct State {
    /// Every request body received, in order, on any connection.
    received: Vec<Vec<u8>>,
    /// Held requests: where to answer and what.
    held: Vec<(TcpStream, Frame)>,
    stopping: bool,
}

pub(crate) struct HoldingServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    accept: Option<JoinHandle<()>>,
}

impl HoldingServer {
    pub(crate) fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming().take(MAX_CONNECTIONS) {
                let Ok(stream) = stream else { continue };
                if shared.lock().unwrap().stopping {
                    return;
                }
                let conn_state = shared.clone();
                std::thread::spawn(move || serve(stream, &conn_state));
            }
        });
        HoldingServer {
            addr,
            state,
            accept: Some(accept),
        }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many requests with exactly `body` arrived (on any connection).
    pub(crate) fn received(&self, body: &str) -> usize {
        let state = self.state.lock().unwrap();
        state
            .received
            .iter()
            .filter(|b| b.as_slice() == body.as_bytes())
            .count()
    }

    /// Answers every held request whose connection is still open.
    pub(crate) fn release(&self) {
        let held = std::mem::take(&mut self.state.lock().unwrap().held);
        for (mut stream, frame) in held {
            // A held request on a connection the client closed has no one
            // to answer; the write fails and is dropped.
            let _ = write_frame(&mut stream, &frame);
        }
    }
}

impl Drop for HoldingServer {
    fn drop(&mut self) {
        self.state.lock().unwrap().stopping = true;
        // Wake the accept loop so its thread ends.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn write_frame(stream: &mut TcpStream, frame: &Frame) -> std::io::Result<()> {
    let wire = longlink::encode_to_bytes(frame, 0).expect("encode");
    stream.write_all(&wire)
}

/// Serves one connection until the client closes it or the server stops.
fn serve(mut stream: TcpStream, state: &Mutex<State>) {
    let _ = stream.set_nodelay(true);
    // Wake up now and then to notice the server stopping.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut decoder = FrameDecoder::new(CodecConfig::default());
    let mut buf = BytesMut::new();
    let mut chunk = [0u8; 4096];
    loop {
        if state.lock().unwrap().stopping {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return,
        }
        loop {
            let frame = match decoder.decode(&mut buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(_) => return,
            };
            if frame.is_noop() {
                if write_frame(&mut stream, &Frame::noop()).is_err() {
                    return;
                }
                continue;
            }
            let mut s = state.lock().unwrap();
            s.received.push(frame.body.to_vec());
            if frame.body.starts_with(b"hold") {
                let Ok(clone) = stream.try_clone() else {
                    return;
                };
                s.held.push((clone, frame));
            } else {
                drop(s);
                if write_frame(&mut stream, &frame).is_err() {
                    return;
                }
            }
        }
    }
}
