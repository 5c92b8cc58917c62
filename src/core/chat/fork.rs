//! `Fork`: a new conversation holding the open one's messages up to a point,
//! linked to it ("forked from …"), so that editing a sent message, or going
//! on from a read-only conversation, loses nothing.
//!
//! ACP's `session/fork` copies a whole session: it is used when the fork
//! is at the end of a conversation whose session is open and whose agent
//! advertises `sessionCapabilities.fork`. A fork at an earlier message
//! (editing a sent message), or for an agent without `session/fork`,
//! starts a new session instead, and its first prompt carries the earlier
//! turns as a compact transcript, which the window shows in the composer
//! to be read and edited before it is sent.

use super::state::*;
use crate::core::history::places::ForkedFrom;

/// At most this many characters of each message go into a transcript.
const TRANSCRIPT_MESSAGE: usize = 2_000;
/// A transcript keeps its latest messages within this many bytes.
const TRANSCRIPT_TOTAL: usize = 32 * 1024;

/// `ChatService.Fork`'s answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Forked {
    /// The new conversation's id in the history (none when none is kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    pub forked_from: ForkedFrom,
    /// `session` (the agent's `session/fork`) or `transcript` (a new
    /// session; the earlier turns go with the first prompt).
    pub mode: &'static str,
    /// What the composer holds: the transcript (and the text given).
    pub draft: String,
    /// The id of the message sent, when `text` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<String>,
}

impl ChatService {
    /// `Fork(agent, messageId?, text?)`: the open conversation up to (not
    /// including) `messageId`, or whole, becomes a new conversation; with
    /// `text`, that is sent there at once (after the transcript, if any).
    pub async fn fork(
        &self,
        agent: &str,
        before: Option<&str>,
        text: Option<&str>,
    ) -> Result<Forked, ChatError> {
        self.fork_with(agent, before, text, text.is_some()).await
    }

    /// `Fork`, where `send` says whether the draft (transcript, then
    /// `text`) is sent at once or kept as the new conversation's draft (the
    /// window's Edit: the user reads and edits it first).
    pub async fn fork_with(
        &self,
        agent: &str,
        before: Option<&str>,
        text: Option<&str>,
        send: bool,
    ) -> Result<Forked, ChatError> {
        let sup = self.inner.supervisor.clone();
        if sup.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        if text.is_some_and(|t| t.trim().is_empty()) {
            return Err(ChatError::EmptyText);
        }
        let (kept, whole, from, session) = {
            let convs = lock(&self.inner.convs);
            let c = convs.get(agent);
            if c.is_some_and(|c| c.busy) {
                return Err(ChatError::Busy);
            }
            let messages = c.map(|c| c.messages.as_slice()).unwrap_or_default();
            let cut = match before {
                Some(id) => messages
                    .iter()
                    .position(|m| m.id == id)
                    .ok_or_else(|| ChatError::NoSuchMessage(id.to_owned()))?,
                None => messages.len(),
            };
            let kept: Vec<Message> = messages[..cut]
                .iter()
                .filter(|m| !m.queued && !m.dropped())
                .cloned()
                .collect();
            // Its title as the list shows it: the agent's, else the first
            // line of the first message.
            let title = c.and_then(|c| c.title.clone()).or_else(|| {
                let first = messages.iter().find(|m| m.role == Role::User)?.text();
                let line: String = first.lines().next()?.trim().chars().take(80).collect();
                (!line.is_empty()).then_some(line)
            });
            let from = ForkedFrom {
                conversation: c.and_then(|c| c.conversation.clone()).unwrap_or_default(),
                title,
                message_id: before.map(str::to_owned),
            };
            (
                kept,
                cut == messages.len(),
                from,
                c.and_then(|c| c.session.clone()),
            )
        };
        let forked = match session {
            Some(s) if whole => self.fork_session(agent, s).await,
            _ => None,
        };
        let mode = if forked.is_some() { "session" } else { "transcript" };
        let draft = match (&forked, text) {
            (Some(_), t) => t.unwrap_or_default().to_owned(),
            (None, t) => with_transcript(&kept, t.unwrap_or_default()),
        };
        let mut next = Conv {
            messages: kept,
            forked_from: Some(from.clone()),
            ..Conv::default()
        };
        if let Some((sid, generation, raw)) = forked {
            next.stored_session = Some(sid.to_string());
            next.session = Some((sid, generation));
            next.had_session = true;
            next.options = crate::core::types::options::from_session_answer(&raw);
        }
        self.leave_current(agent, next)?;
        let conversation = {
            let mut convs = lock(&self.inner.convs);
            convs.get_mut(agent).and_then(|c| {
                if !c.messages.is_empty() {
                    self.give_row(agent, c);
                }
                c.conversation.clone()
            })
        };
        // (`give_row` stored the link with the row; an empty fork gets both
        // with its first message.)
        // The window reads the new conversation's draft when it switches:
        // the transcript waits there to be read and edited.
        if !send && !draft.is_empty() {
            let key = conversation.clone().unwrap_or_default();
            let d = crate::core::types::draft::Draft {
                text: draft.clone(),
                anchor: None,
            };
            self.set_draft_of(agent, &key, d)?;
        }
        self.emit_switched(agent);
        self.conversations_changed(agent);
        let sent = match send && !draft.trim().is_empty() {
            true => Some(self.send(agent, &draft)?),
            false => None,
        };
        Ok(Forked {
            conversation,
            forked_from: from,
            mode,
            draft,
            sent,
        })
    }

