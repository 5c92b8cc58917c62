//! `parley-cli`: the headless front end over the same services as the
//! window. Its contract is `docs/parley-cli.md`.

use std::process::ExitCode;

use parley::core::events::{Event, EventReceiver};
use parley::core::services::Core;
use parley::i18n::gettext_f;
use serde_json::{json, Value};

mod auth;
mod common;
mod serve;

use common::*;

fn main() -> ExitCode {
    parley::core::supervisor::guardian::run_if_asked();
    parley::core::remote::helper::run_if_asked();
    parley::demo_agent::run_if_asked();
    parley::logging::init();
    parley::i18n::init(parley::i18n::LOCALEDIR);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let needs_files = !matches!(
        args.first().map(String::as_str),
        Some("validate" | "schema" | "--help" | "-h" | "help") | None
    );
    if needs_files {
        if let Err(why) = parley::core::config::store::check_home() {
            eprintln!("parley-cli: {why}");
            return ExitCode::FAILURE;
        }
    }
    match args.first().map(String::as_str) {
        Some("validate") => match args.get(1) {
            Some(file) => validate(file),
            None => usage(),
        },
        Some("schema") => {
            let text =
                serde_json::to_string_pretty(parley::core::config::validate::schema()).unwrap_or_default();
            println!("{text}");
            ExitCode::SUCCESS
        }
        Some("send") => send(&args[1..]),
        Some("serve") => serve::serve(&args[1..]),
        Some("auth") => auth::auth(&args[1..]),
        Some(command @ ("conversations" | "search" | "export")) => history(command, &args[1..]),
        Some("worktrees") => worktrees(&args[1..]),
        Some(command @ ("changes" | "undo")) => changes(command, &args[1..]),
        Some("registry") => registry(&args[1..]),
        Some("--help" | "-h" | "help") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => usage(),
    }
}

fn validate(file: &str) -> ExitCode {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{file}: {e}");
            return ExitCode::from(2);
        }
    };
    let v = parley::core::config::validate::validate_bytes(&bytes);
    for p in &v.problems {
        let kind = if p.warning { "warning" } else { "error" };
        println!("{file}:{}:{}: {kind}: {}", p.line, p.column, p.message);
    }
    if v.valid() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Sets `--mode`, `--model` and `--option` on the agent's session before
/// the message goes (opening the session first).
async fn apply_settings(core: &Core, agent: &str, settings: &[(String, String)]) -> Result<(), String> {
    use parley::core::types::options::{self as controls, OptionValue};
    if settings.is_empty() {
        return Ok(());
    }
    let mut options = core.chat.prepare(agent).await?;
    for (key, raw) in settings {
        let option = controls::find(&options, key)
            .ok_or_else(|| gettext_f("the agent offers no option {option}", &[("option", key)]))?;
        let value = match option.value {
            OptionValue::Boolean { .. } => match raw.as_str() {
                "true" | "on" | "yes" => Value::Bool(true),
                "false" | "off" | "no" => Value::Bool(false),
                _ => return Err(gettext_f("{option}: write true or false", &[("option", key)])),
            },
            OptionValue::Select { .. } => Value::String(raw.clone()),
        };
        // A change may change the list (a model's own effort levels).
        options = core.chat.set_option(agent, &option.id, value).await?;
    }
    Ok(())
}

fn send(args: &[String]) -> ExitCode {
    let Opts {
        rest,
        config,
        permission,
        settings,
        attach,
    } = match options(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("parley-cli: {e}");
            return ExitCode::from(2);
        }
    };
    let [agent, text] = rest.as_slice() else {
        return usage();
    };
    let rt = runtime();
    let code = rt.block_on(async move {
        let Some((core, rx)) = core(config, false) else {
            return 2;
        };
        say_if_not_kept(&core);
        let out = Out::new();
        let printer = tokio::spawn(print_until_idle(
            core.clone(),
            rx.clone(),
            out.clone(),
            agent.clone(),
            permission,
        ));
        if let Err(e) = apply_settings(&core, agent, &settings).await {
            eprintln!("parley-cli: {e}");
            core.shutdown().await;
            return 1;
        }
        let attachments = attach
            .into_iter()
            .map(parley::core::chat::AttachmentInput::File)
            .collect();
        if let Err(e) = core.chat.send_with(agent, text, attachments) {
            eprintln!("parley-cli: {e}");
            core.shutdown().await;
            return 1;
        }
        let _ = printer.await;
        core.shutdown().await;
        while let Ok(e) = rx.try_recv() {
            print_event(&out, &e, false);
        }
        out.flush();
        let conv = core.chat.conversation(agent).ok();
        let ended_well = conv
            .and_then(|c| {
                c.messages
                    .into_iter()
                    .rev()
                    .find(|m| m.role != parley::core::types::message::Role::User)
            })
            .is_some_and(|m| m.stop_reason == Some(agent_client_protocol_schema::v1::StopReason::EndTurn));
        if ended_well {
            0
        } else {
            1
        }
    });
    ExitCode::from(code)
}

