//! Subagents: the helpers an agent starts (`subagent_update`), each with a
//! thread of its own that its session's updates go to, what one session
//! tells another (`session_message`, `session_message_chunk`), and
//! `CancelSubagent`.
//!
//! A child is kept in its parent's conversation (`Conv::subagents`, a flat
//! list: a child's child names its parent's session). Its thread is a
//! `Conv` of its own, so its text, tool calls, plans and diffs are applied
//! as a conversation's are; what that sends the window goes out as
//! `subagent:delta`, never as the parent's `message:delta`. Its edits count
//! in the parent's turn (`note_tool`).

use super::state::*;
use super::updates::{find_tool, target_message};
use crate::core::events::{Asker, SubagentChanged, SubagentDelta};
use crate::core::types::session_note::SessionNote;
use crate::core::types::subagent::{self as sub, Subagent, SubagentThread, MAX_SUBAGENTS};

/// A child's session id longer than this is not taken.
const MAX_SESSION_ID: usize = 512;

/// A summary that changes with every chunk is sent at most this often.
const SUMMARY_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

impl Conv {
    /// Each child with its own thread, as `Conversation` returns them.
    pub(super) fn subagent_threads(&self) -> Vec<SubagentThread> {
        self.subagents
            .iter()
            .map(|s| SubagentThread {
                subagent: s.info.clone(),
                messages: s.conv.messages.clone(),
            })
            .collect()
    }

    pub(super) fn child_index(&self, session_id: &str) -> Option<usize> {
        self.subagents
            .iter()
            .position(|s| s.info.session_id == session_id)
    }

    /// The thread of `session_id`: the conversation's own, or a child's.
    fn thread_mut(&mut self, session_id: &str) -> Option<&mut Conv> {
        if self.session.as_ref().is_some_and(|(s, _)| &*s.0 == session_id) {
            return Some(self);
        }
        let i = self.child_index(session_id)?;
        Some(&mut self.subagents[i].conv)
    }
}

impl ChatService {
    /// Whether an update goes to the subagents' side: a child's own, an
    /// announcement, or a message between sessions.
    pub(super) fn is_subagent_side(c: &Conv, session_is_own: bool, update: &acp::SessionUpdate) -> bool {
        use acp::SessionUpdate as U;
        !session_is_own
            || matches!(
                update,
                U::SubagentUpdate(_) | U::SessionMessage(_) | U::SessionMessageChunk(_)
            )
            || (!c.subagents.is_empty() && matches!(update, U::ToolCall(_) | U::ToolCallUpdate(_)))
                && links_a_session(update)
    }

    /// Applies an update of the subagents' side, from session `sid` (the
    /// conversation's own or a known child's).
    pub(super) fn apply_subagent_side(
        &self,
        agent: &str,
        c: &mut Conv,
        sid: &str,
        update: acp::SessionUpdate,
    ) {
        use acp::SessionUpdate as U;
        match update {
            U::SubagentUpdate(u) => self.subagent_update(agent, c, sid, &u),
            U::SessionMessage(m) => {
                let text = match &m.content {
                    agent_client_protocol_schema::MaybeUndefined::Value(blocks) => Some(
                        blocks
                            .iter()
                            .map(message::block_text)
                            .collect::<Vec<_>>()
                            .join("\n"),
                    ),
                    agent_client_protocol_schema::MaybeUndefined::Null => Some(String::new()),
                    agent_client_protocol_schema::MaybeUndefined::Undefined => None,
                };
                let id = m.message_id.to_string();
                self.session_note(agent, c, sid, &id, |note| {
                    use agent_client_protocol_schema::MaybeUndefined as M;
                    let bounded = |s: &acp::SessionId| (s.0.len() <= MAX_SESSION_ID).then(|| s.to_string());
                    match &m.sender_session_id {
                        M::Value(s) => note.sender = bounded(s),
                        M::Null => note.sender = None,
                        M::Undefined => {}
                    }
                    match &m.recipient_session_id {
                        M::Value(s) => note.recipient = bounded(s),
                        M::Null => note.recipient = None,
                        M::Undefined => {}
                    }
                    if let Some(text) = text {
                        note.text = text;
                    }
                });
            }
            U::SessionMessageChunk(chunk) => {
                let text = message::into_text(chunk.content);
                self.session_note(agent, c, sid, &chunk.message_id.to_string(), |note| {
                    note.text.push_str(&text)
                });
            }
            other => {
                self.link_tool_call(agent, c, &other);
                match c.child_index(sid) {
                    Some(i) => self.child_update(agent, c, i, other),
                    // The conversation's own tool call that links a child.
                    None => {
                        let mut next_id = || self.next_id("m");
                        let tool = tool_id(&other);
                        let _ = c.apply(agent, other, &mut next_id, &mut |e| self.emit(e));
                        if let Some(call) = tool.and_then(|id| find_tool(c, &id)) {
                            self.note_tool(agent, &call);
                        }
                    }
                }
            }
        }
    }

