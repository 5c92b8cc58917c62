//! `parley-cli`: the headless front end over the same services as the
//! window. Its contract is `docs/parley-cli.md`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use parley::core::events::{Event, EventReceiver};
use parley::core::services::{Core, Options};
use parley::i18n::{gettext, gettext_f};
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;

const USAGE: &str = "\
Usage:
  parley-cli validate FILE
  parley-cli schema
  parley-cli send AGENT TEXT [--config FILE] [--permission allow|reject|cancel]
                  [--mode MODE] [--model MODEL] [--option ID=VALUE]... [--attach FILE]...
  parley-cli serve [--config FILE]
  parley-cli auth AGENT [METHOD] [--config FILE]
  parley-cli conversations AGENT [--config FILE]
  parley-cli search QUERY [--config FILE]
  parley-cli export AGENT CONVERSATION [--config FILE]
  parley-cli registry list [--refresh] [--config FILE]
  parley-cli registry add ID [--config FILE]
  parley-cli registry update [ID] [--config FILE]
  parley-cli registry remove AGENT [--delete-files] [--config FILE]
";

/// Standard output, one JSON object a line.
#[derive(Clone)]
struct Out {
    inner: Arc<Mutex<std::io::BufWriter<std::io::Stdout>>>,
}

impl Out {
    fn new() -> Self {
        Out {
            inner: Arc::new(Mutex::new(std::io::BufWriter::with_capacity(
                1 << 16,
                std::io::stdout(),
            ))),
        }
    }
    fn line(&self, text: &str, flush: bool) {
        let mut w = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.write_all(text.as_bytes());
        let _ = w.write_all(b"\n");
        if flush {
            let _ = w.flush();
        }
    }
    fn flush(&self) {
        let _ = self.inner.lock().unwrap_or_else(|e| e.into_inner()).flush();
    }
}

fn main() -> ExitCode {
    parley::core::supervisor::guardian::run_if_asked();
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
        Some("serve") => serve(&args[1..]),
        Some("auth") => auth(&args[1..]),
        Some(command @ ("conversations" | "search" | "export")) => history(command, &args[1..]),
        Some("registry") => registry(&args[1..]),
        Some("--help" | "-h" | "help") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprint!("{USAGE}");
    ExitCode::from(2)
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

/// `--config FILE` and `--permission X` among the arguments; the rest in order.
/// The command line after the command: the words left, and the options.
struct Opts {
    rest: Vec<String>,
    config: Option<PathBuf>,
    permission: String,
    /// `--mode`, `--model` and `--option`: (option id or category, value).
    settings: Vec<(String, String)>,
    attach: Vec<PathBuf>,
}

fn options(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        rest: Vec::new(),
        config: None,
        permission: "cancel".to_string(),
        settings: Vec::new(),
        attach: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--config" => o.config = Some(PathBuf::from(it.next().ok_or("--config needs a file")?)),
            "--permission" => {
                o.permission = it
                    .next()
                    .ok_or("--permission needs allow, reject or cancel")?
                    .clone();
                if !matches!(o.permission.as_str(), "allow" | "reject" | "cancel") {
                    return Err(format!(
                        "--permission {}: use allow, reject or cancel",
                        o.permission
                    ));
                }
            }
            "--mode" | "--model" => {
                let value = it.next().ok_or(format!("{a} needs a value"))?;
                o.settings
                    .push((a.trim_start_matches("--").to_owned(), value.clone()));
            }
            "--option" => {
                let pair = it.next().ok_or("--option needs ID=VALUE")?;
                let (id, value) = pair
                    .split_once('=')
                    .ok_or(format!("--option {pair}: write ID=VALUE"))?;
                o.settings.push((id.to_owned(), value.to_owned()));
            }
            "--attach" => o
                .attach
                .push(PathBuf::from(it.next().ok_or("--attach needs a file")?)),
            _ => o.rest.push(a.clone()),
        }
    }
    Ok(o)
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

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("parley-cli: cannot start the runtime: {e}");
            std::process::exit(2);
        }
    }
}

