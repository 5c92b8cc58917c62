//! Many conversations per agent, kept in the history (issue 16): the
//! recorder that writes what the conversations emit, and `ChatService`'s
//! `List`, `New`, `Open`, `Delete`, `Rename`, `Search` and `Export`.
//!
//! An agent has one *current* conversation in memory (what
//! `Conversation(agent)` returns); the others are only on disk. A
//! conversation gets its row when its first user message is sent, so
//! opening an agent never leaves an empty conversation behind.

use serde::Serialize;

use super::state::{lock, ChatError, ChatService, Conv, Conversation, LiveSession};
use crate::core::acp::calls;
use crate::core::events::{ConversationSwitched, ConversationsChanged, Event};
use crate::core::history::{self, ConversationSummary, History, Op};
use crate::i18n::gettext;

/// The prefix of a `List` id for a session the agent listed but Parley has
/// not stored.
pub const AGENT_SESSION: &str = "session:";

/// At most this many sessions are kept open per agent for switching back.
const LIVE_SESSIONS: usize = 20;

/// `ChatService.List`: the agent's conversations, newest first, and the
/// sessions the agent lists that Parley has not stored.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversations {
    pub conversations: Vec<ConversationSummary>,
    /// The current conversation's id (none until its first message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// Whether this Parley writes the history.
    pub writable: bool,
}

fn new_conversation_id(n: u64) -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("c{millis:x}-{n}")
}

