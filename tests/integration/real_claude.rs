//! claude-agent-acp (Claude Code), doing real turns through Parley against
//! the model-API stand-in (the Anthropic Messages API).

use std::time::Duration;

use parley::core::events::Event;
use parley::core::types::message::{wire_name, Part};
use serde_json::json;

use crate::model_api::{ModelApi, Reply};
use crate::real_agents::*;

pub(crate) fn claude(p: &Project, api: &ModelApi) -> Option<serde_json::Value> {
    let bin = installed("claude", "claude-agent-acp")?;
    let env = [
        ("ANTHROPIC_BASE_URL", api.url()),
        ("ANTHROPIC_API_KEY", KEY.to_owned()),
        // Nothing but the model's API: no telemetry, updates or titles,
        // and anything else that tried would reach the stand-in.
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("DISABLE_ERROR_REPORTING", "1".to_owned()),
        ("HTTPS_PROXY", api.url()),
        ("HTTP_PROXY", api.url()),
        ("NO_PROXY", "127.0.0.1,localhost".to_owned()),
        // One attempt per request: its retries take minutes.
        ("CLAUDE_CODE_MAX_RETRIES", "0".to_owned()),
        // As root with IS_SANDBOX set (as on these machines) Claude Code
        // exits with code 1 at the session's start, saying nothing more.
        ("IS_SANDBOX", String::new()),
        // The task list (TaskCreate, shown as a plan) is only on for the
        // older models; the default model of 0.101 (Opus 5.5) has none.
        ("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1".to_owned()),
    ];
    Some(entry("claude", &bin, &[], p, &env))
}