    /// Where a child's thread's events go: its deltas as `subagent:delta`,
    /// its terminals as anyone's. Its usage, options and title are its
    /// own, not the conversation's: not sent.
    pub(super) fn child_event(&self, session_id: &str, e: Event) {
        match e {
            Event::MessageDelta(delta) => self.emit(Event::SubagentDelta(SubagentDelta {
                session_id: session_id.to_owned(),
                delta,
            })),
            Event::TerminalOutput(_) | Event::TerminalExited(_) => self.emit(e),
            _ => {}
        }
    }

    fn subagent_update(&self, agent: &str, c: &mut Conv, parent: &str, u: &acp::SubagentUpdate) {
        let sid = u.session_id.to_string();
        if let Some(i) = c.child_index(&sid) {
            let was_active = c.subagents[i].info.status.is_active();
            if !c.subagents[i].info.patch(u) {
                return;
            }
            let info = c.subagents[i].info.clone();
            let ended = was_active && !info.status.is_active();
            // Its thread is written whole when it stops or waits for the
            // user; what it is, at every change.
            self.keep_child(c, i, ended || info.status == sub::SubagentStatus::Waiting);
            self.emit_subagent(agent, info, ended);
            return;
        }
        // A child must not be its own ancestor, nor the conversation; its
        // id is kept (and sent back), so it is bounded.
        let own = c.session.as_ref().is_some_and(|(s, _)| *s.0 == *sid);
        if own || sid == parent || sid.is_empty() || sid.len() > MAX_SESSION_ID {
            return;
        }
        if c.subagents.len() >= MAX_SUBAGENTS {
            self.tell_once(agent, "subagent_update/too-many", || {
                format!(
                    "parley: the agent announced more than {MAX_SUBAGENTS} subagents; the rest are not shown"
                )
            });
            return;
        }
        let mut info = Subagent::new(&sid, parent);
        info.patch(u);
        c.subagents.push(Child {
            info: info.clone(),
            conv: Box::default(),
            activity: 0,
            summary_at: None,
            kept: None,
        });
        self.keep_child(c, c.subagents.len() - 1, false);
        self.emit(Event::SubagentStarted(SubagentChanged {
            agent: agent.to_owned(),
            subagent: info,
        }));
        // Its thread is shown where it was announced, in its parent's.
        let mut next_id = || self.next_id("m");
        let Some(thread) = c.thread_mut(parent) else {
            return;
        };
        let part = Part::Subagent { session_id: sid };
        thread_put(self, agent, parent, thread, part, &mut next_id);
    }

    fn emit_subagent(&self, agent: &str, info: Subagent, ended: bool) {
        let changed = SubagentChanged {
            agent: agent.to_owned(),
            subagent: info,
        };
        self.emit(if ended {
            Event::SubagentEnded(changed)
        } else {
            Event::SubagentUpdated(changed)
        });
    }

