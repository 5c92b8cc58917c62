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
mod tests {
    use super::*;
    use serde_json::json;

    /// A conversation with a user message and the agent message being
    /// streamed, as a turn leaves it.
    fn conv() -> Conv {
        let mut c = Conv::default();
        c.messages.push(Message::new("u1".into(), "a", Role::User));
        c.messages.push(Message::new("m1".into(), "a", Role::Agent));
        c.current = Some(1);
        c
    }

    fn update(v: serde_json::Value) -> acp::SessionUpdate {
        serde_json::from_value(v).expect("a session update")
    }

    /// Applies `updates` and returns the events.
    fn apply(c: &mut Conv, updates: Vec<serde_json::Value>) -> Vec<Event> {
        let mut events = Vec::new();
        let mut n = 0;
        for u in updates {
            let mut ids = || {
                n += 1;
                format!("new{n}")
            };
            let _ = c.apply("a", update(u), &mut ids, &mut |e| events.push(e));
        }
        events
    }

    fn text(t: &str) -> serde_json::Value {
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}})
    }

    #[test]
    fn zeds_terminal_meta_shows_the_terminal_and_its_output() {
        let mut c = conv();
        let events = apply(
            &mut c,
            vec![
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls",
                    "_meta": {"terminal_info": {"terminal_id": "z1"}}}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                    "_meta": {"terminal_output": {"terminal_id": "z1", "data": "a.txt\r\n"}}}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                    "_meta": {"terminal_exit": {"terminal_id": "z1", "exit_code": 0, "signal": null}}}),
            ],
        );
        assert!(matches!(find_tool(&c, "t1"), Some(t) if t.terminals == ["z1"]));
        assert!(events.iter().any(
            |e| matches!(e, Event::TerminalOutput(o) if o.terminal_id == "z1" && o.data == "a.txt\r\n")
        ));
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::TerminalExited(x) if x.exit_code == Some(0))));
    }

    #[test]
    fn an_empty_chunk_is_no_delta_and_no_part() {
        let mut c = conv();
        let thought =
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": ""}});
        let events = apply(&mut c, vec![text(""), thought, text("a"), text("")]);
        assert_eq!(c.messages[1].parts, vec![Part::Text { text: "a".into() }]);
        assert_eq!(events.len(), 1, "{events:?}");
    }

    #[test]
    fn chunks_grow_one_part_and_a_thought_starts_another() {
        let mut c = conv();
        let events = apply(
            &mut c,
            vec![
                text("Hel"),
                text("lo"),
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}),
                text("!"),
            ],
        );
        assert_eq!(
            c.messages[1].parts,
            vec![
                Part::Text { text: "Hello".into() },
                Part::Thought { text: "hm".into() },
                Part::Text { text: "!".into() },
            ]
        );
        let deltas: Vec<(usize, PartKind, Option<&str>)> = events
            .iter()
            .filter_map(|e| match e {
                Event::MessageDelta(d) if d.message_id == "m1" => Some((d.index, d.kind, d.text.as_deref())),
                _ => None,
            })
            .collect();
        assert_eq!(
            deltas,
            vec![
                (0, PartKind::Text, Some("Hel")),
                (0, PartKind::Text, Some("lo")),
                (1, PartKind::Thought, Some("hm")),
                (2, PartKind::Text, Some("!"))
            ]
        );
    }

    #[test]
    fn a_tool_call_and_its_updates_are_one_part() {
        let mut c = conv();
        apply(
            &mut c,
            vec![
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read", "kind": "read", "status": "pending"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
            ],
        );
        let tools: Vec<&ToolCall> = c.messages[1]
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Tool(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].title, "Read");
        assert_eq!(tools[0].kind, acp::ToolKind::Read);
        assert_eq!(tools[0].status, acp::ToolCallStatus::Completed);
    }

    #[test]
    fn a_tool_call_id_of_an_earlier_turn_starts_a_new_card() {
        let mut c = conv();
        let call = |title: &str| json!({"sessionUpdate": "tool_call", "toolCallId": "same", "title": title, "status": "completed"});
        apply(&mut c, vec![call("first")]);
        // The next turn: a user message and a new agent message.
        c.messages.push(Message::new("u2".into(), "a", Role::User));
        c.messages.push(Message::new("m2".into(), "a", Role::Agent));
        c.current = Some(3);
        apply(&mut c, vec![call("second")]);
        let title = |i: usize| match c.messages[i].parts.first() {
            Some(Part::Tool(t)) => t.title.clone(),
            other => format!("{other:?}"),
        };
        assert_eq!((title(1), title(3)), ("first".to_string(), "second".to_string()));
    }

    #[test]
    fn usage_is_kept_and_told_and_a_plan_replaces_the_plan() {
        let mut c = conv();
        let plan = |status: &str| {
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "step", "priority": "high", "status": status}
            ]})
        };
        let events = apply(
            &mut c,
            vec![
                json!({"sessionUpdate": "usage_update", "used": 10, "size": 100}),
                plan("pending"),
                plan("completed"),
            ],
        );
        assert_eq!(
            c.usage,
            Usage {
                used: 10,
                size: 100,
                cost: None
            }
        );
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::UsageChanged(u) if u.usage.used == 10)));
        let plans: Vec<&Part> = c.messages[1]
            .parts
            .iter()
            .filter(|p| matches!(p, Part::Plan { .. }))
            .collect();
        assert_eq!(plans.len(), 1, "one plan part");
        assert!(
            matches!(plans[0], Part::Plan { entries, .. } if entries[0].status == acp::PlanEntryStatus::Completed)
        );
    }

    #[test]
    fn options_title_and_cost_follow_the_agent() {
        let mut c = Conv {
            options: crate::core::types::options::from_session_answer(&json!({
                "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}
            })),
            ..Conv::default()
        };
        let mut events = Vec::new();
        let mut none = || String::new();
        for u in [
            json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"}),
            json!({"sessionUpdate": "session_info_update", "title": "Fix the\u{1b} build"}),
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": {"amount": 0.25, "currency": "USD"}}),
            json!({"sessionUpdate": "config_option_update", "configOptions": [
                {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "a",
                 "options": [{"value": "a", "name": "A"}]}]}),
        ] {
            assert_eq!(c.apply("a", update(u), &mut none, &mut |e| events.push(e)), None);
        }
        assert_eq!(c.title.as_deref(), Some("Fix the build"));
        assert_eq!(
            c.usage.cost.as_ref().map(|c| (c.amount, c.currency.as_str())),
            Some((0.25, "USD"))
        );
        let huge = json!({"sessionUpdate": "usage_update", "used": 1, "size": 2,
            "cost": {"amount": 1e300, "currency": "USD"}});
        c.apply("a", update(huge), &mut none, &mut |_| {});
        assert_eq!(c.usage.cost, None, "an amount no session costs is not shown");
        // The config option joined the legacy mode, which kept its new value.
        let ids: Vec<_> = c
            .options
            .iter()
            .map(|o| (o.id.as_str(), o.current_text()))
            .collect();
        assert_eq!(ids, [("model", "a".to_owned()), ("mode", "code".to_owned())]);
        let names: Vec<_> = events.iter().map(Event::name).collect();
        assert_eq!(
            names,
            [
                "session:changed",
                "session:changed",
                "usage:changed",
                "session:changed"
            ]
        );
    }

    #[test]
    fn without_a_streamed_message_updates_start_one_and_unshown_kinds_are_named() {
        let mut c = Conv::default();
        apply(&mut c, vec![text("late")]);
        assert_eq!(c.messages.len(), 1);
        assert_eq!(c.messages[0].id, "new1");
        assert_eq!(c.messages[0].role, Role::Agent);
        let mut none = || String::new();
        let unshown = c.apply(
            "a",
            update(json!({"sessionUpdate": "subagent_update", "sessionId": "s2"})),
            &mut none,
            &mut |_| {},
        );
        assert_eq!(unshown.as_deref(), Some("subagent_update"));
    }
}
