//! [`WorktreeService`]: the conversations' worktrees. Each is made with
//! `git worktree add -b parley/<slug> <path> <base>` under Parley's data
//! folder (never inside the user's tree), listed in a JSON file beside it,
//! and brought back by Apply (the changes as uncommitted edits of the main
//! checkout, decided file by file before anything is written) or Merge,
//! or let go by Discard. The user's checkout, index, stash and branches
//! are touched only by Apply, Merge and `git worktree add/remove`.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::apply::{self, Applied, Planned};
use super::git::RepoGit;
use super::model::{ChangedFile, Status, Worktree, WorktreeError};
use crate::i18n::{gettext, gettext_f};

/// Applies remembered for their Undo.
const UNDO_DEPTH: usize = 16;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone)]
pub struct WorktreeService {
    inner: Arc<Inner>,
}

struct Inner {
    /// `$XDG_DATA_HOME/parley/worktrees` (`None`: no history, no worktrees).
    dir: Option<PathBuf>,
    /// The list is read, changed and written one at a time.
    list: Mutex<()>,
    undo: Mutex<VecDeque<Applied>>,
    next: std::sync::atomic::AtomicU64,
}

/// Where worktrees are kept: beside the history file, in `worktrees/`.
pub fn default_dir(history: &Path) -> PathBuf {
    history
        .parent()
        .map_or_else(|| PathBuf::from("worktrees"), |d| d.join("worktrees"))
}

/// `parley/<slug>` can be made: no branch `parley` (a ref cannot be both
/// a file and a folder), and the first of `<slug>`, `<slug>-2`, … free.
fn free_branch(git: &RepoGit, slug: &str) -> Result<String, WorktreeError> {
    if git
        .run(&["show-ref", "--verify", "--quiet", "refs/heads/parley"], None)
        .is_ok()
    {
        return Err(WorktreeError::BranchBlocked(gettext(
            "the repository has a branch named “parley”, so no branch parley/… can be made; rename it to use worktrees",
        )));
    }
    for n in 1..1000 {
        let name = if n == 1 {
            format!("parley/{slug}")
        } else {
            format!("parley/{slug}-{n}")
        };
        let taken = git
            .run(
                &["show-ref", "--verify", "--quiet", &format!("refs/heads/{name}")],
                None,
            )
            .is_ok();
        if !taken {
            return Ok(name);
        }
    }
    Err(WorktreeError::BranchBlocked(gettext(
        "no free branch name was found",
    )))
}

/// A name for a branch and a folder: letters, digits and `-` only.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 40 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "conversation".to_owned()
    } else {
        out
    }
}

/// An exclusive `flock` for one repository across processes: several
/// `git worktree add` at once in one repository fail now and then.
struct RepoLock(#[allow(dead_code)] std::fs::File);

impl RepoLock {
    fn take(dir: &Path, repository: &Path) -> Result<RepoLock, WorktreeError> {
        use sha2::Digest;
        use std::os::fd::AsRawFd;
        let locks = dir.join(".locks");
        std::fs::create_dir_all(&locks).map_err(|e| WorktreeError::Io(e.to_string()))?;
        let digest = sha2::Sha256::digest(repository.as_os_str().as_encoded_bytes());
        let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(locks.join(format!("{name}.lock")))
            .map_err(|e| WorktreeError::Io(e.to_string()))?;
        // SAFETY: flock on an fd this function owns; released on close.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(WorktreeError::Io(std::io::Error::last_os_error().to_string()));
        }
        Ok(RepoLock(file))
    }
}

impl WorktreeService {
    pub fn new(dir: Option<PathBuf>) -> Self {
        WorktreeService {
            inner: Arc::new(Inner {
                dir,
                list: Mutex::new(()),
                undo: Mutex::new(VecDeque::new()),
                next: std::sync::atomic::AtomicU64::new(1),
            }),
        }
    }

    fn dir(&self) -> Result<PathBuf, WorktreeError> {
        self.inner
            .dir
            .clone()
            .ok_or_else(|| WorktreeError::Io(gettext("worktrees need the history (there is none)")))
    }

