//! What the worktrees' service and its parts share: a conversation's
//! worktree, where it stands, and what can go wrong. A leaf: it imports
//! none of them.

use serde::{Deserialize, Serialize};

use crate::core::checkpoints::git::GitError;
use crate::i18n::{gettext, gettext_f};

/// A conversation's worktree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Worktree {
    pub agent: String,
    /// The conversation it belongs to, once it has one in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// Where it is.
    pub path: String,
    /// The agent's directory in it (the same sub-folder of the repository
    /// as its configured `cwd`).
    pub cwd: String,
    pub branch: String,
    /// The commit it was made from, and what the user knew it as (a
    /// branch name, or the commit).
    pub base: String,
    pub base_name: String,
    /// The main checkout (the repository's top).
    pub repository: String,
}

/// `ChatService.Worktree`: where a worktree stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub path: String,
    pub branch: String,
    pub base: String,
    pub base_name: String,
    /// Commits on its branch that its base has not, and the reverse (the
    /// base's branch moved on).
    pub ahead: u32,
    pub behind: u32,
    /// Every file that differs from the base: committed, staged, unstaged
    /// and untracked (not ignored).
    pub files: Vec<ChangedFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangedFile {
    pub path: String,
    /// `added`, `modified` or `deleted`.
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeError {
    NotInRepository(String),
    Bare(String),
    NoCommit(String),
    BadBase(String),
    BranchBlocked(String),
    /// Apply refused: each file, and why.
    Conflicts(Vec<(String, String)>),
    /// Merge stopped on a conflict (aborted): the files.
    MergeConflict(Vec<String>),
    Detached,
    NoWorktree(String),
    NoApply(String),
    Git(String),
    Io(String),
}

impl std::fmt::Display for WorktreeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            WorktreeError::NotInRepository(d) => gettext_f("{dir} is not in a git repository", &[("dir", d)]),
            WorktreeError::Bare(d) => gettext_f(
                "{dir} is a bare repository: it has no checkout to bring changes back to",
                &[("dir", d)],
            ),
            WorktreeError::NoCommit(d) => gettext_f(
                "the repository at {dir} has no commit yet to start a worktree from",
                &[("dir", d)],
            ),
            WorktreeError::BadBase(b) => gettext_f("there is no branch or commit {base}", &[("base", b)]),
            WorktreeError::BranchBlocked(why) => why.clone(),
            WorktreeError::Conflicts(files) => gettext_f(
                "nothing was applied: {files}",
                &[(
                    "files",
                    &files
                        .iter()
                        .map(|(p, why)| format!("{p} ({why})"))
                        .collect::<Vec<_>>()
                        .join("; "),
                )],
            ),
            WorktreeError::MergeConflict(files) => gettext_f(
                "the merge stopped on a conflict and was undone: {files}",
                &[("files", &files.join(", "))],
            ),
            WorktreeError::Detached => gettext(
                "the main checkout has no branch out (a detached HEAD): there is nothing to merge into",
            ),
            WorktreeError::NoWorktree(a) => {
                gettext_f("{agent}'s conversation has no worktree", &[("agent", a)])
            }
            WorktreeError::NoApply(id) => gettext_f("no apply {id} to undo", &[("id", id)]),
            WorktreeError::Git(why) | WorktreeError::Io(why) => why.clone(),
        };
        f.write_str(&text)
    }
}

impl std::error::Error for WorktreeError {}

impl From<GitError> for WorktreeError {
    fn from(e: GitError) -> Self {
        WorktreeError::Git(e.to_string())
    }
}
