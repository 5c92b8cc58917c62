//! A shadow repository: git's object store, owned by Parley, that records
//! one directory of the user's (a root) as commits. The user's own `.git`,
//! index and stash are never touched: git runs with the shadow as its
//! `GIT_DIR`, its own index, and the user's directory as the work tree.
//!
//! A snapshot is one `git status` (what changed since the last snapshot,
//! by the index's stat data), a look at each changed path (too large, not a
//! regular file, unreadable: not recorded, and said so), one `git add` of
//! exactly those paths, `write-tree` and `commit-tree`. When nothing
//! changed it is the `status` alone.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::git::{enclosing_repository, Git, GitError};

/// Files larger than this are not recorded.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// A tree with more files than this is not recorded at all.
pub const MAX_FILES: usize = 100_000;

/// Left out where the root is not in a git repository (there is no
/// `.gitignore` to say so): what tools rebuild, and which is large.
const DEFAULT_EXCLUDES: &str = "node_modules/\n.venv/\n__pycache__/\ntarget/\n";

/// The shadow's `info/attributes`.
const ATTRIBUTES: &str = "* -text -eol -filter -ident -working-tree-encoding\n";

/// Why a snapshot could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotError {
    Git(GitError),
    TooManyFiles { root: String, max: usize },
    Home { root: String },
    Unreadable { root: String, message: String },
    Store(String),
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::i18n::gettext_f;
        let text = match self {
            SnapshotError::Git(e) => e.to_string(),
            SnapshotError::TooManyFiles { root, max } => gettext_f(
                "{root} holds more than {max} files; checkpoints are off for it",
                &[("root", root), ("max", &max.to_string())],
            ),
            SnapshotError::Home { root } => gettext_f(
                "{root} is the home folder or holds it; checkpoints are off for it. Give the agent a project folder as its working directory.",
                &[("root", root)],
            ),
            SnapshotError::Unreadable { root, message } => gettext_f(
                "{root} cannot be read: {error}",
                &[("root", root), ("error", message)],
            ),
            SnapshotError::Store(why) => why.clone(),
        };
        f.write_str(&text)
    }
}

impl std::error::Error for SnapshotError {}

impl From<GitError> for SnapshotError {
    fn from(e: GitError) -> Self {
        SnapshotError::Git(e)
    }
}

/// A path a snapshot left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    pub why: SkipReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SkipReason {
    TooLarge,
    NotRegular,
    Unreadable,
    Repository,
}

/// What a snapshot does with a changed path.
enum Look {
    Add,
    /// Gone since `status` listed it, and never recorded.
    Gone,
    Skip(SkipReason),
}

/// One snapshot: a commit in the shadow repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub commit: String,
    pub skipped: Vec<Skipped>,
}

/// The shadow repository of one root.
#[derive(Debug, Clone)]
pub struct Shadow {
    pub git: Git,
    /// The root as given.
    pub root: PathBuf,
    /// The root below the work tree, `""` or ending in `/`.
    pub prefix: String,
    /// The user's repository's `info/exclude`, read at each snapshot.
    user_exclude: Option<PathBuf>,
    in_repository: bool,
    /// More new files than this at once and the root is not recorded.
    pub max_files: usize,
}

/// The directory name of a root's shadow repository.
pub fn shadow_name(root: &Path) -> String {
    let digest = sha2::Sha256::digest(root.as_os_str().as_encoded_bytes());
    digest.iter().take(10).map(|b| format!("{b:02x}")).collect()
}

