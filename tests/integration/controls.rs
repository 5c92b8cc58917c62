//! Issue 17: the session's options (config options, legacy modes and
//! models, defaults), MCP servers and additional directories as the agent
//! supports them, attachments, @-mention search, the session's title and
//! cost; against the demo agent's modes and the real claude-agent-acp.

use std::time::Duration;

use parley::core::chat::{AttachmentInput, ChatError};
use parley::core::events::Event;
use parley::core::types::message::{MessageCode, Part, Role};
use parley::core::types::options::{OptionSource, SessionOption};
use serde_json::{json, Value};

use crate::common::*;

fn ids(options: &[SessionOption]) -> Vec<&str> {
    options.iter().map(|o| o.id.as_str()).collect()
}

fn current(options: &[SessionOption], id: &str) -> String {
    options
        .iter()
        .find(|o| o.id == id)
        .map(SessionOption::current_text)
        .unwrap_or_default()
}

/// Sends `text` and returns the agent's answer.
async fn ask(h: &mut Harness, agent: &str, text: &str, attachments: Vec<AttachmentInput>) -> String {
    h.core.chat.send_with(agent, text, attachments).expect("send");
    h.wait_idle(agent).await;
    let conv = h.core.chat.conversation(agent).expect("conversation");
    conv.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Agent)
        .map(|m| m.text())
        .unwrap_or_default()
}

