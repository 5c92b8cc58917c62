//! A conversation's checkpoints: one JSON file per conversation beside the
//! shadow repositories, naming for each turn the snapshot of each root
//! before and after it, what was left out, and what the review decided.
//! The commits themselves are kept alive by refs in the shadows
//! (`refs/parley/<conversation>/<turn>/{before,after}`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::diff::Review;
use super::shadow::Skipped;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Record {
    pub conversation: String,
    pub agent: String,
    pub turns: Vec<TurnRecord>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TurnRecord {
    /// The id of the user message that started the turn.
    pub turn: String,
    /// When it started, in milliseconds since the epoch.
    pub at_ms: u64,
    pub roots: Vec<RootRecord>,
    /// What the review decided, by [`review_key`].
    pub reviews: BTreeMap<String, Review>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RootRecord {
    pub root: String,
    /// The shadow repository's directory name.
    pub shadow: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub skipped: Vec<Skipped>,
    /// Why a snapshot could not be taken.
    pub error: Option<String>,
    /// What Parley's own reverts left in a file (path below the work
    /// tree → blob id): a file that holds it is not "changed since".
    pub left: BTreeMap<String, String>,
    /// The paths (below the work tree) that changed during the turn but
    /// that nothing ties to it (see `attribution`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unattributed: Vec<String>,
}

/// The key of a file's (`hunk: None`) or a hunk's review.
pub fn review_key(root: &str, path: &str, hunk: Option<usize>) -> String {
    match hunk {
        Some(h) => format!("{root}\u{0}{path}\u{0}{h}"),
        None => format!("{root}\u{0}{path}"),
    }
}

/// A conversation id as a file name: anything but `[A-Za-z0-9_-]` escaped.
pub fn file_name(conversation: &str) -> String {
    let mut out = String::new();
    for c in conversation.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else {
            out.push_str(&format!("%{:x}", c as u32));
        }
    }
    format!("{out}.json")
}

pub fn path(store: &Path, conversation: &str) -> PathBuf {
    store.join("conversations").join(file_name(conversation))
}

pub fn load(store: &Path, conversation: &str) -> Option<Record> {
    let bytes = std::fs::read(path(store, conversation)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn save(store: &Path, record: &Record) -> std::io::Result<()> {
    let p = path(store, &record.conversation);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let bytes = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
    crate::core::atomic::write(&p, &bytes)
}

pub fn remove(store: &Path, conversation: &str) {
    let _ = std::fs::remove_file(path(store, conversation));
}

/// Every conversation that has checkpoints.
pub fn all(store: &Path) -> Vec<Record> {
    let Ok(dir) = std::fs::read_dir(store.join("conversations")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect()
}

/// Whether nothing ties `file` to its turn: a rename is the turn's only
/// when both its paths are (git may pair the user's deletion with the
/// agent's new file).
pub fn unattributed(list: &[String], file: &super::diff::FileChange) -> bool {
    list.contains(&file.git_path) || file.git_old_path.as_ref().is_some_and(|o| list.contains(o))
}