impl ChatService {
    /// Gives the agent's conversation its row, with what it holds so far
    /// (warnings before the first message): called with `c` locked, before
    /// its first user message is added.
    pub(super) fn give_row(&self, agent: &str, c: &mut Conv) -> bool {
        if c.conversation.is_some() {
            return false;
        }
        let mut r = self.inner.history.recorder();
        if !r.history.as_ref().is_some_and(History::writable) {
            return false;
        }
        let id = new_conversation_id(
            self.inner
                .next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let config = r.config.clone();
        r.send(Op::Conversation {
            id: id.clone(),
            config,
            agent: agent.to_owned(),
            created_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        });
        if let Some(wt) = &c.worktree {
            if let Err(e) = self.inner.worktrees.link(&wt.path, &id) {
                tracing::warn!(agent, error = %e, "the worktree could not be tied to its conversation");
            }
        }
        if let Some(sid) = &c.stored_session {
            r.send(Op::Session {
                conversation: id.clone(),
                session_id: Some(sid.clone()),
            });
        }
        if c.title.is_some() {
            r.send(Op::Title {
                conversation: id.clone(),
                title: c.title.clone(),
            });
        }
        for m in &c.messages {
            r.send(Op::Message {
                conversation: id.clone(),
                message: m.clone(),
            });
        }
        r.titles.insert(agent.to_owned(), c.title.clone());
        r.ids.insert(agent.to_owned(), id.clone());
        let config = r.config.clone();
        r.send(Op::Opened {
            config,
            agent: agent.to_owned(),
            conversation: Some(id.clone()),
        });
        // A fork's link (given before its first message, when it had none).
        if let Some(from) = &c.forked_from {
            r.send(Op::ForkedFrom {
                conversation: id.clone(),
                json: serde_json::to_string(from).unwrap_or_default(),
            });
        }
        c.conversation = Some(id);
        true
    }

    /// Stores the agent session of the agent's current conversation.
    pub(super) fn record_session(&self, agent: &str, session_id: &str) {
        self.inner.history.record_session(agent, session_id);
    }

    fn config_key(&self) -> String {
        self.inner.history.config_key()
    }

    /// The history, with the chat's joined text sent to its writer (so a
    /// read after a flush sees everything).
    fn history_or_err(&self) -> Result<History, ChatError> {
        self.inner
            .history
            .flushed()
            .ok_or_else(|| ChatError::History(gettext("no history is kept")))
    }

    /// `List(agent)`: stored conversations, newest first, then the
    /// sessions the running agent lists (`session/list`) for its working
    /// directory that no stored conversation holds.
    pub async fn list(&self, agent: &str, offset: usize, limit: usize) -> Result<Conversations, ChatError> {
        let sup = &self.inner.supervisor;
        let Some(def) = sup.definition(agent) else {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        };
        let current = lock(&self.inner.convs)
            .get(agent)
            .and_then(|c| c.conversation.clone());
        let Some(h) = self.inner.history.flushed() else {
            return Ok(Conversations {
                conversations: Vec::new(),
                current,
                writable: false,
            });
        };
        let config = self.config_key();
        let stored = {
            let h = h.clone();
            let (config, agent) = (config.clone(), agent.to_owned());
            tokio::task::spawn_blocking(move || {
                flushed(&h);
                h.list(&config, &agent, limit.max(1), offset)
            })
            .await
            .map_err(|e| ChatError::History(e.to_string()))?
            .map_err(|e| ChatError::History(e.to_string()))?
        };
        let mut conversations = stored;
        // The agent's own list, only on the first page and only from a
        // running agent (listing never starts one).
        let listed = match (offset, sup.connection(agent), sup.capabilities(agent)) {
            (0, Some((conn, _)), Some(caps)) if caps.session_capabilities.list.is_some() => {
                match calls::list_sessions(&conn, &def.working_dir()).await {
                    Ok(l) => l,
                    Err(e) => {
                        sup.log(agent, format!("parley: session/list failed: {e}"));
                        Vec::new()
                    }
                }
            }
            _ => Vec::new(),
        };
        for s in listed {
            let sid = s.session_id.to_string();
            if crate::core::types::options::shown_text(&sid, 200) != sid
                || conversations
                    .iter()
                    .any(|c| c.session_id.as_deref() == Some(sid.as_str()))
                || h.by_session(&config, agent, &sid).ok().flatten().is_some()
            {
                continue;
            }
            let title = s
                .title
                .map(|t| crate::core::types::options::shown_text(&t, 200))
                .unwrap_or_default();
            self.inner
                .history
                .recorder()
                .listed
                .insert((agent.to_owned(), sid.clone()), title.clone());
            conversations.push(ConversationSummary {
                id: format!("{AGENT_SESSION}{sid}"),
                agent: agent.to_owned(),
                title,
                created_at: s.updated_at.clone().unwrap_or_default(),
                updated_at: s.updated_at.unwrap_or_default(),
                messages: 0,
                session_id: Some(sid),
                external: true,
            });
        }
        Ok(Conversations {
            conversations,
            current,
            writable: h.writable(),
        })
    }

    /// Takes the agent's current conversation out of memory (`New`, and
    /// before `Open`); refused while a turn runs. The session it leaves
    /// is closed where the agent offers `session/close`.
    pub(super) fn leave_current(&self, agent: &str, mut next: Conv) -> Result<(), ChatError> {
        if lock(&self.inner.convs).get(agent).is_some_and(|c| c.busy) {
            return Err(ChatError::Busy);
        }
        // Asked outside a turn (a sign-in's form): it goes with the conversation.
        self.cancel_elicitations(agent);
        let left = {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            if c.busy {
                return Err(ChatError::Busy);
            }
            next.serial = self
                .inner
                .conv_serial
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut old = std::mem::replace(c, next);
            // The new conversation's row (an opened one has it already).
            let mut r = self.inner.history.recorder();
            match &c.conversation {
                Some(id) => {
                    r.ids.insert(agent.to_owned(), id.clone());
                    r.titles.insert(agent.to_owned(), c.title.clone());
                }
                None => {
                    r.ids.remove(agent);
                    r.titles.remove(agent);
                }
            }
            old.session.take().map(|(sid, generation)| LiveSession {
                sid,
                generation,
                options: std::mem::take(&mut old.options),
                commands: std::mem::take(&mut old.commands),
            })
        };
        if let Some(session) = left {
            self.let_go(agent, session);
        }
        self.work_where_the_conversation_is(agent);
        Ok(())
    }

    /// A session that the agent's current conversation no longer has (it
    /// was left, by New or Open): closed where the agent can close
    /// sessions, else kept open in its process for switching back
    /// (`take_live`).
    pub(super) fn let_go(&self, agent: &str, session: LiveSession) {
        let sup = self.inner.supervisor.clone();
        let closes = sup
            .capabilities(agent)
            .is_some_and(|caps| caps.session_capabilities.close.is_some());
        if !closes {
            let mut live = lock(&self.inner.live);
            let list = live.entry(agent.to_owned()).or_default();
            list.retain(|l| l.sid != session.sid);
            list.push(session);
            if list.len() > LIVE_SESSIONS {
                list.remove(0);
            }
            return;
        }
        let Some((conn, g)) = sup.connection(agent) else {
            return;
        };
        if g == session.generation {
            let agent = agent.to_owned();
            tokio::spawn(async move {
                if let Err(e) = calls::close_session(&conn, &session.sid.to_string()).await {
                    sup.log(&agent, format!("parley: session/close failed: {e}"));
                }
            });
        }
    }

    /// `conversations:changed`, with the agent's current conversation.
    pub(super) fn conversations_changed(&self, agent: &str) {
        let current = self.inner.history.recorder().ids.get(agent).cloned();
        self.emit(Event::ConversationsChanged(ConversationsChanged {
            agent: agent.to_owned(),
            current,
        }));
    }

    pub(super) fn emit_switched(&self, agent: &str) {
        let (conversation, read_only) = lock(&self.inner.convs)
            .get(agent)
            .map(|c| (c.conversation.clone(), c.read_only.clone()))
            .unwrap_or_default();
        self.record_opened(agent, conversation.clone());
        self.emit(Event::ConversationSwitched(ConversationSwitched {
            agent: agent.to_owned(),
            conversation,
            read_only: read_only.is_some(),
            reason: read_only,
        }));
    }

    /// `New(agent)`: the agent's current conversation becomes a new, empty
    /// one (the old one stays in the history).
    pub fn new_conversation(&self, agent: &str) -> Result<(), ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        self.leave_current(agent, Conv::default())?;
        self.emit_switched(agent);
        self.conversations_changed(agent);
        Ok(())
    }

