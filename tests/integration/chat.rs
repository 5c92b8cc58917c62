//! The spec's "Conversations (milestone M2)": ChatService, the message
//! model and its events, with the demo agent's scripted modes.

use std::time::Duration;

use parley::core::events::Event;
use parley::core::types::message::{wire_name, Part, Role};

use crate::common::*;

fn agent_text(h: &Harness, agent: &str) -> String {
    let conv = h.core.chat.conversation(agent).expect("conversation");
    conv.messages
        .iter()
        .filter(|m| m.role == Role::Agent)
        .map(|m| m.text())
        .collect::<Vec<_>>()
        .join("|")
}

fn last_agent_message(h: &Harness, agent: &str) -> parley::core::types::message::Message {
    let conv = h.core.chat.conversation(agent).expect("conversation");
    conv.messages
        .into_iter()
        .rev()
        .find(|m| m.role == Role::Agent)
        .expect("an agent message")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_100k_chunks_arrives_whole_and_in_order() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "flood 100000 40").expect("send");
    h.wait_idle("a").await;
    let text = last_agent_message(&h, "a").text();
    let body: String = "lorem *ipsum* `dolor` sit amet, consectetur "
        .chars()
        .cycle()
        .take(40)
        .collect();
    let mut expected = String::with_capacity(4_000_000);
    for i in 0..100_000 {
        expected.push_str(&body[..32]);
        expected.push_str(&format!("{i:07}\n"));
    }
    assert_eq!(text.len(), expected.len());
    assert!(text == expected, "the text differs from what was sent");
    // Every chunk was one delta, in order, none coalesced.
    let deltas: Vec<&str> = h
        .seen
        .iter()
        .filter_map(|e| match e {
            Event::MessageDelta(d) if d.kind == parley::core::types::message::PartKind::Text => {
                d.text.as_deref()
            }
            _ => None,
        })
        .collect();
    assert_eq!(deltas.len(), 100_000);
    assert_eq!(deltas.concat(), expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn each_stop_reason_ends_the_agent_message() {
    let mut h = Harness::new(&[agent("a", "")]);
    for reason in ["end_turn", "max_tokens", "max_turn_requests", "refusal"] {
        h.core.chat.send("a", &format!("stop {reason}")).expect("send");
        h.wait_idle("a").await;
        let m = last_agent_message(&h, "a");
        assert_eq!(
            m.stop_reason
                .map(|r| parley::core::types::message::wire_name(&r))
                .as_deref(),
            Some(reason)
        );
        assert!(m.done && m.error.is_none());
    }
    h.core.chat.send("a", "error").expect("send");
    h.wait_idle("a").await;
    let m = last_agent_message(&h, "a");
    assert_eq!(m.stop_reason, None);
    assert!(
        m.error
            .as_deref()
            .unwrap_or_default()
            .contains("failed on purpose"),
        "{m:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_sent_while_busy_are_queued_and_go_out_in_order() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "slow 10 30").expect("send");
    for n in 1..=3 {
        h.core.chat.send("a", &format!("echo {n}")).expect("send");
    }
    let conv = h.core.chat.conversation("a").expect("conv");
    assert_eq!(conv.queued, 3);
    assert!(conv
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .skip(1)
        .all(|m| m.queued));
    h.wait_for("the third answer", Duration::from_secs(20), |e| {
        matches!(e, Event::MessageUpdated(u) if u.message.role == Role::Agent && u.message.done && u.message.text() == "3")
    })
    .await;
    h.wait_idle("a").await;
    let conv = h.core.chat.conversation("a").expect("conv");
    let order: Vec<String> = conv
        .messages
        .iter()
        .map(|m| format!("{:?}:{}", m.role, m.text()))
        .collect();
    let tail: Vec<&str> = order.iter().skip(2).map(String::as_str).collect();
    assert_eq!(
        tail,
        vec![
            "User:echo 1",
            "Agent:1",
            "User:echo 2",
            "Agent:2",
            "User:echo 3",
            "Agent:3"
        ]
    );
    assert_eq!(conv.queued, 0);
    assert!(!conv.busy);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_answers_permissions_drops_the_queue_and_ends_cancelled() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "permission").expect("send");
    let request = h.next_permission().await;
    assert_eq!(request.options.len(), 4);
    assert_eq!(request.rejections, 0);
    let q1 = h.core.chat.send("a", "echo one").expect("queued");
    let q2 = h.core.chat.send("a", "echo two").expect("queued");
    assert_eq!(h.core.chat.conversation("a").expect("conv").permissions.len(), 1);
    h.core.chat.cancel("a").expect("cancel");
    h.wait_for(
        "permission resolved",
        Duration::from_secs(5),
        |e| matches!(e, Event::PermissionResolved(r) if r.id == request.id),
    )
    .await;
    h.wait_idle("a").await;
    let conv = h.core.chat.conversation("a").expect("conv");
    for id in [&q1, &q2] {
        let m = conv
            .messages
            .iter()
            .find(|m| &m.id == id)
            .expect("queued message kept");
        assert_eq!(m.error.as_deref(), Some("cancelled"));
        assert!(!m.queued);
    }
    let m = last_agent_message(&h, "a");
    assert_eq!(
        m.stop_reason
            .map(|r| parley::core::types::message::wire_name(&r))
            .as_deref(),
        Some("cancelled")
    );
    assert!(m.text().contains("permission answer: cancelled"), "{}", m.text());
    assert!(conv.permissions.is_empty() && conv.queued == 0 && !conv.busy);
    // The call whose request the Cancel answered is closed, saying why.
    assert_eq!(
        closed_tools(&m),
        vec![("failed".into(), "Not finished: the turn was cancelled.".into())]
    );
    // The conversation takes new messages again.
    h.core.chat.send("a", "echo after").expect("send");
    h.wait_idle("a").await;
    assert_eq!(last_agent_message(&h, "a").text(), "after");
}

#[tokio::test(flavor = "multi_thread")]
async fn rejections_count_the_refusals_of_the_turn() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "permission 3").expect("send");
    let mut counts = Vec::new();
    for _ in 0..3 {
        let p = h.next_permission().await;
        counts.push(p.rejections);
        assert!(
            h.core.chat.answer_permission(&p.id, "nope").is_err(),
            "an unknown option is an error"
        );
        h.core
            .chat
            .answer_permission(&p.id, "reject-once")
            .expect("answer");
        assert!(
            h.core.chat.answer_permission(&p.id, "reject-once").is_err(),
            "answered already"
        );
    }
    h.wait_idle("a").await;
    assert_eq!(counts, vec![0, 1, 2]);
    assert!(h.core.chat.answer_permission("p-unknown", "x").is_err());
    let m = last_agent_message(&h, "a");
    assert!(m.text().contains("permission answer: reject_once"));
    // The demo agent, like codex-acp and gemini-cli, sends no last status
    // for a refused call: the turn's end closes each, saying why.
    let reason = "Not run: the permission was refused.".to_owned();
    assert_eq!(closed_tools(&m), vec![("failed".into(), reason); 3], "{m:?}");
}

