//! The named long links besides the main one (Mars `CreateLonglink_ext`):
//! each is an engine of its own with that link as its only link (its own
//! endpoints, racing, heartbeat, identify, codec, reconnect monitor, bans),
//! held by the main engine, which maps its connection and task ids into its
//! own so the app sees one id space, and names the link in what it says.

use std::collections::BTreeMap;

use crate::error::{Error, LocalError};
use crate::io::{ConnEvent, ConnId, ConnIds, IoAction};
use crate::link_name::LinkName;
use crate::long_link::LongLinkConfig;
use crate::rng::Rng;
use crate::task::{Task, TaskId};
use crate::time::Instant;

use super::config::{Config, LongLinkEndpoints, ShortLinkEndpoints};
use super::tasks::Tasks;
use super::types::{Event, Output, SubmitError};
use super::Engine;

/// Most named long links an engine holds at once (the main link aside).
/// Each costs an engine's worth of state and its own connection.
pub const MAX_LINKS: usize = 8;

/// A named long link: where it connects and how it behaves.
///
/// ```
/// use stn_proto::{Config, LinkSpec, Profile};
/// use stn_proto::config::LongLinkEndpoints;
///
/// let config = Config::for_profile(Profile::Stn);
/// let mut endpoints = LongLinkEndpoints::default();
/// endpoints.ips = vec!["10.0.0.2".parse().unwrap()];
/// endpoints.ports = vec![8082];
/// // The main link's heartbeat, codec and monitor, other endpoints.
/// let mut spec = LinkSpec::new(endpoints, config.long().clone());
/// spec.long.max_in_flight_tasks = 16;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LinkSpec {
    /// Where the link connects.
    pub endpoints: LongLinkEndpoints,
    /// Its racing, codec, heartbeat (identify included), reconnect monitor
    /// and tasks in flight.
    pub long: LongLinkConfig,
}

impl LinkSpec {
    /// A link to `endpoints` behaving as `long` says.
    pub fn new(endpoints: LongLinkEndpoints, long: LongLinkConfig) -> Self {
        LinkSpec { endpoints, long }
    }
}

/// Why [`Engine::add_link`] or [`Engine::remove_link`] refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// A link of that name exists already.
    #[error("a long link named {0:?} exists already")]
    Exists(LinkName),
    /// [`MAX_LINKS`] named links exist already.
    #[error("{MAX_LINKS} named long links exist already")]
    TooMany,
    /// The endpoints name no port, or nothing to connect to.
    #[error("the long link {0:?} has no port or no address, host or debug endpoint")]
    NoEndpoints(LinkName),
    /// No link of that name exists.
    #[error("there is no long link named {0:?}")]
    Unknown(LinkName),
    /// The engine is shut down.
    #[error("the engine is shut down")]
    ShutDown,
}

/// One named link: its engine.
#[derive(Debug)]
struct Named {
    name: LinkName,
    /// Its number among every link ever added: the id maps' key, so a link
    /// added again under the name of one still closing is another link.
    serial: u64,
    engine: Box<Engine>,
}

/// The named links and the id maps between their engines and the app.
#[derive(Debug, Default)]
pub(super) struct Links {
    live: Vec<Named>,
    /// Removed links whose engines still have outputs (their closes and the
    /// ends of their tasks) to give.
    closing: Vec<Named>,
    added: u64,
    /// The app's connection id → the link's serial and its own id.
    conns: BTreeMap<ConnId, (u64, ConnId)>,
    conns_back: BTreeMap<(u64, ConnId), ConnId>,
    /// The app's task id → the link's serial and its own id.
    tasks: BTreeMap<TaskId, (u64, TaskId)>,
    tasks_back: BTreeMap<(u64, TaskId), TaskId>,
}

impl Links {
    pub(super) fn is_empty(&self) -> bool {
        self.live.is_empty() && self.closing.is_empty()
    }

    /// The names of the live links, in the order they were added.
    pub(super) fn names(&self) -> impl Iterator<Item = &LinkName> {
        self.live.iter().map(|n| &n.name)
    }

    pub(super) fn get(&self, name: &LinkName) -> Option<&Engine> {
        self.live
            .iter()
            .find(|n| &n.name == name)
            .map(|n| &*n.engine)
    }

    pub(super) fn get_mut(&mut self, name: &LinkName) -> Option<&mut Engine> {
        self.live
            .iter_mut()
            .find(|n| &n.name == name)
            .map(|n| &mut *n.engine)
    }

