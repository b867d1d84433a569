//! A task as the bindings see it ([`Task`], a record with Mars's defaults)
//! and its [`Response`].

use std::sync::Arc;

use stn_tokio::proto;
use stn_tokio::proto::Duration;

use crate::hooks::{self, BodySource};

/// Which link may carry a task (Mars `channel_select`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum Channel {
    /// An HTTP/1.1 POST of the body to the task's CGI path.
    Short,
    /// A frame on the persistent long link (needs a non-zero `cmd_id`).
    Long,
    /// The long link if it is connected when the task starts, else the
    /// short link (the default).
    Both,
}

/// How a [`Channel::Both`] task picks its link (Mars `channel_strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum ChannelStrategy {
    /// The long link whenever it is connected (the default).
    Normal,
    /// The long link only while it is connected and idle, so an urgent task
    /// never queues behind a busy long link.
    Fast,
}

/// An extra HTTP header of a short-link request.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Header {
    /// Its name (an HTTP token).
    pub name: String,
    /// Its value (no CR, LF or other control characters).
    pub value: String,
}

/// One request/response call (Mars's task, a "CGI") and how to carry it.
/// Every field but the ones that name the call has Mars's default; the
/// client checks the task when it is sent (Mars's limits: priority 0–5,
/// at most 30 retries, a server cost of at most 120 s, a total timeout of
/// at most 600 s) and throws [`ErrorKind::Refused`](crate::ErrorKind::Refused)
/// naming the rule a task breaks.
#[derive(Clone, uniffi::Record)]
pub struct Task {
    /// The long-link frame's command id; 0 keeps the task off the long link.
    #[uniffi(default)]
    pub cmd_id: u32,
    /// The short link's URL path (the POST target); empty keeps the task
    /// off the short link.
    #[uniffi(default)]
    pub cgi: String,
    /// The request body, in the app's own framing.
    #[uniffi(default)]
    pub body: Vec<u8>,
    /// Which link may carry it (`None`: [`Channel::Both`]).
    #[uniffi(default)]
    pub channel: Option<Channel>,
    /// How a `Both` task picks its link (`None`: [`ChannelStrategy::Normal`]).
    #[uniffi(default)]
    pub channel_strategy: Option<ChannelStrategy>,
    /// The short link's `Host` header and DNS name (`None`: the configured host).
    #[uniffi(default)]
    pub host: Option<String>,
    /// Extra HTTP headers for the short link, in order.
    #[uniffi(default)]
    pub headers: Vec<Header>,
    /// 0 (highest) to 5 (lowest); first in, first out within a priority.
    #[uniffi(default = 3)]
    pub priority: u8,
    /// Retries after the first attempt (`None`: Mars's default, 1).
    #[uniffi(default)]
    pub retry_count: Option<u8>,
    /// Expected server processing time, in ms: lengthens the first-packet
    /// and task timeouts.
    #[uniffi(default)]
    pub server_process_cost_ms: Option<u64>,
    /// A cap on the whole task, every attempt included, in ms from the send;
    /// a task that fails before it is parked and replayed until then.
    #[uniffi(default)]
    pub total_timeout_ms: Option<u64>,
    /// Short link only: a long poll with this timeout, in ms.
    #[uniffi(default)]
    pub long_polling_ms: Option<u64>,
    /// Long link only: done once the frame is queued, without a reply.
    #[uniffi(default)]
    pub send_only: bool,
    /// Wait for the app's `set_authed` / `set_host_authed` before each attempt.
    #[uniffi(default)]
    pub need_authed: bool,
    /// The user the task is sent for (for need-auth waits and session
    /// timeouts of apps with several accounts).
    #[uniffi(default)]
    pub user_id: Option<String>,
    /// Subject to Mars's identical-request frequency limit.
    #[uniffi(default = true)]
    pub limit_frequency: bool,
    /// Subject to Mars's mobile flow limit.
    #[uniffi(default = true)]
    pub limit_flow: bool,
    /// End at once with "no network" while there is none (instead of waiting).
    #[uniffi(default)]
    pub network_status_sensitive: bool,
    /// May the short-link request be hedged (sent once more on a fresh
    /// connection while the first goes unanswered)? Only for a request whose
    /// replay is harmless: a hedged request can reach the server twice.
    #[uniffi(default)]
    pub hedge: bool,
    /// May the short-link request go as TLS 1.3 early data (0-RTT)? Only for
    /// a request whose replay is harmless.
    #[uniffi(default)]
    pub early_data: bool,
    /// An opaque value handed back in reports and to the judge.
    #[uniffi(default)]
    pub user_tag: u64,
    /// Builds the body anew for every attempt (Mars `Req2Buf`), instead of
    /// `body`; if it throws, the attempt sends `body`.
    #[uniffi(default)]
    pub body_source: Option<Arc<dyn BodySource>>,
}