    /// One update of a child's own session, applied to its thread.
    fn child_update(&self, agent: &str, c: &mut Conv, i: usize, update: acp::SessionUpdate) {
        let tool = tool_id(&update);
        let is_text = matches!(update, acp::SessionUpdate::AgentMessageChunk(_));
        let child = &mut c.subagents[i];
        child.activity = child.activity.wrapping_add(1);
        // Heard from again.
        if child.info.stalled {
            child.info.stalled = false;
            self.emit_subagent(agent, child.info.clone(), false);
        }
        let sid = child.info.session_id.clone();
        let mut next_id = || self.next_id("m");
        let unshown = child
            .conv
            .apply(agent, update, &mut next_id, &mut |e| self.child_event(&sid, e));
        if let Some(kind) = unshown {
            self.tell_once(agent, &format!("subagent/{kind}"), || {
                format!("parley: a subagent sends {kind} session updates, which Parley does not show (said once per kind)")
            });
        }
        let call = tool.and_then(|id| find_tool(&child.conv, &id));
        // What it does now: its latest tool call, else its latest line.
        let summary = match &call {
            Some(call) => Some(sub::one_line(&call.title, 120)),
            None if is_text => last_line(&child.conv),
            None => None,
        };
        if let Some(summary) = summary.filter(|s| !s.is_empty() && *s != child.info.summary) {
            let due = call.is_some() || child.summary_at.is_none_or(|t| t.elapsed() >= SUMMARY_EVERY);
            child.info.summary = summary;
            if due {
                child.summary_at = Some(std::time::Instant::now());
                self.emit_subagent(agent, child.info.clone(), false);
            }
        }
        if let Some(call) = call {
            // Its edits are the parent's turn's.
            self.note_tool(agent, &call);
        }
    }

    /// Upserts the message between sessions `id` in the thread of `sid`.
    fn session_note(
        &self,
        agent: &str,
        c: &mut Conv,
        sid: &str,
        id: &str,
        change: impl FnOnce(&mut SessionNote),
    ) {
        let mut next_id = || self.next_id("m");
        let own = thread_is_own(c, sid);
        if let Some(i) = c.child_index(sid) {
            c.subagents[i].activity = c.subagents[i].activity.wrapping_add(1);
        }
        let Some(thread) = c.thread_mut(sid) else { return };
        let found = thread.messages.iter().enumerate().rev().find_map(|(mi, m)| {
            m.parts
                .iter()
                .position(|p| matches!(p, Part::SessionNote(n) if n.message_id == id))
                .map(|pi| (mi, pi))
        });
        let mut note = match found {
            Some((mi, pi)) => match &thread.messages[mi].parts[pi] {
                Part::SessionNote(n) => n.clone(),
                _ => return,
            },
            None => SessionNote {
                message_id: id.to_owned(),
                ..Default::default()
            },
        };
        change(&mut note);
        // A harness's note to the model is no one's words; its tags around
        // a child's report are taken out.
        if crate::core::types::tool_text::is_internal(&note.text) {
            return;
        }
        note.text = sub::without_harness_tags(&note.text);
        if note.text.len() > crate::core::types::long_text::KEPT {
            let mut cut = Default::default();
            crate::core::types::long_text::cap(&mut note.text, &mut cut);
        }
        let part = Part::SessionNote(note);
        let (m, index) = match found {
            Some((mi, pi)) => (&mut thread.messages[mi], pi),
            None => {
                let (_, m) = target_message(thread, agent, &mut next_id);
                let n = m.parts.len();
                (m, n)
            }
        };
        super::updates::set_part(m, index, part.clone());
        let delta = events::MessageDelta {
            agent: agent.to_owned(),
            message_id: m.id.clone(),
            index,
            kind: message::PartKind::Session,
            text: None,
            part: Some(part),
        };
        thread_event(self, own, sid, Event::MessageDelta(delta));
    }

