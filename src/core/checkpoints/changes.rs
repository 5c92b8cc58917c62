//! The Changes of a conversation: each turn's files and hunks between its
//! two snapshots, the review applied, and the files of all turns in total.
//! A leaf beneath the service: it reads records and shadows, nothing more.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use super::diff::{self, FileChange, FileStatus, Review};
use super::shadow::Shadow;
use super::store::{review_key, Record};

/// `ChatService.Changes`: a conversation's turns and what each changed.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    pub conversation: String,
    pub turns: Vec<TurnChanges>,
    /// Every file some turn changed, from before the first to after the last.
    pub total: Vec<FileTotal>,
    pub files_changed: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TurnChanges {
    pub turn: String,
    pub at_ms: u64,
    /// The turn still runs (no "after" snapshot yet).
    pub pending: bool,
    pub files: Vec<FileChange>,
    /// What was not recorded, and why, in words.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FileTotal {
    pub path: String,
    pub root: String,
    pub status: FileStatus,
    pub additions: u32,
    pub deletions: u32,
}

pub(super) fn count_files(changes: &Changes) -> usize {
    changes.files_changed
}

/// Reads the changes of a record's turns (all, or one).
pub(super) fn changes_of(store: &Path, record: &Record, only: Option<&str>) -> Changes {
    let mut turns = Vec::new();
    // Per root: the first "before" and the last "after", and what any
    // turn touched, for the total.
    let mut spans: BTreeMap<String, (String, String, std::collections::HashSet<String>)> = BTreeMap::new();
    // Each root's shadow opened once, each pair of snapshots diffed once
    // (a conversation of one turn: its total is that turn's diff).
    let mut shadows: HashMap<String, Option<Shadow>> = HashMap::new();
    let mut diffs: HashMap<(String, String, String), Result<Vec<FileChange>, String>> = HashMap::new();
    let mut diff_of = |root: &str, before: &str, after: &str| -> Result<Vec<FileChange>, String> {
        let key = (root.to_owned(), before.to_owned(), after.to_owned());
        if let Some(d) = diffs.get(&key) {
            return d.clone();
        }
        let shadow = shadows
            .entry(root.to_owned())
            .or_insert_with(|| Shadow::open(store, Path::new(root)).ok());
        let d = match shadow {
            Some(sh) => diff::changes(&sh.git, root, &sh.prefix, before, after).map_err(|e| e.to_string()),
            None => Ok(Vec::new()),
        };
        diffs.insert(key, d.clone());
        d
    };
    for t in &record.turns {
        let mut files = Vec::new();
        let mut problems = Vec::new();
        let mut pending = false;
        for root in &t.roots {
            if let Some(e) = &root.error {
                problems.push(e.clone());
            }
            for s in &root.skipped {
                problems.push(skipped_text(s));
            }
            let (Some(before), Some(after)) = (&root.before, &root.after) else {
                pending |= root.error.is_none();
                continue;
            };
            match diff_of(&root.root, before, after) {
                Ok(mut fs) => {
                    for f in &mut fs {
                        apply_reviews(f, &t.reviews);
                        f.unattributed = super::store::unattributed(&root.unattributed, f);
                    }
                    let span = spans
                        .entry(root.root.clone())
                        .or_insert_with(|| (before.clone(), after.clone(), Default::default()));
                    span.1 = after.clone();
                    // The total counts what the turns made, not what only
                    // changed beside them.
                    for f in fs.iter().filter(|f| !f.unattributed) {
                        span.2.insert(f.git_path.clone());
                        if let Some(o) = &f.git_old_path {
                            span.2.insert(o.clone());
                        }
                    }
                    files.extend(fs);
                }
                Err(e) => problems.push(e),
            }
        }
        if only.is_none_or(|o| o == t.turn) {
            turns.push(TurnChanges {
                turn: t.turn.clone(),
                at_ms: t.at_ms,
                pending,
                files,
                problems,
            });
        }
    }
    let mut total = Vec::new();
    for (root, (before, after, touched)) in spans {
        if let Ok(fs) = diff_of(&root, &before, &after) {
            total.extend(
                fs.into_iter()
                    .filter(|f| touched.contains(&f.git_path))
                    .map(|f| FileTotal {
                        path: f.path,
                        root: f.root,
                        status: f.status,
                        additions: f.additions,
                        deletions: f.deletions,
                    }),
            );
        }
    }
    let files_changed = total.len();
    Changes {
        conversation: record.conversation.clone(),
        turns,
        total,
        files_changed,
    }
}

fn apply_reviews(f: &mut FileChange, reviews: &BTreeMap<String, Review>) {
    if let Some(r) = reviews.get(&review_key(&f.root, &f.path, None)) {
        f.review = *r;
        for h in &mut f.hunks {
            h.review = *r;
        }
    }
    for h in &mut f.hunks {
        if let Some(r) = reviews.get(&review_key(&f.root, &f.path, Some(h.index))) {
            h.review = *r;
        }
    }
    if !f.hunks.is_empty() && f.hunks.iter().all(|h| h.review == Review::Reverted) {
        f.review = Review::Reverted;
    } else if !f.hunks.is_empty()
        && f.review == Review::Pending
        && f.hunks.iter().all(|h| h.review != Review::Pending)
    {
        f.review = Review::Kept;
    }
}

fn skipped_text(s: &super::shadow::Skipped) -> String {
    use super::shadow::SkipReason;
    use crate::i18n::gettext_f;
    let p = [("path", s.path.as_str())];
    match s.why {
        SkipReason::TooLarge => gettext_f("{path} was not recorded: it is larger than 8 MiB", &p),
        SkipReason::NotRegular => gettext_f("{path} was not recorded: it is not a regular file", &p),
        SkipReason::Unreadable => gettext_f("{path} was not recorded: it cannot be read", &p),
        SkipReason::Repository => gettext_f("{path} was not recorded: it is a git repository of its own", &p),
    }
}