fn warnings(h: &Harness, agent: &str) -> Vec<String> {
    let conv = h.core.chat.conversation(agent).expect("conversation");
    conv.messages
        .iter()
        .filter(|m| m.code == Some(MessageCode::SessionWarning))
        .map(|m| m.text())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn config_options_are_pickers_and_a_change_is_the_agents_answer() {
    let mut h = Harness::new(&[agent("a", "")]);
    let options = h.core.chat.prepare("a").await.expect("prepare");
    // "brief" is a boolean: offered because Parley advertises them.
    assert_eq!(ids(&options), ["mode", "model", "effort", "brief"]);
    assert!(options.iter().all(|o| o.source == OptionSource::Config));
    let model = &options[1];
    assert_eq!(
        (model.category.as_str(), model.current_name().as_str()),
        ("model", "Demo Mini")
    );
    h.wait_for(
        "session:changed",
        Duration::from_secs(5),
        |e| matches!(e, Event::SessionChanged(c) if c.agent == "a" && c.options.len() == 4),
    )
    .await;

    let options = h
        .core
        .chat
        .set_option("a", "model", json!("demo-large"))
        .await
        .expect("set model");
    assert_eq!(current(&options, "model"), "demo-large");
    let options = h
        .core
        .chat
        .set_option("a", "brief", json!(true))
        .await
        .expect("set brief");
    assert_eq!(current(&options, "brief"), "true");
    h.wait_for("the change told", Duration::from_secs(5), |e| {
        matches!(e, Event::SessionChanged(c) if c.options.iter().any(|o| o.id == "brief" && o.current_text() == "true"))
    })
    .await;

    // The agent refuses: its words, and the old value stands.
    let refused = h
        .core
        .chat
        .set_option("a", "model", json!("demo-unavailable"))
        .await;
    assert_eq!(
        refused.expect_err("refused"),
        ChatError::Refused("Demo Unavailable is not available on your plan".into())
    );
    assert_eq!(current(&h.core.chat.options("a"), "model"), "demo-large");
    let not_offered = h.core.chat.set_option("a", "model", json!("gpt-9")).await;
    assert!(
        matches!(not_offered, Err(ChatError::NotOffered(..))),
        "{not_offered:?}"
    );
    let wrong_type = h.core.chat.set_option("a", "brief", json!("yes")).await;
    assert!(
        matches!(wrong_type, Err(ChatError::NotOffered(..))),
        "{wrong_type:?}"
    );
    let unknown = h.core.chat.set_option("a", "colour", json!("red")).await;
    assert_eq!(
        unknown.expect_err("unknown"),
        ChatError::NoSuchControl("colour".into())
    );

    // What the agent itself holds, and an agent-side change followed.
    let said = ask(&mut h, "a", "received", Vec::new()).await;
    assert!(
        said.contains(r#"options: {"brief":true,"model":"demo-large"}"#),
        "{said}"
    );
    ask(&mut h, "a", "switch-mode architect", Vec::new()).await;
    assert_eq!(current(&h.core.chat.options("a"), "mode"), "architect");
    // Only one session was opened for all of this.
    let conv = h.core.chat.conversation("a").expect("conversation");
    assert!(!conv
        .messages
        .iter()
        .any(|m| m.code == Some(MessageCode::AgentRestarted)));
    assert_eq!(conv.options.len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_modes_and_models_still_get_pickers() {
    let mut h = Harness::new(&[agent("a", "legacy-modes")]);
    let options = h.core.chat.prepare("a").await.expect("prepare");
    let sources: Vec<_> = options.iter().map(|o| (o.id.as_str(), o.source)).collect();
    assert_eq!(
        sources,
        [
            ("mode", OptionSource::LegacyMode),
            ("model", OptionSource::LegacyModel)
        ]
    );
    let options = h
        .core
        .chat
        .set_option("a", "mode", json!("code"))
        .await
        .expect("set_mode");
    assert_eq!(current(&options, "mode"), "code");
    let options = h
        .core
        .chat
        .set_option("a", "model", json!("demo-large"))
        .await
        .expect("set_model");
    assert_eq!(current(&options, "model"), "demo-large");
    let refused = h
        .core
        .chat
        .set_option("a", "model", json!("demo-unavailable"))
        .await;
    assert!(matches!(refused, Err(ChatError::Refused(_))), "{refused:?}");
    assert_eq!(current(&h.core.chat.options("a"), "model"), "demo-large");
    let said = ask(&mut h, "a", "received", Vec::new()).await;
    assert!(
        said.contains(r#""mode":"code""#) && said.contains(r#""model":"demo-large""#),
        "{said}"
    );

    // A mode that asks nothing is said once in the conversation.
    let unasked = |h: &Harness| {
        h.core
            .chat
            .conversation("a")
            .expect("conversation")
            .messages
            .iter()
            .filter(|m| m.text().contains("without asking you"))
            .count()
    };
    assert_eq!(unasked(&h), 0, "ask and code ask first");
    for mode in ["yolo", "ask", "yolo"] {
        h.core
            .chat
            .set_option("a", "mode", json!(mode))
            .await
            .expect("set_mode");
    }
    assert_eq!(unasked(&h), 1);
    assert_eq!(
        parley::core::types::options::asking_nothing(&h.core.chat.options("a")).as_deref(),
        Some("YOLO")
    );

    // An agent with no options has no pickers.
    let h2 = Harness::new(&[agent("b", "no-options")]);
    assert!(h2.core.chat.prepare("b").await.expect("prepare").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn defaults_apply_to_every_new_session_and_others_are_warned() {
    let mut a = agent("a", "");
    a["defaults"] = json!({"model": "demo-large", "thought_level": "high", "mode": "yolo", "brief": true});
    let mut h = Harness::new(&[a]);
    let options = h.core.chat.prepare("a").await.expect("prepare");
    assert_eq!(current(&options, "model"), "demo-large");
    assert_eq!(current(&options, "effort"), "high", "by category");
    assert_eq!(current(&options, "brief"), "true");
    let w = warnings(&h, "a");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("mode") && w[0].contains("yolo") && w[0].contains("not offered"),
        "{w:?}"
    );
    // Once the agent has answered a session, Validate knows what it offers.
    let text = std::fs::read_to_string(h.path()).expect("config");
    let problems = h.core.config.validate(&text);
    let warned: Vec<_> = problems
        .iter()
        .filter(|p| p.warning && p.message.contains("defaults"))
        .collect();
    assert_eq!(warned.len(), 1, "{problems:?}");
    assert!(
        warned[0].message.contains("agents[0].defaults.mode")
            && warned[0].message.contains("ask, code, architect"),
        "{}",
        warned[0].message
    );
    let line = text.lines().position(|l| l.contains("\"yolo\"")).map(|i| i + 1);
    assert_eq!(Some(warned[0].line), line, "at the value's line");
    // A restart opens a new session: the defaults again.
    h.core.agents.restart("a").await.expect("restart");
    let said = ask(&mut h, "a", "received", Vec::new()).await;
    assert!(said.contains(r#""model":"demo-large""#), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_servers_go_by_the_transports_each_agent_supports() {
    let extra = tempfile::tempdir().expect("tempdir");
    let extra_dir = extra.path().display().to_string();
    let mut plain = agent("plain", "");
    plain["mcpServers"] = json!([{"name": "web", "type": "sse", "url": "https://mcp.invalid/sse"}]);
    plain["additionalDirectories"] = json!([extra_dir]);
    let mut able = agent("able", "mcp-http,mcp-sse,additional-dirs");
    able["mcpServers"] = json!([{"name": "web", "type": "sse", "url": "https://mcp.invalid/sse",
        "headers": {"Authorization": "Bearer t"}}]);
    able["additionalDirectories"] = json!([extra_dir]);
    let text = serde_json::to_string(&json!({
        "mcpServers": [
            {"name": "fs", "command": "mcp-fs", "args": ["--root", "/tmp"], "env": {"MCP_LOG": "1"}},
            {"name": "docs", "type": "http", "url": "https://mcp.invalid/docs"}
        ],
        "agents": [plain, able],
    }))
    .expect("json");
    let mut h = Harness::with(&text, fast(), false);

    let said = ask(&mut h, "plain", "received", Vec::new()).await;
    let servers = said.lines().next().unwrap_or_default();
    assert!(
        servers.contains(r#""name":"fs""#) && servers.contains(r#""name":"MCP_LOG""#),
        "{said}"
    );
    assert!(!servers.contains("docs") && !servers.contains("web"), "{said}");
    assert!(said.contains("additionalDirectories: []"), "{said}");
    let w = warnings(&h, "plain");
    assert!(
        w.iter().any(|w| w.contains("docs (http), web (sse)")),
        "named, not dropped: {w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.contains("Additional directories") && w.contains(&extra_dir)),
        "{w:?}"
    );

    let said = ask(&mut h, "able", "received", Vec::new()).await;
    for name in [
        r#""name":"fs""#,
        r#""type":"http""#,
        r#""type":"sse""#,
        "Bearer t",
        &extra_dir,
    ] {
        assert!(said.contains(name), "{name} missing: {said}");
    }
    assert!(warnings(&h, "able").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn attachments_go_as_links_embedded_text_or_images() {
    let files = tempfile::tempdir().expect("tempdir");
    let notes = files.path().join("notes.md");
    std::fs::write(&notes, "# Notes\nhello\n").expect("write");
    let png = files.path().join("shot.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n").expect("write");
    let big = files.path().join("big.log");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(11 * 1024 * 1024))
        .expect("big");
    let mut h = Harness::new(&[agent("plain", ""), agent("rich", "embedded,images")]);

    let said = ask(
        &mut h,
        "plain",
        "received",
        vec![AttachmentInput::File(notes.clone())],
    )
    .await;
    assert!(
        said.contains("blocks: text | resource_link notes.md file:///"),
        "{said}"
    );
    // Now its capabilities are known: an image is refused before it goes.
    let refused = h
        .core
        .chat
        .send_with("plain", "look", vec![AttachmentInput::File(png.clone())]);
    match refused {
        Err(ChatError::Attachment(why)) => assert!(why.contains("does not take images"), "{why}"),
        other => panic!("{other:?}"),
    }
    let too_big = h
        .core
        .chat
        .send_with("plain", "read", vec![AttachmentInput::File(big)]);
    match too_big {
        Err(ChatError::Attachment(why)) => assert!(why.contains("limited to 10 MiB"), "{why}"),
        other => panic!("{other:?}"),
    }

    h.core.agents.start("rich").await.expect("start");
    let said = ask(
        &mut h,
        "rich",
        "received",
        vec![
            AttachmentInput::File(notes),
            AttachmentInput::File(png),
            AttachmentInput::Image {
                name: "Pasted image 1.png".into(),
                mime_type: "image/png".into(),
                data: vec![1, 2, 3],
            },
        ],
    )
    .await;
    assert!(said.contains("resource file:///"), "{said}");
    assert!(said.contains("notes.md 14 chars"), "{said}");
    assert!(
        said.contains("image image/png 12 base64 chars | image image/png 4 base64 chars"),
        "{said}"
    );
    // The sent message shows them.
    let conv = h.core.chat.conversation("rich").expect("conversation");
    let user = conv
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .expect("user message");
    let names: Vec<_> = user
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Attachment(a) => Some(a.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["notes.md", "shot.png", "Pasted image 1.png"]);
    let wire = serde_json::to_value(user).expect("json");
    assert_eq!(wire["parts"][1]["sentAs"], "embedded");
    assert!(
        wire["parts"][1].get("content").is_none(),
        "content stays off the wire"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_title_and_cost_are_kept_and_files_are_found() {
    let cwd = tempfile::tempdir().expect("tempdir");
    for f in ["src/main.rs", "src/chat/controls.rs", "target/controls.rs"] {
        let p = cwd.path().join(f);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, "x").expect("write");
    }
    std::fs::write(cwd.path().join(".gitignore"), "target\n").expect("write");
    let mut a = agent("a", "");
    a["cwd"] = json!(cwd.path().display().to_string());
    let mut h = Harness::new(&[a]);
    ask(&mut h, "a", "session-info Fix the build", Vec::new()).await;
    ask(&mut h, "a", "cost 0.42", Vec::new()).await;
    let conv = h.core.chat.conversation("a").expect("conversation");
    assert_eq!(conv.title.as_deref(), Some("Fix the build"));
    let cost = conv.usage.cost.expect("a cost");
    assert_eq!((cost.amount, cost.currency.as_str()), (0.42, "USD"));
    assert!(h
        .seen
        .iter()
        .any(|e| matches!(e, Event::SessionChanged(c) if c.title.as_deref() == Some("Fix the build"))));

    let found = h.core.chat.find_files("a", "ctrl", 10).await.expect("find");
    assert_eq!(found, ["src/chat/controls.rs"], ".gitignore keeps target/ out");
    let missing = h.core.chat.find_files("nobody", "x", 10).await;
    assert!(missing.is_err());
}

#[test]
fn parley_cli_send_sets_options_and_attaches_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent("demo", "")], 4, "0")).expect("config");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "hi").expect("notes");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "send",
            "demo",
            "received",
            "--config",
            config.to_str().unwrap_or_default(),
        ];
        args.extend_from_slice(extra);
        std::process::Command::new(cli())
            .args(&args)
            .env("XDG_STATE_HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path())
            .output()
            .expect("parley-cli")
    };
    let out = run(&[
        "--model",
        "demo-large",
        "--mode",
        "code",
        "--option",
        "brief=true",
        "--attach",
        notes.to_str().unwrap_or_default(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said: String = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "message:delta")
        .filter_map(|e| e["payload"]["text"].as_str().map(str::to_owned))
        .collect();
    assert!(
        said.contains(r#""brief":true"#) && said.contains(r#""mode":"code""#),
        "{said}"
    );
    assert!(said.contains(r#""model":"demo-large""#), "{said}");
    assert!(said.contains("resource_link notes.txt"), "{said}");
    assert!(stdout.contains(r#""event":"session:changed""#));

    let out = run(&["--model", "demo-unavailable"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Demo Unavailable is not available on your plan"),
        "{stderr}"
    );
    let out = run(&["--option", "colour=red"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no option colour"));
    let out = run(&["--option", "brief"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "ID=VALUE is checked before anything runs"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_agent_acp_offers_mode_model_and_effort_and_takes_sonnet() {
    let home = tempfile::tempdir().expect("tempdir");
    let Some(mut claude) = crate::auth::real_agent("claude", "claude", "claude-agent-acp", &[], home.path())
    else {
        return;
    };
    // Tests (and CI) run as root, where Claude Code refuses to start unless
    // told it is in a sandbox: session/new then fails with "exited with code 1".
    claude["env"]["IS_SANDBOX"] = json!("1");
    let h = crate::auth::real(&[claude]);
    let options = match h.core.chat.prepare("claude").await {
        Ok(o) => o,
        Err(e) => panic!("claude-agent-acp answers session/new without credentials: {e}"),
    };
    eprintln!(
        "claude's options: {}",
        serde_json::to_string(&options).unwrap_or_default()
    );
    let categories: Vec<_> = options.iter().map(|o| o.category.as_str()).collect();
    for c in ["mode", "model", "thought_level"] {
        assert!(categories.contains(&c), "{c} missing: {categories:?}");
    }
    let model = options.iter().find(|o| o.category == "model").expect("model");
    assert!(model.offers(&json!("sonnet")), "{model:?}");
    let options = h
        .core
        .chat
        .set_option("claude", &model.id.clone(), json!("sonnet"))
        .await
        .expect("sonnet is answered");
    assert_eq!(current(&options, &model.id), "sonnet");
}
