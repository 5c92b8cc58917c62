//! Issue 16: conversations that last. A real SQLite file in the test's
//! directory, Parley quit and started again, and the demo agent's
//! `resume`, `load` and `list` modes keeping their sessions on disk.

use std::time::Duration;

use parley::core::chat::ChatError;
use parley::core::events::Event;
use parley::core::types::message::Role;
use serde_json::{json, Value};

use crate::common::*;

/// The demo agent in `mode`, its sessions kept in `sessions`, working in
/// `cwd`.
fn keeper(name: &str, mode: &str, sessions: &std::path::Path, cwd: &std::path::Path) -> Value {
    json!({"name": name, "command": demo(), "cwd": cwd.display().to_string(),
        "env": {"PARLEY_DEMO_MODE": mode, "PARLEY_DEMO_SESSIONS": sessions.display().to_string()}})
}

fn texts(h: &Harness, agent: &str) -> Vec<(Role, String)> {
    h.core
        .chat
        .conversation(agent)
        .expect("conversation")
        .messages
        .iter()
        .map(|m| (m.role, m.text()))
        .collect()
}

fn logged(h: &Harness, agent: &str, what: &str) -> bool {
    h.core
        .agents
        .logs(agent)
        .unwrap_or_default()
        .iter()
        .any(|l| l.contains(what))
}

