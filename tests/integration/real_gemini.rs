//! gemini-cli, doing real turns through Parley against the model-API
//! stand-in (the Gemini API: `streamGenerateContent`, and the router's
//! `generateContent`).

use std::time::Duration;

use parley::core::events::Event;
use parley::core::secrets::Secret;
use serde_json::json;

use crate::model_api::{ModelApi, Reply};
use crate::real_agents::*;

/// gemini's own settings: the API key's method, nothing that calls out, one
/// attempt per request (its retries wait 5 s and more). Without the method
/// chosen, gemini takes `GOOGLE_GEMINI_BASE_URL` for a gateway that needs
/// no key at all.
fn settings(p: &Project) {
    let dir = p.home.path().join(".gemini");
    std::fs::create_dir_all(&dir).expect(".gemini");
    let s = json!({
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false,
                    "checkpointing": {"enabled": false}, "maxAttempts": 1, "retryFetchErrors": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "ide": {"enabled": false},
        "security": {"folderTrust": {"enabled": false}, "auth": {"selectedType": "gemini-api-key"}},
    });
    std::fs::write(dir.join("settings.json"), s.to_string()).expect("settings.json");
}

fn gemini(p: &Project, api: &ModelApi, key: Option<&str>) -> Option<serde_json::Value> {
    let bin = installed("gemini", "gemini")?;
    let mut env = vec![
        ("GOOGLE_GEMINI_BASE_URL", api.url()),
        ("GEMINI_CLI_NO_RELAUNCH", "true".to_owned()),
        ("NO_BROWSER", "1".to_owned()),
    ];
    if let Some(k) = key {
        env.push(("GEMINI_API_KEY", k.to_owned()));
    }
    Some(entry("gemini", &bin, &["--acp"], p, &env))
}

