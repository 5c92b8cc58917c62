//! The window with real agents (from build-aux/install-test-agents.sh)
//! working against the model-API stand-in: what their users see.

use super::model_api::{ModelApi, Reply};
use super::*;
use serde_json::json;

/// claude-agent-acp in a project of its own, as the agent `demo`.
fn claude_config(api: &ModelApi, home: &std::path::Path, cwd: &std::path::Path) -> Option<String> {
    let bin = PathBuf::from(std::env::var_os("PARLEY_TEST_AGENTS")?)
        .join("claude/node_modules/.bin/claude-agent-acp");
    if !bin.exists() {
        return None;
    }
    let config = json!({"agents": [{"name": "demo", "title": "Claude", "command": bin.display().to_string(),
        "cwd": cwd.display().to_string(),
        "env": {"HOME": home.display().to_string(), "ANTHROPIC_BASE_URL": api.url(),
                "ANTHROPIC_API_KEY": "sk-standin", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
                "HTTPS_PROXY": api.url(), "NO_PROXY": "127.0.0.1,localhost",
                "CLAUDE_CODE_MAX_RETRIES": "0", "IS_SANDBOX": ""},
        // It starts in `auto`, which asks a classifier model, not the user.
        "startMode": "default"}]});
    Some(config.to_string())
}

/// A full turn of Claude Code: its edit's diff in the permission banner,
/// then the command's output in a live terminal and the Markdown answer,
/// in light and dark.
pub fn claude_full_turn(app: &adw::Application) -> Result<(), String> {
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cwd = tempfile::tempdir().map_err(|e| e.to_string())?;
    let notes = cwd.path().join("notes.txt");
    std::fs::write(&notes, "line one\nline two\nline three\n").map_err(|e| e.to_string())?;
    let file = notes.display().to_string();
    let api = ModelApi::start(vec![
        Reply::tool("Read", json!({"file_path": file})),
        Reply::tool(
            "Edit",
            json!({"file_path": file, "old_string": "line two", "new_string": "line two (edited)", "replace_all": false}),
        ),
        Reply::tool("Bash", json!({"command": "echo hi", "description": "Print hi"})),
        Reply::text("## Done\n\nI edited `notes.txt`:\n\n- changed **line two**\n- ran `echo hi`\n"),
    ]);
    let Some(config) = claude_config(&api, home.path(), cwd.path()) else {
        println!("    SKIPPED: claude-agent-acp is not installed (build-aux/install-test-agents.sh; no npm registry?)");
        return Ok(());
    };
    let f = open_window(app, &config)?;
    select_demo(&f)?;
    type_and_send(&f, "Edit notes.txt");
    spin_until("the permission banner", Duration::from_secs(60), || {
        f.win.permission_banner().is_revealed()
    })?;
    let banner = f.win.permission_banner();
    let diffs = banner.diff_titles();
    if diffs.len() != 1 || !diffs[0].ends_with("notes.txt") {
        return Err(format!("the banner shows the diffs {diffs:?}"));
    }
    save_png(&f.win, "real-claude-permission")?;
    // claude-agent-acp 0.101's own words for allowing once: "Yes".
    let allow = buttons(banner.upcast_ref())
        .into_iter()
        .find(|b| matches!(b.label().as_deref(), Some("Allow" | "Yes")))
        .ok_or("no Allow button")?;
    allow.emit_clicked();
    spin_until("the end of the turn", Duration::from_secs(60), || {
        f.win.agent("demo").is_some_and(|a| !a.conversation().answering())
            && conversation_texts(&f).iter().any(|t| t.contains("Done"))
    })?;
    spin(Duration::from_millis(500));
    let all = conversation_texts(&f);
    for expected in ["Read notes.txt", "Edit notes.txt", "echo hi", "Done"] {
        if !all.iter().any(|t| t.contains(expected)) {
            return Err(format!("{expected:?} is not shown; shown: {all:?}"));
        }
    }
    // The edit's output, as itself: no JSON quotes.
    if all.iter().any(|t| t.starts_with("\"The file")) {
        return Err(format!("a quoted output: {all:?}"));
    }
    if std::fs::read_to_string(&notes).unwrap_or_default() != "line one\nline two (edited)\nline three\n" {
        return Err("notes.txt is not edited".into());
    }
    save_png(&f.win, "real-claude-answer")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::ForceDark);
    spin(Duration::from_millis(300));
    save_png(&f.win, "real-claude-answer-dark")?;
    adw::StyleManager::default().set_color_scheme(adw::ColorScheme::Default);
    close(f);
    Ok(())
}
