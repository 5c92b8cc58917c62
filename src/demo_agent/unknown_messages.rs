//! Messages Parley does not know, which it must survive: the prompt keywords
//! `unknown-request` (a request of an unknown method) and `unknown-update`
//! (a session update of an unknown kind, content of an unknown type, and an
//! extension notification).

use serde_json::json;

use super::state::Agent;

/// `unknown-request`: sends Parley a request of an unknown method and shows
/// the answer.
pub(super) async fn request(agent: &Agent, sid: &str) -> String {
    let answer = agent
        .request("telepathy/read_mind", json!({"sessionId": sid}))
        .await;
    agent.chunk(
        sid,
        "agent_message_chunk",
        &format!("unknown-request result: {answer}"),
    );
    "end_turn".to_string()
}

/// `unknown-update`: a session update of an unknown kind, and more.
pub(super) fn update(agent: &Agent, sid: &str) -> String {
    agent.update(sid, json!({"sessionUpdate": "telepathy", "thought": "hi"}));
    agent.update(
        sid,
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "hologram", "data": "x"}}),
    );
    agent.send(&json!({"jsonrpc": "2.0", "method": "_demo/extension", "params": {}}));
    agent.chunk(sid, "agent_message_chunk", "sent unknown things");
    "end_turn".to_string()
}
