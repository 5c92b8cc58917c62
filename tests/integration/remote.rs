//! Agents where the code is (issue 44): the demo agent on a real sshd on
//! 127.0.0.1 (see `sshd`), driven through `parley-cli serve`. Its files and
//! terminals are those of sshd's own mount namespace; Stop, a dropped
//! connection and a killed Parley leave no process on either side.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;
use crate::sshd::{processes_running, unavailable, Sshd};

fn config(dir: &std::path::Path, agents: Vec<Value>) -> std::path::PathBuf {
    let config = dir.join("config.json");
    let text = serde_json::to_string_pretty(&json!({"agents": agents})).unwrap_or_default();
    std::fs::write(&config, text).expect("config");
    config
}

fn remote_agent(sshd: &Sshd, name: &str, host: &str, command: &str, marker: &str) -> Value {
    json!({"name": name, "command": command, "cwd": sshd.path("far"), "host": host,
        "env": {"PARLEY_TEST_MARK": marker}})
}

fn idle(s: &Serve) {
    s.wait("the turn's end", |v| {
        v["event"] == "turn:changed" && v["payload"]["busy"] == false
    });
}

/// The last agent message of `agent`'s conversation, as JSON text.
fn last_answer(s: &mut Serve, id: u64, agent: &str) -> String {
    let conversation = s.call(id, "ChatService.Conversation", json!([agent]));
    conversation["result"]["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "agent"))
        .map(Value::to_string)
        .unwrap_or_default()
}

fn skip_without_sshd() -> bool {
    match unavailable() {
        Some(why) => {
            eprintln!("skipped: {why}");
            true
        }
        None => false,
    }
}

/// Waits until no process's command line holds `needle`; those left.
fn gone_within(needle: &str, limit: Duration) -> Vec<i32> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let left = processes_running(needle);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_turn_over_ssh_reads_writes_and_runs_on_the_far_side() {
    if skip_without_sshd() {
        return;
    }
    let sshd = Sshd::start();
    let marker = unique("parley-remote-mark");
    let cfg = config(
        sshd.dir.path(),
        vec![remote_agent(
            &sshd,
            "devbox",
            "ssh://devbox",
            "parley-demo-agent",
            &marker,
        )],
    );
    let mut s = Serve::start_with(sshd.dir.path(), &cfg, &sshd.env());
    let (started, ready) = s.call_seeing(1, "AgentService.Start", json!(["devbox"]), |v| {
        v["event"] == "agent:state" && v["payload"]["state"] == "ready"
    });
    assert!(started.get("error").is_none(), "{started}");
    assert_eq!(ready["payload"]["host"], "ssh://devbox", "{ready}");
    let listed = s.call(2, "AgentService.List", json!([]));
    assert_eq!(listed["result"][0]["host"], "ssh://devbox", "{listed}");

    // The file is in sshd's namespace only: read there, absent here.
    let far = sshd.path("far");
    assert!(!far.join("secret.txt").exists(), "the tmpfs is visible here");
    s.call(
        3,
        "ChatService.Send",
        json!(["devbox", format!("fs-read {}/secret.txt", far.display())]),
    );
    idle(&s);
    let said = last_answer(&mut s, 4, "devbox");
    assert!(said.contains("only on the far side"), "{said}");

    // A write lands there, and not here.
    s.call(
        5,
        "ChatService.Send",
        json!([
            "devbox",
            format!("fs-write {}/written.txt hello-there", far.display())
        ]),
    );
    idle(&s);
    assert!(!far.join("written.txt").exists());
    // (Every session of this sshd is in its namespace.)
    assert_eq!(
        sshd.far(&format!("cat {}/written.txt", far.display())),
        "hello-there"
    );

    // A terminal runs there, in the agent's directory.
    s.call(
        6,
        "ChatService.Send",
        json!(["devbox", "terminal-run cat written.txt secret.txt"]),
    );
    idle(&s);
    let said = last_answer(&mut s, 7, "devbox");
    assert!(said.contains("exit 0"), "{said}");
    assert!(
        said.contains("hello-there") && said.contains("only on the far side"),
        "{said}"
    );

    // A permission request comes back here and is answered.
    s.call(8, "ChatService.Send", json!(["devbox", "permission"]));
    let p = s.wait("permission:requested", |v| v["event"] == "permission:requested");
    s.call(
        9,
        "ChatService.AnswerPermission",
        json!([p["payload"]["id"], "allow-once"]),
    );
    idle(&s);

    // Stop: the agent and everything of the helper's are gone on the far side.
    let cache = sshd.path("cache").display().to_string();
    assert!(
        !processes_with(&marker).is_empty(),
        "the agent should run before the stop"
    );
    assert!(
        !processes_running(&cache).is_empty(),
        "the helper should run before the stop"
    );
    let stopped = s.call(10, "AgentService.Stop", json!(["devbox"]));
    assert!(stopped.get("error").is_none(), "{stopped}");
    let left = gone_within(&cache, Duration::from_secs(5));
    assert!(left.is_empty(), "left on the far side after Stop: {left:?}");
    assert!(processes_with(&marker).is_empty());
    drop(s.stdin);
    let _ = s.child.wait();
}

#[test]
fn a_killed_parley_or_a_dropped_connection_leaves_nothing_and_start_works_again() {
    if skip_without_sshd() {
        return;
    }
    let sshd = Sshd::start();
    let marker = unique("parley-remote-kill");
    let mut a = remote_agent(&sshd, "devbox", "ssh://devbox", "parley-demo-agent", &marker);
    // Sessions kept by the agent there, to be resumed after a reconnect.
    a["env"]["PARLEY_DEMO_MODE"] = json!("resume");
    a["env"]["PARLEY_DEMO_SESSIONS"] = json!(sshd.path("sessions"));
    let cfg = config(sshd.dir.path(), vec![a]);
    let cache = sshd.path("cache").display().to_string();
    let control = "ControlMaster=yes";

    // SIGKILL of serve mid-turn: nothing of it left on either side in 5 s.
    let mut s = Serve::start_with(sshd.dir.path(), &cfg, &sshd.env());
    s.call(1, "ChatService.Send", json!(["devbox", "wait"]));
    s.wait("the answer begins", |v| v["event"] == "message:delta");
    assert!(!processes_running(&cache).is_empty());
    let _ = s.child.kill();
    let _ = s.child.wait();
    let left = gone_within(&cache, Duration::from_secs(5));
    assert!(left.is_empty(), "left on the far side after SIGKILL: {left:?}");
    let left = gone_within(
        sshd.path("ssh_config").to_str().unwrap_or("-"),
        Duration::from_secs(5),
    );
    assert!(left.is_empty(), "ssh left here after SIGKILL: {left:?}");

    // The connection dropped mid-turn (its ssh killed): error with the
    // reason, the turn ends, and Start works again.
    let mut s = Serve::start_with(sshd.dir.path(), &cfg, &sshd.env());
    s.call(
        1,
        "ChatService.Send",
        json!(["devbox", "echo kept across the drop"]),
    );
    idle(&s);
    s.call(10, "ChatService.Send", json!(["devbox", "wait"]));
    s.wait("the answer begins", |v| v["event"] == "message:delta");
    let masters: Vec<i32> = processes_running(control)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c).contains(&*sshd.path("ssh_config").to_string_lossy())
            })
        })
        .collect();
    assert_eq!(masters.len(), 1, "one held connection: {masters:?}");
    // SAFETY: a signal to the ssh this test's Parley started.
    unsafe { libc::kill(masters[0], libc::SIGKILL) };
    let error = s.wait("the error", |v| {
        v["event"] == "agent:state" && v["payload"]["state"] == "error"
    });
    let reason = error["payload"]["error"].as_str().unwrap_or_default();
    assert!(reason.contains("connection to devbox was lost"), "{reason}");
    idle(&s);
    let conversation = s.call(2, "ChatService.Conversation", json!(["devbox"]));
    let system = conversation["result"]["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "system"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(system["code"], "agent-unavailable", "{conversation}");
    assert!(
        system["error"]
            .as_str()
            .unwrap_or_default()
            .contains("connection to devbox was lost"),
        "{system}"
    );
    let left = gone_within(&cache, Duration::from_secs(5));
    assert!(left.is_empty(), "left on the far side after the drop: {left:?}");
    let (again, _) = s.call_seeing(3, "AgentService.Start", json!(["devbox"]), |v| {
        v["event"] == "agent:state" && v["payload"]["state"] == "ready"
    });
    assert!(again.get("error").is_none(), "{again}");
    // The conversation goes on in the session the agent kept (resumed).
    s.call(4, "ChatService.Send", json!(["devbox", "remembered"]));
    idle(&s);
    let said = last_answer(&mut s, 5, "devbox");
    assert!(said.contains("kept across the drop"), "{said}");
    drop(s.stdin);
    let _ = s.child.wait();
    assert!(gone_within(&cache, Duration::from_secs(5)).is_empty());
}

