//! Unit tests of `updates` (kept apart so the module itself stays readable).
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
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::TerminalOutput(o) if o.terminal_id == "z1" && o.data == "a.txt\r\n")));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::TerminalExited(x) if x.exit_code == Some(0))));
}

#[test]
fn an_empty_chunk_is_no_delta_and_no_part() {
    let mut c = conv();
    let thought = json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": ""}});
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
            ..Usage::default()
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

#[test]
fn an_object_raw_output_beside_a_diff_is_not_dumped() {
    // qwen-code's edit: the diff, and a rawOutput holding both files again.
    let mut c = conv();
    apply(
        &mut c,
        vec![
            json!({"sessionUpdate": "tool_call", "toolCallId": "e1", "title": "Edit a.txt", "kind": "edit",
                "content": [{"type": "diff", "path": "/p/a.txt", "oldText": "old", "newText": "new"}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "completed",
                "rawOutput": {"fileDiff": "@@ -1 +1 @@", "originalContent": "old", "newContent": "new"}}),
            // With nothing else to show, an object is still shown as it came.
            json!({"sessionUpdate": "tool_call", "toolCallId": "o1", "title": "Other",
                "rawOutput": {"answer": 42}}),
        ],
    );
    let edit = find_tool(&c, "e1").expect("the edit");
    assert_eq!(edit.diffs.len(), 1);
    assert_eq!(edit.output, "", "the rawOutput object was dumped");
    assert_eq!(
        find_tool(&c, "o1").map(|t| t.output.clone()).as_deref(),
        Some(r#"{"answer":42}"#)
    );
}
