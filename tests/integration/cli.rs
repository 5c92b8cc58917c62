//! parley-cli, exactly as `spec/parley-cli.md` says.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::*;

fn run(args: &[&str], dir: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(cli())
        .args(args)
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env_remove("PARLEY_CONFIG")
        .output()
        .expect("run parley-cli");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn validate_prints_file_line_column_kind_message_and_exits_0_1_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.json");
    std::fs::write(&good, "{\"colour\": 1}").expect("write");
    let (code, out, _) = run(&["validate", &good.display().to_string()], dir.path());
    assert_eq!(code, 0, "warnings allowed");
    assert_eq!(
        out,
        format!(
            "{}:1:2: warning: colour: unknown key \"colour\" is ignored\n",
            good.display()
        )
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\n  \"theme\": 3\n}").expect("write");
    let (code, out, _) = run(&["validate", &bad.display().to_string()], dir.path());
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!("{}:2:12: error: theme:", bad.display())),
        "{out}"
    );
    let (code, _, err) = run(&["validate", "/nonexistent/x.json"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/x.json"));
}

#[test]
fn schema_prints_the_json_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, _) = run(&["schema"], dir.path());
    assert_eq!(code, 0);
    let schema: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(schema["properties"]["agents"].is_object());
}

fn config_with(dir: &std::path::Path, agents: &[Value]) -> String {
    let path = dir.join("config.json");
    std::fs::write(&path, config_text(agents, 4, "0")).expect("write");
    path.display().to_string()
}

#[test]
fn send_prints_every_event_with_the_spec_names_and_exits_by_stop_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_with(dir.path(), &[agent("demo", "")]);
    let (code, out, _) = run(&["send", "demo", "echo hi", "--config", &config], dir.path());
    assert_eq!(code, 0);
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    for name in ["agent:state", "message:updated", "message:delta", "turn:changed"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let delta = events
        .iter()
        .find(|e| e["event"] == "message:delta")
        .expect("delta");
    assert_eq!(delta["payload"]["text"], "hi");
    assert!(delta["payload"]["messageId"].is_string());
    let done = events
        .iter()
        .rfind(|e| e["event"] == "message:updated" && e["payload"]["message"]["role"] == "agent")
        .expect("the answer");
    assert_eq!(done["payload"]["message"]["stopReason"], "end_turn");
    assert!(done["payload"]["message"]["createdAt"].is_string());
    assert_eq!(
        events.last().map(|e| e["payload"]["state"].clone()),
        Some(json!("stopped")),
        "agents are stopped at the end"
    );

    let (code, _, _) = run(&["send", "demo", "stop refusal", "--config", &config], dir.path());
    assert_eq!(code, 1);
    for (answer, option) in [("allow", "allow_once"), ("reject", "reject_once")] {
        let (code, out, _) = run(
            &[
                "send",
                "demo",
                "permission",
                "--config",
                &config,
                "--permission",
                answer,
            ],
            dir.path(),
        );
        assert_eq!(code, 0);
        assert!(out.contains(&format!("permission answer: {option}")), "{out}");
    }
    let (code, out, _) = run(&["send", "demo", "permission", "--config", &config], dir.path());
    assert_eq!(code, 1, "the default answer is cancel: the turn ends cancelled");
    assert!(out.contains("\"stopReason\":\"cancelled\""));
    let (code, _, err) = run(&["send", "nobody", "hi", "--config", &config], dir.path());
    assert_eq!(code, 1);
    assert!(err.contains("unknown agent"));
}