#[test]
fn unreachable_refused_unknown_and_missing_are_errors_with_the_reason() {
    if skip_without_sshd() {
        return;
    }
    let sshd = Sshd::start();
    let marker = unique("parley-remote-faults");
    let cfg = config(
        sshd.dir.path(),
        vec![
            remote_agent(&sshd, "nowhere", "ssh://nowhere", "parley-demo-agent", &marker),
            remote_agent(&sshd, "stranger", "ssh://stranger", "parley-demo-agent", &marker),
            remote_agent(
                &sshd,
                "unknown-key",
                "ssh://unknown-key",
                "parley-demo-agent",
                &marker,
            ),
            remote_agent(
                &sshd,
                "missing",
                "ssh://devbox",
                "no-such-agent-anywhere",
                &marker,
            ),
        ],
    );
    let mut s = Serve::start_with(sshd.dir.path(), &cfg, &sshd.env());
    let cases = [
        ("nowhere", "Connection refused"),
        ("stranger", "Permission denied"),
        ("unknown-key", "Host key verification failed"),
        ("missing", "no-such-agent-anywhere"),
    ];
    for (i, (agent, expected)) in cases.into_iter().enumerate() {
        let answer = s.call(10 + i as u64, "AgentService.Start", json!([agent]));
        let text = answer["error"].to_string();
        assert!(text.contains(expected), "{agent}: {answer}");
        let listed = s.call(20 + i as u64, "AgentService.List", json!([]));
        let row = listed["result"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["name"] == agent).cloned())
            .unwrap_or_default();
        assert_eq!(row["state"], "error", "{row}");
        assert!(
            row["error"].as_str().unwrap_or_default().contains(expected),
            "{row}"
        );
    }
    // The far side's own search is what is reported.
    let listed = s.call(30, "AgentService.List", json!([]));
    assert!(listed.to_string().contains("(on "), "{listed}");
    drop(s.stdin);
    let _ = s.child.wait();
}

