//! Prompt keywords that each send one session update the window reflects:
//! `usage USED SIZE`, `cost AMOUNT`, `session-info TITLE` (also stored with
//! the session), `switch-mode MODE` (the agent changes its own mode) and
//! `tool ID TITLE` (a completed tool call whose id the test chooses).

use serde_json::json;

use super::state::Agent;
use super::{controls, sessions};

/// `usage USED SIZE`: reports context usage.
pub(super) fn usage(agent: &Agent, sid: &str, used: u64, size: u64) -> String {
    agent.update(
        sid,
        json!({"sessionUpdate": "usage_update", "used": used, "size": size}),
    );
    "end_turn".to_string()
}

/// `cost AMOUNT`: reports usage with a cost of `amount` USD.
pub(super) fn cost(agent: &Agent, sid: &str, amount: f64) -> String {
    agent.update(
        sid,
        json!({"sessionUpdate": "usage_update", "used": 5000, "size": 200000,
            "cost": {"amount": amount, "currency": "USD"}}),
    );
    agent.chunk(sid, "agent_message_chunk", "Costed.");
    "end_turn".to_string()
}

/// `session-info TITLE`: titles the session.
pub(super) fn title(agent: &Agent, sid: &str, title: &str) -> String {
    agent.update(
        sid,
        json!({"sessionUpdate": "session_info_update", "title": title}),
    );
    sessions::set_title(agent, sid, title);
    agent.chunk(sid, "agent_message_chunk", "Titled.");
    "end_turn".to_string()
}

/// `switch-mode MODE`: changes the agent's own mode.
pub(super) fn switch_mode(agent: &Agent, sid: &str, mode: &str) -> String {
    // The agent changes its own mode: the pickers follow.
    agent
        .recorded
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values
        .insert("mode".into(), json!(mode));
    agent.update(
        sid,
        json!({"sessionUpdate": "config_option_update", "configOptions": controls::config_options(agent)}),
    );
    agent.chunk(sid, "agent_message_chunk", "Switched.");
    "end_turn".to_string()
}

/// `tool ID TITLE`: reports a completed tool call with this id.
pub(super) fn tool(agent: &Agent, sid: &str, id: &str, title: &str) -> String {
    // A tool call whose id the test chooses (to reuse it).
    agent.update(
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": title,
            "kind": "execute", "status": "completed"}),
    );
    "end_turn".to_string()
}
