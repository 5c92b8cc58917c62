//! ConfigService: saving (valid only, byte for byte, atomic), watching the
//! file as editors change it, opening another file, recent files.

use std::time::{Duration, Instant};

use parley::core::events::Event;
use parley::core::types::AgentState::*;

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn save_writes_valid_text_byte_for_byte_and_never_invalid_text() {
    let h = Harness::new(&[agent("a", "")]);
    let path = h.path();
    let before = std::fs::read(&path).expect("read");
    let problems = h
        .core
        .config
        .save("{\n  \"agents\": [ {\"name\": \"a\"} ]\n}")
        .expect("answer");
    assert!(!problems.is_empty() && !problems[0].warning, "{problems:?}");
    assert_eq!(std::fs::read(&path).expect("read"), before, "untouched");
    let text = "// mine\n{\n  \"agents\": [], // none\n}\n";
    assert!(h.core.config.save(text).expect("saved").is_empty());
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
    assert_eq!(h.core.config.content().expect("content"), text);
}

#[tokio::test(flavor = "multi_thread")]
async fn save_keeps_the_file_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new(&[]);
    let path = h.path();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert!(h.core.config.save("{}").expect("saved").is_empty());
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

/// Parley killed with SIGKILL in the middle of saves leaves the old file or
/// the new one, never a part.
#[test]
fn a_save_interrupted_by_sigkill_leaves_old_or_new() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.json");
    let big = |tag: &str| {
        let agents: Vec<serde_json::Value> = (0..3000)
            .map(|i| serde_json::json!({"name": format!("{tag}{i}"), "command": "/bin/true"}))
            .collect();
        serde_json::to_string_pretty(&serde_json::json!({"agents": agents})).unwrap_or_default()
    };
    let (a, b) = (big("a"), big("b"));
    std::fs::write(&path, &a).expect("write");
    for round in 0..12u64 {
        let mut serve = std::process::Command::new(cli())
            .args(["serve", "--config"])
            .arg(&path)
            .env("XDG_STATE_HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("serve");
        // Saves stream in from another thread, so the kill lands mid-save.
        let mut stdin = serve.stdin.take().expect("stdin");
        let (a2, b2) = (a.clone(), b.clone());
        let writer = std::thread::spawn(move || {
            for i in 0..40 {
                let text = if i % 2 == 0 { &b2 } else { &a2 };
                let call = serde_json::json!({"id": i, "method": "ConfigService.Save", "params": [text]});
                if writeln!(stdin, "{call}").is_err() {
                    break;
                }
            }
        });
        std::thread::sleep(Duration::from_millis(150 + round * 40));
        let _ = serve.kill();
        let _ = serve.wait();
        let _ = writer.join();
        let now = std::fs::read_to_string(&path).expect("read");
        assert!(
            now == a || now == b,
            "round {round}: a partial file ({} bytes)",
            now.len()
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    // Only the last kill's temp file may be left: each save removes those of
    // writers that are gone.
    assert!(leftovers.len() <= 1, "{leftovers:?}");
}

async fn expect_change(h: &mut Harness, what: &str) -> Duration {
    let began = Instant::now();
    h.wait_for(what, Duration::from_secs(3), |e| {
        matches!(e, Event::ConfigChanged(_))
    })
    .await;
    began.elapsed()
}

#[tokio::test(flavor = "multi_thread")]
async fn edits_in_place_by_rename_and_by_delete_and_recreate_are_picked_up() {
    let mut h = Harness::with(&config_text(&[agent("a", "")], 4, "0"), fast(), true);
    let path = h.path();
    tokio::time::sleep(Duration::from_millis(200)).await;

    std::fs::write(&path, config_text(&[agent("a", ""), agent("b", "")], 4, "0")).expect("in place");
    let t1 = expect_change(&mut h, "an in-place write").await;
    assert_eq!(h.core.agents.list().len(), 2);

    let tmp = path.with_extension("swp");
    std::fs::write(&tmp, config_text(&[agent("c", "")], 4, "0")).expect("tmp");
    std::fs::rename(&tmp, &path).expect("rename");
    let t2 = expect_change(&mut h, "a rename-replace").await;
    assert_eq!(h.core.agents.list()[0].name, "c");

    std::fs::remove_file(&path).expect("delete");
    tokio::time::sleep(Duration::from_millis(150)).await;
    std::fs::write(&path, config_text(&[agent("d", "")], 4, "0")).expect("recreate");
    let t3 = expect_change(&mut h, "delete then recreate").await;
    assert_eq!(h.core.agents.list()[0].name, "d");
    eprintln!("picked up after {t1:?}, {t2:?}, {t3:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_edit_keeps_the_agents_running_and_reports_problems() {
    let mut h = Harness::with(&config_text(&[agent("a", "")], 4, "0"), fast(), true);
    h.core.agents.start("a").await.expect("start");
    std::fs::write(h.path(), "{ \"agents\": [ oops ] }").expect("write");
    match h
        .wait_for("config:changed", Duration::from_secs(3), |e| {
            matches!(e, Event::ConfigChanged(_))
        })
        .await
    {
        Event::ConfigChanged(c) => {
            assert!(!c.valid);
            assert_eq!(
                (c.problems[0].line, c.problems[0].column),
                (1, 15),
                "{:?}",
                c.problems
            );
        }
        _ => unreachable!(),
    }
    let list = h.core.agents.list();
    assert_eq!((list[0].name.as_str(), list[0].state), ("a", Ready));
    let current = h.core.config.current();
    assert!(!current.valid && !current.problems.is_empty());
    assert_eq!(
        h.core.config.content().expect("content"),
        "{ \"agents\": [ oops ] }",
        "nothing is overwritten"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn open_stops_agents_and_forgets_conversations() {
    let mut h = Harness::new(&[agent("a", "")]);
    h.core.chat.send("a", "echo hi").expect("send");
    h.wait_idle("a").await;
    let other = h.dir.path().join("other.json");
    std::fs::write(&other, config_text(&[agent("x", "")], 4, "0")).expect("write");
    h.core.config.open(&other).await.expect("open");
    h.wait_state("a", Stopped).await;
    let names: Vec<String> = h.core.agents.list().into_iter().map(|a| a.name).collect();
    assert_eq!(names, vec!["x"]);
    let current = h.core.config.current();
    assert_eq!(current.path, other.display().to_string());
    assert_eq!(serde_json::to_value(current.source).expect("json"), "opened");
    assert!(h.core.chat.conversation("a").is_err(), "a is gone");
    assert!(h
        .core
        .config
        .open(&h.dir.path().join("missing.json"))
        .await
        .is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_default_file_is_created_with_the_demo_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(cli())
        .args(["serve"])
        .env("XDG_CONFIG_HOME", dir.path())
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .env_remove("PARLEY_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            let mut stdin = c.stdin.take().expect("stdin");
            writeln!(stdin, r#"{{"id": 1, "method": "ConfigService.Current"}}"#)?;
            drop(stdin);
            c.wait_with_output()
        })
        .expect("serve");
    let text = String::from_utf8_lossy(&out.stdout);
    let answer: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["id"] == 1)
        .expect("an answer");
    let current = &answer["result"];
    assert_eq!(current["created"], true);
    assert_eq!(current["source"], "default");
    assert_eq!(current["valid"], true);
    let file = dir.path().join("parley/config.json");
    assert_eq!(current["path"], file.display().to_string());
    assert!(read(&file).contains("parley-demo-agent"));
    assert!(read(&file).contains("// {"), "commented-out agents");
}
