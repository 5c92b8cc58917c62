//! The launch doctor: agents found through the login shell's PATH, and a
//! clear error (command, PATH searched, hint) when they are not.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::common::*;

fn script(path: &std::path::Path, body: &str) {
    std::fs::write(path, body).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn send(dir: &std::path::Path, shell: &std::path::Path, command: &str) -> (i32, String) {
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        serde_json::json!({"agents": [{"name": "a", "command": command}]}).to_string(),
    )
    .expect("write");
    let out = Command::new(cli())
        .args(["send", "a", "echo found", "--config"])
        .arg(&config)
        .env("SHELL", shell)
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .output()
        .expect("parley-cli");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn an_agent_on_the_login_shells_path_is_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hidden = dir.path().join("hidden-bin");
    std::fs::create_dir(&hidden).expect("mkdir");
    // An agent installed where a GUI session's PATH does not look.
    script(
        &hidden.join("my-acp-agent"),
        &format!("#!/bin/sh\nexec {} \"$@\"\n", demo()),
    );
    // A login shell whose profile adds that directory.
    let shell = dir.path().join("fake-login-shell");
    script(
        &shell,
        &format!("#!/bin/sh\nprintf '%s' \"/usr/bin:/bin:{}\"\n", hidden.display()),
    );
    let (code, out) = send(dir.path(), &shell, "my-acp-agent");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("\"text\":\"found\""), "{out}");

    // A login shell without it: the error names the command and the PATH searched.
    let plain = dir.path().join("plain-login-shell");
    script(&plain, "#!/bin/sh\nprintf '%s' /usr/bin:/bin\n");
    let (code, out) = send(dir.path(), &plain, "my-acp-agent");
    assert_eq!(code, 1);
    assert!(
        out.contains("command not found: my-acp-agent (searched PATH: /usr/bin:/bin:"),
        "{out}"
    );
    assert!(
        out.contains(".local/bin"),
        "user bin directories are searched too: {out}"
    );

    // A known agent comes with the way to install it.
    let (_, out) = send(dir.path(), &plain, "gemini");
    assert!(
        out.contains("install it with npm install -g @google/gemini-cli"),
        "{out}"
    );
}
