//! The demo agent's sign-in modes: `auth-agent` (methods for
//! `authenticate`, and `logout`), `auth-env` (an `env_var` method wanting
//! `DEMO_API_KEY`) and `auth-terminal` (a terminal method running this
//! program with `--login`, and the legacy `_meta["terminal-auth"]` form);
//! with `auth-status`, it answers `auth/status` (unstable in ACP) and sends
//! `auth/status_update` once signed in.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};

use super::state::Agent;

/// What a terminal sign-in leaves in the agent's directory.
pub const SIGNED_IN_FILE: &str = ".parley-demo-signed-in";

pub fn methods(agent: &Agent) -> Value {
    let mut list = Vec::new();
    if agent.mode("auth-agent").is_some() {
        list.extend([
            json!({"id": "demo-login", "name": "Demo sign-in", "description": "Signs in at once"}),
            json!({"id": "demo-refuse", "name": "Refused sign-in", "description": "Always fails"}),
            json!({"id": "demo-slow", "name": "Slow sign-in", "description": "Takes 30 seconds"}),
        ]);
    }
    if agent.mode("auth-env").is_some() {
        list.push(
            json!({"id": "demo-key", "name": "Demo API key", "type": "env_var",
            "description": "A key for the demo agent",
            "vars": [{"name": "DEMO_API_KEY", "label": "Demo key"}]}),
        );
    }
    if agent.mode("auth-gateway").is_some() {
        list.push(json!({"id": "demo-gateway", "name": "Demo gateway",
            "description": "Sends the demo's model requests through your gateway",
            "_meta": {"gateway": {"protocol": "openai"}}}));
    }
    if agent.mode("auth-terminal").is_some() {
        list.extend([
            json!({"id": "demo-terminal", "name": "Sign in in a terminal", "type": "terminal",
                "description": "Runs the demo agent's own sign-in",
                "args": ["--login"], "env": {"DEMO_LOGIN": "1"}}),
            json!({"id": "demo-legacy", "name": "Legacy terminal sign-in",
                "_meta": {"terminal-auth": {"command": "parley-demo-agent", "args": ["--login"], "label": "Demo login"}}}),
        ]);
    }
    Value::Array(list)
}

/// Why `session/new` is refused, in the sign-in modes.
pub fn session_refused(agent: &Agent, cwd: &Path) -> Option<String> {
    if agent.mode("auth-env").is_some() && std::env::var("DEMO_API_KEY").map_or(true, |k| k.is_empty()) {
        return Some("Authentication required: DEMO_API_KEY is not set".into());
    }
    if agent.mode("auth-gateway").is_some() && !agent.signed_in.load(Ordering::Relaxed) {
        return Some("Authentication required: no gateway".into());
    }
    if agent.mode("auth-terminal").is_some() && !cwd.join(SIGNED_IN_FILE).exists() {
        return Some("Authentication required: sign in in a terminal first".into());
    }
    None
}

pub async fn authenticate(agent: &Agent, id: &Value, params: Value) {
    let method = params.get("methodId").and_then(Value::as_str).unwrap_or_default();
    eprintln!("demo: authenticate with {method}");
    match method {
        "demo-login" => {
            agent.signed_in.store(true, Ordering::Relaxed);
            agent.respond(id, json!({}));
            if agent.mode("auth-status").is_some() {
                agent.send(&json!({"jsonrpc": "2.0", "method": "auth/status_update",
                    "params": {"state": "authenticated"}}));
            }
        }
        "demo-slow" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            agent.signed_in.store(true, Ordering::Relaxed);
            agent.respond(id, json!({}));
        }
        "demo-key" if std::env::var("DEMO_API_KEY").is_ok_and(|k| !k.is_empty()) => {
            agent.respond(id, json!({}))
        }
        "demo-key" => agent.respond_error(id, -32000, "DEMO_API_KEY is not set"),
        "demo-refuse" => agent.respond_error(id, -32000, "Wrong password (demo-refuse always fails)"),
        // As claude-agent-acp 0.101 and codex-acp 2.6 take a gateway: its
        // base URL and headers in `_meta.gateway`, then who is signed in.
        "demo-gateway" => {
            let url = params
                .pointer("/_meta/gateway/baseUrl")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !url.starts_with("http") {
                return agent.respond_error(
                    id,
                    -32602,
                    "_meta.gateway.baseUrl must be an absolute http(s) URL",
                );
            }
            let host = url
                .split("://")
                .nth(1)
                .unwrap_or_default()
                .split('/')
                .next()
                .unwrap_or_default();
            eprintln!("demo: gateway at {host}");
            agent.signed_in.store(true, Ordering::Relaxed);
            agent.respond(id, json!({}));
            account_status(
                agent,
                json!({"kind": "gateway", "label": "Custom model gateway", "detail": host}),
            );
        }
        other => agent.respond_error(id, -32602, &format!("unknown auth method: {other}")),
    }
}

/// `_auth/status_update` (claude-agent-acp's and codex-acp's word on who is
/// signed in).
pub fn account_status(agent: &Agent, status: Value) {
    agent.send(&json!({"jsonrpc": "2.0", "method": "_auth/status_update", "params": {"authStatus": status}}));
}

/// `auth/status` (mode `auth-status`): signed in or not.
pub fn status(agent: &Agent, id: &Value) {
    let state = if agent.signed_in.load(Ordering::Relaxed) {
        "authenticated"
    } else {
        "unauthenticated"
    };
    agent.respond(id, json!({"state": state, "accounts": []}));
}

/// `agentCapabilities.auth`: `logout` with `auth-agent`, `status` with
/// `auth-status`.
pub fn capabilities(agent: &Agent) -> Value {
    let mut caps = serde_json::Map::new();
    if agent.mode("auth-agent").is_some() {
        caps.insert("logout".into(), json!({}));
    }
    if agent.mode("auth-status").is_some() {
        caps.insert("status".into(), json!({}));
    }
    if agent.mode("auth-gateway").is_some() {
        caps.insert("_meta".into(), json!({"authStatus": {}}));
    }
    Value::Object(caps)
}

/// `--login`: asks on the terminal, answers with the exit status.
pub fn terminal_login() -> i32 {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "Demo sign-in for Parley");
    let _ = write!(out, "Type yes to sign in: ");
    let _ = out.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    if line.trim() == "yes" {
        if let Err(e) = std::fs::write(SIGNED_IN_FILE, b"signed in\n") {
            let _ = writeln!(out, "Could not sign in: {e}");
            return 1;
        }
        let _ = writeln!(out, "Signed in.");
        0
    } else {
        let _ = writeln!(out, "Not signed in.");
        1
    }
}