/// A task's response.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Response {
    /// The reply body, in the app's own framing.
    pub body: Vec<u8>,
    /// The HTTP status of a short-link reply (always 200: other statuses
    /// throw); `None` on the long link and for a send-only task.
    pub status: Option<u16>,
    /// The reply frame's command id (the task's own on the short link).
    pub cmd_id: u32,
    /// The client's id for the task (the long-link frame's `seq`).
    pub task_id: u32,
    /// Attempts the task made.
    pub attempts: u32,
}

impl From<Channel> for proto::Channel {
    fn from(c: Channel) -> Self {
        match c {
            Channel::Short => proto::Channel::Short,
            Channel::Long => proto::Channel::Long,
            Channel::Both => proto::Channel::Both,
        }
    }
}

impl From<proto::Channel> for Channel {
    fn from(c: proto::Channel) -> Self {
        match c {
            proto::Channel::Short => Channel::Short,
            proto::Channel::Long => Channel::Long,
            proto::Channel::Both => Channel::Both,
        }
    }
}

impl Task {
    /// The Rust task.
    pub(crate) fn into_proto(self) -> proto::Task {
        let mut task = proto::Task::new(self.cmd_id, self.cgi, self.body)
            .channel(self.channel.unwrap_or(Channel::Both).into())
            .channel_strategy(match self.channel_strategy {
                Some(ChannelStrategy::Fast) => proto::ChannelStrategy::Fast,
                Some(ChannelStrategy::Normal) | None => proto::ChannelStrategy::Normal,
            })
            .priority(self.priority)
            .send_only(self.send_only)
            .need_authed(self.need_authed)
            .limit_frequency(self.limit_frequency)
            .limit_flow(self.limit_flow)
            .network_status_sensitive(self.network_status_sensitive)
            .hedge(self.hedge)
            .early_data(self.early_data)
            .user_tag(self.user_tag);
        if let Some(host) = self.host {
            task = task.host(host);
        }
        for header in self.headers {
            task = task.header(header.name, header.value);
        }
        if let Some(retries) = self.retry_count {
            task = task.retry_count(retries);
        }
        if let Some(ms) = self.server_process_cost_ms {
            task = task.server_process_cost(Duration::from_millis(ms));
        }
        if let Some(ms) = self.total_timeout_ms {
            task = task.total_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = self.long_polling_ms {
            task = task.long_polling(Duration::from_millis(ms));
        }
        if let Some(user) = self.user_id {
            task = task.user_id(user);
        }
        if let Some(source) = self.body_source {
            let fallback = task.body.clone();
            task = task.body_source(hooks::body_source(source, fallback));
        }
        task
    }
}

impl Response {
    /// A task's response, with its id and attempts.
    pub(crate) fn new(
        response: proto::Response,
        task_id: Option<proto::TaskId>,
        attempts: u32,
    ) -> Self {
        Response {
            body: response.body.to_vec(),
            status: response.status,
            cmd_id: response.cmd_id,
            task_id: task_id.map_or(0, proto::TaskId::get),
            attempts,
        }
    }
}
