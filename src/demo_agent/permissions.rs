//! Permission requests: the options the demo agent offers, the answers it
//! remembers ("always"), and the prompt keywords `permission [N]`,
//! `ask KIND PATH TITLE`, `permission-hostile` and `permission-elsewhere`.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::state::Agent;

/// The four options the demo agent offers with every permission request.
fn permission_options() -> Value {
    json!([
        {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
        {"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"}
    ])
}

pub(super) async fn ask_permission(agent: &Agent, sid: &str, tool: &str, title: &str, kind: &str) -> String {
    if agent.always_allow.load(Ordering::Relaxed) {
        return "allow_always (remembered)".into();
    }
    if agent.always_reject.load(Ordering::Relaxed) {
        return "reject_always (remembered)".into();
    }
    let answer = agent
        .request(
            "session/request_permission",
            json!({"sessionId": sid,
            "toolCall": {"toolCallId": tool, "title": title, "kind": kind, "status": "pending"},
            "options": permission_options()}),
        )
        .await;
    let outcome = &answer["outcome"];
    match outcome["outcome"].as_str() {
        Some("selected") => {
            let option = outcome["optionId"].as_str().unwrap_or("");
            match option {
                "allow-always" => agent.always_allow.store(true, Ordering::Relaxed),
                "reject-always" => agent.always_reject.store(true, Ordering::Relaxed),
                _ => {}
            }
            option.replace('-', "_")
        }
        _ => "cancelled".into(),
    }
}

/// `permission [N]`: asks `times` times; each answer is shown.
pub(super) async fn repeated(agent: &Agent, sid: &str, times: u64) -> String {
    for i in 0..times {
        if agent.is_cancelled(sid) {
            break;
        }
        let tool = format!("perm-tool-{i}");
        let answer = ask_permission(agent, sid, &tool, "Delete build artefacts", "delete").await;
        agent.chunk(
            sid,
            "agent_message_chunk",
            &format!("permission answer: {answer}. "),
        );
    }
    "end_turn".to_string()
}

/// `ask KIND PATH TITLE`: asks for a tool call of `kind` (`none`: no kind;
/// `announced:KIND`: the kind only in the tool call's announcement) touching
/// `path` (`-`: none), titled by `title` (or "A tool"); shows the answer.
pub(super) async fn ask(agent: &Agent, sid: &str, kind: &str, path: &str, title: &[&str]) -> String {
    let title = if title.is_empty() {
        "A tool".to_owned()
    } else {
        title.join(" ")
    };
    // A new call each time: an id of an earlier turn would bring its kind.
    let tool = format!("ask-{}", agent.next_id.fetch_add(1, Ordering::Relaxed));
    let mut call = json!({"toolCallId": tool, "title": title, "status": "pending"});
    // `announced:KIND`: the kind comes in the tool call's
    // announcement only, not in the permission request.
    if let Some(announced) = kind.strip_prefix("announced:") {
        agent.update(
            sid,
            json!({"sessionUpdate": "tool_call", "toolCallId": tool, "title": title,
                "kind": announced, "status": "pending"}),
        );
    } else if kind != "none" {
        call["kind"] = json!(kind);
    }
    if path != "-" {
        call["locations"] = json!([{"path": path}]);
    }
    let answer = agent
        .request(
            "session/request_permission",
            json!({"sessionId": sid, "toolCall": call, "options": permission_options()}),
        )
        .await;
    let outcome = &answer["outcome"];
    let said = outcome["optionId"]
        .as_str()
        .or(outcome["outcome"].as_str())
        .unwrap_or("no answer");
    agent.chunk(sid, "agent_message_chunk", &format!("permission answer: {said}"));
    "end_turn".to_string()
}

/// `permission-hostile`: a NUL and a right-to-left override in the tool's
/// title.
pub(super) async fn hostile(agent: &Agent, sid: &str) -> String {
    let title = "Delete file\u{0}name and invoice\u{202E}gnp.exe";
    let answer = ask_permission(agent, sid, "hostile-tool", title, "delete").await;
    agent.chunk(
        sid,
        "agent_message_chunk",
        &format!("permission answer: {answer}"),
    );
    "end_turn".to_string()
}

/// `permission-elsewhere`: asks in a session that is not this one.
pub(super) async fn elsewhere(agent: &Agent, sid: &str) -> String {
    // For a session that is not this conversation's.
    let answer = agent
        .request(
            "session/request_permission",
            json!({"sessionId": "sess-elsewhere",
            "toolCall": {"toolCallId": "elsewhere-tool", "title": "Delete elsewhere"},
            "options": [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"}]}),
        )
        .await;
    agent.chunk(
        sid,
        "agent_message_chunk",
        &format!("permission-elsewhere answer: {answer}"),
    );
    "end_turn".to_string()
}