    /// `Open(agent, id)`: a stored conversation becomes the agent's
    /// current one; its session is resumed (or loaded) from the agent when
    /// it runs, else at the next message. An id from `List` that names a
    /// session of the agent's own (`session:…`) is stored first, then
    /// loaded from the agent.
    pub async fn open(&self, agent: &str, id: &str) -> Result<Conversation, ChatError> {
        self.switch_to(agent, id).await?;
        self.conversation(agent)
    }

    /// `Open` without the answer (the window reads what it shows itself).
    pub async fn switch_to(&self, agent: &str, id: &str) -> Result<(), ChatError> {
        let sup = self.inner.supervisor.clone();
        if sup.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let h = self.history_or_err()?;
        let config = self.config_key();
        if id.starts_with(AGENT_SESSION) {
            let hh = h.clone();
            let _ = tokio::task::spawn_blocking(move || flushed(&hh)).await;
        }
        let (id, stored, messages, children, external) = match id.strip_prefix(AGENT_SESSION) {
            Some(sid) => match h.by_session(&config, agent, sid).ok().flatten() {
                Some(existing) => {
                    let stored = h.conversation(&existing).ok().flatten();
                    let messages = h.messages(&existing).unwrap_or_default();
                    let children = super::subagents::stored_children(&h, &existing);
                    (existing, stored, messages, children, None)
                }
                None => (String::new(), None, Vec::new(), Vec::new(), Some(sid.to_owned())),
            },
            None => {
                let hh = h.clone();
                let owned = id.to_owned();
                let (stored, messages, children) = tokio::task::spawn_blocking(move || {
                    flushed(&hh);
                    let children = super::subagents::stored_children(&hh, &owned);
                    Ok::<_, history::HistoryError>((hh.conversation(&owned)?, hh.messages(&owned)?, children))
                })
                .await
                .map_err(|e| ChatError::History(e.to_string()))?
                .map_err(|e| ChatError::History(e.to_string()))?;
                let stored = stored
                    .filter(|s| s.agent == agent && s.config == config)
                    .ok_or_else(|| ChatError::NoSuchConversation(id.to_owned()))?;
                (id.to_owned(), Some(stored), messages, children, None)
            }
        };
        // Message ids go on after the stored ones (they are unique in a
        // conversation, across runs).
        let highest = messages
            .iter()
            .chain(children.iter().flat_map(|c| c.conv.messages.iter()))
            .filter_map(|m| m.id.strip_prefix('m').and_then(|n| n.parse::<u64>().ok()))
            .max()
            .unwrap_or(0);
        self.inner
            .next_id
            .fetch_max(highest + 1, std::sync::atomic::Ordering::Relaxed);
        let listed_title = external.as_ref().and_then(|sid| {
            self.inner
                .history
                .recorder()
                .listed
                .get(&(agent.to_owned(), sid.clone()))
                .filter(|t| !t.is_empty())
                .cloned()
        });
        let mut next = Conv {
            title: stored.as_ref().and_then(|s| s.title.clone()).or(listed_title),
            stored_session: stored.as_ref().and_then(|s| s.session_id.clone()).or(external),
            from_history: true,
            messages,
            subagents: children,
            ..Conv::default()
        };
        next.conversation = (!id.is_empty()).then(|| id.clone());
        next.forked_from = h.forked_from(&id).ok().flatten();
        // A conversation made in a worktree works there again.
        next.worktree = self.inner.worktrees.of_conversation(&id);
        next.read_only = self.cannot_resume(agent, &next);
        self.leave_current(agent, next)?;
        if id.is_empty() {
            let mut convs = lock(&self.inner.convs);
            if let Some(c) = convs.get_mut(agent) {
                self.give_row(agent, c);
            }
        }
        self.emit_switched(agent);
        self.conversations_changed(agent);
        // Resumed now when the agent runs, so its options show.
        if sup.connection(agent).is_some() {
            let this = self.clone();
            let agent = agent.to_owned();
            tokio::spawn(async move {
                if let Err(e) = this.prepare(&agent).await {
                    tracing::debug!(agent, error = %e, "the opened conversation's session");
                }
            });
        }
        Ok(())
    }

