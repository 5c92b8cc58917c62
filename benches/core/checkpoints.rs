//! Checkpoints (issue 42) on a tree of 10,000 files / 200 MB, each figure
//! against git itself on a copy of the same tree, in the same run:
//!
//! - the first snapshot of the fresh tree; floor: `git init`, `git add -A`
//!   and `git write-tree` on the copy;
//! - a snapshot when nothing changed; floor: `git add -A && git write-tree`
//!   on the copy (its index as fresh as ours);
//! - the time a turn's checkpoint adds before the prompt goes out: `begin`
//!   and the wait for the snapshot before the turn (goal: ≤ 5 ms at the
//!   median, set when the prompt did not wait);
//! - the Changes of a turn that touched 100 files, computed off the main
//!   loop; floor: `git diff-tree -r -p` of the same two commits.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use parley::core::checkpoints::shadow::Shadow;
use parley::core::checkpoints::CheckpointService;

use super::{figures, median};

const FILES: usize = 10_000;
const FILE_BYTES: usize = 20 * 1024;

/// 10,000 files of 20 KiB of text (200 MB), 100 to a directory.
fn make_tree(root: &Path) {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..FILES {
        let dir = root.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("dir");
        }
        let mut text = String::with_capacity(FILE_BYTES);
        while text.len() < FILE_BYTES {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            text.push_str(&format!("{seed:016x} line\n"));
        }
        std::fs::write(dir.join(format!("f{i:05}.txt")), text).expect("file");
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_DIR", dir.join(".git"))
        .env("GIT_WORK_TREE", dir)
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

fn copy_tree(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .args(["-a"])
        .arg(from)
        .arg(to)
        .status()
        .expect("cp")
        .success();
    assert!(ok, "cp");
}

fn report(name: &str, ours: Duration, floor: Duration, goal: Option<f64>) {
    let ratio = ours.as_secs_f64() / floor.as_secs_f64();
    let goal_text = goal.map(|g| format!("   goal: ≤ {g}")).unwrap_or_default();
    println!(
        "checkpoints {name}: {:>8.1} ms   floor {:>8.1} ms   ratio {ratio:>5.2}{goal_text}",
        ours.as_secs_f64() * 1e3,
        floor.as_secs_f64() * 1e3
    );
    figures::record(
        &format!("checkpoints {name}"),
        ours.as_secs_f64() * 1e3,
        "ms",
        Some(floor.as_secs_f64() * 1e3),
        goal,
    );
}

pub fn bench() {
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(&tree).expect("tree");
    make_tree(&tree);
    // The first snapshot, three times each, each on a fresh store and copy.
    let (mut firsts, mut first_floors) = (Vec::new(), Vec::new());
    for round in 0..3 {
        let store = tmp.path().join(format!("store{round}"));
        let t = Instant::now();
        let shadow = Shadow::open(&store, &tree).expect("shadow");
        shadow.snapshot().expect("snapshot");
        firsts.push(t.elapsed());
        let copy = tmp.path().join(format!("copy{round}"));
        copy_tree(&tree, &copy);
        let t = Instant::now();
        git(&copy, &["init", "-q"]);
        git(&copy, &["add", "-A"]);
        git(&copy, &["write-tree"]);
        first_floors.push(t.elapsed());
        if round > 0 {
            let _ = std::fs::remove_dir_all(&copy);
            let _ = std::fs::remove_dir_all(&store);
        }
    }
    report(
        "first snapshot, 10,000 files / 200 MB (median of 3)",
        median(firsts),
        median(first_floors),
        Some(1.5),
    );
    // Nothing changed: ours and git's, in turns.
    let store = tmp.path().join("store0");
    let copy = tmp.path().join("copy0");
    let shadow = Shadow::open(&store, &tree).expect("shadow");
    let (mut same, mut same_floor) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        let t = Instant::now();
        shadow.snapshot().expect("snapshot");
        same.push(t.elapsed());
        let t = Instant::now();
        git(&copy, &["add", "-A"]);
        git(&copy, &["write-tree"]);
        same_floor.push(t.elapsed());
    }
    report(
        "snapshot when nothing changed (median of 15)",
        median(same),
        median(same_floor),
        Some(1.5),
    );

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (tx, _rx) = parley::core::events::channel();
    let service = CheckpointService::new(tx, Some(store.clone()));
    // What a turn's checkpoint adds before the prompt: `begin`, and the
    // wait for the snapshot before the turn (the prompt goes out once it
    // is taken, so that a write the moment it arrives is the turn's). An
    // open session's prompt waits all of it; a new session's overlaps it.
    let mut added = Vec::new();
    for turn in 0..15 {
        let id = format!("m{turn}");
        let (t, start) = rt.block_on(async {
            let t = Instant::now();
            let start = service.begin("bench", "c-bench", &id, vec![tree.clone()]);
            if let Some(s) = &start {
                s.recorded(Duration::from_secs(10)).await;
            }
            (t.elapsed(), start)
        });
        added.push(t);
        if let Some(start) = start {
            rt.block_on(async {
                service.end(start);
                service.settle(Duration::from_secs(60)).await;
            });
        }
    }
    let added = median(added);
    println!(
        "checkpoints time added before the prompt (median of 15): {:>6.2} ms   goal: ≤ 5 ms",
        added.as_secs_f64() * 1e3
    );
    figures::record(
        "checkpoints time added before the prompt",
        added.as_secs_f64() * 1e3,
        "ms",
        None,
        Some(5.0),
    );

    // A turn that touches 100 files; its Changes against diff-tree.
    let start = rt
        .block_on(async {
            let s = service.begin("bench", "c-100", "m100", vec![tree.clone()]);
            service.before_recorded("bench").await;
            s
        })
        .expect("begin");
    for i in 0..100 {
        let p = tree.join(format!("d{:03}/f{:05}.txt", i, i * 100));
        let mut text = std::fs::read_to_string(&p).expect("read");
        text.insert_str(text.len() / 2, "a line the agent wrote\n");
        std::fs::write(&p, text).expect("write");
    }
    rt.block_on(async {
        service.end(start);
        service.settle(Duration::from_secs(60)).await;
    });
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    let mut files = 0;
    for _ in 0..9 {
        let t = Instant::now();
        let c = rt
            .block_on(service.changes("c-100", Some("m100")))
            .expect("changes");
        ours.push(t.elapsed());
        files = c.turns.first().map_or(0, |t| t.files.len());
        let t = Instant::now();
        let out = shadow
            .git
            .run(
                &[
                    "diff-tree",
                    "-r",
                    "-p",
                    "refs/parley/c-100/m100/before",
                    "refs/parley/c-100/m100/after",
                ],
                None,
            )
            .expect("diff-tree");
        floor.push(t.elapsed());
        assert!(!out.is_empty());
    }
    assert_eq!(files, 100, "the turn's 100 files");
    report(
        "Changes of a turn of 100 files, off the main loop (median of 9)",
        median(ours),
        median(floor),
        None,
    );
}
