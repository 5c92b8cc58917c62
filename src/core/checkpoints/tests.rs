//! Checkpoints on real directories with the real `git`: what a turn
//! changed, ignored and oversized files, reverts, merges and refusals.

use std::path::{Path, PathBuf};

use super::*;
use crate::core::events;

struct Place {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    work: PathBuf,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("data/checkpoints");
    let work = tmp.path().join("project");
    std::fs::create_dir_all(&work).expect("work dir");
    Place {
        _tmp: tmp,
        store,
        work,
    }
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("dir");
    }
    std::fs::write(p, text).expect("write");
}

/// Every file below `dir` (the `.git` too) with its bytes.
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

fn service(p: &Place) -> CheckpointService {
    let (tx, _rx) = events::channel();
    CheckpointService::new(tx, Some(p.store.clone()))
}

/// Runs one "turn": the snapshot before, `change`, the snapshot after.
async fn turn(k: &CheckpointService, p: &Place, id: &str, change: impl FnOnce()) {
    let start = k
        .begin("demo", "c1", id, vec![p.work.clone()])
        .expect("checkpoints on");
    k.before_recorded("demo").await;
    // As a command of the turn: what changes while it runs is the turn's.
    k.note_command("demo", "command", true);
    change();
    k.note_command("demo", "command", false);
    k.end(start);
    // `end` runs in the background: wait for the record.
    for _ in 0..3000 {
        if let Ok(c) = k.changes("c1", Some(id)).await {
            if c.turns.iter().any(|t| t.turn == id && !t.pending) {
                return;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("turn {id} was never recorded");
}

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
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

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_lists_what_it_changed_and_undo_restores_it() {
    let p = place();
    write(&p.work.join("src/main.rs"), "fn main() {}\n");
    write(&p.work.join("gone.txt"), "bye\n");
    write(&p.work.join(".gitignore"), "build/\n*.log\n");
    write(&p.work.join("build/out.bin"), "old build\n");
    git(&p.work, &["init", "-q"]);
    git(&p.work, &["add", "-A"]);
    git(&p.work, &["commit", "-q", "-m", "start"]);
    let before = tree(&p.work);
    let k = service(&p);
    turn(&k, &p, "m1", || {
        write(
            &p.work.join("src/main.rs"),
            "fn main() {\n    println!(\"hi\");\n}\n",
        );
        write(&p.work.join("new.txt"), "new\n");
        std::fs::remove_file(p.work.join("gone.txt")).expect("remove");
        // Ignored: never listed, never restored.
        write(&p.work.join("build/out.bin"), "new build\n");
        write(&p.work.join("run.log"), "log\n");
    })
    .await;
    let c = k.changes("c1", None).await.expect("changes");
    let mut listed: Vec<(String, FileStatus)> = c.turns[0]
        .files
        .iter()
        .map(|f| (f.path.clone(), f.status))
        .collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        listed,
        vec![
            ("gone.txt".into(), FileStatus::Deleted),
            ("new.txt".into(), FileStatus::Added),
            ("src/main.rs".into(), FileStatus::Modified),
        ]
    );
    assert_eq!(c.files_changed, 3);
    let build = std::fs::read(p.work.join("build/out.bin")).expect("build");
    let reverted = k
        .revert("demo", "c1", "m1", None, None, How::default())
        .await
        .expect("undo turn");
    assert_eq!(reverted.files.len(), 3, "{reverted:?}");
    // Byte for byte as before the turn (.git included); ignored files
    // as the turn left them.
    let mut now = tree(&p.work);
    now.retain(|(f, _)| !f.ends_with("run.log"));
    let mut expected = before.clone();
    for (f, bytes) in &mut expected {
        if f.ends_with("build/out.bin") {
            *bytes = build.clone();
        }
    }
    assert_eq!(now, expected);
    assert!(p.work.join("run.log").exists());
    // The revert's Undo puts the turn's result back.
    k.undo_revert(&reverted.id).await.expect("undo the revert");
    assert!(p.work.join("new.txt").exists());
    assert!(!p.work.join("gone.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn one_hunk_of_two_and_merges_and_refusals() {
    let p = place();
    let lines: Vec<String> = (1..=30).map(|i| format!("line {i}")).collect();
    let text = |ls: &[String]| ls.join("\n") + "\n";
    write(&p.work.join("a.txt"), &text(&lines));
    let k = service(&p);
    let mut changed = lines.clone();
    changed[1] = "LINE 2".into();
    changed[25] = "LINE 26".into();
    turn(&k, &p, "m1", || write(&p.work.join("a.txt"), &text(&changed))).await;
    let c = k.changes("c1", Some("m1")).await.expect("changes");
    assert_eq!(c.turns[0].files[0].hunks.len(), 2);
    // Revert the second hunk only.
    k.revert(
        "demo",
        "c1",
        "m1",
        Some("a.txt"),
        Some(1),
        How {
            merge: false,
            all: false,
        },
    )
    .await
    .expect("hunk");
    let mut want = changed.clone();
    want[25] = "line 26".into();
    assert_eq!(
        std::fs::read_to_string(p.work.join("a.txt")).expect("read"),
        text(&want)
    );
    // The first one after that: still the turn's, no question asked.
    k.revert(
        "demo",
        "c1",
        "m1",
        Some("a.txt"),
        Some(0),
        How {
            merge: false,
            all: false,
        },
    )
    .await
    .expect("hunk");
    assert_eq!(
        std::fs::read_to_string(p.work.join("a.txt")).expect("read"),
        text(&lines)
    );

    // A second turn; then the user edits elsewhere in the file.
    turn(&k, &p, "m2", || write(&p.work.join("a.txt"), &text(&changed))).await;
    let mut user = changed.clone();
    user[14] = "the user's line".into();
    write(&p.work.join("a.txt"), &text(&user));
    let refused = k
        .revert(
            "demo",
            "c1",
            "m2",
            Some("a.txt"),
            None,
            How {
                merge: false,
                all: false,
            },
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(CheckpointError::Revert(revert::RevertError::ChangedSince(_)))
        ),
        "{refused:?}"
    );
    assert_eq!(
        std::fs::read_to_string(p.work.join("a.txt")).expect("read"),
        text(&user)
    );
    let merged = k
        .revert(
            "demo",
            "c1",
            "m2",
            Some("a.txt"),
            None,
            How {
                merge: true,
                all: false,
            },
        )
        .await
        .expect("merge");
    assert!(merged.merged);
    let mut want = lines.clone();
    want[14] = "the user's line".into();
    assert_eq!(
        std::fs::read_to_string(p.work.join("a.txt")).expect("read"),
        text(&want)
    );

    // A third turn; the user changes the very line it changed.
    turn(&k, &p, "m3", || write(&p.work.join("a.txt"), &text(&changed))).await;
    let mut clash = changed.clone();
    clash[1] = "the user's LINE 2".into();
    write(&p.work.join("a.txt"), &text(&clash));
    let refused = k
        .revert(
            "demo",
            "c1",
            "m3",
            Some("a.txt"),
            Some(0),
            How {
                merge: true,
                all: false,
            },
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(CheckpointError::Revert(revert::RevertError::Conflict(_)))
        ),
        "{refused:?}"
    );
    assert_eq!(
        std::fs::read_to_string(p.work.join("a.txt")).expect("read"),
        text(&clash)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn what_cannot_be_recorded_is_said_and_nothing_hangs() {
    let p = place();
    write(&p.work.join("small.txt"), "x\n");
    let k = service(&p);
    turn(&k, &p, "m1", || {
        let big = std::fs::File::create(p.work.join("big.bin")).expect("big");
        big.set_len(super::shadow::MAX_FILE_BYTES + 1).expect("sparse");
        let fifo =
            std::ffi::CString::new(p.work.join("pipe").into_os_string().into_encoded_bytes()).expect("c");
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink("/etc/passwd", p.work.join("link")).expect("link");
        write(&p.work.join("small.txt"), "y\n");
    })
    .await;
    let c = k.changes("c1", None).await.expect("changes");
    let t = &c.turns[0];
    let paths: Vec<&str> = t.files.iter().map(|f| f.path.as_str()).collect();
    assert!(
        paths.contains(&"small.txt") && paths.contains(&"link"),
        "{paths:?}"
    );
    assert!(
        !paths.contains(&"big.bin") && !paths.contains(&"pipe"),
        "{paths:?}"
    );
    assert!(
        t.problems.iter().any(|m| m.contains("big.bin")),
        "{:?}",
        t.problems
    );
    // Git does not see a FIFO at all: it is neither listed nor waited on.
    // The link is recorded as a link: reverting it is refused, never
    // followed out of the tree.
    let r = k
        .revert(
            "demo",
            "c1",
            "m1",
            Some("link"),
            None,
            How {
                merge: false,
                all: false,
            },
        )
        .await;
    assert!(r.is_err(), "{r:?}");
    assert!(std::fs::read_link(p.work.join("link")).is_ok());
}

#[test]
fn the_home_folder_is_refused() {
    let home = crate::core::config::model::home_dir();
    let tmp = tempfile::tempdir().expect("tmp");
    assert!(matches!(
        shadow::Shadow::open(tmp.path(), &home),
        Err(shadow::SnapshotError::Home { .. })
    ));
}

#[test]
fn a_hunk_is_taken_back_exactly() {
    let h = Hunk {
        index: 0,
        header: "@@ -1,2 +1,2 @@".into(),
        old_start: 1,
        old_lines: 2,
        new_start: 1,
        new_lines: 2,
        lines: vec!["-a".into(), "+A".into(), " b".into()],
        old_no_newline: false,
        new_no_newline: true,
        review: Review::Pending,
    };
    // `b` has no newline in either: the mark was on the context line.
    let mut h2 = h.clone();
    h2.old_no_newline = true;
    assert_eq!(diff::unapply(b"A\nb", &h2).as_deref(), Some(&b"a\nb"[..]));
    assert_eq!(diff::unapply(b"X\nb", &h2), None);
}

#[test]
fn a_tree_with_too_many_files_is_refused_with_its_reason() {
    let p = place();
    for i in 0..60 {
        write(&p.work.join(format!("f{i}.txt")), "x\n");
    }
    let mut shadow = shadow::Shadow::open(&p.store, &p.work).expect("open");
    shadow.max_files = 50;
    let e = shadow.snapshot().expect_err("too many");
    assert!(
        matches!(e, shadow::SnapshotError::TooManyFiles { max: 50, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("more than 50 files"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_binary_file_is_shown_as_binary_and_reverted_whole() {
    let p = place();
    std::fs::write(p.work.join("blob.bin"), [0u8, 1, 2, 3, 0, 255]).expect("write");
    let k = service(&p);
    turn(&k, &p, "m1", || {
        std::fs::write(p.work.join("blob.bin"), [0u8, 9, 9, 9, 0, 255]).expect("write")
    })
    .await;
    let c = k.changes("c1", None).await.expect("changes");
    let f = &c.turns[0].files[0];
    assert!(f.binary && f.hunks.is_empty(), "{f:?}");
    k.revert(
        "demo",
        "c1",
        "m1",
        Some("blob.bin"),
        None,
        How {
            merge: false,
            all: false,
        },
    )
    .await
    .expect("revert");
    assert_eq!(
        std::fs::read(p.work.join("blob.bin")).expect("read"),
        [0u8, 1, 2, 3, 0, 255]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forgetting_a_conversation_and_pruning_old_turns_drop_their_snapshots() {
    let p = place();
    write(&p.work.join("a.txt"), "1\n");
    let k = service(&p);
    turn(&k, &p, "m1", || write(&p.work.join("a.txt"), "2\n")).await;
    let refs = |s: &shadow::Shadow| {
        String::from_utf8(
            s.git
                .run(&["for-each-ref", "--format=%(refname)", "refs/parley/"], None)
                .expect("refs"),
        )
        .expect("utf-8")
    };
    let shadow = shadow::Shadow::open(&p.store, &p.work).expect("open");
    assert!(refs(&shadow).contains("refs/parley/c1/m1/before"));
    k.forget("c1").await;
    assert_eq!(refs(&shadow), "");
    assert!(matches!(
        k.changes("c1", Some("m1")).await,
        Err(CheckpointError::NoTurn(_))
    ));

    // Pruning by age: a turn older than `keep_for` goes, a newer one stays.
    turn(&k, &p, "m2", || write(&p.work.join("a.txt"), "3\n")).await;
    turn(&k, &p, "m3", || write(&p.work.join("a.txt"), "4\n")).await;
    // m2 began two hours ago.
    let mut record = store::load(&p.store, "c1").expect("record");
    let m2_before = record.turns[0].roots[0].before.clone().expect("m2's before");
    for t in &mut record.turns {
        if t.turn == "m2" {
            t.at_ms -= 2 * 3600 * 1000;
        }
    }
    store::save(&p.store, &record).expect("save");
    k.set_settings(Settings {
        keep_for: Some(std::time::Duration::from_secs(3600)),
        ..Settings::default()
    });
    let k2 = k.clone();
    tokio::task::spawn_blocking(move || k2.prune())
        .await
        .expect("prune");
    let c = k.changes("c1", None).await.expect("changes");
    let turns: Vec<&str> = c.turns.iter().map(|t| t.turn.as_str()).collect();
    assert_eq!(turns, ["m3"], "{c:?}");
    assert!(!refs(&shadow).contains("/m2/"));
    // Past the size: the oldest go first.
    k.set_settings(Settings {
        keep_for: None,
        max_bytes: 1,
        ..Settings::default()
    });
    let k2 = k.clone();
    tokio::task::spawn_blocking(move || k2.prune())
        .await
        .expect("prune");
    assert!(k.changes("c1", None).await.expect("changes").turns.is_empty());
    // And what they recorded is gone from the store (a snapshot has no
    // parent that would keep the ones before it).
    let (code, _, _) = shadow
        .git
        .run_code(&["cat-file", "-e", &m2_before], None)
        .expect("git");
    assert_ne!(code, Some(0), "m2's snapshot is still stored");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_that_became_a_link_keeps_the_files_after_it_in_step() {
    let p = place();
    write(&p.work.join("a.txt"), "a\n");
    write(&p.work.join("b.txt"), "b\n");
    write(&p.work.join("c.txt"), "c\n");
    let k = service(&p);
    turn(&k, &p, "m1", || {
        std::fs::remove_file(p.work.join("b.txt")).expect("rm");
        std::os::unix::fs::symlink("a.txt", p.work.join("b.txt")).expect("link");
        write(&p.work.join("c.txt"), "C\n");
    })
    .await;
    let c = k.changes("c1", None).await.expect("changes");
    let files = &c.turns[0].files;
    let b = files.iter().find(|f| f.path == "b.txt").expect("b.txt");
    assert!(b.binary && b.hunks.is_empty(), "{b:?}");
    let c_txt = files.iter().find(|f| f.path == "c.txt").expect("c.txt");
    assert_eq!(c_txt.hunks.len(), 1, "{c_txt:?}");
    assert_eq!(c_txt.hunks[0].lines, ["-c", "+C"]);
}