/// The edit turn: read, replace (asks), a command, then Markdown with a
/// thought that has no subject.
fn edit_script(p: &Project, old: &str, new: &str) -> Vec<Reply> {
    vec![
        Reply::Tool {
            name: "read_file".into(),
            input: json!({"file_path": "notes.txt"}),
            text: "I'll read `notes.txt` first.".into(),
        },
        Reply::tool(
            "replace",
            json!({"file_path": p.notes().display().to_string(), "instruction": "Change the line",
                "old_string": old, "new_string": new}),
        ),
        Reply::tool(
            "run_shell_command",
            json!({"command": "echo hi", "description": "Say hi", "is_background": false}),
        ),
        Reply::Text {
            text: "## Done\n\n- read `notes.txt`\n- replaced *the line*\n- ran `echo hi`\n".into(),
            thought: "Checking the result\nThe file is edited.".into(),
            chunk: 20,
            delay: Duration::ZERO,
        },
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_edits_asks_runs_cancels_fails_clearly_and_loads() {
    let p = Project::new();
    let api = ModelApi::start(edit_script(&p, "line two", "line 2 (edited)"));
    let Some(agent) = gemini(&p, &api, Some(KEY)) else {
        return;
    };
    settings(&p);
    let mut h = parley(&[agent], json!({"turnSilenceWarning": "2s"}));

    // 1. A full turn, the edit allowed.
    h.core.chat.send("gemini", "Edit notes.txt").expect("send");
    let asked = h.answer_next("allow_once").await;
    // gemini announces its edit only in the request: the diff is there.
    assert_eq!(asked.tool_call.diffs.len(), 1, "{asked:#?}");
    assert!(asked.tool_call.diffs[0].new_text.contains("line 2 (edited)"));
    h.turn_ends("gemini").await;
    let m = h.answer("gemini");
    assert_eq!(stop(&m), "end_turn", "{m:#?}");
    assert_eq!(p.notes_text(), "line one\nline 2 (edited)\nline three\n");
    none_open(&m);
    assert_eq!(
        tool(&m, "read").status,
        agent_client_protocol_schema::v1::ToolCallStatus::Completed
    );
    assert_eq!(tool(&m, "edit").diffs.len(), 1);
    assert_eq!(tool(&m, "execute").title, "echo hi");
    assert!(m.text().contains("## Done"), "{m:#?}");
    // The thought came without a subject: gemini sent `****` (the window
    // draws none of it, see ui::markdown::thought).
    assert!(
        m.parts.iter().any(|p| matches!(p, parley::core::types::message::Part::Thought { text } if text.contains("Checking the result"))),
        "{m:#?}"
    );
    // What the agent sent the model: the file it read, in the next request.
    let main = api.main_requests();
    assert!(main.len() >= 4, "{} main requests", main.len());
    assert!(
        main[1].body.to_string().contains("line two"),
        "the read's result is not sent back"
    );
    assert_eq!(main[0].header("x-goog-api-key"), Some(KEY));
    // Usage from the prompt result's `_meta.quota`, where it parses.
    // (No assertion on the window here: see docs/agents.md.)

    // 2. The same, rejected: nothing changes and no call stays open.
    api.set_script(vec![
        Reply::tool("read_file", json!({"file_path": "notes.txt"})),
        Reply::tool(
            "replace",
            json!({"file_path": p.notes().display().to_string(), "instruction": "Change",
                "old_string": "line one", "new_string": "line 1"}),
        ),
        Reply::text("Not changed, as you asked."),
    ]);
    h.core.chat.send("gemini", "Edit notes.txt again").expect("send");
    h.answer_next("reject_once").await;
    h.turn_ends("gemini").await;
    let m = h.answer("gemini");
    assert_eq!(stop(&m), "end_turn", "{m:#?}");
    assert_eq!(p.notes_text(), "line one\nline 2 (edited)\nline three\n");
    none_open(&m);
    let edit = tool(&m, "edit");
    assert_eq!(wire(&edit.status), "failed");
    assert!(edit.output.contains("permission was refused"), "{edit:#?}");

    // 3. Cancel in the middle of a long answer.
    cancel_a_long_answer(&mut h, &api, "gemini").await;

    // 4. A broken provider: each ends in gemini's own error, shown, and
    // the conversation goes on.
    api.set_script(vec![Reply::text("Back again.")]);
    for (reply, words) in [
        (Reply::status(500), ["the stand-in answers 500", "error 500"]),
        (
            Reply::Status {
                code: 429,
                retry_after: Some(1),
            },
            ["the stand-in answers 429", "error 429"],
        ),
        // Where the stream broke: in the middle of an event's JSON.
        (Reply::Cut, ["Incomplete JSON", "error 500"]),
    ] {
        api.next(reply);
        h.core.chat.send("gemini", "Hello?").expect("send");
        h.turn_ends("gemini").await;
        let m = h.answer("gemini");
        let error = m.error.clone().unwrap_or_default();
        assert!(
            words.iter().all(|w| error.contains(w)),
            "expected {words:?} in {m:#?}"
        );
    }
    a_silent_provider_is_seen_and_cancelled(&mut h, &api, "gemini").await;
    // A tool use that names a file outside the cwd: gemini refuses it
    // itself, the model hears why, and the turn ends.
    let outside = p.home.path().join("secret.txt");
    std::fs::write(&outside, "do not read").expect("outside");
    api.set_script(vec![
        Reply::tool("read_file", json!({"file_path": outside.display().to_string()})),
        Reply::text("I could not read it."),
    ]);
    let before = api.main_requests().len();
    h.core.chat.send("gemini", "Read the secret").expect("send");
    h.turn_ends("gemini").await;
    let m = h.answer("gemini");
    assert_eq!(stop(&m), "end_turn", "{m:#?}");
    let sent = api.main_requests()[before..]
        .iter()
        .map(|r| r.body.to_string())
        .collect::<String>();
    assert!(
        !sent.contains("do not read"),
        "the file outside the cwd reached the model"
    );
    none_open(&m);

    // 5. After a restart: gemini loads its session, or says why not (it
    // cannot in the minute the session was made), with the detail.
    let (h, _) = after_a_restart(h, &api, "gemini").await;
    let conv = h.core.chat.conversation("gemini").expect("conversation");
    match conv.read_only {
        Some(why) => {
            eprintln!("gemini could not load its session: {why}");
            assert!(
                why.contains("No previous sessions found for this project."),
                "{why}"
            )
        }
        None => assert!(h.answer("gemini").text().contains("Still here."), "{conv:#?}"),
    }
}

fn wire(s: &agent_client_protocol_schema::v1::ToolCallStatus) -> String {
    parley::core::types::message::wire_name(s)
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_signs_in_with_its_api_key_method_and_answers() {
    let p = Project::new();
    let api = ModelApi::start(vec![Reply::text("Signed in and answering.")]);
    let Some(agent) = gemini(&p, &api, None) else {
        return;
    };
    settings(&p);
    if !crate::auth::keyring_or_skip("gemini_signs_in").await {
        return;
    }
    let mut h = parley(&[agent], json!({}));
    h.core.chat.send("gemini", "hello").expect("send");
    let status = h
        .wait_for(
            "gemini needs sign-in",
            Duration::from_secs(60),
            |e| matches!(e, Event::AuthChanged(s) if s.agent == "gemini" && s.needs_sign_in),
        )
        .await;
    let Event::AuthChanged(status) = status else {
        unreachable!("auth:changed")
    };
    assert!(
        status.methods.iter().any(|m| m.id == "gemini-api-key"),
        "{status:?}"
    );
    h.core
        .auth
        .sign_in(
            "gemini",
            "gemini-api-key",
            vec![("GEMINI_API_KEY".into(), Secret::new(KEY.into()))],
        )
        .await
        .expect("signed in");
    // The message that waited for the sign-in is sent now, and answered.
    let answered = h
        .wait_for("gemini's answer", Duration::from_secs(60), |e| {
            matches!(e, Event::MessageUpdated(u) if u.agent == "gemini"
                && u.message.role == parley::core::types::message::Role::Agent && u.message.done)
        })
        .await;
    let Event::MessageUpdated(m) = answered else {
        unreachable!("message:updated")
    };
    assert!(m.message.text().contains("Signed in and answering."), "{m:#?}");
    // The key reached the model's API from the agent, and is in Parley's
    // files nowhere: only in the keyring.
    assert!(api
        .main_requests()
        .iter()
        .any(|r| r.header("x-goog-api-key") == Some(KEY)));
    key_not_in(h.dir.path());
    let _ = h.core.auth.forget_keys("gemini").await;
}

/// gemini's "AI API Gateway" method: refused without its gateway (gemini
/// would save a sign-in that goes nowhere), then signed in with a base URL
/// and a key header through `AuthService.SignIn`'s gateway form. The model
/// is reached only through the gateway (no `GOOGLE_GEMINI_BASE_URL`), the
/// key is in the keyring and no file (gemini's own settings name the method
/// only), and after a restart Parley sends the gateway again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_signs_in_through_a_gateway_that_sticks_across_a_restart() {
    use parley::core::auth::{AuthError, AuthKind};
    use parley::core::types::gateway::Gateway;
    let p = Project::new();
    let api = ModelApi::start(vec![Reply::text("Through the gateway.")]);
    let Some(bin) = installed("gemini", "gemini") else {
        return;
    };
    let env = [
        ("GEMINI_CLI_NO_RELAUNCH", "true".to_owned()),
        ("NO_BROWSER", "1".to_owned()),
    ];
    let agent = entry("gemini", &bin, &["--acp"], &p, &env);
    settings(&p);
    let settings_file = p.home.path().join(".gemini/settings.json");
    if !crate::auth::keyring_or_skip("gemini_gateway").await {
        return;
    }
    let mut h = parley(&[agent], json!({}));
    h.core.chat.send("gemini", "hello").expect("send");
    h.wait_for(
        "gemini needs sign-in",
        Duration::from_secs(60),
        |e| matches!(e, Event::AuthChanged(s) if s.agent == "gemini" && s.needs_sign_in),
    )
    .await;
    let status = h.core.auth.status("gemini").expect("status");
    let gateway = status
        .methods
        .iter()
        .find(|m| m.id == "gateway")
        .expect("gemini's gateway method");
    assert_eq!(
        gateway.kind,
        AuthKind::Gateway {
            protocol: "google".into()
        }
    );
    // No bare button: without its gateway the method is refused here, and
    // nothing reaches gemini (its settings still name the key method).
    let bare = h.core.auth.sign_in("gemini", "gateway", Vec::new()).await;
    assert_eq!(bare, Err(AuthError::GatewayMissing("gateway".into())));
    let before = std::fs::read_to_string(&settings_file).unwrap_or_default();
    assert!(!before.contains("\"gateway\""), "{before}");
    let bad = Gateway::from_args("gateway", &json!({"baseUrl": "not a url"}));
    assert!(bad.is_err());

    let g = Gateway::from_args(
        "gateway",
        &json!({"baseUrl": api.url(), "headers": {"x-gateway-key": KEY}}),
    )
    .expect("gateway");
    h.core
        .auth
        .sign_in_gateway("gemini", "gateway", g)
        .await
        .expect("signed in");
    h.answered("gemini").await;
    assert!(
        h.answer("gemini").text().contains("Through the gateway."),
        "{:#?}",
        h.answer("gemini")
    );
    // (gemini sends its own empty `x-goog-api-key` over a header of that
    // name: a gateway's key goes in a header of the gateway's own.)
    let sent: Vec<_> = api.main_requests().iter().map(|r| r.headers.clone()).collect();
    assert!(
        api.main_requests()
            .iter()
            .any(|r| r.header("x-gateway-key") == Some(KEY)),
        "{sent:?}"
    );
    let saved = std::fs::read_to_string(&settings_file).unwrap_or_default();
    assert!(saved.contains("\"gateway\""), "gemini saved its method: {saved}");
    assert!(!saved.contains(KEY), "the key is in gemini's settings");
    let status = h.core.auth.status("gemini").expect("status");
    assert!(status.gateway_saved && !status.needs_sign_in, "{status:?}");
    assert!(
        !status.saved_keys.iter().any(|k| k.contains("gateway")),
        "{status:?}"
    );
    key_not_in(h.dir.path());
    assert!(!h.log_of("gemini").contains(KEY), "the key is in the agent's log");

    // After a restart gemini knows only "gateway": Parley sends where to.
    let before = api.main_requests().len();
    h.core.agents.restart("gemini").await.expect("restart");
    api.set_script(vec![Reply::text("Still through the gateway.")]);
    h.core.chat.send("gemini", "again").expect("send");
    h.answered("gemini").await;
    assert!(
        h.answer("gemini").text().contains("Still through the gateway."),
        "{:#?}\n{}",
        h.answer("gemini"),
        h.log_of("gemini")
    );
    assert!(api.main_requests()[before..]
        .iter()
        .any(|r| r.header("x-gateway-key") == Some(KEY)));
    let _ = h.core.auth.forget_keys("gemini").await;
    assert!(!h.core.auth.status("gemini").expect("status").gateway_saved);
}
