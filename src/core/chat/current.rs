//! The agent's current conversation as front ends read it, and the
//! settings the configuration gives the chat.

use super::state::*;

impl ChatService {
    /// The configuration's `permissions`, applied with it.
    pub fn set_permission_rules(&self, rules: Vec<crate::core::config::model::PermissionRule>) {
        *lock(&self.inner.rules) = rules;
    }

    /// `MarkSeen(agent)`: the user has seen the agent's last answer.
    pub fn mark_seen(&self, agent: &str) {
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.unseen = None;
        }
    }

    /// `Conversation(agent)`.
    pub fn conversation(&self, agent: &str) -> Result<Conversation, ChatError> {
        self.conversation_tail(agent, usize::MAX).map(|(c, _)| c)
    }

    /// The conversation with only its `last` messages, and how many come
    /// before them (the window shows a long one a page at a time).
    pub fn conversation_tail(&self, agent: &str, last: usize) -> Result<(Conversation, usize), ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let convs = lock(&self.inner.convs);
        let before = convs
            .get(agent)
            .map_or(0, |c| c.messages.len().saturating_sub(last));
        let conversation = match convs.get(agent) {
            None => Conversation {
                id: None,
                read_only: None,
                title: None,
                messages: Vec::new(),
                busy: false,
                queued: 0,
                usage: Usage::default(),
                commands: Vec::new(),
                permissions: Vec::new(),
                options: Vec::new(),
                forked_from: None,
                subagents: Vec::new(),
            },
            Some(c) => Conversation {
                id: c.conversation.clone(),
                read_only: c.read_only.clone(),
                title: c.title.clone(),
                messages: c.messages[before..].to_vec(),
                busy: c.busy,
                queued: c.queued_count(),
                usage: c.usage.clone(),
                commands: c.commands.clone(),
                permissions: c.permissions.iter().map(|p| p.request.clone()).collect(),
                options: c.options.clone(),
                forked_from: c.forked_from.clone(),
                subagents: c.subagent_threads(),
            },
        };
        Ok((conversation, before))
    }

    /// Messages `from..to` of the agent's current conversation (clamped).
    pub fn messages_range(&self, agent: &str, from: usize, to: usize) -> Vec<Message> {
        lock(&self.inner.convs)
            .get(agent)
            .map(|c| {
                let to = to.min(c.messages.len());
                c.messages[from.min(to)..to].to_vec()
            })
            .unwrap_or_default()
    }

    /// Where message `id` is in the agent's current conversation.
    pub fn message_position(&self, agent: &str, id: &str) -> Option<usize> {
        lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.messages.iter().position(|m| m.id == id))
    }

    /// Whether `session_id` is the agent's open session (terminal requests
    /// for another are refused).
    /// A subagent's session counts: its helper runs commands too.
    pub fn has_session(&self, agent: &str, session_id: &str) -> bool {
        lock(&self.inner.convs).get(agent).is_some_and(|c| {
            c.session.as_ref().is_some_and(|(s, _)| &*s.0 == session_id)
                || c.subagents.iter().any(|s| s.info.session_id == session_id)
        })
    }

    /// The agent's slash commands (from `available_commands_update`).
    pub fn commands(&self, agent: &str) -> Vec<Command> {
        lock(&self.inner.convs)
            .get(agent)
            .map(|c| c.commands.clone())
            .unwrap_or_default()
    }

    /// Forgets every conversation (another configuration was opened; its
    /// history is kept apart with `set_history`).
    pub fn forget_all(&self) {
        let agents: Vec<String> = lock(&self.inner.convs).keys().cloned().collect();
        for agent in &agents {
            self.cancel_elicitations(agent);
        }
        lock(&self.inner.convs).clear();
        self.inner.history.forget_current();
    }
}