/// Runs `parley-cli serve`, sending each line and waiting for its answer
/// before the next (Open and Save must happen in order); then closes its input.
fn serve(dir: &std::path::Path, config: &str, calls: &[Value], raw: &[&str]) -> (i32, Vec<Value>) {
    use std::io::BufRead;
    let mut child = Command::new(cli())
        .args(["serve", "--config", config])
        .env("XDG_STATE_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut lines = Vec::new();
    let mut stdin = child.stdin.take().expect("stdin");
    let wait_answer = |id: &Value, lines: &mut Vec<Value>| loop {
        let v = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("an answer in time");
        let done = v.get("id") == Some(id);
        lines.push(v);
        if done {
            return;
        }
    };
    for r in raw {
        writeln!(stdin, "{r}").expect("write");
        wait_answer(&Value::Null, &mut lines);
    }
    for c in calls {
        writeln!(stdin, "{c}").expect("write");
        wait_answer(&c["id"], &mut lines);
    }
    drop(stdin);
    let status = child.wait().expect("wait");
    let _ = reader.join();
    lines.extend(rx.try_iter());
    (status.code().unwrap_or(-1), lines)
}

fn answer(lines: &[Value], id: Value) -> Value {
    let found: Vec<&Value> = lines.iter().filter(|l| l.get("id") == Some(&id)).collect();
    assert_eq!(found.len(), 1, "exactly one answer for {id}: {found:?}");
    found[0].clone()
}

#[test]
fn serve_answers_each_call_once_and_stops_everything_at_end_of_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_with(dir.path(), &[agent("demo", "")]);
    let calls = [
        json!({"id": 1, "method": "AgentService.List"}),
        json!({"id": "two", "method": "AgentService.Start", "params": ["demo"]}),
        json!({"id": 3, "method": "AgentService.Start", "params": ["nobody"]}),
        json!({"id": 4, "method": "ConfigService.Validate", "params": ["{\"theme\": 1}"]}),
        json!({"id": 5, "method": "ConfigService.Choose"}),
        json!({"id": 6, "method": "ConfigService.Schema"}),
        json!({"id": 7, "method": "ConfigService.Current"}),
        json!({"id": 8, "method": "No.Such"}),
        json!({"id": 9, "method": "ChatService.Send", "params": ["demo", ""]}),
    ];
    let (code, lines) = serve(dir.path(), &config, &calls, &["this is not json"]);
    assert_eq!(code, 0, "a clean shutdown");
    let list = answer(&lines, json!(1));
    let agents = list["result"].as_array().expect("a list");
    let keys: Vec<&str> = agents[0]
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "name",
        "title",
        "icon",
        "description",
        "state",
        "error",
        "outdated",
    ] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    assert_eq!(answer(&lines, json!("two"))["result"], Value::Null);
    assert!(answer(&lines, json!(3))["error"]
        .as_str()
        .expect("error")
        .contains("unknown agent"));
    let problems = answer(&lines, json!(4))["result"].clone();
    assert_eq!(problems[0]["line"], 1);
    assert_eq!(problems[0]["warning"], false);
    assert!(answer(&lines, json!(5))["error"].is_string());
    assert!(answer(&lines, json!(6))["result"]["properties"].is_object());
    let current = answer(&lines, json!(7))["result"].clone();
    for k in [
        "path", "source", "created", "valid", "problems", "warnings", "theme", "language", "channels",
    ] {
        assert!(current.get(k).is_some(), "{k}");
    }
    assert_eq!(current["source"], "command-line");
    assert!(answer(&lines, json!(8))["error"].is_string());
    assert!(answer(&lines, json!(9))["error"].is_string());
    assert!(
        answer(&lines, Value::Null)["error"].is_string(),
        "a line that is not a call"
    );
    let last_state = lines
        .iter()
        .rfind(|l| l["event"] == "agent:state")
        .expect("states");
    assert_eq!(last_state["payload"]["state"], "stopped");
}

#[test]
fn recent_keeps_the_8_newest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_with(dir.path(), &[]);
    let mut calls = Vec::new();
    for i in 0..10 {
        let p = dir.path().join(format!("c{i}.json"));
        std::fs::write(&p, "{}").expect("write");
        calls.push(json!({"id": i, "method": "ConfigService.Open", "params": [p.display().to_string()]}));
    }
    std::fs::remove_file(dir.path().join("c8.json")).expect("rm");
    let (_, lines) = serve(dir.path(), &config, &calls, &[]);
    assert!(
        answer(&lines, json!(8))["error"].is_string(),
        "a missing file cannot be opened"
    );
    std::fs::remove_file(dir.path().join("c5.json")).expect("rm");
    let (_, lines) = serve(
        dir.path(),
        &config,
        &[json!({"id": "r", "method": "ConfigService.Recent"})],
        &[],
    );
    let recent: Vec<String> =
        serde_json::from_value(answer(&lines, json!("r"))["result"].clone()).expect("list");
    let names: Vec<String> = recent
        .iter()
        .map(|p| {
            std::path::Path::new(p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    // c9 c7 c6 c5 c4 c3 c2 c1 were the 8 newest; c5 no longer exists.
    assert_eq!(
        names,
        vec!["c9.json", "c7.json", "c6.json", "c4.json", "c3.json", "c2.json", "c1.json"]
    );
}

/// A line that is not UTF-8 gets an error answer, and the calls after it
/// are still served (before, it ended the input silently).
#[test]
fn serve_answers_a_line_that_is_not_utf8_and_goes_on() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_with(dir.path(), &[agent("demo", "")]);
    let mut child = Command::new(cli())
        .args(["serve", "--config", &config])
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"{\"id\": 1, \"method\": \"AgentService.List\xff\xfe\"}\n{\"id\": 2, \"method\": \"AgentService.List\"}\n")
        .expect("write");
    drop(stdin);
    let stdout = child.stdout.take().expect("stdout");
    let lines: Vec<Value> = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    assert!(child.wait().expect("wait").success());
    let error = answer(&lines, Value::Null);
    let text = error["error"].as_str().expect("an error");
    assert!(text.contains("not UTF-8") && text.contains("byte 38"), "{text}");
    assert!(answer(&lines, json!(2))["result"].is_array(), "{lines:?}");
}
