//! Signing in (issue 15): the demo agent's sign-in modes through the
//! services, a real keyring, parley-cli, and the real agents people install.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use parley::core::auth::{AuthError, AuthKind, AuthStatus};
use parley::core::events::Event;
use parley::core::secrets::Secret;
use parley::core::types::message::Role;
use parley::core::types::AgentState;
use serde_json::json;

use crate::common::*;

impl Harness {
    /// Waits for `auth:changed` of `agent` saying `needs_sign_in`.
    async fn wait_needs_sign_in(&mut self, agent: &str, needed: bool) -> AuthStatus {
        let a = agent.to_owned();
        match self
            .wait_for(
                &format!("{agent} needs sign-in = {needed}"),
                Duration::from_secs(30),
                move |e| matches!(e, Event::AuthChanged(s) if s.agent == a && s.needs_sign_in == needed),
            )
            .await
        {
            Event::AuthChanged(s) => s,
            _ => unreachable!("the predicate matched auth:changed"),
        }
    }
}

/// Whether the keyring can be used here; with `PARLEY_TEST_KEYRING=1`
/// (build-aux/with-keyring.sh, as `.ci/run` runs the tests) it must be.
pub(crate) async fn keyring_or_skip(what: &str) -> bool {
    let probe = parley::core::secrets::save(
        "/parley-test/probe",
        "probe",
        &[("PROBE".into(), Secret::new("probe".into()))],
    )
    .await;
    match probe {
        Ok(()) => {
            let _ = parley::core::secrets::forget("/parley-test/probe", "probe").await;
            true
        }
        Err(e) if std::env::var("PARLEY_TEST_KEYRING").as_deref() == Ok("1") => {
            panic!("the test keyring is not usable: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED {what}: no Secret Service here ({e}); run under build-aux/with-keyring.sh");
            false
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_method_signs_in_and_the_waiting_message_is_sent_again() {
    let mut h = Harness::new(&[agent("a", "auth-agent")]);
    let id = h.core.chat.send("a", "echo after sign-in").expect("send");
    let status = h.wait_needs_sign_in("a", true).await;
    h.wait_idle("a").await;
    assert_eq!(status.message.as_deref(), Some("Authentication required"));
    let ids: Vec<&str> = status.methods.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["demo-login", "demo-refuse", "demo-slow"]);
    assert!(status.can_logout, "{status:?}");
    // The refused prompt's empty answer went; the message waits.
    assert!(h
        .seen
        .iter()
        .any(|e| matches!(e, Event::MessageRemoved(r) if r.agent == "a")));
    let conv = h.core.chat.conversation("a").expect("conversation");
    assert_eq!(conv.messages.len(), 1, "{:?}", conv.messages);
    assert!(conv.messages[0].queued && conv.messages[0].id == id);
    assert!(h.core.agents.list()[0].needs_sign_in);

    h.core
        .auth
        .sign_in("a", "demo-login", Vec::new())
        .await
        .expect("signed in");
    h.wait_needs_sign_in("a", false).await;
    h.wait_idle("a").await;
    let answer = h.answer("a");
    assert_eq!(answer.text(), "after sign-in");
    let conv = h.core.chat.conversation("a").expect("conversation");
    assert_eq!(conv.messages.len(), 2, "sent again, once: {:?}", conv.messages);
    assert!(!conv.messages[0].queued);
    assert!(!h.core.agents.list()[0].needs_sign_in);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_sign_in_shows_the_agents_words_and_logout_signs_out() {
    let mut h = Harness::new(&[agent("a", "auth-agent")]);
    h.core.chat.send("a", "echo hi").expect("send");
    h.wait_needs_sign_in("a", true).await;
    h.wait_idle("a").await;
    let refused = h.core.auth.sign_in("a", "demo-refuse", Vec::new()).await;
    let Err(AuthError::Failed(why)) = refused else {
        panic!("{refused:?}")
    };
    assert!(why.contains("Wrong password"), "{why}");
    let status = h.core.auth.status("a").expect("status");
    assert!(status.needs_sign_in);
    assert!(status.message.unwrap_or_default().contains("Wrong password"));
    assert_eq!(
        h.core.auth.sign_in("a", "nope", Vec::new()).await,
        Err(AuthError::UnknownMethod("nope".into()))
    );
    h.core
        .auth
        .sign_in("a", "demo-login", Vec::new())
        .await
        .expect("signed in");
    h.wait_idle("a").await;
    h.core.auth.logout("a").await.expect("signed out");
    assert!(h.core.auth.status("a").expect("status").needs_sign_in);
    // After signing out, the agent refuses again.
    h.core.chat.send("a", "echo again").expect("send");
    h.wait_idle("a").await;
    let conv = h.core.chat.conversation("a").expect("conversation");
    assert!(conv
        .messages
        .last()
        .is_some_and(|m| m.queued && m.role == Role::User));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_sign_in_can_be_cancelled() {
    let mut h = Harness::new(&[agent("a", "auth-agent")]);
    h.core.chat.send("a", "echo hi").expect("send");
    h.wait_needs_sign_in("a", true).await;
    let core = h.core.clone();
    let slow = tokio::spawn(async move { core.auth.sign_in("a", "demo-slow", Vec::new()).await });
    h.wait_for(
        "signing in",
        Duration::from_secs(10),
        |e| matches!(e, Event::AuthChanged(s) if s.signing_in.as_deref() == Some("demo-slow")),
    )
    .await;
    // One at a time.
    assert_eq!(
        h.core.auth.sign_in("a", "demo-login", Vec::new()).await,
        Err(AuthError::Busy)
    );
    let t = Instant::now();
    h.core.auth.cancel("a").await.expect("cancel");
    let result = slow.await.expect("join");
    assert_eq!(result, Err(AuthError::Cancelled));
    h.wait_state("a", AgentState::Stopped).await;
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(h.core.agents.state("a"), Some(AgentState::Stopped));
    let status = h.core.auth.status("a").expect("status");
    assert!(status.needs_sign_in && status.signing_in.is_none(), "{status:?}");
}

/// Reads the terminal until `text` appears; returns all that was read.
fn read_until(terminal: &mut std::fs::File, text: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains(text) {
        assert!(
            Instant::now() < deadline,
            "no {text:?} in {:?}",
            String::from_utf8_lossy(&seen)
        );
        match terminal.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_sign_in_restarts_the_agent_and_sends_the_message() {
    let cwd = tempfile::tempdir().expect("tempdir");
    let mut a = agent("t", "auth-terminal");
    a["cwd"] = json!(cwd.path());
    let mut h = Harness::new(&[a]);
    h.core.chat.send("t", "echo signed in by terminal").expect("send");
    let status = h.wait_needs_sign_in("t", true).await;
    h.wait_idle("t").await;
    assert!(matches!(&status.methods[0].kind, AuthKind::Terminal { args, .. } if args == &["--login"]));
    assert!(
        matches!(&status.methods[1].kind, AuthKind::Terminal { command: Some(c), .. } if c == "parley-demo-agent")
    );

    // A "no" fails, with the status.
    let mut login = h
        .core
        .auth
        .login_terminal("t", "demo-terminal")
        .await
        .expect("terminal");
    let mut tty = std::fs::File::from(login.take_terminal().expect("its side"));
    // The terminal stays open until the command ends (closing it would
    // hang it up).
    let (first, _tty) = tokio::task::spawn_blocking(move || {
        let text = read_until(&mut tty, "Type yes", Duration::from_secs(10));
        let _ = tty.write_all(b"no\n");
        (text, tty)
    })
    .await
    .expect("join");
    assert!(first.starts_with("Demo sign-in for Parley"), "{first:?}");
    let status = login.wait().await;
    let failed = h.core.auth.login_finished("t", status).await;
    assert!(
        matches!(&failed, Err(AuthError::Failed(w)) if w.contains("exit status: 1")),
        "{failed:?}"
    );
    assert!(h.core.auth.status("t").expect("status").needs_sign_in);

    // The legacy form, answered "yes": the agent is restarted and the
    // message goes.
    let generation_before = h.states("t").len();
    let mut login = h
        .core
        .auth
        .login_terminal("t", "demo-legacy")
        .await
        .expect("terminal");
    let mut tty = std::fs::File::from(login.take_terminal().expect("its side"));
    let _tty = tokio::task::spawn_blocking(move || {
        read_until(&mut tty, "Type yes", Duration::from_secs(10));
        let _ = tty.write_all(b"yes\n");
        tty
    })
    .await
    .expect("join");
    let status = login.wait().await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    h.core.auth.login_finished("t", status).await.expect("signed in");
    h.wait_idle("t").await;
    assert_eq!(h.answer("t").text(), "signed in by terminal");
    assert!(
        h.states("t").len() > generation_before,
        "restarted: {:?}",
        h.states("t")
    );
    assert!(cwd.path().join(".parley-demo-signed-in").exists());
}

/// Signed in outside Parley: the next session the agent accepts clears
/// "needs sign-in" and sends the waiting message; Cancel drops waiting ones.
#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_elsewhere_is_noticed_and_cancel_drops_waiting_messages() {
    let cwd = tempfile::tempdir().expect("tempdir");
    let mut a = agent("t", "auth-terminal");
    a["cwd"] = json!(cwd.path());
    let mut h = Harness::new(&[a]);
    let dropped = h.core.chat.send("t", "echo never").expect("send");
    h.wait_needs_sign_in("t", true).await;
    h.wait_idle("t").await;
    h.core.chat.cancel("t").expect("cancel");
    let conv = h.core.chat.conversation("t").expect("conversation");
    let m = conv
        .messages
        .iter()
        .find(|m| m.id == dropped)
        .expect("the message");
    assert!(!m.queued && m.error.is_some(), "{m:?}");

    h.core.chat.send("t", "echo first").expect("send");
    h.wait_idle("t").await;
    std::fs::write(cwd.path().join(".parley-demo-signed-in"), "by hand").expect("sign in by hand");
    h.core.agents.restart("t").await.expect("restart");
    h.core.chat.send("t", "echo second").expect("send");
    h.wait_needs_sign_in("t", false).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let conv = h.core.chat.conversation("t").expect("conversation");
        let answers: Vec<String> = conv
            .messages
            .iter()
            .filter(|m| m.role == Role::Agent && m.done)
            .map(|m| m.text())
            .collect();
        if answers.len() == 2 && !conv.busy {
            // The new one was under way: the one that waited follows it.
            assert_eq!(answers, ["second", "first"]);
            break;
        }
        assert!(Instant::now() < deadline, "{:?}", conv.messages);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_sign_in_leaves_no_process_behind() {
    let marker = unique("PARLEY_LOGIN_MARK");
    let mut a = agent("t", "auth-terminal");
    a["env"]["PARLEY_LOGIN_MARK"] = json!(marker);
    let h = Harness::new(&[a]);
    // The agent itself carries the marker too: stopped once its methods
    // are known, so that only the sign-in command's processes are left.
    h.core.auth.methods("t").await.expect("methods");
    h.core.agents.stop("t").await.expect("stop");
    let mut login = h
        .core
        .auth
        .login_terminal("t", "demo-terminal")
        .await
        .expect("terminal");
    let tty = login.take_terminal().expect("its side");
    assert!(!processes_with(&marker).is_empty());
    // Cancelled while it waits for its answer: the stop sequence ends it.
    login.end().await;
    drop(tty);
    let left = wait_no_processes(&marker, Duration::from_secs(5)).await;
    let what: Vec<String> = left
        .iter()
        .map(|p| {
            format!(
                "{p}: {:?} {}",
                std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default(),
                std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default()
            )
        })
        .collect();
    assert!(left.is_empty(), "{what:?}");
    // Dropped without an end: the guardian's lifeline ends it.
    let mut login = h
        .core
        .auth
        .login_terminal("t", "demo-terminal")
        .await
        .expect("terminal");
    let _tty = login.take_terminal();
    assert!(!processes_with(&marker).is_empty());
    drop(login);
    assert_eq!(
        wait_no_processes(&marker, Duration::from_secs(5)).await,
        Vec::<i32>::new()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_saved_key_goes_to_the_keyring_and_to_every_start_and_nowhere_else() {
    if !keyring_or_skip("a_saved_key_goes_to_the_keyring").await {
        return;
    }
    let secret = format!("sk-{}", unique("SECRET"));
    let mut h = Harness::new(&[agent("e", "auth-env")]);
    h.core.chat.send("e", "echo with a key").expect("send");
    let status = h.wait_needs_sign_in("e", true).await;
    h.wait_idle("e").await;
    assert!(status.message.unwrap_or_default().contains("DEMO_API_KEY"));
    assert_eq!(
        h.core
            .auth
            .sign_in("e", "demo-key", vec![("OTHER".into(), Secret::new("x".into()))])
            .await,
        Err(AuthError::BadKey("OTHER".into()))
    );
    assert_eq!(
        h.core.auth.sign_in("e", "demo-key", Vec::new()).await,
        Err(AuthError::KeysMissing(vec!["DEMO_API_KEY".into()]))
    );
    h.core
        .auth
        .sign_in(
            "e",
            "demo-key",
            vec![("DEMO_API_KEY".into(), Secret::new(secret.clone()))],
        )
        .await
        .expect("signed in");
    h.wait_idle("e").await;
    assert_eq!(h.answer("e").text(), "with a key");
    assert_eq!(
        h.core.auth.status("e").expect("status").saved_keys,
        ["DEMO_API_KEY"]
    );
    // At every start: a restart still has it.
    h.core.agents.restart("e").await.expect("restart");
    h.core.chat.send("e", "echo after a restart").expect("send");
    h.wait_idle("e").await;
    assert_eq!(h.answer("e").text(), "after a restart");
    // Nowhere else: not in an event, the log, the configuration, the list.
    let events: String = h
        .seen
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default())
        .collect();
    assert!(!events.contains(&secret));
    let logs = h.core.agents.logs("e").expect("logs").join("\n");
    assert!(!logs.contains(&secret));
    assert!(!read(&h.path()).contains(&secret));
    let index = read(&parley::core::config::store::state_file("saved-keys.json"));
    assert!(index.contains("DEMO_API_KEY") && !index.contains(&secret));
    // Forgotten: the next start has no key, and the agent asks again.
    h.core.auth.forget_keys("e").await.expect("forget");
    assert!(h.core.auth.status("e").expect("status").saved_keys.is_empty());
    h.core.chat.send("e", "echo without").expect("send");
    h.wait_needs_sign_in("e", true).await;
    h.wait_idle("e").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn parley_cli_auth_reads_a_key_from_stdin_and_never_prints_it() {
    if !keyring_or_skip("parley_cli_auth").await {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent("e", "auth-env")], 4, "0")).expect("write");
    let secret = format!("sk-{}", unique("CLI"));
    let run = |args: &[&str], input: &str| {
        let mut child = std::process::Command::new(cli())
            .args(args)
            .arg("--config")
            .arg(&config)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("parley-cli");
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input.as_bytes());
        }
        child.wait_with_output().expect("output")
    };
    let listed = run(&["auth", "e"], "");
    assert!(listed.status.success(), "{listed:?}");
    let status: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("one JSON line");
    assert_eq!(status["methods"][0]["type"], "env_var");
    assert_eq!(status["methods"][0]["vars"][0]["name"], "DEMO_API_KEY");
    let signed = run(&["auth", "e", "demo-key"], &format!("{secret}\n"));
    assert!(signed.status.success(), "{signed:?}");
    for output in [&signed.stdout, &signed.stderr] {
        assert!(!String::from_utf8_lossy(output).contains(&secret));
    }
    let sent = run(&["send", "e", "echo ok"], "");
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    assert!(!String::from_utf8_lossy(&sent.stdout).contains(&secret));
    let no_value = run(&["auth", "e", "demo-key"], "");
    assert_eq!(no_value.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&no_value.stderr).contains("DEMO_API_KEY"));
    let _ = parley::core::secrets::forget(&config.display().to_string(), "e").await;
}

#[test]
fn parley_cli_auth_runs_a_terminal_method_on_its_own_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    let mut a = agent("t", "auth-terminal");
    a["cwd"] = json!(dir.path());
    std::fs::write(&config, config_text(&[a], 4, "0")).expect("write");
    let mut child = std::process::Command::new(cli())
        .args(["auth", "t", "demo-terminal", "--config"])
        .arg(&config)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("parley-cli");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"yes\n");
    }
    let out = child.wait_with_output().expect("output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Demo sign-in for Parley") && text.contains("Signed in."),
        "{text}"
    );
    assert!(dir.path().join(".parley-demo-signed-in").exists());
}

