//! Conversations: one per agent, in memory. `ChatService` is built on
//! [`Chat`]; session updates arrive through [`AgentClient`] in the order the
//! agent sent them.

mod attachments;
mod client;
mod closing;
pub mod controls;
pub mod conversations;
mod elicitation;
pub mod message;
mod permissions;
pub mod rules;
mod session;
mod updates;

pub use attachments::{check_file, AttachmentInput, MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES};
pub use conversations::Conversations;
pub use elicitation::check_content as check_form;

use client::ChatClient;
use permissions::permission_outcome;
use updates::find_tool;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::core::acp::{calls, Responder, RpcError};
use crate::core::events::{
    self, ElicitationRequest, ElicitationResolved, Event, EventSender, MessageUpdated, PermissionRequest,
    PermissionResolved, TurnChanged,
};
use crate::core::supervisor::{AgentClient, Supervisor};
use crate::i18n::{gettext, gettext_f};
use message::{Command, Message, MessageCode, Part, PermissionOption, Role, ToolCall, Usage};

struct PendingPermission {
    request: PermissionRequest,
    responder: Responder,
    since: std::time::SystemTime,
}

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
}

#[derive(Default)]
struct Conv {
    messages: Vec<Message>,
    busy: bool,
    /// Ids of the queued user messages, oldest first.
    queue: VecDeque<String>,
    usage: Usage,
    commands: Vec<Command>,
    permissions: Vec<PendingPermission>,
    /// The ACP session and the agent generation it belongs to.
    session: Option<(acp::SessionId, u64)>,
    had_session: bool,
    /// `session/new` is in flight: updates for an unknown session are kept.
    opening_session: bool,
    early: Vec<(String, acp::SessionUpdate)>,
    /// The agent message being streamed.
    current: Option<usize>,
    rejections: u32,
    /// The tool calls whose permission was refused in this turn: if the
    /// agent never closes them, the turn's end does, saying so.
    rejected: Vec<String>,
    cancelling: bool,
    /// User messages the agent refused for want of a sign-in, oldest
    /// first: they are sent again once a sign-in succeeds.
    awaiting_sign_in: Vec<String>,
    /// The session's pickers (config options, legacy modes and models).
    options: Vec<controls::SessionOption>,
    /// The session's title, from `session_info_update`.
    title: Option<String>,
    /// The conversation's id in the history, once it has a row.
    conversation: Option<String>,
    /// The agent session the conversation last had: resumed (or loaded)
    /// when the agent is started again.
    stored_session: Option<String>,
    /// Opened from the history: it never silently gets a new session.
    from_history: bool,
    /// Why the conversation cannot go on (its agent can neither resume nor
    /// load sessions); `Send` is refused.
    read_only: Option<String>,
    /// Which conversation this is: new with each New or Open
    /// (`leave_current`), so that a session opened for one conversation
    /// is not given to the one the user went on to meanwhile.
    serial: u64,
    /// Counts what the agent sent in the turn (updates, requests): the
    /// silence watch compares it over time, so no clock is read per chunk.
    activity: u64,
    /// The turn is marked "not responding".
    stalled: bool,
    /// The turn's prompt gives up when notified (a Cancel not answered).
    give_up: Option<Arc<tokio::sync::Notify>>,
    elicitations: Vec<elicitation::PendingElicitation>,
    /// The last turn's answer, until the user has seen it (`MarkSeen`).
    unseen: Option<(String, std::time::SystemTime)>,
}

