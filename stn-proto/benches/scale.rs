//! How the engine's cost grows with the number of tasks in flight.
//!
//! `cargo bench -p stn-proto --bench scale [-- --rounds R --max-long N --max-short N --only N]`
//! (`--only N`: the rows of that size alone, for a profiler)
//!
//! For each N, an in-memory server answers everything at once and the clock
//! stands still (no timer fires): N tasks are submitted (all in flight at
//! the same time), then every connect, write and response is fed back, until
//! every task has finished. One sample of a row is the time per task over
//! enough such rounds to cover a fixed number of tasks (submit to
//! `TaskFinished`; engine set-up excluded). The rows are interleaved: each
//! of the R rounds (default 21) takes one sample of every row, in an order
//! rotated from round to round, so a slow spell of the machine lands on
//! every size alike instead of on one row. A row reports the median of its
//! R samples and their range (fastest and slowest), and the engine's heap
//! bytes per task at the moment all N are in flight (measured by a counting
//! allocator in the first round: bytes live then, minus bytes live before
//! the first submit).
//!
//! Prints a table on stderr, then the growth of the per-task cost from the
//! smallest N to the largest of each link and the engine's cost against the
//! floor (the ratio of the medians, then the median and range of the ratio
//! taken round by round, whose two samples shared the machine's state of
//! that round), and one JSON object per row on stdout:
//! `{"link":"long|short|floor","n":N,"ns_per_task":MEDIAN,"bytes_per_task":F,
//! "ns_per_task_min":F,"ns_per_task_max":F,"rounds":R}`.
//!
//! The `floor` rows are one hash table alone, on this machine, for the same
//! N: one boxed record of the engine's per-task size in a hash map keyed by
//! task id and one entry in an ordered deadline index, each inserted at
//! submit and found and removed at the answer, in the order of the
//! long-link round. It says what a hash-keyed table costs as N grows (its
//! probes scatter over memory); the engine's per-task tables are windows
//! indexed by id instead (`stn-proto/src/id_map.rs`), whose neighbouring
//! tasks sit in neighbouring slots.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant as WallClock;

use bytes::Bytes;
use stn_proto::codec::longlink::{encode_to_bytes, CodecConfig, Frame, FrameDecoder};
use stn_proto::IdentifyDecision;
use stn_proto::Instant;
use stn_proto::Profile;
use stn_proto::{Channel, Task};
use stn_proto::{Config, Engine, Event, Input, Output};
use stn_proto::{ConnEvent, ConnId, IoAction};

/// Counts live heap bytes (the system allocator does the work).
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter is only arithmetic on the sizes it was given.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Long,
    Short,
}

impl Link {
    fn name(self) -> &'static str {
        match self {
            Link::Long => "long",
            Link::Short => "short",
        }
    }
}

const SHORT_PORT: u16 = 8080;
const LONG_PORT: u16 = 8081;
const OK_REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

fn config(n: usize) -> Config {
    let ip = "192.0.2.7".parse().expect("a literal address");
    let mut c = Config::for_profile(Profile::Stn)
        .short_link_ips([ip], SHORT_PORT)
        .long_link_ips([ip], LONG_PORT);
    c.set_max_queued_tasks(n + 16);
    c.set_max_in_flight_short(n + 16);
    c.long_mut().max_in_flight_tasks = n + 16;
    c
}

fn task(link: Link, i: usize) -> Task {
    let body = Bytes::from(format!("task {i}"));
    let channel = match link {
        Link::Long => Channel::Long,
        Link::Short => Channel::Short,
    };
    Task::new(1, "/scale", body)
        .channel(channel)
        .limit_flow(false)
        .limit_frequency(false)
}

/// What the in-memory server owes the engine, kept compact so the bench's
/// own memory stays out of the engine's figure.
#[derive(Clone, Copy)]
enum Owed {
    Connected(ConnId),
    HttpOk(ConnId),
    Frame { conn: ConnId, cmd_id: u32, seq: u32 },
}

