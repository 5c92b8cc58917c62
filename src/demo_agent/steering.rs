//! Mid-turn input (mode `steer`): the agent advertises claude-agent-acp's
//! `_meta.claudeCode.promptQueueing`, and a `session/prompt` that comes
//! while a turn of the same session runs is taken into that turn: `slow`
//! and `wait` say "Steered: TEXT" at their next chunk, and the prompt is
//! answered `end_turn` when the running turn ends.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::Notify;

use super::state::Agent;

/// `agentCapabilities._meta` with the steering extension, in mode `steer`.
pub(super) fn meta(agent: &Agent) -> Value {
    if agent.mode("steer").is_some() {
        json!({"claudeCode": {"promptQueueing": true}})
    } else {
        json!({})
    }
}

/// The answer's top-level `_meta` in mode `steer-request`: the
/// `_session/steering` extension, where codex-acp 2.6 advertises it.
pub(super) fn top_meta(agent: &Agent) -> Option<Value> {
    agent
        .mode("steer-request")
        .map(|_| json!({"steering": {"supported": true}}))
}

/// `_session/steering` (mode `steer-request`): `text` into the running turn
/// of the session, answered at once with the outcome.
pub(super) fn request(agent: &Agent, id: &Value, params: &Value) {
    let sid = params
        .get("sessionId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let text: String = params
        .get("prompt")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let taken = match agent
        .steering
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(sid)
    {
        Some((_, texts)) => {
            texts.push(text);
            true
        }
        None => false,
    };
    if taken {
        eprintln!("demo: steered by _session/steering");
        agent.respond(id, json!({"outcome": "injected"}));
    } else {
        agent.respond(
            id,
            json!({"outcome": "promptRequired", "reason": "noRunningTurn"}),
        );
    }
}

/// A turn of `sid` begins: prompts that come meanwhile are steering.
pub(super) fn begin(agent: &Agent, sid: &str) {
    if agent.mode("steer").is_some() || agent.mode("steer-request").is_some() {
        let mut s = agent.steering.lock().unwrap_or_else(|e| e.into_inner());
        s.insert(sid.to_owned(), (Arc::new(Notify::new()), Vec::new()));
    }
}

/// The turn of `sid` ended: the prompts taken into it are answered.
pub(super) fn end(agent: &Agent, sid: &str) {
    let ended = agent
        .steering
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(sid);
    if let Some((done, _)) = ended {
        done.notify_waiters();
    }
}

/// Takes `text` into the running turn of `sid` and answers prompt `id`
/// once that turn ends; `false` when no turn runs (the prompt is a turn).
pub(super) async fn take_in(agent: &Agent, sid: &str, id: &Value, text: &str) -> bool {
    let done = {
        let mut s = agent.steering.lock().unwrap_or_else(|e| e.into_inner());
        let Some((done, texts)) = s.get_mut(sid) else {
            return false;
        };
        texts.push(text.to_owned());
        done.clone()
    };
    eprintln!("demo: steered by a prompt during the turn");
    let wait = done.notified();
    // Ended in the meantime (the turn removed its entry): answer at once.
    if agent
        .steering
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(sid)
    {
        wait.await;
    }
    agent.respond(id, json!({"stopReason": "end_turn"}));
    true
}

/// Says what steered the running turn since it last looked.
pub(super) fn say_steered(agent: &Agent, sid: &str) {
    let texts = agent
        .steering
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(sid)
        .map(|(_, t)| std::mem::take(t))
        .unwrap_or_default();
    for t in texts {
        agent.chunk(sid, "agent_message_chunk", &format!("Steered: {t}. "));
    }
}