    /// `session/fork` of the conversation's session, where the agent offers
    /// it and the session is open in the running process; `None` otherwise
    /// (and when the agent refuses: logged, and the fork takes a transcript).
    async fn fork_session(
        &self,
        agent: &str,
        (sid, generation): (acp::SessionId, u64),
    ) -> Option<(acp::SessionId, u64, Value)> {
        let sup = &self.inner.supervisor;
        let offered = sup
            .capabilities(agent)
            .is_some_and(|c| c.session_capabilities.fork.is_some());
        let (conn, g) = sup.connection(agent)?;
        if !offered || g != generation {
            return None;
        }
        let def = sup.definition(agent).unwrap_or_default();
        let caps = sup.capabilities(agent).unwrap_or_default();
        let global = sup.global_mcp_servers();
        let (servers, _) = super::session::mcp_servers(&global, &def.mcp_servers, &caps.mcp_capabilities);
        let dirs = if caps.session_capabilities.additional_directories.is_some() {
            def.additional_dirs()
        } else {
            Vec::new()
        };
        match calls::fork_session(&conn, &sid.to_string(), &def.working_dir(), dirs, servers).await {
            Ok((new, raw)) => Some((new, generation, raw)),
            Err(e) => {
                sup.log(
                    agent,
                    format!("parley: session/fork failed, the fork carries a transcript: {e}"),
                );
                None
            }
        }
    }
}

/// The earlier turns as context for a new session, then `text`.
pub(super) fn with_transcript(messages: &[Message], text: &str) -> String {
    let t = transcript(messages);
    match (t.is_empty(), text.is_empty()) {
        (true, _) => text.to_owned(),
        (false, true) => t,
        (false, false) => format!("{t}{text}"),
    }
}

/// A compact transcript: who said what (text only; tools by their title),
/// each message cut, the latest kept within `TRANSCRIPT_TOTAL`.
pub(super) fn transcript(messages: &[Message]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut total = 0;
    for m in messages.iter().rev() {
        let who = match m.role {
            Role::User => gettext("User"),
            Role::Agent => gettext("Agent"),
            Role::System => continue,
        };
        let mut pieces: Vec<String> = Vec::new();
        for p in &m.parts {
            match p {
                Part::Text { text } if !text.trim().is_empty() => pieces.push(text.trim().to_owned()),
                Part::Tool(t) => pieces.push(format!("[{}]", t.title.trim())),
                Part::Attachment(a) => pieces.push(format!("[{}]", a.name)),
                _ => {}
            }
        }
        let said = pieces.join("\n");
        let said = said.trim();
        if said.is_empty() {
            continue;
        }
        let mut cut: String = said.chars().take(TRANSCRIPT_MESSAGE).collect();
        if cut.len() < said.len() {
            cut.push('…');
        }
        let line = format!("**{who}:** {cut}\n\n");
        total += line.len();
        if total > TRANSCRIPT_TOTAL {
            break;
        }
        lines.push(line);
    }
    if lines.is_empty() {
        return String::new();
    }
    lines.reverse();
    format!(
        "{}\n\n{}---\n\n",
        gettext("Earlier in this conversation (for context):"),
        lines.concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(id: &str, role: Role, text: &str) -> Message {
        let mut m = Message::new(id.into(), "a", role);
        m.parts.push(Part::Text { text: text.into() });
        m
    }

    #[test]
    fn a_transcript_says_who_said_what_and_keeps_the_latest() {
        let messages = vec![
            said("m1", Role::User, "Fix the parser"),
            said("m2", Role::Agent, "Fixed."),
            said("m3", Role::System, "restarted"),
        ];
        let t = with_transcript(&messages, "Now the tests");
        assert!(
            t.contains("**User:** Fix the parser\n\n**Agent:** Fixed.\n\n---\n\nNow the tests"),
            "{t}"
        );
        assert!(!t.contains("restarted"));
        assert_eq!(with_transcript(&[], "x"), "x");
        let long: Vec<Message> = (0..100)
            .map(|i| said(&format!("m{i}"), Role::User, &format!("{i} {}", "y".repeat(3000))))
            .collect();
        let t = transcript(&long);
        assert!(t.len() < TRANSCRIPT_TOTAL + 200, "{}", t.len());
        assert!(t.contains("**User:** 99 "), "the latest is kept");
        assert!(!t.contains("**User:** 0 "), "the earliest goes");
    }
}
