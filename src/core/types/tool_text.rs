//! A tool call's output as text: a `rawOutput` read as what it holds (a
//! command's output, not its JSON), the command line a `rawInput` names,
//! and the text a harness writes for the model only, which is no one's
//! words in the conversation.

/// A tool's `rawOutput` as a reader wants it: a string as itself (not as
/// a JSON string with quotes and escapes, as claude-agent-acp's Edit sends
/// it); codex-acp's command objects as what the command printed
/// (`formatted_output`, else `stdout` and `stderr`, else `aggregated_output`
/// or `output`); anything else as compact JSON.
pub fn output_text(v: &serde_json::Value) -> String {
    use serde_json::Value;
    let field = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Object(_) => {
            if let Some(f) = field("formatted_output") {
                return f.to_owned();
            }
            let streams: Vec<&str> = ["stdout", "stderr"].into_iter().filter_map(field).collect();
            if !streams.is_empty() {
                return streams.join("\n");
            }
            field("aggregated_output")
                .or_else(|| field("output"))
                .map_or_else(|| v.to_string(), str::to_owned)
        }
        _ => v.to_string(),
    }
}

/// The command line in a tool's `rawInput`, where it names one: codex-acp's
/// `command` (a string, or an argument list such as `["bash", "-lc", "echo
/// hi"]`, of which the script is shown), else its `parsed_cmd[].cmd`.
pub fn command_line(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let line = match v.get("command").or_else(|| v.get("cmd")) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(args)) => {
            let args: Vec<&str> = args.iter().filter_map(Value::as_str).collect();
            match args.as_slice() {
                // A shell running a script: the script is what was asked.
                [shell, flag, script]
                    if shell.ends_with("sh") && flag.starts_with('-') && flag.ends_with('c') =>
                {
                    Some((*script).to_owned())
                }
                [] => None,
                _ => Some(args.join(" ")),
            }
        }
        _ => None,
    };
    line.or_else(|| {
        let cmds: Vec<&str> = v
            .get("parsed_cmd")?
            .as_array()?
            .iter()
            .filter_map(|c| c.get("cmd").and_then(Value::as_str))
            .collect();
        (!cmds.is_empty()).then(|| cmds.join(" && "))
    })
    .map(|l| l.trim().to_owned())
    .filter(|l| !l.is_empty())
}

/// Text an agent's harness writes for its model, not for the user:
/// claude-agent-acp's answer to launching a background `Agent` ("Async
/// agent launched successfully. (This tool result is internal metadata —
/// never quote …").
pub fn is_internal(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("Async agent launched successfully") || t.contains("internal metadata — never quote")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_launchers_note_to_the_model_is_internal() {
        assert!(super::is_internal(
            "Async agent launched successfully. (This tool result is internal metadata — never quote or paste any part of it)\nagentId: a1"
        ));
        assert!(!super::is_internal("The report: all tests pass."));
    }
}
