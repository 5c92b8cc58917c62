//! The demo agent's session options and what it records of a session: its
//! config options (mode, model, effort, and a boolean where the client
//! advertised `session.configOptions.boolean`), or with `legacy-modes` the
//! older `modes` and `models`; the MCP servers, additional directories and
//! prompt content it received (kept in `state::Recorded`; the `received`
//! keyword tells them).

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::state::Agent;

/// A model the demo refuses to switch to, as an agent refuses one that the
/// user's plan does not include.
pub const REFUSED_MODEL: &str = "demo-unavailable";

fn current(agent: &Agent, id: &str, default: Value) -> Value {
    agent
        .recorded
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values
        .get(id)
        .cloned()
        .unwrap_or(default)
}

/// `configOptions` as they stand.
pub fn config_options(agent: &Agent) -> Value {
    let mut options = vec![
        json!({"id": "mode", "name": "Mode", "category": "mode", "type": "select",
        "description": "How the demo agent works",
        "currentValue": current(agent, "mode", json!("ask")),
        "options": [
            {"value": "ask", "name": "Ask", "description": "Asks before every edit"},
            {"value": "code", "name": "Code", "description": "Edits without asking"},
            {"value": "architect", "name": "Architect", "description": "Plans, never edits"}
        ]}),
        json!({"id": "model", "name": "Model", "category": "model", "type": "select",
        "currentValue": current(agent, "model", json!("demo-mini")),
        "options": [
            {"group": "fast", "name": "Fast", "options": [
                {"value": "demo-mini", "name": "Demo Mini", "description": "Quick answers · $0.25/$1 per Mtok"}]},
            {"group": "smart", "name": "Smart", "options": [
                {"value": "demo-large", "name": "Demo Large", "description": "Careful answers · $3/$15 per Mtok"},
                {"value": REFUSED_MODEL, "name": "Demo Unavailable", "description": "Not on your plan (always refused)"}]}
        ]}),
        json!({"id": "effort", "name": "Effort", "category": "thought_level", "type": "select",
        "currentValue": current(agent, "effort", json!("medium")),
        "options": [
            {"value": "low", "name": "Low"}, {"value": "medium", "name": "Medium"}, {"value": "high", "name": "High"}
        ]}),
    ];
    if agent.boolean_options.load(Ordering::Relaxed) {
        options.push(
            json!({"id": "brief", "name": "Brief answers", "category": "other", "type": "boolean",
            "description": "Shorter demo answers", "currentValue": current(agent, "brief", json!(false))}),
        );
    }
    // `options:N` (1 to 6): the first N of these and two more, as agents
    // offer from one picker to many.
    if let Some(n) = agent.mode("options").and_then(|n| n.parse::<usize>().ok()) {
        options.push(
            json!({"id": "sandbox", "name": "Sandbox", "category": "other", "type": "select",
            "currentValue": current(agent, "sandbox", json!("workspace-write")),
            "options": [{"value": "read-only", "name": "Read Only"},
                {"value": "workspace-write", "name": "Workspace Write"},
                {"value": "full-access", "name": "Full Access"}]}),
        );
        options.push(
            json!({"id": "verbosity", "name": "Verbosity", "category": "other", "type": "select",
            "currentValue": current(agent, "verbosity", json!("normal")),
            "options": [{"value": "terse", "name": "Terse"}, {"value": "normal", "name": "Normal"},
                {"value": "chatty", "name": "Chatty"}]}),
        );
        options.truncate(n.clamp(1, 6));
    }
    Value::Array(options)
}

/// What `session/new` answers besides the session id.
pub fn session_state(agent: &Agent) -> Value {
    if agent.mode("no-options").is_some() {
        return json!({});
    }
    if agent.mode("legacy-modes").is_some() {
        return json!({
            "modes": {"currentModeId": current(agent, "mode", json!("ask")), "availableModes": [
                {"id": "ask", "name": "Ask", "description": "Asks before every edit"},
                {"id": "code", "name": "Code"},
                {"id": "yolo", "name": "YOLO", "description": "Auto-approves all tools"}]},
            "models": {"currentModelId": current(agent, "model", json!("demo-mini")), "availableModels": [
                {"modelId": "demo-mini", "name": "Demo Mini"},
                {"modelId": "demo-large", "name": "Demo Large"},
                {"modelId": REFUSED_MODEL, "name": "Demo Unavailable"}]}
        });
    }
    json!({"configOptions": config_options(agent)})
}

