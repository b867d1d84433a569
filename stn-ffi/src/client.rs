//! [`StnClient`]: the Rust [`stn_tokio::Client`] on a runtime of its own,
//! with its methods as the bindings call them.

use std::sync::Arc;

use crate::config::ClientConfig;
use crate::error::StnError;
use crate::events::{
    self, LinkStatus, LinkStatusListener, NetworkKind, Push, PushListener, Report, ReportListener,
    Subscription,
};
use crate::hooks::{self, IdentifyHandler, Judge};
use crate::runtime::{block_on_api, OwnedRuntime};
use crate::task::{Response, Task};

/// What one endpoint looks like to the engine.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct EndpointState {
    /// `IP:port`.
    pub endpoint: String,
    /// Banned now.
    pub banned: bool,
}

/// What the client's TLS handshakes did.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct TlsStats {
    /// Handshakes that completed.
    pub handshakes: u64,
    /// Of those, how many resumed a session.
    pub resumed: u64,
    /// Handshakes that failed or timed out.
    pub failed: u64,
    /// Completed handshakes that sent early data.
    pub early_data: u64,
    /// Of those, how many the server accepted.
    pub early_accepted: u64,
    /// The completed handshakes' total time, in µs.
    pub handshake_time_us: u64,
}

/// A debug snapshot of the client.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Snapshot {
    /// Tasks the engine holds (queued, running or parked).
    pub engine_tasks: u64,
    /// Sends waiting for their task to end.
    pub waiting: u64,
    /// Connections open.
    pub connections: u64,
    /// Short-link attempts running.
    pub short_in_flight: u64,
    /// Tasks awaiting a reply on the long link.
    pub long_in_flight: u64,
    /// The long link's last status.
    pub long_link: Option<LinkStatus>,
    /// Every endpoint connected to, with its ban state.
    pub endpoints: Vec<EndpointState>,
    /// Pushes dropped because a listener did not keep up.
    pub pushes_dropped: u64,
    /// Received bytes held now (partial replies).
    pub held_bytes: u64,
    /// The read budget `held_bytes` stays within.
    pub read_budget: u64,
    /// TLS handshakes so far.
    pub tls: TlsStats,
}

/// An stn client: send tasks, listen to pushes, link status and reports,
/// and pass on what the OS says about the network. Thread-safe; one per
/// app is the usual shape. Its own thread (`stn-driver`) runs every
/// connection; call [`shutdown`](Self::shutdown) when done (dropping the
/// last reference also stops it).
#[derive(uniffi::Object)]
pub struct StnClient {
    client: stn_tokio::Client,
    /// Held for the driver that runs on it; dropped after `client` (fields
    /// drop in order).
    _runtime: OwnedRuntime,
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[uniffi::export]
impl StnClient {
    /// Starts a client. `judge` sees every response before its `send`
    /// returns (Mars `Buf2Resp`); `identify` builds the long link's identify
    /// packet per connection and judges the server's answer.
    ///
    /// Throws [`ErrorKind::Config`](crate::ErrorKind::Config) naming what is wrong: no endpoint, no
    /// port, a malformed endpoint, a backup IP, a zero limit, a PEM without
    /// a certificate, a malformed pin, a bad TLS server name.
    #[uniffi::constructor(default(judge = None, identify = None))]
    pub fn new(
        config: ClientConfig,
        judge: Option<Arc<dyn Judge>>,
        identify: Option<Arc<dyn IdentifyHandler>>,
    ) -> Result<Arc<Self>, StnError> {
        let mut builder = config.builder()?;
        if let Some(judge) = judge {
            builder = builder.judge(hooks::judge(judge));
        }
        if let Some(handler) = identify {
            builder = builder
                .identify_with(hooks::identify_builder(handler.clone()))
                .identify_verdict(hooks::identify_verdict(handler));
        }
        let runtime = OwnedRuntime::start()?;
        let client = {
            let _inside = runtime.handle().enter();
            builder.build()?
        };
        Ok(Arc::new(StnClient {
            client,
            _runtime: runtime,
        }))
    }

