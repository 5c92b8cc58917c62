//! `disk-edit`: the agent changes files in its working directory by itself,
//! not through Parley's `fs/*` (as agents that run their own tools do), and
//! says what it did. Parley's checkpoints must still see every change.

use std::path::Path;

/// `write:PATH=TEXT` (TEXT with `\n` for a newline and `\s` for a space),
/// `append:PATH=TEXT`, `delete:PATH`, `rename:FROM=TO`; paths relative to
/// the cwd, parent directories made as needed.
pub(super) fn edit(ops: &[&str]) -> String {
    let mut done = Vec::new();
    for op in ops {
        let text = |t: &str| t.replace("\\n", "\n").replace("\\s", " ");
        let result = if let Some(rest) = op.strip_prefix("write:") {
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
