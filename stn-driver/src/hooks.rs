//! The app's hooks the driver calls (Mars's callbacks): the identify packet
//! per long-link connection and the app's verdict on its answer, and the
//! per-attempt body builder. Each runs on the driver, so it should be quick;
//! each is guarded: a hook that panics is logged and treated as the safest
//! answer instead of taking the driver (and every task) down.

use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use bytes::Bytes;
use stn_proto::IdentifyDecision;
use stn_proto::{BodySource, Task};

use crate::driver::TRACE_TARGET;

/// What the [identify builder](crate::Builder::identify_with) is told
/// about the new long-link connection it builds the packet for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentifyRequest {
    /// The endpoint the long link connected to (`None` if the driver has
    /// not seen it reported yet).
    pub addr: Option<SocketAddr>,
}

/// The server's answer to the identify packet, for the app's
/// [verdict](crate::Builder::identify_verdict) (Mars
/// `OnLongLinkIdentifyResponse`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentifyResponse {
    /// Its command id.
    pub cmd_id: u32,
    /// Its body.
    pub body: Bytes,
    /// The endpoint that answered.
    pub addr: Option<SocketAddr>,
}

pub(crate) type IdentifyBuilder = Arc<dyn Fn(&IdentifyRequest) -> IdentifyDecision + Send + Sync>;
pub(crate) type IdentifyJudge = Arc<dyn Fn(&IdentifyResponse) -> bool + Send + Sync>;

/// How the driver answers the long link's identify question.
#[derive(Clone)]
pub(crate) enum Identify {
    /// The same answer for every connection ([`Builder::identify`](crate::Builder::identify)).
    Fixed(IdentifyDecision),
    /// The app builds it per connection ([`Builder::identify_with`](crate::Builder::identify_with)).
    Build(IdentifyBuilder),
}

impl Identify {
    /// The answer for a connection to `addr`. A builder that panics has no
    /// packet: the connection goes on without identify (`Next`: it is asked
    /// again at the next slot).
    pub(crate) fn decide(&self, addr: Option<SocketAddr>) -> IdentifyDecision {
        match self {
            Identify::Fixed(d) => d.clone(),
            Identify::Build(build) => {
                let request = IdentifyRequest { addr };
                catch_unwind(AssertUnwindSafe(|| build(&request))).unwrap_or_else(|_| {
                    tracing::error!(target: TRACE_TARGET, ?addr, "the identify builder panicked; asking again at the next slot");
                    IdentifyDecision::Next
                })
            }
        }
    }
}

/// The app's verdict on `response`; no judge accepts it. A judge that panics
/// rejects it (the link is taken down and identify runs again on the next).
pub(crate) fn identify_accepted(
    judge: Option<&IdentifyJudge>,
    response: &IdentifyResponse,
) -> bool {
    let Some(judge) = judge else {
        return true;
    };
    catch_unwind(AssertUnwindSafe(|| judge(response))).unwrap_or_else(|_| {
        tracing::error!(target: TRACE_TARGET, cmd_id = response.cmd_id, "the identify verdict panicked; rejecting");
        false
    })
}

/// Makes `task`'s [`BodySource`] safe to run in the driver: if the app's
/// builder panics, the attempt sends the task's fixed
/// [`body`](Task::body) instead and the panic is logged.
pub(crate) fn guard_body_source(task: &mut Task) {
    let Some(source) = task.body_source.take() else {
        return;
    };
    let fallback = task.body.clone();
    task.body_source = Some(BodySource::new(move |request| {
        catch_unwind(AssertUnwindSafe(|| source.body(request))).unwrap_or_else(|_| {
            tracing::error!(target: TRACE_TARGET, task = request.task.get(), attempt = request.attempt, "the body builder panicked; sending the task's fixed body");
            fallback.clone()
        })
    }));
}
