//! Hardening, round four (issue 61), with real demo agents, real files and
//! real git: Undo of a turn takes back only what the turn did (not a
//! second agent's edits in the same folder, not the user's), a write the
//! moment the prompt arrives is the turn's, two Parleys on one data
//! directory lose no checkpoint, Undo tells the truth (names that are not
//! UTF-8, the executable bit, a file become a folder and back, 5,000
//! deleted files), and recording never stops for good (a folder become a
//! link, a FIFO or a huge file where git's metadata is read), a disk too
//! full for checkpoints says so, a giant answer keeps its end in bounded
//! memory, and a draft cut at 256 KiB says so.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use parley::core::checkpoints::How;
use parley::core::events::Event;
use parley::core::services::{Core, Options};
use serde_json::{json, Value};

use crate::common::*;

fn agent_in(name: &str, cwd: &Path) -> Value {
    json!({"name": name, "command": demo(), "cwd": cwd.display().to_string()})
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

/// A folder with `files` (path, text), under git when `repo`.
fn folder(files: &[(&str, &str)], repo: bool) -> tempfile::TempDir {
    let work = tempfile::tempdir().expect("tempdir");
    for (p, text) in files {
        let full = work.path().join(p);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("dirs");
        std::fs::write(full, text).expect("write");
    }
    if repo {
        git(work.path(), &["init", "-q"]);
        git(work.path(), &["add", "-A"]);
        git(work.path(), &["commit", "-q", "-m", "start"]);
    }
    work
}

async fn recorded(h: &mut Harness, agent: &str) {
    let a = agent.to_owned();
    h.wait_for(
        "changes:updated",
        Duration::from_secs(60),
        move |e| matches!(e, Event::ChangesUpdated(c) if c.agent == a),
    )
    .await;
}

/// `(path, unattributed)` of each file of the turn.
fn files_of(changes: &Value, turn: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = changes["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .filter(|t| t["turn"] == json!(turn))
        .flat_map(|t| t["files"].as_array().cloned().unwrap_or_default())
        .map(|f| {
            (
                f["path"].as_str().unwrap_or("").to_owned(),
                f["unattributed"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_of_one_agents_turn_leaves_the_other_agents_and_the_users_files() {
    let work = folder(
        &[("a.txt", "a\n"), ("b.txt", "b\n"), ("mine.txt", "mine\n")],
        true,
    );
    let w = work.path();
    let mut h = Harness::new(&[agent_in("a", w), agent_in("b", w)]);
    let turn = h
        .core
        .chat
        .send("a", "disk-edit write:a.txt=A\\n sleep:4000 write:a2.txt=A2\\n")
        .expect("send");
    // A's first edit is announced: its turn runs. Now B edits in the same
    // folder, and the user types in an editor.
    h.wait_for("a's first tool call", Duration::from_secs(30), |e| {
        matches!(e, Event::MessageDelta(d) if d.agent == "a"
            && d.part.as_ref().is_some_and(|p| format!("{p:?}").contains("disk-0")))
    })
    .await;
    h.core
        .chat
        .send("b", "disk-edit-now write:b.txt=B\\n")
        .expect("send b");
    std::fs::write(w.join("mine.txt"), "typed by the user\n").expect("user types");
    h.wait_idle("b").await;
    h.wait_idle("a").await;
    recorded(&mut h, "a").await;
    // Both conversations say that another agent works in their folder.
    for (me, other) in [("a", "b"), ("b", "a")] {
        let c = h
            .core
            .call("ChatService.Conversation", &[json!(me)])
            .await
            .expect("Conversation");
        let told: Vec<&Value> = c["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|m| m["code"] == "shared-folder")
            .collect();
        assert_eq!(told.len(), 1, "{me} is told once: {c}");
        assert!(
            told[0]
                .to_string()
                .contains(&format!("{other} also works in this folder")),
            "{c}"
        );
    }
    let changes = h
        .core
        .call("ChatService.Changes", &[json!("a")])
        .await
        .expect("Changes");
    assert_eq!(
        files_of(&changes, &turn),
        vec![
            ("a.txt".into(), false),
            ("a2.txt".into(), false),
            ("b.txt".into(), true),
            ("mine.txt".into(), true),
        ],
        "the turn's own files, and the others apart: {changes}"
    );
    let total: Vec<&str> = changes["total"]
        .as_array()
        .expect("total")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(
        total,
        vec!["a.txt", "a2.txt"],
        "the badge counts the agent's files"
    );

    let undone = h
        .core
        .call("ChatService.UndoTurn", &[json!("a"), json!(turn)])
        .await
        .expect("UndoTurn");
    assert_eq!(read(&w.join("a.txt")), "a\n");
    assert!(!w.join("a2.txt").exists());
    assert_eq!(read(&w.join("b.txt")), "B\n", "B's edit is B's");
    assert_eq!(
        read(&w.join("mine.txt")),
        "typed by the user\n",
        "the user's typing stays"
    );
    assert_eq!(undone["leftAlone"], json!(["b.txt", "mine.txt"]), "{undone}");

    // Picked by the user, they go back too.
    let all = h
        .core
        .chat
        .undo_turn(
            "a",
            Some(&turn),
            How {
                merge: false,
                all: true,
            },
        )
        .await
        .expect("UndoTurn all");
    assert_eq!(read(&w.join("mine.txt")), "mine\n");
    assert_eq!(read(&w.join("b.txt")), "b\n");
    assert!(all.left_alone.is_empty(), "{all:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_the_moment_the_prompt_arrives_is_the_turns_even_in_a_one_file_folder() {
    let work = folder(&[("only.txt", "0\n")], false);
    let w = work.path();
    let mut h = Harness::new(&[agent_in("a", w)]);
    for n in 1..=3 {
        let turn = h
            .core
            .chat
            .send("a", &format!("disk-edit-now write:only.txt={n}\\n"))
            .expect("send");
        h.wait_idle("a").await;
        recorded(&mut h, "a").await;
        let changes = h
            .core
            .call("ChatService.Changes", &[json!("a"), Value::Null, json!(turn)])
            .await
            .expect("Changes");
        assert_eq!(
            files_of(&changes, &turn),
            vec![("only.txt".into(), false)],
            "turn {n}: the write is the turn's: {changes}"
        );
    }
    h.core
        .call("ChatService.UndoTurn", &[json!("a")])
        .await
        .expect("UndoTurn");
    assert_eq!(read(&w.join("only.txt")), "2\n");
}

fn core_on(dir: &Path, name: &str, agent: &str, cwd: &Path) -> (Core, parley::core::events::EventReceiver) {
    let config = dir.join(format!("{name}.json"));
    std::fs::write(&config, config_text(&[agent_in(agent, cwd)], 4, "0")).expect("config");
    Core::new(Options {
        config_path: Some(config),
        timings: fast(),
        spawn_prefix: Vec::new(),
        watch: false,
        history: Some(dir.join("history.sqlite3")),
    })
    .expect("core")
}

#[tokio::test(flavor = "multi_thread")]
async fn two_parleys_on_one_data_directory_lose_no_checkpoint_and_keep_their_files_apart() {
    let work = folder(&[("start.txt", "s\n")], true);
    let w = work.path();
    let data = tempfile::tempdir().expect("data");
    let (one, rx1) = core_on(data.path(), "one", "a", w);
    let (two, rx2) = core_on(data.path(), "two", "b", w);
    let mut h1 = Harness::of(one, rx1, tempfile::tempdir().expect("dir"), fast());
    let mut h2 = Harness::of(two, rx2, tempfile::tempdir().expect("dir"), fast());
    let mut turns = (Vec::new(), Vec::new());
    for n in 0..5 {
        turns.0.push(
            h1.core
                .chat
                .send("a", &format!("disk-edit-now write:one-{n}.txt=x"))
                .expect("send"),
        );
        turns.1.push(
            h2.core
                .chat
                .send("b", &format!("disk-edit-now write:two-{n}.txt=x"))
                .expect("send"),
        );
        h1.wait_idle("a").await;
        h2.wait_idle("b").await;
        recorded(&mut h1, "a").await;
        recorded(&mut h2, "b").await;
    }
    for (h, agent, mine, turns) in [(&h1, "a", "one-", &turns.0), (&h2, "b", "two-", &turns.1)] {
        let changes = h
            .core
            .call("ChatService.Changes", &[json!(agent)])
            .await
            .expect("Changes");
        for (n, t) in turns.iter().enumerate() {
            let files = files_of(&changes, t);
            assert!(
                files.contains(&(format!("{mine}{n}.txt"), false)),
                "{agent}'s turn {n} kept its checkpoint: {changes}"
            );
            assert!(
                files.iter().all(|(p, other)| p.starts_with(mine) || *other),
                "{agent}'s turn {n} lists the other Parley's files as its own: {files:?}"
            );
        }
    }
    h1.core.shutdown().await;
    h2.core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_tells_the_truth_about_names_modes_and_folders() {
    let work = folder(
        &[
            ("run.sh", "#!/bin/sh\n"),
            ("thing", "a file\n"),
            ("dir/x.txt", "x\n"),
            ("blocked", "a file too\n"),
        ],
        false,
    );
    let w = work.path();
    // A name that is not UTF-8.
    let latin1 = w.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&latin1, "before\n").expect("latin-1 name");
    let mut h = Harness::new(&[agent_in("a", w)]);
    let turn = h
        .core
        .chat
        .send(
            "a",
            "disk-edit chmod:run.sh=755 delete:thing write:thing/inside.txt=in \
             delete:dir/x.txt rmdir:dir write:dir=now\\sa\\sfile \
             delete:blocked write:blocked/made.txt=m sleep:1500",
        )
        .expect("send");
    h.wait_for("the last edit", Duration::from_secs(30), |e| {
        matches!(e, Event::MessageDelta(d) if d.part.as_ref().is_some_and(|p| format!("{p:?}").contains("disk-7")))
    })
    .await;
    // During the turn, by something else: the name that is not UTF-8.
    std::fs::write(&latin1, "after\n").expect("write");
    h.wait_idle("a").await;
    recorded(&mut h, "a").await;
    // After the turn, the user puts a file of theirs in a folder the turn made.
    std::fs::write(w.join("blocked/users.txt"), "u").expect("user's file");

    let r = h
        .core
        .chat
        .undo_turn(
            "a",
            Some(&turn),
            How {
                merge: false,
                all: true,
            },
        )
        .await
        .expect("UndoTurn");
    let mode = std::fs::metadata(w.join("run.sh"))
        .expect("run.sh")
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "the executable bit is taken back: {mode:o}");
    assert_eq!(read(&w.join("thing")), "a file\n", "a folder become a file again");
    assert_eq!(read(&w.join("dir/x.txt")), "x\n", "a file become a folder again");
    assert_eq!(std::fs::read(&latin1).expect("latin-1"), b"before\n", "{r:?}");
    assert_eq!(r.refused.len(), 1, "only the blocked path is refused: {r:?}");
    assert_eq!(r.refused[0].path, "blocked");
    assert!(w.join("blocked/users.txt").exists(), "the user's file stays");
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_of_a_turn_that_deleted_5000_files_takes_seconds() {
    // Timed in a test process of its own: beside the other tests on two
    // cores it took 40 s once.
    if crate::common::rerun_alone("hardening_four::undo_of_a_turn_that_deleted_5000_files_takes_seconds") {
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let w = work.path();
    std::fs::create_dir_all(w.join("many")).expect("dir");
    for n in 0..5000 {
        std::fs::write(w.join(format!("many/f{n}.txt")), format!("{n}\n")).expect("write");
    }
    let mut h = Harness::new(&[agent_in("a", w)]);
    h.core.chat.send("a", "disk-edit rmtree:many").expect("send");
    h.wait_idle("a").await;
    recorded(&mut h, "a").await;
    let started = Instant::now();
    let r = h
        .core
        .chat
        .undo_turn("a", None, How::default())
        .await
        .expect("UndoTurn");
    let took = started.elapsed();
    assert_eq!(r.files.len(), 5000);
    assert_eq!(read(&w.join("many/f4999.txt")), "4999\n");
    eprintln!("undo of 5,000 deleted files took {took:?}");
    // Not a timing assertion: a bound to tell a process per file from one
    // process for all. Measured alone (debug): 15 s on one machine, where
    // a process per file took 55 to 86 s; 27 to 32 s on another, slower
    // one, where that would be over 100 s.
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// A FIFO at `path` (an agent can make one wherever it writes).
fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

#[tokio::test(flavor = "multi_thread")]
async fn recording_goes_on_past_a_linked_folder_and_fifos_in_git_metadata() {
    // A folder replaced by a link inside the root.
    let work = folder(&[("lib/a.txt", "a\n"), ("other/b.txt", "b\n")], true);
    let w = work.path();
    // The repository's info/exclude is a FIFO; a worktree-like `.git` file
    // below names a `commondir` that is a 1 GiB sparse file.
    let exclude = w.join(".git/info/exclude");
    let _ = std::fs::remove_file(&exclude);
    std::fs::create_dir_all(exclude.parent().expect("info")).expect("info");
    fifo(&exclude);
    let mut h = Harness::new(&[agent_in("a", w)]);
    let first = h
        .core
        .chat
        .send("a", "disk-edit delete:lib/a.txt rmdir:lib symlink:lib=other")
        .expect("send");
    h.wait_idle("a").await;
    recorded(&mut h, "a").await;
    let second = h.core.chat.send("a", "disk-edit write:new.txt=n").expect("send");
    h.wait_idle("a").await;
    recorded(&mut h, "a").await;
    let changes = h
        .core
        .call("ChatService.Changes", &[json!("a")])
        .await
        .expect("Changes");
    assert!(
        files_of(&changes, &first).contains(&("lib/a.txt".into(), false)),
        "{changes}"
    );
    assert_eq!(
        files_of(&changes, &second),
        vec![("new.txt".into(), false)],
        "{changes}"
    );
    for t in changes["turns"].as_array().expect("turns") {
        assert_eq!(t["problems"], json!([]), "{t}");
    }

    let nested = folder(&[("src/x.txt", "x\n")], false);
    let n = nested.path();
    let gitdir = n.join("gitdir");
    std::fs::create_dir_all(&gitdir).expect("gitdir");
    std::fs::write(n.join(".git"), format!("gitdir: {}\n", gitdir.display())).expect(".git");
    let commondir = std::fs::File::create(gitdir.join("commondir")).expect("commondir");
    commondir.set_len(1 << 30).expect("sparse 1 GiB");
    let mut h2 = Harness::new(&[agent_in("n", n)]);
    let started = Instant::now();
    h2.core
        .chat
        .send("n", "disk-edit write:src/y.txt=y")
        .expect("send");
    h2.wait_idle("n").await;
    recorded(&mut h2, "n").await;
    assert!(started.elapsed() < Duration::from_secs(60));
    let changes = h2
        .core
        .call("ChatService.Changes", &[json!("n")])
        .await
        .expect("Changes");
    assert!(changes["total"].to_string().contains("src/y.txt"), "{changes}");
    h2.core.shutdown().await;
    h.core.shutdown().await;
}

/// Runs `parley-cli ARGS` with its XDG folders in `dir`, reading what it
/// prints as it comes but keeping only its first 64 KiB and its end;
/// answers its exit code, those, and its peak resident memory in KiB.
fn cli_peak(args: &[&str], dir: &Path) -> (i32, String, i64) {
    use std::io::Read;
    // Reaped by wait4 below, not Child::wait: only wait4 gives its rusage.
    #[allow(clippy::zombie_processes)]
    let mut child = Command::new(cli())
        .args(args)
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env_remove("PARLEY_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run parley-cli");
    let mut head: Vec<u8> = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut drained = false;
    if let Some(mut stdout) = child.stdout.take() {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            if head.len() < 1 << 16 {
                head.extend_from_slice(&buf[..n]);
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > 1 << 20 {
                tail.drain(..tail.len() - (1 << 19));
                drained = true;
            }
        }
    }
    let pid = i32::try_from(child.id()).expect("pid");
    let mut status = 0;
    // SAFETY: rusage is plain old data; zero is a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our unwaited child; the pointers are valid for the call.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    // Short output is all in `tail`; long output is its head and its end.
    let mut out = String::new();
    if drained {
        out.push_str(&String::from_utf8_lossy(&head));
        out.push('\n');
    }
    out.push_str(&String::from_utf8_lossy(&tail));
    (code, out, usage.ru_maxrss)
}

#[test]
fn a_giant_answer_keeps_its_end_within_bounded_memory_and_is_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.json");
    std::fs::write(&config, config_text(&[agent("demo", "")], 4, "0")).expect("config");
    let config = config.display().to_string();
    // 256 MiB in 1 MiB chunks, as fast as the agent can send them.
    let (code, tail, peak_kib) = cli_peak(
        &["send", "demo", "flood 256 1048576", "--config", &config],
        dir.path(),
    );
    eprintln!(
        "a 256 MiB answer: parley-cli send peaked at {} MiB",
        peak_kib / 1024
    );
    assert_eq!(code, 0, "{}", &tail[tail.len().saturating_sub(2000)..]);
    assert!(
        tail.contains("\"stopReason\":\"end_turn\""),
        "the stop reason is told"
    );
    // Kept whole, this answer alone took over 1 GiB (the text, its copies,
    // the history's queue). What remains above the kept end is what waits
    // for this test to read it: events queue for a reader slower than the
    // agent (alone here: under 100 MiB; on a busy machine more).
    assert!(peak_kib < 400 * 1024, "parley-cli send peaked at {peak_kib} KiB");
    // Stored: the end the user saw, with the note of what was cut.
    let (code, listed, _) = cli_peak(&["conversations", "demo", "--config", &config], dir.path());
    assert_eq!(code, 0, "{listed}");
    let list: Value = serde_json::from_str(listed.trim()).expect("conversations");
    let id = list["conversations"][0]["id"]
        .as_str()
        .expect("a stored conversation")
        .to_owned();
    let (code, markdown, _) = cli_peak(&["export", "demo", &id, "--config", &config], dir.path());
    assert_eq!(code, 0, "{markdown}");
    assert!(
        markdown.contains("were cut from its start"),
        "{}",
        &markdown[..markdown.len().min(500)]
    );
}

/// A tmpfs of `size` at a new folder, unmounted when dropped; `None`
/// (and why) where this machine lets no test mount one.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn new(size: &str) -> Result<SmallDisk, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disk_too_full_for_checkpoints_says_so_in_changes() {
    let disk = match SmallDisk::new("4m") {
        Ok(d) => d,
        Err(why) => {
            eprintln!("skipped: a small disk cannot be mounted here: {why}");
            return;
        }
    };
    let work = folder(&[("a.txt", "a\n")], false);
    let w = work.path();
    let data = disk.0.path();
    let (core, rx) = core_on(data, "full", "a", w);
    let mut h = Harness::of(core, rx, tempfile::tempdir().expect("dir"), fast());
    // A first turn records; then the disk fills up.
    h.core.chat.send("a", "disk-edit write:a.txt=1").expect("send");
    h.wait_idle("a").await;
    recorded(&mut h, "a").await;
    let mut filler = 0;
    while std::fs::write(data.join(format!("filler-{filler}")), vec![0u8; 256 << 10]).is_ok() {
        filler += 1;
    }
    // What is left fills too, down to the last block: the record of the
    // turn cannot be written either.
    for size in [4096usize, 1] {
        while std::fs::write(data.join(format!("filler-{filler}")), vec![0u8; size]).is_ok() {
            filler += 1;
        }
    }
    let turn = h.core.chat.send("a", "disk-edit write:a.txt=2").expect("send");
    h.wait_idle("a").await;
    recorded(&mut h, "a").await;
    let changes = h
        .core
        .call("ChatService.Changes", &[json!("a")])
        .await
        .expect("Changes");
    let this = changes["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .find(|t| t["turn"] == json!(turn))
        .cloned()
        .unwrap_or(Value::Null);
    assert!(
        this["problems"]
            .to_string()
            .contains("The disk is too full for checkpoints"),
        "the turn says why it has no checkpoint: {changes}"
    );
    h.core.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draft_cut_at_256_kib_says_so() {
    let work = folder(&[("a.txt", "a\n")], false);
    let h = Harness::new(&[agent_in("a", work.path())]);
    let short = h
        .core
        .call("ChatService.SetDraft", &[json!("a"), json!("a few words")])
        .await
        .expect("SetDraft");
    assert_eq!(short, Value::Null);
    let long = "ü".repeat(200_000);
    let told = h
        .core
        .call("ChatService.SetDraft", &[json!("a"), json!(long)])
        .await
        .expect("SetDraft");
    let kept = h.core.chat.draft("a").await.expect("Draft").text;
    assert_eq!(told["cutBytes"], json!(long.len() - kept.len()), "{told}");
    assert!(kept.len() <= 256 * 1024 && long.starts_with(&kept));
}
