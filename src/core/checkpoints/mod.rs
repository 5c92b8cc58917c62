//! Checkpoints: before each turn of every agent, Parley records the agent's
//! working directory (and each additional directory) in a shadow git
//! repository of its own, and again when the turn ends; what the turn
//! changed is the difference, whichever way the agent wrote it. The review
//! (keep, revert a hunk, a file, undo a turn, undo a revert) works from
//! those snapshots.
//!
//! - `attribution`: what ties a changed file to the turn;
//! - `git`: running the `git` program on a shadow repository;
//! - `shadow`: a root's repository, its snapshots and refs;
//! - `diff`: files and hunks between two snapshots;
//! - `revert`: planning and writing a revert, three-way where needed;
//! - `store`: a conversation's turns and review, as a JSON file;
//! - `service`: [`CheckpointService`], its state and a turn's snapshots;
//!   `changes`, `review`, `prune` and `records`: its other parts (the
//!   Changes; reverts, Undo and Keep; what is given up; records as kept).
//!
//! All git work runs on tokio's blocking pool, never on the main loop.

pub mod attribution;
mod changes;
pub mod diff;
pub mod git;
mod prune;
mod records;
pub mod revert;
mod review;
mod service;
pub mod shadow;
pub mod store;

pub use changes::{Changes, FileTotal, TurnChanges};
pub use diff::{FileChange, FileStatus, Hunk, Review};
pub use service::{
    default_store, CheckpointError, CheckpointService, How, Refused, Reverted, Settings, TurnStart,
};

#[cfg(test)]
mod tests;