    /// Takes up the session `sid` if it is still open in the agent's
    /// process `generation` (left by New or Open).
    pub(super) fn take_live(&self, agent: &str, c: &mut Conv, generation: u64) -> bool {
        let Some(sid) = &c.stored_session else {
            return false;
        };
        let mut live = lock(&self.inner.live);
        let Some(list) = live.get_mut(agent) else {
            return false;
        };
        list.retain(|l| l.generation == generation);
        let Some(i) = list.iter().position(|l| &*l.sid.0 == sid.as_str()) else {
            return false;
        };
        let l = list.remove(i);
        c.session = Some((l.sid, generation));
        c.options = l.options;
        c.commands = l.commands;
        true
    }

    /// Why the conversation cannot go on with its agent session, when the
    /// agent's capabilities are known and offer neither resume nor load
    /// (and the session is not still open in the agent).
    pub(super) fn cannot_resume(&self, agent: &str, c: &Conv) -> Option<String> {
        let sid = c.stored_session.as_ref()?;
        if !c.from_history {
            return None;
        }
        let generation = self.inner.supervisor.connection(agent).map(|(_, g)| g);
        let still_open = lock(&self.inner.live).get(agent).is_some_and(|l| {
            l.iter()
                .any(|l| &*l.sid.0 == sid.as_str() && Some(l.generation) == generation)
        });
        if still_open {
            return None;
        }
        let caps = self.inner.supervisor.capabilities(agent)?;
        if caps.session_capabilities.resume.is_some() || caps.load_session {
            return None;
        }
        Some(gettext(
            "This agent cannot resume its sessions, so this conversation is read-only. Continue in a new conversation.",
        ))
    }

