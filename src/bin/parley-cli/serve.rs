//! `parley-cli serve`: the services' calls as JSON lines on standard
//! input, their answers and every event on standard output.

use std::process::ExitCode;

use parley::i18n::{gettext, gettext_f};
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;

use crate::common::*;

pub fn serve(args: &[String]) -> ExitCode {
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
