//! Starting an agent: the limit, spawning beneath its guardian, the
//! handshake, and settling the outcome against stops that came meanwhile.

use super::handler::AgentHandler;
use super::logs::{read_stderr, with_last_lines};
use super::*;
use crate::core::launch;

impl AgentService {
    /// Starts the agent if it is not running; resolves once it is `ready`
    /// (or `busy`), or with the reason it could not start.
    pub async fn start(&self, name: &str) -> Result<(), StartError> {
        let mut waited_on_start = false;
        loop {
            let mut changed = self.shared.changed.subscribe();
            match self.start_step(name, waited_on_start) {
                StartStep::Done(r) => return r,
                StartStep::Wait { was_starting } => {
                    waited_on_start |= was_starting;
                    if changed.changed().await.is_err() {
                        return Err(StartError::plain("the supervisor has stopped"));
                    }
                }
                StartStep::Evict(other) => {
                    self.stop_with(&other, Trigger::LeastRecentlyUsed)
                        .await
                        .map_err(|e| StartError::plain(e.to_string()))?;
                }
                StartStep::Spawn(def, generation, logs) => {
                    return self.run_start(*def, generation, logs).await;
                }
            }
        }
    }

    pub(super) fn start_step(&self, name: &str, waited_on_start: bool) -> StartStep {
        let mut t = lock(&self.shared.table);
        let max = t.limits.max_running_agents.max(1) as usize;
        let Some(e) = t.find(name).filter(|e| !e.removed) else {
            return StartStep::Done(Err(StartError::plain(unknown(name))));
        };
        match e.state {
            AgentState::Ready | AgentState::Busy if !e.stopping => return StartStep::Done(Ok(())),
            AgentState::Ready | AgentState::Busy => return StartStep::Wait { was_starting: false },
            AgentState::Starting => return StartStep::Wait { was_starting: true },
            AgentState::Error if waited_on_start => {
                let error = e
                    .start_error
                    .clone()
                    .unwrap_or_else(|| StartError::plain(e.error.clone().unwrap_or_default()));
                return StartStep::Done(Err(error));
            }
            AgentState::Stopped if waited_on_start && e.stop_pending => {
                return StartStep::Done(Err(StartError::plain(crate::i18n::gettext(
                    "stopped while starting",
                ))))
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
            return StartStep::Done(Err(StartError::plain(format!(
                "too many agents running: {} agent(s) busy ({}), the limit is {}",
                busy.len(),
                busy.join(", "),
                max
            ))));
        }
        let Some(e) = t.find(name) else {
            return StartStep::Done(Err(StartError::plain(unknown(name))));
        };
        let Some(next) = transition(e.state, Trigger::StartRequested) else {
            return StartStep::Done(Ok(()));
        };
        e.settle_definition();
        e.state = next;
        e.error = None;
        e.stop_pending = false;
        e.generation += 1;
        let step = StartStep::Spawn(Box::new(e.effective()), e.generation, e.logs.clone());
        let snapshot = Entry::info(e);
        drop(t);
        self.emit_info(&snapshot);
        step
    }

    pub(super) async fn run_start(
        &self,
        def: AgentDef,
        generation: u64,
        logs: Arc<Mutex<VecDeque<String>>>,
    ) -> Result<(), StartError> {
        let name = def.name.clone();
        let outcome = self.spawn_and_handshake(&def, generation, logs.clone()).await;
        // Decide under the lock; the stop sequence runs after it is released.
        let (result, to_stop) = self.settle_start(&name, generation, outcome);
        // Asked on the side: an agent slow to answer it delays nothing.
        if result.is_ok() {
            let this = self.clone();
            let agent = name.clone();
            tokio::spawn(async move { this.ask_auth_status(&agent).await });
        }
        if let Some((running, trigger)) = to_stop {
            match trigger {
                Some(trigger) => self.finish_stop(&name, generation, running, trigger).await,
                None => {
                    // The failed process goes with the full stop sequence.
                    let timings = self.shared.timings.stop;
                    tokio::spawn(running.end(timings));
                }
            }
        }
        result
    }

    /// The end of a start: the new state, and a process to stop (with the
    /// trigger that will settle the state, or `None` for a failed start).
    #[allow(clippy::type_complexity)]
    pub(super) fn settle_start(
        &self,
        name: &str,
        generation: u64,
        outcome: Result<Running, (StartError, Option<Running>)>,
    ) -> (Result<(), StartError>, Option<(Running, Option<Trigger>)>) {
        let mut t = lock(&self.shared.table);
        let Some(e) = t.find_gen(name, generation) else {
            let stop = match outcome {
                Ok(r) | Err((_, Some(r))) => Some((r, None)),
                Err((_, None)) => None,
            };
            return (Err(StartError::plain(unknown(name))), stop);
        };
        match outcome {
            Ok(mut running) if !e.stop_pending => {
                e.state = lifecycle::expected(e.state, Trigger::HandshakeSucceeded, AgentState::Ready);
                let methods = std::mem::take(&mut running.auth_methods);
                if Self::learn_auth(e, methods, running.can_logout) {
                    self.emit_auth(e);
                }
                e.capabilities = Some(running.capabilities.clone());
                e.running = Some(running);
                e.last_used = Instant::now();
                self.emit_state(e);
                (Ok(()), None)
            }
            Ok(running) => {
                // Stop requested while starting: stop now, then `stopped`.
                e.stopping = true;
                (
                    Err(StartError::plain(crate::i18n::gettext("stopped while starting"))),
                    Some((running, Some(Trigger::StartEndedAfterStop))),
                )
            }
            Err((message, running)) => {
                let next = if e.stop_pending {
                    Trigger::StartEndedAfterStop
                } else {
                    Trigger::HandshakeFailed
                };
                e.state = lifecycle::expected(e.state, next, AgentState::Error);
                e.error = (e.state == AgentState::Error).then(|| message.to_string());
                e.start_error = (e.state == AgentState::Error).then(|| message.clone());
                e.settle_definition();
                self.emit_state(e);
                (Err(message), running.map(|r| (r, None)))
            }
        }
    }

    pub(super) async fn spawn_and_handshake(
        &self,
        def: &AgentDef,
        generation: u64,
        logs: Arc<Mutex<VecDeque<String>>>,
    ) -> Result<Running, (StartError, Option<Running>)> {
        let cwd = def
            .checked_working_dir()
            .map_err(|why| (StartError::plain(why), None))?;
        let env = self.env_with_saved_keys(def).await;
        let link = match def.remote_host() {
            None => None,
            Some(Err(why)) => return Err((StartError::plain(why), None)),
            Some(Ok(host)) => Some(self.shared.hosts.link(&host)),
        };
        let spawned = match &link {
            // On the far side the helper finds the command and starts it
            // with the environment it reads first on stdin (below).
            Some(link) => {
                let helper = link
                    .checked(self.shared.timings.handshake_timeout)
                    .await
                    .map_err(|e| (e.into(), None))?;
                let (program, args) = link.far_command(
                    false,
                    &[helper, crate::core::remote::helper::FLAG.into(), "agent".into()],
                );
                process::spawn(&process::SpawnSpec {
                    program: &program,
                    args: &args,
                    env: &Default::default(),
                    cwd: std::path::Path::new("/"),
                    prefix: &[],
                    grace: self.shared.timings.stop.term_grace,
                    terminal: None,
                })
            }
            None => {
                let (program, args, prefix) = self
                    .launch_target(&def.command, &def.args, &def.env, &cwd)
                    .await
                    .map_err(|e| (e, None))?;
                process::spawn(&process::SpawnSpec {
                    program: &program,
                    args: &args,
                    env: &env,
                    cwd: &cwd,
                    prefix,
                    grace: self.shared.timings.stop.term_grace,
                    terminal: None,
                })
            }
        }
        .map_err(|e| {
            (
                StartError::plain(crate::i18n::gettext_f(
                    "could not start {command}: {error}",
                    &[("command", &def.command), ("error", &e.to_string())],
                )),
                None,
            )
        })?;
        let process::Spawned {
            mut child,
            pgid,
            lifeline,
            status,
        } = spawned;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            process::signal_group(pgid, nix::sys::signal::Signal::SIGKILL);
            return Err((StartError::plain("the agent's pipes could not be opened"), None));
        };
        if link.is_some() {
            // The helper's first line: what to start, with the saved keys
            // (never on a command line, where any user could read them).
            let launch = crate::core::remote::helper::Launch {
                cwd: def.cwd.trim().to_owned(),
                program: def.command.clone(),
                args: def.args.clone(),
                env: env.clone(),
                grace_ms: u64::try_from(self.shared.timings.stop.term_grace.as_millis()).unwrap_or(3000),
            };
            let mut line = serde_json::to_vec(&launch).unwrap_or_default();
            line.push(b'\n');
            if let Err(e) = tokio::io::AsyncWriteExt::write_all(&mut stdin, &line).await {
                process::signal_group(pgid, nix::sys::signal::Signal::SIGKILL);
                return Err((StartError::plain(format!("ssh: {e}")), None));
            }
        }
        process::widen_pipe(&stdout);
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
        let cap = lock(&self.shared.table).limits.max_terminals_per_agent.max(1) as usize;
        let terminals = self.shared.terminals.open(&name, cap, self.shared.timings.stop);
        let handler = Arc::new(AgentHandler {
            agent: name.clone(),
            generation,
            supervisor: Arc::downgrade(&self.shared),
            fs: if link.is_some() {
                // Never opened here: the far side serves the files.
                FsScope::new(std::path::Path::new("/nonexistent/parley-remote"))
            } else {
                FsScope::new(&cwd)
            },
            remote: link.clone().map(|l| super::hosts::RemoteFs::new(l, cwd.clone())),
            logs: logs.clone(),
            terminals: terminals.clone(),
        });
        let conn = Connection::start(
            BufReader::with_capacity(64 * 1024, stdout),
            stdin,
            handler,
            acp::MAX_LINE_BYTES,
        );
        let mut running = Running {
            conn: conn.clone(),
            pgid,
            exit: exit_rx.clone(),
            guardian,
            auth_methods: Vec::new(),
            can_logout: false,
            capabilities: Default::default(),
        };
        let timeout = self.shared.timings.handshake_timeout;
        let reason = match tokio::time::timeout(timeout, calls::initialize(&conn)).await {
            Ok(Ok(answer)) => {
                self.send_saved_gateway(&name, &conn, &answer.auth_methods).await;
                running.auth_methods = answer.auth_methods;
                running.can_logout = answer.can_logout;
                running.capabilities = answer.response.agent_capabilities;
                return Ok(running);
            }
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

    /// The program, arguments and host prefix that run `command`: the
    /// bundled agent where Parley runs (inside the sandbox too); the user's
    /// own commands found on the search path, or on the host when Parley is
    /// in a Flatpak.
    pub(super) async fn launch_target(
        &self,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: &std::path::Path,
    ) -> Result<(PathBuf, Vec<String>, &[String]), StartError> {
        if let Some((program, mut lead)) = launch::bundled(command) {
            lead.extend(args.iter().cloned());
            Ok((program, lead, &[][..]))
        } else if self.shared.spawn_prefix.is_empty() {
            let login = launch::login_shell_path(Duration::from_secs(3)).await;
            let dirs = launch::search_dirs(env.get("PATH").map(String::as_str), login);
            let program = crate::core::launch::resolve_program(command, cwd, &dirs)
                .ok_or_else(|| StartError::plain(launch::not_found(command, &dirs)))?;
            Ok((program, args.to_vec(), &[][..]))
        } else {
            // On the host, the host's shell finds it (with its login PATH).
            Ok((
                PathBuf::from(command),
                args.to_vec(),
                &self.shared.spawn_prefix[..],
            ))
        }
    }

    /// The agent's environment with its saved keys added (they win over the
    /// configuration's). A keyring that cannot be read is noted in the log
    /// (without a value) and the agent starts without them.
    pub(super) async fn env_with_saved_keys(
        &self,
        def: &AgentDef,
    ) -> std::collections::BTreeMap<String, String> {
        let mut env = def.env.clone();
        match crate::core::secrets::load(&self.scope(), &def.name).await {
            Ok(values) => {
                // A saved gateway is no variable: it goes in `authenticate`.
                let vars = values
                    .into_iter()
                    .filter(|(n, _)| crate::core::types::auth::is_env_name(n));
                for (name, value) in vars {
                    env.insert(name, value.expose().to_owned());
                }
            }
            Err(e) => self.log(&def.name, format!("parley: the saved keys were not passed: {e}")),
        }
        env
    }
}
