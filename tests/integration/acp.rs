//! The ACP connection's rules for untrusted input, and the fs capability,
//! against the demo agent.

use std::time::Duration;

use parley::core::events::Event;
use parley::core::types::message::Role;
use serde_json::json;

use crate::common::*;

fn answer(h: &Harness) -> String {
    let conv = h.core.chat.conversation("a").expect("conv");
    conv.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Agent)
        .map(|m| m.text())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_methods_get_32601_and_unknown_updates_are_logged() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "unknown-request").expect("send");
    h.wait_idle("a").await;
    assert!(answer(&h).contains("-32601"), "{}", answer(&h));
    h.core.chat.send("a", "unknown-update").expect("send");
    h.wait_idle("a").await;
    assert_eq!(answer(&h), "sent unknown things", "the turn goes on");
    let logs = h.core.agents.logs("a").expect("logs");
    assert!(
        logs.iter().any(|l| l.contains("telepathy")),
        "unknown update kinds are logged: {logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.contains("unknown content block type hologram")),
        "{logs:?}"
    );
    assert!(
        !logs.iter().any(|l| l.contains("_demo/extension")),
        "extension messages are ignored"
    );
}

/// Chunks that are JSON but for a surrogate pair split between them,
/// invalid UTF-8 or a byte-order mark keep their text, with U+FFFD where a
/// character could not be read (before, each such chunk was dropped).
#[tokio::test(flavor = "multi_thread")]
async fn chunks_with_split_surrogates_bad_utf8_or_a_bom_keep_their_text() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "broken-chunks").expect("send");
    h.wait_idle("a").await;
    assert_eq!(
        answer(&h),
        "split:[\u{FFFD}\u{FFFD}] pair:[😀] bad:[\u{FFFD}\u{FFFD}] bom:[ok]"
    );
    let logs = h.core.agents.logs("a").expect("logs");
    assert!(!logs.iter().any(|l| l.contains("skipped a line")), "{logs:?}");
}

/// A permission request for a session that is not the conversation's is
/// refused with an error and never shown (before, it was shown and answered
/// as part of the current turn).
#[tokio::test(flavor = "multi_thread")]
async fn a_permission_request_for_an_unknown_session_is_refused() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "permission-elsewhere").expect("send");
    h.wait_idle("a").await;
    let text = answer(&h);
    assert!(text.contains("unknown session sess-elsewhere"), "{text}");
    assert!(text.contains("-32602"), "{text}");
    assert!(
        !h.seen.iter().any(|e| matches!(e, Event::PermissionRequested(_))),
        "no permission was shown"
    );
    let logs = h.core.agents.logs("a").expect("logs");
    assert!(
        logs.iter().any(|l| l.contains("refused a permission request")),
        "{logs:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fs_reads_and_writes_stay_inside_the_agent_cwd() {
    let work = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("in.txt"), "inside text").expect("write");
    std::fs::write(outside.path().join("secret.txt"), "secret").expect("write");
    let a = json!({"name": "a", "command": demo(), "cwd": work.path().display().to_string()});
    let mut h = Harness::new(&[a]);
    let send = |h: &Harness, text: String| h.core.chat.send("a", &text).expect("send");

    send(&h, format!("fs-read {}/in.txt", work.path().display()));
    h.wait_idle("a").await;
    assert!(answer(&h).contains("inside text"), "{}", answer(&h));

    send(&h, format!("fs-read {}/secret.txt", outside.path().display()));
    h.wait_idle("a").await;
    assert!(
        answer(&h).contains("outside the agent's working directory"),
        "{}",
        answer(&h)
    );
    assert!(!answer(&h).contains("\"secret\""));

    send(
        &h,
        format!(
            "fs-read {}/../{}/secret.txt",
            work.path().display(),
            outside
                .path()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ),
    );
    h.wait_idle("a").await;
    assert!(answer(&h).contains("outside"), "{}", answer(&h));

    send(
        &h,
        format!("fs-write {}/new.txt written by the agent", work.path().display()),
    );
    h.wait_idle("a").await;
    assert_eq!(read(&work.path().join("new.txt")), "written by the agent");

    send(&h, format!("fs-write {}/evil.txt nope", outside.path().display()));
    h.wait_idle("a").await;
    assert!(!outside.path().join("evil.txt").exists());
    let logs = h.core.agents.logs("a").expect("logs");
    assert!(
        logs.iter().any(|l| l.contains("refused fs/write_text_file")),
        "{logs:?}"
    );
}

/// A second ACP agent nobody here wrote: the Python SDK's example agent,
/// installed from PyPI into a cache outside the repository.
#[tokio::test(flavor = "multi_thread")]
async fn a_full_turn_with_the_python_sdk_example_agent() {
    let Some(agent_cmd) = python_sdk_agent() else {
        eprintln!("SKIPPED: the agent-client-protocol Python SDK could not be installed here");
        return;
    };
    let a = json!({"name": "py", "command": agent_cmd.0, "args": agent_cmd.1});
    let mut h = Harness::new(&[a]);
    h.core.chat.send("py", "hello from parley").expect("send");
    h.wait_idle("py").await;
    let conv = h.core.chat.conversation("py").expect("conv");
    let m = conv
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Agent)
        .expect("an answer");
    assert_eq!(
        m.stop_reason
            .map(|r| parley::core::types::message::wire_name(&r))
            .as_deref(),
        Some("end_turn"),
        "{m:?}"
    );
    assert!(!m.parts.is_empty(), "{m:?}");
    assert!(h.seen.iter().any(|e| matches!(e, Event::MessageDelta(_))));
    let _ = Duration::ZERO;
}

/// `(python, [script])` for the SDK's example agent, from the cache that
/// `build-aux/install-test-agents.sh` fills.
fn python_sdk_agent() -> Option<(String, Vec<String>)> {
    let cache = std::env::var("PARLEY_TEST_AGENTS").ok()?;
    let venv = std::path::Path::new(&cache).join("python-sdk");
    let python = venv.join("bin/python3");
    let script = std::fs::read_to_string(venv.join("agent-script")).ok()?;
    python
        .exists()
        .then(|| (python.display().to_string(), vec![script.trim().to_owned()]))
}
