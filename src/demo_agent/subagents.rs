//! `subagents [SECONDS]`: the agent delegates to helpers, as
//! claude-agent-acp and codex-acp do when the client advertises
//! `subagents`: two children at once, each announced on the parent with
//! `subagent_update`, told their task with `session_message` (on both
//! sessions), working under their own session ids.
//!
//! - "Explore the tests" (announced as claude's are: a title, cancel, a
//!   state; linked by a tool call's `session` content) reads, starts a
//!   child of its own ("Read one file", which nests), then keeps working
//!   for SECONDS (default 3) unless it is cancelled; it ends `cancelled`
//!   or `end_turn` and reports back with the harness's tags.
//! - "Fix the typo…" (announced as codex's are: a description, no title,
//!   no state) asks permission on its own session, then appends to
//!   `NOTES.md` if allowed, and reports back.
//!
//! `subagents-quiet [SECONDS]`: the same, the explorer silent while it
//! works. The parent waits for both, then says how each ended. Without the
//! capability, it says so and does the work itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::state::Agent;

pub(super) async fn run(agent: &Agent, sid: &str, seconds: u64, quiet: bool) -> String {
    let capable = agent
        .client_capabilities
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get("subagents")
        .is_some_and(Value::is_object);
    if !capable {
        agent.chunk(
            sid,
            "agent_message_chunk",
            "The client takes no subagents: I did it all myself.",
        );
        return "end_turn".into();
    }
    let n = agent.next_id.fetch_add(1, Ordering::Relaxed);
    let explore = format!("{sid}:subagent:explore-{n}");
    let fix = format!("{sid}:subagent:fix-{n}");
    for child in [&explore, &fix] {
        agent
            .cancelled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(child.clone(), Arc::new(AtomicBool::new(false)));
    }
    agent.chunk(sid, "agent_message_chunk", "Delegating to two helpers.");
    agent.update(
        sid,
        json!({"sessionUpdate": "subagent_update", "sessionId": explore, "title": "Explore the tests",
            "description": "general-purpose", "capabilities": {"cancel": {}}, "state": {"state": "running"}}),
    );
    agent.update(
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": format!("delegate-{n}"),
            "title": "Agent: Explore the tests", "kind": "think", "status": "in_progress",
            "content": [{"type": "session", "sessionId": explore}]}),
    );
    agent.update(
        sid,
        json!({"sessionUpdate": "subagent_update", "sessionId": fix,
            "description": "Fix the typo in NOTES.md\nand say what changed", "capabilities": {}}),
    );
    for (child, task) in [
        (&explore, "Find the tests and list them."),
        (&fix, "Fix the typo in NOTES.md."),
    ] {
        let note = json!({"sessionUpdate": "session_message", "messageId": format!("task-{child}"),
            "senderSessionId": sid, "recipientSessionId": child,
            "content": [{"type": "text", "text": task}]});
        agent.update(sid, note.clone());
        agent.update(child, note);
    }
    let (explored, fixed) = tokio::join!(
        explore_tests(agent, sid, &explore, seconds, quiet),
        fix_typo(agent, sid, &fix)
    );
    agent.update(
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("delegate-{n}"), "status": "completed"}),
    );
    agent.chunk(
        sid,
        "agent_message_chunk",
        &format!("\n\nThe helpers are done: explore {explored}, fix {fixed}."),
    );
    "end_turn".into()
}

/// Sets a child's state on its parent.
fn state(agent: &Agent, parent: &str, child: &str, state: Value) {
    agent.update(
        parent,
        json!({"sessionUpdate": "subagent_update", "sessionId": child, "state": state}),
    );
}

