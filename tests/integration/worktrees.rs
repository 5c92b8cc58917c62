//! Conversations in worktrees of their own (issue 62), with real demo
//! agents and real git: two agents edit the same file at once, each in
//! its own worktree, the main checkout untouched; Apply brings the first
//! over and refuses the second, naming the file, with nothing lost; the
//! turns' checkpoints work inside the worktree; Discard lets one go; a
//! restarted Parley finds the conversation's worktree again.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use parley::core::events::Event;
use serde_json::{json, Value};

use crate::common::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_agents_in_worktrees_of_one_repository_are_applied_or_refused_by_file() {
    let repo = tempfile::tempdir().expect("repo");
    let r = repo.path();
    git(r, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(r.join("src")).expect("src");
    std::fs::write(r.join("src/a.txt"), "start\n").expect("write");
    git(r, &["add", "-A"]);
    git(r, &["commit", "-q", "-m", "start"]);
    // Both agents work in the repository's `src`.
    let agent =
        |name: &str| json!({"name": name, "command": demo(), "cwd": r.join("src").display().to_string()});
    let mut h = Harness::new(&[agent("a"), agent("b")]);
    let mut made = Vec::new();
    for name in ["a", "b"] {
        let wt = h
            .core
            .call("ChatService.NewInWorktree", &[json!(name)])
            .await
            .expect("NewInWorktree");
        assert!(wt["branch"].as_str().unwrap_or("").starts_with("parley/"), "{wt}");
        assert!(wt["cwd"].as_str().unwrap_or("").ends_with("/src"), "{wt}");
        assert!(!wt["path"]
            .as_str()
            .unwrap_or("")
            .starts_with(&r.display().to_string()));
        made.push(wt);
    }
    // Each changes the same file in its own tree, at the same time; `a`
    // also writes one through Parley's fs/*.
    let fs_file = format!("{}/fs.txt", made[0]["cwd"].as_str().unwrap_or(""));
    h.core
        .chat
        .send("a", "disk-edit-now write:a.txt=from\\sa\\n")
        .expect("send a");
    h.core
        .chat
        .send("b", "disk-edit-now write:a.txt=from\\sb\\n")
        .expect("send b");
    // Both idle, in whatever order they end.
    let idle = std::cell::RefCell::new(std::collections::HashSet::new());
    h.wait_for("both idle", Duration::from_secs(30), move |e| {
        if let Event::TurnChanged(t) = e {
            if !t.busy {
                idle.borrow_mut().insert(t.agent.clone());
            }
        }
        idle.borrow().len() == 2
    })
    .await;
    h.core
        .chat
        .send("a", &format!("fs-write {fs_file} through-parley"))
        .expect("send");
    h.wait_idle("a").await;
    assert_eq!(
        read(&r.join("src/a.txt")),
        "start\n",
        "the main checkout is untouched"
    );
    assert!(!r.join("src/fs.txt").exists());
    // The turns' checkpoints are the worktree's.
    h.wait_for(
        "a's checkpoints",
        Duration::from_secs(30),
        |e| matches!(e, Event::ChangesUpdated(c) if c.agent == "a"),
    )
    .await;
    let changes = h
        .core
        .call("ChatService.Changes", &[json!("a")])
        .await
        .expect("Changes");
    assert!(changes["total"].to_string().contains("a.txt"), "{changes}");

    let status = h
        .core
        .call("ChatService.Worktree", &[json!("a")])
        .await
        .expect("Worktree");
    let files: Vec<&str> = status["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(files, vec!["src/a.txt", "src/fs.txt"], "{status}");

    let applied = h
        .core
        .call("ChatService.Apply", &[json!("a")])
        .await
        .expect("Apply a");
    assert_eq!(applied["files"], json!(["src/a.txt", "src/fs.txt"]), "{applied}");
    assert_eq!(read(&r.join("src/a.txt")), "from a\n");
    // The second changed the same line: refused, named, nothing written.
    let refused = h
        .core
        .call("ChatService.Apply", &[json!("b")])
        .await
        .expect_err("b conflicts");
    assert!(
        refused.contains("src/a.txt") && refused.contains("same lines"),
        "{refused}"
    );
    assert_eq!(read(&r.join("src/a.txt")), "from a\n");
    let b_path = made[1]["path"].as_str().unwrap_or("").to_owned();
    assert_eq!(
        read(&Path::new(&b_path).join("src/a.txt")),
        "from b\n",
        "nothing of b's is lost"
    );

    // Discard b: its worktree and branch go; a is listed.
    let b_branch = made[1]["branch"].as_str().unwrap_or("").to_owned();
    h.core
        .call("ChatService.Discard", &[json!("b")])
        .await
        .expect("Discard");
    assert!(!Path::new(&b_path).exists());
    assert_eq!(git(r, &["branch", "--list", &b_branch]), "");
    let listed = h.core.worktrees.list();
    assert_eq!(listed.len(), 1, "{listed:?}");

    // After a restart, the stored conversation works in its worktree again.
    let conversation = h.core.chat.checkpoint_key("a");
    let mut h = h.restart().await;
    h.core.chat.open("a", &conversation).await.expect("open");
    let status = h
        .core
        .call("ChatService.Worktree", &[json!("a")])
        .await
        .expect("Worktree");
    assert_eq!(status["branch"], made[0]["branch"], "{status}");
    let _ = &mut h;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_outside_a_repository_or_on_another_host_gets_the_reason() {
    let plain = tempfile::tempdir().expect("plain");
    let h = Harness::new(&[
        json!({"name": "here", "command": demo(), "cwd": plain.path().display().to_string()}),
        json!({"name": "far", "command": "parley-demo-agent", "cwd": "/srv", "host": "ssh://elsewhere"}),
    ]);
    let e = h
        .core
        .call("ChatService.NewInWorktree", &[json!("here")])
        .await
        .expect_err("not a repository");
    assert!(e.contains("is not in a git repository"), "{e}");
    let e = h
        .core
        .call("ChatService.NewInWorktree", &[json!("far")])
        .await
        .expect_err("remote");
    assert!(e.contains("another host"), "{e}");
    let e = h
        .core
        .call("ChatService.Worktree", &[json!("here")])
        .await
        .expect_err("no worktree");
    assert!(e.contains("has no worktree"), "{e}");
    let _: Value = Value::Null;
}
