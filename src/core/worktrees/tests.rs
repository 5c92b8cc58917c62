//! Real repositories made here, real `git`: a worktree made, its changes
//! listed, applied (three-way, refused with the files where the user
//! changed the same lines, nothing written then), undone, merged (a
//! conflict aborted and named), discarded; a bare repository, a branch
//! named `parley` and a detached `HEAD`; the user's index left alone.

use std::path::Path;
use std::process::Command;

use super::*;

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
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("dirs");
    }
    std::fs::write(p, text).expect("write");
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| format!("<{e}>"))
}

/// A repository with history on `main`: `notes.txt` of ten lines, a
/// source file in `src/`.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    let lines: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(&d.join("notes.txt"), &lines);
    write(&d.join("src/main.rs"), "fn main() {}\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "one"]);
    write(&d.join("README"), "read me\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "two"]);
    dir
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn a_worktree_is_made_listed_applied_undone_and_discarded() {
    let repo = repo();
    let r = repo.path();
    let data = tempfile::tempdir().expect("data");
    let k = WorktreeService::new(Some(data.path().join("worktrees")));
    let rt = rt();
    // The user has something staged: a worktree holds HEAD, and the index
    // stays as it was.
    write(&r.join("staged.txt"), "staged\n");
    git(r, &["add", "staged.txt"]);
    let wt = rt
        .block_on(k.create("demo", &r.join("src"), None, "Fix the parser!"))
        .expect("create");
    assert_eq!(wt.branch, "parley/fix-the-parser");
    assert_eq!(wt.base_name, "main");
    assert!(wt.path.starts_with(&data.path().display().to_string()), "{wt:?}");
    assert!(wt.cwd.ends_with("/src"), "the same sub-folder: {wt:?}");
    assert!(!Path::new(&wt.path).join("staged.txt").exists());
    assert_eq!(git(r, &["diff", "--cached", "--name-only"]), "staged.txt");
    assert_eq!(k.list(), vec![wt.clone()]);
    // A dotfiles repository at $HOME does not see the worktrees.
    assert_eq!(read(&data.path().join("worktrees/.gitignore")), "*\n");
    // The agent works: a commit, a staged, an unstaged and an untracked
    // change, and an ignored file that does not travel.
    let w = Path::new(&wt.path);
    write(&w.join("README"), "read me twice\n");
    git(w, &["commit", "-qam", "readme"]);
    write(
        &w.join("notes.txt"),
        &read(&w.join("notes.txt")).replace("line 2\n", "LINE 2\n"),
    );
    write(&w.join("new.txt"), "new\n");
    write(&w.join(".gitignore"), "*.log\n");
    write(&w.join("build.log"), "log\n");
    std::fs::remove_file(w.join("src/main.rs")).expect("rm");
    let status = rt.block_on(k.status(&wt)).expect("status");
    let mut files: Vec<(String, String)> = status
        .files
        .iter()
        .map(|f| (f.path.clone(), f.status.clone()))
        .collect();
    files.sort();
    assert_eq!(
        files,
        vec![
            (".gitignore".into(), "added".into()),
            ("README".into(), "modified".into()),
            ("new.txt".into(), "added".into()),
            ("notes.txt".into(), "modified".into()),
            ("src/main.rs".into(), "deleted".into()),
        ]
    );
    assert_eq!(status.ahead, 1);
    // Meanwhile the user edits another line of notes.txt (unstaged).
    write(
        &r.join("notes.txt"),
        &read(&r.join("notes.txt")).replace("line 9\n", "line nine\n"),
    );
    let applied = rt.block_on(k.apply(&wt)).expect("apply");
    assert_eq!(applied.files.len(), 5, "{applied:?}");
    let notes = read(&r.join("notes.txt"));
    assert!(
        notes.contains("LINE 2\n") && notes.contains("line nine\n"),
        "merged: {notes}"
    );
    assert_eq!(read(&r.join("README")), "read me twice\n");
    assert!(!r.join("src/main.rs").exists());
    assert!(!r.join("build.log").exists(), "ignored files do not travel");
    // Uncommitted, and the user's index as it was.
    assert_eq!(git(r, &["diff", "--cached", "--name-only"]), "staged.txt");
    // Undone while the files are as it left them.
    rt.block_on(k.undo_apply(&applied.id)).expect("undo");
    assert_eq!(read(&r.join("README")), "read me\n");
    assert!(read(&r.join("notes.txt")).contains("line 2\nline 3"));
    assert!(
        read(&r.join("notes.txt")).contains("line nine\n"),
        "the user's edit stays"
    );
    assert_eq!(read(&r.join("src/main.rs")), "fn main() {}\n");
    assert!(!r.join("new.txt").exists());

    // The user changes the same line: refused, with the file, nothing written.
    write(
        &r.join("notes.txt"),
        &read(&r.join("notes.txt")).replace("line 2\n", "line two\n"),
    );
    let before = read(&r.join("README"));
    match rt.block_on(k.apply(&wt)) {
        Err(WorktreeError::Conflicts(files)) => {
            assert_eq!(files.len(), 1, "{files:?}");
            assert_eq!(files[0].0, "notes.txt");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(read(&r.join("README")), before, "nothing was written");
    assert!(!r.join("new.txt").exists());

    // Discard: the worktree and its branch are gone.
    rt.block_on(k.discard(&wt)).expect("discard");
    assert!(!Path::new(&wt.path).exists());
    assert_eq!(git(r, &["branch", "--list", "parley/*"]), "");
    assert!(k.list().is_empty());
}

#[test]
fn merge_commits_and_merges_or_aborts_and_names_the_conflict() {
    let repo = repo();
    let r = repo.path();
    let data = tempfile::tempdir().expect("data");
    let k = WorktreeService::new(Some(data.path().join("worktrees")));
    let rt = rt();
    let wt = rt.block_on(k.create("demo", r, None, "one")).expect("create");
    let w = Path::new(&wt.path);
    write(&w.join("added.txt"), "from the agent\n");
    let commit = rt.block_on(k.merge(&wt, "Add a file")).expect("merge");
    assert_eq!(git(r, &["rev-parse", "HEAD"]), commit);
    assert_eq!(read(&r.join("added.txt")), "from the agent\n");
    assert_eq!(git(r, &["log", "-1", "--format=%s"]), "Add a file");

    // A second worktree and the user both change line 5: aborted, named.
    let wt2 = rt.block_on(k.create("demo", r, None, "two")).expect("create");
    let w2 = Path::new(&wt2.path);
    write(
        &w2.join("notes.txt"),
        &read(&w2.join("notes.txt")).replace("line 5\n", "agent 5\n"),
    );
    write(
        &r.join("notes.txt"),
        &read(&r.join("notes.txt")).replace("line 5\n", "user 5\n"),
    );
    git(r, &["commit", "-qam", "user"]);
    match rt.block_on(k.merge(&wt2, "conflicting")) {
        Err(WorktreeError::MergeConflict(files)) => assert_eq!(files, vec!["notes.txt".to_owned()]),
        other => panic!("not a conflict: {other:?}"),
    }
    assert!(
        read(&r.join("notes.txt")).contains("user 5\n"),
        "the checkout is as it was"
    );
    assert_eq!(git(r, &["status", "--porcelain"]), "");
}

#[test]
fn bare_repositories_a_parley_branch_and_a_detached_head_are_said() {
    let data = tempfile::tempdir().expect("data");
    let k = WorktreeService::new(Some(data.path().join("worktrees")));
    let rt = rt();
    // Not a repository.
    let plain = tempfile::tempdir().expect("plain");
    assert!(matches!(
        rt.block_on(k.create("demo", plain.path(), None, "x")),
        Err(WorktreeError::NotInRepository(_))
    ));
    // Bare.
    let bare = tempfile::tempdir().expect("bare");
    git(bare.path(), &["init", "-q", "--bare"]);
    assert!(matches!(
        rt.block_on(k.create("demo", bare.path(), None, "x")),
        Err(WorktreeError::Bare(_))
    ));
    // A branch named `parley`: said, and no branch is left behind.
    let repo = repo();
    let r = repo.path();
    git(r, &["branch", "parley"]);
    let e = rt.block_on(k.create("demo", r, None, "x")).expect_err("blocked");
    assert!(e.to_string().contains("parley"), "{e}");
    git(r, &["branch", "-D", "parley"]);
    // A detached HEAD: made from the commit; Merge has nothing to merge into.
    let head = git(r, &["rev-parse", "HEAD"]);
    git(r, &["checkout", "-q", "--detach"]);
    let wt = rt.block_on(k.create("demo", r, None, "x")).expect("create");
    assert_eq!(wt.base, head);
    assert!(matches!(
        rt.block_on(k.merge(&wt, "m")),
        Err(WorktreeError::Detached)
    ));
    // Another base, by name; an unknown one is said.
    git(r, &["checkout", "-q", "main"]);
    assert!(matches!(
        rt.block_on(k.create("demo", r, Some("no-such-branch"), "y")),
        Err(WorktreeError::BadBase(_))
    ));
    let wt = rt
        .block_on(k.create("demo", r, Some("main~1"), "y"))
        .expect("create");
    assert!(!Path::new(&wt.path).join("README").exists(), "made from main~1");
}
