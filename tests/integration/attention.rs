//! What waits for the user (issue 20), with the demo agent: permission
//! rules answering at once, elicitation (form and URL), a silent turn
//! marked "not responding", and a cancel the agent ignores.

use std::time::Duration;

use parley::core::events::Event;
use parley::core::types::message::{MessageCode, Part, Role};
use serde_json::{json, Value};

use crate::common::*;

fn config(rules: Value, silence: &str) -> String {
    serde_json::to_string_pretty(&json!({
        "limits": {"maxRunningAgents": 4, "stopIdleAgentsAfter": "0", "turnSilenceWarning": silence},
        "agents": [agent("demo", "default")],
        "permissions": rules,
    }))
    .unwrap_or_default()
}

/// The text of the agent's last answer.
fn last_answer(h: &Harness) -> String {
    let conv = h.core.chat.conversation("demo").expect("conversation");
    conv.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Agent)
        .map(|m| {
            m.parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<String>()
        })
        .unwrap_or_default()
}

/// Sends `text` and waits for the turn's end, answering any permission
/// request that reaches the user with `reject-once`; says whether one did.
async fn turn(h: &mut Harness, text: &str) -> bool {
    let start = h.seen.len();
    h.core.chat.send("demo", text).expect("send");
    let mut asked = false;
    loop {
        let e = h
            .wait_for("the turn's end or a permission", Duration::from_secs(20), |e| {
                matches!(e, Event::PermissionRequested(_)) || matches!(e, Event::TurnChanged(t) if !t.busy)
            })
            .await;
        match e {
            Event::PermissionRequested(p) => {
                asked = true;
                h.core
                    .chat
                    .answer_permission(&p.id, "reject-once")
                    .expect("answer");
            }
            _ => break,
        }
    }
    let _ = start;
    asked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_answer_with_the_agents_own_option_and_leave_the_rest_to_the_user() {
    let home = parley::core::config::model::home_dir().display().to_string();
    let rules = json!([
        {"kind": "execute", "title": "Run cargo *", "decision": "allow"},
        {"kind": "edit", "path": "~/src/parley/**", "decision": "allow"},
        {"kind": "delete", "decision": "reject"},
        {"kind": "other", "title": "Kindless *", "decision": "allow"},
    ]);
    let mut h = Harness::with(&config(rules, "0"), fast(), false);

    // Allowed by rule 1: the agent gets allow-once, the user is not asked.
    assert!(!turn(&mut h, "ask execute - Run cargo test").await);
    assert_eq!(last_answer(&h), "permission answer: allow-once");
    let conv = h.core.chat.conversation("demo").expect("conversation");
    let mark = conv
        .messages
        .iter()
        .rev()
        .find(|m| m.code == Some(MessageCode::PermissionRule))
        .expect("the conversation says a rule answered");
    let text = mark.error.clone().unwrap_or_default();
    assert!(
        text.starts_with("Allowed by rule 1 (allow execute · “Run cargo *”)"),
        "{text}"
    );

    // A rule that must not match: another title.
    assert!(turn(&mut h, "ask execute - Run rm -rf /").await);
    assert_eq!(last_answer(&h), "permission answer: reject-once");

    // Paths: inside the glob, then outside it.
    let inside = format!("ask edit {home}/src/parley/src/main.rs Edit main.rs");
    assert!(!turn(&mut h, &inside).await);
    assert_eq!(last_answer(&h), "permission answer: allow-once");
    assert!(turn(&mut h, "ask edit /etc/passwd Edit passwd").await);

    // A reject rule answers with the agent's reject option, never "cancelled".
    assert!(!turn(&mut h, "ask delete - Delete target").await);
    assert_eq!(last_answer(&h), "permission answer: reject-once");

    // No kind: only the rule that says "other" answers it.
    assert!(!turn(&mut h, "ask none - Kindless thing").await);
    assert_eq!(last_answer(&h), "permission answer: allow-once");
    assert!(turn(&mut h, "ask none - Something else").await);
    // A kind given in the call's announcement counts: a delete, rejected.
    assert!(!turn(&mut h, "ask announced:delete - Kindless in the request").await);
    assert_eq!(last_answer(&h), "permission answer: reject-once");
    h.core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_of_another_agent_or_an_invalid_glob_does_not_answer() {
    let rules = json!([{"agents": ["gemini"], "decision": "allow"}]);
    let mut h = Harness::with(&config(rules, "0"), fast(), false);
    assert!(
        turn(&mut h, "ask edit - Edit").await,
        "gemini's rule is not demo's"
    );
    let problems = h
        .core
        .config
        .validate(&config(json!([{"title": "[oops", "decision": "allow"}]), "0"));
    let p = problems.iter().find(|p| !p.warning).expect("an error");
    assert!(p.message.contains("permissions[0].title: not a glob"), "{p:?}");
    assert!(p.line > 1, "{p:?}");
    let problems = h
        .core
        .config
        .validate(&config(json!([{"kind": "edits", "decision": "allow"}]), "0"));
    assert!(
        problems
            .iter()
            .any(|p| !p.warning && p.message.contains("permissions")),
        "{problems:?}"
    );
    h.core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_turn_is_marked_and_unmarked() {
    let mut h = Harness::with(&config(json!([]), "1s"), fast(), false);
    h.core.chat.send("demo", "silent 3").expect("send");
    let e = h
        .wait_for(
            "not responding",
            Duration::from_secs(10),
            |e| matches!(e, Event::TurnStalled(t) if t.stalled),
        )
        .await;
    let Event::TurnStalled(t) = e else { unreachable!() };
    assert!(t.silent_for.is_some_and(|s| s >= 1), "{t:?}");
    h.wait_for(
        "responding again",
        Duration::from_secs(10),
        |e| matches!(e, Event::TurnStalled(t) if !t.stalled),
    )
    .await;
    h.wait_idle("demo").await;
    assert_eq!(last_answer(&h), "Back again.");
    // A turn waiting for the user's answer is not the agent's silence.
    h.core.chat.send("demo", "ask edit - Edit x").expect("send");
    let p = h.next_permission().await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let seen: Vec<&Event> = h
        .seen
        .iter()
        .filter(|e| matches!(e, Event::TurnStalled(_)))
        .collect();
    assert_eq!(seen.len(), 2, "only the silent turn was marked: {seen:?}");
    h.core
        .chat
        .answer_permission(&p.id, "allow-once")
        .expect("answer");
    h.wait_idle("demo").await;
    h.core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_the_agent_ignores_ends_the_turn_after_ten_seconds() {
    let mut h = Harness::with(&config(json!([]), "0"), fast(), false);
    h.core.chat.send("demo", "ignore-cancel").expect("send");
    h.wait_for(
        "the agent's log",
        Duration::from_secs(10),
        |e| matches!(e, Event::AgentLog(l) if l.line.contains("ignoring cancel")),
    )
    .await;
    let cancelled = std::time::Instant::now();
    h.core.chat.cancel("demo").expect("cancel");
    h.wait_idle("demo").await;
    let took = cancelled.elapsed();
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(15),
        "{took:?}"
    );
    let conv = h.core.chat.conversation("demo").expect("conversation");
    let note = conv
        .messages
        .iter()
        .find(|m| m.code == Some(MessageCode::TurnAbandoned))
        .expect("a system message says the turn was ended here");
    assert!(
        note.error
            .as_deref()
            .unwrap_or_default()
            .contains("may still be working"),
        "{note:?}"
    );
    // The abandoned session/prompt was given up with $/cancel_request (the
    // agent's line may have come before the turn's end, among `seen`).
    let cancelled = |e: &Event| matches!(e, Event::AgentLog(l) if l.line.contains("$/cancel_request"));
    if !h.seen.iter().any(cancelled) {
        h.wait_for("$/cancel_request at the agent", Duration::from_secs(5), cancelled)
            .await;
    }
    // The agent still works for the next turn.
    h.core.chat.send("demo", "echo still here").expect("send");
    h.wait_idle("demo").await;
    assert_eq!(last_answer(&h), "still here");
    h.core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_forms_are_checked_and_urls_complete() {
    let mut h = Harness::with(&config(json!([]), "0"), fast(), false);
    h.core.chat.send("demo", "elicit-form").expect("send");
    let e = h
        .wait_for("a form", Duration::from_secs(10), |e| {
            matches!(e, Event::ElicitationRequested(_))
        })
        .await;
    let Event::ElicitationRequested(form) = e else {
        unreachable!()
    };
    assert_eq!(form.mode, "form");
    assert!(form.message.contains("Who are you?"));
    assert_eq!(
        form.schema
            .as_ref()
            .and_then(|s| s["required"].as_array())
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(h.core.chat.pending_elicitations().len(), 1);
    // Refused before the agent sees it: a required value missing, a range.
    let err = h
        .core
        .chat
        .answer_elicitation(&form.id, "accept", Some(&json!({"age": 200})))
        .expect_err("refused");
    let err = err.to_string();
    assert!(
        err.contains("Name is required") && err.contains("at most 150"),
        "{err}"
    );
    h.core
        .chat
        .answer_elicitation(
            &form.id,
            "accept",
            Some(&json!({"name": "Ada", "age": 36, "colour": "blue"})),
        )
        .expect("accepted");
    h.wait_idle("demo").await;
    let answer = last_answer(&h);
    assert!(
        answer.contains(r#""action":"accept""#) && answer.contains(r#""name":"Ada""#),
        "{answer}"
    );

    // Declined.
    h.core.chat.send("demo", "elicit-form").expect("send");
    let Event::ElicitationRequested(form) = h
        .wait_for("a form", Duration::from_secs(10), |e| {
            matches!(e, Event::ElicitationRequested(_))
        })
        .await
    else {
        unreachable!()
    };
    h.core
        .chat
        .answer_elicitation(&form.id, "decline", None)
        .expect("declined");
    h.wait_idle("demo").await;
    assert_eq!(last_answer(&h), r#"elicitation: {"action":"decline"}"#);

    // A URL: accepted, then the agent says it is complete.
    h.core.chat.send("demo", "elicit-url").expect("send");
    let Event::ElicitationRequested(url) = h
        .wait_for("a URL", Duration::from_secs(10), |e| {
            matches!(e, Event::ElicitationRequested(_))
        })
        .await
    else {
        unreachable!()
    };
    assert_eq!(
        url.url.as_deref(),
        Some("https://example.org/demo/authorize?client=parley&state=42")
    );
    assert_eq!(url.elicitation_id.as_deref(), Some("demo-e1"));
    h.core
        .chat
        .answer_elicitation(&url.id, "accept", None)
        .expect("accepted");
    h.wait_idle("demo").await;
    assert_eq!(last_answer(&h), r#"elicitation: {"action":"accept"}"#);

    // An address whose first line reads as another host's, or with a user
    // name before its host: refused to the agent, never shown.
    for trick in ["tricky", "userinfo"] {
        h.core
            .chat
            .send("demo", &format!("elicit-url {trick}"))
            .expect("send");
        h.wait_idle("demo").await;
        let said = last_answer(&h);
        assert!(
            said.contains("a URL elicitation needs an http(s) url"),
            "{trick}: {said}"
        );
        assert!(h.core.chat.pending_elicitations().is_empty(), "{trick} was shown");
    }

    // Cancelling the turn answers a waiting form "cancel".
    h.core.chat.send("demo", "elicit-form").expect("send");
    h.wait_for("a form", Duration::from_secs(10), |e| {
        matches!(e, Event::ElicitationRequested(_))
    })
    .await;
    h.core.chat.cancel("demo").expect("cancel");
    h.wait_for(
        "resolved as cancel",
        Duration::from_secs(10),
        |e| matches!(e, Event::ElicitationResolved(r) if r.action == "cancel"),
    )
    .await;
    h.wait_idle("demo").await;
    assert!(h.core.chat.pending_elicitations().is_empty());
    h.core.shutdown().await;
}

#[test]
fn serve_lists_the_inbox_and_runs_command_channels() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A file per notice: channels run at once may not share one.
    let out = dir.path().join("notices");
    std::fs::create_dir(&out).expect("dir");
    let config = dir.path().join("config.json");
    let text = serde_json::to_string_pretty(&json!({
        "limits": {"stopIdleAgentsAfter": "0"},
        "agents": [agent("demo", "default")],
        "channels": [{"name": "log", "kind": "command", "command": "sh",
            "args": ["-c", format!("cat > \"$(mktemp -p '{}' n.XXXXXX)\"", out.display())],
            "events": ["permission-requested", "turn-ended", "elicitation-requested"]}]
    }))
    .unwrap_or_default();
    std::fs::write(&config, text).expect("config");
    let mut s = Serve::start(dir.path(), &config);
    s.call(1, "ChatService.Send", json!(["demo", "permission"]));
    let p = s.wait("permission:requested", |v| v["event"] == "permission:requested");
    let inbox = s.call(2, "ChatService.Inbox", json!([]));
    let items = inbox["result"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{inbox}");
    assert_eq!(items[0]["kind"], "permission");
    assert_eq!(items[0]["id"], p["payload"]["id"]);
    assert!(items[0]["since"].is_string(), "{inbox}");
    s.call(
        3,
        "ChatService.AnswerPermission",
        json!([p["payload"]["id"], "allow-once"]),
    );
    s.wait("the turn's end", |v| {
        v["event"] == "turn:changed" && v["payload"]["busy"] == false
    });
    let inbox = s.call(4, "ChatService.Inbox", json!([]));
    assert_eq!(inbox["result"][0]["kind"], "answer", "{inbox}");
    s.call(5, "ChatService.MarkSeen", json!(["demo"]));
    let inbox = s.call(6, "ChatService.Inbox", json!([]));
    assert_eq!(inbox["result"], json!([]), "{inbox}");

    // An elicitation through serve: listed, then answered.
    s.call(7, "ChatService.Send", json!(["demo", "elicit-form"]));
    let e = s.wait("elicitation:requested", |v| v["event"] == "elicitation:requested");
    let inbox = s.call(8, "ChatService.Inbox", json!([]));
    assert_eq!(inbox["result"][0]["kind"], "elicitation", "{inbox}");
    let refused = s.call(
        9,
        "ChatService.AnswerElicitation",
        json!([e["payload"]["id"], "accept", {}]),
    );
    assert!(
        refused["error"]
            .as_str()
            .unwrap_or("")
            .contains("Name is required"),
        "{refused}"
    );
    let ok = s.call(
        10,
        "ChatService.AnswerElicitation",
        json!([e["payload"]["id"], "accept", {"name": "Bo"}]),
    );
    assert_eq!(ok["result"], Value::Null, "{ok}");
    s.wait("the turn's end", |v| {
        v["event"] == "turn:changed" && v["payload"]["busy"] == false
    });

    // The command channel heard all three kinds of event.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let heard = loop {
        let events: Vec<String> = std::fs::read_dir(&out)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
            .filter_map(|v| v["event"].as_str().map(str::to_owned))
            .collect();
        if ["permission-requested", "turn-ended", "elicitation-requested"]
            .iter()
            .all(|e| events.iter().any(|x| x == e))
            || std::time::Instant::now() > deadline
        {
            break events;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(heard.contains(&"permission-requested".to_owned()), "{heard:?}");
    assert!(heard.contains(&"turn-ended".to_owned()), "{heard:?}");
    assert!(heard.contains(&"elicitation-requested".to_owned()), "{heard:?}");
    drop(s.stdin);
    let _ = s.child.wait();
}

#[test]
fn send_declines_what_it_cannot_ask() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent("demo", "default")], 4, "0")).expect("config");
    let out = std::process::Command::new(cli())
        .args(["send", "demo", "elicit-form", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .output()
        .expect("send");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("\"event\":\"elicitation:requested\""), "{stdout}");
    assert!(
        stdout.contains(r#"elicitation: {\"action\":\"decline\"}"#),
        "{stdout}"
    );
}
