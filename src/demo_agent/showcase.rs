//! The normal answer, to any prompt that is no keyword: everything Parley
//! can show in one believable turn (a thought, a plan that progresses, tool
//! calls reading, searching, editing with a diff after a permission request
//! and failing to execute, usage, streamed Markdown); and the `plan`
//! keyword (the `/plan` command), the plan alone.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};

use super::permissions::ask_permission;
use super::state::Agent;
use super::wire::stream;

fn plan_update(agent: &Agent, sid: &str, done: usize, total: usize) {
    let names = [
        "Read the project layout",
        "Find where the greeting is built",
        "Make the change and run the tests",
    ];
    let entries: Vec<Value> = (0..total)
        .map(|i| {
            let status = if i < done { "completed" } else if i == done { "in_progress" } else { "pending" };
            json!({"content": names[i % names.len()], "priority": if i == 0 {"high"} else {"medium"}, "status": status})
        })
        .collect();
    agent.update(sid, json!({"sessionUpdate": "plan", "entries": entries}));
}

async fn demo_plan(agent: &Agent, sid: &str, total: usize) {
    for done in 0..=total {
        plan_update(agent, sid, done, total);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// `plan`: a plan of three entries that progress.
pub(super) async fn plan(agent: &Agent, sid: &str) -> String {
    demo_plan(agent, sid, 3).await;
    "end_turn".to_string()
}

fn tool(agent: &Agent, sid: &str, update: Value) {
    agent.update(sid, update);
}

/// The normal answer: everything Parley can show, in one believable turn.
pub(super) async fn demo(agent: &Agent, sid: &str, text: &str) -> String {
    let cwd = agent.cwd.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let file = format!("{cwd}/src/greeting.rs");
    let pause = |ms| tokio::time::sleep(Duration::from_millis(ms));
    // Fresh tool call ids each turn, as agents should send them.
    let turn = agent.next_id.fetch_add(1, Ordering::Relaxed);
    let [read_id, search_id, edit_id, exec_id] =
        ["read", "search", "edit", "exec"].map(|k| format!("{k}-{turn}"));
    for piece in [
        "The user asks: \"",
        text,
        "\". ",
        "I should read the code before changing anything, ",
        "then check the tests.",
    ] {
        agent.chunk(sid, "agent_thought_chunk", piece);
        pause(30).await;
    }
    plan_update(agent, sid, 0, 3);
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": read_id, "title": "Read src/greeting.rs",
        "kind": "read", "status": "pending", "locations": [{"path": file, "line": 1}], "rawInput": {"path": file}}),
    );
    pause(120).await;
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": read_id, "status": "in_progress"}),
    );
    pause(120).await;
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": read_id, "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "pub fn greeting() -> &'static str {\n    \"Hello\"\n}"}}]}),
    );
    plan_update(agent, sid, 1, 3);
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": search_id, "title": "Search for \"greeting(\"",
        "kind": "search", "status": "in_progress", "rawInput": {"pattern": "greeting("}}),
    );
    pause(150).await;
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": search_id, "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "src/main.rs:4: println!(\"{}\", greeting());"}}]}),
    );
    plan_update(agent, sid, 2, 3);
    let edit = json!({"sessionUpdate": "tool_call", "toolCallId": edit_id, "title": "Edit src/greeting.rs",
        "kind": "edit", "status": "pending", "locations": [{"path": file, "line": 2}],
        "content": [{"type": "diff", "path": file, "oldText": "pub fn greeting() -> &'static str {\n    \"Hello\"\n}\n",
            "newText": "pub fn greeting() -> &'static str {\n    \"Hello from Parley\"\n}\n"}]});
    tool(agent, sid, edit);
    let answer = ask_permission(agent, sid, &edit_id, "Edit src/greeting.rs", "edit").await;
    if agent.is_cancelled(sid) {
        return "cancelled".into();
    }
    let allowed = answer.starts_with("allow");
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": edit_id,
        "status": if allowed {"completed"} else {"failed"}}),
    );
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": exec_id, "title": "cargo test",
        "kind": "execute", "status": "in_progress", "rawInput": {"command": "cargo test"}}),
    );
    pause(200).await;
    tool(
        agent,
        sid,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": exec_id, "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": "error: could not find `Cargo.toml` (this is a demo)"}}]}),
    );
    plan_update(agent, sid, 3, 3);
    let used = agent.used.fetch_add(850, Ordering::Relaxed) + 850;
    agent.update(
        sid,
        json!({"sessionUpdate": "usage_update", "used": used, "size": 200000}),
    );
    let outcome = if allowed {
        "I changed the greeting (you allowed the edit)."
    } else {
        "I left the file alone (you refused the edit)."
    };
    let answer_text = format!(
        "## What I did\n\n{outcome} Here is the plan I followed:\n\n\
         1. **Read** `src/greeting.rs`\n2. *Searched* for callers\n3. Edited and ran the tests\n\n\
         ```rust\npub fn greeting() -> &'static str {{\n    \"Hello from Parley\"\n}}\n```\n\n\
         The test run failed because this is a demo without a real project. \
         Try `/flood` or ask me anything else.\n"
    );
    stream(agent, sid, &answer_text, 15).await;
    "end_turn".into()
}
