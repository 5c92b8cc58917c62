//! Apply: a worktree's changes against its base, brought to the main
//! checkout as uncommitted changes. Not `git apply --3way`, which works
//! through the user's index, refuses a file edited without staging, leaves
//! conflict markers and stages what it applies (shared/notes): every file
//! is decided first, three-way with `git merge-file` where the user's file
//! changed too, and the whole apply is refused with the list of files
//! where the user changed the same lines (or made a folder, a link, a
//! binary change) before anything is written. Then each file is written
//! atomically beneath the checkout, never through a link.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::git::RepoGit;
use super::model::{Worktree, WorktreeError};
use crate::core::acp::fs::FsScope;
use crate::i18n::gettext;

/// The largest file of the user's checkout that an apply reads.
const MAX_APPLIED_BYTES: u64 = 64 << 20;

/// What one file of the checkout gets.
#[derive(Debug, Clone)]
pub struct FileWrite {
    pub shown: String,
    pub full: PathBuf,
    /// What it holds now (`None`: absent).
    pub previous: Option<Vec<u8>>,
    /// What it gets (`None`: removed).
    pub content: Option<Vec<u8>>,
    /// An executable file made anew.
    pub mode: Option<u32>,
}

/// An apply decided in full, not yet written.
pub struct Planned {
    pub top: PathBuf,
    pub writes: Vec<FileWrite>,
}

/// `ChatService.Apply`'s answer: the apply's id (for its Undo) and the
/// files written.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    pub id: String,
    pub files: Vec<String>,
    #[serde(skip)]
    pub top: PathBuf,
    #[serde(skip)]
    pub writes: Vec<FileWrite>,
}

/// The tree of what the worktree holds now (commits, staged, unstaged
/// and untracked files, ignored ones left out), written through a copy of
/// its index (its stat cache keeps this quick), the index itself left as
/// it is.
pub fn worktree_tree(git: &RepoGit) -> Result<String, WorktreeError> {
    let index = git.text(&["rev-parse", "--git-path", "index"])?;
    let index = if Path::new(&index).is_absolute() {
        PathBuf::from(index)
    } else {
        git.dir.join(index)
    };
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = std::env::temp_dir().join(format!(
        "parley-index-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    if index.exists() {
        std::fs::copy(&index, &tmp).map_err(|e| WorktreeError::Io(e.to_string()))?;
        // With the index's own time: git tells a file changed in the same
        // second as the index was written ("racily clean") by comparing
        // with it, and a copy made now would hide such a change.
        let when = std::fs::metadata(&index).and_then(|m| m.modified());
        if let (Ok(when), Ok(copy)) = (when, std::fs::File::options().write(true).open(&tmp)) {
            let _ = copy.set_modified(when);
        }
    }
    let run = |args: &[&str]| -> Result<Vec<u8>, WorktreeError> {
        let mut cmd = git.command(args);
        cmd.env("GIT_INDEX_FILE", &tmp);
        let (code, out, err) = crate::core::checkpoints::git::run_with_timeout(
            cmd,
            args,
            None,
            crate::core::checkpoints::git::TIMEOUT,
        )?;
        if code == Some(0) {
            Ok(out)
        } else {
            Err(WorktreeError::Git(
                String::from_utf8_lossy(&err).trim().to_owned(),
            ))
        }
    };
    let tree = run(&["add", "-A"]).and_then(|_| run(&["write-tree"]));
    let _ = std::fs::remove_file(&tmp);
    Ok(String::from_utf8_lossy(&tree?).trim().to_owned())
}

fn object(git: &RepoGit, oid: &str) -> Result<Option<Vec<u8>>, WorktreeError> {
    if oid.bytes().all(|b| b == b'0') {
        return Ok(None);
    }
    Ok(Some(git.run(&["cat-file", "blob", oid], None)?))
}

/// The checkout's file now: its bytes, `None` when absent; an error
/// (with why) for a folder, a link or something else.
fn current(full: &Path) -> Result<Option<Vec<u8>>, String> {
    match std::fs::symlink_metadata(full) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) => {
            Ok(None)
        }
        Err(e) => Err(e.to_string()),
        Ok(m) if m.file_type().is_symlink() => Err(gettext("it is a link in your checkout")),
        Ok(m) if m.is_dir() => Err(gettext("it is a folder in your checkout")),
        Ok(m) if !m.is_file() => Err(gettext("it is not a regular file in your checkout")),
        // Read whole to compare and merge: within reason.
        Ok(m) if m.len() > MAX_APPLIED_BYTES => Err(gettext("it is larger than 64 MiB in your checkout")),
        Ok(_) => std::fs::read(full).map(Some).map_err(|e| e.to_string()),
    }
}