    /// Every live link's engine.
    pub(super) fn each(&mut self, mut f: impl FnMut(&mut Engine)) {
        for n in &mut self.live {
            f(&mut n.engine);
        }
    }

    /// Adds a link whose engine `parent` (the main engine) derives.
    pub(super) fn add(
        &mut self,
        now: Instant,
        parent: &Engine,
        name: LinkName,
        spec: LinkSpec,
    ) -> Result<(), LinkError> {
        if self.get(&name).is_some() {
            return Err(LinkError::Exists(name));
        }
        if self.live.len() >= MAX_LINKS {
            return Err(LinkError::TooMany);
        }
        let ep = &spec.endpoints;
        let reachable = ep.debug.is_some()
            || !ep.hosts.is_empty()
            || !ep.ips.is_empty()
            || !ep.backup_ips.is_empty();
        if ep.ports.is_empty() && ep.debug.is_none() || !reachable {
            return Err(LinkError::NoEndpoints(name));
        }
        let mut config: Config = parent.config.clone();
        config.long_link = Some(spec.endpoints);
        config.long = spec.long;
        config.short_link = ShortLinkEndpoints::default();
        config.network = parent.network;
        config.foreground = parent.activity.is_foreground();
        // Its own random stream, fixed by the root seed and the name.
        config.seed = Rng::derive(parent.config.seed, name_key(&name)).next_u64();
        let mut engine = Box::new(Engine::new(now, config));
        engine.auth = parent.auth.clone();
        self.added += 1;
        let serial = self.added;
        self.live.push(Named {
            name,
            serial,
            engine,
        });
        Ok(())
    }

    /// Removes a link: every task on it ends with
    /// [`LocalError::LinkRemoved`], its connections close.
    pub(super) fn remove(&mut self, now: Instant, name: &LinkName) -> Result<(), LinkError> {
        let Some(at) = self.live.iter().position(|n| &n.name == name) else {
            return Err(LinkError::Unknown(name.clone()));
        };
        let mut gone = self.live.remove(at);
        let error: Error = LocalError::LinkRemoved { link: name.clone() }.into();
        gone.engine.stop_all(now, error);
        self.closing.push(gone);
        Ok(())
    }

    /// Ends every link (the main engine shuts down).
    pub(super) fn shutdown(&mut self, now: Instant) {
        for mut n in self.live.drain(..) {
            n.engine.shutdown(now);
            self.closing.push(n);
        }
    }

    /// The app's id for a task a link accepted as `inner`.
    /// Submits `task` to the link `name`: its id as the app sees it.
    pub(super) fn submit(
        &mut self,
        now: Instant,
        tasks: &mut Tasks,
        name: &LinkName,
        task: Task,
    ) -> Result<TaskId, SubmitError> {
        let Some(n) = self.live.iter_mut().find(|n| &n.name == name) else {
            return Err(SubmitError::UnknownLink(name.clone()));
        };
        let inner = n.engine.submit(now, task)?;
        let outer = tasks.reserve_foreign();
        self.tasks.insert(outer, (n.serial, inner));
        self.tasks_back.insert((n.serial, inner), outer);
        Ok(outer)
    }

    /// The link and own id of the app's task `outer`, if a live link holds it.
    pub(super) fn task(&mut self, outer: TaskId) -> Option<(&mut Engine, TaskId)> {
        let (serial, inner) = *self.tasks.get(&outer)?;
        let n = self.live.iter_mut().find(|n| n.serial == serial)?;
        Some((&mut *n.engine, inner))
    }

    /// Whether a live link holds the app's task `outer`, not ended yet.
    pub(super) fn has_task(&self, outer: TaskId) -> bool {
        self.tasks.get(&outer).is_some_and(|&(serial, inner)| {
            let mut live = self.live.iter();
            live.any(|n| n.serial == serial && n.engine.has_task(inner))
        })
    }

    /// Tasks the links hold.
    pub(super) fn task_count(&self) -> usize {
        self.live.iter().map(|n| n.engine.task_count()).sum()
    }

    /// Connections the links have open.
    pub(super) fn open_connections(&self) -> usize {
        let engines = self.live.iter().chain(&self.closing);
        engines.map(|n| n.engine.open_connections()).sum()
    }

