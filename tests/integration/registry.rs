//! The ACP registry (issue 19), driven through `parley-cli registry` and
//! `serve` as scripts drive it: a registry served from a loopback HTTP
//! server holding a binary agent (a tar.gz of a launcher for the demo
//! agent), an npx agent (a package tarball npx fetches from the same
//! server), and hostile archives. Each run of parley-cli gets its own
//! XDG directories, so nothing here touches the machine's.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;

#[path = "../support/registry_server.rs"]
mod registry_server;
use registry_server::*;

fn good_archive() -> Vec<u8> {
    registry_server::good_archive(demo())
}

fn launcher() -> Vec<u8> {
    registry_server::launcher(demo())
}

fn binary_entry(id: &str, version: &str, url: &str, sum: Option<String>) -> Value {
    let platform = parley::core::registry::platform();
    let mut target = json!({"archive": url, "cmd": "./demo/current/demo-agent", "args": ["--quiet"]});
    if let Some(sum) = sum {
        target["sha256"] = json!(sum);
    }
    json!({
        "id": id, "name": format!("Demo {id}"), "version": version,
        "description": "The demo agent, as a binary", "license": "GPL-3.0-or-later",
        "repository": "https://example.invalid/demo",
        "distribution": {"binary": {platform: target}}
    })
}

/// One parley-cli run in `dir`'s own XDG directories.
struct Env {
    dir: tempfile::TempDir,
    server: Server,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Env {
            dir,
            server: Server::start(),
        }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config.jsonc")
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data/parley/agents")
    }

    fn command(&self, args: &[&str]) -> Command {
        let d = self.dir.path();
        let mut c = Command::new(cli());
        c.args(args)
            .arg("--config")
            .arg(self.config())
            .env("HOME", d.join("home"))
            .env("XDG_CONFIG_HOME", d.join("config"))
            .env("XDG_STATE_HOME", d.join("state"))
            .env("XDG_DATA_HOME", d.join("data"))
            .env("XDG_CACHE_HOME", d.join("cache"))
            .env("PARLEY_REGISTRY_URL", self.server.url("/registry.json"))
            .env("PARLEY_REGISTRY_MAX_UNPACKED", (16u64 << 20).to_string())
            .env("npm_config_cache", d.join("npm-cache"))
            .env_remove("PARLEY_CONFIG");
        c
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.command(args).output().expect("run parley-cli");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn registry(&self, agents: &[Value]) {
        let body = json!({"version": "1.0.0", "agents": agents, "extensions": []});
        self.server
            .put("/registry.json", Route::Bytes(body.to_string().into_bytes()));
    }
}

/// A configuration a person wrote: comments everywhere, a trailing comma.
const COMMENTED: &str = r#"// My agents. Hands off my comments.
{
  /* the look */
  "theme": "dark",
  "agents": [
    // the first one
    {
      "name": "first",   // keep this
      "command": "parley-demo-agent",
    },
    // an agent I switched off:
    // { "name": "old", "command": "old-agent" },
  ],
}
"#;

fn last_json(stdout: &str) -> Value {
    stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null)
}

fn listed<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["id"] == id))
        .unwrap_or(&Value::Null)
}

