//! The spec's events ("Events from Go to the interface" and the conversation
//! events), serialised exactly as `{"event": NAME, "payload": {…}}` with the
//! spec's names and camelCase fields. Every front end (the window's bridge,
//! `parley-cli`) receives these and nothing else.

use serde::Serialize;

pub use crate::core::auth::AuthStatus;
use crate::core::types::message::{Message, Part, PartKind, PermissionOption, ToolCall, Usage};
use crate::core::types::options::SessionOption;
use crate::core::types::problem::Problem;
use crate::core::types::AgentState;

/// The events and their spec names, written once: the macro makes both the
/// serde names and [`Event::name`].
macro_rules! events {
    ($($variant:ident($payload:ty) = $name:literal,)*) => {
        #[derive(Debug, Clone, Serialize, PartialEq)]
        #[serde(tag = "event", content = "payload")]
        pub enum Event {
            $(#[serde(rename = $name)] $variant($payload),)*
        }

        impl Event {
            /// The spec's name of the event, e.g. `agent:state`.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Event::$variant(_) => $name,)*
                }
            }

            /// Every event name, in the spec's order.
            pub const NAMES: &'static [&'static str] = &[$($name,)*];
        }
    };
}

events! {
    ConfigChanged(ConfigChanged) = "config:changed",
    AgentState(AgentStateChanged) = "agent:state",
    AgentLog(AgentLog) = "agent:log",
    MessageUpdated(MessageUpdated) = "message:updated",
    MessageDelta(MessageDelta) = "message:delta",
    TurnChanged(TurnChanged) = "turn:changed",
    PermissionRequested(PermissionRequest) = "permission:requested",
    PermissionResolved(PermissionResolved) = "permission:resolved",
    UsageChanged(UsageChanged) = "usage:changed",
    MessageRemoved(MessageRemoved) = "message:removed",
    AuthChanged(AuthStatus) = "auth:changed",
    TerminalOutput(TerminalOutput) = "terminal:output",
    TerminalExited(TerminalExited) = "terminal:exited",
    SessionChanged(SessionChanged) = "session:changed",
    ConversationSwitched(ConversationSwitched) = "conversation:switched",
    ConversationsChanged(ConversationsChanged) = "conversations:changed",
    HistoryStatus(HistoryStatus) = "history:status",
    RegistryProgress(Progress) = "registry:progress",
    RegistryChanged(Changed) = "registry:changed",
    TurnStalled(TurnStalled) = "turn:stalled",
    ElicitationRequested(ElicitationRequest) = "elicitation:requested",
    ElicitationResolved(ElicitationResolved) = "elicitation:resolved",
    ChangesUpdated(ChangesUpdated) = "changes:updated",
    QueueChanged(QueueChanged) = "queue:changed",
    DraftChanged(DraftChanged) = "draft:changed",
    SubagentStarted(SubagentChanged) = "subagent:started",
    SubagentUpdated(SubagentChanged) = "subagent:updated",
    SubagentEnded(SubagentChanged) = "subagent:ended",
    SubagentDelta(SubagentDelta) = "subagent:delta",
}

impl Event {
    /// The agent the event concerns, if any.
    pub fn agent(&self) -> Option<&str> {
        match self {
            Event::ConfigChanged(_) => None,
            Event::AgentState(e) => Some(&e.agent),
            Event::AgentLog(e) => Some(&e.agent),
            Event::MessageUpdated(e) => Some(&e.agent),
            Event::MessageDelta(e) => Some(&e.agent),
            Event::TurnChanged(e) => Some(&e.agent),
            Event::PermissionRequested(e) => Some(&e.agent),
            Event::PermissionResolved(e) => Some(&e.agent),
            Event::UsageChanged(e) => Some(&e.agent),
            Event::MessageRemoved(e) => Some(&e.agent),
            Event::AuthChanged(e) => Some(&e.agent),
            Event::TerminalOutput(e) => Some(&e.agent),
            Event::TerminalExited(e) => Some(&e.agent),
            Event::SessionChanged(e) => Some(&e.agent),
            Event::ConversationSwitched(e) => Some(&e.agent),
            Event::ConversationsChanged(e) => Some(&e.agent),
            Event::TurnStalled(e) => Some(&e.agent),
            Event::ElicitationRequested(e) => Some(&e.agent),
            Event::ElicitationResolved(e) => Some(&e.agent),
            Event::ChangesUpdated(e) => Some(&e.agent),
            Event::QueueChanged(e) => Some(&e.agent),
            Event::DraftChanged(e) => Some(&e.agent),
            Event::SubagentStarted(e) | Event::SubagentUpdated(e) | Event::SubagentEnded(e) => Some(&e.agent),
            Event::SubagentDelta(e) => Some(&e.delta.agent),
            Event::HistoryStatus(_) | Event::RegistryProgress(_) | Event::RegistryChanged(_) => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConfigChanged {
    pub path: String,
    pub valid: bool,
    pub problems: Vec<Problem>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AgentStateChanged {
    pub agent: String,
    pub state: AgentState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub outdated: bool,
    /// Where the agent runs (its `host`), when not here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AgentLog {
    pub agent: String,
    pub line: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MessageUpdated {
    pub agent: String,
    pub message: Message,
}

/// `text` is appended to the part at `index` (text, thought), or `part`
/// replaces it (tool, plan). An index one past the end adds the part.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MessageDelta {
    pub agent: String,
    pub message_id: String,
    pub index: usize,
    pub kind: PartKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<Part>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TurnChanged {
    pub agent: String,
    pub busy: bool,
    pub queued: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    pub id: String,
    pub agent: String,
    pub message_id: String,
    pub tool_call: ToolCall,
    pub options: Vec<PermissionOption>,
    pub rejections: u32,
    /// The helper that asks, when a subagent's session asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent: Option<Asker>,
}

/// Which subagent asks (a permission, a question).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Asker {
    pub session_id: String,
    pub title: String,
}

/// `subagent:started|updated|ended`: a helper of the agent was announced,
/// changed (its title, status, capabilities or what it does now), or
/// stopped working (done, failed or cancelled).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SubagentChanged {
    pub agent: String,
    pub subagent: crate::core::types::subagent::Subagent,
}

/// `subagent:delta`: a `message:delta` of a helper's own thread.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SubagentDelta {
    pub session_id: String,
    #[serde(flatten)]
    pub delta: MessageDelta,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PermissionResolved {
    pub id: String,
    pub agent: String,
}

/// `turn:stalled`: the agent has sent nothing in its turn for
/// `changes:updated`: a turn's checkpoints were recorded, or a revert or
/// the review changed what the conversation's Changes show.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ChangesUpdated {
    pub agent: String,
    pub conversation: String,
    pub turn: String,
    /// Files the conversation's turns changed, in all.
    pub files_changed: usize,
}

/// `limits.turnSilenceWarning` (`stalled`), or has again (`!stalled`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TurnStalled {
    pub agent: String,
    pub stalled: bool,
    /// Seconds without a word, when stalled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silent_for: Option<u64>,
}

/// `elicitation:requested`: the agent asks the user for values (`form`,
/// with the JSON schema of what it asks) or to visit a URL (`url`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRequest {
    pub id: String,
    pub agent: String,
    /// The agent message of the turn it came in, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    pub message: String,
    /// `form` or `url`.
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The agent's id of a URL elicitation (`elicitation/complete` names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// When it came (RFC 3339).
    pub since: String,
}

