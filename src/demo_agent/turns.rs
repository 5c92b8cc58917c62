//! Prompt keywords that shape the turn rather than what it shows: how much
//! and how fast it streams (`flood`, `slow`, `wait`, `silent`, `echo`), how
//! it ends (`stop`, `crash`, `ignore-cancel`, `late`, `error`), and `stderr`.
//! Each returns the turn's stop reason, unless it answered the prompt itself.

use std::io::Write;
use std::time::Duration;

use serde_json::{json, Value};

use super::sessions;
use super::state::Agent;

/// `flood N M`: `n` text chunks of `m` bytes, as fast as possible.
/// A flood's chunk of `m` bytes of Markdown, before its number.
pub(super) fn flood_body(m: usize) -> String {
    "lorem *ipsum* `dolor` sit amet, consectetur "
        .chars()
        .cycle()
        .take(m)
        .collect()
}

/// Chunk `i` of a flood as a JSON string: `body` ending in its number on
/// a line of its own.
pub(super) fn flood_chunk(body: &str, i: u64) -> String {
    let mut chunk = body.to_owned();
    let m = chunk.len();
    if m >= 8 {
        chunk.replace_range(m - 8.., &format!("{:07}\n", i % 10_000_000));
    }
    serde_json::to_string(&chunk).unwrap_or_default()
}

pub(super) fn flood(agent: &Agent, sid: &str, n: u64, m: usize) -> String {
    let body = flood_body(m);
    // As fast as a real agent can: buffered, one flush at the end.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    for i in 0..n {
        if i % 1024 == 0 && agent.is_cancelled(sid) {
            break;
        }
        let text = flood_chunk(&body, i);
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":{text}}}}}}}}}"#
        );
    }
    let _ = out.flush();
    drop(out);
    "end_turn".to_string()
}

/// `flood-file PATH N`: the text of `path` in `n` chunks of about the same
/// size (cut at character boundaries), as fast as possible: a long reply of
/// any shape (the window bench's heavily formatted Markdown).
pub(super) fn flood_file(agent: &Agent, sid: &str, path: &str, n: u64) -> String {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            agent.chunk(sid, "agent_message_chunk", &format!("cannot read {path}: {e}"));
            return "end_turn".to_string();
        }
    };
    let size = text.len().div_ceil(n.max(1) as usize).max(1);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        let text = serde_json::to_string(chunk).unwrap_or_default();
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":{text}}}}}}}}}"#
        );
    }
    let _ = out.flush();
    "end_turn".to_string()
}

/// `slow N MS`: `n` text chunks, `ms` milliseconds apart.
pub(super) async fn slow(agent: &Agent, sid: &str, n: u64, ms: u64) -> String {
    for i in 0..n {
        if agent.is_cancelled(sid) {
            break;
        }
        super::steering::say_steered(agent, sid);
        agent.chunk(sid, "agent_message_chunk", &format!("chunk {i} "));
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    "end_turn".to_string()
}

/// `stop REASON`: ends the turn with `reason`.
pub(super) fn stop(agent: &Agent, sid: &str, reason: &str) -> String {
    agent.chunk(sid, "agent_message_chunk", &format!("Stopping with {reason}."));
    reason.to_string()
}

/// `wait`: streams slowly until `session/cancel` (for a minute at most).
pub(super) async fn wait(agent: &Agent, sid: &str) -> String {
    let mut i = 0;
    while !agent.is_cancelled(sid) && i < 6000 {
        if i % 10 == 0 {
            super::steering::say_steered(agent, sid);
            agent.chunk(sid, "agent_message_chunk", ".");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        i += 1;
    }
    "end_turn".to_string()
}

/// `crash`: streams a little, then exits with status 3 mid-turn.
pub(super) async fn crash(agent: &Agent, sid: &str) -> String {
    agent.chunk(sid, "agent_message_chunk", "About to crash… ");
    tokio::time::sleep(Duration::from_millis(50)).await;
    eprintln!("demo: crashing mid-turn, as asked");
    std::process::exit(3);
}

/// `silent SECONDS`: says nothing for `seconds`, then answers.
pub(super) async fn silent(agent: &Agent, sid: &str, seconds: u64) -> String {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    agent.chunk(sid, "agent_message_chunk", "Back again.");
    "end_turn".to_string()
}

/// `ignore-cancel`: says nothing and does not end the turn for a minute,
/// cancelled or not.
pub(super) async fn ignore_cancel() -> String {
    eprintln!("demo: ignoring cancel for a minute");
    tokio::time::sleep(Duration::from_secs(60)).await;
    "end_turn".to_string()
}

/// `late`: answers the prompt itself (request `id`, prompt `text`), then
/// sends one more chunk.
pub(super) fn late(agent: &Agent, sid: &str, id: &Value, text: &str) {
    agent.chunk(sid, "agent_message_chunk", "before the answer. ");
    // The turn, as the answer ends it; the late chunk is not kept.
    sessions::end_turn(agent, sid, text);
    agent.respond(id, json!({"stopReason": "end_turn"}));
    agent.chunk(sid, "agent_message_chunk", "after the answer.");
}

/// `stderr K`: writes `lines` lines on stderr.
pub(super) fn stderr(agent: &Agent, sid: &str, lines: u64) -> String {
    for i in 1..=lines {
        eprintln!("demo: stderr line {i}");
    }
    agent.chunk(sid, "agent_message_chunk", "wrote to stderr");
    "end_turn".to_string()
}

/// `error`: answers the prompt (request `id`) with a JSON-RPC error.
pub(super) fn error(agent: &Agent, id: &Value) {
    agent.respond_error(id, -32603, "the demo agent failed on purpose");
}

/// `echo TEXT`: answers `text`.
pub(super) fn echo(agent: &Agent, sid: &str, text: &str) -> String {
    agent.chunk(sid, "agent_message_chunk", text);
    "end_turn".to_string()
}