impl Shadow {
    /// Opens (creating it the first time) the shadow repository of `root`
    /// under `store`. Refuses the home folder and anything holding it.
    pub fn open(store: &Path, root: &Path) -> Result<Shadow, SnapshotError> {
        let shown = root.display().to_string();
        let root = std::fs::canonicalize(root).map_err(|e| SnapshotError::Unreadable {
            root: shown.clone(),
            message: e.to_string(),
        })?;
        let home = crate::core::config::model::home_dir();
        let home = std::fs::canonicalize(&home).unwrap_or(home);
        if home.starts_with(&root) {
            return Err(SnapshotError::Home { root: shown });
        }
        let (work, user_exclude, in_repository) = match enclosing_repository(&root) {
            // A repository at the home folder (dotfiles) says nothing of
            // what a project below it ignores.
            Some((top, _)) if top == home => (root.clone(), None, false),
            Some((top, exclude)) => (top, exclude, true),
            None => (root.clone(), None, false),
        };
        let prefix = match root.strip_prefix(&work) {
            Ok(rel) if rel.as_os_str().is_empty() => String::new(),
            Ok(rel) => format!("{}/", rel.to_string_lossy()),
            Err(_) => String::new(),
        };
        let dir = store.join(shadow_name(&root));
        let git = Git {
            dir: dir.clone(),
            work,
        };
        if !dir.join("HEAD").exists() {
            std::fs::create_dir_all(store).map_err(|e| SnapshotError::Store(e.to_string()))?;
            // Made beside its place and renamed, so that a half-made
            // repository is never taken for one.
            static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = store.join(format!(".new-{}-{}-{n}", shadow_name(&root), std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            let mut init = git.command(&["init", "--quiet", "--bare"]);
            init.arg(&tmp).env_remove("GIT_DIR").env_remove("GIT_WORK_TREE");
            let (code, _, err) = super::git::run_with_timeout(init, &["init"], None, super::git::TIMEOUT)?;
            if code != Some(0) {
                return Err(GitError::Failed {
                    command: "init".into(),
                    code,
                    message: String::from_utf8_lossy(&err).trim().to_owned(),
                }
                .into());
            }
            let _ = std::fs::write(tmp.join("parley-root"), root.as_os_str().as_encoded_bytes());
            let set = |k: &str, v: &str| {
                Git {
                    dir: tmp.clone(),
                    work: git.work.clone(),
                }
                .run(&["config", k, v], None)
            };
            set("core.bare", "false")?;
            set("core.logAllRefUpdates", "false")?;
            if std::fs::rename(&tmp, &dir).is_err() {
                // Another Parley made it first.
                let _ = std::fs::remove_dir_all(&tmp);
            }
        }
        Ok(Shadow {
            git,
            root,
            prefix,
            user_exclude,
            in_repository,
            max_files: MAX_FILES,
        })
    }

    /// Writes the shadow's `info/exclude`: the user's repository's own, or
    /// the defaults where there is no repository.
    fn refresh_excludes(&self) {
        let mut text = String::new();
        match &self.user_exclude {
            // Read bounded: the agent may have put a FIFO or a huge file
            // there, and an unbounded read would hang recording for good.
            Some(p) => text.push_str(&String::from_utf8_lossy(
                &super::git::read_bounded(p, super::git::MAX_METADATA_BYTES).unwrap_or_default(),
            )),
            None if !self.in_repository => text.push_str(DEFAULT_EXCLUDES),
            None => {}
        }
        let path = self.git.dir.join("info/exclude");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            let _ = std::fs::create_dir_all(self.git.dir.join("info"));
            let _ = std::fs::write(path, text);
        }
        // The bytes as they are on disk: no line-ending conversion, no
        // filter (git-lfs would store a pointer), no re-encoding, whatever
        // the project's .gitattributes say (info/attributes comes first).
        let attributes = self.git.dir.join("info/attributes");
        if !attributes.exists() {
            let _ = std::fs::write(attributes, ATTRIBUTES);
        }
    }

    /// Records the root as it is now. One snapshot of a shadow at a time
    /// across processes too: two Parleys on one data directory share the
    /// shadow's index, and git refuses a second writer (`index.lock`).
    pub fn snapshot(&self) -> Result<Snapshot, SnapshotError> {
        let _held = ProcessLock::take(&self.git.dir)?;
        match self.try_snapshot() {
            // A file that went between `status` and `add` fails the add;
            // the second look sees it gone.
            Err(SnapshotError::Git(GitError::Failed { .. })) => self.try_snapshot(),
            other => other,
        }
    }

    fn pathspec(&self) -> Vec<&str> {
        if self.prefix.is_empty() {
            vec!["--", "."]
        } else {
            vec!["--", &self.prefix]
        }
    }

    /// A lock file (`index.lock`, `HEAD.lock`, a ref's) older than any git
    /// command may run is left by a command that was killed (or a Parley
    /// that crashed): with it, no snapshot would ever succeed again. One
    /// snapshot of a shadow runs at a time in this process, so a fresh one
    /// belongs to another Parley and stays.
    fn clear_stale_locks(&self) {
        let limit = super::git::TIMEOUT + std::time::Duration::from_secs(10);
        let mut dirs = vec![self.git.dir.clone()];
        while let Some(d) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                let Ok(meta) = e.metadata() else { continue };
                if meta.is_dir() {
                    // Only where git keeps locks: the top and refs/.
                    if p.starts_with(self.git.dir.join("refs"))
                        || d == self.git.dir && e.file_name() == "refs"
                    {
                        dirs.push(p);
                    }
                    continue;
                }
                let stale = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|a| a > limit);
                // `parley.lock` is no git lock: it is flock'd, never left.
                if stale && p.extension().is_some_and(|x| x == "lock") && e.file_name() != "parley.lock" {
                    let _ = std::fs::remove_file(&p);
                }
            }
        }
    }

    fn try_snapshot(&self) -> Result<Snapshot, SnapshotError> {
        self.clear_stale_locks();
        self.refresh_excludes();
        let mut args = vec![
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
        ];
        args.extend(self.pathspec());
        let (code, out, err) = self.git.run_code(&args, None)?;
        if code != Some(0) {
            return Err(SnapshotError::Git(GitError::Failed {
                command: "status".into(),
                code,
                message: String::from_utf8_lossy(&err).trim().to_owned(),
            }));
        }
        let head = self.git.resolve("HEAD");
        // Paths as git gives them: bytes (a name need not be UTF-8).
        let mut add: Vec<&[u8]> = Vec::new();
        let mut gone: Vec<&[u8]> = Vec::new();
        // Directories git could not list (no permission): not recorded.
        let mut skipped: Vec<Skipped> = String::from_utf8_lossy(&err)
            .lines()
            .filter_map(|l| l.strip_prefix("warning: could not open directory '"))
            .filter_map(|l| l.split_once("': ").map(|(p, _)| p.to_owned()))
            .map(|path| Skipped {
                path,
                why: SkipReason::Unreadable,
            })
            .collect();
        let mut untracked = 0usize;
        let mut staged = false;
        for entry in out.split(|&b| b == 0).filter(|e| e.len() > 3) {
            let (x, y) = (entry[0], entry[1]);
            let path = &entry[3..];
            if x == b'?' {
                untracked += 1;
                if untracked > self.max_files {
                    return Err(SnapshotError::TooManyFiles {
                        root: self.root.display().to_string(),
                        max: self.max_files,
                    });
                }
            }
            if y == b'D' {
                // Through `update-index`: `add` refuses a path whose folder
                // became a link ("beyond a symbolic link"), and that would
                // stop every later snapshot.
                gone.push(path);
                continue;
            }
            if y == b' ' {
                // Staged by a snapshot that stopped midway: the tree
                // written below has it.
                staged = true;
                continue;
            }
            match self.look(path, x == b'?') {
                Look::Add => add.push(path),
                Look::Gone => {}
                Look::Skip(why) => skipped.push(Skipped {
                    path: String::from_utf8_lossy(path).into_owned(),
                    why,
                }),
            }
        }
        if !gone.is_empty() {
            let mut list = Vec::new();
            for p in &gone {
                list.extend_from_slice(p);
                list.push(0);
            }
            self.git
                .run(&["update-index", "--force-remove", "-z", "--stdin"], Some(&list))?;
        }
        if add.is_empty() && gone.is_empty() && !staged {
            if let Some(head) = head {
                return Ok(Snapshot {
                    commit: head,
                    skipped,
                });
            }
        }
        if !add.is_empty() {
            let mut list = Vec::new();
            for p in &add {
                list.extend_from_slice(p);
                list.push(0);
            }
            self.git.run(
                &["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"],
                Some(&list),
            )?;
        }
        let tree = text(self.git.run(&["write-tree"], None)?);
        if let Some(h) = &head {
            if self.git.resolve_tree(h).as_deref() == Some(tree.as_str()) {
                return Ok(Snapshot {
                    commit: h.clone(),
                    skipped,
                });
            }
        }
        // No parent: a snapshot is kept by the refs of the turns that
        // name it (and HEAD, the latest), so pruning a turn frees it.
        let commit = text(
            self.git
                .run(&["commit-tree", tree.as_str(), "-m", "checkpoint"], None)?,
        );
        self.git.run(&["update-ref", "HEAD", &commit], None)?;
        Ok(Snapshot { commit, skipped })
    }

    /// Whether a changed path can be recorded.
    fn look(&self, path: &[u8], untracked: bool) -> Look {
        use std::os::unix::ffi::OsStrExt;
        if path.ends_with(b"/") {
            // A directory `status` did not go into: a repository of its own.
            return Look::Skip(SkipReason::Repository);
        }
        let full = self.git.work.join(std::ffi::OsStr::from_bytes(path));
        let meta = match std::fs::symlink_metadata(&full) {
            // Gone since `status`: a tracked file is recorded as deleted;
            // an untracked one was never there for git.
            Err(_) if untracked => return Look::Gone,
            Err(_) => return Look::Add,
            Ok(m) => m,
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            return Look::Add;
        }
        if kind.is_fifo()
            || kind.is_socket()
            || kind.is_block_device()
            || kind.is_char_device()
            || !kind.is_file()
        {
            return Look::Skip(SkipReason::NotRegular);
        }
        if meta.size() > MAX_FILE_BYTES {
            return Look::Skip(SkipReason::TooLarge);
        }
        // Opened without following a link and without waiting on anything.
        match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags_nofollow()
            .open(&full)
        {
            Ok(_) => Look::Add,
            Err(_) => Look::Skip(SkipReason::Unreadable),
        }
    }

    /// Points `name` (below `refs/parley/`) at `commit`, keeping it.
    pub fn keep(&self, name: &str, commit: &str) -> Result<(), GitError> {
        self.git
            .run(&["update-ref", &format!("refs/parley/{name}"), commit], None)
            .map(|_| ())
    }

    /// Drops every ref below `refs/parley/{prefix}`.
    pub fn drop_refs(&self, prefix: &str) -> Result<(), GitError> {
        let out = self.git.run(
            &[
                "for-each-ref",
                "--format=%(refname)",
                &format!("refs/parley/{prefix}"),
            ],
            None,
        )?;
        let mut input = String::new();
        for r in String::from_utf8_lossy(&out).lines().filter(|l| !l.is_empty()) {
            input.push_str(&format!("delete {r}\n"));
        }
        if !input.is_empty() {
            self.git.run(&["update-ref", "--stdin"], Some(input.as_bytes()))?;
        }
        Ok(())
    }

    /// Removes what no ref keeps any more (older than an hour: a revert's
    /// copy kept for its Undo is not yet referenced).
    pub fn prune(&self) -> Result<(), GitError> {
        self.git.run(&["prune", "--expire=1.hour.ago"], None).map(|_| ())
    }

    /// The paths (below the work tree) a commit holds with their modes, for
    /// the paths asked.
    pub fn modes(&self, commit: &str, paths: &[&str]) -> Result<BTreeMap<String, String>, GitError> {
        let mut args = vec!["ls-tree", "-z", commit, "--"];
        args.extend(paths.iter().copied());
        let out = self.git.run(&args, None)?;
        let mut modes = BTreeMap::new();
        for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let line = String::from_utf8_lossy(entry);
            if let Some((meta, path)) = line.split_once('\t') {
                if let Some(mode) = meta.split(' ').next() {
                    modes.insert(path.to_owned(), mode.to_owned());
                }
            }
        }
        Ok(modes)
    }
}

