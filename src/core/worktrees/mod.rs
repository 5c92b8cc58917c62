//! Worktrees: a conversation in a git worktree of its own, so that agents
//! side by side work apart (issue 62). A service of its own beside the
//! checkpoints: it owns the list of the conversations' worktrees, makes
//! and removes them with the system `git` (nothing of the repository's
//! run: no hooks, no fsmonitor), and answers Apply, Merge and Discard.
//!
//! - `git`: the `git` program in the user's repository, hardened;
//! - `apply`: a worktree's changes brought to the main checkout, each
//!   file decided (three-way where needed) before anything is written;
//! - `model`: a worktree, its status, its errors (a leaf);
//! - `service`: [`WorktreeService`], the list, create, status, merge,
//!   discard.

pub mod apply;
pub mod git;
mod model;
mod service;

pub use apply::Applied;
pub use model::{ChangedFile, Status, Worktree, WorktreeError};
pub use service::{default_dir, slug, WorktreeService};

#[cfg(test)]
mod tests;
