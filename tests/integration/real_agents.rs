//! What the tests with real agents share: the agents that
//! build-aux/install-test-agents.sh installs (claude-agent-acp, codex-acp,
//! gemini-cli), each working offline against the model-API stand-in
//! (tests/support/model_api.rs) in a project of its own, and the checks of
//! a turn. Each agent's file starts its agent once where it can and does
//! its turns in order: a Node.js agent's start takes seconds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parley::core::events::Event;
use parley::core::types::message::{wire_name, Message, Part, Role, ToolCall};
use serde_json::{json, Value};

use crate::common::Harness;
use crate::model_api::{ModelApi, Reply};

/// The stand-in's key: a test looks for it where it must not be.
pub const KEY: &str = "sk-standin-parley-0123456789";

pub const NOTES: &str = "line one\nline two\nline three\n";

/// An installed agent's program, or `None` with the reason printed (the
/// test then skips: no npm registry where the agents were installed).
pub fn installed(dir: &str, bin: &str) -> Option<PathBuf> {
    let Some(cache) = std::env::var_os("PARLEY_TEST_AGENTS") else {
        eprintln!("SKIPPED: PARLEY_TEST_AGENTS is not set (build-aux/install-test-agents.sh)");
        return None;
    };
    let path = Path::new(&cache).join(dir).join("node_modules/.bin").join(bin);
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIPPED: {bin} is not installed (build-aux/install-test-agents.sh could not reach the npm registry)");
        None
    }
}

/// The machine's PATH with the Node.js 22 that install-test-agents.sh put
/// in the cache first (claude-agent-acp 0.101 asks for Node 22; Debian 12
/// has 18 and this kind of machine 20).
pub fn node22_path() -> Option<String> {
    let cache = std::env::var_os("PARLEY_TEST_AGENTS")?;
    let bin = Path::new(&cache).join("node22/bin");
    if !bin.join("node").exists() {
        return None;
    }
    let rest = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    Some(format!("{}:{rest}", bin.display()))
}

/// A project the agent works in (`notes.txt` in it) and a home of its own.
pub struct Project {
    pub home: tempfile::TempDir,
    pub cwd: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Project {
        let project = Project {
            home: tempfile::tempdir().expect("home"),
            cwd: tempfile::tempdir().expect("cwd"),
        };
        std::fs::write(project.notes(), NOTES).expect("notes.txt");
        project
    }

    pub fn notes(&self) -> PathBuf {
        self.cwd.path().join("notes.txt")
    }

    pub fn notes_text(&self) -> String {
        std::fs::read_to_string(self.notes()).unwrap_or_default()
    }
}

/// The agent's entry: its own HOME, every provider variable of the
/// machine's environment blanked, then `env`.
pub fn entry(name: &str, command: &Path, args: &[&str], p: &Project, env: &[(&str, String)]) -> Value {
    let mut vars = serde_json::Map::new();
    for k in [
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_CLOUD_PROJECT",
        "CODEX_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ] {
        vars.insert(k.into(), json!(""));
    }
    vars.insert("HOME".into(), json!(p.home.path().display().to_string()));
    if let Some(path) = node22_path() {
        vars.insert("PATH".into(), json!(path));
    }
    for (k, v) in env {
        vars.insert((*k).into(), json!(v));
    }
    json!({"name": name, "command": command.display().to_string(), "args": args,
        "cwd": p.cwd.path().display().to_string(), "env": vars})
}

/// A Parley on `agents` with the spec's timings (a Node.js agent's first
/// start takes seconds) and `limits` added.
pub fn parley(agents: &[Value], limits: Value) -> Harness {
    let mut l = json!({"maxRunningAgents": 4, "stopIdleAgentsAfter": "0"});
    if let (Some(l), Some(extra)) = (l.as_object_mut(), limits.as_object()) {
        l.extend(extra.clone());
    }
    let text = serde_json::to_string_pretty(&json!({"limits": l, "agents": agents})).unwrap_or_default();
    Harness::with(&text, parley::core::supervisor::Timings::default(), false)
}

