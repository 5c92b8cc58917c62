//! Without a home directory (no `HOME`, and no entry in the password
//! database: a user id nobody has), Parley never takes `/` for a home.
//! Run as root only, which may start `parley-cli` as another user.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use crate::common::*;

/// A user id with no entry in the password database.
const NOBODY_KNOWS: u32 = 54_321;

/// A directory the other user may write.
fn open_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    dir
}

/// `parley-cli` and the demo agent where that user can run them: the
/// build may lie where it cannot reach (a clone under /root).
struct Programs {
    dir: tempfile::TempDir,
}

impl Programs {
    /// `None` (the test skips, saying why) unless this is root.
    fn new() -> Option<Programs> {
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } != 0 {
            eprintln!("SKIPPED: only root can run parley-cli as a user the system does not know");
            return None;
        }
        let dir = open_dir();
        for from in [cli(), demo()] {
            let to = dir.path().join(Path::new(from).file_name().expect("a file name"));
            if std::fs::hard_link(from, &to).is_err() {
                std::fs::copy(from, &to).expect("copy the program");
            }
        }
        Some(Programs { dir })
    }

    fn demo(&self) -> PathBuf {
        self.dir
            .path()
            .join(Path::new(demo()).file_name().expect("a file name"))
    }

    /// `parley-cli ARGS` as that user, with no `HOME` and `env` only.
    fn cli(&self, args: &[&str], env: &[(&str, &Path)]) -> (bool, String) {
        let cli = self
            .dir
            .path()
            .join(Path::new(cli()).file_name().expect("a file name"));
        let mut cmd = std::process::Command::new(cli);
        cmd.args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .uid(NOBODY_KNOWS)
            .gid(NOBODY_KNOWS);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run parley-cli");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }
}

#[test]
fn without_a_home_parley_refuses_to_start_and_makes_nothing_at_the_root() {
    let Some(p) = Programs::new() else { return };
    let made_before = Path::new("/.config/parley").exists() || Path::new("/.local/share/parley").exists();
    let (ok, said) = p.cli(&["conversations", "demo"], &[]);
    assert!(!ok, "{said}");
    assert!(said.contains("cannot find a home directory"), "{said}");
    assert!(said.contains("XDG_CONFIG_HOME"), "{said}");
    if !made_before {
        assert!(!Path::new("/.config/parley").exists(), "made /.config/parley");
        assert!(
            !Path::new("/.local/share/parley").exists(),
            "made /.local/share/parley"
        );
    }
}

#[test]
fn without_a_home_an_agent_without_a_cwd_is_refused_and_one_with_cwd_slash_runs() {
    let Some(p) = Programs::new() else { return };
    let dir = open_dir();
    let config = dir.path().join("parley");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let xdg: Vec<(&str, &Path)> = [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ]
    .into_iter()
    .map(|v| (v, dir.path()))
    .collect();
    let write = |cwd: Option<&str>| {
        let mut a = serde_json::json!({"name": "demo", "command": p.demo().display().to_string()});
        if let Some(c) = cwd {
            a["cwd"] = c.into();
        }
        let path = config.join("config.json");
        std::fs::write(&path, serde_json::json!({"agents": [a]}).to_string()).expect("config");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    };
    write(None);
    let (_, said) = p.cli(&["send", "demo", "echo hi"], &xdg);
    assert!(said.contains("there is no home directory"), "{said}");
    assert!(said.contains("give it a cwd"), "{said}");
    // `/`, said explicitly, is the user's choice.
    write(Some("/"));
    let (ok, said) = p.cli(&["send", "demo", "echo hi"], &xdg);
    assert!(ok && said.contains("\"hi\""), "{said}");
}
