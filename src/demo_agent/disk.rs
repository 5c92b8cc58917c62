//! `disk-edit`: the agent changes files in its working directory by itself,
//! not through Parley's `fs/*` (as agents that run their own tools do), and
//! says what it did: a tool call per change naming the file, as real
//! agents announce their edits. Parley's checkpoints must still see every
//! change, and tie each to the turn.

use std::path::Path;

use serde_json::json;

use super::state::Agent;

/// A tool call (completed) that names `paths` as changed by `op`.
fn announce(agent: &Agent, sid: &str, n: usize, op: &str, paths: &[&str]) {
    let kind = if op.starts_with("delete:") {
        "delete"
    } else if op.starts_with("rename:") {
        "move"
    } else {
        "edit"
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let locations: Vec<_> = paths
        .iter()
        .map(|p| json!({"path": cwd.join(p).display().to_string()}))
        .collect();
    agent.update(
        sid,
        json!({"sessionUpdate": "tool_call", "toolCallId": format!("disk-{n}"), "title": op,
               "kind": kind, "status": "completed", "locations": locations}),
    );
}

/// `write:PATH=TEXT` (TEXT with `\n` for a newline and `\s` for a space),
/// `append:PATH=TEXT`, `delete:PATH`, `rename:FROM=TO`, `chmod:PATH=MODE`
/// (octal), `mkdir:PATH`, `rmdir:PATH`, `rmtree:PATH`, `symlink:PATH=TARGET`,
/// `sleep:MS` (a pause between changes); paths
/// relative to the cwd, parent directories made as needed. `quiet:` before
/// an operation makes it without a tool call (as a command's side effect
/// would be).
pub(super) fn edit(agent: &Agent, sid: &str, ops: &[&str]) -> String {
    let mut done = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        let (quiet, op) = match op.strip_prefix("quiet:") {
            Some(rest) => (true, rest),
            None => (false, *op),
        };
        let text = |t: &str| t.replace("\\n", "\n").replace("\\s", " ");
        if let Some(ms) = op.strip_prefix("sleep:") {
            std::thread::sleep(std::time::Duration::from_millis(ms.parse().unwrap_or(0)));
            continue;
        }
        if !quiet {
            let target = op.split_once(':').map_or("", |(_, r)| r);
            let paths: Vec<&str> = match target.split_once('=') {
                Some((a, b)) if op.starts_with("rename:") => vec![a, b],
                Some((a, _)) => vec![a],
                None => vec![target],
            };
            announce(agent, sid, n, op, &paths);
        }
        let result = if let Some(rest) = op.strip_prefix("chmod:") {
            rest.split_once('=')
                .ok_or_else(|| "chmod:PATH=MODE".to_owned())
                .and_then(|(p, m)| {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = u32::from_str_radix(m, 8).map_err(|e| e.to_string())?;
                    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
                        .map_err(|e| e.to_string())
                })
        } else if let Some(p) = op.strip_prefix("mkdir:") {
            std::fs::create_dir_all(p).map_err(|e| e.to_string())
        } else if let Some(p) = op.strip_prefix("rmdir:") {
            std::fs::remove_dir(p).map_err(|e| e.to_string())
        } else if let Some(p) = op.strip_prefix("rmtree:") {
            std::fs::remove_dir_all(p).map_err(|e| e.to_string())
        } else if let Some(rest) = op.strip_prefix("symlink:") {
            rest.split_once('=')
                .ok_or_else(|| "symlink:PATH=TARGET".to_owned())
                .and_then(|(p, t)| std::os::unix::fs::symlink(t, p).map_err(|e| e.to_string()))
        } else if let Some(rest) = op.strip_prefix("write:") {
            rest.split_once('=')
                .ok_or_else(|| "write:PATH=TEXT".to_owned())
                .and_then(|(p, t)| {
                    make_parent(p).and_then(|_| std::fs::write(p, text(t)).map_err(|e| e.to_string()))
                })
        } else if let Some(rest) = op.strip_prefix("append:") {
            rest.split_once('=')
                .ok_or_else(|| "append:PATH=TEXT".to_owned())
                .and_then(|(p, t)| {
                    use std::io::Write;
                    std::fs::OpenOptions::new()
                        .append(true)
                        .create(true)
                        .open(p)
                        .and_then(|mut f| f.write_all(text(t).as_bytes()))
                        .map_err(|e| e.to_string())
                })
        } else if let Some(p) = op.strip_prefix("delete:") {
            std::fs::remove_file(p).map_err(|e| e.to_string())
        } else if let Some(rest) = op.strip_prefix("rename:") {
            rest.split_once('=')
                .ok_or_else(|| "rename:FROM=TO".to_owned())
                .and_then(|(a, b)| {
                    make_parent(b).and_then(|_| std::fs::rename(a, b).map_err(|e| e.to_string()))
                })
        } else {
            Err("unknown operation".to_owned())
        };
        done.push(match result {
            Ok(()) => format!("- {op}: done"),
            Err(e) => format!("- {op}: {e}"),
        });
    }
    format!("Changed files by myself:\n\n{}\n", done.join("\n"))
}

fn make_parent(p: &str) -> Result<(), String> {
    match Path::new(p).parent() {
        Some(d) if !d.as_os_str().is_empty() => std::fs::create_dir_all(d).map_err(|e| e.to_string()),
        _ => Ok(()),
    }
}
