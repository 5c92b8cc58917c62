//! The supervisor's view of the conversations (`AgentClient`): what an
//! agent sends, handed to the chat; updates that do not decode are named.

use super::state::*;

/// Names what was wrong with a session update that did not decode: an
/// unknown kind, or an unknown content block type (never dropped silently).
/// The update's kind (with its content type when that is what failed), and
/// what was wrong with it.
pub(super) fn describe_bad_update(params: &RawValue, e: &serde_json::Error) -> (String, String) {
    let raw: Value = serde_json::from_str(params.get()).unwrap_or(Value::Null);
    let update = &raw["update"];
    let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("?");
    match update
        .get("content")
        .and_then(|c| c.get("type"))
        .and_then(Value::as_str)
    {
        Some(t) if !matches!(t, "text" | "image" | "audio" | "resource_link" | "resource") => (
            format!("{kind}/{t}"),
            format!("an unknown content block type {t} in a {kind} update"),
        ),
        _ => (
            kind.to_owned(),
            format!("an unknown or malformed session update {kind} ({e})"),
        ),
    }
}

/// The supervisor's view of the conversations.
pub(super) struct ChatClient(pub(super) std::sync::Weak<ChatInner>);

impl ChatClient {
    fn chat(&self) -> Option<ChatService> {
        self.0.upgrade().map(|inner| ChatService { inner })
    }
}

impl AgentClient for ChatClient {
    fn notification(&self, agent: &str, method: &str, params: &RawValue) {
        let Some(chat) = self.chat() else { return };
        if method == "elicitation/complete" {
            chat.elicitation_complete(agent, params);
            return;
        }
        if method == "auth/status_update" {
            let v: Value = serde_json::from_str(params.get()).unwrap_or_default();
            if matches!(
                v.get("state").and_then(Value::as_str),
                Some("authenticated" | "not_required")
            ) {
                chat.resume_after_sign_in(agent);
            }
            return;
        }
        if method != "session/update" {
            chat.inner
                .supervisor
                .log(agent, format!("parley: ignored an unknown notification {method}"));
            return;
        }
        // The hot path: decoded once, straight from the agent's line.
        match serde_json::from_str::<acp::SessionNotification>(params.get()) {
            Ok(n) => chat.apply_update(agent, &n.session_id.0, n.update),
            Err(e) => {
                let (kind, what) = describe_bad_update(params, &e);
                chat.tell_once(agent, &kind, || {
                    tracing::warn!(agent, "{what}");
                    format!("parley: ignored {what} (said once per kind)")
                });
            }
        }
    }

    fn session_update(&self, agent: &str, n: acp::SessionNotification) {
        if let Some(chat) = self.chat() {
            chat.apply_update(agent, &n.session_id.0, n.update);
        }
    }

    fn request(&self, agent: &str, method: &str, params: &RawValue, responder: Responder) {
        match self.chat() {
            Some(chat) if method == "session/request_permission" => {
                chat.permission_request(agent, params, responder)
            }
            Some(chat) if method == "elicitation/create" => {
                chat.elicitation_request(agent, params, responder)
            }
            _ => responder.respond(Err(RpcError::remote(
                crate::core::acp::connection::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            ))),
        }
    }

    fn has_session(&self, agent: &str, session_id: &str) -> bool {
        self.chat()
            .is_some_and(|chat| chat.has_session(agent, session_id))
    }

    fn disconnected(&self, agent: &str, _reason: &str) {
        if let Some(chat) = self.chat() {
            chat.disconnected(agent);
        }
    }
}

