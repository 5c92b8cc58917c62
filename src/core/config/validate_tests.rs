//! Unit tests of `validate` (kept apart so the module itself stays readable).
use super::*;

fn one(text: &str) -> (usize, usize, String, bool) {
    let v = validate(text);
    let p = v.problems.first().cloned().expect("a problem");
    (p.line, p.column, p.message, p.warning)
}

#[test]
fn comments_and_trailing_commas_are_fine() {
    let v = validate("// hi\n{ /* x */ \"agents\": [ {\"name\": \"a\", \"command\": \"sh\",}, ], }\n");
    assert!(v.valid(), "{:?}", v.problems);
}

#[test]
fn table_of_invalid_files() {
    let cases: &[(&str, usize, usize, &str, bool)] = &[
        ("{\n  \"theme\": \"dark\",,\n}", 2, 19, "syntax error", false),
        ("{\n  \"agents\": {}\n}", 2, 13, "agents: expected array", false),
        ("{\n  \"theme\": \"pink\"\n}", 2, 12, "theme: must be one of", false),
        ("{\"agents\": [\n  {\"name\": \"a\"}\n]}", 2, 3, "agents[0]: the key \"command\" is required", false),
        (
            "{\"agents\": [\n {\"name\": \"a\", \"command\": \"sh\"},\n {\"name\": \"a\", \"command\": \"sh\"}\n]}",
            3,
            11,
            "agents[1].name: the name \"a\" is already used by agents[0]",
            false,
        ),
        ("{\n  \"colour\": 1\n}", 2, 3, "colour: unknown key \"colour\" is ignored", true),
        (
            "{\"mcpServers\": [\n  {\"name\": \"docs\", \"type\": \"http\"}\n]}",
            2,
            3,
            "mcpServers[0]: the key \"url\" is required",
            false,
        ),
        (
            "{\"mcpServers\": [{\"name\": \"fs\"}]}",
            1,
            17,
            "mcpServers[0]: the key \"command\" is required",
            false,
        ),
        (
            "{\"agents\": [{\"name\": \"a\", \"command\": \"sh\",\n \"mcpServers\": [{\"name\": \"w\", \"type\": \"sse\", \"url\": \"ftp://x\"}]}]}",
            2,
            53,
            "agents[0].mcpServers[0].url: does not have the expected form",
            false,
        ),
        (
            "{\"agents\": [{\"name\": \"a\", \"command\": \"sh\",\n \"defaults\": {\"model\": 3}}]}",
            2,
            24,
            "agents[0].defaults.model: expected",
            false,
        ),
        (
            "{\"mcpServers\": [{\"name\": \"fs\", \"command\": \"x\", \"cmd\": 1}]}",
            1,
            48,
            "unknown key \"cmd\" is ignored",
            true,
        ),
        ("{\"limits\": {\"maxRunningAgents\": 0}}", 1, 33, "limits.maxRunningAgents: must be at least 1", false),
        ("{\"limits\": {\"stopIdleAgentsAfter\": \"soon\"}}", 1, 36, "not a duration", false),
        ("{\"limits\": {\"stopIdleAgentsAfter\": \"10s\"}}", 1, 36, "under one minute", true),
        (
            "{\"agents\": [{\"name\": \"a\", \"command\": \"no-such-agent-xyz\"}]}",
            1,
            38,
            "agents[0].command: no-such-agent-xyz was not found on PATH",
            true,
        ),
    ];
    for (text, line, column, message, warning) in cases {
        let got = one(text);
        assert_eq!((got.0, got.1), (*line, *column), "{text}: {}", got.2);
        assert!(got.2.contains(message), "{text}: {}", got.2);
        assert_eq!(got.3, *warning, "{text}");
    }
}

#[test]
fn a_key_given_twice_in_one_object_is_an_error_at_the_second() {
    let agent = "{\"name\": \"a\", \"command\": \"sh\"}";
    let cases: &[(String, usize, usize, &str)] = &[
        (
            format!("{{\n  \"agents\": [],\n  \"agents\": [{agent}]\n}}"),
            3,
            3,
            "agents: duplicate key \"agents\" (first at line 2)",
        ),
        (
            "{\"agents\": [\n  {\"name\": \"a\",\n   \"command\": \"sh\", \"name\": \"b\"}\n]}".into(),
            3,
            21,
            "agents[0].name: duplicate key \"name\" (first at line 2)",
        ),
        (
            // Where any key is allowed, and in the schema's own keys.
            "{\"agents\": [{\"name\": \"a\", \"command\": \"sh\",\n \"env\": {\"X\": \"1\", \"X\": \"2\"}}]}"
                .into(),
            2,
            20,
            "agents[0].env.X: duplicate key \"X\" (first at line 2)",
        ),
        (
            "{\"limits\": {\"maxRunningAgents\": 2, \"maxRunningAgents\": 3}}".into(),
            1,
            36,
            "limits.maxRunningAgents: duplicate key",
        ),
    ];
    for (text, line, column, message) in cases {
        let v = validate(text);
        assert!(!v.valid(), "{text}");
        let p = v
            .errors()
            .into_iter()
            .find(|p| p.message.contains("duplicate"))
            .unwrap_or_else(|| panic!("{text}: {:?}", v.problems));
        assert_eq!((p.line, p.column), (*line, *column), "{text}: {}", p.message);
        assert!(p.message.contains(message), "{text}: {}", p.message);
        assert!(parse(text).is_err(), "parse refuses it too: {text}");
    }
    // The same key in two objects is no duplicate.
    let two = format!("{{\"agents\": [{agent}, {{\"name\": \"b\", \"command\": \"sh\"}}]}}");
    assert!(validate(&two).valid());
    assert!(parse(&two).is_ok());
}

