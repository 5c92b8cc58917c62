//! The chat's state: one conversation per agent (`Conv`), what waits in
//! it, the service's handle and its errors. The other files of the chat are
//! `impl ChatService` blocks over it, each one part of the service; this
//! one imports none of them.
//!
//! What every part uses is brought in here once (`pub(super) use`).

pub(super) use std::collections::{HashMap, VecDeque};
pub(super) use std::sync::atomic::{AtomicU64, Ordering};
pub(super) use std::sync::{Arc, Mutex};

pub(super) use agent_client_protocol_schema::v1 as acp;
pub(super) use serde::Serialize;
pub(super) use serde_json::value::RawValue;
pub(super) use serde_json::{json, Value};

pub(super) use crate::core::acp::{calls, Responder, RpcError};
pub(super) use crate::core::events::{
    self, ElicitationRequest, ElicitationResolved, Event, EventSender, MessageUpdated, PermissionRequest,
    PermissionResolved, TurnChanged,
};
pub(super) use crate::core::history::service::HistoryService;
pub(super) use crate::core::supervisor::{AgentClient, AgentService};
pub(super) use crate::core::types::message::{
    self, Command, Message, MessageCode, Part, PermissionOption, Role, ToolCall, Usage,
};
pub(super) use crate::i18n::{gettext, gettext_f};

/// At most this many attachments go with one message.
pub const MAX_ATTACHMENTS: usize = 20;
/// No attachment is larger (an image is sent whole, base64-encoded).
pub const MAX_ATTACHMENT_BYTES: u64 = 10 * 1024 * 1024;

pub(super) struct PendingPermission {
    pub(super) request: PermissionRequest,
    pub(super) responder: Responder,
    pub(super) since: std::time::SystemTime,
}

#[derive(Default)]
pub(super) struct Conv {
    pub(super) messages: Vec<Message>,
    /// What giant text parts had cut from their start, by message id and
    /// part (see `types::long_text`).
    pub(super) cuts: HashMap<(String, usize), crate::core::types::long_text::Cut>,
    /// The busy agents sharing a folder with this one that it was last
    /// told of (see `shared_folders`).
    pub(super) shared_with: Vec<String>,
    /// The worktree this conversation works in, if any.
    pub(super) worktree: Option<crate::core::worktrees::Worktree>,
    pub(super) busy: bool,
    /// Ids of the queued user messages, oldest first.
    pub(super) queue: VecDeque<String>,
    pub(super) usage: Usage,
    pub(super) commands: Vec<Command>,
    pub(super) permissions: Vec<PendingPermission>,
    /// The ACP session and the agent generation it belongs to.
    pub(super) session: Option<(acp::SessionId, u64)>,
    pub(super) had_session: bool,
    /// `session/new` is in flight: updates for an unknown session are kept.
    pub(super) opening_session: bool,
    pub(super) early: Vec<(String, acp::SessionUpdate)>,
    /// The agent message being streamed.
    pub(super) current: Option<usize>,
    /// The `messageId` of the last text chunk that had one.
    pub(super) chunk_message: Option<String>,
    pub(super) rejections: u32,
    /// The tool calls whose permission was refused in this turn: if the
    /// agent never closes them, the turn's end does, saying so.
    pub(super) rejected: Vec<String>,
    pub(super) cancelling: bool,
    /// User messages the agent refused for want of a sign-in, oldest
    /// first: they are sent again once a sign-in succeeds.
    pub(super) awaiting_sign_in: Vec<String>,
    /// The session's pickers (config options, legacy modes and models).
    pub(super) options: Vec<crate::core::types::options::SessionOption>,
    /// The session's title, from `session_info_update`.
    pub(super) title: Option<String>,
    /// The conversation's id in the history, once it has a row.
    pub(super) conversation: Option<String>,
    /// The agent session the conversation last had: resumed (or loaded)
    /// when the agent is started again.
    pub(super) stored_session: Option<String>,
    /// Opened from the history: it never silently gets a new session.
    pub(super) from_history: bool,
    /// Why the conversation cannot go on (its agent can neither resume nor
    /// load sessions); `Send` is refused.
    pub(super) read_only: Option<String>,
    /// Which conversation this is: new with each New or Open
    /// (`leave_current`), so that a session opened for one conversation
    /// is not given to the one the user went on to meanwhile.
    pub(super) serial: u64,
    /// Counts what the agent sent in the turn (updates, requests): the
    /// silence watch compares it over time, so no clock is read per chunk.
    pub(super) activity: u64,
    /// The turn is marked "not responding".
    pub(super) stalled: bool,
    /// The turn's prompt gives up when notified (a Cancel not answered).
    pub(super) give_up: Option<Arc<tokio::sync::Notify>>,
    pub(super) elicitations: Vec<PendingElicitation>,
    /// Steering prompts sent in the running turn and not yet answered;
    /// `steered` is told each time one is.
    pub(super) steering: u32,
    pub(super) steered: Arc<tokio::sync::Notify>,
    /// The turn's `session/prompt` is on its way: only then may a steering
    /// prompt follow it.
    pub(super) prompt_sent: bool,
    /// Where the conversation was forked from (`Fork`).
    pub(super) forked_from: Option<crate::core::history::places::ForkedFrom>,
    /// The last turn's answer, until the user has seen it (`MarkSeen`).
    pub(super) unseen: Option<(String, std::time::SystemTime)>,
    /// The helpers the agent started in this conversation, in the order
    /// they were announced (a child's child too; see `subagents`).
    pub(super) subagents: Vec<Child>,
}

