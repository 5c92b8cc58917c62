//! The demo agent's use of the client's terminals (prompt keywords
//! `terminals`, `terminal-colors`, `terminal-run` and `terminal-orphan MARK`).

use std::time::Duration;

use serde_json::{json, Value};

use super::state::Agent;

async fn create(
    agent: &Agent,
    sid: &str,
    command: &str,
    args: &[&str],
    extra: Value,
) -> Result<String, String> {
    let mut params = json!({"sessionId": sid, "command": command, "args": args});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let answer = agent.request("terminal/create", params).await;
    answer
        .get("terminalId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("create refused: {answer}"))
}

async fn call(agent: &Agent, sid: &str, method: &str, id: &str) -> Value {
    agent
        .request(method, json!({"sessionId": sid, "terminalId": id}))
        .await
}

fn show(agent: &Agent, sid: &str, tool: &str, title: &str, id: &str, status: &str) {
    agent.update(
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": tool, "title": title, "kind": "execute",
            "status": status, "content": [{"type": "terminal", "terminalId": id}]}),
    );
}

/// `terminals`: each method against real commands; says what it found.
pub async fn check_all(agent: &Agent, sid: &str) -> String {
    let mut found = Vec::new();
    // echo: its output and status.
    match create(agent, sid, "echo", &["hello from a terminal"], json!({})).await {
        Ok(id) => {
            show(
                agent,
                sid,
                "term-echo",
                "echo hello from a terminal",
                &id,
                "in_progress",
            );
            let exit = call(agent, sid, "terminal/wait_for_exit", &id).await;
            let out = call(agent, sid, "terminal/output", &id).await;
            let text = out.get("output").and_then(Value::as_str).unwrap_or_default();
            found.push(format!(
                "echo: exit {} output {:?}",
                exit.get("exitCode").unwrap_or(&Value::Null),
                text.trim()
            ));
            show(
                agent,
                sid,
                "term-echo",
                "echo hello from a terminal",
                &id,
                "completed",
            );
            call(agent, sid, "terminal/release", &id).await;
        }
        Err(e) => found.push(format!("echo: {e}")),
    }
    // 5 MB through a 1,000-byte limit: cut from the start.
    match create(
        agent,
        sid,
        "sh",
        &["-c", "yes | head -c 5000000"],
        json!({"outputByteLimit": 1000}),
    )
    .await
    {
        Ok(id) => {
            call(agent, sid, "terminal/wait_for_exit", &id).await;
            let out = call(agent, sid, "terminal/output", &id).await;
            let len = out.get("output").and_then(Value::as_str).map_or(0, str::len);
            let truncated = out.get("truncated").and_then(Value::as_bool).unwrap_or(false);
            found.push(format!("truncation: {len} bytes, truncated {truncated}"));
            call(agent, sid, "terminal/release", &id).await;
        }
        Err(e) => found.push(format!("truncation: {e}")),
    }
    // kill: a sleep, then a command that ignores SIGTERM.
    for (name, script) in [
        ("sleep", "exec sleep 1000"),
        ("ignores-term", "trap '' TERM; sleep 1000 & wait"),
    ] {
        match create(agent, sid, "sh", &["-c", script], json!({})).await {
            Ok(id) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                call(agent, sid, "terminal/kill", &id).await;
                let exit = call(agent, sid, "terminal/wait_for_exit", &id).await;
                found.push(format!(
                    "kill {name}: signal {}",
                    exit.get("signal").unwrap_or(&Value::Null)
                ));
                call(agent, sid, "terminal/release", &id).await;
            }
            Err(e) => found.push(format!("kill {name}: {e}")),
        }
    }
    let elsewhere = agent
        .request(
            "terminal/create",
            json!({"sessionId": "no-such-session", "command": "echo"}),
        )
        .await;
    found.push(format!(
        "other session: {}",
        elsewhere
            .get("error")
            .map_or("answered".into(), |e| e.to_string())
    ));
    let unknown = call(agent, sid, "terminal/output", "no-such-terminal").await;
    found.push(format!(
        "unknown id: {}",
        unknown.get("error").map_or("answered".into(), |e| e.to_string())
    ));
    found.join("\n")
}

