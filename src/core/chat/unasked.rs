//! A mode that asks nothing: when the agent's current mode lets it edit
//! files and run commands without asking the user (claude-agent-acp 0.101
//! and qwen-code start in `auto`), the conversation says so once (a
//! `session-warning`), and the composer shows it beside the pickers while
//! it lasts (`types::options::asking_nothing`). Judged only once a new
//! session's defaults (`startMode`) are set, so that a mode the user's
//! configuration replaces at once is not said.

use super::state::{lock, ChatService};
use crate::core::types::options::{asking_nothing, SessionOption};
use crate::i18n::gettext_f;

impl ChatService {
    /// A session is being opened: not judged until it is set up; a new
    /// one may be told again.
    pub(super) fn unasked_reset(&self, agent: &str, is_new: bool) {
        let mut all = lock(&self.inner.unasked);
        let u = all.entry(agent.to_owned()).or_default();
        u.ready = false;
        if is_new {
            u.told = false;
        }
    }

    /// The mode to say, if it is to be said now (and it is then marked
    /// said). Takes only its own lock: callers may hold the conversations'.
    pub(super) fn unasked_due(&self, agent: &str, options: &[SessionOption]) -> Option<String> {
        let mode = asking_nothing(options)?;
        let mut all = lock(&self.inner.unasked);
        let u = all.get_mut(agent).filter(|u| u.ready && !u.told)?;
        u.told = true;
        Some(mode)
    }

    /// The session is open and set up: its mode is judged from now on.
    pub(super) fn asks_nothing_ready(&self, agent: &str) {
        lock(&self.inner.unasked)
            .entry(agent.to_owned())
            .or_default()
            .ready = true;
        let options = lock(&self.inner.convs)
            .get(agent)
            .map(|c| c.options.clone())
            .unwrap_or_default();
        if let Some(mode) = self.unasked_due(agent, &options) {
            self.say_asks_nothing(agent, &mode);
        }
    }

    /// Said from a task of its own (the caller may hold the conversations'
    /// lock); without a runtime it is said at the next change instead.
    pub(super) fn say_asks_nothing_later(&self, agent: String, mode: String) {
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let this = self.clone();
                rt.spawn(async move { this.say_asks_nothing(&agent, &mode) });
            }
            Err(_) => {
                if let Some(u) = lock(&self.inner.unasked).get_mut(&agent) {
                    u.told = false;
                }
            }
        }
    }

    fn say_asks_nothing(&self, agent: &str, mode: &str) {
        self.session_warning(
            agent,
            gettext_f(
                "The mode “{mode}” lets the agent edit files and run commands without asking you. Choose another mode to be asked first.",
                &[("mode", mode)],
            ),
        );
    }
}