/// Whether the agent logs `what` within 10 s. Its stderr is read apart
/// from its answers, so a line it wrote before answering may come after.
async fn logged_soon(h: &Harness, agent: &str, what: &str) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !logged(h, agent, what) {
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

async fn said(h: &mut Harness, agent: &str, text: &str) {
    h.core.chat.send(agent, text).expect("send");
    // This turn's end: an idle turn announced before it (a new
    // conversation announces one) is not, and waiting for that raced the
    // answer being stored.
    let a = agent.to_owned();
    h.wait_for(
        &format!("{agent} busy"),
        Duration::from_secs(30),
        move |e| matches!(e, Event::TurnChanged(t) if t.agent == a && t.busy),
    )
    .await;
    h.wait_idle(agent).await;
}

fn paths(h: &Harness) -> (std::path::PathBuf, std::path::PathBuf) {
    (h.dir.path().join("sessions"), h.dir.path().join("work"))
}

/// A harness whose agents keep their sessions in its own directory.
fn keeping(mode: &str) -> Harness {
    let probe = Harness::new(&[]);
    let (sessions, cwd) = paths(&probe);
    std::fs::create_dir_all(&cwd).expect("cwd");
    std::fs::write(
        probe.path(),
        config_text(&[keeper("k", mode, &sessions, &cwd)], 4, "0"),
    )
    .expect("config");
    probe
}

/// fast-agent 0.10.48 replays its history on `session/resume` too: the
/// replay is taken as a load's, and not glued onto the next answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_replay_on_resume_is_not_glued_onto_the_next_answer() {
    let h = keeping("resume,replay-on-resume");
    let mut h = h.restart().await;
    said(&mut h, "k", "echo the first answer").await;
    let id = h.core.chat.list("k", 0, 50).await.expect("list").conversations[0]
        .id
        .clone();
    let mut h = h.restart().await;
    h.core.chat.open("k", &id).await.expect("open");
    said(&mut h, "k", "echo the second answer").await;
    let t = texts(&h, "k");
    assert_eq!(t.len(), 4, "{t:?}");
    assert_eq!(t[3].1.trim(), "the second answer", "{t:?}");
    assert!(
        logged_soon(&h, "k", "replayed").await,
        "{:?}",
        h.core.agents.logs("k")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_survives_a_restart_and_its_session_is_resumed() {
    let h = keeping("resume");
    let mut h = h.restart().await;
    said(&mut h, "k", "echo the first answer").await;
    let list = h.core.chat.list("k", 0, 50).await.expect("list");
    assert_eq!(list.conversations.len(), 1, "{list:?}");
    let id = list.conversations[0].id.clone();
    assert_eq!(list.current.as_deref(), Some(id.as_str()));
    assert_eq!(list.conversations[0].title, "echo the first answer");
    let sid = list.conversations[0]
        .session_id
        .clone()
        .expect("the session is stored");

    let mut h = h.restart().await;
    assert!(
        h.core
            .chat
            .conversation("k")
            .expect("conversation")
            .messages
            .is_empty(),
        "a new Parley starts with a new conversation"
    );
    let opened = h.core.chat.open("k", &id).await.expect("open");
    assert_eq!(opened.messages.len(), 2);
    assert_eq!(opened.read_only, None, "not known to be read-only");
    said(&mut h, "k", "echo the second answer").await;
    assert!(
        logged_soon(&h, "k", &format!("session/resume {sid}")).await,
        "{:?}",
        h.core.agents.logs("k")
    );
    assert!(!logged(&h, "k", "session/new"), "no new session");
    let t = texts(&h, "k");
    assert_eq!(
        t.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
        [Role::User, Role::Agent, Role::User, Role::Agent],
        "no agent-restarted message: {t:?}"
    );
    assert!(t[3].1.contains("the second answer"), "{t:?}");
    // Message ids stay unique across the two runs.
    let conv = h.core.chat.conversation("k").expect("conversation");
    let mut ids: Vec<&str> = conv.messages.iter().map(|m| m.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4, "{:?}", conv.messages);

    // A third run finds all four messages on disk.
    let h = h.restart().await;
    let opened = h.core.chat.open("k", &id).await.expect("open");
    assert_eq!(opened.messages.len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loaded_session_is_merged_with_what_is_stored() {
    let h = keeping("load");
    let mut h = h.restart().await;
    said(&mut h, "k", "echo one").await;
    said(&mut h, "k", "echo two").await;
    let id = h.core.chat.conversation("k").expect("conv").id.expect("stored");
    let sid = h.core.chat.list("k", 0, 5).await.expect("list").conversations[0]
        .session_id
        .clone()
        .expect("session");
    let mut h = h.restart().await;
    // Meanwhile the session went on in a terminal: one more turn.
    let (sessions, _) = paths(&h);
    let file = sessions.join(format!("{sid}.json"));
    let mut stored: Value = serde_json::from_str(&read(&file)).expect("session file");
    stored["turns"]
        .as_array_mut()
        .expect("turns")
        .push(json!({"user": "said in a terminal", "agent": "answered in a terminal"}));
    std::fs::write(&file, stored.to_string()).expect("write");

    h.core.agents.start("k").await.expect("start");
    h.core.chat.open("k", &id).await.expect("open");
    h.wait_for(
        "the replayed turn",
        Duration::from_secs(10),
        |e| matches!(e, Event::MessageUpdated(u) if u.message.text() == "answered in a terminal"),
    )
    .await;
    assert!(logged_soon(&h, "k", &format!("session/load {sid}")).await);
    let t: Vec<String> = texts(&h, "k").into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        t.len(),
        6,
        "the four stored messages once, the terminal's turn added: {t:?}"
    );
    assert_eq!(t[4], "said in a terminal");
    // It is stored too: a new Parley opens all six.
    let h = h.restart().await;
    assert_eq!(h.core.chat.open("k", &id).await.expect("open").messages.len(), 6);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_resume_or_load_a_stored_conversation_is_read_only() {
    let mut h = Harness::new(&[agent("a", "")]);
    said(&mut h, "a", "echo hello").await;
    let id = h.core.chat.conversation("a").expect("conv").id.expect("stored");
    let mut h = h.restart().await;
    h.core.agents.start("a").await.expect("start");
    let opened = h.core.chat.open("a", &id).await.expect("open");
    let why = opened
        .read_only
        .expect("read-only, the agent's capabilities being known");
    assert!(why.contains("new conversation"), "{why}");
    h.wait_for(
        "conversation:switched",
        Duration::from_secs(5),
        |e| matches!(e, Event::ConversationSwitched(s) if s.read_only),
    )
    .await;
    match h.core.chat.send("a", "echo again") {
        Err(ChatError::ReadOnly(w)) => assert_eq!(w, why),
        other => panic!("{other:?}"),
    }
    // Continue in a new conversation: it works, and the old one stays.
    h.core.chat.new_conversation("a").expect("new");
    said(&mut h, "a", "echo fresh").await;
    let list = h.core.chat.list("a", 0, 10).await.expect("list");
    let titles: Vec<&str> = list.conversations.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(titles, ["echo fresh", "echo hello"], "newest first");
}

/// Opening a stored conversation resumes its session in the background;
/// the user moves on to a new conversation before the agent answers. The
/// resumed session stays the old conversation's, and the new one gets its
/// own. (Before, the answer was given to whichever conversation was
/// current: the new one went on in the old session, or became read-only.)
#[tokio::test(flavor = "multi_thread")]
async fn a_session_resumed_after_its_conversation_was_left_stays_with_it() {
    let h = keeping("resume,slow-reopen");
    let mut h = h.restart().await;
    said(&mut h, "k", "echo the first answer").await;
    let id = h.core.chat.conversation("k").expect("conv").id.expect("stored");
    let mut h = h.restart().await;
    h.core.agents.start("k").await.expect("start");
    h.core.chat.open("k", &id).await.expect("open");
    // The agent has the resume (and takes a second to answer it).
    assert!(
        logged_soon(&h, "k", "demo: session/resume").await,
        "the agent was never asked to resume"
    );
    h.core.chat.new_conversation("k").expect("new");
    said(&mut h, "k", "echo fresh").await;
    let list = h.core.chat.list("k", 0, 10).await.expect("list");
    let rows: Vec<(&str, Option<&str>)> = list
        .conversations
        .iter()
        .map(|c| (c.title.as_str(), c.session_id.as_deref()))
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (rows[0].0, rows[1].0),
        ("echo fresh", "echo the first answer"),
        "{rows:?}"
    );
    assert_ne!(
        rows[0].1, rows[1].1,
        "each conversation has its own session: {rows:?}"
    );
    let fresh = h.core.chat.conversation("k").expect("conv");
    assert!(fresh.read_only.is_none(), "{:?}", fresh.read_only);
    let texts = texts(&h, "k");
    assert_eq!(texts.len(), 2, "only the new conversation's turn: {texts:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_started_elsewhere_are_listed_loaded_and_deleted() {
    let h = keeping("load,list");
    let mut h = h.restart().await;
    let (sessions, cwd) = paths(&h);
    std::fs::create_dir_all(&sessions).expect("sessions");
    let outside = json!({"sessionId": "demo-terminal-1", "cwd": cwd.display().to_string(),
        "title": "Started in a terminal", "updatedAt": "2026-11-30T10:00:00Z",
        "turns": [{"user": "what is here?", "agent": "a Rust crate"}]});
    std::fs::write(sessions.join("demo-terminal-1.json"), outside.to_string()).expect("write");
    let elsewhere = json!({"sessionId": "demo-elsewhere", "cwd": "/somewhere/else",
        "title": "Another project", "updatedAt": "2026-11-30T10:00:00Z", "turns": []});
    std::fs::write(sessions.join("demo-elsewhere.json"), elsewhere.to_string()).expect("write");

    // Listing never starts the agent.
    let list = h.core.chat.list("k", 0, 10).await.expect("list");
    assert!(list.conversations.is_empty(), "{list:?}");
    h.core.agents.start("k").await.expect("start");
    let list = h.core.chat.list("k", 0, 10).await.expect("list");
    assert_eq!(list.conversations.len(), 1, "only the agent's cwd: {list:?}");
    let listed = &list.conversations[0];
    assert!(listed.external);
    assert_eq!(
        (listed.id.as_str(), listed.title.as_str()),
        ("session:demo-terminal-1", "Started in a terminal")
    );

    h.core.chat.open("k", &listed.id).await.expect("open");
    h.wait_for(
        "the replay",
        Duration::from_secs(10),
        |e| matches!(e, Event::MessageUpdated(u) if u.message.text() == "a Rust crate"),
    )
    .await;
    assert_eq!(
        texts(&h, "k"),
        [
            (Role::User, "what is here?".to_owned()),
            (Role::Agent, "a Rust crate".to_owned())
        ]
    );
    said(&mut h, "k", "echo and now from Parley").await;
    // Now it is Parley's: listed once, stored.
    let list = h.core.chat.list("k", 0, 10).await.expect("list");
    assert_eq!(list.conversations.len(), 1, "{list:?}");
    assert!(!list.conversations[0].external);
    assert_eq!(list.conversations[0].title, "Started in a terminal");
    assert_eq!(list.conversations[0].messages, 4);

    let id = list.conversations[0].id.clone();
    h.core.chat.delete("k", &id).await.expect("delete");
    assert!(logged_soon(&h, "k", "session/delete demo-terminal-1").await);
    assert!(!sessions.join("demo-terminal-1.json").exists());
    assert!(h
        .core
        .chat
        .list("k", 0, 10)
        .await
        .expect("list")
        .conversations
        .is_empty());
    assert!(h.core.chat.conversation("k").expect("conv").messages.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn conversations_are_listed_renamed_searched_exported_and_closed() {
    let h = keeping("resume");
    let mut h = h.restart().await;
    said(&mut h, "k", "echo the quick brown fox").await;
    let first = h.core.chat.conversation("k").expect("conv").id.expect("id");
    h.core.chat.new_conversation("k").expect("new");
    assert!(
        logged_soon(&h, "k", "session/close").await,
        "the left session is closed"
    );
    said(&mut h, "k", "session-info Lazy dogs").await;
    said(&mut h, "k", "echo jumps over the lazy dog").await;
    let second = h.core.chat.conversation("k").expect("conv").id.expect("id");
    let list = h.core.chat.list("k", 0, 10).await.expect("list");
    let rows: Vec<(&str, &str, u64)> = list
        .conversations
        .iter()
        .map(|c| (c.id.as_str(), c.title.as_str(), c.messages))
        .collect();
    assert_eq!(
        rows,
        [
            (second.as_str(), "Lazy dogs", 4),
            (first.as_str(), "echo the quick brown fox", 2)
        ]
    );
    h.core.chat.rename("k", &first, "Foxes").expect("rename");
    h.wait_for(
        "conversations:changed",
        Duration::from_secs(5),
        |e| matches!(e, Event::ConversationsChanged(c) if c.agent == "k"),
    )
    .await;
    let hits = h.core.history.search("quick fox", 10).await.expect("search");
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|hit| hit.conversation == first), "{hits:?}");
    assert_eq!(hits[0].title, "Foxes");
    assert!(
        hits[0].snippet.contains("\u{2}quick\u{3}"),
        "{:?}",
        hits[0].snippet
    );
    let markdown = h.core.chat.export("k").expect("export");
    assert!(markdown.starts_with("# Lazy dogs\n"), "{markdown}");
    assert!(markdown.contains("jumps over the lazy dog"), "{markdown}");
    // New, Open and Delete wait for the turn's end.
    h.core.chat.send("k", "wait").expect("send");
    h.wait_for("the answer", Duration::from_secs(5), |e| {
        matches!(e, Event::MessageDelta(_))
    })
    .await;
    assert_eq!(h.core.chat.new_conversation("k"), Err(ChatError::Busy));
    h.core.chat.cancel("k").expect("cancel");
    h.wait_idle("k").await;
    h.core.chat.open("k", &first).await.expect("open");
    assert_eq!(
        h.core.chat.conversation("k").expect("conv").title.as_deref(),
        Some("Foxes")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn parley_cli_reads_the_history_while_another_parley_writes_it() {
    let mut h = Harness::new(&[agent("a", "")]);
    said(&mut h, "a", "echo searchable words").await;
    let history = h.core.history.store().expect("history");
    tokio::task::spawn_blocking(move || history.writer().flush())
        .await
        .expect("join")
        .expect("flush");
    // The test's Parley holds the history; parley-cli reads it.
    let run = |args: &[&str]| {
        std::process::Command::new(cli())
            .args(args)
            .args(["--config", &h.path().display().to_string()])
            .env("XDG_CONFIG_HOME", h.dir.path())
            .env("XDG_STATE_HOME", h.dir.path())
            .env("XDG_DATA_HOME", h.dir.path())
            .env("PARLEY_HISTORY", h.dir.path().join("history.sqlite3"))
            .output()
            .expect("parley-cli")
    };
    let out = run(&["conversations", "a"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        list["conversations"][0]["title"], "echo searchable words",
        "{list}"
    );
    assert_eq!(list["writable"], false, "read-only beside the writer");
    let out = run(&["search", "searchable"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\\u0002searchable\\u0003"), "{text}");
    let id = list["conversations"][0]["id"].as_str().expect("id").to_owned();
    let out = run(&["export", "a", &id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("searchable words"));
    // Sending beside the writer says that nothing is kept.
    let out = run(&["send", "a", "echo not kept"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("read-only"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `kill -9` in the middle of a long stream keeps every chunk written
/// before it, in order; the next start finds the message interrupted.
#[test]
fn a_kill_mid_stream_keeps_what_was_written() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent("a", "")], 4, "0")).expect("config");
    let history = dir.path().join("history.sqlite3");
    let mut child = std::process::Command::new(cli())
        .args([
            "send",
            "a",
            "flood 1000000 40",
            "--config",
            &config.display().to_string(),
        ])
        .env("XDG_STATE_HOME", dir.path())
        .env("PARLEY_HISTORY", &history)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("parley-cli send");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut deltas = 0;
    for line in lines.by_ref() {
        if line.expect("line").contains("\"message:delta\"") {
            deltas += 1;
            if deltas == 30_000 {
                break;
            }
        }
    }
    assert_eq!(deltas, 30_000, "the stream ended early");
    // What was printed reaches the file a batch (50 ms) later on a calm
    // machine; on a loaded one later still, so wait until it is there.
    let began = std::time::Instant::now();
    while stored_chunks(&history, &config) < 30_000 {
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "the printed chunks never reached the file"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("30,000 printed chunks were on disk {:?} later", began.elapsed());
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    drop(lines);

    let (h, notices) = parley::core::history::History::open(&history).expect("reopen");
    assert!(
        notices.contains(&parley::core::history::OpenNotice::Interrupted(1)),
        "{notices:?}"
    );
    let config_key = config.display().to_string();
    let list = h.list(&config_key, "a", 10, 0).expect("list");
    assert_eq!(list.len(), 1, "{list:?}");
    let messages = h.messages(&list[0].id).expect("messages");
    let answer = messages
        .iter()
        .find(|m| m.role == Role::Agent)
        .expect("the answer");
    assert_eq!(answer.error.as_deref(), Some(parley::core::history::INTERRUPTED));
    let text = answer.text();
    let chunks = text.matches('\n').count();
    assert!(chunks >= 30_000, "only {chunks} chunks were kept");
    assert!(chunks < 1_000_000, "the stream was not cut");
    // In order, none lost in between.
    let last = text.lines().last().expect("a line");
    assert!(last.ends_with(&format!("{:07}", chunks - 1)), "{last}");
}

/// The lines of the answer stored so far, read while another Parley
/// writes the file (so it is opened read-only).
fn stored_chunks(history: &std::path::Path, config: &std::path::Path) -> usize {
    let Ok((h, _)) = parley::core::history::History::open(history) else {
        return 0;
    };
    let list = h.list(&config.display().to_string(), "a", 1, 0);
    let Some(c) = list.unwrap_or_default().into_iter().next() else {
        return 0;
    };
    h.messages(&c.id)
        .unwrap_or_default()
        .iter()
        .find(|m| m.role == Role::Agent)
        .map_or(0, |m| m.text().matches('\n').count())
}

#[tokio::test(flavor = "multi_thread")]
async fn switching_back_takes_up_the_session_still_open_in_the_agent() {
    let mut h = Harness::new(&[agent("a", "")]);
    said(&mut h, "a", "echo first").await;
    let first = h.core.chat.conversation("a").expect("conv").id.expect("stored");
    h.core.chat.new_conversation("a").expect("new");
    said(&mut h, "a", "echo second").await;
    let opened = h.core.chat.open("a", &first).await.expect("open");
    assert_eq!(opened.read_only, None, "its session is still open in the agent");
    said(&mut h, "a", "echo first again").await;
    let t = texts(&h, "a");
    assert_eq!(t.len(), 4, "no agent-restarted message: {t:?}");
    assert!(t[3].1.contains("first again"), "{t:?}");
    // Once the agent restarted, that session is gone: read-only.
    h.core.chat.new_conversation("a").expect("new");
    h.core.agents.restart("a").await.expect("restart");
    let opened = h.core.chat.open("a", &first).await.expect("open");
    assert!(opened.read_only.is_some());
    // A live conversation whose agent restarts goes on with a new session.
    h.core.chat.new_conversation("a").expect("new");
    said(&mut h, "a", "echo before").await;
    h.core.agents.restart("a").await.expect("restart");
    said(&mut h, "a", "echo after").await;
    let codes: Vec<_> = h
        .core
        .chat
        .conversation("a")
        .expect("conv")
        .messages
        .iter()
        .filter_map(|m| m.code)
        .collect();
    assert_eq!(codes, [parley::core::types::message::MessageCode::AgentRestarted]);
}

/// claude-agent-acp advertises `sessionCapabilities.list`: a Claude Code
/// session started in a terminal (its JSONL file under
/// `~/.claude/projects/`) shows in `List`, without credentials.
#[tokio::test(flavor = "multi_thread")]
async fn claude_agent_acp_lists_a_session_started_in_a_terminal() {
    let home = tempfile::tempdir().expect("tempdir");
    let Some(mut claude) = crate::auth::real_agent("claude", "claude", "claude-agent-acp", &[], home.path())
    else {
        return;
    };
    claude["env"]["IS_SANDBOX"] = json!("1");
    let cwd = home.path().display().to_string();
    // Claude Code's project directory: the cwd with every other character
    // than a letter or digit as "-".
    let project: String = cwd
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = home.path().join(".claude/projects").join(project);
    std::fs::create_dir_all(&dir).expect("projects");
    let sid = "6f1d2c3b-0a9e-4b8c-9d7e-1f2a3b4c5d6e";
    let line = json!({"type": "user", "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": cwd, "sessionId": sid, "version": "2.0.0", "gitBranch": "",
        "message": {"role": "user", "content": "What does this project build?"},
        "uuid": "0b0b0b0b-1111-4222-8333-444444444444", "timestamp": "2026-11-30T10:00:00.000Z"});
    std::fs::write(dir.join(format!("{sid}.jsonl")), format!("{line}\n")).expect("session file");
    let h = crate::auth::real(&[claude]);
    h.core.agents.start("claude").await.expect("start");
    let caps = h.core.agents.capabilities("claude").expect("capabilities");
    assert!(
        caps.session_capabilities.list.is_some(),
        "claude-agent-acp lists sessions"
    );
    let list = h.core.chat.list("claude", 0, 10).await.expect("list");
    let logs = h.core.agents.logs("claude").unwrap_or_default();
    assert!(
        !logs.iter().any(|l| l.contains("session/list failed")),
        "{logs:?}"
    );
    let listed: Vec<_> = list.conversations.iter().filter(|c| c.external).collect();
    assert_eq!(listed.len(), 1, "{list:?}");
    assert_eq!(listed[0].id, format!("session:{sid}"));
    assert!(
        listed[0].title.contains("What does this project build"),
        "{:?}",
        listed[0]
    );
}

/// A history that cannot be opened (here: its directory would be below a
/// file) is told as `history:status`, and the conversation goes on in memory.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_history_the_conversation_goes_on_in_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent("a", "")], 4, "0")).expect("config");
    let blocker = dir.path().join("not-a-directory");
    std::fs::write(&blocker, "x").expect("file");
    let (core, rx) = parley::core::services::Core::new(parley::core::services::Options {
        config_path: Some(config),
        timings: fast(),
        spawn_prefix: Vec::new(),
        watch: false,
        history: Some(blocker.join("history.sqlite3")),
    })
    .expect("core");
    let seen: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let told = seen.iter().find_map(|e| match e {
        Event::HistoryStatus(s) => Some(s.clone()),
        _ => None,
    });
    let told = told.expect("history:status at start");
    assert!(!told.writable);
    assert!(
        told.error
            .as_deref()
            .is_some_and(|e| e.contains("cannot be opened")),
        "{told:?}"
    );
    let mut h = Harness {
        core,
        rx,
        seen,
        dir,
        timings: fast(),
    };
    said(&mut h, "a", "echo still here").await;
    assert!(texts(&h, "a")[1].1.contains("still here"));
    assert!(matches!(
        h.core.chat.list("a", 0, 10).await,
        Ok(l) if l.conversations.is_empty() && !l.writable
    ));
}
