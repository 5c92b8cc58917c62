//! Applying the agent's session updates to a conversation: text and thought
//! chunks, tool calls and their updates, plans, usage and commands. Pure:
//! no tokio, no I/O; new ids come from `next_id` and the events that tell
//! the window go to `out` (the unit tests below collect them).

use agent_client_protocol_schema::v1 as acp;

use super::state::Conv;
use crate::core::events::{Event, MessageDelta, SessionChanged, UsageChanged};
use crate::core::types::long_text;
use crate::core::types::message::{self, Command, Cost, Message, Part, PartKind, Role, ToolCall, Usage};
use crate::core::types::options::{self as controls, OptionSource};

// `next_id` (where new message ids come from) and `out` (where the events
// go) are generic, not `dyn`: this runs for every chunk of every answer,
// and the calls inline.

impl Conv {
    /// `session:changed`, with what the conversation now has.
    pub(super) fn session_changed(&self, agent: &str) -> Event {
        Event::SessionChanged(SessionChanged {
            agent: agent.to_owned(),
            title: self.title.clone(),
            options: self.options.clone(),
        })
    }

    /// Applies one update of the conversation's session. Returns the kind
    /// of an update that is not shown (for the log), else `None`.
    #[inline]
    pub(super) fn apply(
        &mut self,
        agent: &str,
        update: acp::SessionUpdate,
        next_id: &mut impl FnMut() -> String,
        out: &mut impl FnMut(Event),
    ) -> Option<String> {
        use acp::SessionUpdate as U;
        match update {
            U::UsageUpdate(u) => {
                self.usage = Usage {
                    turn: self.usage.turn,
                    tokens: self.usage.tokens,
                    used: u.used,
                    size: u.size,
                    cost: u.cost.filter(|c| (0.0..=1e9).contains(&c.amount)).map(|c| Cost {
                        amount: c.amount,
                        currency: c
                            .currency
                            .chars()
                            .filter(char::is_ascii_alphabetic)
                            .take(8)
                            .collect(),
                    }),
                };
                out(Event::UsageChanged(UsageChanged {
                    agent: agent.to_owned(),
                    usage: self.usage.clone(),
                }));
            }
            U::ConfigOptionUpdate(u) => {
                let list = serde_json::to_value(&u.config_options).unwrap_or_default();
                controls::replace_config(&mut self.options, controls::config_options(&list));
                out(self.session_changed(agent));
            }
            U::CurrentModeUpdate(u) => {
                let mode = serde_json::Value::String(u.current_mode_id.to_string());
                // The legacy mode picker, else a config option of that
                // category that offers the same value.
                let target = match self
                    .options
                    .iter()
                    .position(|o| o.source == OptionSource::LegacyMode)
                {
                    Some(i) => Some(i),
                    None => self
                        .options
                        .iter()
                        .position(|o| o.category == "mode" && o.offers(&mode)),
                };
                if let Some(i) = target {
                    self.options[i].set_current(&mode);
                    out(self.session_changed(agent));
                }
            }
            U::SessionInfoUpdate(u) => {
                use agent_client_protocol_schema::MaybeUndefined as M;
                match u.title {
                    M::Value(t) => self.title = Some(controls::shown_text(&t, 200)),
                    M::Null => self.title = None,
                    M::Undefined => return None,
                }
                out(self.session_changed(agent));
            }
            U::AvailableCommandsUpdate(u) => {
                self.commands = u
                    .available_commands
                    .iter()
                    .map(|a| Command {
                        name: a.name.clone(),
                        description: a.description.clone(),
                    })
                    .collect();
            }
            // An empty chunk (claude-agent-acp sends them) changes nothing:
            // no `message:delta`, no empty part.
            U::AgentMessageChunk(chunk) => {
                // A new `messageId` starts a new message of the agent's:
                // its text goes to a part of its own.
                let text = message::into_text(chunk.content);
                if !text.is_empty() {
                    let new_message = self.chunk_message(chunk.message_id.as_ref());
                    self.append_text(agent, false, new_message, text, next_id, out)
                }
            }
            U::AgentThoughtChunk(chunk) => {
                let text = message::into_text(chunk.content);
                if !text.is_empty() {
                    self.append_text(agent, true, false, text, next_id, out)
                }
            }
            U::ToolCall(t) => {
                // A new call: an id seen in an earlier turn starts a card in
                // this one (agents reuse ids), never reopens the old card.
                let mut call = ToolCall::from(&t);
                zed_terminal_meta(agent, &mut call, t.meta.as_ref(), out);
                self.put_tool(agent, call, true, next_id, out);
            }
            U::ToolCallUpdate(u) => {
                let existing = find_tool(self, &u.tool_call_id.to_string());
                let mut call = match existing {
                    Some(mut call) => {
                        call.merge(&u);
                        call
                    }
                    None => ToolCall::from_update(&u),
                };
                zed_terminal_meta(agent, &mut call, u.meta.as_ref(), out);
                self.put_tool(agent, call, false, next_id, out);
            }
            U::Plan(p) => self.apply_plan(agent, message::plan_entries(&p), next_id, out),
            U::PlanUpdate(u) => self.apply_plan_update(agent, u, next_id, out),
            U::PlanRemoved(r) => self.apply_plan_removed(agent, &r.plan_id.to_string(), out),
            U::Notice(n) => self.apply_notice(agent, &n, next_id, out),
            U::CompactionUpdate(u) => {
                let id = u.compaction_id.to_string();
                self.apply_compaction(agent, id, |c| c.patch(&u, message::into_text), next_id, out);
            }
            U::CompactionSummaryChunk(chunk) => {
                let id = chunk.compaction_id.to_string();
                let text = message::into_text(chunk.content);
                self.apply_compaction(agent, id, |c| c.append(&text), next_id, out);
            }
            U::UserMessageChunk(_) => tracing::debug!(agent, "user message chunk (replay) ignored"),
            other => {
                return Some(message::wire_name(
                    &serde_json::to_value(&other)
                        .ok()
                        .and_then(|v| v.get("sessionUpdate").cloned()),
                ));
            }
        }
        None
    }

