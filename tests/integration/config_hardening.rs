//! Issue 22, the configuration: saving through a symlink (dotfile managers),
//! keys given twice, and a file that is not UTF-8, through ConfigService,
//! the watcher and parley-cli.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parley::core::config::Problem;
use parley::core::events::Event;
use parley::core::services::{Core, Options};
use parley::core::types::AgentState::*;

use crate::common::*;

/// A core on `dir/config.json`, which is whatever the caller put there (a
/// link, a file that is not UTF-8).
fn harness_on(dir: tempfile::TempDir, watch: bool) -> Harness {
    let (core, rx) = Core::new(Options {
        config_path: Some(dir.path().join("config.json")),
        timings: fast(),
        spawn_prefix: Vec::new(),
        watch,
        history: None,
    })
    .expect("core");
    Harness::of(core, rx, dir, fast())
}

/// `dir/config.json` → a file in another directory holding `text`; returns
/// the link's directory and the target (its directory lives as long as the
/// second value).
fn linked_config(text: &str) -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("tempdir");
    let dots = tempfile::tempdir().expect("tempdir");
    let target = dots.path().join("parley.jsonc");
    std::fs::write(&target, text).expect("write");
    std::os::unix::fs::symlink(&target, home.path().join("config.json")).expect("link");
    (home, target, dots)
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