impl Owed {
    fn input(self) -> Input {
        match self {
            Owed::Connected(conn) => Input::Conn {
                conn,
                event: ConnEvent::Connected,
            },
            Owed::HttpOk(conn) => Input::Conn {
                conn,
                event: ConnEvent::Received(Bytes::from_static(OK_REPLY)),
            },
            Owed::Frame { conn, cmd_id, seq } => {
                let frame = Frame::new(cmd_id, seq, "pong");
                let data = encode_to_bytes(&frame, 0).expect("a small frame encodes");
                Input::Conn {
                    conn,
                    event: ConnEvent::Received(data),
                }
            }
        }
    }
}

/// The in-memory server: connects succeed, a short-link request gets a 200,
/// a long-link frame an answer with the same seq. Answers wait in `owed`
/// until the bench feeds them.
struct Server {
    long: BTreeMap<ConnId, FrameDecoder>,
    owed: VecDeque<Owed>,
    finished: usize,
    ask_identify: bool,
}

impl Server {
    fn new(n: usize) -> Self {
        Server {
            long: BTreeMap::new(),
            owed: VecDeque::with_capacity(2 * n + 64),
            finished: 0,
            ask_identify: false,
        }
    }

    fn take(&mut self, action: Output) {
        match action {
            Output::Io(IoAction::Connect { conn, addr }) => {
                if addr.port() == LONG_PORT {
                    self.long
                        .insert(conn, FrameDecoder::new(CodecConfig::default()));
                }
                self.owed.push_back(Owed::Connected(conn));
            }
            Output::Io(IoAction::Send { conn, data }) => match self.long.get_mut(&conn) {
                Some(decoder) => {
                    let mut buf = &data[..];
                    while let Ok(Some(frame)) = decoder.decode(&mut buf) {
                        self.owed.push_back(Owed::Frame {
                            conn,
                            cmd_id: frame.cmd_id,
                            seq: frame.seq,
                        });
                    }
                }
                None => self.owed.push_back(Owed::HttpOk(conn)),
            },
            Output::Io(IoAction::Close { conn }) => {
                self.long.remove(&conn);
            }
            Output::Event(Event::TaskFinished { outcome, .. }) => {
                assert!(outcome.is_ok(), "a scale task failed: {outcome:?}");
                self.finished += 1;
            }
            Output::Event(Event::AskIdentify) => self.ask_identify = true,
            _ => {}
        }
    }
}

fn drain(engine: &mut Engine, server: &mut Server) {
    while let Some(a) = engine.poll_output() {
        server.take(a);
    }
}

/// Runs the engine until the long link is up (and identify answered).
fn bring_up_long(engine: &mut Engine, server: &mut Server, now: Instant) {
    for _ in 0..64 {
        engine.handle_timeout(now);
        drain(engine, server);
        if server.ask_identify {
            server.ask_identify = false;
            engine.identify_answer(now, IdentifyDecision::Never);
            drain(engine, server);
        }
        while let Some(owed) = server.owed.pop_front() {
            engine.handle_input(now, owed.input());
            drain(engine, server);
        }
        if engine.long_link_connected() {
            return;
        }
    }
    panic!("the long link did not come up");
}

