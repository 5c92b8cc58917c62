//! Checkpoints (issue 42) with real agent processes: the demo agent writes
//! files by itself and through `fs/write_text_file`; Changes lists exactly
//! those, Undo turn restores them byte for byte, ignored files and the
//! user's `.git` stay as they were; `parley-cli changes` and `undo`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use parley::core::events::Event;
use serde_json::{json, Value};

use crate::common::*;

fn agent_in(name: &str, cwd: &Path) -> Value {
    json!({"name": name, "command": demo(), "cwd": cwd.display().to_string()})
}

/// Every file below `dir` (`.git` too) with its bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .expect("git runs")
        .success();
    assert!(ok, "git {args:?}");
}

/// A project under git: a source file, one to delete, an ignored build dir.
fn project() -> tempfile::TempDir {
    let work = tempfile::tempdir().expect("tempdir");
    let w = work.path();
    std::fs::create_dir_all(w.join("src")).expect("src");
    std::fs::create_dir_all(w.join("target")).expect("target");
    std::fs::write(w.join("src/main.rs"), "fn main() {}\n").expect("write");
    std::fs::write(w.join("old.txt"), "old\n").expect("write");
    std::fs::write(w.join(".gitignore"), "target/\n").expect("write");
    std::fs::write(w.join("target/build.log"), "built\n").expect("write");
    git(w, &["init", "-q"]);
    git(w, &["add", "-A"]);
    git(w, &["commit", "-q", "-m", "start"]);
    work
}

