//! Picking up where the user left off: each conversation's draft (what the
//! composer held, and where the conversation was scrolled), and at start
//! the conversation each agent had open (`Restore`). A draft is written
//! through the history's writer, so it survives a crash once the writer's
//! batch is committed (at most a few milliseconds after it was set).

use super::state::*;
use crate::core::history::Op;
use crate::core::types::draft::Draft;

impl ChatService {
    /// The history's key of the agent's open conversation ('' for a new
    /// one not yet stored).
    fn draft_key(&self, agent: &str) -> String {
        lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.conversation.clone())
            .unwrap_or_default()
    }

    /// `SetDraft(agent, text, anchor?)`: keeps the open conversation's
    /// draft (an empty one is removed). Emits `draft:changed`. Answers how
    /// many bytes of the text were cut (past `MAX_DRAFT`).
    pub fn set_draft(&self, agent: &str, draft: Draft) -> Result<usize, ChatError> {
        self.set_draft_of(agent, &self.draft_key(agent), draft)
    }

    /// The draft of the agent's conversation `conversation` ('' for the
    /// new one): the window saves a draft to the conversation it was
    /// written in, which may no longer be the open one.
    pub fn set_draft_of(&self, agent: &str, conversation: &str, draft: Draft) -> Result<usize, ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let given = draft.text.len();
        let draft = draft.bounded();
        let cut = given - draft.text.len();
        let conversation = conversation.to_owned();
        let open = conversation == self.draft_key(agent);
        {
            let mut r = self.inner.history.recorder();
            let config = r.config.clone();
            r.send(Op::Draft {
                config,
                agent: agent.to_owned(),
                conversation,
                draft: Some(draft.clone()),
            });
        }
        if open {
            self.emit(Event::DraftChanged(events::DraftChanged {
                agent: agent.to_owned(),
                draft,
            }));
        }
        Ok(cut)
    }

    /// `Draft(agent)`: the open conversation's draft (empty when none).
    pub async fn draft(&self, agent: &str) -> Result<Draft, ChatError> {
        let key = self.draft_key(agent);
        self.draft_of(agent, &key).await
    }

    /// The draft of the agent's conversation `conversation` ('' for the
    /// new one).
    pub async fn draft_of(&self, agent: &str, conversation: &str) -> Result<Draft, ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let conversation = conversation.to_owned();
        let config = self.inner.history.config_key();
        let Some(h) = self.inner.history.flushed() else {
            return Ok(Draft::default());
        };
        let agent = agent.to_owned();
        // After what was written before it (a `SetDraft` just made).
        tokio::task::spawn_blocking(move || {
            crate::core::history::service::flushed(&h);
            h.draft(&config, &agent, &conversation)
        })
        .await
        .map_err(|e| ChatError::History(e.to_string()))?
        .map_err(|e| ChatError::History(e.to_string()))
    }

    /// Notes in the history which conversation the agent has open (`None`:
    /// a new one), for `Restore`.
    pub(super) fn record_opened(&self, agent: &str, conversation: Option<String>) {
        let mut r = self.inner.history.recorder();
        if !r
            .history
            .as_ref()
            .is_some_and(crate::core::history::History::writable)
        {
            return;
        }
        let config = r.config.clone();
        r.send(Op::Opened {
            config,
            agent: agent.to_owned(),
            conversation,
        });
    }

    /// `Restore()`: each agent of the configuration whose conversation is
    /// still new and empty opens the conversation it had open when Parley
    /// last quit (as the window does at start). The agents restored.
    pub async fn restore(&self) -> Vec<String> {
        let Some(h) = self.inner.history.flushed() else {
            return Vec::new();
        };
        let config = self.inner.history.config_key();
        let mut restored = Vec::new();
        for agent in self.inner.supervisor.list().into_iter().map(|a| a.name) {
            let untouched = lock(&self.inner.convs)
                .get(&agent)
                .is_none_or(|c| c.messages.is_empty() && c.conversation.is_none() && !c.busy);
            if !untouched {
                continue;
            }
            let Ok(Some(id)) = h.opened(&config, &agent) else {
                continue;
            };
            match self.switch_to(&agent, &id).await {
                Ok(()) => restored.push(agent),
                Err(e) => tracing::debug!(agent, error = %e, "the conversation left open was not reopened"),
            }
        }
        restored
    }
}
