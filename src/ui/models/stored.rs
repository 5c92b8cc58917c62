//! The agent's stored conversations, from the window: find in the open
//! one, list them, New, Open, Delete, Rename, and export as Markdown.

use gtk::glib;

use super::conversation::ConversationObject;
use crate::ui::runtime;

impl ConversationObject {
    /// The ids of the conversation's messages whose text contains `query`
    /// (lower case), loaded or not, in order.
    pub fn find(&self, query: &str) -> Vec<String> {
        self.core()
            .chat
            .messages_range(&self.agent(), 0, usize::MAX)
            .into_iter()
            .filter(|m| m.text().to_lowercase().contains(query))
            .map(|m| m.id)
            .collect()
    }

    /// The stored conversations, newest first (and the agent's own
    /// sessions Parley has not stored).
    pub fn list_conversations(
        &self,
        done: impl FnOnce(Result<crate::core::chat::Conversations, String>) + 'static,
    ) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(
            async move { core.chat.list(&agent, 0, 10_000).await.map_err(String::from) },
            done,
        );
    }

    /// `New`, `Open`, `Delete`, `Rename` of a conversation. A switch
    /// shows at once (its event, a frame later, then finds it shown).
    pub fn conversation_action(
        &self,
        what: ConversationAction,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let agent = self.agent();
        let switches = matches!(
            what,
            ConversationAction::New | ConversationAction::NewInWorktree | ConversationAction::Open(_)
        );
        let done = glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |r: Result<(), String>| {
                if switches && r.is_ok() {
                    if let Ok((conv, _)) = this.core().chat.conversation_tail(&this.agent(), 0) {
                        this.apply_switched(conv.id.as_deref(), conv.read_only.as_deref());
                    }
                }
                done(r);
            }
        );
        runtime::call(
            async move {
                match what {
                    ConversationAction::New => core.chat.new_conversation(&agent),
                    ConversationAction::NewInWorktree => {
                        core.chat.new_in_worktree(&agent, None).await.map(|_| ())
                    }
                    ConversationAction::Open(id) => core.chat.switch_to(&agent, &id).await,
                    ConversationAction::Delete(id) => core.chat.delete(&agent, &id).await,
                    ConversationAction::Rename(id, title) => core.chat.rename(&agent, &id, &title),
                }
                .map_err(String::from)
            },
            done,
        );
    }

    /// The current conversation as Markdown.
    pub fn export(&self) -> Result<String, String> {
        self.core().chat.export(&self.agent()).map_err(String::from)
    }
}

/// What `conversation_action` does.
pub enum ConversationAction {
    New,
    /// A new conversation in a worktree of its own (`NewInWorktree`).
    NewInWorktree,
    Open(String),
    Delete(String),
    Rename(String, String),
}
