//! A turn: `Send` queues the user's message, and the agent's turns run
//! one after the other; `Cancel` ends the one that runs.

use super::attachments::{self, AttachmentInput};
use super::closing;
use super::permissions::permission_outcome;
use super::state::*;

/// How long a prompt waits at most for the snapshot before its turn.
const BEFORE_PROMPT_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

impl ChatService {
    /// `Send(agent, text)`: the new user message's id.
    pub fn send(&self, agent: &str, text: &str) -> Result<String, ChatError> {
        self.send_with(agent, text, Vec::new())
    }

    /// `Send(agent, text, attachments)`: files and images go with the text
    /// (either may be empty, not both).
    pub fn send_with(
        &self,
        agent: &str,
        text: &str,
        attachments: Vec<AttachmentInput>,
    ) -> Result<String, ChatError> {
        if text.trim().is_empty() && attachments.is_empty() {
            return Err(ChatError::EmptyText);
        }
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        if attachments.len() > MAX_ATTACHMENTS {
            return Err(ChatError::TooManyAttachments);
        }
        let caps = self
            .inner
            .supervisor
            .capabilities(agent)
            .map(|c| c.prompt_capabilities);
        let mut parts = Vec::new();
        if !text.trim().is_empty() {
            parts.push(Part::Text {
                text: text.to_owned(),
            });
        }
        for a in attachments {
            let a = attachments::prepare(a, caps.as_ref()).map_err(ChatError::Attachment)?;
            parts.push(Part::Attachment(a));
        }
        self.send_parts(agent, parts)
    }

    /// Adds a user message of these parts and runs (or queues) its turn.
    pub(super) fn send_parts(&self, agent: &str, parts: Vec<Part>) -> Result<String, ChatError> {
        let id = self.next_id("m");
        let mut message = Message::new(id.clone(), agent, Role::User);
        message.parts = parts;
        let (start, created) = {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            if let Some(why) = &c.read_only {
                return Err(ChatError::ReadOnly(why.clone()));
            }
            let created = self.give_row(agent, c);
            message.queued = c.busy;
            c.messages.push(message.clone());
            let start = !c.busy;
            if c.busy {
                c.queue.push_back(id.clone());
            }
            c.busy = true;
            self.emit_message(&message);
            self.emit_turn(agent, c);
            (start, created)
        };
        if created {
            // The new conversation's draft went with its first message.
            self.set_draft_of(agent, "", Default::default())?;
            self.conversations_changed(agent);
        }
        if start {
            let this = self.clone();
            let agent = agent.to_owned();
            let first = id.clone();
            tokio::spawn(async move { this.run_turns(agent, first).await });
        }
        Ok(id)
    }

    pub(super) async fn run_turns(&self, agent: String, first_id: String) {
        let mut id = first_id;
        loop {
            self.one_turn(&agent, &id).await;
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(&agent) else { return };
            // A Cancel is for the turn that ran (even one cancelled while
            // its agent started), never for the next.
            c.cancelling = false;
            match c.queue.pop_front() {
                Some(next) => {
                    id = next;
                    // Sent now: it moves after the answer it waited for.
                    if let Some(i) = c.messages.iter().rposition(|m| m.id == id) {
                        let mut m = c.messages.remove(i);
                        m.queued = false;
                        c.messages.push(m.clone());
                        self.emit_message(&m);
                    }
                    self.emit_turn(&agent, c);
                }
                None => {
                    c.busy = false;
                    self.emit_turn(&agent, c);
                    self.keep_children(c);
                    return;
                }
            }
        }
    }

    pub(super) async fn one_turn(&self, agent: &str, id: &str) {
        let sup = &self.inner.supervisor;
        if let Err(e) = sup.start(agent).await {
            self.system_message(agent, MessageCode::AgentUnavailable, Some(e.to_string()));
            return;
        }
        let Some((conn, generation)) = sup.connection(agent) else {
            self.system_message(
                agent,
                MessageCode::AgentUnavailable,
                Some(gettext("the agent stopped")),
            );
            return;
        };
        if let Err(e) = sup.acquire(agent) {
            self.system_message(agent, MessageCode::AgentUnavailable, Some(e.to_string()));
            return;
        }
        // The snapshot before the turn starts now, the one after is taken
        // however the turn ends (a crash too).
        let checkpoint = self.begin_checkpoint(agent, id);
        self.tell_shared_folders(agent);
        let end = self
            .prompt_turn(agent, id, &conn, generation, checkpoint.as_ref())
            .await;
        if let Some(start) = checkpoint {
            self.inner.checkpoints.end(start);
        }
        sup.release(agent);
        match end {
            Some(TurnEnd::SignIn(why)) => {
                self.remove_empty_answer(agent);
                self.wait_for_sign_in(agent, id, why);
            }
            Some(end) => self.finish_current(agent, end),
            None => {}
        }
    }