/// A subagent and its own thread: a conversation of its own (its updates
/// are applied as a conversation's are), never the parent's parts.
pub(super) struct Child {
    pub(super) info: crate::core::types::subagent::Subagent,
    pub(super) conv: Box<Conv>,
    /// Counts what it sent: the silence watch compares it over time.
    pub(super) activity: u64,
    /// When its summary was last sent (a summary of text is sent at most
    /// every `SUMMARY_EVERY`).
    pub(super) summary_at: Option<std::time::Instant>,
    /// `activity` when its thread was last written whole to the history.
    pub(super) kept: Option<u64>,
}

impl Conv {
    pub(super) fn queued_count(&self) -> usize {
        self.queue.len()
    }
}

/// Why a `ChatService` call was refused. The text is what `parley-cli`
/// answers and the window's toast shows (translated).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub enum ChatError {
    EmptyText,
    UnknownAgent(String),
    NoSuchPermission(String),
    NoSuchOption(String, String),
    /// The session has no option of this id.
    NoSuchControl(String),
    /// The option does not offer this value.
    NotOffered(String, String),
    /// The agent refused a change: its words.
    Refused(String),
    /// The agent could not be started or its session opened.
    Unavailable(String),
    /// An attachment was refused: why.
    Attachment(String),
    TooManyAttachments,
    /// New, Open or Delete while the agent's turn runs.
    Busy,
    NoSuchConversation(String),
    /// The conversation is read-only: why.
    ReadOnly(String),
    /// The history could not be read or written.
    History(String),
    NoSuchElicitation(String),
    /// An elicitation's answer does not fit what was asked: why.
    InvalidAnswer(String),
    /// Changes, a revert or an undo could not be done: why.
    Checkpoint(crate::core::checkpoints::CheckpointError),
    /// `EditQueued`, `SendNow`: the message is not (or no longer) queued.
    NotQueued(String),
    /// `Retry`: the conversation has no prompt to send again.
    NothingToRetry,
    /// `Fork`: the message is not one of the conversation's.
    NoSuchMessage(String),
    /// `Steer`: the agent offers no way to take a message during a turn.
    NoSteering,
    /// `Steer`: no turn is running.
    NotAnswering,
    /// A worktree could not be made, applied, merged or let go: why.
    Worktree(crate::core::worktrees::WorktreeError),
    /// `CancelSubagent`: the conversation has no such subagent.
    NoSuchSubagent(String),
    /// `CancelSubagent`: the agent does not let this subagent be
    /// cancelled (its title).
    CannotCancel(String),
}

