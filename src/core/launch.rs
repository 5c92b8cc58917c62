//! The launch doctor: where an agent's command is looked for, and what to
//! say when it is not found.
//!
//! A GUI session's PATH (and a Flatpak's) often lacks what the user's login
//! shell has: `~/.local/bin`, `~/.cargo/bin`, npm's global bin, nvm's. So a
//! bare command is searched in, in order: the agent's own `PATH` (from its
//! `env`) or Parley's, the login shell's PATH (read once, off the main
//! thread), the usual per-user bin directories, and Parley's own program
//! directory.
//!
//! The bundled demo agent is not searched for at all: [`bundled`] finds it
//! beside Parley's own program, or makes Parley's own program be it
//! (`--demo-agent`), so it answers wherever Parley was started from and
//! whatever was built (`cargo run` builds only `parley`). It always runs
//! where Parley runs, inside the Flatpak sandbox too; only the user's own
//! agents are started on the host.
//!
//! This module is a leaf: configuration validation and the supervisor both
//! use it, and it uses neither.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

static LOGIN_PATH: OnceLock<Option<String>> = OnceLock::new();

/// Starts reading the login shell's PATH in the background (once).
pub fn probe_login_shell() {
    if LOGIN_PATH.get().is_some() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("parley-login-path".into())
        .spawn(|| {
            let _ = LOGIN_PATH.set(read_login_shell_path());
        });
}

/// The login shell's PATH if it has been read already (never waits).
pub fn login_shell_path_now() -> Option<&'static str> {
    LOGIN_PATH.get().and_then(|p| p.as_deref())
}

/// The login shell's PATH, waiting up to `limit` for the first read.
pub async fn login_shell_path(limit: Duration) -> Option<&'static str> {
    probe_login_shell();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(p) = LOGIN_PATH.get() {
            return p.as_deref();
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The login shell's PATH, read now (blocking, at most 3 s).
pub fn read_login_shell_path() -> Option<String> {
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into());
    let script = if shell.ends_with("fish") {
        "string join : $PATH"
    } else {
        "printf '%s' \"$PATH\""
    };
    let mut child = std::process::Command::new(&shell)
        .args(["-l", "-c", script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    // A login shell that waits for input or hangs must not hold us up.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    use std::io::Read;
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    let path = out.lines().last().unwrap_or_default().trim().to_owned();
    (!path.is_empty()).then_some(path)
}

/// The usual per-user bin directories of agent installers.
pub fn user_bin_dirs(home: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = [
        ".local/bin",
        ".cargo/bin",
        ".npm-global/bin",
        ".bun/bin",
        ".deno/bin",
        ".volta/bin",
        "bin",
    ]
    .iter()
    .map(|d| home.join(d))
    .collect();
    // nvm: the newest installed Node first.
    if let Ok(entries) = std::fs::read_dir(home.join(".nvm/versions/node")) {
        let mut versions: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("bin")).collect();
        versions.sort();
        versions.reverse();
        dirs.extend(versions);
    }
    dirs.push(PathBuf::from("/usr/local/bin"));
    dirs
}

/// Every directory a bare command is looked for in, in order, without
/// duplicates. `login` is the login shell's PATH, when known.
pub fn search_dirs(agent_path: Option<&str>, login: Option<&str>) -> Vec<PathBuf> {
    let first = agent_path
        .map(str::to_owned)
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&first).collect();
    if let Some(login) = login {
        dirs.extend(std::env::split_paths(login));
    }
    dirs.extend(user_bin_dirs(&crate::core::home::home_dir()));
    if let Some(own) = own_program_dir() {
        dirs.push(own);
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| !d.as_os_str().is_empty() && seen.insert(d.clone()));
    dirs
}

/// The directory of Parley's own programs.
pub fn own_program_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    // Test binaries live in target/*/deps, the programs one level up.
    if dir.file_name().is_some_and(|n| n == "deps") {
        return dir.parent().map(PathBuf::from);
    }
    Some(dir.to_path_buf())
}

/// The command name of the agent that ships with Parley.
pub const DEMO_AGENT: &str = "parley-demo-agent";