fn text(out: Vec<u8>) -> String {
    String::from_utf8_lossy(&out).trim().to_owned()
}

/// `O_NOFOLLOW | O_NONBLOCK` for the readability check: a FIFO that slipped
/// in is not waited on.
trait NoFollow {
    fn custom_flags_nofollow(&mut self) -> &mut Self;
}

impl NoFollow for std::fs::OpenOptions {
    fn custom_flags_nofollow(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
    }
}

/// An exclusive `flock` on the shadow's `parley.lock`, for as long as it
/// lives. Waits (within git's own time limit) for another process's.
struct ProcessLock(std::fs::File);

impl ProcessLock {
    fn take(dir: &Path) -> Result<ProcessLock, SnapshotError> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("parley.lock"))
            .map_err(|e| SnapshotError::Store(e.to_string()))?;
        let deadline = std::time::Instant::now() + super::git::TIMEOUT;
        loop {
            // SAFETY: flock on an fd this function owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(ProcessLock(file));
            }
            let e = std::io::Error::last_os_error();
            // A file system without locks (some NFS): as before, within
            // this process only.
            if e.raw_os_error() == Some(libc::ENOLCK) {
                return Ok(ProcessLock(file));
            }
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.raw_os_error() != Some(libc::EINTR) {
                return Err(SnapshotError::Store(e.to_string()));
            }
            if std::time::Instant::now() > deadline {
                return Err(SnapshotError::Store(crate::i18n::gettext(
                    "another process held the checkpoints' repository too long",
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for ProcessLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking an fd this value owns.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}
