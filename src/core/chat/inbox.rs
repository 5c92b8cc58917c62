//! `ChatService.Inbox`: what waits for the user, across agents.

use serde::Serialize;

use super::state::{lock, ChatService};
use crate::core::types::AgentState;
use crate::i18n::gettext;

/// `ChatService.Inbox`: one thing that waits for the user.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    /// `permission`, `elicitation`, `answer` (a turn ended unseen),
    /// `sign-in` or `error`.
    pub kind: &'static str,
    pub agent: String,
    /// The permission's or elicitation's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The message it belongs to, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// What it asks or says.
    pub text: String,
    /// Since when (RFC 3339), where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// The helper that asks, for a subagent's permission request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent: Option<crate::core::events::Asker>,
}

impl ChatService {
    /// What waits for the user in the conversations: permission and
    /// elicitation requests, and answers not seen yet; oldest first.
    pub fn inbox_items(&self) -> Vec<InboxItem> {
        let time = |t: std::time::SystemTime| humantime::format_rfc3339_millis(t).to_string();
        let convs = lock(&self.inner.convs);
        let mut items: Vec<InboxItem> = Vec::new();
        for (agent, c) in convs.iter() {
            for p in &c.permissions {
                items.push(InboxItem {
                    kind: "permission",
                    agent: agent.clone(),
                    id: Some(p.request.id.clone()),
                    message_id: Some(p.request.message_id.clone()).filter(|m| !m.is_empty()),
                    text: p.request.tool_call.title.clone(),
                    since: Some(time(p.since)),
                    subagent: p.request.subagent.clone(),
                });
            }
            for e in &c.elicitations {
                items.push(InboxItem {
                    kind: "elicitation",
                    agent: agent.clone(),
                    id: Some(e.request.id.clone()),
                    message_id: e.request.message_id.clone(),
                    text: e.request.message.clone(),
                    since: Some(e.request.since.clone()),
                    subagent: None,
                });
            }
            if let Some((id, when)) = &c.unseen {
                if !c.busy {
                    items.push(InboxItem {
                        kind: "answer",
                        agent: agent.clone(),
                        id: None,
                        message_id: Some(id.clone()),
                        text: gettext("The answer is complete."),
                        since: Some(time(*when)),
                        subagent: None,
                    });
                }
            }
        }
        items.sort_by(|a, b| a.since.cmp(&b.since));
        items
    }

    /// `ChatService.Inbox`: what waits for the user, across agents: the
    /// conversations' requests and unseen answers, then agents that need
    /// a sign-in or are in `error`.
    pub fn inbox(&self) -> Vec<InboxItem> {
        let mut items = self.inbox_items();
        for a in self.inner.supervisor.list() {
            if a.needs_sign_in {
                items.push(InboxItem {
                    kind: "sign-in",
                    agent: a.name.clone(),
                    id: None,
                    message_id: None,
                    text: gettext("sign-in needed"),
                    since: None,
                    subagent: None,
                });
            }
            if a.state == AgentState::Error {
                items.push(InboxItem {
                    kind: "error",
                    agent: a.name.clone(),
                    id: None,
                    message_id: None,
                    text: a.error.clone().unwrap_or_default(),
                    since: None,
                    subagent: None,
                });
            }
        }
        items
    }
}
