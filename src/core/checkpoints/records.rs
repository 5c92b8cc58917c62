//! A conversation's record as kept (one that a full disk kept from being
//! written stays in memory, with why), which changed files nothing ties
//! to the turn, and a failed snapshot said in words. Parts of
//! [`CheckpointService`] (`service` has its state).

use std::path::{Path, PathBuf};

use super::attribution::Attribution;
use super::service::{lock, CheckpointService};
use super::shadow::Shadow;
use super::store::{self, Record, RootRecord};

impl CheckpointService {
    /// A conversation's record: the one that could not be written, if
    /// any, else the file's.
    pub(super) fn load_record(&self, store: &Path, conversation: &str) -> Option<Record> {
        if let Some(r) = lock(&self.inner.unsaved).get(conversation) {
            return Some(r.clone());
        }
        store::load(store, conversation)
    }

    /// Writes a record; one that cannot be written (a full disk) is kept
    /// in memory with the reason on its last turn, so Changes says why
    /// rather than listing nothing. Answers the record as kept.
    pub(super) fn save_record(&self, store: &Path, mut record: Record) -> Record {
        match store::save(store, &record) {
            Ok(()) => {
                lock(&self.inner.unsaved).remove(&record.conversation);
            }
            Err(e) => {
                tracing::warn!("checkpoints: could not write {}: {e}", record.conversation);
                let why = crate::i18n::gettext_f(
                    "the checkpoints could not be written: {error}",
                    &[("error", &e.to_string())],
                );
                if let Some(root) = record.turns.last_mut().and_then(|t| t.roots.first_mut()) {
                    if root.error.is_none() {
                        root.error = Some(why);
                    }
                }
                lock(&self.inner.unsaved).insert(record.conversation.clone(), record.clone());
            }
        }
        record
    }

    /// The paths of `rec`'s root that changed between its snapshots and that
    /// nothing ties to the turn.
    pub(super) fn unattributed(
        store: &Path,
        rec: &RootRecord,
        before: &str,
        after: &str,
        dirs: &[PathBuf],
        attribution: &Attribution,
        ended_ms: u64,
    ) -> Vec<String> {
        let Ok(shadow) = Shadow::open(store, Path::new(&rec.root)) else {
            return Vec::new();
        };
        let mut args = vec![
            "diff-tree",
            "-r",
            "-z",
            "--name-only",
            "--no-renames",
            before,
            after,
        ];
        if !shadow.prefix.is_empty() {
            args.extend(["--", shadow.prefix.as_str()]);
        }
        let Ok(out) = shadow.git.run(&args, None) else {
            return Vec::new();
        };
        let changed: Vec<Vec<u8>> = out
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        // Compared with the work tree's canonical paths.
        let dirs: Vec<PathBuf> = dirs
            .iter()
            .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
            .collect();
        attribution
            .unattributed(&shadow.git.work, &dirs, &changed, ended_ms)
            .into_iter()
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .collect()
    }

    /// Why a snapshot failed, in words: a full disk is said first (git's own
    /// words for it vary: "No space left on device", "Out of diskspace").
    pub(super) fn said(error: String) -> String {
        let full = [
            "No space left",
            "Out of diskspace",
            "ENOSPC",
            "Disk quota exceeded",
        ];
        if full.iter().any(|f| error.contains(f)) {
            crate::i18n::gettext_f(
                "The disk is too full for checkpoints, so this turn has none ({error})",
                &[("error", &error)],
            )
        } else {
            error
        }
    }
}
