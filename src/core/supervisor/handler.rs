//! What an agent sends Parley: notifications and requests, passed to the
//! conversation (`AgentClient`), and the `fs/*` capability, answered off the
//! connection's reader task.

use super::*;

/// Takes what a running agent sends: `fs/*` is answered here (confined to
/// its cwd), session traffic goes to the conversations.
pub(super) struct AgentHandler {
    pub(super) agent: String,
    pub(super) generation: u64,
    pub(super) supervisor: Weak<Shared>,
    pub(super) fs: FsScope,
    /// On another host: its link and the agent's directory there; `fs/*`
    /// is then served on the far side.
    pub(super) remote: Option<super::hosts::RemoteFs>,
    pub(super) logs: Arc<Mutex<VecDeque<String>>>,
    pub(super) terminals: Arc<terminals::Terminals>,
}

impl AgentHandler {
    fn supervisor(&self) -> Option<AgentService> {
        self.supervisor.upgrade().map(|shared| AgentService { shared })
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
        let remote = self.remote.clone();
        let params = params.get().to_owned();
        let (agent, supervisor, logs) = (self.agent.clone(), self.supervisor.clone(), self.logs.clone());
        let method = method.to_owned();
        let written = match &request {
            acp::fs::FsRequest::Write { path, .. } => Some(path.clone()),
            acp::fs::FsRequest::Read { .. } => None,
        };
        let gate = written
            .is_some()
            .then(|| self.supervisor().and_then(|s| s.write_gate()))
            .flatten();
        runtime.spawn(async move {
            if let Some(gate) = gate {
                gate(&agent, written).await;
            }
            let result = match remote {
                Some(remote) => remote.request(&method, &params, acp::fs::REQUEST_TIMEOUT).await,
                None => fs
                    .serve(request, acp::fs::REQUEST_TIMEOUT)
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Err(e) = &result {
                // As `Handler::log` does; `self` does not live this long.
                let line = format!("parley: refused {method}: {e}");
                tracing::info!(agent, "{line}");
                if let Some(shared) = supervisor.upgrade() {
                    AgentService { shared }.push_log(&agent, &logs, line);
                }
            }
            responder.respond(result.map_err(|e| RpcError::remote(acp::connection::INTERNAL_ERROR, e)));
        });
    }
}

impl AgentHandler {
    /// The five `terminal/*` calls (see `terminals`); off the reader task.
    fn terminal_request(&self, method: &str, params: &RawValue, responder: Responder) {
        let Some(supervisor) = self.supervisor() else {
            return responder.respond(Err(RpcError::remote(
                acp::connection::INTERNAL_ERROR,
                "Parley is shutting down",
            )));
        };
        let value: serde_json::Value = match serde_json::from_str(params.get()) {
            Ok(v) => v,
            Err(e) => {
                return responder.respond(Err(RpcError::remote(
                    acp::connection::INVALID_PARAMS,
                    format!("{method}: {e}"),
                )))
            }
        };
        // Only for the session the conversation has open.
        let session = value
            .get("sessionId")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        let known = supervisor
            .client()
            .is_some_and(|c| c.has_session(&self.agent, session));
        if !known {
            self.log(format!(
                "parley: refused {method} for an unknown session {session}"
            ));
            return responder.respond(Err(RpcError::remote(
                acp::connection::INVALID_PARAMS,
                format!("no open session {session}"),
            )));
        }
        let (terminals, method, agent) = (self.terminals.clone(), method.to_owned(), self.agent.clone());
        let gate = (method == "terminal/create")
            .then(|| supervisor.write_gate())
            .flatten();
        tokio::spawn(async move {
            // A command may write files too: it starts after the turn's
            // first snapshot, as a file write does.
            if let Some(gate) = gate {
                gate(&agent, None).await;
            }
            let answer = match method.as_str() {
                "terminal/create" => {
                    match (
                        serde_json::from_value::<agent_client_protocol_schema::v1::CreateTerminalRequest>(
                            value,
                        ),
                        supervisor.definition(&agent),
                    ) {
                        (Ok(request), Some(def)) => {
                            let host = def.remote_host().and_then(Result::ok);
                            let start = |command: String, args: Vec<String>, env, cwd: std::path::PathBuf| async move {
                                supervisor
                                    .spawn_on_terminal(host.as_ref(), &command, &args, &env, &cwd)
                                    .await
                                    .map_err(|e| e.reason)
                            };
                            terminals.create(&def, request, start).await
                        }
                        (Err(e), _) => Err(RpcError::remote(acp::connection::INVALID_PARAMS, e.to_string())),
                        (_, None) => Err(RpcError::remote(acp::connection::INTERNAL_ERROR, unknown(&agent))),
                    }
                }
                "terminal/output" => terminals.output(&value),
                "terminal/wait_for_exit" => terminals.wait_for_exit(&value).await,
                "terminal/kill" => terminals.kill(&value),
                "terminal/release" => terminals.release(&value),
                other => Err(RpcError::remote(
                    acp::connection::METHOD_NOT_FOUND,
                    format!("method not found: {other}"),
                )),
            };
            if let Err(e) = &answer {
                let line = format!("parley: {method}: {e}");
                tracing::info!(agent, "{line}");
            }
            responder.respond(answer);
        });
    }
}

impl Handler for AgentHandler {
    fn notification(&self, method: &str, params: &RawValue) {
        // The sign-in mark is the supervisor's; the chat then sends the
        // messages that waited for a sign-in (below).
        if method == "_auth/status_update" {
            let v: serde_json::Value = serde_json::from_str(params.get()).unwrap_or_default();
            if let (Some(s), Some(account)) = (
                self.supervisor(),
                crate::core::types::auth::AccountStatus::parse(&v),
            ) {
                s.take_account(&self.agent, account);
            }
        }
        if method == "auth/status_update" {
            if let Some(s) = self.supervisor() {
                let v: serde_json::Value = serde_json::from_str(params.get()).unwrap_or_default();
                s.take_auth_state(&self.agent, v.get("state").and_then(serde_json::Value::as_str));
            }
        }
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
            m if m.starts_with("terminal/") => self.terminal_request(method, params, responder),
            "session/request_permission" | "elicitation/create" => {
                match self.supervisor().and_then(|s| s.client()) {
                    Some(client) => client.request(&self.agent, method, params, responder),
                    None => responder.respond(Err(RpcError::remote(
                        acp::connection::INTERNAL_ERROR,
                        "no conversation to ask",
                    ))),
                }
            }
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
        // Its terminals go with the connection.
        self.terminals.end_all();
        let Some(s) = self.supervisor() else { return };
        s.shared.terminals.close(&self.agent, &self.terminals);
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