    /// Sends `task` and returns its response (Kotlin `suspend`, Python and
    /// Swift `async`). Cancelling the caller's coroutine or task cancels the
    /// task. Throws [`StnError`] with the kind of failure.
    pub async fn send(&self, task: Task) -> Result<Response, StnError> {
        let finished = self.client.send_detailed(task.into_proto()).await;
        match finished.outcome {
            Ok(response) => Ok(Response::new(response, finished.id, finished.attempts)),
            Err(e) => Err(StnError::from_task(&e, finished.attempts)),
        }
    }

    /// [`send`](Self::send), blocking the calling thread until the task ends.
    /// Throws [`ErrorKind::Usage`](crate::ErrorKind::Usage) if called from the client's own judge,
    /// identify or body callback.
    pub fn send_blocking(&self, task: Task) -> Result<Response, StnError> {
        block_on_api("send_blocking", self.send(task))
    }

    /// Delivers every server push from now on to `listener`, on a thread
    /// of its own, until the client shuts down or the subscription is
    /// cancelled. A listener that throws is logged and gets the next push.
    pub fn add_push_listener(
        &self,
        listener: Arc<dyn PushListener>,
    ) -> Result<Arc<Subscription>, StnError> {
        events::subscribe(
            "stn-push-listener",
            self.client.pushes(),
            move |push: stn_tokio::Push| {
                listener.on_push(Push {
                    cmd_id: push.cmd_id,
                    body: push.body.to_vec(),
                })
            },
        )
    }

    /// Delivers the long link's status to `listener`: where it stands now,
    /// then every change (as [`add_push_listener`](Self::add_push_listener)).
    pub fn add_link_status_listener(
        &self,
        listener: Arc<dyn LinkStatusListener>,
    ) -> Result<Arc<Subscription>, StnError> {
        events::subscribe(
            "stn-status-listener",
            self.client.link_status(),
            move |status| listener.on_link_status(status.into()),
        )
    }

    /// Delivers every attempt's report from now on to `listener` (as
    /// [`add_push_listener`](Self::add_push_listener)).
    pub fn add_report_listener(
        &self,
        listener: Arc<dyn ReportListener>,
    ) -> Result<Arc<Subscription>, StnError> {
        events::subscribe(
            "stn-report-listener",
            self.client.reports(),
            move |report| listener.on_report(Report::from(&report)),
        )
    }

    /// The network changed (Android `onCapabilitiesChanged` to another
    /// network, Mars `OnNetworkChange`): bans reset, the long link
    /// reconnects, running attempts are redone.
    pub fn network_changed(&self, kind: NetworkKind) {
        self.client.network_changed(kind.into());
    }

    /// The network went away (Android `onLost`).
    pub fn network_lost(&self) {
        self.client.network_lost();
    }

    /// A network is available (again) (Android `onAvailable`).
    pub fn network_available(&self, kind: NetworkKind) {
        self.client.network_available(kind.into());
    }

    /// The app went to the foreground (`true`) or the background.
    pub fn set_foreground(&self, foreground: bool) {
        self.client.set_foreground(foreground);
    }

    /// Whether the session is authenticated on every host and for every
    /// user (need-auth tasks wait until it is). Forgets every
    /// [`set_host_authed`](Self::set_host_authed) answer. Starts `false`.
    pub fn set_authed(&self, authed: bool) {
        self.client.set_authed(authed);
    }

    /// Whether `user_id` is authenticated on `host` (Mars
    /// `MakesureAuthed(host, user_id)`); `None` is the user of tasks without
    /// a `user_id`.
    pub fn set_host_authed(&self, host: String, user_id: Option<String>, authed: bool) {
        self.client
            .set_host_authed(&host, user_id.as_deref(), authed);
    }

    /// Redoes every task (Mars `RedoTasks`): addresses are resolved again,
    /// running attempts restart, the long link reconnects.
    pub fn redo_tasks(&self) {
        self.client.redo_tasks();
    }

    /// Ends every task held now with [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) (Mars
    /// `ClearTasks`).
    pub fn clear_tasks(&self) {
        self.client.clear_tasks();
    }

    /// Connects the long link now if it is down (Mars
    /// `MakesureLonglinkConnected`).
    pub fn make_sure_long_link_connected(&self) {
        self.client.make_sure_long_link_connected();
    }

