//! How the demo agent talks to the client on stdout: answers and errors,
//! session updates (a stored session's turn keeps their agent text),
//! requests whose answers it awaits, and text streamed in pieces.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::state::Agent;

impl Agent {
    pub(super) fn send(&self, msg: &Value) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if self.mode("garbage").is_some() {
            let _ = writeln!(out, "demo agent says hello (this is not JSON)");
        }
        let _ = writeln!(out, "{msg}");
        let _ = out.flush();
    }

    /// Writes `line` as it is, newline added (for lines serde_json would
    /// not write).
    pub(super) fn send_raw(&self, line: &[u8]) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(line);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }

    pub(super) fn respond(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    pub(super) fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
    }

    pub(super) fn update(&self, session: &str, update: Value) {
        capture(self, session, &update);
        self.send(&json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": session, "update": update}}));
    }

    pub(super) fn chunk(&self, session: &str, kind: &str, text: &str) {
        self.update(
            session,
            json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
        );
    }

    pub(super) async fn request(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await.unwrap_or(Value::Null)
    }
}

/// Called by `Agent::update`: keeps the text of agent message chunks of a
/// stored session for its turn (`sessions::end_turn` stores it).
fn capture(agent: &Agent, sid: &str, update: &Value) {
    if update["sessionUpdate"] != "agent_message_chunk" {
        return;
    }
    let Some(text) = update["content"]["text"].as_str() else {
        return;
    };
    if let Some(buffer) = agent
        .turn_text
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(sid)
    {
        buffer.push_str(text);
    }
}

/// Streams `text` as agent message chunks of 12 characters, `delay_ms`
/// apart, until the turn is cancelled.
pub(super) async fn stream(agent: &Agent, sid: &str, text: &str, delay_ms: u64) {
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(12) {
        if agent.is_cancelled(sid) {
            return;
        }
        agent.chunk(sid, "agent_message_chunk", &piece.iter().collect::<String>());
        if delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        }
    }
}
