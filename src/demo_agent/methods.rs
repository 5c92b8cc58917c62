//! Which ACP method the demo agent answers how: answers to its own requests
//! wake whoever waits, each method goes to the file that handles it, and
//! anything else is "method not found".

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};

use super::state::Agent;
use super::{auth, controls, handshake, prompt, sessions};

/// Handles one message from the client; a prompt (and a sign-in) goes on in
/// a task of its own, so that the next message is read meanwhile.
pub(super) async fn handle(agent: Arc<Agent>, msg: Value) {
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    let id = msg.get("id").cloned();
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    match (method.as_deref(), id) {
        (None, Some(id)) => {
            let Some(n) = id.as_i64() else { return };
            let tx = agent.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&n);
            if let Some(tx) = tx {
                let answer = msg
                    .get("result")
                    .cloned()
                    .unwrap_or_else(|| json!({"error": msg.get("error")}));
                let _ = tx.send(answer);
            }
        }
        (Some("initialize"), Some(id)) => handshake::initialize(&agent, &id, params).await,
        (Some("authenticate"), Some(id)) => {
            tokio::spawn(async move { auth::authenticate(&agent, &id, params).await });
        }
        (Some("auth/status"), Some(id)) if agent.mode("auth-status").is_some() => auth::status(&agent, &id),
        (Some("logout"), Some(id)) => {
            agent.signed_in.store(false, Ordering::Relaxed);
            agent.respond(&id, json!({}));
        }
        (Some("session/new"), Some(id)) => handshake::new_session(&agent, &id, params).await,
        (Some("session/set_mode"), Some(id)) => controls::set_legacy(&agent, &id, &params, false),
        (Some("session/set_model"), Some(id)) => controls::set_legacy(&agent, &id, &params, true),
        (Some("session/set_config_option"), Some(id)) => controls::set_config_option(&agent, &id, &params),
        (Some("session/prompt"), Some(id)) => {
            tokio::spawn(async move { prompt::answer(agent, id, params).await });
        }
        (Some("session/cancel"), None) => {
            let sid = params
                .get("sessionId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            eprintln!("demo: session/cancel for {sid}");
            if let Some(flag) = agent.cancelled.lock().unwrap_or_else(|e| e.into_inner()).get(sid) {
                flag.store(true, Ordering::Relaxed);
            }
        }
        (Some("_session/steering"), Some(id)) if agent.mode("steer-request").is_some() => {
            super::steering::request(&agent, &id, &params)
        }
        (Some(m), Some(id)) if sessions::answers(&agent, m) => sessions::handle(&agent, m, &id, &params),
        (Some(other), Some(id)) => agent.respond_error(&id, -32601, &format!("method not found: {other}")),
        (Some(other), None) => eprintln!("demo: ignored notification {other}"),
        (None, None) => {}
    }
}