impl Conv {
    fn queued_count(&self) -> usize {
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
}

impl ChatError {
    // In a function body, not the attribute: xgettext finds them here.
    fn text(&self) -> String {
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
            ChatError::NoSuchElicitation(id) => gettext_f("no pending elicitation {id}", &[("id", id)]),
            ChatError::Busy => gettext("the agent is answering; cancel its turn first"),
            ChatError::NoSuchConversation(id) => gettext_f("no conversation {id}", &[("id", id)]),
            ChatError::TooManyAttachments => gettext_f(
                "at most {count} attachments go with one message",
                &[("count", &attachments::MAX_ATTACHMENTS.to_string())],
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
    pub options: Vec<controls::SessionOption>,
}

struct ChatInner {
    convs: Mutex<HashMap<String, Conv>>,
    /// One session is opened at a time per agent (a turn and the window's
    /// pickers may both ask for it).
    openers: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The options each agent offered at its last session in this run (for
    /// `Validate`'s warnings about defaults).
    offered: Mutex<HashMap<String, Vec<controls::SessionOption>>>,
    events: EventSender,
    supervisor: Supervisor,
    next_id: AtomicU64,
    /// The next `Conv::serial`.
    conv_serial: AtomicU64,
    recorder: Mutex<conversations::Recorder>,
    /// Sessions left open in their agent's process by New or Open (agents
    /// without `session/close`): switching back takes them up again.
    live: Mutex<HashMap<String, Vec<conversations::LiveSession>>>,
    /// The configuration's `permissions`, as applied.
    rules: Mutex<Vec<crate::core::config::model::PermissionRule>>,
    /// `limits.turnSilenceWarning` (`None`: never).
    silence: Mutex<Option<std::time::Duration>>,
}

#[derive(Clone)]
pub struct Chat {
    inner: Arc<ChatInner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long the agent has to end its turn after a Cancel before Parley ends it.
pub const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

enum TurnEnd {
    Stop(acp::StopReason),
    Error(String),
    /// The agent wants a sign-in first (its words).
    SignIn(String),
}

impl Chat {
    /// Creates the conversations and registers them as the supervisor's client.
    pub fn new(supervisor: Supervisor, events: EventSender) -> Self {
        let chat = Chat {
            inner: Arc::new(ChatInner {
                convs: Mutex::new(HashMap::new()),
                openers: Mutex::new(HashMap::new()),
                offered: Mutex::new(HashMap::new()),
                events,
                supervisor: supervisor.clone(),
                next_id: AtomicU64::new(1),
                conv_serial: AtomicU64::new(1),
                recorder: Mutex::default(),
                live: Mutex::default(),
                rules: Mutex::default(),
                silence: Mutex::new(Some(std::time::Duration::from_secs(300))),
            }),
        };
        supervisor.set_client(Arc::new(ChatClient(Arc::downgrade(&chat.inner))));
        chat
    }

    fn next_id(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn emit(&self, e: Event) {
        self.record(&e);
        events::emit(&self.inner.events, e);
    }

    fn emit_message(&self, m: &Message) {
        self.emit(Event::MessageUpdated(MessageUpdated {
            agent: m.agent.clone(),
            message: m.clone(),
        }));
    }

    fn emit_turn(&self, agent: &str, c: &Conv) {
        self.emit(Event::TurnChanged(TurnChanged {
            agent: agent.to_owned(),
            busy: c.busy,
            queued: c.queued_count(),
        }));
    }

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
        if attachments.len() > attachments::MAX_ATTACHMENTS {
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

    async fn run_turns(&self, agent: String, first_id: String) {
        let mut id = first_id;
        loop {
            self.one_turn(&agent, &id).await;
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(&agent) else { return };
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
                    return;
                }
            }
        }
    }

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
                    });
                }
            }
        }
        items.sort_by(|a, b| a.since.cmp(&b.since));
        items
    }

    /// `limits.turnSilenceWarning`, applied with the configuration.
    pub fn set_turn_silence(&self, after: Option<std::time::Duration>) {
        *lock(&self.inner.silence) = after;
    }

    /// Marks the turn "not responding" (`turn:stalled`) when the agent has
    /// sent nothing for `limits.turnSilenceWarning`, while it waits on no
    /// answer of the user's. Ends with the turn.
    fn watch_silence(&self, agent: &str, turn: &Arc<tokio::sync::Notify>) {
        let Some(warn) = *lock(&self.inner.silence) else {
            return;
        };
        let this = self.clone();
        let agent = agent.to_owned();
        let turn = Arc::downgrade(turn);
        let poll = (warn / 4).clamp(
            std::time::Duration::from_millis(50),
            std::time::Duration::from_secs(5),
        );
        tokio::spawn(async move {
            let mut seen = None;
            let mut since = std::time::Instant::now();
            loop {
                tokio::time::sleep(poll).await;
                let Some(turn) = turn.upgrade() else { return };
                // A long build in the agent's terminal is not silence either
                // (asked before the conversations' lock: never both held).
                let terminal = this.inner.supervisor.terminal_running(&agent);
                let mut convs = lock(&this.inner.convs);
                let Some(c) = convs.get_mut(&agent) else { return };
                if !c.give_up.as_ref().is_some_and(|g| Arc::ptr_eq(g, &turn)) {
                    return;
                }
                // Waiting on the user is not the agent's silence.
                let waiting_on_user = !c.permissions.is_empty() || !c.elicitations.is_empty() || terminal;
                if seen != Some(c.activity) || waiting_on_user {
                    seen = Some(c.activity);
                    since = std::time::Instant::now();
                    continue;
                }
                if !c.stalled && since.elapsed() >= warn {
                    c.stalled = true;
                    drop(convs);
                    this.emit(Event::TurnStalled(events::TurnStalled {
                        agent: agent.clone(),
                        stalled: true,
                        silent_for: Some(since.elapsed().as_secs()),
                    }));
                }
            }
        });
    }

    /// The agent said something: a turn marked "not responding" is not any more.
    fn heard_from(&self, agent: &str, c: &mut Conv) {
        c.activity = c.activity.wrapping_add(1);
        self.unstall(agent, c);
    }

    /// Takes the "not responding" mark off, if it was on.
    fn unstall(&self, agent: &str, c: &mut Conv) {
        if c.stalled {
            c.stalled = false;
            self.emit(Event::TurnStalled(events::TurnStalled {
                agent: agent.to_owned(),
                stalled: false,
                silent_for: None,
            }));
        }
    }

    fn system_message(&self, agent: &str, code: MessageCode, error: Option<String>) {
        let mut m = Message::new(self.next_id("m"), agent, Role::System);
        m.code = Some(code);
        m.error = error;
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.messages.push(m.clone());
        }
        self.emit_message(&m);
    }

    async fn one_turn(&self, agent: &str, id: &str) {
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
        let end = self.prompt_turn(agent, id, &conn, generation).await;
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
    fn remove_empty_answer(&self, agent: &str) {
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

    /// The user message `id` waits (as `queued`) for a sign-in, and the
    /// agent is marked as needing one (`auth:changed`).
    fn wait_for_sign_in(&self, agent: &str, id: &str, why: String) {
        let waiting = {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            if !c.awaiting_sign_in.iter().any(|w| w == id) {
                c.awaiting_sign_in.push(id.to_owned());
            }
            c.messages.iter_mut().rev().find(|m| m.id == id).map(|m| {
                m.queued = true;
                m.clone()
            })
        };
        if let Some(m) = waiting {
            self.emit_message(&m);
        }
        self.inner.supervisor.set_needs_sign_in(agent, Some(why));
    }

    /// The agent accepted a session or a prompt: if it was marked as
    /// needing a sign-in (signed in elsewhere, restarted, or the words
    /// misled), it is not any more, and the waiting messages go.
    fn signed_in_after_all(&self, agent: &str) {
        if self.inner.supervisor.needs_sign_in(agent) {
            self.inner.supervisor.set_needs_sign_in(agent, None);
            self.resume_after_sign_in(agent);
        }
    }

    /// A sign-in succeeded: the messages that waited for it are sent again,
    /// in their order (after a turn under way, if any).
    pub fn resume_after_sign_in(&self, agent: &str) {
        let first = {
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(agent) else { return };
            let mut ids = std::mem::take(&mut c.awaiting_sign_in);
            ids.retain(|id| c.messages.iter().any(|m| m.id == *id));
            let Some((first, rest)) = ids.split_first() else {
                return;
            };
            if c.busy {
                c.queue.extend(ids.iter().cloned());
                self.emit_turn(agent, c);
                return;
            }
            c.queue.extend(rest.iter().cloned());
            c.busy = true;
            // Sent now: it moves to the end, as a queued message does.
            let Some(i) = c.messages.iter().rposition(|m| m.id == *first) else {
                return; // kept above only if it is there
            };
            let mut m = c.messages.remove(i);
            m.queued = false;
            c.messages.push(m.clone());
            self.emit_message(&m);
            self.emit_turn(agent, c);
            first.clone()
        };
        let this = self.clone();
        let agent = agent.to_owned();
        tokio::spawn(async move { this.run_turns(agent, first).await });
    }

    /// `None` when no agent message was started (the session failed, or
    /// the prompt could not be sent).
    async fn prompt_turn(
        &self,
        agent: &str,
        id: &str,
        conn: &crate::core::acp::Connection,
        generation: u64,
    ) -> Option<TurnEnd> {
        {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            c.cancelling = false;
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
        // Dropping the prompt's future (Cancel not answered in time) sends
        // `$/cancel_request` for it.
        let answer = tokio::select! {
            biased;
            r = calls::prompt(conn, &session, blocks) => Some(r),
            _ = give_up.notified() => None,
        };
        if let Some(c) = lock(&self.inner.convs).get_mut(agent) {
            c.give_up = None;
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
            Ok(r) => {
                self.signed_in_after_all(agent);
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
                TurnEnd::Error(settled.unwrap_or(reason))
            }
            Err(e) => TurnEnd::Error(e.to_string()),
        })
    }

    /// A user message that cannot go to this agent (an image to an agent
    /// that takes none): it gets the reason as its error, and is not sent.
    fn refuse_message(&self, agent: &str, id: &str, why: String) {
        let m = lock(&self.inner.convs).get_mut(agent).and_then(|c| {
            let m = c.messages.iter_mut().rev().find(|m| m.id == id)?;
            m.error = Some(why);
            Some(m.clone())
        });
        if let Some(m) = m {
            self.emit_message(&m);
        }
    }

    fn finish_current(&self, agent: &str, end: TurnEnd) {
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
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let (pending, dropped, session) = {
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
            let queued: Vec<String> = c.queue.drain(..).collect();
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
            (pending, dropped, c.session.clone())
        };
        // session/cancel first: the agent then knows why its permission
        // requests come back "cancelled" (ACP's order).
        if let (Some((sid, generation)), Some((conn, g))) = (session, self.inner.supervisor.connection(agent))
        {
            if g == generation {
                calls::cancel(&conn, &sid);
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
    pub fn has_session(&self, agent: &str, session_id: &str) -> bool {
        lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.session.as_ref())
            .is_some_and(|(s, _)| &*s.0 == session_id)
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
        let mut r = lock(&self.inner.recorder);
        r.ids.clear();
        r.titles.clear();
    }

    fn apply_update(&self, agent: &str, session_id: &str, update: acp::SessionUpdate) {
        let mut convs = lock(&self.inner.convs);
        // This runs for every chunk of every answer: no allocation when
        // the conversation exists.
        if !convs.contains_key(agent) {
            convs.insert(agent.to_owned(), Conv::default());
        }
        let Some(c) = convs.get_mut(agent) else { return };
        let known = c.session.as_ref().is_some_and(|(s, _)| &*s.0 == session_id);
        if !known {
            if c.opening_session {
                c.early.push((session_id.to_owned(), update));
            } else {
                drop(convs);
                self.inner.supervisor.log(
                    agent,
                    format!("parley: an update for an unknown session {session_id} was ignored"),
                );
            }
            return;
        }
        self.heard_from(agent, c);
        let mut next_id = || self.next_id("m");
        let mut emit = |e: Event| self.emit(e);
        if let Some(kind) = c.apply(agent, update, &mut next_id, &mut emit) {
            drop(convs);
            tracing::debug!(agent, kind, "session update not shown");
        }
    }

    fn disconnected(&self, agent: &str) {
        let pending: Vec<PendingPermission> = {
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(agent) else { return };
            c.session = None;
            // The options were the session's: the next one brings its own.
            if !c.options.is_empty() {
                c.options.clear();
                self.emit(c.session_changed(agent));
            }
            c.permissions.drain(..).collect()
        };
        for p in pending {
            drop(p.responder);
            self.emit(Event::PermissionResolved(PermissionResolved {
                id: p.request.id,
                agent: agent.to_owned(),
            }));
        }
        // Nobody is left to answer: the window's dialogs close.
        self.cancel_elicitations(agent);
    }
}
