//! The stop sequence, timed, and no orphan ever: after Stop, after quit, and
//! after Parley itself is killed with SIGKILL.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use parley::core::supervisor::Timings;
use parley::core::types::AgentState::*;
use serde_json::json;

use crate::common::*;

fn marked(name: &str, mode: &str, marker: &str) -> serde_json::Value {
    json!({"name": name, "command": demo(), "env": {"PARLEY_DEMO_MODE": mode, "PARLEY_TEST_MARKER": marker}})
}

/// The spec's durations (5 s, 3 s), not shortened.
fn spec_timings() -> Timings {
    Timings {
        idle_check: Duration::from_secs(3600),
        ..Timings::default()
    }
}

/// One agent "a" started with the demo agent's `mode`, marked with a fresh
/// `tag` so its processes can be found, under the spec's timings.
async fn started(tag: &str, mode: &str) -> (Harness, String) {
    let marker = unique(tag);
    let h = Harness::with(
        &config_text(&[marked("a", mode, &marker)], 4, "0"),
        spec_timings(),
        false,
    );
    h.core.agents.start("a").await.expect("start");
    (h, marker)
}

/// How long `Stop` of "a" took.
async fn timed_stop(h: &Harness) -> Duration {
    let began = Instant::now();
    h.core.agents.stop("a").await.expect("stop");
    began.elapsed()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_exits_on_end_of_input_goes_without_signals() {
    let (mut h, marker) = started("eof", "").await;
    let took = timed_stop(&h).await;
    assert!(
        took < Duration::from_secs(2),
        "took {took:?}: no SIGTERM was needed"
    );
    assert!(h
        .core
        .agents
        .logs("a")
        .expect("logs")
        .contains(&"demo: end of input".to_string()));
    assert!(processes_with(&marker).is_empty());
    h.wait_state("a", Stopped).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_ignores_end_of_input_gets_sigterm_after_5_seconds() {
    let (mut h, marker) = started("term", "ignore-eof").await;
    let took = timed_stop(&h).await;
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(7),
        "took {took:?}"
    );
    assert!(processes_with(&marker).is_empty());
    h.wait_state("a", Stopped).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_and_its_child_that_ignore_sigterm_are_killed_after_8_seconds() {
    let (mut h, marker) = started("kill", "ignore-eof,ignore-term,child-ignores-term").await;
    let pgid = h.core.agents.process_group("a").expect("pgid");
    assert_eq!(settled_count(&marker, 2).await, 2, "the agent and its child");
    assert_eq!(parley::core::supervisor::process::group_members(pgid).len(), 2);
    let took = timed_stop(&h).await;
    assert!(
        took >= Duration::from_secs(8) && took < Duration::from_secs(10),
        "took {took:?}"
    );
    assert!(processes_with(&marker).is_empty(), "the child is gone too");
    assert!(parley::core::supervisor::process::group_members(pgid).is_empty());
    h.wait_state("a", Stopped).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn quitting_stops_every_agent_in_parallel() {
    let marker = unique("quit");
    let agents = [
        marked("a", "ignore-eof", &marker),
        marked("b", "ignore-eof,child-ignores-term", &marker),
    ];
    let mut t = fast();
    t.stop.eof_grace = Duration::from_secs(2);
    let h = Harness::with(&config_text(&agents, 4, "0"), t, false);
    h.core.agents.start("a").await.expect("a");
    h.core.agents.start("b").await.expect("b");
    assert_eq!(settled_count(&marker, 3).await, 3);
    let began = Instant::now();
    h.core.shutdown().await;
    let took = began.elapsed();
    // In parallel: one grace period (2 s), not two (which take 4.7 s). It
    // takes about 2.7 s; the rest is room for a loaded machine.
    assert!(took < Duration::from_millis(4200), "took {took:?}");
    assert!(processes_with(&marker).is_empty());
}

/// Parley (here `parley-cli serve`) killed with SIGKILL leaves nothing.
#[tokio::test(flavor = "multi_thread")]
async fn no_orphan_after_parley_is_killed() {
    let marker = unique("sigkill");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    let mode = "ignore-eof,ignore-term,child-ignores-term";
    std::fs::write(
        &config,
        config_text(
            &[
                marked("a", mode, &marker),
                marked("b", "setsid-child,double-fork", &marker),
            ],
            4,
            "0",
        ),
    )
    .expect("write");
    let mut serve = std::process::Command::new(cli())
        .args(["serve", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("parley-cli serve");
    let mut stdin = serve.stdin.take().expect("stdin");
    let stdout = serve.stdout.take().expect("stdout");
    writeln!(
        stdin,
        r#"{{"id": 1, "method": "AgentService.Start", "params": ["a"]}}"#
    )
    .expect("write");
    writeln!(
        stdin,
        r#"{{"id": 2, "method": "AgentService.Start", "params": ["b"]}}"#
    )
    .expect("write");
    let mut answers = 0;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.expect("line");
        if line.starts_with(r#"{"id":"#) {
            assert!(line.contains(r#""result":null"#), "{line}");
            answers += 1;
            if answers == 2 {
                break;
            }
        }
    }
    assert_eq!(
        settled_count(&marker, 5).await,
        5,
        "two agents, a child in the group and two that left it"
    );
    serve.kill().expect("SIGKILL");
    let _ = serve.wait();
    let left = wait_no_processes(&marker, Duration::from_secs(3)).await;
    assert!(left.is_empty(), "orphans left: {left:?}");
}

/// Children that leave the agent's process group (a `setsid` child that
/// ignores SIGTERM, a daemon made by a double fork) are ended with the agent:
/// on Stop, and when the agent exits on its own.
#[tokio::test(flavor = "multi_thread")]
async fn children_that_left_the_group_are_ended_on_stop_and_on_exit() {
    let marker = unique("escape");
    let agents = [
        marked("a", "setsid-child,double-fork", &marker),
        marked("b", "setsid-child,double-fork", &marker),
    ];
    let mut h = Harness::with(&config_text(&agents, 4, "0"), fast(), false);
    h.core.agents.start("a").await.expect("start a");
    let pgid = h.core.agents.process_group("a").expect("pgid");
    let escaped: Vec<i32> = processes_with(&marker)
        .into_iter()
        .filter(|&pid| {
            parley::core::supervisor::process::stat_state_and_group(pid)
                .is_some_and(|(_, group)| group != pgid)
        })
        .collect();
    assert_eq!(escaped.len(), 2, "two children outside the agent's group");
    let began = Instant::now();
    h.core.agents.stop("a").await.expect("stop");
    // The agent exits at end of input; the one that ignores SIGTERM gets
    // SIGKILL after the grace (600 ms here).
    assert!(began.elapsed() < Duration::from_secs(4), "{:?}", began.elapsed());
    assert!(processes_with(&marker).is_empty(), "left after Stop");
    h.wait_state("a", Stopped).await;

    h.core.agents.start("b").await.expect("start b");
    assert_eq!(settled_count(&marker, 3).await, 3);
    let agent = h.core.agents.process_group("b").expect("pgid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the agent");
    h.wait_state("b", Error).await;
    let left = wait_no_processes(&marker, Duration::from_secs(3)).await;
    assert!(left.is_empty(), "left after the agent died: {left:?}");
}

/// Inside Flatpak agents run on the host through `flatpak-spawn --host`; with
/// a stand-in that behaves like it, the stop sequence still reaches the
/// agent's whole group, and nothing is left when Parley is killed.
#[test]
fn through_host_spawn_the_stop_sequence_holds_and_nothing_is_orphaned() {
    let stubborn = unique("host-stubborn");
    let plain = unique("host-plain");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    let agents = [
        marked("a", "ignore-eof,ignore-term,child-ignores-term", &stubborn),
        marked("b", "", &plain),
    ];
    std::fs::write(&config, config_text(&agents, 4, "0")).expect("write");
    let standin = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fake-flatpak-spawn");
    let mut serve = std::process::Command::new(cli())
        .args(["serve", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .env("PARLEY_HOST_SPAWN", format!("{standin} --host --watch-bus"))
        .env("PARLEY_TEST_TIMINGS", "eof=1s,term=1s")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("parley-cli serve");
    let mut stdin = serve.stdin.take().expect("stdin");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = serve.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let call = |stdin: &mut std::process::ChildStdin, id: u32, method: &str, agent: &str| -> String {
        writeln!(
            stdin,
            r#"{{"id": {id}, "method": "{method}", "params": ["{agent}"]}}"#
        )
        .expect("write");
        loop {
            let line = rx.recv_timeout(Duration::from_secs(30)).expect("an answer");
            if line.starts_with(&format!(r#"{{"id":{id},"#)) {
                return line;
            }
        }
    };
    assert!(call(&mut stdin, 1, "AgentService.Start", "a").contains(r#""result":null"#));
    assert!(call(&mut stdin, 2, "AgentService.Start", "b").contains(r#""result":null"#));
    assert!(!processes_with(&stubborn).is_empty() && !processes_with(&plain).is_empty());

    // The agent and its child ignore end of input and SIGTERM: SIGKILL after
    // 1 s + 1 s reaches them on the "host" too.
    let began = Instant::now();
    assert!(call(&mut stdin, 3, "AgentService.Stop", "a").contains(r#""result":null"#));
    let took = began.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(6),
        "took {took:?}"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let left = rt.block_on(wait_no_processes(&stubborn, Duration::from_secs(3)));
    assert!(left.is_empty(), "left on the host after Stop: {left:?}");

    // Parley killed: --watch-bus takes the host side down, the wrapper's
    // watchdog the agent's group.
    serve.kill().expect("SIGKILL");
    let _ = serve.wait();
    let left = rt.block_on(wait_no_processes(&plain, Duration::from_secs(5)));
    assert!(left.is_empty(), "left on the host after SIGKILL: {left:?}");
}

/// An agent that closes its stdout but keeps running has lost its
/// connection: it goes to `error` with that reason, and the stop sequence
/// ends its process (before, it stayed `ready` for good).
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_closes_stdout_but_keeps_running_is_an_error_and_is_stopped() {
    let marker = unique("closes-stdout");
    let agents = [marked("a", "close-stdout", &marker)];
    let mut h = Harness::with(&config_text(&agents, 4, "0"), fast(), false);
    h.core.agents.start("a").await.expect("start");
    let error = h.wait_state("a", Error).await.expect("error text");
    assert!(error.contains("closed its output but kept running"), "{error}");
    let left = wait_no_processes(&marker, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "still running: {left:?}");
}

/// A stderr line of 256 MiB with no newline costs Parley no memory: the log
/// keeps its first 4 KiB (marked as cut) and the lines after it. Before, the
/// whole line was held.
#[test]
fn a_stderr_line_without_end_is_cut_and_costs_no_memory() {
    if rerun_alone("processes::a_stderr_line_without_end_is_cut_and_costs_no_memory") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    let agent = json!({"name": "a", "command": demo(), "env": {"PARLEY_DEMO_MODE": "stderr-line:256"}});
    std::fs::write(&config, config_text(&[agent], 4, "0")).expect("write");
    let config = config.display().to_string();
    let (out, peak_kib, took) = cli_measured(
        &["send", "a", "hello", "--permission", "allow", "--config", &config],
        dir.path(),
    );
    eprintln!("a 256 MiB stderr line: parley-cli peak RSS {peak_kib} KiB, {took:?}");
    let cut = format!("{}…", "x".repeat(4096));
    assert!(out.contains(&cut), "the cut line is logged");
    assert!(out.contains("demo: after the long line"), "and the next one");
    assert!(peak_kib < 100 * 1024, "parley-cli peaked at {peak_kib} KiB");
}