#[test]
fn bytes_that_are_not_utf8_are_an_error_at_their_line_and_byte_column() {
    let cases: &[(&[u8], usize, usize, usize)] = &[
        (b"{\n  \"theme\": \"\xff\"\n}", 14, 2, 13),
        // "\u{e9}" is two bytes, so two columns here.
        (b"{\"a\": \"\xc3\xa9\xfe\"}", 9, 1, 10),
        // A character cut off at the end of the file.
        (b"{}\n\n\xe2\x82", 4, 3, 1),
    ];
    for (bytes, offset, line, column) in cases {
        let v = validate_bytes(bytes);
        assert!(!v.valid());
        assert_eq!(v.problems.len(), 1, "{:?}", v.problems);
        let p = &v.problems[0];
        assert_eq!(
            (p.line, p.column, p.warning),
            (*line, *column, false),
            "{bytes:?}"
        );
        assert_eq!(p.message, format!("the file is not valid UTF-8 at byte {offset}"));
    }
    assert!(validate_bytes(b"{\"theme\": \"dark\"}").valid());
}

#[test]
fn warnings_alone_keep_it_valid() {
    let v = validate("{\"colour\": 1}");
    assert!(v.valid());
    assert_eq!(v.warnings().len(), 1);
}

#[test]
fn the_schema_is_valid_and_compiles() {
    assert!(validator().is_some());
}

#[test]
fn hosts_are_checked_with_their_place() {
    let (line, col, msg, warning) =
        one("{\"agents\": [\n  {\"name\": \"a\", \"command\": \"x\", \"cwd\": \"/src\",\n   \"host\": \"ssh://-oProxyCommand=x\"}\n]}");
    assert_eq!((line, col, warning), (3, 12, false), "{msg}");
    assert!(msg.starts_with("agents[0].host: "), "{msg}");
    let (line, _, msg, _) = one("{\"agents\": [\n  {\"name\": \"a\", \"command\": \"x\",\n   \"cwd\": \"~/src\", \"host\": \"ssh://devbox\"}\n]}");
    assert_eq!(line, 3);
    assert!(msg.contains("absolute cwd"), "{msg}");
    let (_, _, msg, _) =
        one("{\"agents\": [{\"name\": \"a\", \"command\": \"x\", \"cwd\": \"/s\", \"host\": \"ftp://x\"}]}");
    assert!(
        msg.contains("expected form") || msg.contains("unknown host kind"),
        "{msg}"
    );
    // A command that is not here is looked for there: no warning.
    let v = validate(
        "{\"agents\": [{\"name\": \"a\", \"command\": \"no-such-agent-here\", \"cwd\": \"/s\", \"host\": \"toolbox://f41\"}]}",
    );
    assert!(v.valid() && v.problems.is_empty(), "{:?}", v.problems);
    assert_eq!(v.config.expect("config").agents[0].host, "toolbox://f41");
}

#[test]
fn an_agents_worktree_is_always_ask_or_never() {
    let v = validate("{\"agents\": [{\"name\": \"a\", \"command\": \"sh\", \"worktree\": \"always\"}]}");
    let config = v.config.expect("valid");
    assert_eq!(
        config.agents[0].worktree,
        crate::core::config::model::WorktreeMode::Always
    );
    let (line, column, message, warning) =
        one("{\"agents\": [\n  {\"name\": \"a\", \"command\": \"sh\", \"worktree\": \"sometimes\"}\n]}");
    assert_eq!((line, warning), (2, false));
    assert!(column > 30, "{column}");
    assert!(
        message.contains("worktree") && message.contains("must be one of"),
        "{message}"
    );
}

#[test]
fn a_start_mode_the_agent_did_not_offer_is_warned_of_where_it_is() {
    use crate::core::config::validate::validate_knowing;
    let text =
        "{\"agents\": [\n  {\"name\": \"claude\", \"command\": \"sh\",\n   \"startMode\": \"plna\"}\n]}";
    // What claude offered at its last session.
    let offered = |agent: &str, key: &str, v: &serde_json::Value| {
        (agent == "claude" && key == "mode").then(|| {
            if v == "plan" || v == "default" {
                Ok(())
            } else {
                Err("default, plan".to_owned())
            }
        })
    };
    let v = validate_knowing(text, &offered);
    assert_eq!(
        v.config.as_ref().map(|c| c.agents[0].start_mode.as_str()),
        Some("plna")
    );
    let w: Vec<_> = v.problems.iter().filter(|p| p.warning).collect();
    assert_eq!(w.len(), 1, "{:?}", v.problems);
    assert_eq!(w[0].line, 3);
    assert!(w[0].column > 4, "{:?}", w[0]);
    assert!(
        w[0].message.contains("startMode") && w[0].message.contains("plna"),
        "{}",
        w[0].message
    );
    let fine = validate_knowing(&text.replace("plna", "plan"), &offered);
    assert!(fine.problems.is_empty(), "{:?}", fine.problems);
    // startMode wins over defaults.mode, and goes first.
    let def = crate::core::config::model::AgentDef {
        start_mode: "plan".into(),
        defaults: [
            ("mode".to_owned(), serde_json::json!("auto")),
            ("model".to_owned(), serde_json::json!("x")),
        ]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    assert_eq!(
        def.session_defaults(),
        vec![
            ("mode".to_owned(), serde_json::json!("plan")),
            ("model".to_owned(), serde_json::json!("x"))
        ]
    );
}