/// `worktrees`: the conversations' worktrees Parley made, one JSON line
/// each. Starts no agent.
fn worktrees(args: &[String]) -> ExitCode {
    let Opts { rest, config, .. } = match options(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("parley-cli: {e}");
            return ExitCode::from(2);
        }
    };
    if !rest.is_empty() {
        return usage();
    }
    let rt = runtime();
    let code = rt.block_on(async move {
        let Some((core, _rx)) = core(config, false) else {
            return 2;
        };
        for w in core.worktrees.list() {
            println!("{}", serde_json::to_string(&w).unwrap_or_default());
        }
        core.shutdown().await;
        0
    });
    ExitCode::from(code)
}

/// `conversations`, `search` and `export`: the history, read beside a
/// running window (read-only then), without starting any agent.
fn history(command: &str, args: &[String]) -> ExitCode {
    let Opts { rest, config, .. } = match options(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("parley-cli: {e}");
            return ExitCode::from(2);
        }
    };
    let expected = if command == "export" { 2 } else { 1 };
    if rest.len() != expected {
        return usage();
    }
    let rt = runtime();
    let code = rt.block_on(async move {
        let Some((core, _rx)) = core(config, false) else {
            return 2;
        };
        if core.history.store().is_none() {
            eprintln!("parley-cli: {}", core.history.status().error.unwrap_or_default());
            return 1;
        }
        let result: Result<String, String> = match command {
            "conversations" => core
                .chat
                .list(&rest[0], 0, 10_000)
                .await
                .map(|l| serde_json::to_string(&l).unwrap_or_default())
                .map_err(String::from),
            "search" => core.history.search(&rest[0], 100).await.map(|hits| {
                hits.iter()
                    .map(|h| serde_json::to_string(h).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
            _ => match core.chat.open(&rest[0], &rest[1]).await {
                Ok(_) => core.chat.export(&rest[0]).map_err(String::from),
                Err(e) => Err(e.to_string()),
            },
        };
        core.shutdown().await;
        match result {
            Ok(text) => {
                if !text.is_empty() {
                    println!("{}", text.trim_end());
                }
                0
            }
            Err(e) => {
                eprintln!("parley-cli: {e}");
                1
            }
        }
    });
    ExitCode::from(code)
}

/// `changes AGENT [CONVERSATION]`: what the turns of the agent's latest
/// conversation (or the one named) changed, as `ChatService.Changes`
/// answers. `undo AGENT [TURN] [--merge] [--all]`: `ChatService.UndoTurn`
/// in the latest conversation (its last turn when none is named).
fn changes(command: &str, args: &[String]) -> ExitCode {
    let merge = args.iter().any(|a| a == "--merge");
    let all = args.iter().any(|a| a == "--all");
    let args: Vec<String> = args
        .iter()
        .filter(|a| *a != "--merge" && *a != "--all")
        .cloned()
        .collect();
    let Opts { rest, config, .. } = match options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("parley-cli: {e}");
            return ExitCode::from(2);
        }
    };
    if rest.is_empty() || rest.len() > 2 || ((merge || all) && command != "undo") {
        return usage();
    }
    let rt = runtime();
    let code = rt.block_on(async move {
        let Some((core, _rx)) = core(config, false) else {
            return 2;
        };
        let agent = rest[0].as_str();
        let named = (command == "changes").then(|| rest.get(1).cloned()).flatten();
        let result: Result<String, String> = async {
            let conversation = match named {
                Some(c) => c,
                None => core
                    .chat
                    .list(agent, 0, 1)
                    .await?
                    .conversations
                    .first()
                    .map(|c| c.id.clone())
                    .ok_or_else(|| gettext_f("{agent} has no stored conversation", &[("agent", agent)]))?,
            };
            if command == "changes" {
                let c = core.chat.changes(agent, Some(&conversation), None).await?;
                return Ok(serde_json::to_string(&c).unwrap_or_default());
            }
            core.chat.open(agent, &conversation).await?;
            let r = core
                .chat
                .undo_turn(
                    agent,
                    rest.get(1).map(String::as_str),
                    parley::core::checkpoints::How { merge, all },
                )
                .await?;
            Ok(serde_json::to_string(&r).unwrap_or_default())
        }
        .await;
        core.shutdown().await;
        match result {
            Ok(text) => {
                println!("{text}");
                0
            }
            Err(e) => {
                eprintln!("parley-cli: {e}");
                1
            }
        }
    });
    ExitCode::from(code)
}