    fn list_path(&self) -> Result<PathBuf, WorktreeError> {
        Ok(self.dir()?.join("worktrees.json"))
    }

    /// Every worktree Parley made and has not let go.
    pub fn list(&self) -> Vec<Worktree> {
        let Ok(path) = self.list_path() else {
            return Vec::new();
        };
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn change_list(&self, f: impl FnOnce(&mut Vec<Worktree>)) -> Result<(), WorktreeError> {
        let _held = lock(&self.inner.list);
        let mut list = self.list();
        f(&mut list);
        let path = self.list_path()?;
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| WorktreeError::Io(e.to_string()))?;
        }
        let bytes = serde_json::to_vec_pretty(&list).map_err(|e| WorktreeError::Io(e.to_string()))?;
        crate::core::atomic::write(&path, &bytes).map_err(|e| WorktreeError::Io(e.to_string()))
    }

    /// The worktree of a conversation, if it has one.
    pub fn of_conversation(&self, conversation: &str) -> Option<Worktree> {
        self.list()
            .into_iter()
            .find(|w| w.conversation.as_deref() == Some(conversation))
    }

    /// Ties a worktree (by its path) to the conversation that now has it.
    pub fn link(&self, path: &str, conversation: &str) -> Result<(), WorktreeError> {
        self.change_list(|list| {
            for w in list.iter_mut().filter(|w| w.path == path) {
                w.conversation = Some(conversation.to_owned());
            }
        })
    }

    /// Makes a worktree for `agent`, whose directory is `cwd`, from `base`
    /// (a branch or commit; the repository's `HEAD` when `None`).
    pub async fn create(
        &self,
        agent: &str,
        cwd: &Path,
        base: Option<&str>,
        name: &str,
    ) -> Result<Worktree, WorktreeError> {
        let this = self.clone();
        let (agent, cwd, base, name) = (
            agent.to_owned(),
            cwd.to_owned(),
            base.map(str::to_owned),
            name.to_owned(),
        );
        tokio::task::spawn_blocking(move || this.create_blocking(&agent, &cwd, base.as_deref(), &name))
            .await
            .map_err(|e| WorktreeError::Io(e.to_string()))?
    }

    fn create_blocking(
        &self,
        agent: &str,
        cwd: &Path,
        base: Option<&str>,
        name: &str,
    ) -> Result<Worktree, WorktreeError> {
        let shown = cwd.display().to_string();
        let here = RepoGit::new(cwd);
        if here.text(&["rev-parse", "--is-bare-repository"]).as_deref() == Ok("true") {
            return Err(WorktreeError::Bare(shown));
        }
        let top = here
            .text(&["rev-parse", "--show-toplevel"])
            .map_err(|_| WorktreeError::NotInRepository(shown.clone()))?;
        let top = PathBuf::from(top);
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
        let top = std::fs::canonicalize(&top).unwrap_or(top);
        let subdir = cwd.strip_prefix(&top).map(Path::to_path_buf).unwrap_or_default();
        let git = RepoGit::new(&top);
        let base_rev = base.unwrap_or("HEAD");
        let commit = git
            .text(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{base_rev}^{{commit}}"),
            ])
            .ok()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| match base {
                Some(b) => WorktreeError::BadBase(b.to_owned()),
                None => WorktreeError::NoCommit(top.display().to_string()),
            })?;
        let base_name = match base {
            Some(b) => b.to_owned(),
            None => git
                .text(&["symbolic-ref", "--short", "-q", "HEAD"])
                .ok()
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| commit.chars().take(12).collect()),
        };
        let dir = self.dir()?;
        let _held = RepoLock::take(&dir, &top)?;
        let slug = slug(name);
        let branch = free_branch(&git, &slug)?;
        let repo_name = slug_of_path(&top);
        let mut path = dir.join(&repo_name).join(branch.trim_start_matches("parley/"));
        let mut n = 2;
        while path.exists() {
            path = dir
                .join(&repo_name)
                .join(format!("{}-{n}", branch.trim_start_matches("parley/")));
            n += 1;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| WorktreeError::Io(e.to_string()))?;
        }
        // Where `$HOME` is itself a repository (dotfiles), the worktrees
        // would show in its `git status`: the folder ignores itself.
        let ignore = dir.join(".gitignore");
        if !ignore.exists() {
            let _ = std::fs::write(&ignore, "*\n");
        }
        let path_text = path.display().to_string();
        let made = git.run(
            &["worktree", "add", "--quiet", "-b", &branch, &path_text, &commit],
            None,
        );
        if let Err(e) = made {
            // A failed add leaves its branch (and maybe a half-made folder).
            let _ = git.run(&["worktree", "remove", "--force", &path_text], None);
            let _ = git.run(&["branch", "-D", &branch], None);
            let _ = git.run(&["worktree", "prune"], None);
            return Err(e.into());
        }
        let wt = Worktree {
            agent: agent.to_owned(),
            conversation: None,
            cwd: path.join(&subdir).display().to_string(),
            path: path_text,
            branch,
            base: commit,
            base_name,
            repository: top.display().to_string(),
        };
        let kept = wt.clone();
        self.change_list(move |list| list.push(kept))?;
        Ok(wt)
    }

    /// Where `wt` stands against its base.
    pub async fn status(&self, wt: &Worktree) -> Result<Status, WorktreeError> {
        let wt = wt.clone();
        tokio::task::spawn_blocking(move || status_blocking(&wt))
            .await
            .map_err(|e| WorktreeError::Io(e.to_string()))?
    }

    /// Applies `wt`'s changes (against its base) to the main checkout as
    /// uncommitted changes; refuses with every conflicting file before
    /// writing anything.
    pub async fn apply(&self, wt: &Worktree) -> Result<Applied, WorktreeError> {
        let (wt, this) = (wt.clone(), self.clone());
        let planned: Planned = tokio::task::spawn_blocking(move || apply::plan(&wt))
            .await
            .map_err(|e| WorktreeError::Io(e.to_string()))??;
        let id = format!(
            "a{}",
            this.inner.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let applied = tokio::task::spawn_blocking(move || apply::write(planned, id))
            .await
            .map_err(|e| WorktreeError::Io(e.to_string()))??;
        let mut undo = lock(&self.inner.undo);
        undo.push_back(applied.clone());
        while undo.len() > UNDO_DEPTH {
            undo.pop_front();
        }
        Ok(applied)
    }

    /// Takes an apply back, if every file still holds what it wrote.
    pub async fn undo_apply(&self, id: &str) -> Result<Applied, WorktreeError> {
        let applied = {
            let mut undo = lock(&self.inner.undo);
            let i = undo
                .iter()
                .position(|a| a.id == id)
                .ok_or_else(|| WorktreeError::NoApply(id.to_owned()))?;
            undo.remove(i)
                .ok_or_else(|| WorktreeError::NoApply(id.to_owned()))?
        };
        tokio::task::spawn_blocking(move || apply::undo(applied))
            .await
            .map_err(|e| WorktreeError::Io(e.to_string()))?
    }

    /// Commits what is uncommitted in `wt` (with `message`) and merges its
    /// branch into the branch the main checkout has out.
    pub async fn merge(&self, wt: &Worktree, message: &str) -> Result<String, WorktreeError> {
        let (wt, message) = (wt.clone(), message.to_owned());
        tokio::task::spawn_blocking(move || merge_blocking(&wt, &message))
            .await
            .map_err(|e| WorktreeError::Io(e.to_string()))?
    }

    /// Removes `wt` and its branch.
    pub async fn discard(&self, wt: &Worktree) -> Result<(), WorktreeError> {
        let (w, this) = (wt.clone(), self.clone());
        tokio::task::spawn_blocking(move || {
            let git = RepoGit::new(Path::new(&w.repository));
            let dir = this.dir()?;
            let _held = RepoLock::take(&dir, Path::new(&w.repository))?;
            if Path::new(&w.path).exists() {
                git.run(&["worktree", "remove", "--force", "--force", &w.path], None)?;
            }
            let _ = git.run(&["worktree", "prune"], None);
            let _ = git.run(&["branch", "-D", &w.branch], None);
            let path = w.path.clone();
            this.change_list(move |list| list.retain(|x| x.path != path))
        })
        .await
        .map_err(|e| WorktreeError::Io(e.to_string()))?
    }
}

