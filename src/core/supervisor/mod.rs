//! The supervisor owns every agent process and its ACP connection. It never
//! touches GTK; everything that happens goes out as `agent:state` and
//! `agent:log` events.
//!
//! State lives in one table behind a mutex that is never held across an
//! await; long work (spawning, the handshake, the stop sequence) runs outside
//! it and re-checks the table by generation when it is done.

pub mod guardian;
pub mod launch;
pub mod lifecycle;
pub mod process;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::io::BufReader;
use tokio::sync::watch;

use crate::core::acp::{self, calls, fs::FsScope, Connection, Handler, Responder, RpcError};
use crate::core::config::model::{AgentDef, Limits};
use crate::core::events::{self, AgentLog, AgentStateChanged, Event, EventSender};
use lifecycle::{transition, AgentState, Trigger};
use process::StopTimings;

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
}

/// Beyond its grace period, how long the guardian gets to finish ending what
/// an agent left before Parley closes its lifeline.
const GUARDIAN_SLACK: Duration = Duration::from_secs(2);

struct Running {
    conn: Connection,
    pgid: i32,
    exit: watch::Receiver<Option<ExitStatus>>,
    guardian: process::Guardian,
}

struct Entry {
    def: AgentDef,
    /// A changed definition waiting for the next start (`outdated`).
    next_def: Option<AgentDef>,
    state: AgentState,
    error: Option<String>,
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
}

impl Entry {
    fn new(def: AgentDef) -> Self {
        Entry {
            def,
            next_def: None,
            state: AgentState::Stopped,
            error: None,
            stop_pending: false,
            stopping: false,
            removed: false,
            users: 0,
            last_used: Instant::now(),
            logs: Arc::new(Mutex::new(VecDeque::new())),
            running: None,
            generation: 0,
        }
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
        }
    }
}

struct Table {
    agents: Vec<Entry>,
    limits: Limits,
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
}

#[derive(Clone)]
pub struct Supervisor {
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unknown(name: &str) -> String {
    crate::i18n::gettext_f("unknown agent: {name}", &[("name", name)])
}

enum StartStep {
    Done(Result<(), String>),
    Wait { was_starting: bool },
    Evict(String),
    Spawn(Box<AgentDef>, u64, Arc<Mutex<VecDeque<String>>>),
}

impl Supervisor {
    /// Must be called inside a tokio runtime: it starts the idle check.
    pub fn new(events: EventSender, timings: Timings, spawn_prefix: Vec<String>) -> Self {
        let shared = Arc::new(Shared {
            table: Mutex::new(Table {
                agents: Vec::new(),
                limits: Limits::default(),
            }),
            changed: watch::channel(0).0,
            events,
            timings,
            client: RwLock::new(None),
            spawn_prefix,
        });
        tokio::spawn(idle_check(Arc::downgrade(&shared)));
        Supervisor { shared }
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
        let t = lock(&self.shared.table);
        t.agents.iter().filter(|e| !e.removed).map(Entry::info).collect()
    }

    pub fn state(&self, name: &str) -> Option<AgentState> {
        lock(&self.shared.table).find(name).map(|e| e.state)
    }

    pub fn definition(&self, name: &str) -> Option<AgentDef> {
        lock(&self.shared.table)
            .find(name)
            .filter(|e| !e.removed)
            .map(|e| e.def.clone())
    }

    /// The last 200 stderr lines.
    pub fn logs(&self, name: &str) -> Result<Vec<String>, String> {
        let mut t = lock(&self.shared.table);
        let e = t.find(name).ok_or_else(|| unknown(name))?;
        let logs = lock(&e.logs);
        Ok(logs.iter().cloned().collect())
    }

    /// Starts the agent if it is not running; resolves once it is `ready`
    /// (or `busy`), or with the reason it could not start.
    pub async fn start(&self, name: &str) -> Result<(), String> {
        let mut waited_on_start = false;
        loop {
            let mut changed = self.shared.changed.subscribe();
            match self.start_step(name, waited_on_start) {
                StartStep::Done(r) => return r,
                StartStep::Wait { was_starting } => {
                    waited_on_start |= was_starting;
                    if changed.changed().await.is_err() {
                        return Err("the supervisor has stopped".into());
                    }
                }
                StartStep::Evict(other) => {
                    self.stop_with(&other, Trigger::LeastRecentlyUsed).await?;
                }
                StartStep::Spawn(def, generation, logs) => {
                    return self.run_start(*def, generation, logs).await;
                }
            }
        }
    }

