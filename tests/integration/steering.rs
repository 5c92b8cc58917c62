//! Steering a conversation (issue 43), through `parley-cli serve` with the
//! demo agent: the protocol's newer updates as parts of the conversation,
//! the queue edited and sent now, a retry, forks and drafts.

use serde_json::{json, Value};

use crate::common::*;

fn config(dir: &std::path::Path, agents: Vec<Value>) -> std::path::PathBuf {
    let config = dir.join("config.json");
    let text = serde_json::to_string_pretty(&json!({"agents": agents})).unwrap_or_default();
    std::fs::write(&config, text).expect("config");
    config
}

fn idle(s: &Serve) {
    s.wait("the turn's end", |v| {
        v["event"] == "turn:changed" && v["payload"]["busy"] == false
    });
}

/// The parts of the conversation's last agent message.
fn last_answer(conversation: &Value) -> Vec<Value> {
    conversation["result"]["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "agent"))
        .and_then(|m| m["parts"].as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn notices_compactions_plans_and_unknown_updates_are_parts_and_logged_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path(), vec![agent("demo", "")]);
    let mut s = Serve::start(dir.path(), &config);
    s.call(1, "ChatService.Send", json!(["demo", "timeline"]));
    let notice = s.wait("a notice's delta", |v| {
        v["event"] == "message:delta" && v["payload"]["kind"] == "notice"
    });
    assert_eq!(notice["payload"]["part"]["severity"], "warning", "{notice}");
    idle(&s);
    let conversation = s.call(2, "ChatService.Conversation", json!(["demo"]));
    let parts = last_answer(&conversation);
    let types: Vec<&str> = parts.iter().filter_map(|p| p["type"].as_str()).collect();
    assert_eq!(
        types,
        ["notice", "plan", "text", "text", "tool", "compaction", "notice"],
        "the removed plan is gone, each messageId has its text: {parts:?}"
    );
    assert_eq!(parts[0]["title"], "Rate limited");
    assert_eq!(parts[1]["id"], "fix");
    assert_eq!(parts[1]["entries"][0]["status"], "completed");
    assert_eq!(parts[2]["text"], "First message of the agent.");
    assert_eq!(parts[3]["text"], "Second message of the agent.");
    assert_eq!(parts[4]["name"], "Read");
    assert_eq!(parts[5]["status"], "completed");
    assert_eq!(
        parts[5]["summary"],
        "We read the parser and found the off-by-one in `next_token`."
    );
    let logs = s.call(3, "AgentService.Logs", json!(["demo"]));
    let named: Vec<&str> = logs["result"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|l| l.contains("mind_reading"))
        .collect();
    assert_eq!(named.len(), 1, "an unknown kind is named once: {logs}");
    // Stored as they were shown: the history gives the same parts back.
    let listed = s.call(4, "ChatService.List", json!(["demo"]));
    let id = listed["result"]["conversations"][0]["id"].clone();
    s.call(5, "ChatService.New", json!(["demo"]));
    let opened = s.call(6, "ChatService.Open", json!(["demo", id]));
    let reopened = last_answer(&json!({"result": opened["result"]}));
    assert_eq!(reopened, parts, "{opened}");
    drop(s.stdin);
    let _ = s.child.wait();
}

/// The demo agent in `mode`, its sessions kept in `dir`/sessions.
fn keeper(name: &str, mode: &str, dir: &std::path::Path) -> Value {
    json!({"name": name, "command": demo(), "cwd": dir.display().to_string(),
        "env": {"PARLEY_DEMO_MODE": mode, "PARLEY_DEMO_SESSIONS": dir.join("sessions").display().to_string()}})
}

fn texts(conversation: &Value) -> Vec<(String, String)> {
    conversation["result"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let text: String = m["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect();
            (m["role"].as_str().unwrap_or("").to_owned(), text)
        })
        .collect()
}

#[test]
fn the_queue_is_edited_reordered_and_sent_now_and_retry_sends_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path(), vec![agent("demo", "")]);
    let mut s = Serve::start(dir.path(), &config);
    s.call(1, "ChatService.Send", json!(["demo", "wait"]));
    s.wait("the answer begins", |v| v["event"] == "message:delta");
    let a = s.call(2, "ChatService.Send", json!(["demo", "echo first"]))["result"].clone();
    let b = s.call(3, "ChatService.Send", json!(["demo", "echo second"]))["result"].clone();
    let c = s.call(4, "ChatService.Send", json!(["demo", "echo third"]))["result"].clone();
    // Edit a's text, move c to the front, delete b.
    let edited = s.call(
        5,
        "ChatService.EditQueued",
        json!(["demo", a, {"text": "echo first, edited"}]),
    );
    assert_eq!(edited["result"], json!([a, b, c]), "{edited}");
    let (moved, _) = s.call_seeing(
        6,
        "ChatService.EditQueued",
        json!(["demo", c, {"position": 0}]),
        |v| v["event"] == "queue:changed" && v["payload"]["queue"] == json!([c, a, b]),
    );
    assert_eq!(moved["result"], json!([c, a, b]), "{moved}");
    let (deleted, _) = s.call_seeing(
        7,
        "ChatService.EditQueued",
        json!(["demo", b, {"delete": true}]),
        |v| v["event"] == "message:removed" && v["payload"]["messageId"] == b,
    );
    assert_eq!(deleted["result"], json!([c, a]), "{deleted}");
    let empty = s.call(8, "ChatService.EditQueued", json!(["demo", a, {"text": "  "}]));
    assert_eq!(empty["error"], "the message is empty", "{empty}");
    let bad = s.call(9, "ChatService.EditQueued", json!(["demo", a, {"colour": "red"}]));
    assert!(
        bad["error"].as_str().unwrap_or("").contains("argument 3"),
        "{bad}"
    );
    // Send a now: the waiting turn is cancelled, a goes, then c.
    let now = s.call(10, "ChatService.SendNow", json!(["demo", a]));
    assert_eq!(now["result"], Value::Null, "{now}");
    idle(&s);
    let conversation = s.call(11, "ChatService.Conversation", json!(["demo"]));
    let said: Vec<String> = texts(&conversation)
        .into_iter()
        .filter(|(role, _)| role == "agent")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(said.len(), 3, "{conversation}");
    assert_eq!(&said[1..], ["first, edited", "third"], "{conversation}");
    let messages = conversation["result"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        messages[1]["stopReason"], "cancelled",
        "the running turn was cancelled: {conversation}"
    );
    let not_queued = s.call(12, "ChatService.SendNow", json!(["demo", a]));
    assert_eq!(
        not_queued["error"],
        format!("the message {} is not queued", a.as_str().unwrap_or(""))
    );
    // Retry: the last prompt again, as a new message.
    let again = s.call(13, "ChatService.Retry", json!(["demo"]));
    assert!(again["result"].is_string(), "{again}");
    idle(&s);
    let conversation = s.call(14, "ChatService.Conversation", json!(["demo"]));
    let last: Vec<(String, String)> = texts(&conversation).into_iter().rev().take(2).collect();
    assert_eq!(
        last,
        [
            ("agent".to_owned(), "third".to_owned()),
            ("user".to_owned(), "echo third".to_owned())
        ]
    );
    drop(s.stdin);
    let _ = s.child.wait();
}

