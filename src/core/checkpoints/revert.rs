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

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::diff::{unapply, FileChange, FileStatus};
use super::git::{BlobReader, GitError};
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
    /// Whether the file must be executable after the write (`None`: as
    /// the write leaves it), and whether it was before (for Undo).
    pub exec: Option<bool>,
    pub exec_before: Option<bool>,
}

impl Write {
    /// The write that puts back what this one changes.
    pub fn reversed(&self) -> Write {
        Write {
            previous: self.content.clone(),
            content: self.previous.clone(),
            exec: self.exec_before,
            exec_before: self.exec,
            merged: false,
            ..self.clone()
        }
    }
}

/// The turn's two snapshots of one root.
pub struct Sides<'a> {
    pub shadow: &'a Shadow,
    pub before: &'a str,
    pub after: &'a str,
    /// What Parley's earlier reverts left, by path below the work tree.
    pub left: &'a std::collections::BTreeMap<String, String>,
    /// Blobs and modes read once for all the files of a revert: a process
    /// per file made undoing 5,000 deleted files take a minute.
    cache: std::cell::RefCell<Cache>,
}

#[derive(Default)]
struct Cache {
    reader: Option<BlobReader>,
    /// `before`'s modes by path (bytes), read with one `ls-tree`.
    before_modes: Option<std::collections::HashMap<Vec<u8>, String>>,
}

impl<'a> Sides<'a> {
    pub fn new(
        shadow: &'a Shadow,
        before: &'a str,
        after: &'a str,
        left: &'a std::collections::BTreeMap<String, String>,
    ) -> Self {
        Sides {
            shadow,
            before,
            after,
            left,
            cache: Default::default(),
        }
    }

    fn blob(&self, commit: &str, path: &[u8]) -> Result<Option<Vec<u8>>, RevertError> {
        let git = &self.shadow.git;
        let mut cache = self.cache.borrow_mut();
        if cache.reader.is_none() {
            cache.reader = Some(BlobReader::new(git)?);
        }
        match cache.reader.as_mut() {
            Some(r) => Ok(r.blob(git, commit, path)?),
            None => Ok(git.blob_raw(commit, path)?),
        }
    }

    /// The mode `path` had before the turn (`None`: it did not exist).
    fn before_mode(&self, path: &[u8]) -> Result<Option<String>, RevertError> {
        let mut cache = self.cache.borrow_mut();
        if cache.before_modes.is_none() {
            let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", self.before];
            if !self.shadow.prefix.is_empty() {
                args.extend(["--", self.shadow.prefix.as_str()]);
            }
            let out = self.shadow.git.run(&args, None)?;
            let mut modes = std::collections::HashMap::new();
            for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
                let Some(tab) = entry.iter().position(|&b| b == b'\t') else {
                    continue;
                };
                let meta = String::from_utf8_lossy(&entry[..tab]);
                if let Some(mode) = meta.split(' ').next() {
                    modes.insert(entry[tab + 1..].to_vec(), mode.to_owned());
                }
            }
            cache.before_modes = Some(modes);
        }
        Ok(cache.before_modes.as_ref().and_then(|m| m.get(path).cloned()))
    }
}

/// Whether the file at `full` is executable now (`None`: absent).
fn executable(full: &Path) -> Option<bool> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(full)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode() & 0o111 != 0)
}

