//! The supervisor owns every agent process and its ACP connection. It never
//! touches GTK; everything that happens goes out as `agent:state` and
//! `agent:log` events.
//!
//! State lives in one table behind a mutex that is never held across an
//! await; long work (spawning, the handshake, the stop sequence) runs outside
//! it and re-checks the table by generation when it is done.

mod auth;
mod gateway;
pub mod guardian;
mod handler;
mod hosts;
mod idle;
pub mod lifecycle;
mod login;
mod logs;
pub mod process;
mod remote_fs;
mod start;
mod start_error;
pub use start_error::StartError;
mod stop;
pub mod terminals;
mod workdir;

pub use auth::AuthState;
pub use login::LoginTerminal;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1 as schema;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::BufReader;
use tokio::sync::watch;

use crate::core::acp::{self, calls, fs::FsScope, Connection, Handler, Responder, RpcError};
use crate::core::config::model::{AgentDef, Limits, McpServerDef};
use crate::core::events::{self, AgentLog, AgentStateChanged, Event, EventSender};
use lifecycle::{transition, AgentState, Trigger};
use process::{StopTimings, GUARDIAN_SLACK};

/// How many stderr lines `Logs` keeps.
pub const LOG_LINES: usize = 200;
/// How many of the last stderr lines an error text carries.
const ERROR_LOG_LINES: usize = 10;

/// The spec's durations. Tests shorten them here (or through
/// `PARLEY_TEST_TIMINGS`), never through the configuration file.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    pub handshake_timeout: Duration,
    pub stop: StopTimings,
    pub idle_check: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            handshake_timeout: Duration::from_secs(30),
            stop: StopTimings {
                eof_grace: Duration::from_secs(5),
                term_grace: Duration::from_secs(3),
            },
            idle_check: Duration::from_secs(30),
        }
    }
}

impl Timings {
    /// The defaults, with any of `handshake=…,eof=…,term=…,idle-check=…`
    /// from the test-only `PARLEY_TEST_TIMINGS` variable.
    pub fn from_env() -> Self {
        let mut t = Timings::default();
        if let Ok(spec) = std::env::var("PARLEY_TEST_TIMINGS") {
            for item in spec.split(',') {
                let Some((key, value)) = item.split_once('=') else {
                    continue;
                };
                let Ok(d) = humantime::parse_duration(value.trim()) else {
                    continue;
                };
                match key.trim() {
                    "handshake" => t.handshake_timeout = d,
                    "eof" => t.stop.eof_grace = d,
                    "term" => t.stop.term_grace = d,
                    "idle-check" => t.idle_check = d,
                    _ => {}
                }
            }
        }
        t
    }
}

/// Where a running agent's session traffic goes (the conversations).
pub trait AgentClient: Send + Sync + 'static {
    fn notification(&self, agent: &str, method: &str, params: &RawValue);
    fn session_update(&self, agent: &str, update: agent_client_protocol_schema::v1::SessionNotification);
    fn request(&self, agent: &str, method: &str, params: &RawValue, responder: Responder);
    /// Whether `session_id` is a session the conversation has open.
    fn has_session(&self, agent: &str, session_id: &str) -> bool;
    /// The agent's connection is gone (stopped, crashed, broken).
    fn disconnected(&self, agent: &str, reason: &str);
}

/// One row of `AgentService.List`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AgentInfo {
    pub name: String,
    pub title: String,
    pub icon: String,
    pub description: String,
    pub state: AgentState,
    pub error: Option<String>,
    pub outdated: bool,
    /// The agent asked to be signed in to (see `auth:changed`).
    #[serde(rename = "needsSignIn")]
    pub needs_sign_in: bool,
    /// Where Add Agent installed it from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<crate::core::config::model::RegistryRef>,
    /// A newer version in the registry (filled in by the core).
    #[serde(rename = "updateAvailable", skip_serializing_if = "Option::is_none")]
    pub update_available: Option<String>,
    /// Where it runs (its `host`), when not here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

struct Running {
    conn: Connection,
    pgid: i32,
    exit: watch::Receiver<Option<ExitStatus>>,
    guardian: process::Guardian,
    /// What `initialize` said of signing in.
    auth_methods: Vec<crate::core::auth::AuthMethod>,
    can_logout: bool,
    /// What `initialize` said the agent can do.
    capabilities: schema::AgentCapabilities,
}