    /// Turns the long link off (closed, no reconnect; long-only tasks end
    /// with [`ErrorKind::Local`](crate::ErrorKind::Local)) or back on (Mars `DisableLongLink`).
    pub fn set_long_link_enabled(&self, enabled: bool) {
        self.client.set_long_link_enabled(enabled);
    }

    /// The endpoint history, to store and import at the next start
    /// (Mars's `ipportstrategy.xml`). Throws [`ErrorKind::Shutdown`](crate::ErrorKind::Shutdown) once
    /// shut down.
    pub async fn export_ban_history(&self) -> Result<Vec<u8>, StnError> {
        self.client
            .export_ban_history()
            .await
            .ok_or_else(StnError::shutdown)
    }

    /// [`export_ban_history`](Self::export_ban_history), blocking.
    pub fn export_ban_history_blocking(&self) -> Result<Vec<u8>, StnError> {
        block_on_api("export_ban_history_blocking", self.export_ban_history())
    }

    /// Loads history written by [`export_ban_history`](Self::export_ban_history)
    /// and returns how many entries were taken (expired ones are skipped).
    /// Throws [`ErrorKind::History`](crate::ErrorKind::History) for bytes that are not such a history
    /// (nothing is imported).
    pub async fn import_ban_history(&self, history: Vec<u8>) -> Result<u64, StnError> {
        Ok(count(self.client.import_ban_history(history).await?))
    }

    /// [`import_ban_history`](Self::import_ban_history), blocking.
    pub fn import_ban_history_blocking(&self, history: Vec<u8>) -> Result<u64, StnError> {
        block_on_api(
            "import_ban_history_blocking",
            self.import_ban_history(history),
        )
    }

    /// A debug snapshot. Throws [`ErrorKind::Shutdown`](crate::ErrorKind::Shutdown) once shut down.
    pub async fn snapshot(&self) -> Result<Snapshot, StnError> {
        let s = self
            .client
            .snapshot()
            .await
            .ok_or_else(StnError::shutdown)?;
        Ok(Snapshot {
            engine_tasks: count(s.engine_tasks),
            waiting: count(s.waiting),
            connections: count(s.driver_connections),
            short_in_flight: count(s.short_in_flight),
            long_in_flight: count(s.long_in_flight),
            long_link: s.long_link.map(Into::into),
            endpoints: s
                .endpoints
                .iter()
                .map(|e| EndpointState {
                    endpoint: e.addr.to_string(),
                    banned: e.banned,
                })
                .collect(),
            pushes_dropped: s.pushes_dropped,
            held_bytes: count(s.held_bytes),
            read_budget: count(s.read_budget),
            tls: TlsStats {
                handshakes: s.tls.handshakes,
                resumed: s.tls.resumed,
                failed: s.tls.failed,
                early_data: s.tls.early_data,
                early_accepted: s.tls.early_accepted,
                handshake_time_us: events::micros(s.tls.handshake_time),
            },
        })
    }

    /// [`snapshot`](Self::snapshot), blocking.
    pub fn snapshot_blocking(&self) -> Result<Snapshot, StnError> {
        block_on_api("snapshot_blocking", self.snapshot())
    }

    /// Ends every pending task with [`ErrorKind::Shutdown`](crate::ErrorKind::Shutdown), closes every
    /// connection and stops the client; listeners get what is buffered and
    /// stop. Later sends throw [`ErrorKind::Shutdown`](crate::ErrorKind::Shutdown).
    pub async fn shutdown(&self) {
        self.client.shutdown().await;
    }

    /// [`shutdown`](Self::shutdown), blocking. Throws [`ErrorKind::Usage`](crate::ErrorKind::Usage)
    /// if called from the client's own judge, identify or body callback.
    pub fn shutdown_blocking(&self) -> Result<(), StnError> {
        block_on_api("shutdown_blocking", async {
            self.client.shutdown().await;
            Ok(())
        })
    }

    /// Whether the client is shut down.
    pub fn is_shut_down(&self) -> bool {
        self.client.is_shut_down()
    }
}