    /// Whether a chunk's `messageId` differs from the last chunk's.
    fn chunk_message(&mut self, id: Option<&acp::MessageId>) -> bool {
        let Some(id) = id else { return false };
        let id = id.to_string();
        let changed = self.chunk_message.as_ref().is_some_and(|last| *last != id);
        self.chunk_message = Some(id);
        changed
    }

    fn append_text(
        &mut self,
        agent: &str,
        thought: bool,
        new_part: bool,
        text: String,
        next_id: &mut impl FnMut() -> String,
        out: &mut impl FnMut(Event),
    ) {
        let (mi, m) = target_message(self, agent, next_id);
        let last_matches = match m.parts.last() {
            _ if new_part => false,
            Some(Part::Text { .. }) => !thought,
            Some(Part::Thought { .. }) => thought,
            _ => false,
        };
        if !last_matches {
            m.parts.push(if thought {
                Part::Thought { text: String::new() }
            } else {
                Part::Text { text: String::new() }
            });
        }
        let index = m.parts.len() - 1;
        let mut long = false;
        if let Some(Part::Text { text: t } | Part::Thought { text: t }) = m.parts.last_mut() {
            t.push_str(&text);
            long = t.len() > long_text::KEPT;
        }
        let id = m.id.clone();
        if long {
            // A giant answer keeps its end only (the window does the same
            // with the same deltas).
            let cut = self.cuts.entry((id.clone(), index)).or_default();
            if let Some(Part::Text { text: t } | Part::Thought { text: t }) =
                self.messages.get_mut(mi).and_then(|m| m.parts.get_mut(index))
            {
                long_text::cap(t, cut);
            }
        }
        out(Event::MessageDelta(MessageDelta {
            agent: agent.to_owned(),
            message_id: id,
            index,
            kind: if thought {
                PartKind::Thought
            } else {
                PartKind::Text
            },
            text: Some(text),
            part: None,
        }));
    }