#[test]
fn a_fork_takes_the_session_or_carries_a_transcript_and_is_linked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(
        dir.path(),
        vec![
            keeper("forks", "resume,fork", dir.path()),
            keeper("plain", "resume", dir.path()),
        ],
    );
    let mut s = Serve::start(dir.path(), &config);
    for (i, agent) in ["forks", "plain"].iter().enumerate() {
        let i = i as u64 * 100;
        s.call(i + 1, "ChatService.Send", json!([agent, "echo one"]));
        idle(&s);
        s.call(i + 2, "ChatService.Send", json!([agent, "echo two"]));
        idle(&s);
    }
    let original = s.call(3, "ChatService.Conversation", json!(["forks"]));
    let first_id = original["result"]["id"].clone();
    // The whole conversation, with session/fork: the agent remembers it.
    let forked = s.call(4, "ChatService.Fork", json!(["forks"]));
    assert_eq!(forked["result"]["mode"], "session", "{forked}");
    assert_eq!(forked["result"]["forkedFrom"]["conversation"], first_id);
    assert_ne!(forked["result"]["conversation"], first_id);
    s.call(5, "ChatService.Send", json!(["forks", "remembered"]));
    idle(&s);
    let conversation = s.call(6, "ChatService.Conversation", json!(["forks"]));
    let said = texts(&conversation);
    assert_eq!(said.len(), 6, "the two turns are copied: {said:?}");
    assert_eq!(said[5].1, "remembered: echo one / echo two", "{said:?}");
    assert_eq!(conversation["result"]["forkedFrom"]["conversation"], first_id);
    // Editing the second message: a fork before it, whose first prompt
    // carries the first turn.
    let second = original["result"]["messages"][2]["id"].clone();
    let edited = s.call(7, "ChatService.Fork", json!(["forks", second, "echo TWO"]));
    assert_eq!(edited["result"]["mode"], "transcript", "{edited}");
    let draft = edited["result"]["draft"].as_str().unwrap_or("").to_owned();
    assert!(
        draft.contains("**User:** echo one") && draft.ends_with("echo TWO"),
        "{draft}"
    );
    idle(&s);
    let conversation = s.call(8, "ChatService.Conversation", json!(["forks"]));
    let said = texts(&conversation);
    assert_eq!(said.len(), 4, "one turn copied, one sent: {said:?}");
    assert_eq!(conversation["result"]["forkedFrom"]["messageId"], second);
    // Without session/fork, a fork of the whole carries the transcript.
    let plain = s.call(9, "ChatService.Fork", json!(["plain"]));
    assert_eq!(plain["result"]["mode"], "transcript", "{plain}");
    assert!(
        plain["result"]["draft"]
            .as_str()
            .unwrap_or("")
            .contains("**Agent:** two"),
        "{plain}"
    );
    assert!(plain["result"]["sent"].is_null());
    let unknown = s.call(10, "ChatService.Fork", json!(["plain", "m999"]));
    assert_eq!(
        unknown["error"], "the conversation has no message m999",
        "{unknown}"
    );
    // The link is stored: the fork, opened again, names its origin.
    let listed = s.call(11, "ChatService.List", json!(["forks"]));
    let fork_id = forked["result"]["conversation"].clone();
    assert!(
        listed["result"]["conversations"]
            .as_array()
            .is_some_and(|c| c.len() == 3),
        "{listed}"
    );
    let opened = s.call(12, "ChatService.Open", json!(["forks", fork_id]));
    assert_eq!(
        opened["result"]["forkedFrom"]["conversation"], first_id,
        "{opened}"
    );
    drop(s.stdin);
    let _ = s.child.wait();
}