impl Running {
    /// The stop sequence for this process: end of input, the group's
    /// signals, then the guardian's time to end what the agent left.
    async fn end(self, timings: StopTimings) {
        self.conn.close_output();
        process::stop_group(self.pgid, self.exit, timings).await;
        self.guardian.release(timings.term_grace + GUARDIAN_SLACK).await;
    }
}

struct Entry {
    def: AgentDef,
    /// A changed definition waiting for the next start (`outdated`).
    next_def: Option<AgentDef>,
    state: AgentState,
    error: Option<String>,
    /// The failed start behind `error`, for those who waited on it.
    start_error: Option<StartError>,
    /// A stop was requested while starting.
    stop_pending: bool,
    /// A stop sequence is under way.
    stopping: bool,
    /// Removed from the configuration; dropped once stopped.
    removed: bool,
    users: u32,
    last_used: Instant,
    logs: Arc<Mutex<VecDeque<String>>>,
    running: Option<Running>,
    /// Counts starts, so late news from an old process is recognised.
    generation: u64,
    /// Signing in: the methods, and whether the agent needs it.
    auth: AuthState,
    /// What the last `initialize` said the agent can do (kept once it
    /// stops, so attachments can be checked before a start).
    capabilities: Option<schema::AgentCapabilities>,
    /// The directory its current conversation works in, when not its
    /// configured `cwd` (a conversation in a worktree).
    workdir: Option<PathBuf>,
}

impl Entry {
    fn new(def: AgentDef) -> Self {
        Entry {
            workdir: None,
            def,
            next_def: None,
            state: AgentState::Stopped,
            error: None,
            start_error: None,
            stop_pending: false,
            stopping: false,
            removed: false,
            users: 0,
            last_used: Instant::now(),
            logs: Arc::new(Mutex::new(VecDeque::new())),
            running: None,
            generation: 0,
            auth: AuthState::default(),
            capabilities: None,
        }
    }

    /// The definition it runs with: the configuration's, in its current
    /// conversation's directory.
    fn effective(&self) -> AgentDef {
        let mut def = self.def.clone();
        if let Some(dir) = &self.workdir {
            def.cwd = dir.display().to_string();
        }
        def
    }

    /// Once no process is left, a pending definition applies.
    fn settle_definition(&mut self) {
        if let Some(def) = self.next_def.take() {
            self.def = def;
        }
    }

    fn info(&self) -> AgentInfo {
        AgentInfo {
            name: self.def.name.clone(),
            title: self.def.title_or_name().to_owned(),
            icon: self.def.icon.clone(),
            description: self.def.description.clone(),
            state: self.state,
            error: self.error.clone(),
            outdated: self.next_def.is_some(),
            needs_sign_in: self.auth.needs_sign_in.is_some(),
            registry: self.def.registry.clone(),
            update_available: None,
            host: self.def.is_remote().then(|| self.def.host.trim().to_owned()),
        }
    }
}

struct Table {
    agents: Vec<Entry>,
    limits: Limits,
    /// The configuration's MCP servers for every agent.
    mcp_servers: Vec<McpServerDef>,
}

impl Table {
    fn find(&mut self, name: &str) -> Option<&mut Entry> {
        self.agents.iter_mut().find(|e| e.def.name == name)
    }

    fn find_gen(&mut self, name: &str, generation: u64) -> Option<&mut Entry> {
        self.find(name).filter(|e| e.generation == generation)
    }
}

struct Shared {
    table: Mutex<Table>,
    /// Bumped on every state change, for tasks that wait for one.
    changed: watch::Sender<u64>,
    events: EventSender,
    timings: Timings,
    client: RwLock<Option<Arc<dyn AgentClient>>>,
    spawn_prefix: Vec<String>,
    /// The configuration file's path: what saved keys belong to.
    scope: RwLock<String>,
    /// The ACP terminals of the agents' processes.
    terminals: terminals::TerminalService,
    /// The newer versions the registry has, by agent (given by `Core`).
    updates: RwLock<Option<UpdateSource>>,
    /// What a file write of an agent waits for first (see [`WriteGate`]).
    write_gate: RwLock<Option<WriteGate>>,
    /// The links to other hosts (see `crate::core::remote`).
    hosts: hosts::Hosts,
}

/// The newer version an agent's registry has, if any (the registry read
/// last tells it).
pub type UpdateSource = Box<dyn Fn(&AgentDef) -> Option<String> + Send + Sync>;