impl ChatError {
    // In a function body, not the attribute: xgettext finds them here.
    pub(super) fn text(&self) -> String {
        match self {
            ChatError::EmptyText => gettext("the message is empty"),
            ChatError::UnknownAgent(name) => gettext_f("unknown agent: {name}", &[("name", name)]),
            ChatError::NoSuchPermission(id) => gettext_f("no pending permission request {id}", &[("id", id)]),
            ChatError::NoSuchOption(id, option) => gettext_f(
                "the request {id} has no option {option}",
                &[("id", id), ("option", option)],
            ),
            ChatError::NoSuchControl(id) => gettext_f("the session has no option {id}", &[("id", id)]),
            ChatError::NotOffered(id, value) => gettext_f(
                "the option {id} does not offer {value}",
                &[("id", id), ("value", value)],
            ),
            ChatError::Refused(why) => gettext_f("the agent refused: {why}", &[("why", why)]),
            ChatError::Unavailable(why) | ChatError::ReadOnly(why) | ChatError::History(why) => why.clone(),
            ChatError::Attachment(why) | ChatError::InvalidAnswer(why) => why.clone(),
            ChatError::Checkpoint(e) => e.to_string(),
            ChatError::NoSuchElicitation(id) => gettext_f("no pending elicitation {id}", &[("id", id)]),
            ChatError::Busy => gettext("the agent is answering; cancel its turn first"),
            ChatError::NotQueued(id) => gettext_f("the message {id} is not queued", &[("id", id)]),
            ChatError::NoSteering => {
                gettext("this agent takes no message while it answers; queue it instead")
            }
            ChatError::NotAnswering => gettext("the agent is not answering"),
            ChatError::Worktree(e) => e.to_string(),
            ChatError::NoSuchSubagent(id) => {
                gettext_f("the conversation has no subagent {id}", &[("id", id)])
            }
            ChatError::CannotCancel(title) => gettext_f(
                "the agent does not let the subagent “{title}” be cancelled",
                &[("title", title)],
            ),
            ChatError::NothingToRetry => gettext("the conversation has no message to send again"),
            ChatError::NoSuchMessage(id) => gettext_f("the conversation has no message {id}", &[("id", id)]),
            ChatError::NoSuchConversation(id) => gettext_f("no conversation {id}", &[("id", id)]),
            ChatError::TooManyAttachments => gettext_f(
                "at most {count} attachments go with one message",
                &[("count", &MAX_ATTACHMENTS.to_string())],
            ),
        }
    }
}

impl From<ChatError> for String {
    fn from(e: ChatError) -> Self {
        e.to_string()
    }
}

/// `ChatService.Conversation`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    /// Its id in the history (none until its first message, or when no
    /// history is kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Why it cannot go on, when it is read-only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<String>,
    pub messages: Vec<Message>,
    pub busy: bool,
    pub queued: usize,
    pub usage: Usage,
    pub commands: Vec<Command>,
    pub permissions: Vec<PermissionRequest>,
    /// The session's options (the pickers by the composer).
    pub options: Vec<crate::core::types::options::SessionOption>,
    /// Where it was forked from (`Fork`); omitted when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<crate::core::history::places::ForkedFrom>,
    /// The agent's helpers, each with its own thread (omitted when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<crate::core::types::subagent::SubagentThread>,
}