    /// Puts `call` where it last appeared (within this turn only, for
    /// `this_turn`), else as a new part of the target message.
    pub(super) fn put_tool(
        &mut self,
        agent: &str,
        call: ToolCall,
        this_turn: bool,
        next_id: &mut impl FnMut() -> String,
        out: &mut impl FnMut(Event),
    ) {
        let c = self;
        let turn_start = if this_turn {
            c.messages
                .iter()
                .rposition(|m| m.role == Role::User && !m.queued && !m.steered)
                .map_or(0, |i| i + 1)
        } else {
            0
        };
        let found = c
            .messages
            .iter()
            .enumerate()
            .skip(turn_start)
            .rev()
            .find_map(|(mi, m)| {
                m.parts
                    .iter()
                    .position(|p| matches!(p, Part::Tool(t) if t.id == call.id))
                    .map(|pi| (mi, pi))
            });
        let (m, index) = match found {
            Some((mi, pi)) => (&mut c.messages[mi], pi),
            None => {
                let (_, m) = target_message(c, agent, next_id);
                let n = m.parts.len();
                (m, n)
            }
        };
        let part = Part::Tool(call);
        set_part(m, index, part.clone());
        out(Event::MessageDelta(MessageDelta {
            agent: agent.to_owned(),
            message_id: m.id.clone(),
            index,
            kind: PartKind::Tool,
            text: None,
            part: Some(part),
        }));
    }
}

pub(super) fn find_tool(c: &Conv, id: &str) -> Option<ToolCall> {
    c.messages.iter().rev().find_map(|m| {
        m.parts.iter().find_map(|p| match p {
            Part::Tool(t) if t.id == id => Some(t.clone()),
            _ => None,
        })
    })
}

pub(super) fn set_part(m: &mut Message, index: usize, part: Part) {
    if index < m.parts.len() {
        m.parts[index] = part;
    } else {
        m.parts.push(part);
    }
}

/// The message an update goes to: the one being streamed, else the last
/// agent message (late updates after the prompt's answer are kept there),
/// else a new agent message.
pub(super) fn target_message<'a>(
    c: &'a mut Conv,
    agent: &str,
    new_id: &mut impl FnMut() -> String,
) -> (usize, &'a mut Message) {
    let i = match c
        .current
        .filter(|&i| i < c.messages.len())
        .or_else(|| c.messages.iter().rposition(|m| m.role == Role::Agent))
    {
        Some(i) => i,
        None => {
            c.messages.push(Message::new(new_id(), agent, Role::Agent));
            c.messages.len() - 1
        }
    };
    (i, &mut c.messages[i])
}

/// Zed's form of a terminal in a tool call, which some agents send instead
/// of the terminal capability: `_meta.terminal_info` names it (the call
/// shows it), `_meta.terminal_output` carries what it printed and
/// `_meta.terminal_exit` how it ended; both go out as the capability's
/// events, so the window shows them the same way.
fn zed_terminal_meta(
    agent: &str,
    call: &mut ToolCall,
    meta: Option<&serde_json::Map<String, serde_json::Value>>,
    out: &mut impl FnMut(Event),
) {
    use serde_json::Value;
    let Some(meta) = meta else { return };
    let id_of = |v: &Value| v.get("terminal_id").and_then(Value::as_str).map(str::to_owned);
    if let Some(id) = meta.get("terminal_info").and_then(id_of) {
        if !call.terminals.contains(&id) {
            call.terminals.push(id);
        }
    }
    if let Some(o) = meta.get("terminal_output") {
        if let (Some(id), Some(data)) = (id_of(o), o.get("data").and_then(Value::as_str)) {
            out(Event::TerminalOutput(crate::core::events::TerminalOutput {
                agent: agent.to_owned(),
                terminal_id: id,
                data: data.to_owned(),
            }));
        }
    }
    if let Some(x) = meta.get("terminal_exit") {
        if let Some(id) = id_of(x) {
            out(Event::TerminalExited(crate::core::events::TerminalExited {
                agent: agent.to_owned(),
                terminal_id: id,
                exit_code: x
                    .get("exit_code")
                    .and_then(Value::as_u64)
                    .and_then(|c| u32::try_from(c).ok()),
                signal: x.get("signal").and_then(Value::as_str).map(str::to_owned),
            }));
        }
    }
}

#[cfg(test)]
#[path = "updates_tests.rs"]
mod tests;
