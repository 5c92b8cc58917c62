//! Taking a turn's changes back: a hunk, a file, or the whole turn.
//!
//! Everything is decided before anything is written: each file's content
//! now is compared with what the turn left (or what an earlier revert of
//! Parley's left). Where it is, the file gets its old content; where the
//! user or another turn changed it since, only a three-way merge through
//! `git merge-file` (current, base: the turn's result, other: the wanted
//! result) may revert the turn's part, and only when asked to; lines
//! changed on both sides refuse the whole revert. Writes go through the
//! agent boundary's [`FsScope`], beneath the root, never through a link
//! out of it.

use std::path::{Path, PathBuf};

use super::diff::{unapply, FileChange, FileStatus};
use super::git::GitError;
use super::shadow::Shadow;
use crate::core::acp::fs::FsScope;

/// Why a revert was refused. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertError {
    ChangedSince(String),
    Conflict(String),
    Binary(String),
    Link(String),
    HunkGone(String),
    Io(String),
    Git(GitError),
}

impl std::fmt::Display for RevertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::i18n::gettext_f;
        let text = match self {
            RevertError::ChangedSince(p) => gettext_f(
                "{path} was changed since the turn; revert only the turn's lines to keep those changes",
                &[("path", p)],
            ),
            RevertError::Conflict(p) => gettext_f(
                "{path} was changed since the turn on the same lines; nothing was reverted",
                &[("path", p)],
            ),
            RevertError::Binary(p) => gettext_f(
                "{path} is not text; only the whole file can be reverted",
                &[("path", p)],
            ),
            RevertError::Link(p) => gettext_f(
                "{path} is a symbolic link; Parley does not restore links",
                &[("path", p)],
            ),
            RevertError::HunkGone(p) => gettext_f(
                "{path}: the hunk is no longer what the turn wrote",
                &[("path", p)],
            ),
            RevertError::Io(why) => why.clone(),
            RevertError::Git(e) => e.to_string(),
        };
        f.write_str(&text)
    }
}

impl std::error::Error for RevertError {}

impl From<GitError> for RevertError {
    fn from(e: GitError) -> Self {
        RevertError::Git(e)
    }
}

/// What one file gets, decided before anything is written.
#[derive(Debug, Clone)]
pub struct Write {
    pub root: PathBuf,
    /// Absolute, below `root`.
    pub full: PathBuf,
    /// Relative to the root, as shown.
    pub shown: String,
    pub git_path: String,
    /// What it holds now (`None`: absent), for Undo.
    pub previous: Option<Vec<u8>>,
    /// What it gets (`None`: removed).
    pub content: Option<Vec<u8>>,
    /// It was merged with changes made since the turn.
    pub merged: bool,
    /// The mode a file made anew gets (an executable comes back as one).
    pub mode: Option<u32>,
}

/// The turn's two snapshots of one root.
pub struct Sides<'a> {
    pub shadow: &'a Shadow,
    pub before: &'a str,
    pub after: &'a str,
    /// What Parley's earlier reverts left, by path below the work tree.
    pub left: &'a std::collections::BTreeMap<String, String>,
}

/// What a file is now: its bytes, or `None` when absent.
fn current(full: &Path, shown: &str) -> Result<Option<Vec<u8>>, RevertError> {
    match std::fs::symlink_metadata(full) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RevertError::Io(format!("{shown}: {e}"))),
        Ok(m) if m.file_type().is_symlink() => Err(RevertError::Link(shown.to_owned())),
        Ok(m) if !m.is_file() => Err(RevertError::Io(format!("{shown}: not a regular file"))),
        Ok(m) if m.len() > super::shadow::MAX_FILE_BYTES => Err(RevertError::Io(format!(
            "{shown}: larger than {} MiB",
            super::shadow::MAX_FILE_BYTES >> 20
        ))),
        Ok(_) => std::fs::read(full)
            .map(Some)
            .map_err(|e| RevertError::Io(format!("{shown}: {e}"))),
    }
}