/// One round: N tasks submitted, all in flight at once, then answered.
/// Returns (wall time, engine bytes per task with all N in flight).
#[allow(clippy::disallowed_methods)] // the bench times the engine, which reads no clock
fn round(link: Link, n: usize) -> (std::time::Duration, f64) {
    let now = Instant::from_secs(1);
    let mut server = Server::new(n);
    let mut engine = Engine::new(now, config(n));
    if link == Link::Long {
        bring_up_long(&mut engine, &mut server, now);
    }
    // Tasks are built before the count starts: their bodies are the app's.
    let tasks: Vec<Task> = (0..n).map(|i| task(link, i)).collect();
    let before = live();
    let started = WallClock::now();
    for t in tasks {
        engine.submit(now, t).expect("the queue has room");
        drain(&mut engine, &mut server);
    }
    let submit_time = started.elapsed();
    // All N are in flight now. The server's answers sit in a queue
    // allocated before `before`: what grew is the engine's.
    let in_flight_bytes = (live() - before) as f64;
    let resumed = WallClock::now();
    while let Some(owed) = server.owed.pop_front() {
        engine.handle_input(now, owed.input());
        drain(&mut engine, &mut server);
    }
    let elapsed = submit_time + resumed.elapsed();
    assert_eq!(server.finished, n, "every task finished");
    (elapsed, in_flight_bytes / n as f64)
}

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Subject {
    Engine(Link),
    /// The bare hash table (see the module docs).
    Floor,
}

impl Subject {
    fn name(self) -> &'static str {
        match self {
            Subject::Engine(link) => link.name(),
            Subject::Floor => "floor",
        }
    }
}

/// One row: its samples (ns per task, one per round) and bytes per task.
struct Row {
    subject: Subject,
    n: usize,
    /// Tasks one sample covers (rounds of `n` back to back).
    budget: usize,
    samples: Vec<f64>,
    bytes_per_task: f64,
}

impl Row {
    fn new(subject: Subject, n: usize, budget: usize) -> Self {
        Row {
            subject,
            n,
            budget,
            samples: Vec::new(),
            bytes_per_task: match subject {
                Subject::Engine(_) => 0.0,
                Subject::Floor => FLOOR_RECORD as f64,
            },
        }
    }

    /// One sample: rounds of `n` tasks covering the budget (at least one).
    fn sample(&mut self) {
        let rounds = (self.budget / self.n).max(1);
        let mut total = std::time::Duration::ZERO;
        for i in 0..rounds {
            match self.subject {
                Subject::Engine(link) => {
                    let (t, bytes) = round(link, self.n);
                    total += t;
                    if self.samples.is_empty() && i == 0 {
                        self.bytes_per_task = bytes;
                    }
                }
                Subject::Floor => total += floor_round(self.n),
            }
        }
        self.samples
            .push(total.as_nanos() as f64 / (rounds * self.n) as f64);
    }

    fn median(&self) -> f64 {
        median(&self.samples)
    }