    /// `Delete(agent, id)`: the conversation leaves the history, and the
    /// agent deletes its session where it offers `session/delete`.
    pub async fn delete(&self, agent: &str, id: &str) -> Result<(), ChatError> {
        let sup = self.inner.supervisor.clone();
        if sup.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let h = self.history_or_err()?;
        let config = self.config_key();
        {
            let hh = h.clone();
            let _ = tokio::task::spawn_blocking(move || flushed(&hh)).await;
        }
        let (stored_id, session) = match id.strip_prefix(AGENT_SESSION) {
            Some(sid) => (
                h.by_session(&config, agent, sid).ok().flatten(),
                Some(sid.to_owned()),
            ),
            None => {
                let stored = h
                    .conversation(id)
                    .map_err(|e| ChatError::History(e.to_string()))?
                    .filter(|s| s.agent == agent && s.config == config)
                    .ok_or_else(|| ChatError::NoSuchConversation(id.to_owned()))?;
                (Some(stored.id), stored.session_id)
            }
        };
        let is_current = stored_id.is_some()
            && lock(&self.inner.convs)
                .get(agent)
                .is_some_and(|c| c.conversation == stored_id);
        if is_current {
            self.leave_current(agent, Conv::default())?;
            self.emit_switched(agent);
        }
        if let Some(stored_id) = stored_id {
            if !h.writable() {
                return Err(ChatError::History(h.writer().failure().unwrap_or_default()));
            }
            self.inner.history.recorder().send(Op::Delete {
                conversation: stored_id.clone(),
            });
            // Its checkpoints go with it.
            self.inner.checkpoints.forget(&stored_id).await;
        }
        if let (Some(sid), Some((conn, _)), Some(caps)) =
            (session, sup.connection(agent), sup.capabilities(agent))
        {
            if caps.session_capabilities.delete.is_some() {
                if let Err(e) = calls::delete_session(&conn, &sid).await {
                    sup.log(agent, format!("parley: session/delete failed: {e}"));
                }
            }
        }
        self.conversations_changed(agent);
        Ok(())
    }

    /// `Rename(agent, id, title)`.
    pub fn rename(&self, agent: &str, id: &str, title: &str) -> Result<(), ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let h = self.history_or_err()?;
        if !h.writable() {
            return Err(ChatError::History(h.writer().failure().unwrap_or_default()));
        }
        let title = crate::core::types::options::shown_text(title.trim(), 200);
        let stored = h
            .conversation(id)
            .map_err(|e| ChatError::History(e.to_string()))?
            .filter(|s| s.agent == agent && s.config == self.config_key())
            .ok_or_else(|| ChatError::NoSuchConversation(id.to_owned()))?;
        let title = (!title.is_empty()).then_some(title);
        self.inner.history.recorder().send(Op::Title {
            conversation: stored.id.clone(),
            title: title.clone(),
        });
        let changed = {
            let mut convs = lock(&self.inner.convs);
            match convs.get_mut(agent) {
                Some(c) if c.conversation.as_deref() == Some(id) => {
                    c.title = title.clone();
                    self.inner
                        .history
                        .recorder()
                        .titles
                        .insert(agent.to_owned(), title.clone());
                    Some(c.session_changed(agent))
                }
                _ => None,
            }
        };
        if let Some(e) = changed {
            self.emit(e);
        }
        self.conversations_changed(agent);
        Ok(())
    }
}

use crate::core::history::service::flushed;