/// A child's work ended with `reason` (told on its parent).
fn stopped(agent: &Agent, parent: &str, child: &str, reason: &'static str) -> &'static str {
    state(
        agent,
        parent,
        child,
        json!({"state": "idle", "stopReason": reason}),
    );
    reason
}

/// The child's report to its parent, harness tags and all.
fn report(agent: &Agent, parent: &str, child: &str, text: &str) {
    agent.update(
        parent,
        json!({"sessionUpdate": "session_message", "messageId": format!("{child}:reply"),
            "senderSessionId": child, "recipientSessionId": parent,
            "content": [{"type": "text", "text": text}]}),
    );
}

async fn explore_tests(agent: &Agent, sid: &str, me: &str, seconds: u64, quiet: bool) -> &'static str {
    agent.update(
        me,
        json!({"sessionUpdate": "tool_call", "toolCallId": format!("{me}-read"), "title": "Read tests/",
            "kind": "read", "status": "completed", "locations": [{"path": "tests"}]}),
    );
    agent.chunk(me, "agent_message_chunk", "Looking at the tests.\n");
    // A child of its own: it nests.
    let nested = format!("{me}:subagent:nested");
    agent.update(
        me,
        json!({"sessionUpdate": "subagent_update", "sessionId": nested, "title": "Read one file",
            "capabilities": {"cancel": {}}, "state": {"state": "running"}}),
    );
    agent.chunk(&nested, "agent_message_chunk", "The first test file has 3 tests.");
    state(
        agent,
        me,
        &nested,
        json!({"state": "idle", "stopReason": "end_turn"}),
    );
    let steps = seconds * 5;
    for i in 0..steps {
        if agent.is_cancelled(me) || agent.is_cancelled(sid) {
            return stopped(agent, sid, me, "cancelled");
        }
        if !quiet {
            agent.chunk(
                me,
                "agent_message_chunk",
                &format!("Still exploring ({}/{steps})…\n", i + 1),
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    state(agent, sid, me, json!({"state": "idle", "stopReason": "end_turn"}));
    report(
        agent,
        sid,
        me,
        "<tools-used-before-summary>Read</tools-used-before-summary>\nFound 3 tests in tests/.",
    );
    "done"
}

async fn fix_typo(agent: &Agent, sid: &str, me: &str) -> &'static str {
    state(agent, sid, me, json!({"state": "running"}));
    agent.update(
        sid,
        json!({"sessionUpdate": "subagent_update", "sessionId": me, "capabilities": {"cancel": {}}}),
    );
    let tool = format!("{me}-edit");
    agent.update(
        me,
        json!({"sessionUpdate": "tool_call", "toolCallId": tool, "title": "Edit NOTES.md",
            "kind": "edit", "status": "pending", "locations": [{"path": "NOTES.md"}]}),
    );
    state(agent, sid, me, json!({"state": "requires_action"}));
    let answer = agent
        .request(
            "session/request_permission",
            json!({"sessionId": me, "toolCall": {"toolCallId": tool, "title": "Edit NOTES.md", "kind": "edit"},
                "options": [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]}),
        )
        .await;
    let outcome = &answer["outcome"];
    if outcome["outcome"] == "cancelled" || agent.is_cancelled(me) {
        return stopped(agent, sid, me, "cancelled");
    }
    state(agent, sid, me, json!({"state": "running"}));
    let allowed = outcome["optionId"] == "allow-once";
    if allowed {
        let said = super::disk::edit(agent, me, &["quiet:append:NOTES.md=fixed\\sby\\sa\\shelper\\n"]);
        agent.update(
            me,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "completed"}),
        );
        agent.chunk(me, "agent_message_chunk", &said);
    } else {
        agent.update(
            me,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "failed"}),
        );
        agent.chunk(me, "agent_message_chunk", "Not allowed to edit.");
    }
    state(agent, sid, me, json!({"state": "idle", "stopReason": "end_turn"}));
    agent.update(
        sid,
        json!({"sessionUpdate": "subagent_update", "sessionId": me, "capabilities": {"cancel": null}}),
    );
    report(
        agent,
        sid,
        me,
        if allowed {
            "Fixed NOTES.md."
        } else {
            "I was not allowed to."
        },
    );
    if allowed {
        "done"
    } else {
        "refused"
    }
}

/// `subagents-flood K N M`: K helpers (1–16) stream N chunks of M bytes
/// each at once, as fast as possible (their chunks interleaved), then end;
/// for the window's benchmark.
pub(super) fn flood(agent: &Agent, sid: &str, k: u64, n: u64, m: usize) -> String {
    use std::io::Write;
    let k = k.clamp(1, 16);
    let base = agent.next_id.fetch_add(1, Ordering::Relaxed);
    let children: Vec<String> = (0..k)
        .map(|i| format!("{sid}:subagent:flood-{base}-{i}"))
        .collect();
    for (i, child) in children.iter().enumerate() {
        agent.update(
            sid,
            json!({"sessionUpdate": "subagent_update", "sessionId": child, "title": format!("Helper {}", i + 1),
                "capabilities": {"cancel": {}}, "state": {"state": "running"}}),
        );
    }
    let body = super::turns::flood_body(m);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    for i in 0..n {
        if i % 1024 == 0 && agent.is_cancelled(sid) {
            break;
        }
        let text = super::turns::flood_chunk(&body, i);
        for child in &children {
            let _ = writeln!(
                out,
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{child}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":{text}}}}}}}}}"#
            );
        }
    }
    let _ = out.flush();
    drop(out);
    for child in &children {
        state(
            agent,
            sid,
            child,
            json!({"state": "idle", "stopReason": "end_turn"}),
        );
    }
    agent.chunk(sid, "agent_message_chunk", "The helpers are done.");
    "end_turn".into()
}
