//! Mars's app hooks as foreign traits the app implements: the response
//! judge (Buf2Resp), identify and its verdict, and a body built per attempt
//! (Req2Buf). Each runs on the client's driver thread, so it should be
//! quick; each is guarded: a hook that throws is logged (target `stn`,
//! ERROR) and answered with the safest answer, the one the Rust client gives
//! a hook that panics.

use std::sync::Arc;

use bytes::Bytes;
use stn_tokio::proto;

use crate::task::Channel;

/// Target of the guards' log lines (the client's own target).
pub(crate) const TRACE_TARGET: &str = "stn";

/// What a foreign callback threw. Apps need not throw it themselves: any
/// exception a callback throws arrives as this, with its message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum CallbackError {
    /// The callback failed.
    #[error("{reason}")]
    Failed {
        /// Why, in the foreign code's words.
        reason: String,
    },
}

impl From<uniffi::UnexpectedUniFFICallbackError> for CallbackError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        CallbackError::Failed { reason: e.reason }
    }
}

/// The app's verdict on a response (Mars's `Buf2Resp` return value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum Verdict {
    /// The response is good: the task ends with it.
    Accept,
    /// It could not be decoded: the task is retried if it has retries left,
    /// else it ends with [`ErrorKind::Decode`](crate::ErrorKind::Decode).
    Retry,
    /// End the task now with a decode error, no retry.
    End,
    /// The session expired: need-auth tasks of that host and user wait for
    /// `set_host_authed`/`set_authed`, and this task gets one free retry.
    SessionTimeout,
    /// Retry every running task.
    RetryAll,
}

/// A response waiting for the app's [`Judge`].
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct JudgeRequest {
    /// The task.
    pub task_id: u32,
    /// Which attempt produced it (1 for the first).
    pub attempt: u32,
    /// The link that carried it.
    pub channel: Channel,
    /// The task's `user_tag`.
    pub user_tag: u64,
    /// The reply body.
    pub body: Vec<u8>,
    /// The HTTP status (short link).
    pub status: Option<u16>,
    /// The reply's command id.
    pub cmd_id: u32,
}

/// Judges every response before its `send` returns (Mars `Buf2Resp`).
/// Throwing ends the task with a decode error.
#[uniffi::export(foreign)]
pub trait Judge: Send + Sync {
    /// The verdict on `request`.
    fn judge(&self, request: JudgeRequest) -> Result<Verdict, CallbackError>;
}

/// The app's answer when a new long-link connection asks for its identify
/// packet (Mars `GetLonglinkIdentifyCheckBuffer`).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum IdentifyDecision {
    /// Send this packet now (seq `0xFFFFFFFE`).
    Now {
        /// Its command id.
        cmd_id: u32,
        /// Its body (a login token, say).
        body: Vec<u8>,
    },
    /// Not yet: ask again at the next heartbeat slot.
    Next,
    /// Never on this connection.
    Never,
}

/// The server's answer to the identify packet.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct IdentifyAnswer {
    /// Its command id.
    pub cmd_id: u32,
    /// Its body.
    pub body: Vec<u8>,
    /// The endpoint that answered (`IP:port`).
    pub endpoint: Option<String>,
}

/// Identify on the long link: the packet for each new connection, and the
/// app's verdict on the server's answer (Mars
/// `GetLonglinkIdentifyCheckBuffer` and `OnLongLinkIdentifyResponse`).
/// A `build` that throws answers [`IdentifyDecision::Next`]; a `verdict`
/// that throws rejects the answer (the link is taken down and the next
/// connection identifies again).
#[uniffi::export(foreign)]
pub trait IdentifyHandler: Send + Sync {
    /// The packet for a new connection to `endpoint` (`IP:port`, if known).
    fn build(&self, endpoint: Option<String>) -> Result<IdentifyDecision, CallbackError>;
    /// Whether the server's `answer` accepts this client.
    fn verdict(&self, answer: IdentifyAnswer) -> Result<bool, CallbackError>;
}

