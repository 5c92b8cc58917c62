//! The Flatpak manifests cannot be built here (no Flatpak remote): they are
//! checked offline, as far as that goes.

use std::path::Path;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn manifest(name: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(ROOT).join("build-aux").join(name)).expect("read");
    // flatpak-builder's JSON reader (json-glib) accepts /* */ comments; so does this one.
    parley::core::config::validate::parse(&text).unwrap_or_else(|p| panic!("{name}: {p:?}"))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn the_manifests_are_well_formed_and_name_what_exists() {
    for (name, id) in [
        ("io.github.parley.Parley.json", "io.github.parley.Parley"),
        (
            "io.github.parley.Parley.Devel.json",
            "io.github.parley.Parley.Devel",
        ),
    ] {
        let m = manifest(name);
        assert_eq!(m["id"], id, "{name}");
        assert_eq!(m["runtime"], "org.gnome.Platform");
        assert_eq!(m["sdk"], "org.gnome.Sdk");
        assert!(strings(&m["sdk-extensions"])
            .iter()
            .any(|e| e.ends_with("rust-stable")));
        assert_eq!(m["command"], "parley", "the program meson installs");
        let args = strings(&m["finish-args"]);
        for needed in [
            "--socket=wayland",
            "--socket=fallback-x11",
            "--talk-name=org.freedesktop.Flatpak",
            // Add Agent fetches the registry and agents' archives.
            "--share=network",
        ] {
            assert!(args.contains(&needed), "{name}: {needed}");
        }
        assert!(
            !args
                .iter()
                .any(|a| *a == "--filesystem=host" || *a == "--socket=session-bus"),
            "{name}: too broad"
        );
        let module = &m["modules"][0];
        assert_eq!(module["buildsystem"], "meson");
        // The .Devel id must be the one the build gives the program (D-Bus name, files).
        let devel = strings(&module["config-opts"]).contains(&"-Dprofile=development");
        assert_eq!(
            devel,
            id.ends_with(".Devel"),
            "{name}: the profile matches the id"
        );
        for source in module["sources"].as_array().expect("sources") {
            let path = match source {
                Value::String(s) => s.as_str(),
                other => other["path"].as_str().expect("a path"),
            };
            if path == "cargo-sources.json" {
                continue; // generated where the Flatpak is built, checked below
            }
            let full = Path::new(ROOT).join("build-aux").join(path);
            assert!(full.exists(), "{name}: {path} does not exist");
            assert!(
                full.join("meson.build").exists(),
                "{name}: {path} is not the source tree"
            );
        }
    }
}

#[test]
fn the_cargo_sources_cover_every_locked_crate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("python3")
        .arg(Path::new(ROOT).join("build-aux/flatpak-cargo-sources.py"))
        .arg(Path::new(ROOT).join("Cargo.lock"))
        .args(["--dl", "https://registry.invalid/crates"])
        .current_dir(dir.path())
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sources: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let lock = std::fs::read_to_string(Path::new(ROOT).join("Cargo.lock")).expect("lock");
    let checksums: Vec<&str> = lock
        .lines()
        .filter_map(|l| l.strip_prefix("checksum = \""))
        .map(|l| l.trim_end_matches('"'))
        .collect();
    let archives: Vec<&Value> = sources.iter().filter(|s| s["type"] == "archive").collect();
    assert_eq!(archives.len(), checksums.len(), "one archive per locked crate");
    for a in archives {
        let sha = a["sha256"].as_str().expect("sha256");
        assert!(checksums.contains(&sha));
        assert!(a["url"]
            .as_str()
            .expect("url")
            .starts_with("https://registry.invalid/crates/"));
    }
    assert!(
        sources.iter().any(|s| s["dest-filename"] == "config.toml"),
        "the vendored-sources config"
    );
}

/// Inside Flatpak (simulated: `PARLEY_HOST_SPAWN` names a stand-in for
/// `flatpak-spawn --host` that records what it was asked to run), the bundled
/// demo agent runs in the sandbox beside Parley, and only the user's own
/// agents go through the stand-in to the host.
#[test]
fn in_flatpak_the_bundled_agent_runs_inside_and_the_users_agents_on_the_host() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let mark = crate::common::unique("PARLEY_HOST_ENV");
    let record = dir.path().join("host-spawn.log");
    let recorder = dir.path().join("flatpak-spawn");
    let standin = Path::new(ROOT).join("tests/fake-flatpak-spawn");
    std::fs::write(
        &recorder,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            record.display(),
            standin.display()
        ),
    )
    .expect("write the recorder");
    let host_agent = dir.path().join("my-host-agent");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_parley-demo-agent"), &host_agent).expect("symlink");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&recorder, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        serde_json::json!({"agents": [
            {"name": "bundled", "command": "parley-demo-agent"},
            {"name": "mine", "command": host_agent,
             "env": {"MY_API_KEY": "s3cret-it's-$HOME-`id`", "PLAIN_MARK": mark}},
        ]})
        .to_string(),
    )
    .expect("write the configuration");
    let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_parley-cli"))
        .args(["serve", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .env(
            "PARLEY_HOST_SPAWN",
            format!("{} --host --watch-bus", recorder.display()),
        )
        .env("PARLEY_TEST_TIMINGS", "eof=1s,term=1s")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("parley-cli serve");
    let mut stdin = serve.stdin.take().expect("stdin");
    let mut lines = std::io::BufReader::new(serve.stdout.take().expect("stdout")).lines();
    let mut call = |id: u32, agent: &str| -> String {
        writeln!(
            stdin,
            r#"{{"id": {id}, "method": "AgentService.Start", "params": ["{agent}"]}}"#
        )
        .expect("write");
        loop {
            let line = lines.next().and_then(Result::ok).expect("an answer");
            if line.starts_with(&format!(r#"{{"id":{id},"#)) {
                return line;
            }
        }
    };
    assert_eq!(call(1, "bundled"), r#"{"id":1,"result":null}"#);
    let recorded = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(
        recorded.is_empty(),
        "the bundled agent went to the host: {recorded}"
    );
    assert_eq!(call(2, "mine"), r#"{"id":2,"result":null}"#);
    let recorded = std::fs::read_to_string(&record).expect("the stand-in was asked");
    // One call (the host wrapper script spans lines), for the user's agent.
    assert_eq!(recorded.matches("--host --watch-bus").count(), 1, "{recorded}");
    assert!(recorded.contains("my-host-agent"), "{recorded}");
    assert!(!recorded.contains("parley-demo-agent"), "{recorded}");
    // The environment went out of band: no value of it is an argument
    // (which every user sees in the process list), and the host agent has
    // it, quotes, `$` and backquotes as they were.
    assert!(
        !recorded.contains("s3cret") && !recorded.contains(&mark),
        "{recorded}"
    );
    let agents: Vec<i32> = crate::common::processes_with(&mark)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("my-host-agent"))
        })
        .collect();
    assert_eq!(agents.len(), 1, "the host agent has the environment");
    let environ = std::fs::read(format!("/proc/{}/environ", agents[0])).expect("environ");
    let wanted = b"MY_API_KEY=s3cret-it's-$HOME-`id`\0";
    assert!(
        environ.windows(wanted.len()).any(|w| w == wanted),
        "the key arrived changed"
    );
    drop(stdin);
    let status = serve.wait().expect("serve ends");
    assert!(status.success());
}