/// The helper is checked on the far side before each start: one replaced
/// there after it was checked is put back, never run. A far side whose
/// shell prints a banner before every command is said to do so.
#[test]
fn a_replaced_helper_is_checked_again_and_a_banner_is_named() {
    if skip_without_sshd() {
        return;
    }
    let sshd = Sshd::start();
    let marker = unique("parley-remote-recheck");
    let cfg = config(
        sshd.dir.path(),
        vec![remote_agent(
            &sshd,
            "devbox",
            "ssh://devbox",
            "parley-demo-agent",
            &marker,
        )],
    );
    let mut s = Serve::start_with(sshd.dir.path(), &cfg, &sshd.env());
    let started = s.call(1, "AgentService.Start", json!(["devbox"]));
    assert!(started.get("error").is_none(), "{started}");
    s.call(2, "AgentService.Stop", json!(["devbox"]));
    // The far side's copy is replaced by another program.
    let helper = std::fs::read_dir(sshd.path("cache/parley"))
        .expect("the helper's folder")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("parley-helper-"))
        })
        .expect("the helper on the far side");
    let hostile = sshd.path("ran-the-replaced-helper");
    std::fs::write(&helper, format!("#!/bin/sh\ntouch {}\n", hostile.display())).expect("replace");
    let again = s.call(3, "AgentService.Start", json!(["devbox"]));
    assert!(again.get("error").is_none(), "{again}");
    assert!(!hostile.exists(), "the replaced helper ran");
    let name = helper
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes = std::fs::read(&helper).expect("helper");
    let digest: String = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    assert_eq!(format!("parley-helper-{digest}"), name, "the helper was put back");
    s.call(4, "AgentService.Stop", json!(["devbox"]));
    drop(s.stdin);
    let _ = s.child.wait();

    // A banner from the far side's shell, before every command: bash
    // reads ~/.bashrc for a command over ssh.
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        home.path().join(".bashrc"),
        "echo 'Welcome to devbox, have a nice day'\n",
    )
    .expect("banner");
    let noisy = Sshd::start_with_env(&format!("HOME={}", home.path().display()));
    let cfg = config(
        noisy.dir.path(),
        vec![remote_agent(
            &noisy,
            "devbox",
            "ssh://devbox",
            "parley-demo-agent",
            &marker,
        )],
    );
    let mut s = Serve::start_with(noisy.dir.path(), &cfg, &noisy.env());
    let answer = s.call(1, "AgentService.Start", json!(["devbox"]));
    let text = answer["error"].to_string();
    assert!(
        text.contains("prints text before every command") && text.contains("Welcome to devbox"),
        "{answer}"
    );
    drop(s.stdin);
    let _ = s.child.wait();
}

