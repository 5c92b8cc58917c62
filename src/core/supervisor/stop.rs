//! Stopping an agent: the stop sequence, an agent that exits on its own or
//! loses its connection, restart, and quitting.

use super::logs::with_last_lines;
use super::*;

impl AgentService {
    pub(super) async fn on_exit(&self, name: &str, generation: u64, status: ExitStatus) {
        // An agent on another host whose ssh ended with 255: the held
        // connection's last words say why (unreachable, timed out, …).
        let host = self
            .definition(name)
            .and_then(|d| d.remote_host())
            .and_then(Result::ok);
        let mut lost = false;
        if let Some(host) = host.filter(|_| status.code() == Some(255)) {
            // The held connection ends about when its sessions do: it is
            // waited for a moment, and only a connection that did end is
            // called lost (an agent may end with 255 by itself).
            let link = self.shared.hosts.link(&host);
            let mut lines = None;
            for _ in 0..20 {
                lines = link.lost().await;
                if lines.is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            lost = lines.is_some();
            let lines = lines.unwrap_or_default();
            let logs = lock(&self.shared.table)
                .find_gen(name, generation)
                .map(|e| e.logs.clone());
            if let Some(logs) = logs {
                for line in lines {
                    self.push_log(name, &logs, format!("ssh: {line}"));
                }
            }
        }
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
            // ssh ends with 255 when its connection does.
            let reason = match e.def.remote_host() {
                Some(Ok(host)) if lost => crate::i18n::gettext_f(
                    "the connection to {host} was lost ({status})",
                    &[("host", &host.name), ("status", &status.to_string())],
                ),
                _ => crate::i18n::gettext_f(
                    "the agent exited on its own ({status})",
                    &[("status", &status.to_string())],
                ),
            };
            e.state = next;
            e.error = Some(with_last_lines(&reason, &e.logs).to_string());
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
    pub(super) fn on_connection_lost(&self, name: &str, generation: u64, reason: String) {
        let running = {
            let mut t = lock(&self.shared.table);
            let Some(e) = t.find_gen(name, generation) else {
                return;
            };
            if e.stopping || !matches!(e.state, AgentState::Ready | AgentState::Busy) {
                return;
            }
            e.state = lifecycle::expected(e.state, Trigger::ConnectionLost, AgentState::Error);
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
                running.end(this.shared.timings.stop).await;
                let mut t = lock(&this.shared.table);
                if let Some(e) = t.find_gen(&name, generation) {
                    e.stopping = false;
                    e.settle_definition();
                }
            });
        }
    }

    pub async fn stop(&self, name: &str) -> Result<(), AgentError> {
        self.stop_with(name, Trigger::StopRequested).await
    }

    pub(super) async fn stop_with(&self, name: &str, trigger: Trigger) -> Result<(), AgentError> {
        let mut changed = self.shared.changed.subscribe();
        let (generation, running) = {
            let mut t = lock(&self.shared.table);
            let Some(e) = t.find(name) else {
                return Err(AgentError::Unknown(name.to_owned()));
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

    pub(super) async fn finish_stop(&self, name: &str, generation: u64, running: Running, trigger: Trigger) {
        running.end(self.shared.timings.stop).await;
        if let Some(client) = self.client() {
            client.disconnected(name, "stopped");
        }
        let mut t = lock(&self.shared.table);
        let Some(e) = t.find_gen(name, generation) else {
            return;
        };
        e.state = lifecycle::expected(e.state, trigger, AgentState::Stopped);
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
                    host: None,
                }),
            );
        } else {
            self.emit_state(e);
        }
    }

    /// Stop, then start with the current definition (clears `outdated`).
    pub async fn restart(&self, name: &str) -> Result<(), StartError> {
        if self.definition(name).is_none() {
            return Err(StartError::plain(unknown(name)));
        }
        self.stop(name)
            .await
            .map_err(|e| StartError::plain(e.to_string()))?;
        self.start(name).await
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
}