/// A folder name for a repository: its name and a short hash of its path.
fn slug_of_path(top: &Path) -> String {
    use sha2::Digest;
    let name = top
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let digest = sha2::Sha256::digest(top.as_os_str().as_encoded_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{}-{hash}", slug(&name))
}

fn status_blocking(wt: &Worktree) -> Result<Status, WorktreeError> {
    let git = RepoGit::new(Path::new(&wt.path));
    let tree = apply::worktree_tree(&git)?;
    let out = git.run(
        &[
            "diff-tree",
            "-r",
            "-z",
            "--name-status",
            "--no-renames",
            &wt.base,
            &tree,
        ],
        None,
    )?;
    let mut files = Vec::new();
    let mut fields = out.split(|&b| b == 0).filter(|f| !f.is_empty());
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let status = match status.first() {
            Some(b'A') => "added",
            Some(b'D') => "deleted",
            _ => "modified",
        };
        files.push(ChangedFile {
            path: String::from_utf8_lossy(path).into_owned(),
            status: status.to_owned(),
        });
    }
    let count = |range: &str| -> u32 {
        git.text(&["rev-list", "--count", range])
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let ahead = count(&format!("{}..{}", wt.base, wt.branch));
    let behind = if wt.base_name != wt.base.chars().take(12).collect::<String>() {
        count(&format!("{}..{}", wt.branch, wt.base_name))
    } else {
        0
    };
    Ok(Status {
        path: wt.path.clone(),
        branch: wt.branch.clone(),
        base: wt.base.clone(),
        base_name: wt.base_name.clone(),
        ahead,
        behind,
        files,
    })
}

fn merge_blocking(wt: &Worktree, message: &str) -> Result<String, WorktreeError> {
    let inside = RepoGit::new(Path::new(&wt.path));
    let main = RepoGit::new(Path::new(&wt.repository));
    let branch = main
        .text(&["symbolic-ref", "--short", "-q", "HEAD"])
        .ok()
        .filter(|b| !b.is_empty())
        .ok_or(WorktreeError::Detached)?;
    // What is uncommitted in the worktree goes on its branch first.
    inside.run(&["add", "-A"], None)?;
    let staged = inside.run_code(&["diff", "--cached", "--quiet"], None)?.0 == Some(1);
    if staged {
        let message = message.replace('\0', "");
        let message = if message.trim().is_empty() {
            gettext("Changes made in Parley")
        } else {
            message
        };
        let cmd = inside.committing(&["commit", "--quiet", "--no-verify", "-F", "-"]);
        let (code, _, err) = crate::core::checkpoints::git::run_with_timeout(
            cmd,
            &["commit"],
            Some(message.as_bytes()),
            crate::core::checkpoints::git::TIMEOUT,
        )?;
        if code != Some(0) {
            return Err(WorktreeError::Git(
                String::from_utf8_lossy(&err).trim().to_owned(),
            ));
        }
    }
    let cmd = main.committing(&["merge", "--no-edit", "--no-verify", &wt.branch]);
    let (code, out, err) = crate::core::checkpoints::git::run_with_timeout(
        cmd,
        &["merge"],
        None,
        crate::core::checkpoints::git::TIMEOUT,
    )?;
    if code == Some(0) {
        return main.text(&["rev-parse", "HEAD"]).map_err(Into::into);
    }
    let conflicted = main
        .text(&["diff", "--name-only", "--diff-filter=U"])
        .unwrap_or_default();
    if main
        .run(&["rev-parse", "--verify", "--quiet", "MERGE_HEAD"], None)
        .is_ok()
    {
        let _ = main.run(&["merge", "--abort"], None);
    }
    if !conflicted.is_empty() {
        return Err(WorktreeError::MergeConflict(
            conflicted.lines().map(str::to_owned).collect(),
        ));
    }
    let said = format!(
        "{} {}",
        String::from_utf8_lossy(&out).trim(),
        String::from_utf8_lossy(&err).trim()
    );
    Err(WorktreeError::Git(gettext_f(
        "{branch} was not merged: {error}",
        &[("branch", &branch), ("error", said.trim())],
    )))
}