impl Harness {
    /// Waits until the conversation has answered the message just sent:
    /// not busy, and its last message the agent's (or it is read-only).
    /// After a restart, opening and loading also send `turn:changed`.
    pub async fn answered(&mut self, agent: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let conv = self.core.chat.conversation(agent).expect("conversation");
            let last_is_answer = conv
                .messages
                .last()
                .is_some_and(|m| m.role == Role::Agent && m.done);
            if !conv.busy && (last_is_answer || conv.read_only.is_some()) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{agent} never answered: {conv:#?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The agent's log (stderr and Parley's lines), for a failure's message.
    pub fn log_of(&self, agent: &str) -> String {
        self.core.agents.logs(agent).unwrap_or_default().join("\n")
    }

    /// The last message the agent answered with.
    pub fn answer(&self, agent: &str) -> Message {
        let conv = self.core.chat.conversation(agent).expect("conversation");
        conv.messages
            .into_iter()
            .rev()
            .find(|m| m.role == Role::Agent)
            .expect("an agent message")
    }

    /// Answers the next permission request with the first option of `kind`
    /// (`allow_once`, `reject_once`); returns the request.
    pub async fn answer_next(&mut self, kind: &str) -> parley::core::events::PermissionRequest {
        let p = self.next_permission_within(Duration::from_secs(60)).await;
        let option = p
            .options
            .iter()
            .find(|o| wire_name(&o.kind) == kind)
            .unwrap_or_else(|| panic!("no {kind} option in {:?}", p.options));
        self.core
            .chat
            .answer_permission(&p.id, &option.option_id)
            .expect("answer");
        p
    }

    pub async fn next_permission_within(
        &mut self,
        limit: Duration,
    ) -> parley::core::events::PermissionRequest {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match tokio::time::timeout(left, self.rx.recv()).await {
                Ok(Ok(e)) => {
                    self.seen.push(e.clone());
                    match e {
                        Event::PermissionRequested(p) => return p,
                        // The turn ended without asking: say what the agent said.
                        Event::TurnChanged(t) if !t.busy => {
                            let conv = self.core.chat.conversation(&t.agent).ok();
                            panic!(
                                "{}'s turn ended without a permission request: {conv:#?}\nits log:\n{}",
                                t.agent,
                                self.log_of(&t.agent)
                            );
                        }
                        _ => {}
                    }
                }
                _ => panic!("no permission request within {limit:?}"),
            }
        }
    }

    /// Waits until the answer being streamed has some text.
    pub async fn some_text(&mut self, agent: &str) {
        let a = agent.to_owned();
        self.wait_for("streamed text", Duration::from_secs(60), move |e| {
            matches!(e, Event::MessageDelta(d) if d.agent == a && d.text.as_deref().is_some_and(|t| !t.is_empty()))
        })
        .await;
    }
}

/// The tool calls of a message.
pub fn tools(m: &Message) -> Vec<&ToolCall> {
    m.parts
        .iter()
        .filter_map(|p| match p {
            Part::Tool(t) => Some(t),
            _ => None,
        })
        .collect()
}

pub fn stop(m: &Message) -> String {
    m.stop_reason.map(|r| wire_name(&r)).unwrap_or_default()
}

/// No tool call of the message is left open after its turn.
pub fn none_open(m: &Message) {
    for t in tools(m) {
        let status = wire_name(&t.status);
        assert!(
            status == "completed" || status == "failed",
            "{} is left {status}: {m:#?}",
            t.title
        );
    }
}

/// The message's tool call of `kind`, the last one.
pub fn tool<'a>(m: &'a Message, kind: &str) -> &'a ToolCall {
    tools(m)
        .into_iter()
        .rev()
        .find(|t| wire_name(&t.kind) == kind)
        .unwrap_or_else(|| panic!("no {kind} tool call in {m:#?}"))
}

/// The key is nowhere in Parley's own files (configuration, history).
pub fn key_not_in(dir: &Path) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let bytes = std::fs::read(entry.path()).unwrap_or_default();
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "the key is in {}",
            entry.path().display()
        );
    }
}

/// Cancel in the middle of a long answer: the turn ends `cancelled`.
pub async fn cancel_a_long_answer(h: &mut Harness, api: &ModelApi, agent: &str) {
    api.set_script(vec![Reply::slow(300, Duration::from_millis(50))]);
    h.core.chat.send(agent, "Tell me a long story").expect("send");
    h.some_text(agent).await;
    h.core.chat.cancel(agent).expect("cancel");
    h.turn_ends(agent).await;
    assert_eq!(stop(&h.answer(agent)), "cancelled");
}

/// A provider that never answers (every attempt): the watchdog marks the
/// turn (`turn:stalled`, with `limits.turnSilenceWarning` short), and
/// Cancel ends it.
pub async fn a_silent_provider_is_seen_and_cancelled(h: &mut Harness, api: &ModelApi, agent: &str) {
    api.set_script(vec![Reply::Hang]);
    h.core.chat.send(agent, "Are you there?").expect("send");
    let a = agent.to_owned();
    h.wait_for(
        "the turn marked not responding",
        Duration::from_secs(30),
        move |e| matches!(e, Event::TurnStalled(s) if s.agent == a && s.stalled),
    )
    .await;
    h.core.chat.cancel(agent).expect("cancel");
    h.turn_ends(agent).await;
    assert_eq!(stop(&h.answer(agent)), "cancelled");
}

/// Quits Parley, starts it again, opens the agent's conversation and asks
/// once more (the stand-in answers "Still here."). Returns the new Parley
/// and the requests the agent sent the model after the restart.
pub async fn after_a_restart(
    h: Harness,
    api: &ModelApi,
    agent: &str,
) -> (Harness, Vec<crate::model_api::Recorded>) {
    api.set_script(vec![Reply::text("Still here.")]);
    let before = api.main_requests().len();
    let id = h
        .core
        .chat
        .conversation(agent)
        .expect("conversation")
        .id
        .expect("stored");
    let mut h = h.restart().await;
    h.core
        .chat
        .open(agent, &id)
        .await
        .expect("open the conversation again");
    h.core.chat.send(agent, "And now?").expect("send");
    h.answered(agent).await;
    let after = api.main_requests().split_off(before);
    (h, after)
}

/// The model heard the first turn again after a resume.
pub fn heard_the_first_turn(agent: &str, h: &Harness, after: &[crate::model_api::Recorded]) {
    let m = h.answer(agent);
    assert!(m.text().contains("Still here."), "{m:#?}\n{}", h.log_of(agent));
    let last = after.last().expect("a request after the restart");
    assert!(
        last.body.to_string().contains("Edit notes.txt"),
        "the resumed session lost the first turn"
    );
}
