//! Steering the conversation from the window: the queue (edit, move,
//! delete, send now), retry, fork and edit, steer, and the drafts. Each
//! is a `ChatService` call on the runtime, answered on the main loop.

use super::conversation::ConversationObject;
use crate::core::chat::{Forked, QueueEdit};
use crate::core::types::draft::Draft;
use crate::ui::runtime;
use gtk::prelude::*;

impl ConversationObject {
    /// Changes a queued message (`EditQueued`).
    pub fn edit_queued(&self, id: &str, edit: QueueEdit, done: impl FnOnce(Result<(), String>) + 'static) {
        let (core, agent, id) = (self.core().clone(), self.agent(), id.to_owned());
        runtime::call(
            async move {
                core.chat
                    .edit_queued(&agent, &id, edit)
                    .map(|_| ())
                    .map_err(String::from)
            },
            done,
        );
    }

    /// Sends a queued message now (`SendNow`).
    pub fn send_now(&self, id: &str, done: impl FnOnce(Result<(), String>) + 'static) {
        let (core, agent, id) = (self.core().clone(), self.agent(), id.to_owned());
        runtime::call(
            async move { core.chat.send_now(&agent, &id).map_err(String::from) },
            done,
        );
    }

    /// Stops one of the agent's helpers only (`CancelSubagent`).
    pub fn cancel_subagent(&self, session_id: &str, done: impl FnOnce(Result<(), String>) + 'static) {
        let (core, agent, id) = (self.core().clone(), self.agent(), session_id.to_owned());
        runtime::call(
            async move { core.chat.cancel_subagent(&agent, &id).map_err(String::from) },
            done,
        );
    }

    /// Sends the last prompt again (`Retry`).
    pub fn retry(&self, done: impl FnOnce(Result<(), String>) + 'static) {
        let (core, agent) = (self.core().clone(), self.agent());
        runtime::call(
            async move { core.chat.retry(&agent).map(|_| ()).map_err(String::from) },
            done,
        );
    }

    /// Forks the conversation before message `before` (or whole): the new
    /// conversation becomes the current one (`Fork`).
    /// `text` follows the transcript in the new conversation's draft.
    pub fn fork(
        &self,
        before: Option<String>,
        text: Option<String>,
        done: impl FnOnce(Result<Forked, String>) + 'static,
    ) {
        let (core, agent) = (self.core().clone(), self.agent());
        runtime::call(
            async move {
                core.chat
                    .fork_with(&agent, before.as_deref(), text.as_deref(), false)
                    .await
                    .map_err(String::from)
            },
            done,
        );
    }

    /// Whether the agent takes a message during a turn (`Steer`).
    pub fn can_steer(&self) -> bool {
        self.core().chat.can_steer(&self.agent())
    }

    /// Sends `text` into the running turn; on failure `done` gets the
    /// text back with the reason.
    pub fn steer(&self, text: String, done: impl FnOnce(Result<(), (String, String)>) + 'static) {
        let (core, agent) = (self.core().clone(), self.agent());
        runtime::call(
            async move {
                core.chat
                    .steer(&agent, &text)
                    .map(|_| ())
                    .map_err(|e| (e.to_string(), text))
            },
            done,
        );
    }

    /// Keeps the draft of conversation `key` ('' for a new one).
    pub fn save_draft(&self, key: &str, draft: Draft) {
        if let Err(e) = self.core().chat.set_draft_of(&self.agent(), key, draft) {
            tracing::debug!(error = %e, "the draft was not kept");
        }
    }

    /// Reads the draft of conversation `key`.
    pub fn load_draft(&self, key: &str, done: impl FnOnce(Draft) + 'static) {
        let (core, agent, key) = (self.core().clone(), self.agent(), key.to_owned());
        runtime::call(
            async move { core.chat.draft_of(&agent, &key).await.unwrap_or_default() },
            done,
        );
    }
}

impl ConversationObject {
    /// The id of the conversation this one was forked from ("" for none).
    pub fn forked_from_id(&self) -> String {
        self.forked_from_id_cell()
    }

    /// The ids of the queued messages, in the order they will be sent.
    pub fn queued_ids(&self) -> Vec<String> {
        let Some(store) = self.loaded_messages() else {
            return Vec::new();
        };
        (0..store.n_items())
            .filter_map(|i| store.item(i).and_downcast::<super::MessageObject>())
            .filter(|m| m.with(|m| m.queued).unwrap_or(false))
            .map(|m| m.id())
            .collect()
    }

    /// The text of a message shown (its text parts).
    pub fn message_text(&self, id: &str) -> Option<String> {
        let store = self.loaded_messages()?;
        (0..store.n_items())
            .rev()
            .filter_map(|i| store.item(i).and_downcast::<super::MessageObject>())
            .find(|m| m.id() == id)
            .and_then(|m| m.with(|m| m.text()))
    }

    /// Whether the conversation's last turn failed, was stopped or refused
    /// (Retry is offered), while no turn runs.
    pub fn last_turn_failed(&self) -> bool {
        use crate::core::types::message::Role;
        use agent_client_protocol_schema::v1::StopReason;
        if self.answering() {
            return false;
        }
        let Some(store) = self.loaded_messages() else {
            return false;
        };
        let Some(last) = store
            .item(store.n_items().saturating_sub(1))
            .and_downcast::<super::MessageObject>()
        else {
            return false;
        };
        use crate::core::types::message::MessageCode;
        last.with(|m| match m.role {
            Role::Agent => {
                m.error.is_some()
                    || matches!(m.stop_reason, Some(StopReason::Cancelled | StopReason::Refusal))
            }
            Role::System => matches!(
                m.code,
                Some(MessageCode::AgentUnavailable | MessageCode::TurnAbandoned)
            ),
            Role::User => false,
        })
        .unwrap_or(false)
    }
}