    fn start_step(&self, name: &str, waited_on_start: bool) -> StartStep {
        let mut t = lock(&self.shared.table);
        let max = t.limits.max_running_agents.max(1) as usize;
        let Some(e) = t.find(name).filter(|e| !e.removed) else {
            return StartStep::Done(Err(unknown(name)));
        };
        match e.state {
            AgentState::Ready | AgentState::Busy if !e.stopping => return StartStep::Done(Ok(())),
            AgentState::Ready | AgentState::Busy => return StartStep::Wait { was_starting: false },
            AgentState::Starting => return StartStep::Wait { was_starting: true },
            AgentState::Error if waited_on_start => {
                return StartStep::Done(Err(e.error.clone().unwrap_or_default()))
            }
            AgentState::Stopped if waited_on_start && e.stop_pending => {
                return StartStep::Done(Err(crate::i18n::gettext("stopped while starting")))
            }
            AgentState::Stopped | AgentState::Error => {}
        }
        let running: Vec<&Entry> = t.agents.iter().filter(|a| a.state.is_running()).collect();
        if running.len() >= max {
            let lru = running
                .iter()
                .filter(|a| a.state == AgentState::Ready && !a.stopping)
                .min_by_key(|a| a.last_used);
            if let Some(lru) = lru {
                return StartStep::Evict(lru.def.name.clone());
            }
            if running.iter().any(|a| a.stopping) {
                // A slot is being freed: wait for it.
                return StartStep::Wait { was_starting: false };
            }
            let busy: Vec<&str> = running.iter().map(|a| a.def.name.as_str()).collect();
            return StartStep::Done(Err(format!(
                "too many agents running: {} agent(s) busy ({}), the limit is {}",
                busy.len(),
                busy.join(", "),
                max
            )));
        }
        let Some(e) = t.find(name) else {
            return StartStep::Done(Err(unknown(name)));
        };
        let Some(next) = transition(e.state, Trigger::StartRequested) else {
            return StartStep::Done(Ok(()));
        };
        e.settle_definition();
        e.state = next;
        e.error = None;
        e.stop_pending = false;
        e.generation += 1;
        let step = StartStep::Spawn(Box::new(e.def.clone()), e.generation, e.logs.clone());
        let snapshot = Entry::info(e);
        drop(t);
        self.emit_info(&snapshot);
        step
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
            }),
        );
        self.shared.changed.send_modify(|n| *n += 1);
    }

    async fn run_start(
        &self,
        def: AgentDef,
        generation: u64,
        logs: Arc<Mutex<VecDeque<String>>>,
    ) -> Result<(), String> {
        let name = def.name.clone();
        let outcome = self.spawn_and_handshake(&def, generation, logs.clone()).await;
        // Decide under the lock; the stop sequence runs after it is released.
        let (result, to_stop) = self.settle_start(&name, generation, outcome);
        if let Some((running, trigger)) = to_stop {
            match trigger {
                Some(trigger) => self.finish_stop(&name, generation, running, trigger).await,
                None => {
                    // The failed process goes with the full stop sequence.
                    let timings = self.shared.timings.stop;
                    tokio::spawn(async move {
                        running.conn.close_output();
                        process::stop_group(running.pgid, running.exit, timings).await;
                        running
                            .guardian
                            .release(timings.term_grace + GUARDIAN_SLACK)
                            .await;
                    });
                }
            }
        }
        result
    }

    /// The end of a start: the new state, and a process to stop (with the
    /// trigger that will settle the state, or `None` for a failed start).
    #[allow(clippy::type_complexity)]
    fn settle_start(
        &self,
        name: &str,
        generation: u64,
        outcome: Result<Running, (String, Option<Running>)>,
    ) -> (Result<(), String>, Option<(Running, Option<Trigger>)>) {
        let mut t = lock(&self.shared.table);
        let Some(e) = t.find_gen(name, generation) else {
            let stop = match outcome {
                Ok(r) | Err((_, Some(r))) => Some((r, None)),
                Err((_, None)) => None,
            };
            return (Err(unknown(name)), stop);
        };
        match outcome {
            Ok(running) if !e.stop_pending => {
                e.state = transition(e.state, Trigger::HandshakeSucceeded).unwrap_or(AgentState::Ready);
                e.running = Some(running);
                e.last_used = Instant::now();
                self.emit_state(e);
                (Ok(()), None)
            }
            Ok(running) => {
                // Stop requested while starting: stop now, then `stopped`.
                e.stopping = true;
                (
                    Err(crate::i18n::gettext("stopped while starting")),
                    Some((running, Some(Trigger::StartEndedAfterStop))),
                )
            }
            Err((message, running)) => {
                let next = if e.stop_pending {
                    Trigger::StartEndedAfterStop
                } else {
                    Trigger::HandshakeFailed
                };
                e.state = transition(e.state, next).unwrap_or(AgentState::Error);
                e.error = (e.state == AgentState::Error).then(|| message.clone());
                e.settle_definition();
                self.emit_state(e);
                (Err(message), running.map(|r| (r, None)))
            }
        }
    }

    async fn spawn_and_handshake(
        &self,
        def: &AgentDef,
        generation: u64,
        logs: Arc<Mutex<VecDeque<String>>>,
    ) -> Result<Running, (String, Option<Running>)> {
        let cwd = def.working_dir();
        if !cwd.is_dir() {
            return Err((
                crate::i18n::gettext_f(
                    "the working directory {cwd} does not exist",
                    &[("cwd", &cwd.display().to_string())],
                ),
                None,
            ));
        }
        // The bundled agent runs where Parley runs (inside the sandbox too);
        // the user's own agents on the host when Parley is in a Flatpak.
        let (program, args, prefix) = if let Some((program, mut lead)) = launch::bundled(&def.command) {
            lead.extend(def.args.iter().cloned());
            (program, lead, &[][..])
        } else if self.shared.spawn_prefix.is_empty() {
            let login = launch::login_shell_path(Duration::from_secs(3)).await;
            let dirs = launch::search_dirs(def.env.get("PATH").map(String::as_str), login);
            let program = process::resolve_program(&def.command, &cwd, &dirs)
                .ok_or_else(|| (launch::not_found(&def.command, &dirs), None))?;
            (program, def.args.clone(), &[][..])
        } else {
            // On the host, the host's shell finds it (with its login PATH).
            (
                PathBuf::from(&def.command),
                def.args.clone(),
                &self.shared.spawn_prefix[..],
            )
        };
        let spawned = process::spawn(&process::SpawnSpec {
            program: &program,
            args: &args,
            env: &def.env,
            cwd: &cwd,
            prefix,
            grace: self.shared.timings.stop.term_grace,
        })
        .map_err(|e| {
            (
                crate::i18n::gettext_f(
                    "could not start {command}: {error}",
                    &[("command", &def.command), ("error", &e.to_string())],
                ),
                None,
            )
        })?;
        let process::Spawned {
            mut child,
            pgid,
            lifeline,
            status,
        } = spawned;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            process::signal_group(pgid, nix::sys::signal::Signal::SIGKILL);
            return Err(("the agent's pipes could not be opened".into(), None));
        };
        let name = def.name.clone();
        let stderr_task = tokio::spawn(read_stderr(
            stderr,
            name.clone(),
            logs.clone(),
            self.shared.events.clone(),
        ));
        // The guardian exits after the agent, once it has ended what the
        // agent left behind; the agent's own status comes through its pipe.
        let (gone_tx, gone_rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await.ok();
            gone_tx.send_replace(Some(status));
        });
        let mut guardian_gone = gone_rx.clone();
        let guardian = process::Guardian::new(lifeline, gone_rx);
        let (exit_tx, exit_rx) = watch::channel(None);
        let this = self.clone();
        let watch_name = name.clone();
        tokio::spawn(async move {
            let status = match process::agent_exit(status).await {
                Some(status) => Some(status),
                // The guardian ended without a word: its own status.
                None => guardian_gone
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|s| s.flatten()),
            };
            // Let stderr drain so the error carries the agent's last words.
            let _ = tokio::time::timeout(Duration::from_millis(500), stderr_task).await;
            if let Some(status) = status {
                exit_tx.send_replace(Some(status));
                this.on_exit(&watch_name, generation, status).await;
            }
        });
        let handler = Arc::new(AgentHandler {
            agent: name.clone(),
            generation,
            supervisor: Arc::downgrade(&self.shared),
            fs: FsScope::new(&cwd),
            logs: logs.clone(),
        });
        let conn = Connection::start(BufReader::new(stdout), stdin, handler, acp::MAX_LINE_BYTES);
        let running = Running {
            conn: conn.clone(),
            pgid,
            exit: exit_rx.clone(),
            guardian,
        };
        let timeout = self.shared.timings.handshake_timeout;
        let reason = match tokio::time::timeout(timeout, calls::initialize(&conn)).await {
            Ok(Ok(_)) => return Ok(running),
            Ok(Err(e)) => e.to_string(),
            Err(_) => crate::i18n::gettext_f(
                "the agent did not answer initialize within {seconds} s",
                &[("seconds", &timeout.as_secs_f64().to_string())],
            ),
        };
        // If the process is ending, give its stderr a moment to arrive.
        let mut exit = exit_rx;
        let _ = tokio::time::timeout(Duration::from_millis(700), exit.wait_for(Option::is_some)).await;
        Err((with_last_lines(&reason, &logs), Some(running)))
    }

    async fn on_exit(&self, name: &str, generation: u64, status: ExitStatus) {
        let (pgid, guardian) = {
            let mut t = lock(&self.shared.table);
            let Some(e) = t.find_gen(name, generation) else {
                return;
            };
            if e.stopping || !matches!(e.state, AgentState::Ready | AgentState::Busy) {
                return; // a stop or a failed start is dealing with it
            }
            let Some(next) = transition(e.state, Trigger::ProcessExited) else {
                return;
            };
            let reason = crate::i18n::gettext_f(
                "the agent exited on its own ({status})",
                &[("status", &status.to_string())],
            );
            e.state = next;
            e.error = Some(with_last_lines(&reason, &e.logs));
            e.users = 0;
            e.settle_definition();
            let running = e.running.take();
            self.emit_state(e);
            match running {
                Some(r) => (r.pgid, Some(r.guardian)),
                None => (0, None),
            }
        };
        if let Some(client) = self.client() {
            client.disconnected(name, "the agent exited");
        }
        let grace = self.shared.timings.stop.term_grace;
        process::reap_leftovers(pgid, grace).await;
        if let Some(guardian) = guardian {
            guardian.release(grace + GUARDIAN_SLACK).await;
        }
    }

    /// The connection broke while the process lives on (a line over the
    /// cap): the agent is in error and its process is stopped.
    fn on_connection_lost(&self, name: &str, generation: u64, reason: String) {
        let running = {
            let mut t = lock(&self.shared.table);
            let Some(e) = t.find_gen(name, generation) else {
                return;
            };
            if e.stopping || !matches!(e.state, AgentState::Ready | AgentState::Busy) {
                return;
            }
            e.state = AgentState::Error;
            e.error = Some(reason.clone());
            e.users = 0;
            e.stopping = true;
            let running = e.running.take();
            self.emit_state(e);
            running
        };
        if let Some(client) = self.client() {
            client.disconnected(name, &reason);
        }
        if let Some(running) = running {
            let this = self.clone();
            let name = name.to_owned();
            tokio::spawn(async move {
                running.conn.close_output();
                let timings = this.shared.timings.stop;
                process::stop_group(running.pgid, running.exit, timings).await;
                running
                    .guardian
                    .release(timings.term_grace + GUARDIAN_SLACK)
                    .await;
                let mut t = lock(&this.shared.table);
                if let Some(e) = t.find_gen(&name, generation) {
                    e.stopping = false;
                    e.settle_definition();
                }
            });
        }
    }

    pub async fn stop(&self, name: &str) -> Result<(), String> {
        self.stop_with(name, Trigger::StopRequested).await
    }

    async fn stop_with(&self, name: &str, trigger: Trigger) -> Result<(), String> {
        let mut changed = self.shared.changed.subscribe();
        let (generation, running) = {
            let mut t = lock(&self.shared.table);
            let Some(e) = t.find(name) else {
                return Err(unknown(name));
            };
            match e.state {
                AgentState::Stopped | AgentState::Error => return Ok(()),
                AgentState::Starting => {
                    if trigger == Trigger::StopRequested {
                        e.stop_pending = true;
                    } else {
                        return Ok(());
                    }
                    (e.generation, None)
                }
                AgentState::Ready | AgentState::Busy => {
                    if transition(e.state, trigger).is_none() {
                        return Ok(()); // e.g. the idle check on a busy agent
                    }
                    if e.stopping {
                        (e.generation, None)
                    } else {
                        e.stopping = true;
                        (e.generation, e.running.take())
                    }
                }
            }
        };
        match running {
            Some(running) => {
                self.finish_stop(name, generation, running, trigger).await;
                Ok(())
            }
            None => {
                // Another task is starting or stopping it: wait for the end.
                loop {
                    let settled = {
                        let mut t = lock(&self.shared.table);
                        match t.find(name) {
                            None => true,
                            Some(e) => !e.state.is_running() && !e.stopping,
                        }
                    };
                    if settled {
                        return Ok(());
                    }
                    if changed.changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn finish_stop(&self, name: &str, generation: u64, running: Running, trigger: Trigger) {
        running.conn.close_output();
        let timings = self.shared.timings.stop;
        process::stop_group(running.pgid, running.exit, timings).await;
        running
            .guardian
            .release(timings.term_grace + GUARDIAN_SLACK)
            .await;
        if let Some(client) = self.client() {
            client.disconnected(name, "stopped");
        }
        let mut t = lock(&self.shared.table);
        let Some(e) = t.find_gen(name, generation) else {
            return;
        };
        e.state = transition(e.state, trigger).unwrap_or(AgentState::Stopped);
        e.stopping = false;
        e.users = 0;
        e.error = None;
        e.settle_definition();
        if e.removed {
            t.agents.retain(|a| !(a.def.name == name && a.removed));
            self.shared.changed.send_modify(|n| *n += 1);
            events::emit(
                &self.shared.events,
                Event::AgentState(AgentStateChanged {
                    agent: name.to_owned(),
                    state: AgentState::Stopped,
                    error: None,
                    outdated: false,
                }),
            );
        } else {
            self.emit_state(e);
        }
    }

    /// Stop, then start with the current definition (clears `outdated`).
    pub async fn restart(&self, name: &str) -> Result<(), String> {
        if self.definition(name).is_none() {
            return Err(unknown(name));
        }
        self.stop(name).await?;
        self.start(name).await
    }

    /// A conversation starts using the agent: `ready` → `busy`.
    pub fn acquire(&self, name: &str) -> Result<(), String> {
        let mut t = lock(&self.shared.table);
        let e = t.find(name).ok_or_else(|| unknown(name))?;
        let next = transition(e.state, Trigger::Used)
            .ok_or_else(|| crate::i18n::gettext_f("the agent {name} is not running", &[("name", name)]))?;
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

    pub fn working_dir(&self, name: &str) -> Option<PathBuf> {
        self.definition(name).map(|d| d.working_dir())
    }

    /// Stops every agent in parallel with the spec's sequence and waits.
    pub async fn shutdown(&self) {
        let names: Vec<String> = {
            let t = lock(&self.shared.table);
            t.agents
                .iter()
                .filter(|e| e.state.is_running() || e.stopping)
                .map(|e| e.def.name.clone())
                .collect()
        };
        let mut set = tokio::task::JoinSet::new();
        for name in names {
            let this = self.clone();
            set.spawn(async move { this.stop(&name).await });
        }
        while set.join_next().await.is_some() {}
    }

    /// The process group of a running agent (for tests and diagnostics).
    pub fn process_group(&self, name: &str) -> Option<i32> {
        let mut t = lock(&self.shared.table);
        t.find(name).and_then(|e| e.running.as_ref().map(|r| r.pgid))
    }

    fn push_log(&self, name: &str, logs: &Mutex<VecDeque<String>>, line: String) {
        push_log(name, logs, &self.shared.events, line);
    }
}

fn push_log(name: &str, logs: &Mutex<VecDeque<String>>, events_tx: &EventSender, line: String) {
    {
        let mut l = lock(logs);
        if l.len() == LOG_LINES {
            l.pop_front();
        }
        l.push_back(line.clone());
    }
    events::emit(
        events_tx,
        Event::AgentLog(AgentLog {
            agent: name.to_owned(),
            line,
        }),
    );
}

fn with_last_lines(reason: &str, logs: &Mutex<VecDeque<String>>) -> String {
    let l = lock(logs);
    let skip = l.len().saturating_sub(ERROR_LOG_LINES);
    let tail: Vec<&str> = l.iter().skip(skip).map(String::as_str).collect();
    if tail.is_empty() {
        reason.to_owned()
    } else {
        format!("{reason}\n{}", tail.join("\n"))
    }
}

/// Each stderr line is kept (the last 200) and sent as `agent:log`.
async fn read_stderr(
    stderr: tokio::process::ChildStderr,
    name: String,
    logs: Arc<Mutex<VecDeque<String>>>,
    events_tx: EventSender,
) {
    // A log line keeps its first 4 KiB; the rest is skipped as it arrives,
    // so a stderr line without end (1 GB, say) costs no memory.
    const MAX_SHOWN: usize = 4096;
    let mut reader = BufReader::new(stderr);
    while let Ok(Some((mut buf, cut))) = acp::lines::next_line_kept(&mut reader, MAX_SHOWN).await {
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        if cut {
            // Not a character cut in half: drop an incomplete last one.
            if let Err(e) = std::str::from_utf8(&buf) {
                if e.error_len().is_none() {
                    buf.truncate(e.valid_up_to());
                }
            }
        }
        let mut line = String::from_utf8_lossy(&buf).into_owned();
        if cut {
            line.push('…');
        }
        push_log(&name, &logs, &events_tx, line);
    }
}

async fn idle_check(shared: Weak<Shared>) {
    let period = match shared.upgrade() {
        Some(s) => s.timings.idle_check,
        None => return,
    };
    let mut ticker = tokio::time::interval(period);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        let idle: Vec<String> = {
            let t = lock(&shared.table);
            match t.limits.idle_after() {
                None => Vec::new(),
                Some(limit) => t
                    .agents
                    .iter()
                    .filter(|e| e.state == AgentState::Ready && !e.stopping)
                    .filter(|e| e.last_used.elapsed() >= limit)
                    .map(|e| e.def.name.clone())
                    .collect(),
            }
        };
        let this = Supervisor { shared };
        for name in idle {
            let s = this.clone();
            tokio::spawn(async move {
                let _ = s.stop_with(&name, Trigger::IdleTimeout).await;
            });
        }
    }
}

/// Takes what a running agent sends: `fs/*` is answered here (confined to
/// its cwd), session traffic goes to the conversations.
struct AgentHandler {
    agent: String,
    generation: u64,
    supervisor: Weak<Shared>,
    fs: FsScope,
    logs: Arc<Mutex<VecDeque<String>>>,
}

impl AgentHandler {
    fn supervisor(&self) -> Option<Supervisor> {
        self.supervisor.upgrade().map(|shared| Supervisor { shared })
    }

    /// Answers `fs/*` off the connection's reader task: the file work runs
    /// on tokio's blocking pool, within `acp::fs::REQUEST_TIMEOUT`, and the
    /// answer goes out when it is ready. A FIFO or a hung mount thus costs
    /// the agent that one request, never its connection or a runtime worker.
    /// (Answers may overtake one another; JSON-RPC matches them by id.)
    fn fs_request(&self, method: &str, params: &RawValue, responder: Responder) {
        let request = match acp::fs::FsRequest::parse(method, params.get()) {
            Ok(r) => r,
            Err(e) => {
                self.log(format!("parley: refused {method}: {e}"));
                return responder.respond(Err(RpcError::remote(
                    acp::connection::INVALID_PARAMS,
                    e.to_string(),
                )));
            }
        };
        // An agent that does not read its answers gets no more file work.
        if responder.backlogged() {
            let e = responder.refuse_backlogged();
            self.log(format!("parley: {method}: {e}"));
            return responder.respond(Err(e));
        }
        // The reader task runs on the supervisor's runtime, so there is one.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.log(format!("parley: refused {method}: no runtime to read files on"));
            return responder.respond(Err(RpcError::remote(
                acp::connection::INTERNAL_ERROR,
                "no runtime to read files on",
            )));
        };
        let fs = self.fs.clone();
        let (agent, supervisor, logs) = (self.agent.clone(), self.supervisor.clone(), self.logs.clone());
        let method = method.to_owned();
        runtime.spawn(async move {
            let result = fs.serve(request, acp::fs::REQUEST_TIMEOUT).await;
            if let Err(e) = &result {
                // As `Handler::log` does; `self` does not live this long.
                let line = format!("parley: refused {method}: {e}");
                tracing::info!(agent, "{line}");
                if let Some(shared) = supervisor.upgrade() {
                    Supervisor { shared }.push_log(&agent, &logs, line);
                }
            }
            responder.respond(
                result.map_err(|e| RpcError::remote(acp::connection::INTERNAL_ERROR, e.to_string())),
            );
        });
    }
}

impl Handler for AgentHandler {
    fn notification(&self, method: &str, params: &RawValue) {
        match self.supervisor().and_then(|s| s.client()) {
            Some(client) => client.notification(&self.agent, method, params),
            None => tracing::debug!(agent = self.agent, method, "notification with no client"),
        }
    }

    fn session_update(&self, update: agent_client_protocol_schema::v1::SessionNotification) {
        if let Some(client) = self.supervisor().and_then(|s| s.client()) {
            client.session_update(&self.agent, update);
        }
    }

    fn request(&self, method: &str, params: &RawValue, responder: Responder) {
        match method {
            "fs/read_text_file" | "fs/write_text_file" => self.fs_request(method, params, responder),
            "session/request_permission" => match self.supervisor().and_then(|s| s.client()) {
                Some(client) => client.request(&self.agent, method, params, responder),
                None => responder.respond(Err(RpcError::remote(
                    acp::connection::INTERNAL_ERROR,
                    "no conversation to ask",
                ))),
            },
            other => {
                self.log(format!("parley: answered an unknown method {other} with -32601"));
                responder.respond(Err(RpcError::remote(
                    acp::connection::METHOD_NOT_FOUND,
                    format!("method not found: {other}"),
                )));
            }
        }
    }

    fn log(&self, line: String) {
        tracing::info!(agent = self.agent, "{line}");
        if let Some(s) = self.supervisor() {
            s.push_log(&self.agent, &self.logs, line);
        }
    }

    fn closed(&self, reason: Option<String>) {
        let Some(s) = self.supervisor() else { return };
        match reason {
            Some(reason) => {
                s.push_log(&self.agent, &self.logs, format!("parley: {reason}"));
                s.on_connection_lost(&self.agent, self.generation, reason);
            }
            // A clean end of output is usually the process exiting, which
            // `on_exit` reports with its status and last words. One that is
            // still running a moment later has dropped the connection: that
            // is lost too, and its group is stopped (on_connection_lost
            // ignores an agent that exited or is being stopped by then).
            None => {
                let (agent, generation) = (self.agent.clone(), self.generation);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    let reason = crate::i18n::gettext("the agent closed its output but kept running");
                    s.on_connection_lost(&agent, generation, reason);
                });
            }
        }
    }
}

impl Supervisor {
    /// After a connection ended: waits (up to `limit`) until the supervisor
    /// has settled what happened to that process, and returns the agent's
    /// error, if it ended in one. The exit status arrives a moment after the
    /// pipes close.
    pub async fn settled_error(&self, name: &str, generation: u64, limit: Duration) -> Option<String> {
        let mut changed = self.shared.changed.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            {
                let mut t = lock(&self.shared.table);
                match t.find_gen(name, generation) {
                    Some(e) if e.state == AgentState::Error => return e.error.clone(),
                    Some(e) if e.running.is_some() && !e.stopping => {}
                    _ => return None,
                }
            }
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                return None;
            }
        }
    }

    /// Adds a line of Parley's own to an agent's log (`agent:log`).
    pub fn log(&self, name: &str, line: String) {
        let logs = {
            let mut t = lock(&self.shared.table);
            match t.find(name) {
                Some(e) => e.logs.clone(),
                None => return,
            }
        };
        tracing::info!(agent = name, "{line}");
        self.push_log(name, &logs, line);
    }
}