/// `elicitation:resolved`: answered (`accept`, `decline`, `cancel`), or
/// `complete` (the agent said so).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ElicitationResolved {
    pub id: String,
    pub agent: String,
    pub action: String,
}

/// `queue:changed`: the queue of an agent's conversation was reordered
/// (`EditQueued`, `SendNow`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QueueChanged {
    pub agent: String,
    /// The ids of the queued user messages, in the order they will be sent.
    pub queue: Vec<String>,
}

/// The draft of an agent's open conversation was set (`SetDraft`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DraftChanged {
    pub agent: String,
    pub draft: crate::core::types::draft::Draft,
}

/// A message left the conversation: a queued message deleted
/// (`EditQueued`), or the empty answer of a prompt that the agent refused
/// for want of a sign-in.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MessageRemoved {
    pub agent: String,
    pub message_id: String,
}

/// A terminal's command wrote `data` (text; a character split between two
/// reads comes whole in the next event).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TerminalOutput {
    pub agent: String,
    pub terminal_id: String,
    pub data: String,
}

/// A terminal's command ended (ACP's `TerminalExitStatus`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TerminalExited {
    pub agent: String,
    pub terminal_id: String,
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct UsageChanged {
    pub agent: String,
    pub usage: Usage,
}

/// Where the core sends its events. Unbounded: the spec forbids losing or
/// coalescing anything the core must report; front ends coalesce per frame.
pub type EventSender = async_channel::Sender<Event>;
pub type EventReceiver = async_channel::Receiver<Event>;

pub fn channel() -> (EventSender, EventReceiver) {
    async_channel::unbounded()
}

/// Sends an event; a closed channel (the front end is gone) is not an error
/// worth stopping anything for.
pub fn emit(tx: &EventSender, event: Event) {
    let _ = tx.try_send(event);
}

/// `session:changed`: the session's title (from `session_info_update`) or
/// its options (the pickers) changed. Carries both, whole.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionChanged {
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub options: Vec<SessionOption>,
}

/// `conversation:switched`: the agent's current conversation is another
/// (`New`, `Open`, `Delete` of the current one), or became read-only (its
/// agent can neither resume nor load sessions). `conversation` is absent
/// for a new conversation that has no message yet.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSwitched {
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    pub read_only: bool,
    /// Why it is read-only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `conversations:changed`: the agent's list of conversations changed (one
/// was added, titled, renamed or deleted): ask `List` again. `current` is
/// the id of the agent's current conversation (absent before its first
/// message, or when no history is kept).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConversationsChanged {
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
}

/// `history:status`: whether conversations are written to disk. Sent when
/// writing starts failing (a full disk, a read-only directory) or works
/// again, and at start when the history could not be opened for writing.
/// The conversations go on in memory either way. Also sent when a read
/// skipped rows it could not read (`skipped`, with a note in `error`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HistoryStatus {
    pub writable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many rows of the history a read (a list, a conversation opened,
    /// a search) could not read, not told before: each was skipped, or
    /// kept with what could be read of it. `error` then says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
}

/// `registry:progress`: an install's download or unpacking.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Progress {
    pub id: String,
    /// `download` or `unpack`.
    pub phase: &'static str,
    pub done: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// `registry:changed`: the registry was read again; these configured
/// agents have a newer version in it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Changed {
    pub updates: Vec<Update>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Update {
    pub agent: String,
    pub id: String,
    pub installed: String,
    pub available: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_name_is_the_name() {
        let e = Event::AgentLog(AgentLog {
            agent: "a".into(),
            line: "l".into(),
        });
        let wire = serde_json::to_value(&e).expect("json");
        assert_eq!(wire["event"], e.name());
        assert_eq!(Event::NAMES.len(), 29);
        let mut names = Event::NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 29, "distinct");
    }
}
