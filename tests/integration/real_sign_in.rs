//! Signing in to today's agents as they ask for it: claude-agent-acp 0.101
//! says who is signed in (`_auth/status_update`), and its "Custom model
//! gateway" method takes a base URL and headers from Parley's gateway form.

use std::time::Duration;

use parley::core::types::gateway::Gateway;
use serde_json::json;

use crate::model_api::{ModelApi, Reply};
use crate::real_agents::*;

/// claude with no key and no base URL of its own: it can only be signed
/// in to through the gateway.
fn claude_signed_out(p: &Project, api: &ModelApi) -> Option<serde_json::Value> {
    // real_claude's entry, without its key and base URL (blanked, as
    // `entry` blanks every provider variable of the machine).
    let mut agent = crate::real_claude::claude(p, api)?;
    agent["env"]["ANTHROPIC_BASE_URL"] = json!("");
    agent["env"]["ANTHROPIC_API_KEY"] = json!("");
    // It would start in `auto` (asks nothing, and asks a classifier model
    // first): every new session starts in `default`.
    agent["startMode"] = json!("default");
    Some(agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_says_it_is_signed_out_then_signs_in_through_a_gateway() {
    let p = Project::new();
    let api = ModelApi::start(vec![Reply::text("Hello through the gateway.")]);
    let Some(agent) = claude_signed_out(&p, &api) else {
        return;
    };
    if !crate::auth::keyring_or_skip("claude_gateway").await {
        return;
    }
    let mut h = parley(&[agent], json!({}));
    // Started, no message written: claude's own "Not logged in" is heard
    // and the agent needs a sign-in already.
    let methods = h.core.auth.methods("claude").await.expect("started");
    let gateway = methods
        .methods
        .iter()
        .find(|m| m.id == "gateway")
        .expect("claude's gateway method");
    assert_eq!(
        gateway.kind,
        parley::core::auth::AuthKind::Gateway {
            protocol: "anthropic".into()
        }
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let s = h.core.auth.status("claude").expect("status");
        if s.account.as_ref().is_some_and(|a| a.kind == "none") {
            assert!(s.needs_sign_in, "{s:?}");
            assert_eq!(
                s.account.as_ref().map(|a| a.label.as_str()),
                Some("Not logged in")
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "claude never said who is signed in: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let g = Gateway::from_args(
        "gateway",
        &json!({"baseUrl": api.url(), "headers": {"x-gateway-key": KEY}}),
    )
    .expect("gateway");
    h.core
        .auth
        .sign_in_gateway("claude", "gateway", g)
        .await
        .expect("signed in");
    let s = h.core.auth.status("claude").expect("status");
    assert!(s.gateway_saved && !s.needs_sign_in, "{s:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !h
        .core
        .auth
        .status("claude")
        .is_ok_and(|s| s.account.is_some_and(|a| a.kind == "gateway"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "claude never said it uses the gateway"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    h.core.chat.send("claude", "hello").expect("send");
    h.answered("claude").await;
    assert!(
        h.answer("claude").text().contains("Hello through the gateway."),
        "{:#?}\n{}",
        h.answer("claude"),
        h.log_of("claude")
    );
    assert!(
        api.main_requests()
            .iter()
            .any(|r| r.header("x-gateway-key") == Some(KEY)),
        "the gateway's header never reached the model's API"
    );
    // What the turn cost, from the prompt's answer (`usage`, else
    // `_meta.quota`), in the conversation's usage.
    let usage = h.core.chat.conversation("claude").expect("conversation").usage;
    let turn = usage.turn.expect("the turn's tokens");
    assert!(turn.total_tokens > 0 && turn.output_tokens > 0, "{usage:?}");
    assert_eq!(
        usage.tokens,
        Some(turn),
        "one turn: the session's sum is the turn's"
    );
    // startMode: the session started in `default`, not claude's `auto`.
    let mode = h
        .core
        .chat
        .options("claude")
        .into_iter()
        .find(|o| o.category == "mode")
        .map(|o| o.current_text());
    assert_eq!(mode.as_deref(), Some("default"));
    // claude began the session in `auto`, which asks nothing; startMode
    // replaced it at once, so the conversation does not say it.
    let conv = h.core.chat.conversation("claude").expect("conversation");
    assert!(
        !conv
            .messages
            .iter()
            .any(|m| m.text().contains("without asking you")),
        "{:#?}",
        conv.messages
    );
    key_not_in(h.dir.path());
    assert!(!h.log_of("claude").contains(KEY), "the key is in the agent's log");
    let _ = h.core.auth.forget_keys("claude").await;
}