/// Everything below `dir`, as paths relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap_or(&p).display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_binary_agent_is_added_run_updated_and_removed_keeping_every_comment() {
    let env = Env::new();
    std::fs::write(env.config(), COMMENTED).expect("config");
    let archive = good_archive();
    env.server
        .put("/demo-1.0.0.tar.gz", Route::Bytes(archive.clone()));
    // Downloads redirect (release assets do): followed, relative or not.
    env.server.put(
        "/releases/demo-1.0.0.tar.gz",
        Route::Redirect("/moved/demo-1.0.0.tar.gz".into()),
    );
    env.server.put(
        "/moved/demo-1.0.0.tar.gz",
        Route::Redirect(env.server.url("/demo-1.0.0.tar.gz")),
    );
    env.registry(&[binary_entry(
        "demo-bin",
        "1.0.0",
        &env.server.url("/releases/demo-1.0.0.tar.gz"),
        Some(sha256(&archive)),
    )]);

    // Listed from the network, not yet configured.
    let (code, out, err) = env.run(&["registry", "list", "--refresh"]);
    assert_eq!(code, 0, "{err}");
    let list = last_json(&out);
    assert_eq!(list["source"], "network", "{list}");
    assert_eq!(listed(&list, "demo-bin")["method"], "binary");
    assert_eq!(listed(&list, "demo-bin")["configured"], json!([]));
    assert!(env.dir.path().join("cache/parley/registry.json").exists());

    // Added: downloaded with progress, checked, unpacked, configured.
    let (code, out, err) = env.run(&["registry", "add", "demo-bin"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("\"event\":\"registry:progress\""), "{out}");
    assert_eq!(last_json(&out), json!({"added": "demo-bin"}));
    let text = std::fs::read_to_string(env.config()).expect("read");
    // An insertion only: the text before and after it is the original.
    let prefix = COMMENTED
        .bytes()
        .zip(text.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = COMMENTED.len() - prefix;
    assert_eq!(&text[text.len() - suffix..], &COMMENTED[prefix..], "{text}");
    let cmd = env.data().join("demo-bin/1.0.0/demo/current/demo-agent");
    assert!(
        text.contains(&format!("\"command\": \"{}\"", cmd.display())),
        "{text}"
    );
    assert!(
        text.contains("\"registry\": {\n        \"id\": \"demo-bin\",\n        \"version\": \"1.0.0\",\n        \"distribution\": \"binary\"\n      }"),
        "{text}"
    );
    assert!(
        text.contains("\"args\": [\n        \"--quiet\"\n      ]"),
        "{text}"
    );
    assert_eq!(
        tree(&env.data().join("demo-bin")),
        [
            "1.0.0",
            "1.0.0/demo",
            "1.0.0/demo/README",
            "1.0.0/demo/bin",
            "1.0.0/demo/bin/demo-agent",
            "1.0.0/demo/current"
        ]
    );
    let (code, _, err) = env.run(&["validate", env.config().to_str().unwrap_or_default()]);
    assert_eq!(code, 0, "{err}");

    // It runs: a turn with the installed agent.
    let (code, out, err) = env.run(&["send", "demo-bin", "hello", "--permission", "allow"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("\"turn:changed\""), "{out}");

    // Added twice: refused, nothing written.
    let (code, _, err) = env.run(&["registry", "add", "demo-bin"]);
    assert_eq!(code, 1);
    assert!(err.contains("already added, as demo-bin"), "{err}");
    assert_eq!(std::fs::read_to_string(env.config()).expect("read"), text);

    // The user's own touches to the entry: a comment and a variable.
    let text = text.replace(
        "      \"args\": [",
        "      // my own note\n      \"env\": {\"MY_KEY\": \"k\"},\n      \"args\": [",
    );
    std::fs::write(env.config(), &text).expect("write");

    // A newer version: listed as an update; the update rewrites that entry only.
    let archive2 = good_archive();
    env.server
        .put("/demo-1.1.0.tar.gz", Route::Bytes(archive2.clone()));
    env.registry(&[binary_entry(
        "demo-bin",
        "1.1.0",
        &env.server.url("/demo-1.1.0.tar.gz"),
        Some(sha256(&archive2)),
    )]);
    let (_, out, _) = env.run(&["registry", "list", "--refresh"]);
    let list = last_json(&out);
    assert_eq!(listed(&list, "demo-bin")["updateAvailable"], "1.1.0", "{list}");
    assert_eq!(listed(&list, "demo-bin")["configured"], json!(["demo-bin"]));
    let (code, out, err) = env.run(&["registry", "update"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(last_json(&out), json!({"updated": ["demo-bin"]}));
    let updated = std::fs::read_to_string(env.config()).expect("read");
    assert_eq!(
        updated,
        text.replace("1.0.0", "1.1.0"),
        "only the version and its directory changed"
    );
    assert_eq!(
        tree(&env.data().join("demo-bin")).first().map(String::as_str),
        Some("1.1.0")
    );
    assert!(!env.data().join("demo-bin/1.0.0").exists());
    let (_, out, _) = env.run(&["registry", "update", "demo-bin"]);
    assert_eq!(last_json(&out), json!({"updated": []}));

    // Removed with its files: the file is the original, byte for byte.
    let (code, out, err) = env.run(&["registry", "remove", "demo-bin", "--delete-files"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(std::fs::read_to_string(env.config()).expect("read"), COMMENTED);
    assert!(!env.data().join("demo-bin").exists());
}

#[test]
fn an_npx_agent_runs_through_npx() {
    let Some(npx) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("npx"))
            .find(|p| p.exists())
    }) else {
        // Node.js is on every machine of this kind; where it is not, say so.
        eprintln!("SKIP: no npx on PATH");
        return;
    };
    let env = Env::new();
    std::fs::write(env.config(), COMMENTED).expect("config");
    // A package tarball as npm packs it, whose program starts the demo agent.
    let mut t = Vec::new();
    tar_entry(
        &mut t,
        "package/package.json",
        b'0',
        "",
        0o644,
        br#"{"name": "parley-registry-test-agent", "version": "1.0.0", "bin": {"parley-registry-test-agent": "agent.sh"}}"#,
    );
    tar_entry(&mut t, "package/agent.sh", b'0', "", 0o755, &launcher());
    t.resize(t.len() + 1024, 0);
    env.server.put("/agent-1.0.0.tgz", Route::Bytes(gzip(&t)));
    env.registry(&[json!({
        "id": "npx-demo", "name": "Demo through npx", "version": "1.0.0",
        "description": "The demo agent, as an npm package",
        "distribution": {"npx": {"package": env.server.url("/agent-1.0.0.tgz"), "args": ["--acp"], "env": {"DEMO_FROM": "npx"}}}
    })]);
    let (code, out, err) = env.run(&["registry", "add", "npx-demo"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let text = std::fs::read_to_string(env.config()).expect("read");
    assert!(text.contains("\"command\": \"npx\""), "{text}");
    assert!(
        text.contains(&format!(
            "\"--yes\",\n        \"{}\",\n        \"--acp\"",
            env.server.url("/agent-1.0.0.tgz")
        )),
        "{text}"
    );
    assert!(text.contains("\"DEMO_FROM\": \"npx\""), "{text}");
    assert!(text.contains("\"distribution\": \"npx\""), "{text}");
    let (code, out, err) = env.run(&["send", "npx-demo", "hello", "--permission", "allow"]);
    assert_eq!(code, 0, "npx at {}: {out}\n{err}", npx.display());
    assert!(out.contains("\"turn:changed\""), "{out}");

    // Where no npx is to be found, Add says what to install and writes nothing.
    std::fs::write(env.config(), COMMENTED).expect("config");
    if npx.starts_with("/usr/local/bin") {
        eprintln!("SKIP: npx is in /usr/local/bin, where Parley always looks");
        return;
    }
    let out = env
        .command(&["registry", "add", "npx-demo"])
        .env("PATH", "/nonexistent")
        .env("SHELL", "/bin/false")
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("command not found: npx"), "{err}");
    assert!(err.contains("install it with sudo apt install npm"), "{err}");
    assert_eq!(std::fs::read_to_string(env.config()).expect("read"), COMMENTED);
    // In a Flatpak the agent runs on the host: npx is not looked for here.
    let out = env
        .command(&["registry", "add", "npx-demo"])
        .env("PATH", "/nonexistent")
        .env("SHELL", "/bin/false")
        .env("PARLEY_HOST_SPAWN", "flatpak-spawn --host")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(env.config()).expect("read");
    assert!(text.contains("\"command\": \"npx\""), "{text}");
}

#[test]
fn hostile_archives_are_refused_and_leave_nothing() {
    let env = Env::new();
    std::fs::write(env.config(), COMMENTED).expect("config");
    let outside = env.dir.path().join("data/parley");
    let zeros = vec![0u8; 32 << 20];
    let zip_escape = {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default();
        w.start_file("../zip-escaped", opts).expect("zip");
        w.write_all(b"x").expect("zip");
        w.finish().expect("zip").into_inner()
    };
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "dotdot",
            tar_gz(&[("demo/../../escaped", b'0', "", 0o755, b"x")]),
            "tar.gz",
            "climbs out",
        ),
        (
            "absolute",
            tar_gz(&[("/tmp/parley-absolute-escape", b'0', "", 0o755, b"x")]),
            "tar.gz",
            "is absolute",
        ),
        (
            "link-out",
            tar_gz(&[
                ("demo/", b'5', "", 0o755, b""),
                ("demo/out", b'2', "../../../../etc", 0o777, b""),
            ]),
            "tar.gz",
            "points outside",
        ),
        (
            "link-abs",
            tar_gz(&[("demo", b'2', "/etc", 0o777, b"")]),
            "tar.gz",
            "points outside",
        ),
        // A link inside, then a file written through it: refused all the same.
        (
            "through-link",
            tar_gz(&[("up", b'2', ".", 0o777, b""), ("up/up/x", b'0', "", 0o644, b"x")]),
            "tar.gz",
            "where a directory must be",
        ),
        (
            "device",
            tar_gz(&[("demo/null", b'3', "", 0o644, b"")]),
            "tar.gz",
            "device files",
        ),
        (
            "hardlink",
            tar_gz(&[("demo/passwd", b'1', "/etc/passwd", 0o644, b"")]),
            "tar.gz",
            "hard links",
        ),
        (
            "bomb",
            tar_gz(&[("demo/bin/demo-agent", b'0', "", 0o755, &zeros)]),
            "tar.gz",
            "unpacks to more than",
        ),
        ("zip-dotdot", zip_escape, "zip", "climbs out"),
        ("garbage", b"not an archive at all".to_vec(), "tar.gz", "damaged"),
    ];
    let mut agents = Vec::new();
    for (id, bytes, ext, _) in &cases {
        let path = format!("/{id}.{ext}");
        env.server.put(&path, Route::Bytes(bytes.clone()));
        agents.push(binary_entry(id, "1.0.0", &env.server.url(&path), None));
    }
    // A good archive with the wrong checksum.
    let good = good_archive();
    env.server.put("/good.tar.gz", Route::Bytes(good));
    agents.push(binary_entry(
        "bad-sum",
        "1.0.0",
        &env.server.url("/good.tar.gz"),
        Some("0".repeat(64)),
    ));
    // A redirect to plain HTTP elsewhere is not followed.
    env.server.put(
        "/out.tar.gz",
        Route::Redirect("http://example.invalid/x.tar.gz".into()),
    );
    agents.push(binary_entry(
        "redirect-out",
        "1.0.0",
        &env.server.url("/out.tar.gz"),
        None,
    ));
    // An npx "package" that is one of npx's own options (-c runs a shell).
    agents.push(json!({
        "id": "npx-option", "name": "x", "version": "1.0.0",
        "distribution": {"npx": {"package": "-c=touch pwned"}}
    }));
    env.registry(&agents);
    let mut cases: Vec<(&str, &str)> = cases.iter().map(|(id, _, _, why)| (*id, *why)).collect();
    cases.push(("bad-sum", "SHA-256"));
    cases.push(("npx-option", "is not a package name"));
    cases.push(("redirect-out", "redirected to http://example.invalid/x.tar.gz"));
    for (id, why) in cases {
        let (code, out, err) = env.run(&["registry", "add", id]);
        assert_eq!(code, 1, "{id}: {out}\n{err}");
        assert!(err.contains(why), "{id}: {err}");
        assert_eq!(
            std::fs::read_to_string(env.config()).expect("read"),
            COMMENTED,
            "{id}"
        );
        // Nothing was left, not even the agent's directory.
        let left = tree(&env.data());
        assert!(left.is_empty(), "{id}: {left:?}");
    }
    assert!(!outside.join("escaped").exists() && !outside.join("zip-escaped").exists());
    assert!(!env.data().join("zip-escaped").exists());
    assert!(!Path::new("/tmp/parley-absolute-escape").exists());
}

#[test]
fn a_cancelled_install_leaves_nothing_and_a_registry_offline_falls_back() {
    let env = Env::new();
    std::fs::write(env.config(), COMMENTED).expect("config");
    // Four megabytes at 64 KiB every 200 ms: about 13 s unless cancelled.
    let mut big = good_archive();
    big.extend(std::iter::repeat_n(0u8, 4 << 20));
    env.server.put("/slow.tar.gz", Route::Slow(big));
    env.registry(&[binary_entry(
        "slow",
        "1.0.0",
        &env.server.url("/slow.tar.gz"),
        None,
    )]);

    let mut child = env
        .command(&["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    writeln!(
        stdin,
        "{}",
        json!({"id": 1, "method": "RegistryService.Add", "params": ["slow"]})
    )
    .expect("write");
    let wait = |pred: &dyn Fn(&Value) -> bool| loop {
        let v = rx.recv_timeout(Duration::from_secs(20)).expect("in time");
        if pred(&v) {
            return v;
        }
    };
    let p = wait(&|v| v["event"] == "registry:progress" && v["payload"]["phase"] == "download");
    assert_eq!(p["payload"]["id"], "slow");
    assert!(tree(&env.data().join("slow"))
        .iter()
        .any(|p| p.starts_with(".download-")));
    writeln!(
        stdin,
        "{}",
        json!({"id": 2, "method": "RegistryService.Cancel", "params": ["slow"]})
    )
    .expect("write");
    let answer = wait(&|v| v["id"] == 1);
    assert_eq!(answer["error"], "cancelled", "{answer}");
    drop(stdin);
    let _ = child.wait();
    let left = tree(&env.data());
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(std::fs::read_to_string(env.config()).expect("read"), COMMENTED);

    // The network gone: the cached copy, and why.
    env.server.put(
        "/registry.json",
        Route::Bytes(b"<html>proxy error</html>".to_vec()),
    );
    let (code, out, err) = env.run(&["registry", "list", "--refresh"]);
    assert_eq!(code, 0, "{err}");
    let list = last_json(&out);
    assert_eq!(list["source"], "cache", "{list}");
    assert!(
        list["error"]
            .as_str()
            .unwrap_or("")
            .contains("is not an agent registry"),
        "{list}"
    );
    assert_eq!(listed(&list, "slow")["id"], "slow");
    // No cache either: the copy that ships with Parley.
    std::fs::remove_file(env.dir.path().join("cache/parley/registry.json")).expect("rm");
    let (_, out, _) = env.run(&["registry", "list", "--refresh"]);
    let list = last_json(&out);
    assert_eq!(list["source"], "bundled", "{list}");
    assert!(listed(&list, "gemini")["version"].is_string(), "{list}");
}

/// Add Agent to a host (issue 44): an npx package is added with its `host`
/// and `cwd`, nothing installed here; a download-only agent, a host Parley
/// cannot read and a relative cwd are refused, and nothing is written.
#[test]
fn an_npx_agent_is_added_to_another_host_and_a_download_is_refused() {
    let env = Env::new();
    std::fs::write(env.config(), COMMENTED).expect("config");
    env.registry(&[
        json!({"id": "npx-demo", "name": "Demo through npx", "version": "1.0.0",
            "description": "d", "license": "MIT", "repository": "https://example.invalid/x",
            "distribution": {"npx": {"package": "@demo/agent@1.0.0", "args": ["--acp"]}}}),
        binary_entry("bin-only", "1.0.0", &env.server.url("/none.tar.gz"), None),
    ]);
    let mut child = env
        .command(&["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut call = |id: u64, params: Value| {
        writeln!(
            stdin,
            "{}",
            json!({"id": id, "method": "RegistryService.Add", "params": params})
        )
        .expect("write");
        loop {
            let v = rx.recv_timeout(Duration::from_secs(20)).expect("in time");
            if v["id"] == id {
                return v;
            }
        }
    };
    let place = json!({"host": "ssh://me@devbox:2222", "cwd": "/srv/app"});
    let added = call(1, json!(["npx-demo", place]));
    assert_eq!(added["result"], "npx-demo-devbox", "{added}");
    let text = std::fs::read_to_string(env.config()).expect("config");
    assert!(
        text.contains("\"host\": \"ssh://me@devbox:2222\"") && text.contains("\"cwd\": \"/srv/app\""),
        "{text}"
    );
    assert!(
        text.contains("\"command\": \"npx\"") && text.contains("keep this"),
        "{text}"
    );
    assert!(!env.data().join("npx-demo").exists(), "nothing is installed here");
    // The same host again: already there; here: still possible.
    let again = call(2, json!(["npx-demo", place]));
    assert!(again["error"].to_string().contains("already added"), "{again}");
    for (id, params, expected) in [
        (3, json!(["bin-only", place]), "only as a download"),
        (
            4,
            json!(["npx-demo", {"host": "ssh://-oProxyCommand=x", "cwd": "/srv"}]),
            "not a name",
        ),
        (
            5,
            json!(["npx-demo", {"host": "toolbox://f41", "cwd": "src"}]),
            "absolute cwd",
        ),
    ] {
        let before = std::fs::read_to_string(env.config()).expect("config");
        let refused = call(id, params);
        assert!(refused["error"].to_string().contains(expected), "{refused}");
        assert_eq!(std::fs::read_to_string(env.config()).expect("config"), before);
    }
    drop(stdin);
    let _ = child.wait();
}