/// Plans the revert of `file` (one hunk of it, or all) in one root.
/// `merge`: revert only the turn's part of a file changed since.
pub fn plan_file(
    sides: &Sides,
    file: &FileChange,
    hunk: Option<usize>,
    merge: bool,
) -> Result<Vec<Write>, RevertError> {
    let git = &sides.shadow.git;
    let mut writes = Vec::new();
    // A rename's old path comes back as it was (whole files only).
    if let (FileStatus::Renamed, Some(old)) = (file.status, &file.git_old_path) {
        if hunk.is_none() {
            let shown = file.old_path.clone().unwrap_or_else(|| old.clone());
            let full = git.work.join(old);
            let now = current(&full, &shown)?;
            let before = git.blob(sides.before, old)?;
            if now.is_some() && now != before {
                return Err(RevertError::ChangedSince(shown));
            }
            writes.push(Write {
                root: sides.shadow.root.clone(),
                full,
                shown,
                git_path: old.clone(),
                previous: now,
                content: before,
                merged: false,
                mode: file_mode(sides, old)?,
            });
        }
    }
    let shown = file.path.clone();
    let full = git.work.join(&file.git_path);
    let now = current(&full, &shown)?;
    let after = git.blob(sides.after, &file.git_path)?;
    let before = match file.status {
        FileStatus::Renamed if hunk.is_none() => None,
        FileStatus::Renamed => git.blob(sides.before, file.git_old_path.as_deref().unwrap_or(""))?,
        _ => git.blob(sides.before, &file.git_path)?,
    };
    let wanted = match hunk {
        None => {
            if before.is_some() {
                let old_path = match file.status {
                    FileStatus::Renamed => file.git_old_path.as_deref().unwrap_or(&file.git_path),
                    _ => &file.git_path,
                };
                file_mode(sides, old_path)?;
            }
            before.clone()
        }
        Some(i) => {
            let (Some(a), Some(h)) = (&after, file.hunks.get(i)) else {
                return Err(RevertError::HunkGone(shown));
            };
            // A hunk is taken back by its text: both sides must be text
            // (git calls Latin-1 text, but the patch read here is UTF-8).
            let text = |b: &Option<Vec<u8>>| b.as_deref().is_none_or(|b| std::str::from_utf8(b).is_ok());
            if file.binary || !text(&after) || !text(&before) {
                return Err(RevertError::Binary(shown));
            }
            Some(unapply(a, h).ok_or_else(|| RevertError::HunkGone(shown.clone()))?)
        }
    };
    let left = match sides.left.get(&file.git_path) {
        Some(id) => git.run(&["cat-file", "blob", id], None).ok(),
        None => None,
    };
    let as_turn_left = now == after;
    let as_we_left = left.is_some() && now == left;
    let (content, merged) = if as_turn_left {
        (wanted, false)
    } else {
        if !as_we_left && !merge {
            return Err(RevertError::ChangedSince(shown));
        }
        match (&now, &after, &wanted) {
            (Some(n), Some(a), Some(w)) => {
                if file.binary || std::str::from_utf8(n).is_err() {
                    return Err(RevertError::Binary(shown));
                }
                (Some(merge_file(sides.shadow, n, a, w, &shown)?), !as_we_left)
            }
            // The turn deleted it and it is back: what is there now stays.
            _ => return Err(RevertError::ChangedSince(shown)),
        }
    };
    if content == now {
        // Nothing to write (it already holds what the revert would give).
        return Ok(writes);
    }
    let mode = match file.status {
        FileStatus::Renamed => None,
        _ => file_mode(sides, &file.git_path)?,
    };
    writes.push(Write {
        root: sides.shadow.root.clone(),
        full,
        shown,
        git_path: file.git_path.clone(),
        previous: now,
        content,
        merged,
        mode,
    });
    Ok(writes)
}

/// The mode the file had before the turn, for a file made anew; a link
/// is refused (Parley does not make links).
fn file_mode(sides: &Sides, git_path: &str) -> Result<Option<u32>, RevertError> {
    let modes = sides.shadow.modes(sides.before, &[git_path])?;
    match modes.get(git_path).map(String::as_str) {
        Some("120000") => Err(RevertError::Link(git_path.to_owned())),
        Some("100755") => Ok(Some(0o755)),
        _ => Ok(None),
    }
}

/// `git merge-file`: `current` with the change from `base` to `other`.
fn merge_file(
    shadow: &Shadow,
    current: &[u8],
    base: &[u8],
    other: &[u8],
    shown: &str,
) -> Result<Vec<u8>, RevertError> {
    let dir = shadow.git.dir.join("merge");
    std::fs::create_dir_all(&dir).map_err(|e| RevertError::Io(e.to_string()))?;
    let stamp = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let names = ["current", "base", "other"].map(|n| dir.join(format!("{stamp}-{n}")));
    let clean = || {
        for n in &names {
            let _ = std::fs::remove_file(n);
        }
    };
    for (name, bytes) in names.iter().zip([current, base, other]) {
        if let Err(e) = std::fs::write(name, bytes) {
            clean();
            return Err(RevertError::Io(e.to_string()));
        }
    }
    let paths: Vec<String> = names.iter().map(|n| n.display().to_string()).collect();
    let result = shadow.git.run_code(
        &["merge-file", "-p", "--quiet", &paths[0], &paths[1], &paths[2]],
        None,
    );
    clean();
    match result? {
        (Some(0), out, _) => Ok(out),
        (Some(c), _, _) if c > 0 && c < 128 => Err(RevertError::Conflict(shown.to_owned())),
        (code, _, err) => Err(RevertError::Git(GitError::Failed {
            command: "merge-file".into(),
            code,
            message: String::from_utf8_lossy(&err).trim().to_owned(),
        })),
    }
}

/// Writes what was planned, each file atomically, beneath its root.
/// Returns the writes that were done (all of them, or an error after
/// putting back those already done).
pub fn apply(writes: &[Write]) -> Result<(), RevertError> {
    let mut done: Vec<&Write> = Vec::new();
    for w in writes {
        if let Err(e) = write_one(&w.root, &w.full, w.content.as_deref(), w.mode) {
            // Put back what was written: never half a revert.
            for d in done.iter().rev() {
                let _ = write_one(&d.root, &d.full, d.previous.as_deref(), d.mode);
            }
            return Err(RevertError::Io(format!("{}: {e}", w.shown)));
        }
        done.push(w);
    }
    Ok(())
}

fn write_one(root: &Path, full: &Path, content: Option<&[u8]>, mode: Option<u32>) -> Result<(), String> {
    let scope = FsScope::new(root);
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