/// A container of the test's own for `podman://`: a root of busybox (the
/// shell and tools the helper's install script uses), the demo agent and
/// the libraries it links, imported as an image and running `sleep`.
/// Podman runs with runc and limits at or below the machine's (see
/// shared/notes/podman-here.md), through its own `containers.conf`.
struct Container {
    name: String,
    image: String,
    conf: tempfile::TempDir,
}

impl Container {
    fn podman(&self) -> std::process::Command {
        let mut c = std::process::Command::new("podman");
        c.env("CONTAINERS_CONF", self.conf.path().join("containers.conf"));
        c
    }

    /// The container, or exactly why podman cannot run one here.
    fn start() -> Result<Container, String> {
        let which = |p: &str| {
            ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
                .iter()
                .map(|d| std::path::Path::new(d).join(p))
                .find(|p| p.exists())
        };
        which("podman").ok_or("podman is not installed")?;
        let busybox = which("busybox").ok_or("busybox-static is not installed")?;
        let conf = tempfile::tempdir().map_err(|e| e.to_string())?;
        let runtime = if which("runc").is_some() {
            "runtime = \"runc\"\n"
        } else {
            ""
        };
        std::fs::write(
            conf.path().join("containers.conf"),
            format!(
                "[engine]\n{runtime}[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n"
            ),
        )
        .map_err(|e| e.to_string())?;
        // The root: busybox as /bin/*, the demo agent and its libraries.
        let root = conf.path().join("root");
        for d in [
            "bin",
            "usr/local/bin",
            "tmp",
            "root",
            "work",
            "proc",
            "dev",
            "sys",
        ] {
            std::fs::create_dir_all(root.join(d)).map_err(|e| e.to_string())?;
        }
        std::fs::copy(&busybox, root.join("bin/busybox")).map_err(|e| e.to_string())?;
        for tool in [
            "sh",
            "sha256sum",
            "cut",
            "uname",
            "mkdir",
            "cat",
            "chmod",
            "mv",
            "rm",
            "sleep",
            "ps",
            "env",
        ] {
            std::os::unix::fs::symlink("busybox", root.join("bin").join(tool)).map_err(|e| e.to_string())?;
        }
        std::fs::copy(demo(), root.join("usr/local/bin/parley-demo-agent")).map_err(|e| e.to_string())?;
        let ldd = std::process::Command::new("ldd")
            .arg(demo())
            .output()
            .map_err(|e| e.to_string())?;
        for lib in String::from_utf8_lossy(&ldd.stdout)
            .split_whitespace()
            .filter(|w| w.starts_with('/'))
        {
            let to = root.join(lib.trim_start_matches('/'));
            if let Some(d) = to.parent() {
                std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
            }
            std::fs::copy(lib, &to).map_err(|e| format!("{lib}: {e}"))?;
        }
        let tar = conf.path().join("root.tar");
        let packed = std::process::Command::new("tar")
            .arg("-C")
            .arg(&root)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status()
            .map_err(|e| e.to_string())?;
        if !packed.success() {
            return Err("tar failed".into());
        }
        let name = unique("parley-test");
        let c = Container {
            image: format!("localhost/{name}-root"),
            name,
            conf,
        };
        let run = |args: &[&str]| -> Result<(), String> {
            let out = c.podman().args(args).output().map_err(|e| e.to_string())?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "podman {} failed: {}",
                    args.first().copied().unwrap_or(""),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        run(&["import", &tar.display().to_string(), &c.image])?;
        run(&["run", "-d", "--name", &c.name, &c.image, "/bin/sleep", "600"])
            .map_err(|e| format!("podman cannot run a container on this machine: {e}"))?;
        Ok(c)
    }

    /// Runs a shell command inside; its output.
    fn sh(&self, script: &str) -> String {
        let out = self
            .podman()
            .args(["exec", &self.name, "/bin/sh", "-c", script])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        out.unwrap_or_default()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.podman().args(["rm", "-f", "-t", "0", &self.name]).output();
        let _ = self.podman().args(["rmi", "-f", &self.image]).output();
    }
}

/// `podman://` on a real engine: a turn with `fs/*` served inside the
/// container, Stop and a killed Parley leaving nothing running in it;
/// where podman cannot run a container here, exactly why.
#[test]
fn a_turn_in_a_podman_container_or_why_not() {
    let c = match Container::start() {
        Ok(c) => c,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    c.sh("echo 'only in the container' > /work/here.txt");
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = unique("parley-podman-mark");
    let cfg = config(
        dir.path(),
        vec![
            json!({"name": "box", "command": "parley-demo-agent", "cwd": "/work",
            "host": format!("podman://{}", c.name), "env": {"PARLEY_TEST_MARK": marker}}),
        ],
    );
    let env = vec![(
        "CONTAINERS_CONF".to_owned(),
        c.conf.path().join("containers.conf").display().to_string(),
    )];
    let mut s = Serve::start_with(dir.path(), &cfg, &env);
    s.call(1, "ChatService.Send", json!(["box", "fs-read /work/here.txt"]));
    idle(&s);
    let said = last_answer(&mut s, 2, "box");
    assert!(said.contains("only in the container"), "{said}");
    s.call(
        3,
        "ChatService.Send",
        json!(["box", "fs-write /work/written.txt from-parley"]),
    );
    idle(&s);
    assert!(c.sh("cat /work/written.txt").contains("from-parley"));
    assert!(!std::path::Path::new("/work/written.txt").exists());
    assert!(
        !processes_with(&marker).is_empty(),
        "the agent runs in the container"
    );
    // Stop: nothing of the agent left in the container.
    s.call(4, "AgentService.Stop", json!(["box"]));
    let left = gone_within_env(&marker, Duration::from_secs(10));
    assert!(left.is_empty(), "left in the container after Stop: {left:?}");
    // A killed Parley mid-turn: nothing left either.
    s.call(5, "ChatService.Send", json!(["box", "wait"]));
    s.wait("the answer begins", |v| v["event"] == "message:delta");
    assert!(!processes_with(&marker).is_empty());
    let _ = s.child.kill();
    let _ = s.child.wait();
    let left = gone_within_env(&marker, Duration::from_secs(10));
    assert!(left.is_empty(), "left in the container after SIGKILL: {left:?}");
}

/// Waits until no process's environment holds `marker`; those left.
fn gone_within_env(marker: &str, limit: Duration) -> Vec<i32> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let left = processes_with(marker);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A terminal sign-in method runs on the far side: `parley-cli auth` on its
/// own terminal here, the command there (its mark is left in the far
/// side's directory only).
#[test]
fn signing_in_through_a_terminal_runs_on_the_far_side() {
    use std::io::Write;
    if skip_without_sshd() {
        return;
    }
    let sshd = Sshd::start();
    let marker = unique("parley-remote-auth");
    let mut a = remote_agent(&sshd, "t", "ssh://devbox", "parley-demo-agent", &marker);
    a["env"]["PARLEY_DEMO_MODE"] = json!("auth-terminal");
    let cfg = config(sshd.dir.path(), vec![a]);
    let mut child = std::process::Command::new(cli())
        .args(["auth", "t", "demo-terminal", "--config"])
        .arg(&cfg)
        .envs(sshd.env())
        .env("XDG_STATE_HOME", sshd.dir.path())
        .env("XDG_DATA_HOME", sshd.dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("parley-cli");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"yes\n");
    }
    let out = child.wait_with_output().expect("output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Demo sign-in for Parley") && text.contains("Signed in."),
        "{text}"
    );
    let mark = sshd.path("far").join(".parley-demo-signed-in");
    assert!(!mark.exists(), "the sign-in ran here");
    assert_eq!(
        sshd.far(&format!("test -e {} && echo there", mark.display())),
        "there\n"
    );
}

