//! An agent's helper (a subagent): a child session the agent started and
//! announced with `subagent_update`. What the conversation keeps of it
//! (`Subagent`), how it is doing (`SubagentStatus`), its thread as
//! `ChatService.Conversation` returns it (`SubagentThread`); what one
//! session told another is a `session_note::SessionNote`.

use agent_client_protocol_schema::v1 as acp;
use serde::{Deserialize, Serialize};

use super::message::Message;

/// At most this many children are kept per conversation: an agent could
/// announce a new one with every update.
pub const MAX_SUBAGENTS: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SubagentStatus {
    /// Announced without a state, or running.
    #[default]
    Working,
    /// Blocked on the user (a permission request, a question).
    Waiting,
    Done,
    Failed,
    Cancelled,
    /// The agent cannot tell (`unknown`, or a state of the future).
    Unknown,
}

impl SubagentStatus {
    /// Whether the child may still do something of its own.
    pub fn is_active(self) -> bool {
        matches!(self, SubagentStatus::Working | SubagentStatus::Waiting)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Subagent {
    /// The child's own ACP session id.
    pub session_id: String,
    /// The session that started it: the conversation's, or another
    /// child's (a child's child nests).
    pub parent: String,
    /// Its title, else the first line of its description, else "".
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub status: SubagentStatus,
    /// The stop reason the agent gave when it went idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Why it failed, when the agent said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its capabilities allow `session/cancel` now.
    pub can_cancel: bool,
    /// The parent's tool call that links it (a `session` content), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<String>,
    /// What it does now, in one short line (its last tool call's title or
    /// its last line of text).
    #[serde(default)]
    pub summary: String,
    /// Working, it has sent nothing for `limits.turnSilenceWarning`: it is
    /// the one not responding (not its parent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stalled: bool,
}

impl Subagent {
    pub fn new(session_id: &str, parent: &str) -> Self {
        Subagent {
            session_id: session_id.to_owned(),
            parent: parent.to_owned(),
            ..Default::default()
        }
    }

    /// Applies one `subagent_update`: omitted fields keep their values,
    /// `null` clears them. Answers whether anything changed.
    pub fn patch(&mut self, u: &acp::SubagentUpdate) -> bool {
        use agent_client_protocol_schema::MaybeUndefined as M;
        let before = self.clone();
        match &u.description {
            M::Value(d) => {
                self.description = d
                    .lines()
                    .map(|l| one_line(l, 2000))
                    .collect::<Vec<_>>()
                    .join("\n")
                    .chars()
                    .take(2000)
                    .collect()
            }
            M::Null => self.description.clear(),
            M::Undefined => {}
        }
        match &u.title {
            M::Value(t) => self.title = one_line(t, 200),
            M::Null => self.title.clear(),
            M::Undefined => {}
        }
        // Codex announces its children without a title: the task's first
        // line stands for one.
        if self.title.is_empty() {
            self.title = one_line(self.description.lines().next().unwrap_or(""), 200);
        }
        match &u.capabilities {
            M::Value(c) => self.can_cancel = c.cancel.is_some(),
            M::Null => self.can_cancel = false,
            M::Undefined => {}
        }
        match &u.state {
            M::Value(s) => {
                self.set_state(s);
                self.stalled = false;
            }
            M::Null => self.status = SubagentStatus::Unknown,
            M::Undefined => {}
        }
        *self != before
    }

    fn set_state(&mut self, state: &acp::StateUpdate) {
        let wire = serde_json::to_value(state).unwrap_or_default();
        let word = |key: &str| {
            wire.get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        self.stop_reason = None;
        self.error = None;
        self.status = match word("state").as_deref() {
            Some("running") => SubagentStatus::Working,
            Some("requires_action") => SubagentStatus::Waiting,
            Some("idle") => {
                let reason = word("stopReason");
                self.stop_reason = reason.as_deref().map(|r| one_line(r, 64));
                match reason.as_deref() {
                    Some("cancelled") => SubagentStatus::Cancelled,
                    Some("error" | "refusal") => {
                        // A JSON-RPC error object (`error.message`).
                        self.error = wire
                            .pointer("/error/message")
                            .and_then(serde_json::Value::as_str)
                            .map(|m| one_line(m, 500));
                        SubagentStatus::Failed
                    }
                    _ => SubagentStatus::Done,
                }
            }
            _ => SubagentStatus::Unknown,
        };
    }
}

/// A child with its messages, as `ChatService.Conversation` returns it:
/// never merged into its parent's parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentThread {
    #[serde(flatten)]
    pub subagent: Subagent,
    pub messages: Vec<Message>,
}

/// `text` without control characters, on one line, at most `max` chars.
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for (n, c) in text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .enumerate()
    {
        if n == max {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out.trim().to_owned()
}

/// The harness's tags around a child's report
/// (`<tools-used-before-summary>Read, Write</tools-used-before-summary>`)
/// are the harness's, not anyone's words: taken out.
pub fn without_harness_tags(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some(start) = out.find("<tools-used-before-summary>") {
        let end_tag = "</tools-used-before-summary>";
        match out[start..].find(end_tag) {
            Some(end) => out.replace_range(start..start + end + end_tag.len(), ""),
            None => break,
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(v: serde_json::Value) -> acp::SubagentUpdate {
        serde_json::from_value(v).expect("a subagent_update")
    }

    #[test]
    fn a_patch_keeps_what_it_omits_and_clears_what_is_null() {
        let mut s = Subagent::new("c1", "p");
        assert!(s.patch(&update(
            json!({"sessionId": "c1", "description": "Find the tests\nand more",
            "capabilities": {}})
        )));
        assert_eq!(s.title, "Find the tests");
        assert!(!s.can_cancel);
        assert_eq!(s.status, SubagentStatus::Working);
        s.patch(&update(json!({"sessionId": "c1", "title": "Explore",
            "capabilities": {"cancel": {}}, "state": {"state": "requires_action"}})));
        assert_eq!(
            (s.title.as_str(), s.can_cancel, s.status),
            ("Explore", true, SubagentStatus::Waiting)
        );
        s.patch(&update(
            json!({"sessionId": "c1", "state": {"state": "idle", "stopReason": "cancelled"},
            "capabilities": {"cancel": null}}),
        ));
        assert_eq!(s.status, SubagentStatus::Cancelled);
        assert_eq!(s.stop_reason.as_deref(), Some("cancelled"));
        assert!(!s.can_cancel);
        assert!(!s.patch(&update(json!({"sessionId": "c1"}))), "nothing changed");
        s.patch(&update(json!({"sessionId": "c1",
            "state": {"state": "idle", "stopReason": "error",
                "error": {"code": -32603, "message": "out of\u{7}tokens"}}})));
        assert_eq!(s.status, SubagentStatus::Failed);
        assert_eq!(s.error.as_deref(), Some("out of tokens"));
        s.patch(&update(
            json!({"sessionId": "c1", "state": {"state": "_thinking_hard"}}),
        ));
        assert_eq!(s.status, SubagentStatus::Unknown);
        s.patch(&update(
            json!({"sessionId": "c1", "state": {"state": "idle", "stopReason": "end_turn"}}),
        ));
        assert_eq!(s.status, SubagentStatus::Done);
    }

    #[test]
    fn harness_tags_are_taken_out() {
        let text = "<tools-used-before-summary>Read, Write</tools-used-before-summary>\nThe tests pass.";
        assert_eq!(without_harness_tags(text), "The tests pass.");
        assert_eq!(
            without_harness_tags("<tools-used-before-summary>open"),
            "<tools-used-before-summary>open"
        );
    }
}
