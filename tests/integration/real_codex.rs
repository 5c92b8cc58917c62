//! codex-acp (Codex), doing real turns through Parley against the model-API
//! stand-in (the OpenAI Responses API, as Codex uses it).

use parley::core::types::message::wire_name;
use serde_json::json;

use crate::model_api::{ModelApi, Reply};
use crate::real_agents::*;

/// `$CODEX_HOME/config.toml`: the stand-in as a model provider of the
/// Responses API; a model of Codex's own catalogue (else `apply_patch` is
/// not offered); one retry at most, so that a broken provider's error
/// comes in seconds. Neither approvals nor the sandbox are set here:
/// codex-acp 2 sends those of its mode with every turn (Codex 0.166 refuses
/// `untrusted`, which asked for every edit).
fn codex_home(p: &Project, api: &ModelApi) -> String {
    let home = p.home.path().join(".codex");
    std::fs::create_dir_all(&home).expect("CODEX_HOME");
    let config = format!(
        r#"model = "gpt-5.5"
model_provider = "standin"
check_for_update_on_startup = false

[model_providers.standin]
name = "Stand-in"
base_url = "{}/v1"
env_key = "STANDIN_API_KEY"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1
stream_idle_timeout_ms = 10000
supports_websockets = false
"#,
        api.url()
    );
    std::fs::write(home.join("config.toml"), config).expect("config.toml");
    home.display().to_string()
}

/// The same provider, authenticated the way Codex's own sign-in does:
/// `requires_openai_auth` sends the key that `authenticate` stored.
fn codex_home_signed_in(p: &Project, api: &ModelApi) -> String {
    let home = codex_home(p, api);
    let config = std::path::Path::new(&home).join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap_or_default();
    let text = text.replace("env_key = \"STANDIN_API_KEY\"", "requires_openai_auth = true");
    std::fs::write(&config, text).expect("config.toml");
    home
}

fn codex(p: &Project, api: &ModelApi) -> Option<serde_json::Value> {
    let bin = installed("codex", "codex-acp")?;
    let env = [
        ("CODEX_HOME", codex_home(p, api)),
        ("STANDIN_API_KEY", KEY.to_owned()),
    ];
    Some(entry("codex", &bin, &[], p, &env))
}

const PATCH: &str =
    "*** Begin Patch\n*** Update File: notes.txt\n@@\n-line two\n+line two (edited)\n*** End Patch\n";