pub(super) struct ChatInner {
    pub(super) convs: Mutex<HashMap<String, Conv>>,
    /// One session is opened at a time per agent (a turn and the window's
    /// pickers may both ask for it).
    pub(super) openers: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The options each agent offered at its last session in this run (for
    /// `Validate`'s warnings about defaults).
    pub(super) offered: Mutex<HashMap<String, Vec<crate::core::types::options::SessionOption>>>,
    pub(super) events: EventSender,
    pub(super) supervisor: AgentService,
    pub(super) next_id: AtomicU64,
    /// The next `Conv::serial`.
    pub(super) conv_serial: AtomicU64,
    /// Where conversations are kept, and the recorder that writes them.
    pub(super) history: HistoryService,
    /// The turns' snapshots (what the agent changed).
    pub(super) checkpoints: crate::core::checkpoints::CheckpointService,
    /// The conversations' worktrees (a conversation may work in one).
    pub(super) worktrees: crate::core::worktrees::WorktreeService,
    /// The files under the agents' working directories, for @-mentions.
    pub(super) files: crate::core::files::FileIndexes,
    /// Sessions left open in their agent's process by New or Open (agents
    /// without `session/close`): switching back takes them up again.
    pub(super) live: Mutex<HashMap<String, Vec<LiveSession>>>,
    /// The configuration's `permissions`, as applied.
    pub(super) rules: Mutex<Vec<crate::core::config::model::PermissionRule>>,
    /// `limits.turnSilenceWarning` (`None`: never).
    pub(super) silence: Mutex<Option<std::time::Duration>>,
    /// The (agent, update kind) pairs already named in the agent's log as
    /// not shown or not understood.
    pub(super) unshown: Mutex<std::collections::HashSet<(String, String)>>,
    /// Per agent: whether its session is set up and whether its mode that
    /// asks nothing was said (`unasked`).
    pub(super) unasked: Mutex<HashMap<String, Unasked>>,
}

/// Per agent, for `unasked`: whether a mode that asks nothing is judged
/// yet, and was said.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Unasked {
    /// The session is open and its defaults set.
    pub(super) ready: bool,
    /// Said in this conversation.
    pub(super) told: bool,
}

#[derive(Clone)]
pub struct ChatService {
    pub(super) inner: Arc<ChatInner>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long the agent has to end its turn after a Cancel before Parley ends it.
pub const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

pub(super) enum TurnEnd {
    Stop(acp::StopReason),
    Error(String),
    /// The agent wants a sign-in first (its words).
    SignIn(String),
}

impl ChatService {
    pub(super) fn next_id(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(super) fn emit(&self, e: Event) {
        // A mode that edits and runs commands without asking is said once
        // in the conversation (`unasked`); callers may hold the
        // conversations' lock here, so it is said after.
        let unasked = match &e {
            Event::SessionChanged(s) => self
                .unasked_due(&s.agent, &s.options)
                .map(|m| (s.agent.clone(), m)),
            _ => None,
        };
        if let Some(agent) = self.inner.history.record(&e) {
            self.conversations_changed(&agent);
        }
        events::emit(&self.inner.events, e);
        if let Some((agent, mode)) = unasked {
            self.say_asks_nothing_later(agent, mode);
        }
    }

    pub(super) fn emit_message(&self, m: &Message) {
        self.emit(Event::MessageUpdated(MessageUpdated {
            agent: m.agent.clone(),
            message: m.clone(),
        }));
    }

    pub(super) fn emit_turn(&self, agent: &str, c: &Conv) {
        self.emit(Event::TurnChanged(TurnChanged {
            agent: agent.to_owned(),
            busy: c.busy,
            queued: c.queued_count(),
        }));
    }
}

/// An elicitation waiting for the user.
pub(super) struct PendingElicitation {
    pub request: ElicitationRequest,
    pub responder: Responder,
}

/// A session left open in the agent's process (`generation`), with what
/// the conversation had of it.
pub(super) struct LiveSession {
    pub(super) sid: acp::SessionId,
    pub(super) generation: u64,
    pub(super) options: Vec<crate::core::types::options::SessionOption>,
    pub(super) commands: Vec<crate::core::types::message::Command>,
}