/// A real agent installed by build-aux/install-test-agents.sh, with a
/// fresh HOME, or `None` (the test then skips, saying why).
pub(crate) fn real_agent(
    name: &str,
    dir: &str,
    bin: &str,
    args: &[&str],
    home: &std::path::Path,
) -> Option<serde_json::Value> {
    let Some(path) = std::env::var("PARLEY_TEST_AGENTS")
        .ok()
        .map(|c| {
            std::path::Path::new(&c)
                .join(dir)
                .join("node_modules/.bin")
                .join(bin)
        })
        .filter(|p| p.exists())
    else {
        eprintln!("SKIPPED: {bin} is not installed (build-aux/install-test-agents.sh; no npm registry?)");
        return None;
    };
    Some(
        json!({"name": name, "command": path.display().to_string(), "args": args,
        "cwd": home.display().to_string(),
        "env": {"HOME": home.display().to_string(), "GEMINI_API_KEY": "", "GOOGLE_API_KEY": "",
                "GOOGLE_GENAI_USE_VERTEXAI": "", "GOOGLE_CLOUD_PROJECT": "",
                "CODEX_API_KEY": "", "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "",
                "CODEX_HOME": home.join(".codex").display().to_string()}}),
    )
}

/// A Node.js agent's first start takes seconds: the spec's timings.
pub(crate) fn real(agents: &[serde_json::Value]) -> Harness {
    Harness::with(
        &config_text(agents, 4, "0"),
        parley::core::supervisor::Timings::default(),
        false,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_with_a_fake_key_gets_past_authentication_to_a_network_error() {
    let home = tempfile::tempdir().expect("tempdir");
    let Some(codex) = real_agent("codex", "codex", "codex-acp", &[], home.path()) else {
        return;
    };
    std::fs::create_dir_all(home.path().join(".codex")).expect("CODEX_HOME");
    if !keyring_or_skip("codex_with_a_fake_key").await {
        return;
    }
    let mut h = real(&[codex]);
    h.core.chat.send("codex", "hello").expect("send");
    let status = h.wait_needs_sign_in("codex", true).await;
    h.wait_idle("codex").await;
    // codex-acp 2's key method: `api-key`, `_meta: {"api-key": {"provider":
    // "openai"}}`, the key in OPENAI_API_KEY.
    let method = status
        .methods
        .iter()
        .find(|m| matches!(&m.kind, AuthKind::Agent { keys } if keys.len() == 1 && keys[0].name == "OPENAI_API_KEY"))
        .expect("the OPENAI_API_KEY method");
    h.core
        .auth
        .sign_in(
            "codex",
            &method.id,
            vec![("OPENAI_API_KEY".into(), Secret::new("sk-fake-parley".into()))],
        )
        .await
        .expect("past authentication");
    // No network here: the answer shows the error that says so, not a
    // sign-in. (codex 0.166 then retries its own provider for minutes,
    // first over WebSockets then HTTPS: the turn is cancelled.)
    let network_error = |e: &Event| {
        matches!(e, Event::MessageDelta(d) if d.agent == "codex" && {
            let said = serde_json::to_string(d).unwrap_or_default();
            said.contains("stream disconnected") || said.contains("error sending request")
        })
    };
    h.wait_for("codex's network error", Duration::from_secs(60), network_error)
        .await;
    assert!(!h.core.auth.status("codex").expect("status").needs_sign_in);
    h.core.chat.cancel("codex").expect("cancel");
    h.turn_ends("codex").await;
    let _ = h.core.auth.forget_keys("codex").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_with_a_fake_key_gets_past_its_missing_key_message() {
    let home = tempfile::tempdir().expect("tempdir");
    let Some(gemini) = real_agent("gemini", "gemini", "gemini", &["--acp"], home.path()) else {
        return;
    };
    if !keyring_or_skip("gemini_with_a_fake_key").await {
        return;
    }
    let mut h = real(&[gemini]);
    h.core.chat.send("gemini", "hello").expect("send");
    let status = h.wait_needs_sign_in("gemini", true).await;
    h.wait_idle("gemini").await;
    assert!(
        status.message.as_deref().unwrap_or_default().contains("API key"),
        "{status:?}"
    );
    let method = status
        .methods
        .iter()
        .find(|m| m.id == "gemini-api-key")
        .expect("gemini-api-key");
    assert_eq!(method.keys()[0].name, "GEMINI_API_KEY");
    h.core
        .auth
        .sign_in(
            "gemini",
            "gemini-api-key",
            vec![("GEMINI_API_KEY".into(), Secret::new("fake-parley-key".into()))],
        )
        .await
        .expect("past the missing key");
    // Past it: the session opened and the answer began (without a network
    // gemini then retries for minutes, so the turn is cancelled).
    h.wait_for(
        "gemini's answer",
        Duration::from_secs(60),
        |e| matches!(e, Event::MessageUpdated(u) if u.agent == "gemini" && u.message.role == Role::Agent),
    )
    .await;
    assert!(!h.core.auth.status("gemini").expect("status").needs_sign_in);
    // (Its retries do not heed session/cancel: the agent is stopped.)
    h.core.agents.stop("gemini").await.expect("stop");
    h.turn_ends("gemini").await;
    let conv = h.core.chat.conversation("gemini").expect("conversation");
    let all = serde_json::to_string(&conv).unwrap_or_default();
    assert!(!all.contains("missing or not configured"), "{all}");
    let _ = h.core.auth.forget_keys("gemini").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn claudes_terminal_login_starts_and_shows_its_first_line() {
    let home = tempfile::tempdir().expect("tempdir");
    let Some(claude) = real_agent("claude", "claude", "claude-agent-acp", &[], home.path()) else {
        return;
    };
    let h = real(&[claude]);
    let status = h.core.auth.methods("claude").await.expect("methods");
    let method = status
        .methods
        .iter()
        .find(|m| m.id == "claude-ai-login")
        .expect("claude-ai-login");
    assert!(
        matches!(&method.kind, AuthKind::Terminal { command: None, args, .. } if args.contains(&"login".to_owned()))
    );
    let mut login = h
        .core
        .auth
        .login_terminal("claude", &method.id)
        .await
        .expect("terminal");
    let mut tty = std::fs::File::from(login.take_terminal().expect("its side"));
    let first = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Its first line of text (after any escape sequences).
        while Instant::now() < deadline {
            match tty.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
            let text = String::from_utf8_lossy(&seen);
            if text
                .lines()
                .any(|l| l.chars().filter(|c| c.is_alphabetic()).count() > 5)
            {
                break;
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    })
    .await
    .expect("join");
    eprintln!("claude's login said: {first:?}");
    assert!(
        first.chars().filter(|c| c.is_alphabetic()).count() > 5,
        "{first:?}"
    );
    login.end().await;
}