#[tokio::test(flavor = "multi_thread")]
async fn codex_edits_asks_runs_cancels_fails_clearly_and_resumes() {
    let p = Project::new();
    let api = ModelApi::start(vec![
        Reply::tool("exec_command", json!({"cmd": "cat notes.txt"})),
        Reply::tool("apply_patch", json!(PATCH)),
        Reply::tool("exec_command", json!({"cmd": "echo hi"})),
        Reply::text("## Done\n\nI edited `notes.txt`:\n\n- changed **line two**\n- ran `echo hi`\n"),
    ]);
    let Some(agent) = codex(&p, &api) else { return };
    let mut h = parley(&[agent], json!({"turnSilenceWarning": "2s"}));

    // 1. A full turn, the edit allowed. (codex-acp 2 starts in `agent`,
    // where a reviewer model answers the permission requests; `read-only`
    // asks the client before an edit, and runs commands in its sandbox.)
    h.core
        .chat
        .set_option("codex", "mode", json!("read-only"))
        .await
        .expect("the read-only mode");
    h.core.chat.send("codex", "Edit notes.txt").expect("send");
    let asked = h.answer_next("allow_once").await;
    assert_eq!(asked.tool_call.diffs.len(), 1, "{asked:#?}");
    h.turn_ends("codex").await;
    let m = h.answer("codex");
    assert_eq!(stop(&m), "end_turn", "{m:#?}\n{}", h.log_of("codex"));
    assert_eq!(p.notes_text(), "line one\nline two (edited)\nline three\n");
    none_open(&m);
    // codex-acp 2's own title, as it sent it.
    assert_eq!(
        tool(&m, "read").title,
        format!("Read file '{}'", p.notes().display())
    );
    // The command: its command line as the title, a live terminal, and
    // what it printed (not codex's whole rawOutput object).
    let run = tool(&m, "execute");
    assert_eq!(run.title, "echo hi");
    assert_eq!(run.terminals.len(), 1, "{run:#?}");
    assert_eq!(wire_name(&run.status), "completed", "{run:#?}");
    let terminal = run.terminals[0].clone();
    assert!(
        h.seen
            .iter()
            .any(|e| matches!(e, parley::core::events::Event::TerminalOutput(o)
            if o.terminal_id == terminal && o.data.contains("hi"))),
        "no live output for {terminal}"
    );
    assert!(!run.output.contains("call_id"), "{run:#?}");
    assert!(m.text().contains("## Done"), "{m:#?}");
    let main = api.main_requests();
    assert!(
        main[1].body.to_string().contains("line two"),
        "the read's result is not sent back"
    );
    assert_eq!(
        main[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    // Parley's checkpoints saw the edit codex made with its own tool; Undo
    // turn takes it back, and the revert's Undo puts it back again.
    let a = "codex".to_owned();
    h.wait_for(
        "changes:updated",
        std::time::Duration::from_secs(30),
        move |e| matches!(e, parley::core::events::Event::ChangesUpdated(c) if c.agent == a),
    )
    .await;
    let changes = h.core.chat.changes("codex", None, None).await.expect("changes");
    let files: Vec<&str> = changes.total.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, ["notes.txt"], "{changes:#?}");
    let undone = h
        .core
        .chat
        .undo_turn("codex", None, Default::default())
        .await
        .expect("undo turn");
    assert_eq!(p.notes_text(), NOTES);
    h.core
        .chat
        .undo_revert("codex", &undone.id)
        .await
        .expect("undo the undo");
    assert_eq!(p.notes_text(), "line one\nline two (edited)\nline three\n");

    // 2. The same, rejected: codex ends the turn and sends no last status;
    // Parley closes the call, saying why.
    api.set_script(vec![
        Reply::tool("apply_patch", json!(PATCH.replace("line two", "line one"))),
        Reply::text("Not reached."),
    ]);
    h.core.chat.send("codex", "Edit it again").expect("send");
    h.answer_next("reject_once").await;
    h.turn_ends("codex").await;
    let m = h.answer("codex");
    assert_eq!(stop(&m), "cancelled", "{m:#?}");
    assert_eq!(p.notes_text(), "line one\nline two (edited)\nline three\n");
    none_open(&m);
    let edit = tool(&m, "edit");
    assert_eq!(wire_name(&edit.status), "failed");
    assert!(edit.output.contains("permission was refused"), "{edit:#?}");

    // 3. Cancel in the middle of a long answer.
    cancel_a_long_answer(&mut h, &api, "codex").await;

    // 4. A broken provider (every attempt): codex's own error, shown, and
    // the conversation goes on. (codex-acp 2 sends a client that is not
    // JetBrains AIR the error as the answer's text, and ends the turn.)
    for (reply, words) in [
        (Reply::status(500), "high demand"),
        (
            Reply::Status {
                code: 429,
                retry_after: Some(1),
            },
            "429",
        ),
        (Reply::Cut, "stream disconnected before completion"),
    ] {
        api.set_script(vec![reply]);
        h.core.chat.send("codex", "Hello?").expect("send");
        h.turn_ends("codex").await;
        let m = h.answer("codex");
        let all = format!("{} {}", m.text(), m.error.clone().unwrap_or_default());
        assert!(all.contains(words), "expected {words:?} in {m:#?}");
    }
    a_silent_provider_is_seen_and_cancelled(&mut h, &api, "codex").await;

    // 5. After a restart: codex resumes its session, and the model hears
    // the whole conversation.
    let (h, after) = after_a_restart(h, &api, "codex").await;
    heard_the_first_turn("codex", &h, &after);
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_signs_in_with_its_key_method_and_the_key_reaches_the_model() {
    let p = Project::new();
    let api = ModelApi::start(vec![Reply::text("Signed in and answering.")]);
    let Some(bin) = installed("codex", "codex-acp") else {
        return;
    };
    if !crate::auth::keyring_or_skip("codex_signs_in").await {
        return;
    }
    let agent = entry(
        "codex",
        &bin,
        &[],
        &p,
        &[("CODEX_HOME", codex_home_signed_in(&p, &api))],
    );
    let mut h = parley(&[agent], json!({}));
    // codex-acp's own method, `api-key` (`_meta: {"api-key": {"provider":
    // "openai"}}`): the key in its environment as OPENAI_API_KEY, then
    // `authenticate`, which it answers by storing the key for its provider.
    h.core
        .auth
        .sign_in(
            "codex",
            "api-key",
            vec![(
                "OPENAI_API_KEY".into(),
                parley::core::secrets::Secret::new(KEY.into()),
            )],
        )
        .await
        .expect("signed in");
    h.core.chat.send("codex", "hello").expect("send");
    h.turn_ends("codex").await;
    let m = h.answer("codex");
    assert!(
        m.text().contains("Signed in and answering."),
        "{m:#?}\n{}",
        h.log_of("codex")
    );
    let bearer = format!("Bearer {KEY}");
    assert!(
        api.main_requests()
            .iter()
            .all(|r| r.header("authorization") == Some(bearer.as_str())),
        "the key did not reach the model"
    );
    // In the keyring, and in none of Parley's files.
    key_not_in(h.dir.path());
    assert!(!h.core.auth.status("codex").expect("status").needs_sign_in);
    let _ = h.core.auth.forget_keys("codex").await;
}
