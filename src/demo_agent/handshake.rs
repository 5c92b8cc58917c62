//! The handshake: `initialize` (what the agent offers) and `session/new`,
//! with the modes that bend them: `no-initialize`, `huge-line:N`,
//! `protocol-2` and `close-stdout`; `auth-required` and `early-updates`.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{json, Value};

use super::help::available_commands;
use super::state::Agent;
use super::{auth, controls, sessions};

pub(super) async fn initialize(agent: &Agent, id: &Value, params: Value) {
    let boolean = params
        .pointer("/clientCapabilities/session/configOptions/boolean")
        .is_some_and(Value::is_object);
    agent.boolean_options.store(boolean, Ordering::Relaxed);
    if let Some(caps) = params.get("clientCapabilities") {
        *agent
            .client_capabilities
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = caps.clone();
    }
    match serde_json::from_value::<acp::InitializeRequest>(params) {
        Ok(req) => eprintln!(
            "demo: initialize from {:?}, protocol {}",
            req.client_info.map(|c| c.name),
            req.protocol_version
        ),
        Err(e) => eprintln!("demo: initialize with unexpected params: {e}"),
    }
    if agent.mode("no-initialize").is_some() {
        eprintln!("demo: not answering initialize (no-initialize)");
        return;
    }
    if let Some(mib) = agent.mode("huge-line").and_then(|n| n.parse::<usize>().ok()) {
        let filler = "x".repeat(1024 * 1024);
        let mut out = agent.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = write!(
            out,
            "{{\"jsonrpc\":\"2.0\",\"method\":\"_demo/huge\",\"params\":\""
        );
        for _ in 0..mib {
            let _ = out.write_all(filler.as_bytes());
        }
        let _ = writeln!(out, "\"}}");
        let _ = out.flush();
    }
    let version = if agent.mode("protocol-2").is_some() { 2 } else { 1 };
    let (prompt_caps, mcp_caps, session_caps) = controls::capabilities(agent);
    let session_caps = sessions::capabilities(agent, session_caps);
    let mut answer = json!({
            "protocolVersion": version,
            "agentCapabilities": {"loadSession": sessions::load_session(agent), "promptCapabilities": prompt_caps,
                "mcpCapabilities": mcp_caps, "sessionCapabilities": session_caps,
                "auth": auth::capabilities(agent),
                "_meta": super::steering::meta(agent)},
            "authMethods": auth::methods(agent),
            "agentInfo": {"name": "parley-demo-agent", "title": "Demo Agent", "version": env!("CARGO_PKG_VERSION")}
    });
    if let Some(meta) = super::steering::top_meta(agent) {
        answer["_meta"] = meta;
    }
    agent.respond(id, answer);
    if agent.mode("auth-gateway").is_some() {
        // Right after the answer, as claude-agent-acp 0.101 does.
        auth::account_status(agent, json!({"kind": "none", "label": "Not logged in"}));
    }
    if agent.mode("close-stdout").is_some() {
        // Hostile: the connection ends, the process does not.
        let _out = agent.out.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: closing our own stdout; nothing writes to it after this
        // while the lock is held, and later writes fail harmlessly.
        unsafe {
            libc::close(1);
        }
        eprintln!("demo: closed stdout, still running (close-stdout)");
    }
}

pub(super) async fn new_session(agent: &Agent, id: &Value, params: Value) {
    controls::record_session(agent, &params);
    let req: acp::NewSessionRequest = match serde_json::from_value(params) {
        Ok(r) => r,
        Err(e) => return agent.respond_error(id, -32602, &format!("invalid session/new params: {e}")),
    };
    if !req.cwd.is_absolute() {
        return agent.respond_error(id, -32602, "cwd must be absolute");
    }
    if agent.mode("auth-required").is_some() {
        return agent.respond_error(id, -32000, "Authentication required");
    }
    if let Some(why) = auth::session_refused(agent, &req.cwd) {
        return agent.respond_error(id, -32000, &why);
    }
    let cwd = req.cwd.display().to_string();
    let n = agent.sessions.fetch_add(1, Ordering::Relaxed) + 1;
    let sid = if agent.sessions_dir.is_some() {
        sessions::new_id(n)
    } else {
        format!("demo-session-{n}")
    };
    if let Err(e) = sessions::store_new(agent, &sid, &cwd) {
        return agent.respond_error(id, -32603, &format!("cannot store the session: {e}"));
    }
    *agent.cwd.lock().unwrap_or_else(|e| e.into_inner()) = cwd;
    agent
        .cancelled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(sid.clone(), Arc::new(AtomicBool::new(false)));
    // Sent before the answer: clients must keep such updates (ACP issue trackers).
    available_commands(agent, &sid);
    if agent.mode("early-updates").is_some() {
        agent.chunk(&sid, "agent_message_chunk", "(sent before session/new answered) ");
    }
    let mut answer = controls::session_state(agent);
    answer["sessionId"] = json!(sid);
    agent.respond(id, answer);
}
