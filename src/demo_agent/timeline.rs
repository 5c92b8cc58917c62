//! The protocol's newer session updates, in one turn (`timeline`): a
//! notice, several plans (`plan_update`, then one `plan_removed`), text
//! chunks of two agent messages (`messageId`), a tool call with its tool's
//! name, a context compaction with its summary streamed, and an update of a
//! kind no one knows; the first notice is followed by a second's wait.
//! What the client did not advertise is not sent (the protocol's rule): a
//! notice becomes agent text, a compaction is skipped.

use std::time::Duration;

use serde_json::{json, Value};

use super::state::Agent;

fn advertised(agent: &Agent, pointer: &str) -> bool {
    let caps = agent
        .client_capabilities
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    caps.pointer(pointer).is_some_and(Value::is_object)
}

fn notice(agent: &Agent, sid: &str, severity: &str, title: &str, description: &str) {
    if advertised(agent, "/session/notices") {
        agent.update(
            sid,
            json!({"sessionUpdate": "notice", "severity": severity, "title": title, "description": description}),
        );
    } else {
        agent.chunk(sid, "agent_message_chunk", &format!("{title} {description}\n\n"));
    }
}

fn plan_items(id: &str, first: &str, second: &str) -> Value {
    json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": id, "entries": [
        {"content": "Read the parser", "priority": "high", "status": first},
        {"content": "Fix the off-by-one", "priority": "medium", "status": second},
    ]}})
}

/// `timeline`: see the file's comment. The pauses let a window draw each step.
pub(super) async fn timeline(agent: &Agent, sid: &str) -> String {
    let pause = || tokio::time::sleep(Duration::from_millis(50));
    notice(
        agent,
        sid,
        "warning",
        "Rate limited",
        "The demo agent waits a moment before going on.",
    );
    // As it says: a screen reader has time to say it before the answer.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    if advertised(agent, "/plan") {
        agent.update(sid, plan_items("fix", "in_progress", "pending"));
        agent.update(
            sid,
            json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "notes",
                "content": "**Notes**: check the tests after the fix."}}),
        );
    }
    pause().await;
    for (message, text) in [
        ("a1", "First message of the agent."),
        ("a2", "Second message of the agent."),
    ] {
        agent.update(
            sid,
            json!({"sessionUpdate": "agent_message_chunk", "messageId": message,
                "content": {"type": "text", "text": text}}),
        );
    }
    agent.update(
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": "timeline-read", "title": "Read src/parser.rs",
            "name": "Read", "kind": "read", "status": "completed"}),
    );
    if advertised(agent, "/session/compaction") {
        agent.update(
            sid,
            json!({"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "in_progress"}),
        );
        pause().await;
        for piece in ["We read the parser ", "and found the off-by-one in `next_token`."] {
            agent.update(
                sid,
                json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k1",
                    "content": {"type": "text", "text": piece}}),
            );
        }
        agent.update(
            sid,
            json!({"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "completed"}),
        );
    }
    if advertised(agent, "/plan") {
        agent.update(sid, plan_items("fix", "completed", "completed"));
        agent.update(sid, json!({"sessionUpdate": "plan_removed", "planId": "notes"}));
    }
    agent.update(sid, json!({"sessionUpdate": "mind_reading", "level": 3}));
    agent.update(sid, json!({"sessionUpdate": "mind_reading", "level": 4}));
    notice(agent, sid, "info", "Done", "The fix is in place.");
    "end_turn".to_string()
}