impl ChatService {
    /// Creates the conversations and registers them as the supervisor's client.
    pub fn new(
        supervisor: AgentService,
        history: HistoryService,
        checkpoints: crate::core::checkpoints::CheckpointService,
        worktrees: crate::core::worktrees::WorktreeService,
        events: EventSender,
    ) -> Self {
        let chat = ChatService {
            inner: Arc::new(ChatInner {
                convs: Mutex::new(HashMap::new()),
                openers: Mutex::new(HashMap::new()),
                offered: Mutex::new(HashMap::new()),
                events,
                supervisor: supervisor.clone(),
                next_id: AtomicU64::new(1),
                conv_serial: AtomicU64::new(1),
                history,
                checkpoints,
                worktrees,
                files: Default::default(),
                live: Mutex::default(),
                rules: Mutex::default(),
                silence: Mutex::new(Some(std::time::Duration::from_secs(300))),
                unshown: Mutex::new(std::collections::HashSet::new()),
                unasked: Mutex::default(),
            }),
        };
        supervisor.set_client(Arc::new(ChatClient(Arc::downgrade(&chat.inner))));
        chat
    }

    pub(super) fn apply_update(&self, agent: &str, session_id: &str, update: acp::SessionUpdate) {
        let mut convs = lock(&self.inner.convs);
        // This runs for every chunk of every answer: no allocation when
        // the conversation exists.
        if !convs.contains_key(agent) {
            convs.insert(agent.to_owned(), Conv::default());
        }
        let Some(c) = convs.get_mut(agent) else { return };
        let known = c.session.as_ref().is_some_and(|(s, _)| &*s.0 == session_id);
        // While a session opens, a child's updates are its load's replay
        // of a thread the history already holds: kept apart as early.
        if !known && (c.opening_session || c.child_index(session_id).is_none()) {
            if c.opening_session {
                c.early.push((session_id.to_owned(), update));
            } else {
                drop(convs);
                self.inner.supervisor.log(
                    agent,
                    format!("parley: an update for an unknown session {session_id} was ignored"),
                );
            }
            return;
        }
        self.heard_from(agent, c);
        // A helper's own updates, its announcement and messages between
        // sessions go to the helpers' threads (`subagents`).
        if Self::is_subagent_side(c, known, &update) {
            self.apply_subagent_side(agent, c, session_id, update);
            return;
        }
        let tool = match &update {
            acp::SessionUpdate::ToolCall(t) => Some(t.tool_call_id.to_string()),
            acp::SessionUpdate::ToolCallUpdate(u) => Some(u.tool_call_id.to_string()),
            _ => None,
        };
        let mut next_id = || self.next_id("m");
        let mut emit = |e: Event| self.emit(e);
        let unshown = c.apply(agent, update, &mut next_id, &mut emit);
        if let Some(call) = tool.and_then(|id| super::updates::find_tool(c, &id)) {
            self.note_tool(agent, &call);
        }
        if let Some(kind) = unshown {
            drop(convs);
            self.tell_once(agent, &kind, || {
                format!("parley: the agent sends {kind} session updates, which Parley does not show (said once per kind)")
            });
        }
    }

    /// Logs a line about an update kind once per agent and kind in a run:
    /// an agent may send thousands.
    pub(super) fn tell_once(&self, agent: &str, kind: &str, line: impl FnOnce() -> String) {
        // Bounded: an agent could make up a new kind for every update.
        let kind: String = kind.chars().take(64).collect();
        let mut told = lock(&self.inner.unshown);
        let first = told.len() < 256 && told.insert((agent.to_owned(), kind));
        drop(told);
        if first {
            self.inner.supervisor.log(agent, line());
        }
    }

    pub(super) fn disconnected(&self, agent: &str) {
        let pending: Vec<PendingPermission> = {
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(agent) else { return };
            c.session = None;
            self.children_gone(agent, c);
            // The options were the session's: the next one brings its own.
            if !c.options.is_empty() {
                c.options.clear();
                self.emit(c.session_changed(agent));
            }
            c.permissions.drain(..).collect()
        };
        for p in pending {
            drop(p.responder);
            self.emit(Event::PermissionResolved(PermissionResolved {
                id: p.request.id,
                agent: agent.to_owned(),
            }));
        }
        // Nobody is left to answer: the window's dialogs close.
        self.cancel_elicitations(agent);
    }
}