/// claude-agent-acp (a real agent, through the model-API stand-in) on the
/// far side: it starts there, and its Read of a file only the far side has
/// comes back with that file's text.
#[test]
fn claude_over_ssh_reads_a_file_only_the_far_side_has() {
    use crate::model_api::{ModelApi, Reply};
    if skip_without_sshd() {
        return;
    }
    let sshd = Sshd::start();
    let secret = sshd.path("far").join("secret.txt");
    let p = crate::real_agents::Project::new();
    let api = ModelApi::start(vec![
        Reply::tool("Read", json!({"file_path": secret})),
        Reply::text("It says it is only on the far side."),
    ]);
    let Some(mut agent) = crate::real_claude::claude(&p, &api) else {
        return;
    };
    agent["host"] = json!("ssh://devbox");
    agent["cwd"] = json!(sshd.path("far"));
    let cfg = config(sshd.dir.path(), vec![agent]);
    let mut s = Serve::start_with(sshd.dir.path(), &cfg, &sshd.env());
    s.call(
        1,
        "ChatService.Send",
        json!(["claude", "What does secret.txt say?"]),
    );
    // Whatever it asks is allowed; the turn's end is awaited.
    let mut id = 2;
    loop {
        let v = s.wait("the turn's end", |v| {
            v["event"] == "permission:requested"
                || (v["event"] == "turn:changed" && v["payload"]["busy"] == false)
        });
        if v["event"] != "permission:requested" {
            break;
        }
        s.call(
            id,
            "ChatService.AnswerPermission",
            json!([v["payload"]["id"], "allow-once"]),
        );
        id += 1;
    }
    let said = last_answer(&mut s, 100, "claude");
    assert!(said.contains("\"stopReason\":\"end_turn\""), "{said}");
    // The model was told the file's text: the Read ran there.
    let told = api
        .requests()
        .iter()
        .any(|r| r.main && r.body.to_string().contains("only on the far side\\n"));
    assert!(told, "the Read's result never reached the model");
    drop(s.stdin);
    let _ = s.child.wait();
}