/// Keeps what `session/new` brought.
pub fn record_session(agent: &Agent, params: &Value) {
    let mut r = agent.recorded.lock().unwrap_or_else(|e| e.into_inner());
    r.mcp_servers = params.get("mcpServers").cloned().unwrap_or(Value::Null);
    r.additional_directories = params.get("additionalDirectories").cloned().unwrap_or(json!([]));
}

fn set(agent: &Agent, id: &str, value: Value) {
    agent
        .recorded
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values
        .insert(id.to_owned(), value);
}

/// `session/set_config_option`.
pub fn set_config_option(agent: &Agent, id: &Value, params: &Value) {
    let config_id = params.get("configId").and_then(Value::as_str).unwrap_or_default();
    let value = params.get("value").cloned().unwrap_or(Value::Null);
    let known = config_options(agent);
    let Some(option) = known
        .as_array()
        .and_then(|l| l.iter().find(|o| o["id"] == config_id))
    else {
        return agent.respond_error(id, -32602, &format!("unknown config option {config_id}"));
    };
    if value == json!(REFUSED_MODEL) {
        return agent.respond_error(id, -32603, "Demo Unavailable is not available on your plan");
    }
    let valid = match option["type"].as_str() {
        Some("boolean") => value.is_boolean() && params.get("type") == Some(&json!("boolean")),
        _ => option.to_string().contains(&format!("\"value\":{value}")),
    };
    if !valid {
        return agent.respond_error(id, -32602, &format!("invalid value {value} for {config_id}"));
    }
    eprintln!("demo: {config_id} set to {value}");
    set(agent, config_id, value);
    agent.respond(id, json!({"configOptions": config_options(agent)}));
}

/// The legacy `session/set_mode` (answered with a `current_mode_update`
/// too) and `session/set_model`.
pub fn set_legacy(agent: &Agent, id: &Value, params: &Value, model: bool) {
    let key = if model { "modelId" } else { "modeId" };
    let Some(value) = params.get(key).and_then(Value::as_str) else {
        return agent.respond_error(id, -32602, &format!("{key} missing"));
    };
    if value == REFUSED_MODEL {
        return agent.respond_error(id, -32603, "Demo Unavailable is not available on your plan");
    }
    set(agent, if model { "model" } else { "mode" }, json!(value));
    agent.respond(id, json!({}));
    if !model {
        if let Some(sid) = params.get("sessionId").and_then(Value::as_str) {
            agent.update(
                sid,
                json!({"sessionUpdate": "current_mode_update", "currentModeId": value}),
            );
        }
    }
}

/// One line per content block of a prompt: its type and what identifies it.
pub fn record_blocks(agent: &Agent, prompt: &[Value]) {
    let blocks = prompt
        .iter()
        .map(|b| {
            let t = b["type"].as_str().unwrap_or("?");
            match t {
                "resource_link" => format!(
                    "resource_link {} {}",
                    b["name"].as_str().unwrap_or(""),
                    b["uri"].as_str().unwrap_or("")
                ),
                "resource" => format!(
                    "resource {} {} chars",
                    b["resource"]["uri"].as_str().unwrap_or(""),
                    b["resource"]["text"]
                        .as_str()
                        .map(|t| t.chars().count())
                        .unwrap_or(0)
                ),
                "image" => format!(
                    "image {} {} base64 chars",
                    b["mimeType"].as_str().unwrap_or(""),
                    b["data"].as_str().map(str::len).unwrap_or(0)
                ),
                other => other.to_owned(),
            }
        })
        .collect();
    agent.recorded.lock().unwrap_or_else(|e| e.into_inner()).blocks = blocks;
}

/// The `received` keyword's answer.
pub fn received(agent: &Agent) -> String {
    let r = agent.recorded.lock().unwrap_or_else(|e| e.into_inner());
    format!(
        "mcpServers: {}\nadditionalDirectories: {}\nblocks: {}\noptions: {}",
        r.mcp_servers,
        r.additional_directories,
        r.blocks.join(" | "),
        serde_json::to_string(&r.values).unwrap_or_default()
    )
}

/// `agentCapabilities` parts the modes switch on.
pub fn capabilities(agent: &Agent) -> (Value, Value, Value) {
    let prompt = json!({"image": agent.mode("images").is_some(), "audio": false,
        "embeddedContext": agent.mode("embedded").is_some()});
    let mcp = json!({"http": agent.mode("mcp-http").is_some(), "sse": agent.mode("mcp-sse").is_some()});
    let session = if agent.mode("additional-dirs").is_some() {
        json!({"additionalDirectories": {}})
    } else {
        json!({})
    };
    (prompt, mcp, session)
}