fn edit_script(p: &Project, old: &str, new: &str) -> Vec<Reply> {
    let notes = p.notes().display().to_string();
    vec![
        Reply::tool("Read", json!({"file_path": notes})),
        Reply::tool(
            "Edit",
            json!({"file_path": notes, "old_string": old, "new_string": new, "replace_all": false}),
        ),
        Reply::tool("Bash", json!({"command": "echo hi", "description": "Print hi"})),
        Reply::text("## Done\n\nI edited `notes.txt`:\n\n- changed **the line**\n- ran `echo hi`\n"),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_edits_asks_runs_plans_cancels_fails_clearly_and_resumes() {
    let p = Project::new();
    let api = ModelApi::start(edit_script(&p, "line two", "line two (edited)"));
    let Some(agent) = claude(&p, &api) else { return };
    let mut h = parley(&[agent], json!({"turnSilenceWarning": "2s"}));

    // 1. A full turn, the edit allowed. (Newer releases start in `auto`,
    // which asks for nothing: the mode that asks is chosen first.)
    h.core
        .chat
        .set_option("claude", "mode", json!("default"))
        .await
        .expect("the default mode");
    h.core.chat.send("claude", "Edit notes.txt").expect("send");
    let asked = h.answer_next("allow_once").await;
    assert_eq!(asked.tool_call.diffs.len(), 1, "{asked:#?}");
    h.turn_ends("claude").await;
    let m = h.answer("claude");
    assert_eq!(stop(&m), "end_turn", "{m:#?}");
    assert_eq!(p.notes_text(), "line one\nline two (edited)\nline three\n");
    none_open(&m);
    assert_eq!(tool(&m, "read").title, "Read notes.txt");
    // A string output is shown as itself, not as a JSON string.
    let edit = tool(&m, "edit");
    assert!(
        edit.output.starts_with("The file ") && edit.output.contains("has been updated successfully"),
        "{edit:#?}"
    );
    // Parley offers `terminal_output`: the command's output streams as a
    // live terminal, not as a text block after the fact.
    let bash = tool(&m, "execute");
    assert_eq!(bash.title, "echo hi");
    assert_eq!(bash.terminals.len(), 1, "{bash:#?}");
    let terminal = bash.terminals[0].clone();
    assert!(
        h.seen.iter().any(
            |e| matches!(e, Event::TerminalOutput(o) if o.terminal_id == terminal && o.data.contains("hi"))
        ),
        "no live output for {terminal}"
    );
    assert!(m.text().contains("## Done"), "{m:#?}");
    // claude sends empty chunks: none became a delta.
    assert!(
        !h.seen.iter().any(
            |e| matches!(e, Event::MessageDelta(d) if d.agent == "claude" && d.text.as_deref() == Some(""))
        ),
        "an empty message:delta"
    );
    // Usage with its cost.
    assert!(h
        .seen
        .iter()
        .any(|e| matches!(e, Event::UsageChanged(u) if u.agent == "claude" && u.usage.used > 0)));
    // What the agent sent the model: the file, after the read.
    let main = api.main_requests();
    assert!(
        main[1].body.to_string().contains("line two"),
        "the read's result is not sent back"
    );
    assert_eq!(main[0].header("x-api-key"), Some(KEY));

    // 2. The same, rejected: the file is unchanged, no call stays open.
    api.set_script(vec![
        Reply::tool(
            "Edit",
            json!({"file_path": p.notes().display().to_string(), "old_string": "line one",
                "new_string": "line 1", "replace_all": false}),
        ),
        Reply::text("Not changed, as you asked."),
    ]);
    h.core.chat.send("claude", "Edit it again").expect("send");
    h.answer_next("reject_once").await;
    h.turn_ends("claude").await;
    let m = h.answer("claude");
    assert_eq!(stop(&m), "end_turn", "{m:#?}");
    assert_eq!(p.notes_text(), "line one\nline two (edited)\nline three\n");
    none_open(&m);
    assert_eq!(wire_name(&tool(&m, "edit").status), "failed");

    // 3. Cancel in the middle of a long answer.
    cancel_a_long_answer(&mut h, &api, "claude").await;

    // 4. Plan mode: the mode picker follows the agent, a plan is shown,
    // and leaving plan mode is a permission with claude's own options.
    h.core
        .chat
        .set_option("claude", "mode", json!("plan"))
        .await
        .expect("plan mode");
    let mode = |h: &crate::common::Harness| {
        h.core
            .chat
            .options("claude")
            .iter()
            .find(|o| o.id == "mode")
            .map(|o| o.current_text())
    };
    assert_eq!(mode(&h).as_deref(), Some("plan"));
    api.set_script(vec![
        Reply::tool(
            "TaskCreate",
            json!({"subject": "Edit notes", "description": "Change line two", "activeForm": "Editing notes"}),
        ),
        Reply::tool(
            "ExitPlanMode",
            json!({"plan": "# Plan\n\n1. Read notes.txt\n2. Edit line two\n"}),
        ),
        Reply::text("Plan approved."),
    ]);
    h.core.chat.send("claude", "Plan the change").expect("send");
    let asked = h.next_permission_within(Duration::from_secs(60)).await;
    let manual = asked
        .options
        .iter()
        .find(|o| o.name.contains("manually approve edits"))
        .unwrap_or_else(|| panic!("no 'manually approve' option: {asked:#?}"));
    h.core
        .chat
        .answer_permission(&asked.id, &manual.option_id)
        .expect("answer");
    h.turn_ends("claude").await;
    let m = h.answer("claude");
    assert_eq!(stop(&m), "end_turn", "{m:#?}");
    assert!(
        m.parts.iter().any(
            |p| matches!(p, Part::Plan { entries, .. } if entries.iter().any(|e| e.content == "Edit notes"))
        ),
        "{m:#?}"
    );
    assert_eq!(
        mode(&h).as_deref(),
        Some("default"),
        "current_mode_update was not followed"
    );

    // 5. A broken provider: each ends in claude's own error, shown, and
    // the conversation goes on.
    api.set_script(vec![Reply::text("Back again.")]);
    for (reply, words) in [
        (Reply::status(500), "API Error: 500"),
        (
            Reply::Status {
                code: 429,
                retry_after: Some(1),
            },
            "429",
        ),
    ] {
        api.next(reply);
        h.core.chat.send("claude", "Hello?").expect("send");
        h.turn_ends("claude").await;
        let m = h.answer("claude");
        let all = format!("{} {}", m.text(), m.error.clone().unwrap_or_default());
        assert!(all.contains(words), "expected {words:?} in {m:#?}");
    }
    // A cut stream: claude asks again without streaming, and answers.
    api.next(Reply::Cut);
    h.core.chat.send("claude", "Hello again?").expect("send");
    h.turn_ends("claude").await;
    assert!(h.answer("claude").text().contains("Back again."));
    a_silent_provider_is_seen_and_cancelled(&mut h, &api, "claude").await;

    // 6. After a restart: claude resumes its session, and the model hears
    // the whole conversation.
    let (h, after) = after_a_restart(h, &api, "claude").await;
    heard_the_first_turn("claude", &h, &after);
}

/// Issue 43 with claude-agent-acp: a fork of the whole conversation is its
/// `session/fork` (the model hears the first turn in the fork), and a
/// message sent during a turn (`Steer`, its `promptQueueing`) reaches the
/// model within that turn.
#[tokio::test(flavor = "multi_thread")]
async fn claude_forks_its_session_and_takes_a_message_mid_turn() {
    let p = Project::new();
    let api = ModelApi::start(vec![Reply::text("Noted: apricot.")]);
    let Some(agent) = claude(&p, &api) else { return };
    let mut h = parley(&[agent], json!({}));
    h.core
        .chat
        .send("claude", "Remember the word apricot.")
        .expect("send");
    h.answered("claude").await;
    assert!(
        h.core.chat.can_steer("claude"),
        "claude-agent-acp advertises promptQueueing"
    );

    api.set_script(vec![Reply::text("It was apricot.")]);
    let before = api.main_requests().len();
    let forked = h
        .core
        .chat
        .fork("claude", None, Some("Which word was it?"))
        .await
        .expect("fork");
    assert_eq!(forked.mode, "session", "claude-agent-acp offers session/fork");
    h.answered("claude").await;
    assert!(
        h.answer("claude").text().contains("It was apricot."),
        "{:#?}",
        h.answer("claude")
    );
    let after = api.main_requests().split_off(before);
    let last = after.last().expect("a request in the fork");
    assert!(
        last.body.to_string().contains("Remember the word apricot."),
        "the fork lost the first turn: {}",
        last.body
    );

    // A slow answer, steered while it streams.
    api.set_script(vec![
        Reply::Text {
            text: "Writing the function, one careful line at a time.".into(),
            thought: String::new(),
            chunk: 3,
            delay: Duration::from_millis(150),
        },
        Reply::text("Tabs it is."),
    ]);
    let before = api.main_requests().len();
    h.core.chat.send("claude", "Write a function.").expect("send");
    assert!(
        api.wait_main(before + 1, Duration::from_secs(60)),
        "the turn's request"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    h.core.chat.steer("claude", "Use tabs.").expect("steer");
    h.answered("claude").await;
    let said: Vec<String> = api
        .main_requests()
        .split_off(before)
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        said.iter().any(|b| b.contains("Use tabs.")),
        "the steering message never reached the model: {said:?}\n{}",
        h.log_of("claude")
    );
    let conv = h.core.chat.conversation("claude").expect("conversation");
    assert!(
        conv.messages.iter().any(|m| m.text() == "Use tabs."),
        "the steering message is in the conversation"
    );
    assert!(
        conv.messages.iter().all(|m| m.done),
        "every message of the turn ended: {:#?}",
        conv.messages
    );
}

/// claude-agent-acp 0.101 delegates (its Agent tool, with the `subagents`
/// capability Parley advertises): the helper is a thread of its own, its
/// edit asks on its own session and says which helper asks, its text is
/// never the parent's, and its report is a note between sessions.
#[tokio::test(flavor = "multi_thread")]
async fn claude_delegates_to_a_subagent_that_is_a_thread_of_its_own() {
    let p = Project::new();
    let notes = p.notes().display().to_string();
    // The parent's model asks for a helper (waiting for it); the helper's
    // own requests (its prompt is in them) read, edit and report; then the
    // parent answers. In the order they come (the script's steps count
    // each conversation's tool results, and two conversations share it).
    let api = ModelApi::start(vec![Reply::text("(nothing more was scripted)")]);
    for reply in [
        Reply::tool(
            "Agent",
            json!({"description": "Add line four", "prompt": "Add a line four to notes.txt.",
                "subagent_type": "general-purpose", "run_in_background": false}),
        ),
        Reply::tool("Read", json!({"file_path": notes})),
        Reply::tool(
            "Edit",
            json!({"file_path": notes, "old_string": "line three", "new_string": "line three\nline four",
                "replace_all": false}),
        ),
        Reply::text("Added line four to notes.txt."),
        Reply::text("My helper added line four."),
    ] {
        api.next(reply);
    }
    let Some(agent) = claude(&p, &api) else { return };
    let mut h = parley(&[agent], json!({}));
    h.core
        .chat
        .set_option("claude", "mode", json!("default"))
        .await
        .expect("the default mode");
    h.core
        .chat
        .send("claude", "Have a helper add line four")
        .expect("send");
    let asked = h.answer_next("allow_once").await;
    let asker = asked.subagent.clone().unwrap_or_else(|| {
        panic!(
            "the helper's request does not say which helper asks: {asked:#?}\n{}",
            h.log_of("claude")
        )
    });
    assert_eq!(asker.title, "Add line four", "{asked:#?}");
    h.turn_ends("claude").await;
    assert_eq!(p.notes_text(), "line one\nline two\nline three\nline four\n");
    let conv = h.core.chat.conversation("claude").expect("conversation");
    assert_eq!(conv.subagents.len(), 1, "{:#?}", conv.subagents);
    let helper = &conv.subagents[0];
    assert_eq!(helper.subagent.session_id, asker.session_id);
    assert_eq!(
        wire_name(&helper.subagent.status),
        "done",
        "{:#?}\n{}",
        helper.subagent,
        h.log_of("claude")
    );
    let helper_parts: Vec<&Part> = helper.messages.iter().flat_map(|m| m.parts.iter()).collect();
    assert!(
        helper_parts
            .iter()
            .any(|p| matches!(p, Part::Tool(t) if wire_name(&t.kind) == "edit")),
        "the helper's edit is in its thread: {helper_parts:#?}"
    );
    let m = h.answer("claude");
    assert!(m.text().contains("My helper added line four."), "{m:#?}");
    assert!(
        !m.text().contains("Added line four to notes.txt."),
        "the helper's words are not the parent's: {m:#?}"
    );
    assert!(
        m.parts
            .iter()
            .any(|p| matches!(p, Part::Subagent { session_id } if *session_id == asker.session_id)),
        "the parent shows where the helper started: {m:#?}"
    );
    // The report: a note from the helper, its harness tags taken out.
    let reports: Vec<&str> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::SessionNote(n) if n.sender.as_deref() == Some(asker.session_id.as_str()) => {
                Some(n.text.as_str())
            }
            _ => None,
        })
        .collect();
    assert!(
        reports
            .iter()
            .any(|r| r.contains("Added line four") && !r.contains("<tools-used")),
        "{reports:?}\n{m:#?}"
    );
}