    /// A tool call with a `session` content links the child it names.
    /// Told (`subagent:updated`) before the call's own delta: a window
    /// then draws the child in the call's card, not where it was
    /// announced.
    fn link_tool_call(&self, agent: &str, c: &mut Conv, update: &acp::SessionUpdate) {
        let (id, content) = match update {
            acp::SessionUpdate::ToolCall(t) => (t.tool_call_id.to_string(), Some(&t.content)),
            acp::SessionUpdate::ToolCallUpdate(u) => (u.tool_call_id.to_string(), u.fields.content.as_ref()),
            _ => return,
        };
        for session in content.into_iter().flatten().filter_map(|c| match c {
            acp::ToolCallContent::Session(s) => Some(s.session_id.to_string()),
            _ => None,
        }) {
            if let Some(i) = c.child_index(&session) {
                let info = &mut c.subagents[i].info;
                if info.tool_call.as_deref() != Some(id.as_str()) {
                    info.tool_call = Some(id.clone());
                    self.emit_subagent(agent, info.clone(), false);
                }
            }
        }
    }

    /// `CancelSubagent(agent, sessionId)`: `session/cancel` for that child
    /// only; its permission requests come back cancelled.
    pub fn cancel_subagent(&self, agent: &str, session_id: &str) -> Result<(), ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let pending = {
            let mut convs = lock(&self.inner.convs);
            let c = convs
                .get_mut(agent)
                .ok_or_else(|| ChatError::NoSuchSubagent(session_id.to_owned()))?;
            let i = c
                .child_index(session_id)
                .ok_or_else(|| ChatError::NoSuchSubagent(session_id.to_owned()))?;
            let info = &c.subagents[i].info;
            if !info.can_cancel {
                return Err(ChatError::CannotCancel(info.title.clone()));
            }
            let mut pending = Vec::new();
            let mut k = 0;
            while k < c.permissions.len() {
                if asked_by(&c.permissions[k].request.subagent, session_id) {
                    pending.push(c.permissions.remove(k));
                } else {
                    k += 1;
                }
            }
            pending
        };
        if let Some((conn, _)) = self.inner.supervisor.connection(agent) {
            calls::cancel(&conn, &acp::SessionId::new(session_id));
        }
        for p in pending {
            p.responder.respond(Ok(super::permissions::permission_outcome(
                acp::RequestPermissionOutcome::Cancelled,
            )));
            self.emit(Event::PermissionResolved(PermissionResolved {
                id: p.request.id,
                agent: agent.to_owned(),
            }));
        }
        Ok(())
    }

    /// The children a Cancel of the whole turn stops too (those working
    /// that may be cancelled).
    pub(super) fn cancellable_children(c: &Conv) -> Vec<acp::SessionId> {
        c.subagents
            .iter()
            .filter(|s| s.info.can_cancel && s.info.status.is_active())
            .map(|s| acp::SessionId::new(s.info.session_id.as_str()))
            .collect()
    }

    /// The agent went away: its working children will not finish.
    pub(super) fn children_gone(&self, agent: &str, c: &mut Conv) {
        for i in 0..c.subagents.len() {
            let child = &mut c.subagents[i];
            if !child.info.status.is_active() {
                continue;
            }
            child.info.status = sub::SubagentStatus::Failed;
            child.info.error = Some(gettext("the agent stopped"));
            child.info.can_cancel = false;
            self.emit_subagent(agent, child.info.clone(), true);
            self.keep_child(c, i, true);
        }
    }

    /// Writes child `i` to the history with its parent's conversation:
    /// what it is, and (`whole`) its thread's messages as they are now.
    pub(super) fn keep_child(&self, c: &mut Conv, i: usize, whole: bool) {
        let (Some(parent), Some(child)) = (&c.conversation, c.subagents.get_mut(i)) else {
            return;
        };
        if whole {
            child.kept = Some(child.activity);
        }
        let Ok(json) = serde_json::to_string(&child.info) else {
            return;
        };
        let id = child_conversation(parent, i);
        let mut r = self.inner.history.recorder();
        r.send(crate::core::history::Op::Subagent {
            parent: parent.clone(),
            conversation: id.clone(),
            json,
        });
        if whole {
            for m in &child.conv.messages {
                let mut m = m.clone();
                m.done = true;
                r.send(crate::core::history::Op::Message {
                    conversation: id.clone(),
                    message: m,
                });
            }
        }
    }

    /// Every child's thread that changed since it was last written,
    /// written whole (the parent's turn ended).
    pub(super) fn keep_children(&self, c: &mut Conv) {
        for i in 0..c.subagents.len() {
            if c.subagents[i].kept != Some(c.subagents[i].activity) {
                self.keep_child(c, i, true);
            }
        }
    }
}

