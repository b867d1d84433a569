//! A phone's app with one call to make: it calls at its start time and,
//! when the call fails, calls again after a pause, until one succeeds or
//! it has made its calls.

use stn_proto::{Duration, Instant};

use crate::client::{ClientCx, SimClient};
use crate::socket::{SocketEvent, SocketId};
use crate::workload::{CallClient, CallId, CallRecord, CallSpec};

/// One call, retried by the app after each failure.
#[derive(Debug)]
pub struct Caller<C> {
    client: C,
    spec: CallSpec,
    retry_after: Duration,
    max_calls: u32,
    in_flight: Option<(CallId, Instant)>,
    records: Vec<CallRecord>,
    /// When the app calls again.
    retry_at: Option<Instant>,
    /// The wake-up the call client asked for (the caller shares the one
    /// wake-up slot with it and wakes it only when that comes).
    client_wake: Option<Instant>,
}

impl<C: CallClient> Caller<C> {
    /// Calls with a `request_len`-byte body; after a failure, calls again
    /// `retry_after` later, `max_calls` calls at most.
    pub fn new(client: C, request_len: usize, retry_after: Duration, max_calls: u32) -> Self {
        Caller {
            client,
            spec: CallSpec { request_len },
            retry_after,
            max_calls: max_calls.max(1),
            in_flight: None,
            records: Vec::new(),
            retry_at: None,
            client_wake: None,
        }
    }

    /// Every call that ended, in order.
    pub fn records(&self) -> &[CallRecord] {
        &self.records
    }

    /// The successful call, if any.
    pub fn served(&self) -> Option<&CallRecord> {
        self.records.iter().find(|r| r.is_ok())
    }

    /// Runs `f` on the call client with the wake-up slot as it left it,
    /// then merges its wake-up with the caller's retry time.
    fn with_client(&mut self, cx: &mut ClientCx<'_>, f: impl FnOnce(&mut C, &mut ClientCx<'_>)) {
        cx.set_wakeup(self.client_wake);
        f(&mut self.client, cx);
        self.client_wake = cx.wakeup();
        self.drain(cx);
        let merged = match (self.client_wake, self.retry_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        cx.set_wakeup(merged);
    }

    fn start_call(&mut self, cx: &mut ClientCx<'_>) {
        let id = CallId(self.records.len() as u64);
        self.in_flight = Some((id, cx.now()));
        let spec = self.spec.clone();
        self.with_client(cx, |c, cx| c.start_call(cx, id, &spec));
    }

    fn drain(&mut self, cx: &mut ClientCx<'_>) {
        while let Some(out) = self.client.poll_outcome() {
            let Some((_, started)) = self.in_flight.filter(|(id, _)| *id == out.id) else {
                continue;
            };
            self.in_flight = None;
            let rec = CallRecord::ended(out, started, cx.now());
            cx.note(
                if rec.is_ok() {
                    "fleet-call-ok"
                } else {
                    "fleet-call-failed"
                },
                crate::units::duration_nanos_saturating(rec.duration()),
            );
            let again = !rec.is_ok() && self.records.len() + 1 < self.max_calls as usize;
            self.records.push(rec);
            if again {
                self.retry_at = Some(cx.now() + self.retry_after);
            }
        }
    }
}

impl<C: CallClient> SimClient for Caller<C> {
    fn start(&mut self, cx: &mut ClientCx<'_>) {
        if self.records.is_empty() && self.in_flight.is_none() {
            self.start_call(cx);
        }
    }

    fn on_socket_event(&mut self, cx: &mut ClientCx<'_>, socket: SocketId, event: SocketEvent) {
        self.with_client(cx, |c, cx| c.on_socket_event(cx, socket, event));
    }

    fn on_wakeup(&mut self, cx: &mut ClientCx<'_>) {
        let now = cx.now();
        if self.retry_at.is_some_and(|t| t <= now) {
            self.retry_at = None;
            self.start_call(cx);
        }
        if self.client_wake.is_some_and(|t| t <= now) {
            self.client_wake = None;
            self.with_client(cx, |c, cx| c.on_wakeup(cx));
        } else {
            self.with_client(cx, |_, _| {});
        }
    }

    fn is_finished(&self) -> bool {
        self.in_flight.is_none() && self.retry_at.is_none() && !self.records.is_empty()
    }
}