    fn min(&self) -> f64 {
        self.samples.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn max(&self) -> f64 {
        self.samples.iter().copied().fold(0.0, f64::max)
    }
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `a / b` round by round: (median, fastest, slowest) of the ratios.
fn ratio(a: &Row, b: &Row) -> (f64, f64, f64) {
    let r: Vec<f64> = a
        .samples
        .iter()
        .zip(&b.samples)
        .map(|(x, y)| x / y)
        .collect();
    let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = r.iter().copied().fold(0.0, f64::max);
    (median(&r), lo, hi)
}

/// Bytes of the floor's per-task record: about what the engine holds per
/// long-link task (the `long` rows' bytes column).
const FLOOR_RECORD: usize = 400;

/// One floor round (see the module docs): N records and deadline entries
/// made, then each found, read and dropped, oldest first.
#[allow(clippy::disallowed_methods)] // a wall clock for the bench itself
fn floor_round(n: usize) -> std::time::Duration {
    use rustc_hash::FxHashMap;
    use std::collections::BTreeSet;
    let mut records: FxHashMap<u64, Box<[u8; FLOOR_RECORD]>> = FxHashMap::default();
    let mut deadlines: BTreeSet<(u64, u64)> = BTreeSet::new();
    let started = WallClock::now();
    for id in 0..n as u64 {
        let mut record = Box::new([0u8; FLOOR_RECORD]);
        record[0] = id as u8;
        records.insert(id, record);
        deadlines.insert((1_000 + id, id));
    }
    let mut sum = 0u64;
    for id in 0..n as u64 {
        let record = records.remove(&id).expect("every record was inserted");
        sum = sum.wrapping_add(u64::from(record[0]));
        deadlines.remove(&(1_000 + id, id));
    }
    let elapsed = started.elapsed();
    assert!(records.is_empty() && deadlines.is_empty());
    std::hint::black_box(sum);
    elapsed
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Tasks per sample: the largest N of each kind is one round.
const LONG_BUDGET: usize = 100_000;
const SHORT_BUDGET: usize = 10_000;
const FLOOR_BUDGET: usize = 100_000;

#[allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark program reports
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let max_long = arg(&args, "--max-long", 100_000);
    let max_short = arg(&args, "--max-short", 10_000);
    let rounds = arg(&args, "--rounds", 21).max(1);
    let only = arg(&args, "--only", 0);
    let wanted = |n: usize| only == 0 || n == only;
    let mut rows = Vec::new();
    for n in [100, 1_000, 10_000, 100_000] {
        if n <= max_long && wanted(n) {
            rows.push(Row::new(Subject::Engine(Link::Long), n, LONG_BUDGET.max(n)));
        }
    }
    for n in [100, 1_000, 10_000] {
        if n <= max_short && wanted(n) {
            rows.push(Row::new(
                Subject::Engine(Link::Short),
                n,
                SHORT_BUDGET.max(n),
            ));
        }
    }
    for n in [100, 1_000, 10_000, 100_000] {
        if n <= max_long.max(max_short) && wanted(n) {
            rows.push(Row::new(Subject::Floor, n, FLOOR_BUDGET.max(n)));
        }
    }
    // Every round samples every row, starting one row further on each time.
    for r in 0..rounds {
        for k in 0..rows.len() {
            let i = (r + k) % rows.len();
            rows[i].sample();
        }
        eprint!("\rround {}/{rounds}", r + 1);
    }
    eprintln!();
    eprintln!(
        "| link | in flight | ns per task (median of {rounds}) | range | engine bytes per task |"
    );
    eprintln!("|---|---:|---:|---:|---:|");
    for r in &rows {
        eprintln!(
            "| {} | {} | {:.0} | {:.0}–{:.0} | {:.0} |",
            r.subject.name(),
            r.n,
            r.median(),
            r.min(),
            r.max(),
            r.bytes_per_task
        );
    }
    let find = |subject: Subject, n: usize| rows.iter().find(|r| r.subject == subject && r.n == n);
    eprintln!();
    for link in [Link::Long, Link::Short] {
        let sizes: Vec<&Row> = rows
            .iter()
            .filter(|r| r.subject == Subject::Engine(link))
            .collect();
        if let (Some(small), Some(large)) = (sizes.first(), sizes.last()) {
            if small.n < large.n {
                let (med, lo, hi) = ratio(large, small);
                eprintln!(
                    "growth {} {} / {}: {:.2}x on the medians ({:.2}x, range {:.2}–{:.2}x round by round)",
                    link.name(),
                    large.n,
                    small.n,
                    large.median() / small.median(),
                    med,
                    lo,
                    hi
                );
            }
        }
        for r in &sizes {
            if let Some(floor) = find(Subject::Floor, r.n) {
                let (med, lo, hi) = ratio(r, floor);
                eprintln!(
                    "{} at {}: {:.1}x the floor on the medians ({:.1}x, range {:.1}–{:.1}x round by round)",
                    link.name(),
                    r.n,
                    r.median() / floor.median(),
                    med,
                    lo,
                    hi
                );
            }
        }
    }
    for r in &rows {
        println!(
            "{{\"link\":\"{}\",\"n\":{},\"ns_per_task\":{:.1},\"bytes_per_task\":{:.1},\"ns_per_task_min\":{:.1},\"ns_per_task_max\":{:.1},\"rounds\":{}}}",
            r.subject.name(),
            r.n,
            r.median(),
            r.bytes_per_task,
            r.min(),
            r.max(),
            r.samples.len()
        );
    }
}
