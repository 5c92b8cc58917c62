//! The ACP terminal capability (issue 18): the demo agent calls every
//! method against real commands; the terminals' processes follow the same
//! no-orphan rules as agents.

use std::time::Duration;

use parley::core::events::Event;
use parley::core::types::message::Role;
use serde_json::json;

use crate::common::*;

fn answer(h: &Harness, agent: &str) -> String {
    h.core
        .chat
        .conversation(agent)
        .expect("conversation")
        .messages
        .into_iter()
        .rev()
        .find(|m| m.role == Role::Agent)
        .map(|m| m.text())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_terminal_method_answers_as_the_spec_says() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "terminals").expect("send");
    h.wait_idle("a").await;
    let said = answer(&h, "a");
    for expected in [
        "echo: exit 0 output \"hello from a terminal\"",
        // 5 MB through a 1,000-byte limit: the last 1,000 bytes, marked.
        "truncation: 1000 bytes, truncated true",
        "kill sleep: signal \"SIGTERM\"",
        // It ignores SIGTERM: SIGKILL after the grace.
        "kill ignores-term: signal \"SIGKILL\"",
        "unknown id: {\"code\":-32602,\"message\":\"unknown terminal no-such-terminal\"}",
        // A session the conversation does not have open.
        "other session: {\"code\":-32602,\"message\":\"no open session no-such-session\"}",
    ] {
        assert!(said.contains(expected), "{expected:?} not in {said:?}");
    }
    // The same, as events (what parley-cli prints).
    let output: String = h
        .seen
        .iter()
        .filter_map(|e| match e {
            Event::TerminalOutput(o) => Some(o.data.clone()),
            _ => None,
        })
        .collect();
    assert!(output.contains("hello from a terminal"));
    let exits: Vec<(Option<u32>, Option<String>)> = h
        .seen
        .iter()
        .filter_map(|e| match e {
            Event::TerminalExited(x) => Some((x.exit_code, x.signal.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(exits.len(), 4, "{exits:?}");
    assert_eq!(exits[0], (Some(0), None));
    assert_eq!(exits[3], (None, Some("SIGKILL".into())));
    // The tool call shows the terminal by id.
    let conv = h.core.chat.conversation("a").expect("conversation");
    let shown = serde_json::to_string(&conv).unwrap_or_default();
    assert!(shown.contains("\"terminals\":[\"term-"), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_agent_takes_its_terminals_with_it_and_the_cap_holds() {
    let mark = unique("PARLEY_TERM");
    let text = config_text(&[agent("a", "")], 4, "0").replace(
        "\"maxRunningAgents\": 4",
        "\"maxRunningAgents\": 4, \"maxTerminalsPerAgent\": 1",
    );
    let mut h = Harness::with(&text, fast(), false);
    h.core
        .chat
        .send("a", &format!("terminal-orphan {mark}"))
        .expect("send");
    h.wait_for(
        "the terminal",
        Duration::from_secs(10),
        |e| matches!(e, Event::MessageDelta(d) if d.text.as_deref() == Some("terminal started ")),
    )
    .await;
    assert!(!processes_with(&mark).is_empty(), "the terminal runs");
    // One is the limit: another is refused, clearly.
    h.core.chat.cancel("a").expect("cancel");
    h.wait_idle("a").await;
    h.core.chat.send("a", "terminals").expect("send");
    h.wait_idle("a").await;
    let said = answer(&h, "a");
    assert!(said.contains("too many terminals: the limit is 1"), "{said}");
    // The agent stops: its terminals, grandchildren too, go.
    h.core.agents.stop("a").await.expect("stop");
    assert_eq!(
        wait_no_processes(&mark, Duration::from_secs(5)).await,
        Vec::<i32>::new()
    );
}

/// SIGKILL of Parley while a terminal runs a grandchild leaves no orphan:
/// the terminal's guardian loses its lifeline.
#[test]
fn sigkill_of_parley_leaves_no_terminal_behind() {
    let mark = unique("PARLEY_TERM_KILL");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        config_text(&[json!({"name": "a", "command": demo()})], 4, "0"),
    )
    .expect("write");
    let mut cli = std::process::Command::new(cli())
        .args(["send", "a", &format!("terminal-orphan {mark}"), "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("parley-cli");
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while processes_with(&mark).len() < 2 {
        assert!(std::time::Instant::now() < deadline, "the terminal never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(cli.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = cli.wait();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(&mark);
        if left.is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Creates written back to back, none waiting for another's answer: the
/// cap holds (each takes its slot before it spawns), and a slot comes back
/// with its terminal.
#[tokio::test(flavor = "multi_thread")]
async fn creates_at_once_never_pass_the_cap() {
    for cap in [1, 2] {
        let text = config_text(&[agent("a", "")], 4, "0").replace(
            "\"maxRunningAgents\": 4",
            &format!("\"maxRunningAgents\": 4, \"maxTerminalsPerAgent\": {cap}"),
        );
        let mut h = Harness::with(&text, fast(), false);
        for _ in 0..3 {
            h.core.chat.send("a", "terminal-race").expect("send");
            h.wait_idle("a").await;
            let said = answer(&h, "a");
            assert_eq!(said, format!("created {cap} of 4"), "cap {cap}");
        }
    }
}