/// `git merge-file -p`: `current` with the change from `base` to `other`;
/// `None` on a conflict.
fn merge_file(
    git: &RepoGit,
    current: &[u8],
    base: &[u8],
    other: &[u8],
) -> Result<Option<Vec<u8>>, WorktreeError> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let stamp = format!(
        "parley-merge-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let names = ["current", "base", "other"].map(|n| std::env::temp_dir().join(format!("{stamp}-{n}")));
    let clean = || {
        for n in &names {
            let _ = std::fs::remove_file(n);
        }
    };
    for (name, bytes) in names.iter().zip([current, base, other]) {
        if let Err(e) = std::fs::write(name, bytes) {
            clean();
            return Err(WorktreeError::Io(e.to_string()));
        }
    }
    let paths: Vec<String> = names.iter().map(|n| n.display().to_string()).collect();
    let result = git.run_code(
        &["merge-file", "-p", "--quiet", &paths[0], &paths[1], &paths[2]],
        None,
    );
    clean();
    match result? {
        (Some(0), out, _) => Ok(Some(out)),
        (Some(c), _, _) if c > 0 && c < 128 => Ok(None),
        (_, _, err) => Err(WorktreeError::Git(
            String::from_utf8_lossy(&err).trim().to_owned(),
        )),
    }
}

/// Decides every file of the apply; refuses with each file that cannot
/// be brought over, before anything is written.
pub fn plan(wt: &Worktree) -> Result<Planned, WorktreeError> {
    let inside = RepoGit::new(Path::new(&wt.path));
    let tree = worktree_tree(&inside)?;
    let out = inside.run(
        &["diff-tree", "-r", "-z", "--raw", "--no-renames", &wt.base, &tree],
        None,
    )?;
    let top = PathBuf::from(&wt.repository);
    let mut writes = Vec::new();
    let mut refused: Vec<(String, String)> = Vec::new();
    let mut fields = out.split(|&b| b == 0).filter(|f| !f.is_empty());
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        use std::os::unix::ffi::OsStrExt;
        let meta = String::from_utf8_lossy(meta);
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, old_oid, new_oid, ..] = parts.as_slice() else {
            continue;
        };
        let shown = String::from_utf8_lossy(path).into_owned();
        if *old_mode == "120000" || *new_mode == "120000" || *new_mode == "160000" || *old_mode == "160000" {
            refused.push((
                shown,
                gettext("links and submodules are not applied; merge the branch instead"),
            ));
            continue;
        }
        let full = top.join(std::ffi::OsStr::from_bytes(path));
        let base = object(&inside, old_oid)?;
        let theirs = object(&inside, new_oid)?;
        let mine = match current(&full) {
            Ok(m) => m,
            Err(why) => {
                refused.push((shown, why));
                continue;
            }
        };
        let content = if mine == theirs {
            continue;
        } else if mine == base {
            theirs
        } else {
            match (&mine, &base, &theirs) {
                (Some(m), Some(b), Some(t)) => {
                    let text = |x: &[u8]| std::str::from_utf8(x).is_ok() && !x.contains(&0);
                    if !(text(m) && text(b) && text(t)) {
                        refused.push((shown, gettext("you changed it too, and it is not text")));
                        continue;
                    }
                    match merge_file(&inside, m, b, t)? {
                        Some(merged) => Some(merged),
                        None => {
                            refused.push((shown, gettext("you changed the same lines")));
                            continue;
                        }
                    }
                }
                (None, _, _) => {
                    refused.push((shown, gettext("you deleted it")));
                    continue;
                }
                _ => {
                    refused.push((shown, gettext("you changed it too")));
                    continue;
                }
            }
        };
        writes.push(FileWrite {
            shown,
            full,
            previous: mine,
            content,
            mode: (*new_mode == "100755").then_some(0o755),
        });
    }
    if !refused.is_empty() {
        return Err(WorktreeError::Conflicts(refused));
    }
    Ok(Planned { top, writes })
}

fn write_one(scope: &FsScope, full: &Path, content: Option<&[u8]>, mode: Option<u32>) -> Result<(), String> {
    match content {
        Some(bytes) => {
            scope.make_parents(full).map_err(|e| e.to_string())?;
            scope
                .write_bytes_mode(full, bytes, mode)
                .map_err(|e| e.to_string())
        }
        None => scope.remove(full).map_err(|e| e.to_string()),
    }
}

/// Writes what was planned; on a failure puts back what was written.
pub fn write(planned: Planned, id: String) -> Result<Applied, WorktreeError> {
    let scope = FsScope::new(&planned.top);
    for (i, w) in planned.writes.iter().enumerate() {
        if let Err(e) = write_one(&scope, &w.full, w.content.as_deref(), w.mode) {
            for d in planned.writes[..i].iter().rev() {
                let _ = write_one(&scope, &d.full, d.previous.as_deref(), d.mode);
            }
            return Err(WorktreeError::Io(format!("{}: {e}", w.shown)));
        }
    }
    Ok(Applied {
        id,
        files: planned.writes.iter().map(|w| w.shown.clone()).collect(),
        top: planned.top,
        writes: planned.writes,
    })
}

/// Puts back what an apply changed, if every file is still as it left it.
pub fn undo(applied: Applied) -> Result<Applied, WorktreeError> {
    for w in &applied.writes {
        let now = current(&w.full).unwrap_or(Some(Vec::new()));
        if now != w.content {
            return Err(WorktreeError::Conflicts(vec![(
                w.shown.clone(),
                gettext("it was changed since the apply"),
            )]));
        }
    }
    let back = Planned {
        top: applied.top.clone(),
        writes: applied
            .writes
            .iter()
            .map(|w| FileWrite {
                previous: w.content.clone(),
                content: w.previous.clone(),
                ..w.clone()
            })
            .collect(),
    };
    write(back, applied.id)
}
