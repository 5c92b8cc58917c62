//! Worktrees (issue 62) in a repository of 100,000 files, each figure
//! against git itself in the same run, interleaved (one `worktree add`
//! varies from 1.5 s to 11 s between runs here):
//!
//! - making a conversation's worktree; floor: `git worktree add` alone
//!   (goal: ≤ 1.2 ×);
//! - where a worktree with a 2,000-file change stands ("All changes":
//!   `ChatService.Worktree`), goal: under 300 ms; floor: `git status`
//!   in the worktree.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use parley::core::worktrees::WorktreeService;

use super::{figures, median};

const FILES: usize = 100_000;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

pub fn bench() {
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("repo");
    for i in 0..FILES {
        let dir = repo.join(format!("d{:03}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&dir).expect("dir");
        }
        std::fs::write(dir.join(format!("f{i:06}.txt")), format!("file {i}\n")).expect("file");
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "start"]);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let service = WorktreeService::new(Some(tmp.path().join("data/worktrees")));
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for round in 0..3 {
        let t = Instant::now();
        let wt = rt
            .block_on(service.create("bench", &repo, None, &format!("round {round}")))
            .expect("create");
        ours.push(t.elapsed());
        let plain = tmp.path().join(format!("plain-{round}"));
        let t = Instant::now();
        git(
            &repo,
            &[
                "worktree",
                "add",
                "--quiet",
                "-b",
                &format!("plain-{round}"),
                &plain.display().to_string(),
                "HEAD",
            ],
        );
        floor.push(t.elapsed());
        if round == 0 {
            // A 2,000-file change in the first: its status below.
            for i in 0..2000 {
                let p = Path::new(&wt.path).join(format!("d{:03}/f{:06}.txt", i / 20, i * 50));
                std::fs::write(p, format!("changed {i}\n")).expect("change");
            }
        }
    }
    let (ours, floor) = (median(ours), median(floor));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "worktrees make one, 100,000 files: {:>8.1} ms   floor (git worktree add alone) {:>8.1} ms   ratio {:>5.2}   goal: ≤ 1.2",
        ms(ours),
        ms(floor),
        ms(ours) / ms(floor)
    );
    figures::record(
        "worktrees make one in a repository of 100,000 files (median of 3)",
        ms(ours),
        "ms",
        Some(ms(floor)),
        Some(1.2),
    );
    let first = service.list().into_iter().next().expect("a worktree");
    let (mut status, mut status_floor) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        let s = rt.block_on(service.status(&first)).expect("status");
        status.push(t.elapsed());
        assert_eq!(s.files.len(), 2000);
        let t = Instant::now();
        git(
            Path::new(&first.path),
            &["status", "--porcelain", "--untracked-files=all"],
        );
        status_floor.push(t.elapsed());
    }
    let (status, status_floor) = (median(status), median(status_floor));
    println!(
        "worktrees All changes of a 2,000-file change: {:>8.1} ms   floor (git status) {:>8.1} ms   goal: < 300 ms",
        ms(status),
        ms(status_floor)
    );
    figures::record(
        "worktrees All changes of a 2,000-file change (median of 5)",
        ms(status),
        "ms",
        Some(ms(status_floor)),
        None,
    );
}