/// Awaited before an agent's `fs/write_text_file` is done (with the path)
/// and before its `terminal/create` (`None`): the snapshot before its
/// turn must be taken first, and the checkpoints learn what the turn
/// wrote (they give it).
pub type WriteGate = Arc<
    dyn Fn(
            &str,
            Option<std::path::PathBuf>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

#[derive(Clone)]
pub struct AgentService {
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unknown(name: &str) -> String {
    AgentError::Unknown(name.to_owned()).to_string()
}

/// Why `Stop`, `Logs` or taking an agent for a turn was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub enum AgentError {
    Unknown(String),
    NotRunning(String),
}

impl AgentError {
    // In a function body, not the attribute: xgettext finds them here.
    fn text(&self) -> String {
        match self {
            AgentError::Unknown(name) => crate::i18n::gettext_f("unknown agent: {name}", &[("name", name)]),
            AgentError::NotRunning(name) => {
                crate::i18n::gettext_f("the agent {name} is not running", &[("name", name)])
            }
        }
    }
}

impl From<AgentError> for String {
    fn from(e: AgentError) -> Self {
        e.to_string()
    }
}

enum StartStep {
    Done(Result<(), StartError>),
    Wait { was_starting: bool },
    Evict(String),
    Spawn(Box<AgentDef>, u64, Arc<Mutex<VecDeque<String>>>),
}

impl AgentService {
    /// Must be called inside a tokio runtime: it starts the idle check.
    pub fn new(
        events: EventSender,
        timings: Timings,
        spawn_prefix: Vec<String>,
        terminals: terminals::TerminalService,
    ) -> Self {
        let shared = Arc::new(Shared {
            table: Mutex::new(Table {
                agents: Vec::new(),
                limits: Limits::default(),
                mcp_servers: Vec::new(),
            }),
            changed: watch::channel(0).0,
            events,
            timings,
            client: RwLock::new(None),
            spawn_prefix,
            scope: RwLock::new(String::new()),
            terminals,
            updates: RwLock::new(None),
            write_gate: RwLock::new(None),
            hosts: hosts::Hosts::default(),
        });
        let service = AgentService { shared };
        service.watch_idle();
        service
    }

    /// Where `list` learns of newer versions (the registry's service, each
    /// time it reads the registry).
    pub fn set_updates(&self, source: UpdateSource) {
        *self.shared.updates.write().unwrap_or_else(|e| e.into_inner()) = Some(source);
    }

    pub fn set_write_gate(&self, gate: WriteGate) {
        *self.shared.write_gate.write().unwrap_or_else(|e| e.into_inner()) = Some(gate);
    }

    pub(super) fn write_gate(&self) -> Option<WriteGate> {
        self.shared
            .write_gate
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn set_client(&self, client: Arc<dyn AgentClient>) {
        *self.shared.client.write().unwrap_or_else(|e| e.into_inner()) = Some(client);
    }

    pub fn timings(&self) -> Timings {
        self.shared.timings
    }

    fn client(&self) -> Option<Arc<dyn AgentClient>> {
        self.shared
            .client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn emit_state(&self, e: &Entry) {
        self.emit_info(&e.info());
    }

    /// The MCP servers every agent's new sessions get.
    pub fn set_global_mcp_servers(&self, servers: Vec<McpServerDef>) {
        lock(&self.shared.table).mcp_servers = servers;
    }

    pub fn global_mcp_servers(&self) -> Vec<McpServerDef> {
        lock(&self.shared.table).mcp_servers.clone()
    }

    /// Applies a (valid) configuration: added agents appear `stopped`,
    /// removed ones are stopped, running ones whose definition changed are
    /// marked outdated until a restart applies the change.
    pub fn apply_config(&self, defs: &[AgentDef], limits: Limits) {
        let mut to_stop = Vec::new();
        {
            let mut t = lock(&self.shared.table);
            t.limits = limits;
            let mut old: Vec<Entry> = std::mem::take(&mut t.agents);
            let mut agents = Vec::with_capacity(defs.len());
            for def in defs {
                match old.iter().position(|e| e.def.name == def.name && !e.removed) {
                    Some(i) => {
                        let mut e = old.remove(i);
                        let changed = if e.state.is_running() {
                            let was = e.next_def.as_ref().unwrap_or(&e.def);
                            let changed = was != def;
                            if changed {
                                e.next_def = (e.def != *def).then(|| def.clone());
                            }
                            changed
                        } else {
                            let changed = e.def != *def;
                            e.def = def.clone();
                            e.next_def = None;
                            changed
                        };
                        if changed {
                            self.emit_state(&e);
                        }
                        agents.push(e);
                    }
                    None => {
                        let e = Entry::new(def.clone());
                        self.emit_state(&e);
                        agents.push(e);
                    }
                }
            }
            for mut e in old {
                if e.state.is_running() || e.stopping {
                    e.removed = true;
                    to_stop.push(e.def.name.clone());
                    agents.push(e);
                } else if !e.removed {
                    tracing::debug!(agent = e.def.name, "removed from the configuration");
                }
            }
            t.agents = agents;
        }
        for name in to_stop {
            let this = self.clone();
            tokio::spawn(async move {
                let _ = this.stop(&name).await;
            });
        }
    }

    /// Every agent of the configuration, in its order.
    pub fn list(&self) -> Vec<AgentInfo> {
        let updates = self.shared.updates.read().unwrap_or_else(|e| e.into_inner());
        let t = lock(&self.shared.table);
        t.agents
            .iter()
            .filter(|e| !e.removed)
            .map(|e| AgentInfo {
                // The configured definition: a running agent's new one
                // waits for its restart, but its version is the file's.
                update_available: updates
                    .as_ref()
                    .and_then(|newer| newer(e.next_def.as_ref().unwrap_or(&e.def))),
                ..e.info()
            })
            .collect()
    }

    pub fn state(&self, name: &str) -> Option<AgentState> {
        lock(&self.shared.table).find(name).map(|e| e.state)
    }

    pub fn definition(&self, name: &str) -> Option<AgentDef> {
        lock(&self.shared.table)
            .find(name)
            .filter(|e| !e.removed)
            .map(|e| e.effective())
    }

    fn emit_info(&self, info: &AgentInfo) {
        events::emit(
            &self.shared.events,
            Event::AgentState(AgentStateChanged {
                agent: info.name.clone(),
                state: info.state,
                error: if info.state == AgentState::Error {
                    info.error.clone()
                } else {
                    None
                },
                outdated: info.outdated,
                host: info.host.clone(),
            }),
        );
        self.shared.changed.send_modify(|n| *n += 1);
    }

    /// A conversation starts using the agent: `ready` → `busy`.
    pub fn acquire(&self, name: &str) -> Result<(), AgentError> {
        let mut t = lock(&self.shared.table);
        let e = t.find(name).ok_or_else(|| AgentError::Unknown(name.to_owned()))?;
        let next =
            transition(e.state, Trigger::Used).ok_or_else(|| AgentError::NotRunning(name.to_owned()))?;
        e.users += 1;
        e.last_used = Instant::now();
        if next != e.state {
            e.state = next;
            self.emit_state(e);
        }
        Ok(())
    }

    /// A conversation is done with the agent: the last user makes it `ready`.
    pub fn release(&self, name: &str) {
        let mut t = lock(&self.shared.table);
        let Some(e) = t.find(name) else { return };
        e.users = e.users.saturating_sub(1);
        e.last_used = Instant::now();
        if e.users == 0 {
            if let Some(next) = transition(e.state, Trigger::LastUserDone) {
                e.state = next;
                self.emit_state(e);
            }
        }
    }

    /// The running agent's connection and its generation (which changes with
    /// every start, so a conversation can tell a new process from the old).
    pub fn connection(&self, name: &str) -> Option<(Connection, u64)> {
        let mut t = lock(&self.shared.table);
        let e = t.find(name)?;
        if e.stopping {
            return None;
        }
        e.running.as_ref().map(|r| (r.conn.clone(), e.generation))
    }

    /// What the agent said it can do, at its last `initialize`.
    /// Agents run on the host (Parley is in a Flatpak): their programs are
    /// found there, not on this side's PATH.
    pub fn spawns_on_host(&self) -> bool {
        !self.shared.spawn_prefix.is_empty()
    }

    pub fn capabilities(&self, name: &str) -> Option<schema::AgentCapabilities> {
        lock(&self.shared.table).find(name)?.capabilities.clone()
    }

    /// The agent's directory on this machine: `None` for an agent on
    /// another host (whose files Parley does not list or snapshot here).
    pub fn working_dir(&self, name: &str) -> Option<PathBuf> {
        self.definition(name)
            .filter(|d| !d.is_remote())
            .map(|d| d.working_dir())
    }

    /// Whether a command the agent runs in one of its terminals still runs.
    pub fn terminal_running(&self, agent: &str) -> bool {
        self.shared.terminals.running(agent)
    }

    /// The process group of a running agent (for tests and diagnostics).
    pub fn process_group(&self, name: &str) -> Option<i32> {
        let mut t = lock(&self.shared.table);
        t.find(name).and_then(|e| e.running.as_ref().map(|r| r.pgid))
    }
}

impl AgentService {}