/// `registry list|add|update|remove`: the ACP registry, headless. `add`
/// and `update` print `registry:progress` events while they download.
fn registry(args: &[String]) -> ExitCode {
    let flag = |name: &str| args.iter().any(|a| a == name);
    let (refresh, delete_files) = (flag("--refresh"), flag("--delete-files"));
    let kept: Vec<String> = args
        .iter()
        .filter(|a| *a != "--refresh" && *a != "--delete-files")
        .cloned()
        .collect();
    let Some((rest, config)) = words_and_config(&kept) else {
        return ExitCode::from(2);
    };
    let words: Vec<&str> = rest.iter().map(String::as_str).collect();
    let ok = match words.as_slice() {
        ["list"] => !delete_files,
        ["add", _] | ["update"] | ["update", _] => !refresh && !delete_files,
        ["remove", _] => !refresh,
        _ => false,
    };
    if !ok {
        return usage();
    }
    let rt = runtime();
    let code = rt.block_on(async move {
        let Some((core, rx)) = core(config, false) else {
            return 2;
        };
        let out = Out::new();
        let call = async {
            match words.as_slice() {
                ["list"] => {
                    serde_json::to_value(core.registry.list(refresh).await).map_err(|e| e.to_string())
                }
                ["add", id] => core.registry.add(id).await.map(|name| json!({"added": name})),
                ["update", rest @ ..] => core
                    .registry
                    .update(rest.first().copied())
                    .await
                    .map(|names| json!({"updated": names})),
                ["remove", agent] => core
                    .registry
                    .remove(agent, delete_files)
                    .await
                    .map(|_| json!({"removed": agent})),
                _ => Err(String::new()),
            }
        };
        tokio::pin!(call);
        // Progress as it comes, then what is left of it, then the answer.
        let print = |e: &Event| {
            if matches!(e, Event::RegistryProgress(_)) {
                print_event(&out, e, true);
            }
        };
        let result: Result<Value, String> = loop {
            tokio::select! {
                r = &mut call => break r,
                Ok(e) = rx.recv() => print(&e),
            }
        };
        while let Ok(e) = rx.try_recv() {
            print(&e);
        }
        core.shutdown().await;
        match result {
            Ok(v) => {
                out.line(&v.to_string(), true);
                0
            }
            Err(e) => {
                out.flush();
                eprintln!("parley-cli: {e}");
                1
            }
        }
    });
    ExitCode::from(code)
}

/// Prints events until the agent's turn is over, answering permission
/// requests as `--permission` says.
async fn print_until_idle(core: Core, rx: EventReceiver, out: Out, agent: String, permission: String) {
    while let Ok(e) = rx.recv().await {
        print_event(&out, &e, rx.is_empty());
        match &e {
            Event::PermissionRequested(p) if p.agent == agent => {
                use agent_client_protocol_schema::v1::PermissionOptionKind as K;
                let allow = permission == "allow";
                let wanted = if allow { K::AllowOnce } else { K::RejectOnce };
                let option = p.options.iter().find(|o| o.kind == wanted).or_else(|| {
                    p.options
                        .iter()
                        .find(|o| if allow { o.allows() } else { o.rejects() })
                });
                match (permission.as_str(), option) {
                    ("cancel", _) | (_, None) => {
                        let _ = core.chat.cancel(&agent);
                    }
                    (_, Some(o)) => {
                        let _ = core.chat.answer_permission(&p.id, &o.option_id);
                    }
                }
            }
            // Nobody to fill in a form or open a link: declined.
            Event::ElicitationRequested(e) if e.agent == agent => {
                let _ = core.chat.answer_elicitation(&e.id, "decline", None);
            }
            Event::TurnChanged(t) if t.agent == agent && !t.busy => return,
            _ => {}
        }
    }
}
