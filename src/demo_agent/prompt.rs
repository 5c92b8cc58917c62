//! `session/prompt`: which prompt keyword (the prompt's first word, a slash
//! command's too) goes to which scenario, with its words parsed as `--help`
//! tells them; any other prompt gets the normal answer (`showcase`). Ends
//! the turn with the scenario's stop reason, or `cancelled`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{json, Value};

use super::state::Agent;
use super::{
    controls, disk, elicitation, fs_boundary, help, hostile_text, permissions, session_updates, sessions,
    showcase, steering, subagents, terminals, timeline, turns, unknown_messages,
};

fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

/// Answers one prompt (request `id`), in a task of its own.
pub(super) async fn answer(agent: Arc<Agent>, id: Value, params: Value) {
    if let Some(blocks) = params.get("prompt").and_then(Value::as_array) {
        controls::record_blocks(&agent, blocks);
    }
    let req: acp::PromptRequest = match serde_json::from_value(params) {
        Ok(r) => r,
        Err(e) => return agent.respond_error(&id, -32602, &format!("invalid session/prompt params: {e}")),
    };
    let sid = req.session_id.to_string();
    if agent.mode("auth-agent").is_some() && !agent.signed_in.load(Ordering::Relaxed) {
        return agent.respond_error(&id, -32000, "Authentication required");
    }
    let flag = agent
        .cancelled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(sid.clone())
        .or_insert_with(|| Arc::new(AtomicBool::new(false)))
        .clone();
    let text: String = req
        .prompt
        .iter()
        .filter_map(|b| match b {
            acp::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ");
    if steering::take_in(&agent, &sid, &id, &text).await {
        return;
    }
    // A new turn (not one steered into the running one, which a Cancel
    // may have stopped) starts uncancelled.
    flag.store(false, Ordering::Relaxed);
    sessions::start_turn(&agent, &sid);
    steering::begin(&agent, &sid);
    // A prompt that carries the earlier turns as context (a forked
    // conversation's first): the keyword is in what follows the last rule.
    let asked = text
        .rsplit_once("\n---\n")
        .map_or(text.as_str(), |(_, after)| after);
    let w = words(asked);
    let first = w.first().copied().unwrap_or("").trim_start_matches('/');
    let num = |i: usize, default: u64| w.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(default);
    let word = |i: usize, default: &'static str| w.get(i).copied().unwrap_or(default);
    let rest = |i: usize| w.get(i..).map(|r| r.join(" ")).unwrap_or_default();
    let stop = match first {
        "flood" => turns::flood(&agent, &sid, num(1, 2000), num(2, 40) as usize),
        "flood-file" => turns::flood_file(&agent, &sid, word(1, ""), num(2, 1000)),
        "slow" => turns::slow(&agent, &sid, num(1, 20), num(2, 50)).await,
        "stop" => turns::stop(&agent, &sid, word(1, "end_turn")),
        "wait" => turns::wait(&agent, &sid).await,
        "crash" => turns::crash(&agent, &sid).await,
        "ask" => {
            let title = w.get(3..).unwrap_or_default();
            permissions::ask(&agent, &sid, word(1, "none"), word(2, "-"), title).await
        }
        "silent" => turns::silent(&agent, &sid, num(1, 2)).await,
        "ignore-cancel" => turns::ignore_cancel().await,
        "elicit-form" => elicitation::form(&agent, &sid).await,
        "elicit-url" => elicitation::url(&agent, &sid, w.get(1).copied()).await,
        "permission" => permissions::repeated(&agent, &sid, num(1, 1)).await,
        "tool" => session_updates::tool(&agent, &sid, word(1, "tool-1"), &rest(2)),
        "permission-hostile" => permissions::hostile(&agent, &sid).await,
        "permission-elsewhere" => permissions::elsewhere(&agent, &sid).await,
        "unknown-request" => unknown_messages::request(&agent, &sid).await,
        "fs-no-read" => fs_boundary::no_read(&agent, &sid, num(1, 40), word(2, "")).await,
        "fs-race" | "fs-fifo" | "fs-read-len" => {
            let answer = fs_boundary::run(&agent, &sid, first, &w).await;
            agent.chunk(&sid, "agent_message_chunk", &answer);
            "end_turn".to_string()
        }
        "fs-read" => fs_boundary::read(&agent, &sid, word(1, "")).await,
        // `disk-edit` in one word of letters (what a keyboard test types).
        "changefiles" => {
            agent.chunk(&sid, "agent_thought_chunk", "Deciding what to change…");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            let said = disk::edit(
                &agent,
                &sid,
                &["append:src/main.rs=//\\sedited\\sby\\sthe\\sdemo\\sagent\\n"],
            );
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "disk-edit" => {
            // An agent thinks before it acts (a model's answer comes first).
            agent.chunk(&sid, "agent_thought_chunk", "Deciding what to change…");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            let said = disk::edit(&agent, &sid, w.get(1..).unwrap_or_default());
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        // The same, the moment the prompt arrives (no thinking first).
        "disk-edit-now" => {
            let said = disk::edit(&agent, &sid, w.get(1..).unwrap_or_default());
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "fs-write" => fs_boundary::write(&agent, &sid, word(1, ""), &rest(2)).await,
        "received" => {
            agent.chunk(&sid, "agent_message_chunk", &controls::received(&agent));
            "end_turn".to_string()
        }
        "session-info" => session_updates::title(&agent, &sid, &rest(1)),
        "cost" => {
            let amount = w.get(1).and_then(|a| a.parse::<f64>().ok()).unwrap_or(0.5);
            session_updates::cost(&agent, &sid, amount)
        }
        "switch-mode" => session_updates::switch_mode(&agent, &sid, word(1, "code")),
        "usage" => session_updates::usage(&agent, &sid, num(1, 1000), num(2, 0)),
        "late" => {
            steering::end(&agent, &sid);
            return turns::late(&agent, &sid, &id, &text);
        }
        "unknown-update" => unknown_messages::update(&agent, &sid),
        "remembered" => {
            let said = sessions::remembered(&agent, &sid).join(" / ");
            agent.chunk(&sid, "agent_message_chunk", &format!("remembered: {said}"));
            "end_turn".to_string()
        }
        "timeline" => timeline::timeline(&agent, &sid).await,
        "stderr" => turns::stderr(&agent, &sid, num(1, 10)),
        "error" => {
            steering::end(&agent, &sid);
            return turns::error(&agent, &id);
        }
        "broken-chunks" => {
            hostile_text::send_broken(&agent, &sid);
            "end_turn".to_string()
        }
        "text-fixture" => {
            let name = w.get(1).copied().unwrap_or_default();
            let pieces = w.get(2) == Some(&"pieces");
            if !hostile_text::send(&agent, &sid, name, pieces).await {
                agent.chunk(
                    &sid,
                    "agent_message_chunk",
                    &format!("no fixture {name:?}; there are {:?}", hostile_text::NAMES),
                );
            }
            "end_turn".to_string()
        }
        "terminals" => {
            let found = terminals::check_all(&agent, &sid).await;
            agent.chunk(&sid, "agent_message_chunk", &found);
            "end_turn".to_string()
        }
        "terminal-colors" => {
            let said = terminals::colors(&agent, &sid).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "terminal-flood" => {
            let said = terminals::flood(&agent, &sid, num(1, 10_000_000)).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "terminal-race" => {
            let said = terminals::race(&agent, &sid).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "terminal-run" => {
            let said = terminals::run(&agent, &sid, &rest(1)).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "terminal-orphan" => {
            let said = terminals::orphan(&agent, &sid, w.get(1).copied().unwrap_or("")).await;
            agent.chunk(&sid, "agent_message_chunk", &said);
            "end_turn".to_string()
        }
        "echo" => turns::echo(&agent, &sid, &rest(1)),
        "help" => help::answer(&agent, &sid).await,
        "plan" => showcase::plan(&agent, &sid).await,
        "subagents" => subagents::run(&agent, &sid, num(1, 3), false).await,
        "subagents-flood" => subagents::flood(&agent, &sid, num(1, 5), num(2, 2000), num(3, 40) as usize),
        "subagents-quiet" => subagents::run(&agent, &sid, num(1, 3), true).await,
        _ => showcase::demo(&agent, &sid, &text).await,
    };
    let stop = if agent.is_cancelled(&sid) {
        "cancelled".to_string()
    } else {
        stop
    };
    steering::say_steered(&agent, &sid);
    steering::end(&agent, &sid);
    sessions::end_turn(&agent, &sid, &text);
    if agent.mode("tokens").is_some() {
        // What the turn cost, as opencode and kilo tell it (`usage`), and
        // the same figures in `_meta.quota`, as claude-agent-acp sends both.
        let input = 1000 + text.len() as u64;
        let usage = json!({"inputTokens": input, "outputTokens": 250, "totalTokens": input + 250});
        agent.respond(
            &id,
            json!({"stopReason": stop, "usage": usage, "_meta": {"quota": {"token_count": usage}}}),
        );
    } else {
        agent.respond(&id, json!({"stopReason": stop}));
    }
}