#[test]
fn steer_goes_into_the_running_turn_where_the_agent_takes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path(), vec![agent("steers", "steer"), agent("plain", "")]);
    let mut s = Serve::start(dir.path(), &config);
    s.call(1, "ChatService.Send", json!(["steers", "slow 30 50"]));
    s.wait("the answer begins", |v| {
        v["event"] == "message:delta" && v["payload"]["agent"] == "steers"
    });
    let steered = s.call(2, "ChatService.Steer", json!(["steers", "use tabs"]));
    assert!(steered["result"].is_string(), "{steered}");
    idle(&s);
    let conversation = s.call(3, "ChatService.Conversation", json!(["steers"]));
    let said = texts(&conversation);
    let roles: Vec<&str> = said.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["user", "agent", "user", "agent"], "{said:?}");
    assert_eq!(said[2].1, "use tabs");
    assert!(said[3].1.starts_with("Steered: use tabs. "), "{said:?}");
    assert!(said[3].1.contains("chunk 29"), "the turn went on: {said:?}");
    let messages = conversation["result"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(messages.iter().all(|m| m["done"] == true), "{conversation}");
    // Not between turns, and not to an agent that takes no message then.
    let idle_steer = s.call(4, "ChatService.Steer", json!(["steers", "now?"]));
    assert_eq!(idle_steer["error"], "the agent is not answering", "{idle_steer}");
    s.call(5, "ChatService.Send", json!(["plain", "slow 10 50"]));
    let refused = s.call(6, "ChatService.Steer", json!(["plain", "use tabs"]));
    assert_eq!(
        refused["error"], "this agent takes no message while it answers; queue it instead",
        "{refused}"
    );
    idle(&s);
    drop(s.stdin);
    let _ = s.child.wait();
}

/// codex-acp 2.6's way: the `_session/steering` extension (advertised at
/// the top of `initialize`'s answer) puts the message into the running
/// turn, which goes on and ends once.
#[test]
fn steer_goes_in_through_the_steering_extension() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path(), vec![agent("codexlike", "steer-request")]);
    let mut s = Serve::start(dir.path(), &config);
    s.call(1, "ChatService.Send", json!(["codexlike", "slow 30 50"]));
    s.wait("the answer begins", |v| {
        v["event"] == "message:delta" && v["payload"]["agent"] == "codexlike"
    });
    let steered = s.call(2, "ChatService.Steer", json!(["codexlike", "use tabs"]));
    assert!(steered["result"].is_string(), "{steered}");
    idle(&s);
    let conversation = s.call(3, "ChatService.Conversation", json!(["codexlike"]));
    let said = texts(&conversation);
    let roles: Vec<&str> = said.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["user", "agent", "user", "agent"], "{said:?}");
    assert!(said[3].1.starts_with("Steered: use tabs. "), "{said:?}");
    assert!(said[3].1.contains("chunk 29"), "the turn went on: {said:?}");
    let messages = conversation["result"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        messages.iter().all(|m| m["done"] == true && m["error"].is_null()),
        "{conversation}"
    );
    drop(s.stdin);
    let _ = s.child.wait();
}