/// The program and leading arguments of a bundled agent, or `None` when
/// `command` names no bundled agent: `parley-demo-agent` beside Parley's own
/// program when it is there, otherwise Parley's own program (`parley` or
/// `parley-cli`) with `--demo-agent`.
pub fn bundled(command: &str) -> Option<(PathBuf, Vec<String>)> {
    if command != DEMO_AGENT {
        return None;
    }
    let beside = own_program_dir()?.join(DEMO_AGENT);
    if crate::core::launch::is_executable(&beside) {
        return Some((beside, Vec::new()));
    }
    let exe = std::env::current_exe().ok()?;
    let name = exe.file_name()?.to_str()?;
    // On another host, Parley's helper (a copy of one of its programs) is
    // the demo agent too.
    (matches!(name, "parley" | "parley-cli") || name.starts_with("parley-helper-"))
        .then(|| (exe.clone(), vec![crate::demo_agent::FLAG.to_owned()]))
}

/// How to install the agents Parley knows, by their command.
pub fn install_hint(command: &str) -> Option<&'static str> {
    Some(match command {
        "claude-agent-acp" => "npm install -g @zed-industries/claude-agent-acp",
        "claude-code-acp" => "npm install -g @zed-industries/claude-code-acp",
        "codex-acp" => "npm install -g @zed-industries/codex-acp",
        "gemini" => "npm install -g @google/gemini-cli",
        "opencode" => "npm install -g opencode-ai",
        "goose" => "the installer on Goose's website (then run: goose configure)",
        "npx" => "sudo apt install npm",
        "uvx" => "pipx install uv",
        _ => return None,
    })
}

/// "command not found: X (searched PATH: …)", and how to install it.
pub fn not_found(command: &str, dirs: &[PathBuf]) -> String {
    let searched = std::env::join_paths(dirs)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut text = crate::i18n::gettext_f(
        "command not found: {command} (searched PATH: {path})",
        &[("command", command), ("path", &searched)],
    );
    if let Some(hint) = install_hint(command) {
        text.push_str(&crate::i18n::gettext_f(
            "; install it with {hint}",
            &[("hint", hint)],
        ));
    }
    text
}

/// The program to run: a command with a `/` is taken as a path (relative to
/// the agent's cwd); a bare name is searched in each directory of `path_dirs`.
pub fn resolve_program(command: &str, cwd: &Path, path_dirs: &[PathBuf]) -> Option<PathBuf> {
    if command.contains('/') {
        let p = cwd.join(command);
        return is_executable(&p).then_some(p);
    }
    path_dirs
        .iter()
        .map(|d| d.join(command))
        .find(|p| is_executable(p))
}

pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_bare_names_on_the_path_and_paths_against_cwd() {
        let dirs = vec![PathBuf::from("/nonexistent"), PathBuf::from("/bin")];
        assert_eq!(
            resolve_program("sh", Path::new("/"), &dirs),
            Some(PathBuf::from("/bin/sh"))
        );
        assert_eq!(resolve_program("no-such-agent-xyz", Path::new("/"), &dirs), None);
        assert_eq!(
            resolve_program("./sh", Path::new("/bin"), &[]),
            Some(PathBuf::from("/bin/./sh"))
        );
    }

    #[test]
    fn the_login_path_comes_after_the_agents_own_and_before_user_dirs() {
        let dirs = search_dirs(Some("/a:/b"), Some("/b:/c"));
        assert_eq!(
            &dirs[..3],
            &[PathBuf::from("/a"), PathBuf::from("/b"), PathBuf::from("/c")]
        );
        assert!(dirs.iter().any(|d| d.ends_with(".cargo/bin")));
        assert!(dirs.contains(&PathBuf::from("/usr/local/bin")));
    }

    #[test]
    fn known_agents_get_a_hint() {
        let msg = not_found("claude-agent-acp", &[PathBuf::from("/x"), PathBuf::from("/y")]);
        assert!(msg.contains("claude-agent-acp (searched PATH: /x:/y)"), "{msg}");
        assert!(
            msg.ends_with("install it with npm install -g @zed-industries/claude-agent-acp"),
            "{msg}"
        );
        assert!(!not_found("mine", &[]).contains("install it"));
    }
}