/// The history's id of child `i` of conversation `parent`.
fn child_conversation(parent: &str, i: usize) -> String {
    format!("{parent}~{i}")
}

/// The children kept with stored conversation `id`, each with its thread.
/// One that was working when it was stored is no longer known to be.
pub(super) fn stored_children(h: &crate::core::history::History, id: &str) -> Vec<Child> {
    let Ok(kept) = h.subagents(id) else {
        return Vec::new();
    };
    kept.into_iter()
        .take(MAX_SUBAGENTS)
        .map(|(row, mut info)| {
            if info.status.is_active() {
                info.status = sub::SubagentStatus::Unknown;
                info.can_cancel = false;
            }
            Child {
                info,
                conv: Box::new(Conv {
                    messages: h.messages(&row).unwrap_or_default(),
                    ..Conv::default()
                }),
                activity: 0,
                summary_at: None,
                kept: Some(0),
            }
        })
        .collect()
}

fn asked_by(asker: &Option<Asker>, session_id: &str) -> bool {
    asker.as_ref().is_some_and(|a| a.session_id == session_id)
}

fn tool_id(update: &acp::SessionUpdate) -> Option<String> {
    match update {
        acp::SessionUpdate::ToolCall(t) => Some(t.tool_call_id.to_string()),
        acp::SessionUpdate::ToolCallUpdate(u) => Some(u.tool_call_id.to_string()),
        _ => None,
    }
}

fn links_a_session(update: &acp::SessionUpdate) -> bool {
    let content = match update {
        acp::SessionUpdate::ToolCall(t) => Some(&t.content),
        acp::SessionUpdate::ToolCallUpdate(u) => u.fields.content.as_ref(),
        _ => None,
    };
    content
        .into_iter()
        .flatten()
        .any(|c| matches!(c, acp::ToolCallContent::Session(_)))
}

fn thread_is_own(c: &Conv, sid: &str) -> bool {
    c.session.as_ref().is_some_and(|(s, _)| &*s.0 == sid)
}

/// An event of the thread of `sid`: the conversation's own as it is, a
/// child's as `subagent:delta`.
fn thread_event(chat: &ChatService, own: bool, sid: &str, e: Event) {
    if own {
        chat.emit(e)
    } else {
        chat.child_event(sid, e)
    }
}

/// Adds `part` to the message the thread is streaming (or its last answer).
fn thread_put(
    chat: &ChatService,
    agent: &str,
    sid: &str,
    thread: &mut Conv,
    part: Part,
    next_id: &mut impl FnMut() -> String,
) {
    let own = thread.session.as_ref().is_some_and(|(s, _)| &*s.0 == sid);
    let (_, m) = target_message(thread, agent, next_id);
    let delta = events::MessageDelta {
        agent: agent.to_owned(),
        message_id: m.id.clone(),
        index: m.parts.len(),
        kind: part.kind(),
        text: None,
        part: Some(part.clone()),
    };
    m.parts.push(part);
    thread_event(chat, own, sid, Event::MessageDelta(delta));
}

/// The last line of a thread's last text, in one short line.
fn last_line(c: &Conv) -> Option<String> {
    let text = c.messages.last()?.parts.iter().rev().find_map(|p| match p {
        Part::Text { text } => Some(text),
        _ => None,
    })?;
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    // Only its end is read: a line may be megabytes.
    let start = line.len().saturating_sub(480);
    let start = (start..line.len())
        .find(|&i| line.is_char_boundary(i))
        .unwrap_or(0);
    Some(sub::one_line(&line[start..], 120))
}