/// Three agents: two with a stored conversation (one moved on to a second)
/// and a draft each, one with only a draft; Parley is killed (SIGKILL);
/// started again, each comes back as it was left.
#[test]
fn drafts_and_the_open_conversations_come_back_after_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agents: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|n| keeper(n, "resume", dir.path()))
        .collect();
    let config = config(dir.path(), agents);
    let mut s = Serve::start(dir.path(), &config);
    let mut ids = Vec::new();
    for (i, agent) in ["a", "b"].iter().enumerate() {
        let i = i as u64 * 10;
        s.call(
            i + 1,
            "ChatService.Send",
            json!([agent, format!("echo {agent} one")]),
        );
        idle(&s);
        let c = s.call(i + 2, "ChatService.Conversation", json!([agent]));
        ids.push(c["result"]["id"].clone());
    }
    // b goes on to a second conversation; a keeps its first.
    s.call(30, "ChatService.New", json!(["b"]));
    s.call(31, "ChatService.Send", json!(["b", "echo b two"]));
    idle(&s);
    let b2 = s.call(32, "ChatService.Conversation", json!(["b"]))["result"]["id"].clone();
    s.call(33, "ChatService.SetDraft", json!(["a", "half a thought", "m1"]));
    s.call(34, "ChatService.SetDraft", json!(["b", "für b"]));
    // c: a new conversation with only a draft.
    let (_, told) = s.call_seeing(35, "ChatService.SetDraft", json!(["c", "c's first words"]), |v| {
        v["event"] == "draft:changed" && v["payload"]["agent"] == "c"
    });
    assert_eq!(told["payload"]["draft"]["text"], "c's first words");
    // A crash, not a quit: what the writer had a moment to write is kept.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = s.child.kill();
    let _ = s.child.wait();

    let mut s = Serve::start(dir.path(), &config);
    let restored = s.call(1, "ChatService.Restore", json!([]));
    assert_eq!(restored["result"], json!(["a", "b"]), "{restored}");
    let a = s.call(2, "ChatService.Conversation", json!(["a"]));
    assert_eq!(a["result"]["id"], ids[0]);
    let b = s.call(3, "ChatService.Conversation", json!(["b"]));
    assert_eq!(
        b["result"]["id"], b2,
        "the conversation open at the end, not the first"
    );
    let c = s.call(4, "ChatService.Conversation", json!(["c"]));
    assert!(c["result"]["id"].is_null(), "{c}");
    let draft = s.call(5, "ChatService.Draft", json!(["a"]));
    assert_eq!(draft["result"], json!({"text": "half a thought", "anchor": "m1"}));
    assert_eq!(
        s.call(6, "ChatService.Draft", json!(["b"]))["result"]["text"],
        "für b"
    );
    assert_eq!(
        s.call(7, "ChatService.Draft", json!(["c"]))["result"]["text"],
        "c's first words"
    );
    // Sending clears nothing by itself; an empty draft removes it.
    s.call(8, "ChatService.SetDraft", json!(["a", ""]));
    assert_eq!(
        s.call(9, "ChatService.Draft", json!(["a"]))["result"],
        json!({"text": ""})
    );
    // The conversation goes on: its session is resumed.
    s.call(10, "ChatService.Send", json!(["a", "remembered"]));
    idle(&s);
    let a = s.call(11, "ChatService.Conversation", json!(["a"]));
    let said = texts(&a);
    assert_eq!(
        said.last().map(|(_, t)| t.as_str()),
        Some("remembered: echo a one"),
        "{said:?}"
    );
    drop(s.stdin);
    let _ = s.child.wait();
}

/// `auth/status` where the agent offers it: a sign-in is needed before the
/// first prompt, and the agent's `auth/status_update` clears it.
#[test]
fn auth_status_tells_a_sign_in_is_needed_before_the_first_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path(), vec![agent("demo", "auth-agent,auth-status")]);
    let mut s = Serve::start(dir.path(), &config);
    s.call_seeing(1, "AgentService.Start", json!(["demo"]), |v| {
        v["event"] == "auth:changed" && v["payload"]["needsSignIn"] == true
    });
    let listed = s.call(2, "AgentService.List", json!([]));
    assert_eq!(listed["result"][0]["needsSignIn"], true, "{listed}");
    let (signed, _) = s.call_seeing(3, "AuthService.SignIn", json!(["demo", "demo-login"]), |v| {
        v["event"] == "auth:changed" && v["payload"]["needsSignIn"] == false
    });
    assert!(signed.get("error").is_none(), "{signed}");
    let listed = s.call(4, "AgentService.List", json!([]));
    assert_eq!(listed["result"][0]["needsSignIn"], false, "{listed}");
    drop(s.stdin);
    let _ = s.child.wait();
}