    /// Routes an event on the app's connection `outer` to its link; `false`
    /// if no link owns it.
    pub(super) fn conn_event(&mut self, now: Instant, outer: ConnId, event: ConnEvent) -> bool {
        let Some(&(serial, inner)) = self.conns.get(&outer) else {
            return false;
        };
        if matches!(event, ConnEvent::ConnectFailed(_) | ConnEvent::Closed(_)) {
            self.forget_conn(outer);
        }
        if let Some(n) = self.live.iter_mut().find(|n| n.serial == serial) {
            let input = super::Input::Conn { conn: inner, event };
            n.engine.handle_input(now, input);
        }
        true
    }

    fn forget_conn(&mut self, outer: ConnId) {
        if let Some(key) = self.conns.remove(&outer) {
            self.conns_back.remove(&key);
        }
    }

    /// The earliest timer of any link.
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        self.live
            .iter()
            .filter_map(|n| n.engine.poll_timeout())
            .min()
    }

    /// The next output of any link, in the app's ids and naming its link.
    pub(super) fn poll_output(&mut self, ids: &mut ConnIds, tasks: &mut Tasks) -> Option<Output> {
        loop {
            let (name, serial, output) = self.next_raw()?;
            if let Some(out) = self.translate(ids, tasks, (name, serial), output) {
                return Some(out);
            }
        }
    }

    /// The next output of a live link, else of a closing one (dropping
    /// those that have nothing left).
    fn next_raw(&mut self) -> Option<(LinkName, u64, Output)> {
        for n in &mut self.live {
            if let Some(out) = n.engine.poll_output() {
                return Some((n.name.clone(), n.serial, out));
            }
        }
        while let Some(n) = self.closing.last_mut() {
            if let Some(out) = n.engine.poll_output() {
                return Some((n.name.clone(), n.serial, out));
            }
            if let Some(gone) = self.closing.pop() {
                // Every task ended and every connection closed: nothing
                // of it is left in the maps but ids the app holds no more.
                self.conns.retain(|_, (l, _)| *l != gone.serial);
                self.conns_back.retain(|(l, _), _| *l != gone.serial);
            }
        }
        None
    }

    fn translate(
        &mut self,
        ids: &mut ConnIds,
        tasks: &mut Tasks,
        (name, serial): (LinkName, u64),
        output: Output,
    ) -> Option<Output> {
        Some(match output {
            Output::Io(io) => Output::Io(self.translate_io(ids, serial, io)?),
            Output::Event(event) => {
                Output::Event(self.translate_event(tasks, (name, serial), event)?)
            }
            other => other,
        })
    }

    fn translate_io(&mut self, ids: &mut ConnIds, serial: u64, io: IoAction) -> Option<IoAction> {
        Some(match io {
            IoAction::Connect { conn, addr } => {
                let outer = ids.next_id();
                self.conns.insert(outer, (serial, conn));
                self.conns_back.insert((serial, conn), outer);
                IoAction::Connect { conn: outer, addr }
            }
            IoAction::Send { conn, data } => IoAction::Send {
                conn: *self.conns_back.get(&(serial, conn))?,
                data,
            },
            IoAction::Close { conn } => {
                let outer = self.conns_back.remove(&(serial, conn))?;
                self.conns.remove(&outer);
                IoAction::Close { conn: outer }
            }
        })
    }

    fn translate_event(
        &mut self,
        tasks: &mut Tasks,
        (name, serial): (LinkName, u64),
        event: Event,
    ) -> Option<Event> {
        Some(match event {
            Event::TaskFinished {
                id,
                outcome,
                attempts,
                user_tag,
            } => {
                let outer = self.tasks_back.remove(&(serial, id))?;
                self.tasks.remove(&outer);
                tasks.release_foreign(outer);
                Event::TaskFinished {
                    id: outer,
                    outcome,
                    attempts,
                    user_tag,
                }
            }
            Event::Report(mut report) => {
                report.task = *self.tasks_back.get(&(serial, report.task))?;
                report.link = Some(name);
                Event::Report(report)
            }
            Event::Judge(mut judge) => {
                judge.id = *self.tasks_back.get(&(serial, judge.id))?;
                Event::Judge(judge)
            }
            // A link's engine has no links of its own.
            Event::Link { .. } => return None,
            // Its link's status, pushes and identify.
            other => Event::Link {
                link: name,
                event: Box::new(other),
            },
        })
    }
}

/// A stable number for a name (FNV-1a), to derive the link's seed from.
fn name_key(name: &LinkName) -> u64 {
    name.as_str().bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