/// The (status, output) of each tool call of `m`.
fn closed_tools(m: &parley::core::types::message::Message) -> Vec<(String, String)> {
    m.parts
        .iter()
        .filter_map(|p| match p {
            Part::Tool(t) => Some((wire_name(&t.status), t.output.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_turn_shows_tools_diffs_plan_thought_and_usage() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "change the greeting").expect("send");
    let p = h.next_permission().await;
    assert_eq!(parley::core::types::message::wire_name(&p.tool_call.kind), "edit");
    assert_eq!(
        p.tool_call.diffs.len(),
        1,
        "the request shows the tool call with its diff"
    );
    h.core.chat.answer_permission(&p.id, "allow-once").expect("allow");
    h.wait_idle("a").await;
    let m = last_agent_message(&h, "a");
    assert_eq!(
        m.stop_reason
            .map(|r| parley::core::types::message::wire_name(&r))
            .as_deref(),
        Some("end_turn")
    );
    let tools: Vec<(String, String)> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Tool(t) => Some((wire_name(&t.kind), wire_name(&t.status))),
            _ => None,
        })
        .collect();
    let expect = |k: &str, s: &str| (k.to_string(), s.to_string());
    assert_eq!(
        tools,
        vec![
            expect("read", "completed"),
            expect("search", "completed"),
            expect("edit", "completed"),
            expect("execute", "failed")
        ]
    );
    assert!(matches!(&m.parts[0], Part::Thought { text } if text.contains("change the greeting")));
    let plan = m.parts.iter().find_map(|p| match p {
        Part::Plan { entries, .. } => Some(entries.clone()),
        _ => None,
    });
    assert!(plan
        .expect("a plan")
        .iter()
        .all(|e| wire_name(&e.status) == "completed"));
    assert!(m.text().contains("you allowed the edit"));
    let usage = h.core.chat.conversation("a").expect("conv").usage;
    assert!(usage.used > 0 && usage.size == 200_000);
    assert!(h
        .seen
        .iter()
        .any(|e| matches!(e, Event::UsageChanged(u) if u.usage == usage)));
    // A tool call's updates merge into its one part: read went pending → in_progress → completed.
    let read_states: Vec<String> = h
        .seen
        .iter()
        .filter_map(|e| match e {
            Event::MessageDelta(d) => match &d.part {
                // Fresh ids each turn: "read-<n>".
                Some(Part::Tool(t)) if t.id.starts_with("read-") => Some(wire_name(&t.status)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(read_states, vec!["pending", "in_progress", "completed"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_and_slash_commands() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "usage 1234 0").expect("send");
    h.wait_idle("a").await;
    let conv = h.core.chat.conversation("a").expect("conv");
    assert_eq!(
        (conv.usage.used, conv.usage.size),
        (1234, 0),
        "size 0 when unknown"
    );
    let names: Vec<&str> = conv.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["help", "plan", "flood"],
        "sent before session/new answered, kept"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_turn_ends_the_message_and_a_restart_is_announced() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "echo first").expect("send");
    h.wait_idle("a").await;
    h.core.chat.send("a", "crash").expect("send");
    h.wait_idle("a").await;
    let m = last_agent_message(&h, "a");
    assert!(m.done && m.stop_reason.is_none());
    assert!(
        m.error
            .as_deref()
            .unwrap_or_default()
            .contains("exited on its own"),
        "{m:?}"
    );
    h.core.chat.send("a", "echo again").expect("send");
    h.wait_idle("a").await;
    let conv = h.core.chat.conversation("a").expect("conv");
    let restarted = conv
        .messages
        .iter()
        .filter(|m| m.code == Some(parley::core::types::message::MessageCode::AgentRestarted))
        .count();
    assert_eq!(restarted, 1);
    assert_eq!(last_agent_message(&h, "a").text(), "again");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_cannot_start_gives_agent_unavailable() {
    let mut h = Harness::new(&[agent("a", "exit-at-start")]);
    h.core.chat.send("a", "hello").expect("send");
    h.wait_idle("a").await;
    let sys = h.system_message("a");
    assert_eq!(
        sys.code,
        Some(parley::core::types::message::MessageCode::AgentUnavailable)
    );
    assert!(
        sys.error
            .as_deref()
            .unwrap_or_default()
            .contains("exiting at start"),
        "{sys:?}"
    );
}

/// "Authentication required" from `session/new` is a sign-in, not an
/// unavailable agent: the message waits, the agent is marked.
#[tokio::test(flavor = "multi_thread")]
async fn authentication_required_asks_for_a_sign_in() {
    let mut h = Harness::new(&[agent("a", "auth-required")]);
    h.core.chat.send("a", "hello").expect("send");
    h.wait_idle("a").await;
    let status = h.core.auth.status("a").expect("status");
    assert!(status.needs_sign_in, "{status:?}");
    assert_eq!(status.message.as_deref(), Some("Authentication required"));
    let conv = h.core.chat.conversation("a").expect("conversation");
    assert_eq!(conv.messages.len(), 1, "no system message: {:?}", conv.messages);
    assert!(conv.messages[0].queued);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_agents_and_empty_text_are_errors() {
    let h = Harness::new(&[agent("a", "")]);
    use parley::core::chat::ChatError;
    let unknown = h.core.chat.send("nobody", "hi").expect_err("unknown");
    assert_eq!(unknown, ChatError::UnknownAgent("nobody".into()));
    assert!(unknown.to_string().contains("unknown agent"));
    assert_eq!(h.core.chat.send("a", "  \n "), Err(ChatError::EmptyText));
    assert!(h.core.chat.cancel("nobody").is_err());
    assert!(h.core.chat.conversation("nobody").is_err());
    assert!(h.core.chat.conversation("a").expect("empty").messages.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn updates_before_session_new_and_after_the_prompt_answer_are_kept_in_order() {
    let mut h = Harness::new(&[agent("a", "early-updates")]);
    h.core.chat.send("a", "late").expect("send");
    h.wait_for(
        "the late chunk",
        Duration::from_secs(10),
        |e| matches!(e, Event::MessageDelta(d) if d.text.as_deref() == Some("after the answer.")),
    )
    .await;
    assert_eq!(
        agent_text(&h, "a"),
        "(sent before session/new answered) before the answer. after the answer."
    );
}

/// A tool call whose id was used in an earlier turn starts a card in the
/// current turn; the earlier turn's card keeps its own title (before, the
/// new turn showed no card and the old one changed two turns up).
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_id_reused_in_a_later_turn_starts_a_new_card() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "tool same-1 first step").expect("send");
    h.wait_idle("a").await;
    h.core.chat.send("a", "tool same-1 second step").expect("send");
    h.wait_idle("a").await;
    let conv = h.core.chat.conversation("a").expect("conversation");
    let titles: Vec<Vec<String>> = conv
        .messages
        .iter()
        .filter(|m| m.role == Role::Agent)
        .map(|m| {
            m.parts
                .iter()
                .filter_map(|p| match p {
                    Part::Tool(t) if t.id == "same-1" => Some(t.title.clone()),
                    _ => None,
                })
                .collect()
        })
        .collect();
    assert_eq!(
        titles,
        vec![vec!["first step".to_string()], vec!["second step".to_string()]],
        "one card per turn"
    );
}
