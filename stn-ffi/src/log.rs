//! The client's log lines (tracing, target `stn`) handed to the app's
//! [`LogSink`]: Android's `Log`, `os_log`, Python's `logging`.

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Once, RwLock};

use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// A log line's severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, uniffi::Enum)]
pub enum LogLevel {
    /// Something failed (a task, a callback that threw).
    Error,
    /// Something is wrong but handled (a dropped push).
    Warn,
    /// The long link going up and down.
    Info,
    /// Every task and attempt.
    Debug,
    /// Everything.
    Trace,
}

/// One log line.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct LogRecord {
    /// Its severity.
    pub level: LogLevel,
    /// Where it comes from (`stn`, or a module path).
    pub target: String,
    /// The message, then its fields as `name=value`.
    pub message: String,
}

/// Receives the log lines at or above the level given to [`set_log_sink`].
/// It is called on the thread that logs (the driver's, often), so it should
/// be quick; what it throws is ignored.
#[uniffi::export(foreign)]
pub trait LogSink: Send + Sync {
    /// A line was logged.
    fn log(&self, record: LogRecord);
}

/// The sink and its level (`0`: none).
static SINK: RwLock<Option<Arc<dyn LogSink>>> = RwLock::new(None);
static MAX_LEVEL: AtomicU8 = AtomicU8::new(0);
static INSTALL: Once = Once::new();

/// Sends the library's log lines at `max_level` and above to `sink` (every
/// client's; `None` stops them). The library logs nothing anywhere until
/// this is called.
#[uniffi::export]
pub fn set_log_sink(sink: Option<Arc<dyn LogSink>>, max_level: LogLevel) {
    INSTALL.call_once(|| {
        // This library is its own copy of tracing: no one else sets its
        // global subscriber, so this cannot fail but on a second call, which
        // `Once` rules out.
        let _ =
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(SinkLayer));
    });
    let level = if sink.is_some() { rank(max_level) } else { 0 };
    *SINK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = sink;
    MAX_LEVEL.store(level, Ordering::Release);
}

/// 1 for ERROR … 5 for TRACE: a line is sent if its rank is at most the
/// sink's.
fn rank(level: LogLevel) -> u8 {
    match level {
        LogLevel::Error => 1,
        LogLevel::Warn => 2,
        LogLevel::Info => 3,
        LogLevel::Debug => 4,
        LogLevel::Trace => 5,
    }
}

fn level_of(level: tracing::Level) -> LogLevel {
    match level {
        tracing::Level::ERROR => LogLevel::Error,
        tracing::Level::WARN => LogLevel::Warn,
        tracing::Level::INFO => LogLevel::Info,
        tracing::Level::DEBUG => LogLevel::Debug,
        _ => LogLevel::Trace,
    }
}

/// Hands events to the sink.
struct SinkLayer;

impl<S: tracing::Subscriber> Layer<S> for SinkLayer {
    /// The level can change at run time: decide per event, never per callsite.
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        rank(level_of(*metadata.level())) <= MAX_LEVEL.load(Ordering::Acquire)
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let sink = SINK
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let Some(sink) = sink else { return };
        let mut line = Line::default();
        event.record(&mut line);
        let meta = event.metadata();
        sink.log(LogRecord {
            level: level_of(*meta.level()),
            target: meta.target().to_owned(),
            message: line.finish(),
        });
    }
}

/// An event's message and fields, as text.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Line {
    fn finish(mut self) -> String {
        if !self.fields.is_empty() {
            if !self.message.is_empty() {
                self.message.push(' ');
            }
            self.message.push_str(&self.fields);
        }
        self.message
    }
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
            return;
        }
        if !self.fields.is_empty() {
            self.fields.push(' ');
        }
        let _ = write!(self.fields, "{}={value:?}", field.name());
    }
}