/// What a file is now: its bytes, or `None` when absent.
fn current(full: &Path, shown: &str) -> Result<Option<Vec<u8>>, RevertError> {
    match std::fs::symlink_metadata(full) {
        // Absent, or a file stands where its folder was.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) => {
            Ok(None)
        }
        Err(e) => Err(RevertError::Io(format!("{shown}: {e}"))),
        Ok(m) if m.file_type().is_symlink() => Err(RevertError::Link(shown.to_owned())),
        // A folder where the file was: no file there (putting it back
        // needs the folder empty, see `refuse_blocked`).
        Ok(m) if m.is_dir() => Ok(None),
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
    if let (FileStatus::Renamed, Some(old), Some(old_raw)) =
        (file.status, &file.git_old_path, &file.git_old_raw)
    {
        if hunk.is_none() {
            let shown = file.old_path.clone().unwrap_or_else(|| old.clone());
            let full = git.work.join(std::ffi::OsStr::from_bytes(old_raw));
            let now = current(&full, &shown)?;
            let before = sides.blob(sides.before, old_raw)?;
            if now.is_some() && now != before {
                return Err(RevertError::ChangedSince(shown));
            }
            let mode = file_mode(sides, old_raw, old)?;
            writes.push(Write {
                root: sides.shadow.root.clone(),
                exec_before: executable(&full),
                exec: Some(mode == Some(0o755)),
                full,
                shown,
                git_path: old.clone(),
                previous: now,
                content: before,
                merged: false,
                mode,
            });
        }
    }
    let shown = file.path.clone();
    let full = file.full(&git.work);
    let now = current(&full, &shown)?;
    let after = sides.blob(sides.after, &file.git_raw)?;
    let old_raw: &[u8] = match file.status {
        FileStatus::Renamed => file.git_old_raw.as_deref().unwrap_or_default(),
        _ => &file.git_raw,
    };
    let before = match file.status {
        FileStatus::Renamed if hunk.is_none() => None,
        _ => sides.blob(sides.before, old_raw)?,
    };
    // The mode the file had before (a link is refused: Parley makes none).
    let before_mode = if before.is_some() {
        file_mode(sides, old_raw, &file.git_path)?
    } else {
        None
    };
    let wanted = match hunk {
        None => before.clone(),
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
    // Already as the revert would leave it (reverted before): nothing to
    // do, whatever changed since.
    if hunk.is_none()
        && now == wanted
        && (before.is_none() || executable(&full) == Some(before_mode == Some(0o755)))
    {
        return Ok(writes);
    }
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
    // The executable bit goes back with the whole file (a hunk leaves it).
    let exec_now = executable(&full);
    let exec = match (hunk, &content, file.status) {
        (None, Some(_), FileStatus::Modified | FileStatus::Deleted) => Some(before_mode == Some(0o755)),
        _ => None,
    };
    if content == now && (exec.is_none() || exec == exec_now) {
        // Nothing to write (it already holds what the revert would give).
        return Ok(writes);
    }
    writes.push(Write {
        root: sides.shadow.root.clone(),
        full,
        shown,
        git_path: file.git_path.clone(),
        previous: now,
        content,
        merged,
        mode: match file.status {
            FileStatus::Renamed => None,
            _ => before_mode,
        },
        exec,
        exec_before: exec_now,
    });
    Ok(writes)
}

/// The mode the file had before the turn, for a file made anew; a link
/// is refused (Parley does not make links).
fn file_mode(sides: &Sides, raw: &[u8], shown: &str) -> Result<Option<u32>, RevertError> {
    match sides.before_mode(raw)?.as_deref() {
        Some("120000") => Err(RevertError::Link(shown.to_owned())),
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

/// Writes what was planned, each file atomically, beneath its root:
/// removals first, so that a file can come back where the turn had made a
/// folder (and a folder where it had made a file). Returns an error after
/// putting back the writes already done: never half a revert.
pub fn apply(writes: &[Write]) -> Result<(), RevertError> {
    let mut order: Vec<&Write> = writes.iter().filter(|w| w.content.is_none()).collect();
    order.extend(writes.iter().filter(|w| w.content.is_some()));
    let mut done: Vec<&Write> = Vec::new();
    for w in order {
        if let Err(e) = write_one(w, false) {
            for d in done.iter().rev() {
                let _ = write_one(d, true);
            }
            return Err(RevertError::Io(format!("{}: {e}", w.shown)));
        }
        done.push(w);
    }
    Ok(())
}

/// Writes `w` (or, `back`, puts back what it found).
fn write_one(w: &Write, back: bool) -> Result<(), String> {
    let scope = FsScope::new(&w.root);
    let (content, exec) = if back {
        (w.previous.as_deref(), w.exec_before)
    } else {
        (w.content.as_deref(), w.exec)
    };
    match content {
        Some(bytes) => {
            // A folder the turn made where the file was: gone once its
            // files are (the plan removed them first), else refused.
            if std::fs::symlink_metadata(&w.full).is_ok_and(|m| m.is_dir()) {
                remove_empty_dirs(&scope, &w.full)?;
            }
            scope.make_parents(&w.full).map_err(|e| e.to_string())?;
            scope
                .write_bytes_mode(&w.full, bytes, w.mode)
                .map_err(|e| e.to_string())?;
            if let Some(exec) = exec {
                set_exec(&scope, &w.full, exec)?;
            }
            Ok(())
        }
        // Folders left empty stay: git does not record folders, so an
        // empty one may be the user's.
        None => scope.remove(&w.full).map_err(|e| e.to_string()),
    }
}

/// Takes out of the plan each file that would come back where a folder
/// now holds files the plan does not remove (the turn made the folder and
/// something else put files in it): that path is refused, with the reason,
/// and the rest of the revert goes on.
pub fn refuse_blocked<T: Clone + PartialEq>(writes: &mut Vec<(T, Write)>) -> Vec<(String, String)> {
    let removed: std::collections::HashSet<PathBuf> = writes
        .iter()
        .filter(|(_, w)| w.content.is_none())
        .map(|(_, w)| w.full.clone())
        .collect();
    let mut refused = Vec::new();
    let mut refused_keys = Vec::new();
    for (key, w) in writes.iter() {
        if w.content.is_none() || !std::fs::symlink_metadata(&w.full).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        if holds_others(&w.full, &removed) {
            refused.push((
                w.shown.clone(),
                crate::i18n::gettext_f(
                    "{path} is now a folder that holds files the turn did not make",
                    &[("path", &w.shown)],
                ),
            ));
            refused_keys.push(key.clone());
        }
    }
    // Every write of a refused file goes: half a rename is never done.
    writes.retain(|(key, _)| !refused_keys.contains(key));
    refused
}

/// Whether the folder `dir` holds anything the plan does not remove: a
/// file, or an empty folder (git records no folders, so an empty one may
/// be the user's).
fn holds_others(dir: &Path, removed: &std::collections::HashSet<PathBuf>) -> bool {
    let mut stack = vec![dir.to_owned()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            return true;
        };
        let mut empty = true;
        for e in entries.flatten() {
            empty = false;
            seen += 1;
            if seen > 100_000 {
                return true;
            }
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if !removed.contains(&p) {
                return true;
            }
        }
        if empty && d != dir {
            return true;
        }
    }
    false
}

/// Removes `dir` and the folders in it, all empty (deepest first).
fn remove_empty_dirs(scope: &FsScope, dir: &Path) -> Result<(), String> {
    let mut dirs = vec![dir.to_owned()];
    let mut i = 0;
    while i < dirs.len() {
        let entries = std::fs::read_dir(&dirs[i]).map_err(|e| e.to_string())?;
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(e.path());
            } else {
                return Err(crate::i18n::gettext_f(
                    "it is now a folder that holds files the turn did not make ({path})",
                    &[("path", &e.path().display().to_string())],
                ));
            }
        }
        i += 1;
        if dirs.len() > 10_000 {
            return Err(crate::i18n::gettext(
                "it is now a folder that holds too many folders",
            ));
        }
    }
    for d in dirs.iter().rev() {
        scope.remove_empty_dir(d).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn set_exec(scope: &FsScope, full: &Path, exec: bool) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::symlink_metadata(full)
        .map_err(|e| e.to_string())?
        .permissions()
        .mode()
        & 0o7777;
    let wanted = if exec {
        // Executable for whoever may read it.
        mode | ((mode & 0o444) >> 2)
    } else {
        mode & !0o111
    };
    if wanted != mode {
        scope.set_mode(full, wanted).map_err(|e| e.to_string())?;
    }
    Ok(())
}