/// Which attempt a [`BodySource`] builds the body for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Record)]
pub struct BodyRequest {
    /// The task.
    pub task_id: u32,
    /// 1 for the first attempt, 2 for the first retry, …
    pub attempt: u32,
    /// The link the attempt goes on.
    pub channel: Channel,
}

/// Builds a task's body for each attempt (Mars `Req2Buf`), so a retry after
/// a re-login is signed under the new session. Throwing sends the task's
/// fixed `body`.
#[uniffi::export(foreign)]
pub trait BodySource: Send + Sync {
    /// The body for `request`.
    fn body(&self, request: BodyRequest) -> Result<Vec<u8>, CallbackError>;
}

/// The Rust body source calling `source`, with `fallback` for a throw.
pub(crate) fn body_source(source: Arc<dyn BodySource>, fallback: Bytes) -> proto::BodySource {
    proto::BodySource::new(move |request| {
        let asked = BodyRequest {
            task_id: request.task.get(),
            attempt: request.attempt,
            channel: request.channel.into(),
        };
        match source.body(asked) {
            Ok(body) => body.into(),
            Err(e) => {
                tracing::error!(target: TRACE_TARGET, task = asked.task_id, attempt = asked.attempt, error = %e, "the body source threw; sending the task's fixed body");
                fallback.clone()
            }
        }
    })
}

/// The Rust judge calling `judge`; a throw ends the task (decode error).
pub(crate) fn judge(
    judge: Arc<dyn Judge>,
) -> impl Fn(&proto::JudgeRequest) -> proto::Verdict + Send + Sync {
    move |request| {
        let asked = JudgeRequest {
            task_id: request.id.get(),
            attempt: request.attempt,
            channel: request.channel.into(),
            user_tag: request.user_tag,
            body: request.response.body.to_vec(),
            status: request.response.status,
            cmd_id: request.response.cmd_id,
        };
        match judge.judge(asked) {
            Ok(verdict) => verdict.into(),
            Err(e) => {
                tracing::error!(target: TRACE_TARGET, task = request.id.get(), attempt = request.attempt, error = %e, "the response judge threw; ending the task");
                proto::Verdict::End
            }
        }
    }
}

/// The Rust identify builder calling `handler`; a throw answers `Next`.
pub(crate) fn identify_builder(
    handler: Arc<dyn IdentifyHandler>,
) -> impl Fn(&stn_driver::IdentifyRequest) -> proto::IdentifyDecision + Send + Sync {
    move |request| match handler.build(request.addr.map(|a| a.to_string())) {
        Ok(IdentifyDecision::Now { cmd_id, body }) => proto::IdentifyDecision::Now {
            cmd_id,
            body: body.into(),
        },
        Ok(IdentifyDecision::Next) => proto::IdentifyDecision::Next,
        Ok(IdentifyDecision::Never) => proto::IdentifyDecision::Never,
        Err(e) => {
            tracing::error!(target: TRACE_TARGET, addr = ?request.addr, error = %e, "the identify builder threw; asking again at the next slot");
            proto::IdentifyDecision::Next
        }
    }
}

/// The Rust identify verdict calling `handler`; a throw rejects.
pub(crate) fn identify_verdict(
    handler: Arc<dyn IdentifyHandler>,
) -> impl Fn(&stn_driver::IdentifyResponse) -> bool + Send + Sync {
    move |answer| {
        let asked = IdentifyAnswer {
            cmd_id: answer.cmd_id,
            body: answer.body.to_vec(),
            endpoint: answer.addr.map(|a| a.to_string()),
        };
        handler.verdict(asked).unwrap_or_else(|e| {
            tracing::error!(target: TRACE_TARGET, cmd_id = answer.cmd_id, error = %e, "the identify verdict threw; rejecting");
            false
        })
    }
}

impl From<Verdict> for proto::Verdict {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Accept => proto::Verdict::Accept,
            Verdict::Retry => proto::Verdict::Retry,
            Verdict::End => proto::Verdict::End,
            Verdict::SessionTimeout => proto::Verdict::SessionTimeout,
            Verdict::RetryAll => proto::Verdict::RetryAll,
        }
    }
}