    /// The answer to a prompt the agent refused for want of a sign-in goes
    /// (`message:removed`), unless the agent had already said something.
    pub(super) fn remove_empty_answer(&self, agent: &str) {
        let removed = {
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(agent) else { return };
            let Some(i) = c.current.take() else { return };
            if c.messages.get(i).is_some_and(|m| m.parts.is_empty()) {
                Some(c.messages.remove(i).id)
            } else {
                c.current = Some(i);
                None
            }
        };
        match removed {
            Some(message_id) => self.emit(Event::MessageRemoved(events::MessageRemoved {
                agent: agent.to_owned(),
                message_id,
            })),
            None => self.finish_current(agent, TurnEnd::Error(gettext("authentication required"))),
        }
    }

    /// `None` when no agent message was started (the session failed, or
    /// the prompt could not be sent).
    pub(super) async fn prompt_turn(
        &self,
        agent: &str,
        id: &str,
        conn: &crate::core::acp::Connection,
        generation: u64,
        checkpoint: Option<&crate::core::checkpoints::TurnStart>,
    ) -> Option<TurnEnd> {
        {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            c.steering = 0;
            c.rejections = 0;
            c.rejected.clear();
        }
        let (session, early) = match self.session_for(agent, conn, generation).await {
            Ok(s) => {
                self.signed_in_after_all(agent);
                s
            }
            Err(calls::CallError::AuthRequired(why)) => return Some(TurnEnd::SignIn(why)),
            Err(calls::CallError::NotResumable(why)) => {
                self.refuse_message(agent, id, why);
                return None;
            }
            Err(e) => {
                self.system_message(agent, MessageCode::AgentUnavailable, Some(e.to_string()));
                return None;
            }
        };
        // Cancelled while the session opened: the prompt is not sent.
        if lock(&self.inner.convs).get(agent).is_some_and(|c| c.cancelling) {
            return None;
        }
        let caps = self
            .inner
            .supervisor
            .capabilities(agent)
            .map(|c| c.prompt_capabilities)
            .unwrap_or_default();
        // Cloned (the attachments' bytes are shared), then encoded without
        // the lock: every agent's updates wait on it.
        let message = lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.messages.iter().rev().find(|m| m.id == id).cloned());
        let blocks = message.map(|m| attachments::prompt_blocks(&m, &caps));
        let blocks = match blocks {
            Some(Ok(blocks)) => blocks,
            Some(Err(why)) => {
                self.refuse_message(agent, id, why);
                return None;
            }
            None => return None,
        };
        let mut m = Message::new(self.next_id("m"), agent, Role::Agent);
        m.done = false;
        {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            c.messages.push(m.clone());
            c.current = Some(c.messages.len() - 1);
            m = c.messages[c.messages.len() - 1].clone();
        }
        self.emit_message(&m);
        // Updates that came before session/new answered, in their order.
        for (sid, update) in early {
            self.apply_update(agent, &sid, update);
        }
        let give_up = Arc::new(tokio::sync::Notify::new());
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.give_up = Some(give_up.clone());
            c.activity = c.activity.wrapping_add(1);
        }
        self.watch_silence(agent, &give_up);
        // The snapshot before the turn, begun before the session opened,
        // is taken before the prompt goes out: an agent may write the
        // moment the prompt arrives, and that write is the turn's. On an
        // unchanged tree it is one `git status` (bench: "checkpoints time
        // added before the prompt"); a snapshot that takes too long lets
        // the prompt go (the agent's file writes and commands still wait).
        if let Some(start) = checkpoint {
            if !start.recorded(BEFORE_PROMPT_LIMIT).await {
                self.inner.supervisor.log(
                    agent,
                    "parley: the checkpoint before the turn is taking long; the prompt goes out now".into(),
                );
            }
            // Cancelled while it was taken: the prompt is not sent, and
            // the turn ends as a cancelled one does.
            let mut convs = lock(&self.inner.convs);
            if let Some(c) = convs.get_mut(agent).filter(|c| c.cancelling) {
                c.give_up = None;
                self.unstall(agent, c);
                return Some(TurnEnd::Stop(acp::StopReason::Cancelled));
            }
        }
        // Dropping the prompt's future (Cancel not answered in time) sends
        // `$/cancel_request` for it.
        let prompt = calls::prompt(conn, &session, blocks);
        tokio::pin!(prompt);
        // One poll puts the request on its way: a steering prompt may follow
        // it from then on, and never go before it.
        let mut early = None;
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(r) = std::future::Future::poll(prompt.as_mut(), cx) {
                early = Some(r);
            }
            std::task::Poll::Ready(())
        })
        .await;
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.prompt_sent = true;
        }
        let answer = match early {
            Some(r) => Some(r),
            None => tokio::select! {
                biased;
                r = &mut prompt => Some(r),
                _ = give_up.notified() => None,
            },
        };
        // Messages steered into the turn are answered within it.
        if answer.is_some() {
            self.steering_done(agent, &give_up).await;
        }
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.give_up = None;
            c.prompt_sent = false;
            self.unstall(agent, c);
        }
        let Some(answer) = answer else {
            self.system_message(
                agent,
                MessageCode::TurnAbandoned,
                Some(gettext_f(
                    "The agent did not answer the cancel within {n} seconds, so the turn was ended here. The agent may still be working.",
                    &[("n", &CANCEL_GRACE.as_secs().to_string())],
                )),
            );
            return Some(TurnEnd::Stop(acp::StopReason::Cancelled));
        };
        Some(match answer {
            Ok((r, tokens)) => {
                self.signed_in_after_all(agent);
                if let Some(tokens) = tokens {
                    self.turn_tokens(agent, tokens);
                }
                TurnEnd::Stop(r.stop_reason)
            }
            Err(calls::CallError::AuthRequired(why)) => TurnEnd::SignIn(why),
            Err(calls::CallError::Rpc(RpcError::Closed(reason))) => {
                // The process ended: the supervisor's error says how.
                let settled = self
                    .inner
                    .supervisor
                    .settled_error(agent, generation, std::time::Duration::from_secs(3))
                    .await;
                let reason = settled.unwrap_or(reason);
                if self
                    .inner
                    .supervisor
                    .definition(agent)
                    .is_some_and(|d| d.is_remote())
                {
                    // Its host could not be reached any more: said as a
                    // start that could not reach it is.
                    self.system_message(agent, MessageCode::AgentUnavailable, Some(reason.clone()));
                }
                TurnEnd::Error(reason)
            }
            Err(e) => TurnEnd::Error(e.to_string()),
        })
    }

    /// The turn's tokens, as the prompt's answer told them: the session's
    /// usage gets them, and its sum (`usage:changed`).
    pub(super) fn turn_tokens(&self, agent: &str, tokens: crate::core::types::usage::TurnTokens) {
        let usage = lock(&self.inner.convs).get_mut(agent).map(|c| {
            c.usage.turn = Some(tokens);
            c.usage.tokens = Some(c.usage.tokens.unwrap_or_default().plus(tokens));
            c.usage.clone()
        });
        if let Some(usage) = usage {
            self.emit(Event::UsageChanged(crate::core::events::UsageChanged {
                agent: agent.to_owned(),
                usage,
            }));
        }
    }

    /// A user message that cannot go to this agent (an image to an agent
    /// that takes none): it gets the reason as its error, and is not sent.
    pub(super) fn refuse_message(&self, agent: &str, id: &str, why: String) {
        let m = lock(&self.inner.convs).get_mut(agent).and_then(|c| {
            let m = c.messages.iter_mut().rev().find(|m| m.id == id)?;
            m.error = Some(why);
            Some(m.clone())
        });
        if let Some(m) = m {
            self.emit_message(&m);
        }
    }

    pub(super) fn finish_current(&self, agent: &str, end: TurnEnd) {
        self.cancel_elicitations(agent);
        let mut convs = lock(&self.inner.convs);
        let Some(c) = convs.get_mut(agent) else { return };
        let Some(i) = c.current.take() else { return };
        let Some(m) = c.messages.get_mut(i) else { return };
        let cancelled = matches!(end, TurnEnd::Stop(acp::StopReason::Cancelled));
        match end {
            TurnEnd::Stop(reason) => m.stop_reason = Some(reason),
            TurnEnd::Error(e) | TurnEnd::SignIn(e) => m.error = Some(e),
        }
        m.done = true;
        let closed = closing::close_open_tools(c, i, cancelled);
        let Some(m) = c.messages.get(i) else { return };
        let m = m.clone();
        c.unseen = Some((m.id.clone(), std::time::SystemTime::now()));
        // Requests the agent left open end with the turn.
        let stale: Vec<PendingPermission> = c.permissions.drain(..).collect();
        drop(convs);
        for p in stale {
            p.responder
                .respond(Ok(permission_outcome(acp::RequestPermissionOutcome::Cancelled)));
            self.emit(Event::PermissionResolved(PermissionResolved {
                id: p.request.id,
                agent: agent.to_owned(),
            }));
        }
        for other in closed {
            self.emit_message(&other);
        }
        self.emit_message(&m);
    }

    /// `Cancel(agent)`.
    pub fn cancel(&self, agent: &str) -> Result<(), ChatError> {
        self.cancel_turn(agent, false)
    }

    /// Cancels the running turn; the queued messages are dropped, unless
    /// `keep_queue` (`SendNow`): they are then sent after it.
    pub(super) fn cancel_turn(&self, agent: &str, keep_queue: bool) -> Result<(), ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let (pending, dropped, session, children) = {
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(agent) else {
                return Ok(());
            };
            // Messages that wait for a sign-in are dropped too.
            let mut dropped = Vec::new();
            for id in std::mem::take(&mut c.awaiting_sign_in) {
                if let Some(m) = c.messages.iter_mut().rev().find(|m| m.id == id) {
                    m.queued = false;
                    m.error = Some(message::DROPPED.into());
                    dropped.push(m.clone());
                }
            }
            if !c.busy {
                drop(convs);
                for m in &dropped {
                    self.emit_message(m);
                }
                return Ok(());
            }
            c.cancelling = true;
            let pending: Vec<PendingPermission> = c.permissions.drain(..).collect();
            let queued: Vec<String> = if keep_queue {
                Vec::new()
            } else {
                c.queue.drain(..).collect()
            };
            for id in queued {
                if let Some(m) = c.messages.iter_mut().rev().find(|m| m.id == id) {
                    m.queued = false;
                    m.error = Some(message::DROPPED.into());
                    dropped.push(m.clone());
                }
            }
            self.emit_turn(agent, c);
            // The agent has CANCEL_GRACE to end the turn; then Parley does.
            if let Some(turn) = c.give_up.as_ref().map(Arc::downgrade) {
                let this = self.clone();
                let agent = agent.to_owned();
                tokio::spawn(async move {
                    tokio::time::sleep(CANCEL_GRACE).await;
                    let Some(turn) = turn.upgrade() else { return };
                    let still = lock(&this.inner.convs).get(&agent).is_some_and(|c| {
                        c.cancelling && c.give_up.as_ref().is_some_and(|g| Arc::ptr_eq(g, &turn))
                    });
                    if still {
                        this.inner.supervisor.log(
                            &agent,
                            "parley: the agent did not answer the cancel; the turn is ended".into(),
                        );
                        turn.notify_one();
                    }
                });
            }
            (pending, dropped, c.session.clone(), Self::cancellable_children(c))
        };
        // session/cancel first: the agent then knows why its permission
        // requests come back "cancelled" (ACP's order).
        if let (Some((sid, generation)), Some((conn, g))) = (session, self.inner.supervisor.connection(agent))
        {
            if g == generation {
                calls::cancel(&conn, &sid);
                // The whole turn: its helpers too (claude-agent-acp's go on
                // working after their parent's cancel otherwise).
                for child in &children {
                    calls::cancel(&conn, child);
                }
            }
        }
        for p in pending {
            p.responder
                .respond(Ok(permission_outcome(acp::RequestPermissionOutcome::Cancelled)));
            self.emit(Event::PermissionResolved(PermissionResolved {
                id: p.request.id,
                agent: agent.to_owned(),
            }));
        }
        self.cancel_elicitations(agent);
        for m in &dropped {
            self.emit_message(m);
        }
        Ok(())
    }

    pub(super) fn system_message(&self, agent: &str, code: MessageCode, error: Option<String>) {
        let mut m = Message::new(self.next_id("m"), agent, Role::System);
        m.code = Some(code);
        m.error = error;
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.messages.push(m.clone());
        }
        self.emit_message(&m);
    }
}
