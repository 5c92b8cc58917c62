//! The spec's "Agent states" and "Transitions", row by row, with real agents.

use std::time::{Duration, Instant};

use parley::core::events::Event;
use parley::core::types::AgentState::{self, *};
use serde_json::json;

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn start_then_ready_then_stop() {
    let mut h = Harness::new(&[agent("a", "")]);
    assert_eq!(
        h.core.agents.list()[0].state,
        Stopped,
        "the initial state of every agent"
    );
    h.core.agents.start("a").await.expect("start");
    assert_eq!(h.core.agents.list()[0].state, Ready);
    h.core.agents.stop("a").await.expect("stop");
    h.wait_state("a", Stopped).await;
    assert_eq!(h.states("a"), vec![Stopped, Starting, Ready, Stopped]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_start_is_an_error_with_the_reason_and_the_last_stderr_lines() {
    let mut h = Harness::new(&[agent("a", "stderr:3,exit-at-start")]);
    let err = h.core.agents.start("a").await.expect_err("must fail");
    let shown = h.wait_state("a", Error).await.expect("error text");
    // The reason and the agent's last lines come apart (the window's toast
    // shows the reason); their text is what the agent's error shows.
    assert_eq!(err.to_string(), shown);
    assert!(err.reason.contains("closed"), "{err}");
    assert!(!err.reason.contains("demo:"), "{err}");
    assert!(
        err.last_lines.iter().any(|l| l == "demo: stderr line 3"),
        "{err:?}"
    );
    assert!(
        err.last_lines
            .iter()
            .any(|l| l.contains("demo: exiting at start")),
        "{err:?}"
    );
    // error → starting when started again (and fails again here).
    let _ = h.core.agents.start("a").await;
    h.wait_state("a", Error).await;
    assert_eq!(h.states("a"), vec![Stopped, Starting, Error, Starting, Error]);
}

#[tokio::test(flavor = "multi_thread")]
async fn another_protocol_version_is_an_error_naming_both() {
    let mut h = Harness::new(&[agent("a", "protocol-2")]);
    let err = h.core.agents.start("a").await.expect_err("must fail").to_string();
    assert!(err.contains("version 2") && err.contains("version 1"), "{err}");
    h.wait_state("a", Error).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handshake_that_never_ends_times_out() {
    let mut t = fast();
    // Long enough for a loaded machine to start the agent and let it say
    // on stderr that it read `initialize`.
    t.handshake_timeout = Duration::from_millis(2000);
    let mut h = Harness::with(&config_text(&[agent("a", "no-initialize")], 4, "0"), t, false);
    let started = Instant::now();
    let err = h
        .core
        .agents
        .start("a")
        .await
        .expect_err("must time out")
        .to_string();
    assert!(started.elapsed() >= Duration::from_millis(2000));
    assert!(err.contains("did not answer initialize"), "{err}");
    assert!(
        err.contains("not answering initialize"),
        "stderr lines follow: {err}"
    );
    h.wait_state("a", Error).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_command_names_the_command_and_the_path() {
    let mut h = Harness::new(&[
        json!({"name": "a", "command": "no-such-agent-xyz", "env": {"PATH": "/nowhere:/bin"}}),
    ]);
    let err = h.core.agents.start("a").await.expect_err("must fail").to_string();
    assert!(
        err.contains("no-such-agent-xyz") && err.contains("/nowhere:/bin"),
        "{err}"
    );
    h.wait_state("a", Error).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn used_makes_busy_and_the_last_user_done_makes_ready() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "slow 5 20").expect("send");
    h.wait_state("a", Busy).await;
    h.wait_state("a", Ready).await;
    assert_eq!(h.states("a"), vec![Stopped, Starting, Ready, Busy, Ready]);
}

#[tokio::test(flavor = "multi_thread")]
async fn stopping_a_busy_agent_ends_in_stopped() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "wait").expect("send");
    h.wait_state("a", Busy).await;
    h.core.agents.stop("a").await.expect("stop");
    h.wait_state("a", Stopped).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_that_exits_on_its_own_is_an_error_and_is_not_restarted() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "crash").expect("send");
    let err = h.wait_state("a", Error).await.expect("reason");
    assert!(err.contains("exited on its own") && err.contains("3"), "{err}");
    assert!(err.contains("crashing mid-turn"), "the last stderr lines: {err}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        h.core.agents.list()[0].state,
        Error,
        "never restarted automatically"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_while_starting_ends_in_stopped_once_the_start_ends() {
    let mut t = fast();
    t.handshake_timeout = Duration::from_millis(1500);
    let mut h = Harness::with(&config_text(&[agent("a", "no-initialize")], 4, "0"), t, false);
    let core = h.core.clone();
    let start = tokio::spawn(async move { core.agents.start("a").await });
    h.wait_state("a", Starting).await;
    let began = Instant::now();
    h.core.agents.stop("a").await.expect("stop");
    assert!(
        began.elapsed() >= Duration::from_millis(1000),
        "waited for the start to end"
    );
    assert!(start.await.expect("join").is_err());
    h.wait_state("a", Stopped).await;
    assert_eq!(h.states("a"), vec![Stopped, Starting, Stopped], "never error");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_least_recently_used_idle_agent_makes_room() {
    let text = config_text(&[agent("a", ""), agent("b", ""), agent("c", "")], 2, "0");
    let mut h = Harness::with(&text, fast(), false);
    h.core.agents.start("a").await.expect("a");
    h.core.agents.start("b").await.expect("b");
    // a was used longer ago than b: a makes room for c.
    h.core.agents.start("c").await.expect("c");
    let states: Vec<(String, AgentState)> = h
        .core
        .agents
        .list()
        .into_iter()
        .map(|a| (a.name, a.state))
        .collect();
    assert_eq!(
        states,
        vec![("a".into(), Stopped), ("b".into(), Ready), ("c".into(), Ready)]
    );
    h.wait_state("a", Stopped).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_start_is_refused_when_every_running_agent_is_busy() {
    let text = config_text(&[agent("a", ""), agent("b", ""), agent("c", "")], 2, "0");
    let h = Harness::with(&text, fast(), false);
    h.core.chat.send("a", "wait").expect("a");
    h.core.chat.send("b", "wait").expect("b");
    h.wait_listed("a", Busy).await;
    h.wait_listed("b", Busy).await;
    let err = h.core.agents.start("c").await.expect_err("refused").to_string();
    assert_eq!(
        err,
        "too many agents running: 2 agent(s) busy (a, b), the limit is 2"
    );
    assert_eq!(h.core.agents.list()[2].state, Stopped);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_agent_is_stopped_after_the_limit() {
    let text = config_text(&[agent("a", "")], 4, "1s");
    let mut h = Harness::with(&text, fast(), false);
    h.core.agents.start("a").await.expect("start");
    let ready = Instant::now();
    h.wait_state("a", Stopped).await;
    let idle = ready.elapsed();
    assert!(idle >= Duration::from_secs(1), "stopped after {idle:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_agent_is_never_stopped_for_being_idle() {
    let text = config_text(&[agent("a", "")], 4, "1s");
    let mut h = Harness::with(&text, fast(), false);
    // Busy for 2.5 s with an idle limit of 1 s, checked every 200 ms.
    h.core.chat.send("a", "slow 25 100").expect("send");
    h.wait_idle("a").await;
    assert_eq!(h.states("a"), vec![Stopped, Starting, Ready, Busy, Ready]);
    h.wait_state("a", Stopped).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn logs_keep_the_last_200_stderr_lines_and_each_is_an_event() {
    let mut h = Harness::new(&[agent("a", "stderr:250")]);
    h.core.agents.start("a").await.expect("start");
    h.wait_for(
        "the 250th line",
        Duration::from_secs(10),
        |e| matches!(e, Event::AgentLog(l) if l.line == "demo: stderr line 250"),
    )
    .await;
    let logs = h.core.agents.logs("a").expect("logs");
    assert_eq!(logs.len(), 200);
    assert!(logs.contains(&"demo: stderr line 250".to_string()));
    assert!(!logs.contains(&"demo: stderr line 1".to_string()));
    let events = h.seen.iter().filter(|e| matches!(e, Event::AgentLog(_))).count();
    assert!(events >= 250, "{events} agent:log events");
}

#[tokio::test(flavor = "multi_thread")]
async fn configuration_changes_add_mark_outdated_and_remove() {
    let mut h = Harness::new(&[agent("a", ""), agent("b", "")]);
    h.core.agents.start("a").await.expect("start a");
    h.core.agents.start("b").await.expect("start b");
    let mut changed = agent("a", "");
    changed["args"] = json!(["--changed"]);
    let text = config_text(&[changed, agent("c", "")], 4, "0");
    assert!(h.core.config.save(&text).expect("save").is_empty());
    h.wait_state("b", Stopped).await;
    let list = h.core.agents.list();
    let names: Vec<&str> = list.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["a", "c"],
        "b removed, c added, in configuration order"
    );
    assert!(list[0].outdated && list[0].state == Ready, "{list:?}");
    // "agent:state — an agent changes state or its definition changes".
    assert!(
        h.seen
            .iter()
            .any(|e| matches!(e, Event::AgentState(s) if s.agent == "a" && s.outdated && s.state == Ready)),
        "the definition change was announced"
    );
    assert_eq!(list[1].state, Stopped);
    h.core.agents.restart("a").await.expect("restart");
    let list = h.core.agents.list();
    assert!(!list[0].outdated && list[0].state == Ready, "{list:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_misbehaving_agent_never_affects_another() {
    let agents = [
        agent("good", ""),
        agent("crash", "exit-at-start"),
        agent("garbage", "garbage"),
        agent("silent", "no-initialize"),
        agent("huge", "huge-line:40"),
    ];
    let mut t = fast();
    // Room for 32 MiB through the pipe on a loaded machine.
    t.handshake_timeout = Duration::from_millis(4000);
    let mut h = Harness::with(&config_text(&agents, 8, "0"), t, false);
    h.core.agents.start("good").await.expect("good");
    assert!(h.core.agents.start("crash").await.is_err());
    h.core
        .agents
        .start("garbage")
        .await
        .expect("garbage lines are skipped");
    assert!(h.core.agents.start("silent").await.is_err());
    let huge = h.core.agents.start("huge").await.expect_err("a line over 32 MiB");
    assert!(huge.reason.contains("longer than 33554432 bytes"), "{huge}");
    h.core.chat.send("garbage", "echo still fine").expect("send");
    h.wait_idle("garbage").await;
    h.core.chat.send("good", "echo hello").expect("send");
    h.wait_idle("good").await;
    let conv = h.core.chat.conversation("good").expect("conversation");
    assert_eq!(conv.messages.last().map(|m| m.text()), Some("hello".to_string()));
    assert_eq!(h.core.agents.list()[0].state, Ready);
    let logs = h.core.agents.logs("garbage").expect("logs");
    assert!(
        logs.iter().any(|l| l.contains("not JSON-RPC")),
        "skipped lines are logged: {logs:?}"
    );
}