/// `terminal-colors`: a coloured terminal left in the tool card.
pub async fn colors(agent: &Agent, sid: &str) -> String {
    let script = "printf '\\033[1;32m✔ compiled\\033[0m parley v0.1.0\\n\\033[33mwarning\\033[0m: unused import\\n\\033[31merror\\033[0m[E0425]: cannot find value\\n'; sleep 0.3; exit 1";
    match create(agent, sid, "sh", &["-c", script], json!({})).await {
        Ok(id) => {
            show(agent, sid, "term-colors", "cargo build", &id, "in_progress");
            call(agent, sid, "terminal/wait_for_exit", &id).await;
            show(agent, sid, "term-colors", "cargo build", &id, "failed");
            "A terminal with colours.".into()
        }
        Err(e) => e,
    }
}

/// `terminal-flood BYTES`: a build log of BYTES bytes in a terminal the
/// tool card shows (the window's benchmark).
pub async fn flood(agent: &Agent, sid: &str, bytes: u64) -> String {
    let script =
        format!("yes '   Compiling parley v0.1.0 (/home/user/parley) \\033[32mok\\033[0m' | head -c {bytes}");
    match create(agent, sid, "sh", &["-c", &script], json!({})).await {
        Ok(id) => {
            show(agent, sid, "term-flood", "cargo build", &id, "in_progress");
            call(agent, sid, "terminal/wait_for_exit", &id).await;
            show(agent, sid, "term-flood", "cargo build", &id, "completed");
            "built".into()
        }
        Err(e) => e,
    }
}

/// `terminal-orphan MARK`: a terminal whose command leaves a grandchild,
/// then a long wait (the test kills Parley meanwhile).
pub async fn orphan(agent: &Agent, sid: &str, mark: &str) -> String {
    let extra = json!({"env": [{"name": "PARLEY_TERMINAL_MARK", "value": mark}]});
    match create(agent, sid, "sh", &["-c", "sleep 1000 & sleep 1000"], extra).await {
        Ok(id) => {
            show(agent, sid, "term-orphan", "sleep", &id, "in_progress");
            agent.chunk(sid, "agent_message_chunk", "terminal started ");
            for _ in 0..600 {
                if agent.is_cancelled(sid) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            "waited".into()
        }
        Err(e) => e,
    }
}

/// `terminal-run SCRIPT`: runs `sh -c SCRIPT` in a terminal of the
/// client's (in the cwd); says its exit code and output.
pub async fn run(agent: &Agent, sid: &str, script: &str) -> String {
    match create(agent, sid, "sh", &["-c", script], json!({})).await {
        Ok(id) => {
            show(agent, sid, "term-run", script, &id, "in_progress");
            let exit = call(agent, sid, "terminal/wait_for_exit", &id).await;
            let out = call(agent, sid, "terminal/output", &id).await;
            show(agent, sid, "term-run", script, &id, "completed");
            call(agent, sid, "terminal/release", &id).await;
            format!(
                "exit {} output {:?}",
                exit.get("exitCode").unwrap_or(&Value::Null),
                out.get("output").and_then(Value::as_str).unwrap_or_default()
            )
        }
        Err(e) => e,
    }
}

/// `terminal-race`: four `terminal/create`s written back to back, none
/// waiting for another's answer; says how many the client made, then
/// releases them.
pub async fn race(agent: &Agent, sid: &str) -> String {
    let one = || create(agent, sid, "sleep", &["30"], json!({}));
    let (a, b, c, d) = tokio::join!(one(), one(), one(), one());
    let made: Vec<String> = [a, b, c, d].into_iter().filter_map(Result::ok).collect();
    for id in &made {
        call(agent, sid, "terminal/release", id).await;
    }
    format!("created {} of 4", made.len())
}