async fn changes_updated(h: &mut Harness, agent: &str) -> usize {
    let a = agent.to_owned();
    match h
        .wait_for(
            "changes:updated",
            Duration::from_secs(30),
            move |e| matches!(e, Event::ChangesUpdated(c) if c.agent == a),
        )
        .await
    {
        Event::ChangesUpdated(c) => c.files_changed,
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn files_an_agent_wrote_by_itself_are_listed_and_undone_byte_for_byte() {
    let work = project();
    let w = work.path();
    let before = tree(w);
    let mut h = Harness::new(&[agent_in("a", w)]);
    let turn = h
        .core
        .chat
        .send(
            "a",
            "disk-edit append:src/main.rs=//\\sedited\\n write:notes/todo.md=one\\ntwo\\n delete:old.txt \
             write:target/build.log=rebuilt\\n",
        )
        .expect("send");
    h.wait_idle("a").await;
    assert_eq!(changes_updated(&mut h, "a").await, 3);
    let listed = h
        .core
        .call("ChatService.Changes", &[json!("a")])
        .await
        .expect("Changes");
    let files = &listed["turns"][0]["files"];
    let mut seen: Vec<(String, String)> = files
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap_or("").to_owned(),
                f["status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("notes/todo.md".into(), "added".into()),
            ("old.txt".into(), "deleted".into()),
            ("src/main.rs".into(), "modified".into()),
        ],
        "{listed}"
    );
    assert_eq!(listed["turns"][0]["turn"], json!(turn));
    let main = files
        .as_array()
        .and_then(|f| f.iter().find(|f| f["path"] == "src/main.rs"))
        .expect("main.rs");
    assert_eq!(main["hunks"][0]["lines"], json!([" fn main() {}", "+// edited"]));

    let build = std::fs::read(w.join("target/build.log")).expect("build log");
    let undone = h
        .core
        .call("ChatService.UndoTurn", &[json!("a"), json!(turn)])
        .await
        .expect("UndoTurn");
    assert_eq!(undone["files"].as_array().map(Vec::len), Some(3), "{undone}");
    // As before the turn, byte for byte, the user's .git included; the
    // ignored build log as the turn left it.
    let mut expected = before;
    for (p, bytes) in &mut expected {
        if p.ends_with("target/build.log") {
            *bytes = build.clone();
        }
    }
    let mut now = tree(w);
    now.retain(|(p, _)| !p.starts_with(w.join("notes")));
    assert_eq!(now, expected);
    assert!(!w.join("notes/todo.md").exists());
    // No checkpoint went into the user's repository.
    let refs = Command::new("git")
        .args(["for-each-ref"])
        .current_dir(w)
        .output()
        .expect("git");
    assert!(!String::from_utf8_lossy(&refs.stdout).contains("parley"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_through_parley_waits_for_the_first_snapshot_and_a_revert_can_be_undone() {
    let work = project();
    let w = work.path();
    let mut h = Harness::new(&[agent_in("a", w)]);
    let file = w.join("src/main.rs");
    let turn = h
        .core
        .chat
        .send(
            "a",
            &format!("fs-write {} fn main() {{ println!(\"x\"); }}", file.display()),
        )
        .expect("send");
    h.wait_idle("a").await;
    assert_eq!(changes_updated(&mut h, "a").await, 1);
    let written = std::fs::read_to_string(&file).expect("read");
    let c = h
        .core
        .chat
        .changes("a", None, Some(&turn))
        .await
        .expect("changes");
    assert_eq!(c.turns[0].files.len(), 1, "the write is the turn's change: {c:?}");
    let r = h
        .core
        .call(
            "ChatService.Revert",
            &[json!("a"), json!(turn), json!("src/main.rs")],
        )
        .await
        .expect("Revert");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "fn main() {}\n");
    assert_eq!(r["files"], json!(["src/main.rs"]));
    let c = h
        .core
        .chat
        .changes("a", None, Some(&turn))
        .await
        .expect("changes");
    assert_eq!(
        c.turns[0].files[0].review,
        parley::core::checkpoints::Review::Reverted
    );
    h.core
        .call("ChatService.UndoRevert", &[json!("a"), r["id"].clone()])
        .await
        .expect("UndoRevert");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), written);
    // A path the turn did not change is refused, and nothing is written.
    let e = h
        .core
        .call(
            "ChatService.Revert",
            &[json!("a"), json!(turn), json!("../outside.txt")],
        )
        .await
        .expect_err("not the turn's");
    assert!(e.contains("no file"), "{e}");
}

#[test]
fn parley_cli_lists_changes_and_undoes_the_last_turn() {
    let work = project();
    let w = work.path();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent_in("a", w)], 4, "0")).expect("config");
    let config = config.display().to_string();
    let run = |args: &[&str]| {
        let out = Command::new(cli())
            .args(args)
            .args(["--config", &config])
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_STATE_HOME", dir.path())
            .output()
            .expect("parley-cli");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = run(&["send", "a", "disk-edit write:src/main.rs=fn\\smain()\\s{\\s}\\n"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&["changes", "a"]);
    assert_eq!(code, 0, "{err}");
    let changes: Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(changes["filesChanged"], json!(1), "{changes}");
    assert_eq!(changes["total"][0]["path"], json!("src/main.rs"));
    let (code, out, err) = run(&["undo", "a"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("src/main.rs"), "{out}");
    assert_eq!(
        std::fs::read_to_string(w.join("src/main.rs")).expect("read"),
        "fn main() {}\n"
    );
    // Nothing left to undo the same way: the file is the turn's no more.
    let (code, _, err) = run(&["undo", "a", "m-none"]);
    assert_eq!(code, 1);
    assert!(err.contains("no checkpoint"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_conversation_deletes_its_checkpoints() {
    let work = project();
    let mut h = Harness::new(&[agent_in("a", work.path())]);
    h.core
        .chat
        .send("a", "disk-edit write:notes.md=hi\\n")
        .expect("send");
    h.wait_idle("a").await;
    assert_eq!(changes_updated(&mut h, "a").await, 1);
    let id = h.core.chat.checkpoint_key("a");
    let record = h
        .core
        .checkpoints
        .store()
        .expect("a store")
        .join("conversations")
        .join(format!("{id}.json"));
    assert!(record.exists(), "{}", record.display());
    h.core.chat.delete("a", &id).await.expect("delete");
    assert!(!record.exists());
    let c = h.core.chat.changes("a", Some(&id), None).await.expect("changes");
    assert!(c.turns.is_empty(), "{c:?}");
}