fn print_event(out: &Out, e: &Event, flush: bool) {
    // Straight into the buffered writer: no string per event.
    let mut w = out.inner.lock().unwrap_or_else(|e| e.into_inner());
    if serde_json::to_writer(&mut *w, e).is_ok() {
        let _ = w.write_all(b"\n");
    }
    if flush {
        let _ = w.flush();
    }
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

/// The services over `config` (`watch`: follow changes to the file), or
/// `None` once the reason is printed (exit status 2).
fn core(config: Option<PathBuf>, watch: bool) -> Option<(Core, EventReceiver)> {
    match Core::new(Options {
        config_path: config,
        watch,
        ..Default::default()
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("parley-cli: {e}");
            None
        }
    }
}

/// Tells (on standard error) that the conversation is not kept, when the
/// history is read-only here (a window writes it) or could not be opened.
fn say_if_not_kept(core: &Core) {
    let status = core.history.status();
    if !status.writable {
        eprintln!(
            "parley-cli: {}",
            gettext_f(
                "the conversation is not kept: {why}",
                &[("why", &status.error.unwrap_or_default())]
            )
        );
    }
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

/// The words and `--config` of a command that takes none of `send`'s
/// options; `None` (said on standard error) for a wrong command line.
fn words_and_config(args: &[String]) -> Option<(Vec<String>, Option<PathBuf>)> {
    match options(args) {
        Ok(o) if o.settings.is_empty() && o.attach.is_empty() => Some((o.rest, o.config)),
        Ok(_) => {
            eprintln!("parley-cli: --mode, --model, --option and --attach go with send");
            None
        }
        Err(e) => {
            eprintln!("parley-cli: {e}");
            None
        }
    }
}

fn serve(args: &[String]) -> ExitCode {
    let Some((rest, config)) = words_and_config(args) else {
        return ExitCode::from(2);
    };
    if !rest.is_empty() {
        return usage();
    }
    let rt = runtime();
    let code = rt.block_on(async move {
        let Some((core, rx)) = core(config, true) else {
            return 2;
        };
        say_if_not_kept(&core);
        let out = Out::new();
        let events_out = out.clone();
        let events_rx = rx.clone();
        let channels_core = core.clone();
        let printer = tokio::spawn(async move {
            // Notification channels of kind command run here as in the window.
            let mut watch = parley::core::channels::Watch::default();
            let handle = tokio::runtime::Handle::current();
            while let Ok(e) = events_rx.recv().await {
                print_event(&events_out, &e, events_rx.is_empty());
                let titles = |agent: &str| {
                    channels_core
                        .agents
                        .list()
                        .into_iter()
                        .find(|a| a.name == agent)
                        .map(|a| a.title)
                        .unwrap_or_else(|| agent.to_owned())
                };
                if let Some(notice) = watch.notice(&e, &titles) {
                    parley::core::channels::run_commands(
                        &channels_core.config.current().channels,
                        &notice,
                        &handle,
                    );
                }
            }
        });
        let mut input = tokio::io::BufReader::new(tokio::io::stdin());
        let mut calls = tokio::task::JoinSet::new();
        let mut raw = Vec::new();
        loop {
            raw.clear();
            // Bytes, not `lines()`: a line that is not UTF-8 is answered
            // with an error, and does not end the input.
            match input.read_until(b'\n', &mut raw).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = match std::str::from_utf8(&raw) {
                Ok(l) => l,
                Err(e) => {
                    let msg = gettext_f(
                        "parse error: the line is not UTF-8 text at byte {offset}",
                        &[("offset", &e.valid_up_to().to_string())],
                    );
                    out.line(&json!({"id": null, "error": msg}).to_string(), true);
                    continue;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let call: Value = match serde_json::from_str(line) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    out.line(
                        &json!({"id": null, "error": gettext("not a JSON object")}).to_string(),
                        true,
                    );
                    continue;
                }
            };
            let id = call.get("id").cloned().unwrap_or(Value::Null);
            let Some(method) = call.get("method").and_then(Value::as_str).map(str::to_owned) else {
                out.line(
                    &json!({"id": id, "error": gettext("a call needs a method")}).to_string(),
                    true,
                );
                continue;
            };
            let params = match call.get("params") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a.clone(),
                Some(_) => {
                    let msg = gettext_f("{method}: params must be an array", &[("method", &method)]);
                    out.line(&json!({"id": id, "error": msg}).to_string(), true);
                    continue;
                }
            };
            let core = core.clone();
            let out = out.clone();
            calls.spawn(async move {
                let answer = match core.call(&method, &params).await {
                    Ok(result) => json!({"id": id, "result": result}),
                    Err(error) => json!({"id": id, "error": error}),
                };
                out.line(&answer.to_string(), true);
            });
        }
        // End of input: every call still gets its answer (a start ends
        // within the handshake timeout), then every agent is stopped with
        // the spec's sequence, then Parley exits.
        let limit = core.agents.timings().handshake_timeout + std::time::Duration::from_secs(10);
        let _ = tokio::time::timeout(limit, async { while calls.join_next().await.is_some() {} }).await;
        calls.abort_all();
        core.shutdown().await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        printer.abort();
        while let Ok(e) = rx.try_recv() {
            print_event(&out, &e, false);
        }
        out.flush();
        0
    });
    ExitCode::from(code)
}

/// `auth AGENT`: the agent's sign-in status and methods (one JSON line).
/// `auth AGENT METHOD`: signs in. The values an `env_var` method (or an
/// agent method's key) wants are read from standard input, one line each in
/// the method's order, never from the arguments; a terminal method's
/// command runs on a terminal whose input and output are this program's.
fn auth(args: &[String]) -> ExitCode {
    let Some((rest, config)) = words_and_config(args) else {
        return ExitCode::from(2);
    };
    let (agent, method) = match rest.as_slice() {
        [agent] => (agent.clone(), None),
        [agent, method] => (agent.clone(), Some(method.clone())),
        _ => return usage(),
    };
    let rt = runtime();
    let code = rt.block_on(async move {
        let Some((core, _rx)) = core(config, false) else {
            return 2;
        };
        let result = match method {
            None => core.auth.methods(&agent).await.map(|_| ()).map_err(String::from),
            Some(method) => auth_sign_in(&core, &agent, &method).await,
        };
        let code = match result {
            Ok(()) => {
                if let Ok(status) = core.auth.status(&agent) {
                    println!("{}", serde_json::to_string(&status).unwrap_or_default());
                }
                0
            }
            Err(e) => {
                eprintln!("parley-cli: {e}");
                1
            }
        };
        core.shutdown().await;
        code
    });
    ExitCode::from(code)
}

async fn auth_sign_in(core: &Core, agent: &str, method_id: &str) -> Result<(), String> {
    use parley::core::auth::AuthKind;
    use parley::core::secrets::Secret;
    let status = core.auth.methods(agent).await?;
    let method = status
        .methods
        .iter()
        .find(|m| m.id == method_id)
        .ok_or_else(|| parley::core::auth::AuthError::UnknownMethod(method_id.to_owned()).to_string())?;
    if let AuthKind::Terminal { .. } = method.kind {
        let mut terminal = core.auth.login_terminal(agent, method_id).await?;
        let Some(master) = terminal.take_terminal() else {
            return Err(gettext("the terminal could not be opened"));
        };
        relay_terminal(master);
        let status = terminal.wait().await;
        tokio::spawn(terminal.end());
        return core
            .auth
            .login_finished(agent, status)
            .await
            .map_err(String::from);
    }
    let mut values = Vec::new();
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    for key in method.keys() {
        // On a terminal: a prompt, and what is typed is not shown.
        let _hidden = NoEcho::on_terminal(&key.name);
        let line = lines.next_line().await.ok().flatten().unwrap_or_default();
        let value = line.trim_end_matches(['\r', '\n']).to_owned();
        if value.is_empty() {
            if key.optional {
                continue;
            }
            return Err(gettext_f(
                "{name}: no value on standard input",
                &[("name", &key.name)],
            ));
        }
        values.push((key.name.clone(), Secret::new(value)));
    }
    core.auth
        .sign_in(agent, method_id, values)
        .await
        .map_err(String::from)
}

/// Copies this program's input to the terminal and the terminal's output
/// to this program's, until the command ends (threads: both sides block).
fn relay_terminal(master: std::os::fd::OwnedFd) {
    let Ok(input) = master.try_clone() else { return };
    std::thread::spawn(move || {
        let mut to = std::fs::File::from(input);
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut to);
    });
    std::thread::spawn(move || {
        let mut from = std::fs::File::from(master);
        let mut out = std::io::stdout();
        let mut buf = [0u8; 4096];
        // The terminal's side reads EIO once the command and all it
        // started have closed it.
        while let Ok(n) = std::io::Read::read(&mut from, &mut buf) {
            if n == 0 || out.write_all(&buf[..n]).and_then(|_| out.flush()).is_err() {
                break;
            }
        }
    });
}

/// Turns the terminal's echo off while a value is typed (and back on when
/// dropped); does nothing when standard input is not a terminal.
struct NoEcho(Option<libc::termios>);

impl NoEcho {
    fn on_terminal(name: &str) -> Self {
        // SAFETY: isatty, tcgetattr and tcsetattr on fd 0 with a termios we own.
        unsafe {
            if libc::isatty(0) != 1 {
                return NoEcho(None);
            }
            eprint!("{name}: ");
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return NoEcho(None);
            }
            let saved = t;
            t.c_lflag &= !libc::ECHO;
            libc::tcsetattr(0, libc::TCSANOW, &t);
            NoEcho(Some(saved))
        }
    }
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        if let Some(saved) = self.0.take() {
            // SAFETY: restores the settings read in `on_terminal`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            }
            eprintln!();
        }
    }
}
