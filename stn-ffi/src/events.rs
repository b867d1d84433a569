//! What the client tells the app: server pushes, the long link's status and
//! every attempt's report, each delivered to a foreign listener on a thread
//! of its own (a slow listener delays only its own stream, which drops as
//! the Rust streams do when it falls behind), and the network kinds the app
//! reports.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

use futures_core::Stream;
use stn_tokio::proto;
use tokio::sync::Notify;

use crate::error::{ErrorKind, StnError};
use crate::hooks::{CallbackError, TRACE_TARGET};
use crate::runtime::block_on;
use crate::task::Channel;

/// A server push on the long link.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Push {
    /// Its command id.
    pub cmd_id: u32,
    /// Its body.
    pub body: Vec<u8>,
}

/// Where the long link stands.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum LinkStatus {
    /// A connect started.
    Connecting,
    /// The link is up.
    Connected {
        /// The endpoint it connected to (`IP:port`).
        endpoint: String,
    },
    /// The link is down (or a connect failed).
    Disconnected,
    /// The app disabled it (`set_long_link_enabled(false)`).
    Disabled,
}

/// One attempt's profile (Mars `ReportTaskProfile`). Times are in
/// microseconds.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Report {
    /// The task.
    pub task_id: u32,
    /// 1 for the first attempt, 2 for the first retry, …
    pub attempt: u32,
    /// The link it used.
    pub channel: Channel,
    /// The endpoint that carried it, if a connection was made.
    pub endpoint: Option<String>,
    /// From its start to its end.
    pub duration_us: u64,
    /// The TCP connect time (short link: this attempt's connect).
    pub connect_time_us: Option<u64>,
    /// The TLS handshake, from the TCP connect to its end.
    pub handshake_time_us: Option<u64>,
    /// From sending the request to the first reply byte.
    pub first_packet_after_us: Option<u64>,
    /// TCP connects started for it (short link).
    pub connect_attempts: u32,
    /// Request bytes written.
    pub bytes_sent: u64,
    /// Reply bytes received.
    pub bytes_received: u64,
    /// Hedged exchanges it started.
    pub hedges: u32,
    /// The request went as TLS 1.3 early data.
    pub early_data: bool,
    /// Why it failed (`None`: it succeeded).
    pub error: Option<String>,
    /// The kind of [`error`](Self::error).
    pub error_kind: Option<ErrorKind>,
}

/// The network the device is on, as the OS reports it (Android's
/// `ConnectivityManager`, iOS's `NWPathMonitor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum NetworkKind {
    /// Wi-Fi or wired.
    Wifi,
    /// Cellular: Mars's longer mobile timeouts apply.
    Mobile,
    /// Another network (VPN, unknown).
    Other,
    /// No network.
    None,
}

/// Receives the server's pushes.
#[uniffi::export(foreign)]
pub trait PushListener: Send + Sync {
    /// A push arrived.
    fn on_push(&self, push: Push) -> Result<(), CallbackError>;
}

/// Receives the long link's status: first where it stands, then each change.
#[uniffi::export(foreign)]
pub trait LinkStatusListener: Send + Sync {
    /// The status is now `status`.
    fn on_link_status(&self, status: LinkStatus) -> Result<(), CallbackError>;
}

/// Receives every attempt's report.
#[uniffi::export(foreign)]
pub trait ReportListener: Send + Sync {
    /// An attempt ended.
    fn on_report(&self, report: Report) -> Result<(), CallbackError>;
}

/// A listener's delivery thread. It ends when the client shuts down (after
/// the entries already buffered) or at [`cancel`](Self::cancel); dropping
/// this handle does not end it.
#[derive(uniffi::Object)]
pub struct Subscription {
    state: Arc<SubscriptionState>,
}

#[derive(Default)]
struct SubscriptionState {
    cancelled: AtomicBool,
    wake: Notify,
}

#[uniffi::export]
impl Subscription {
    /// Stops delivering (an entry being delivered finishes first).
    pub fn cancel(&self) {
        self.state.cancelled.store(true, Ordering::Release);
        // A stored permit: the thread sees it even if it is not waiting yet.
        self.state.wake.notify_one();
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::Acquire)
    }
}

/// Starts a thread named `name` that gives each entry of `stream` to
/// `deliver`, until the stream ends (the client shut down) or the
/// subscription is cancelled. `deliver`'s errors are logged and the next
/// entry delivered.
pub(crate) fn subscribe<S>(
    name: &'static str,
    mut stream: S,
    deliver: impl Fn(S::Item) -> Result<(), CallbackError> + Send + 'static,
) -> Result<Arc<Subscription>, StnError>
where
    S: Stream + Unpin + Send + 'static,
{
    let state = Arc::new(SubscriptionState::default());
    let thread_state = state.clone();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            while let Some(item) = next_or_cancelled(&mut stream, &thread_state) {
                if let Err(e) = deliver(item) {
                    tracing::error!(target: TRACE_TARGET, listener = name, error = %e, "a listener threw; delivering the next entry");
                }
            }
        })
        .map_err(|e| StnError::new(ErrorKind::Other, format!("could not start the {name} thread: {e}")))?;
    Ok(Arc::new(Subscription { state }))
}

/// The stream's next entry, or `None` once it ends or is cancelled.
fn next_or_cancelled<S: Stream + Unpin>(
    stream: &mut S,
    state: &SubscriptionState,
) -> Option<S::Item> {
    let mut cancelled = pin!(state.wake.notified());
    block_on(std::future::poll_fn(|cx| {
        if state.cancelled.load(Ordering::Acquire) || cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Pin::new(&mut *stream).poll_next(cx)
    }))
}

impl From<proto::LinkStatus> for LinkStatus {
    fn from(s: proto::LinkStatus) -> Self {
        match s {
            proto::LinkStatus::Connecting => LinkStatus::Connecting,
            proto::LinkStatus::Connected { addr } => LinkStatus::Connected {
                endpoint: addr.to_string(),
            },
            proto::LinkStatus::Disconnected => LinkStatus::Disconnected,
            proto::LinkStatus::Disabled => LinkStatus::Disabled,
        }
    }
}

impl From<NetworkKind> for proto::NetworkKind {
    fn from(k: NetworkKind) -> Self {
        match k {
            NetworkKind::Wifi => proto::NetworkKind::Wifi,
            NetworkKind::Mobile => proto::NetworkKind::Mobile,
            NetworkKind::Other => proto::NetworkKind::Other,
            NetworkKind::None => proto::NetworkKind::None,
        }
    }
}

/// Microseconds, saturating.
pub(crate) fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl From<&proto::Report> for Report {
    fn from(r: &proto::Report) -> Self {
        Report {
            task_id: r.task.get(),
            attempt: r.attempt,
            channel: r.channel.into(),
            endpoint: r.endpoint.map(|a| a.to_string()),
            duration_us: micros(r.ended.saturating_duration_since(r.started)),
            connect_time_us: r.connect_time.map(micros),
            handshake_time_us: r.handshake_time.map(micros),
            first_packet_after_us: r.first_packet_after.map(micros),
            connect_attempts: r.connect_attempts,
            bytes_sent: r.bytes_sent,
            bytes_received: r.bytes_received,
            hedges: r.hedges,
            early_data: r.early_data,
            error: r.error.as_ref().map(ToString::to_string),
            error_kind: r.error.as_ref().map(crate::error::kind_of),
        }
    }
}