async fn next_change(h: &mut Harness, what: &str) -> (bool, Vec<Problem>) {
    match h
        .wait_for(what, Duration::from_secs(5), |e| {
            matches!(e, Event::ConfigChanged(_))
        })
        .await
    {
        Event::ConfigChanged(c) => (c.valid, c.problems),
        _ => unreachable!("the predicate matched config:changed"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn save_through_a_symlinked_configuration_writes_the_target_and_keeps_the_link() {
    use std::os::unix::fs::PermissionsExt;
    let (home, target, dots) = linked_config(&config_text(&[agent("a", "")], 4, "0"));
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let h = harness_on(home, false);
    let link = h.path();
    assert!(h.core.config.current().valid);

    let before = std::fs::read(&target).expect("read");
    let problems = h.core.config.save("{ \"agents\": 3 }").expect("answer");
    assert!(!problems.is_empty(), "an invalid text is refused");
    assert_eq!(std::fs::read(&target).expect("read"), before, "and not written");

    let text = "// kept in my dotfiles\n{\n  \"theme\": \"dark\",\n  \"agents\": []\n}\n";
    assert!(h.core.config.save(text).expect("saved").is_empty());
    assert!(is_link(&link), "the link stays a link");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), text);
    assert_eq!(h.core.config.content().expect("content"), text);
    let mode = std::fs::metadata(&target).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the target keeps its mode");
    assert!(
        temp_files(h.dir.path()).is_empty(),
        "{:?}",
        temp_files(h.dir.path())
    );
    assert!(
        temp_files(dots.path()).is_empty(),
        "{:?}",
        temp_files(dots.path())
    );
}

/// A dotfile manager writes the real file, not the link: that is a change
/// of the configuration too.
#[tokio::test(flavor = "multi_thread")]
async fn an_edit_of_the_link_target_is_picked_up() {
    let (home, target, _dots) = linked_config(&config_text(&[agent("a", "")], 4, "0"));
    let mut h = harness_on(home, true);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let tmp = target.with_extension("new");
    std::fs::write(&tmp, config_text(&[agent("b", "")], 4, "0")).expect("write");
    std::fs::rename(&tmp, &target).expect("rename");
    let (valid, problems) = next_change(&mut h, "a change of the target").await;
    assert!(valid, "{problems:?}");
    assert_eq!(h.core.agents.list()[0].name, "b");
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_given_twice_are_refused_by_save_and_reported_when_edited() {
    let mut h = Harness::with(&config_text(&[agent("a", "")], 4, "0"), fast(), true);
    let path = h.path();
    let before = std::fs::read(&path).expect("read");
    let demo = demo();
    let twice = format!(
        "{{\n  \"agents\": [],\n  \"agents\": [\n    {{\"name\": \"x\", \"command\": \"{demo}\", \"name\": \"y\"}}\n  ]\n}}\n"
    );
    let problems = h.core.config.save(&twice).expect("answer");
    let found: Vec<(usize, usize, &str)> = problems
        .iter()
        .map(|p| (p.line, p.column, p.message.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            (3, 3, "agents: duplicate key \"agents\" (first at line 2)"),
            (
                4,
                34 + demo.chars().count(),
                "agents[0].name: duplicate key \"name\" (first at line 4)"
            ),
        ]
    );
    assert_eq!(std::fs::read(&path).expect("read"), before, "nothing written");

    h.core.agents.start("a").await.expect("start");
    tokio::time::sleep(Duration::from_millis(200)).await;
    std::fs::write(&path, &twice).expect("write");
    let (valid, problems) = next_change(&mut h, "config:changed").await;
    assert!(!valid);
    assert_eq!((problems[0].line, problems[0].column), (3, 3), "{problems:?}");
    assert!(!h.core.config.current().valid);
    let list = h.core.agents.list();
    assert_eq!(
        (list[0].name.as_str(), list[0].state),
        ("a", Ready),
        "still running"
    );
}

#[test]
fn cli_validate_reports_a_key_given_twice_with_its_position_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("twice.json");
    std::fs::write(&file, "{\n  \"theme\": \"dark\",\n    \"theme\": \"light\"\n}\n").expect("write");
    let out = std::process::Command::new(cli())
        .arg("validate")
        .arg(&file)
        .output()
        .expect("parley-cli");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "{}:3:5: error: theme: duplicate key \"theme\" (first at line 2)\n",
            file.display()
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_saved_as_not_utf8_while_running_is_reported_and_agents_keep_running() {
    let mut h = Harness::with(&config_text(&[agent("a", "")], 4, "0"), fast(), true);
    h.core.agents.start("a").await.expect("start");
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Latin-1 "é" (0xE9) on line 2, after 12 bytes.
    std::fs::write(h.path(), b"{\n  \"theme\": \"caf\xe9\"\n}\n").expect("write");
    let (valid, problems) = next_change(&mut h, "config:changed").await;
    assert!(!valid);
    assert_eq!(
        problems,
        vec![Problem {
            line: 2,
            column: 16,
            message: "the file is not valid UTF-8 at byte 17".into(),
            warning: false,
        }]
    );
    let current = h.core.config.current();
    assert!(!current.valid);
    assert_eq!(current.problems, problems);
    let list = h.core.agents.list();
    assert_eq!(
        (list[0].name.as_str(), list[0].state),
        ("a", Ready),
        "still running"
    );

    // Fixed again: valid again, on the new text.
    std::fs::write(h.path(), config_text(&[agent("a", ""), agent("b", "")], 4, "0")).expect("write");
    let (valid, problems) = next_change(&mut h, "config:changed after the fix").await;
    assert!(valid, "{problems:?}");
    assert_eq!(h.core.agents.list().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_that_is_not_utf8_at_start_or_on_open_loads_as_invalid() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("config.json"), b"\xff{}").expect("write");
    let h = harness_on(dir, false);
    let current = h.core.config.current();
    assert!(!current.valid);
    assert_eq!((current.problems[0].line, current.problems[0].column), (1, 1));
    assert!(h.core.agents.list().is_empty());

    let other = h.dir.path().join("other.json");
    std::fs::write(&other, b"{}\n\xc3(").expect("write");
    h.core.config.open(&other).await.expect("opened, not refused");
    let current = h.core.config.current();
    assert!(!current.valid);
    assert_eq!(
        current.problems[0].message,
        "the file is not valid UTF-8 at byte 3"
    );
}

/// `parley-cli validate` reads the file with `read_to_string`, which refuses
/// such a file as unreadable (exit 2). The fix is in src/bin/parley-cli.rs,
/// outside this change: read bytes and call `validate::validate_bytes`.
#[test]
fn cli_validate_reports_a_file_that_is_not_utf8_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("latin1.json");
    std::fs::write(&file, b"{\n  \"theme\": \"caf\xe9\"\n}\n").expect("write");
    let out = std::process::Command::new(cli())
        .arg("validate")
        .arg(&file)
        .output()
        .expect("parley-cli");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "{}:2:16: error: the file is not valid UTF-8 at byte 17\n",
            file.display()
        )
    );
}
