//! The review's writes: a revert (a hunk, a file, a turn), its Undo, and
//! Keep; each decided in full before anything is written.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::diff::{self, Review};
use super::revert::{self, RevertError, Sides, Write};
use super::service::{lock, CheckpointError, CheckpointService, How, Refused, Reverted, Undo, UNDO_DEPTH};
use super::shadow::Shadow;
use super::store::{self, review_key};

impl CheckpointService {
    /// Reverts a hunk, a file (`hunk: None`) or every file of the turn
    /// (`path: None`: those the turn made, and the unattributed ones only
    /// with `how.all`). `how.merge`: revert only the turn's part of files
    /// changed since.
    pub async fn revert(
        &self,
        agent: &str,
        conversation: &str,
        turn: &str,
        path: Option<&str>,
        hunk: Option<usize>,
        how: How,
    ) -> Result<Reverted, CheckpointError> {
        let store = self.inner.store.clone().ok_or(CheckpointError::Off)?;
        let this = self.clone();
        let (agent, conversation, turn) = (agent.to_owned(), conversation.to_owned(), turn.to_owned());
        let path = path.map(str::to_owned);
        let (a, c, t) = (agent.clone(), conversation.clone(), turn.clone());
        let result = tokio::task::spawn_blocking(move || {
            this.revert_blocking(&store, &a, &c, &t, path.as_deref(), hunk, how)
        })
        .await
        .map_err(|e| CheckpointError::Failed(e.to_string()))??;
        let files = self
            .changes(&conversation, None)
            .await
            .map(|c| c.files_changed)
            .unwrap_or(0);
        self.tell(&agent, &conversation, &turn, files);
        Ok(result)
    }

    #[allow(clippy::too_many_arguments)]
    fn revert_blocking(
        &self,
        store: &Path,
        agent: &str,
        conversation: &str,
        turn: &str,
        path: Option<&str>,
        hunk: Option<usize>,
        how: How,
    ) -> Result<Reverted, CheckpointError> {
        let _held = lock(&self.inner.records);
        let mut record = self
            .load_record(store, conversation)
            .ok_or_else(|| CheckpointError::NoTurn(turn.into()))?;
        let t = record
            .turns
            .iter()
            .position(|r| r.turn == turn)
            .ok_or_else(|| CheckpointError::NoTurn(turn.into()))?;
        let turn_rec = record.turns[t].clone();
        let mut writes = Vec::new();
        let mut reviewed = Vec::new();
        let mut left_alone = Vec::new();
        let mut found = false;
        for (ri, root) in turn_rec.roots.iter().enumerate() {
            let (Some(before), Some(after)) = (&root.before, &root.after) else {
                continue;
            };
            let shadow = Shadow::open(store, Path::new(&root.root))
                .map_err(|e| CheckpointError::Failed(e.to_string()))?;
            let files = diff::changes(&shadow.git, &root.root, &shadow.prefix, before, after)
                .map_err(|e| CheckpointError::Failed(e.to_string()))?;
            let sides = Sides::new(&shadow, before, after, &root.left);
            for file in &files {
                if let Some(p) = path {
                    let full = Path::new(&root.root).join(&file.path);
                    if p != file.path && Path::new(p) != full {
                        continue;
                    }
                } else if !how.all && store::unattributed(&root.unattributed, file) {
                    // Changed during the turn by something Parley cannot
                    // tie to it: the user picks it, or it stays.
                    found = true;
                    left_alone.push(file.path.clone());
                    continue;
                }
                found = true;
                if let Some(h) = hunk {
                    if h >= file.hunks.len() {
                        return Err(CheckpointError::NoHunk {
                            path: file.path.clone(),
                            hunk: h,
                        });
                    }
                }
                // Keyed by root and file: a rename's two writes go (or
                // are refused) together.
                let key = (ri, writes.len());
                writes.extend(
                    revert::plan_file(&sides, file, hunk, how.merge)?
                        .into_iter()
                        .map(|w| (key, w)),
                );
                reviewed.push(review_key(&root.root, &file.path, hunk));
            }
        }
        if !found {
            return Err(match path {
                Some(p) => CheckpointError::NoFile(p.to_owned()),
                None => CheckpointError::NoTurn(turn.to_owned()),
            });
        }
        let refused = revert::refuse_blocked(&mut writes);
        reviewed.retain(|key| {
            !refused.iter().any(|(p, _)| {
                turn_rec.roots.iter().any(|r| {
                    let base = review_key(&r.root, p, None);
                    *key == base || key.starts_with(&format!("{base}\u{0}"))
                })
            })
        });
        let plain: Vec<Write> = writes.iter().map(|(_, w)| w.clone()).collect();
        revert::apply(&plain)?;
        // What this revert changes in the record, as it was (its Undo puts
        // back only these).
        let mut old_reviews = Vec::new();
        let mut old_left = Vec::new();
        let rec = &mut record.turns[t];
        for key in reviewed {
            let was = rec.reviews.insert(key.clone(), Review::Reverted);
            old_reviews.push((key, was));
        }
        // What the revert left in each file, hashed through one process
        // per root.
        for (ri, root) in rec.roots.iter_mut().enumerate() {
            let mine: Vec<&Write> = writes
                .iter()
                .filter(|((r, _), _)| *r == ri)
                .map(|(_, w)| w)
                .collect();
            if mine.is_empty() {
                continue;
            }
            for w in &mine {
                old_left.push((ri, w.git_path.clone(), root.left.get(&w.git_path).cloned()));
                root.left.remove(&w.git_path);
            }
            let written: Vec<&&Write> = mine.iter().filter(|w| w.content.is_some()).collect();
            let files: Vec<(std::path::PathBuf, &[u8])> = written
                .iter()
                .filter_map(|w| Some((w.full.clone(), w.content.as_deref()?)))
                .collect();
            let ids = Shadow::open(store, Path::new(&root.root))
                .ok()
                .and_then(|s| s.git.hash_files(&files).ok())
                .unwrap_or_default();
            for (w, id) in written.iter().zip(ids) {
                root.left.insert(w.git_path.clone(), id);
            }
        }
        self.save_record(store, record);
        let id = format!("r{}", self.inner.next.fetch_add(1, Ordering::Relaxed));
        let merged = plain.iter().any(|w| w.merged);
        let files = plain.iter().map(|w| w.shown.clone()).collect();
        let mut undo = lock(&self.inner.undo);
        undo.push_back(Undo {
            id: id.clone(),
            agent: agent.to_owned(),
            conversation: conversation.to_owned(),
            turn: turn.to_owned(),
            writes: plain,
            reviews: old_reviews,
            left: old_left,
        });
        while undo.len() > UNDO_DEPTH {
            undo.pop_front();
        }
        Ok(Reverted {
            id,
            files,
            merged,
            left_alone,
            refused: refused
                .into_iter()
                .map(|(path, reason)| Refused { path, reason })
                .collect(),
        })
    }

    /// Puts back what a revert changed, if the files still hold what it
    /// wrote.
    pub async fn undo_revert(&self, id: &str) -> Result<Reverted, CheckpointError> {
        let store = self.inner.store.clone().ok_or(CheckpointError::Off)?;
        let undo = {
            let mut list = lock(&self.inner.undo);
            let i = list
                .iter()
                .position(|u| u.id == id)
                .ok_or_else(|| CheckpointError::NoRevert(id.to_owned()))?;
            list.remove(i)
                .ok_or_else(|| CheckpointError::NoRevert(id.to_owned()))?
        };
        let this = self.clone();
        let (agent, conversation, turn) = (undo.agent.clone(), undo.conversation.clone(), undo.turn.clone());
        let id = id.to_owned();
        tokio::task::spawn_blocking(move || {
            let _held = lock(&this.inner.records);
            for w in &undo.writes {
                // Bounded, never through a link, never waiting on a FIFO.
                let now = super::git::read_bounded(&w.full, super::shadow::MAX_FILE_BYTES);
                if now != w.content {
                    return Err(CheckpointError::Revert(RevertError::ChangedSince(
                        w.shown.clone(),
                    )));
                }
            }
            let back: Vec<Write> = undo.writes.iter().map(Write::reversed).collect();
            revert::apply(&back)?;
            if let Some(mut record) = this.load_record(&store, &undo.conversation) {
                if let Some(t) = record.turns.iter_mut().find(|t| t.turn == undo.turn) {
                    for (key, was) in &undo.reviews {
                        match was {
                            Some(r) => t.reviews.insert(key.clone(), *r),
                            None => t.reviews.remove(key),
                        };
                    }
                    for (ri, path, was) in &undo.left {
                        let Some(root) = t.roots.get_mut(*ri) else {
                            continue;
                        };
                        match was {
                            Some(id) => root.left.insert(path.clone(), id.clone()),
                            None => root.left.remove(path),
                        };
                    }
                }
                this.save_record(&store, record);
            }
            Ok(Reverted {
                id,
                files: back.iter().map(|w| w.shown.clone()).collect(),
                ..Default::default()
            })
        })
        .await
        .map_err(|e| CheckpointError::Failed(e.to_string()))?
        .inspect(|_| {
            let this = self.clone();
            tokio::spawn(async move {
                let files = this
                    .changes(&conversation, None)
                    .await
                    .map(|c| c.files_changed)
                    .unwrap_or(0);
                this.tell(&agent, &conversation, &turn, files);
            });
        })
    }

    /// Marks a hunk (or a file) as kept.
    pub async fn keep(
        &self,
        agent: &str,
        conversation: &str,
        turn: &str,
        path: &str,
        hunk: Option<usize>,
    ) -> Result<(), CheckpointError> {
        let store = self.inner.store.clone().ok_or(CheckpointError::Off)?;
        let changes = self.changes(conversation, Some(turn)).await?;
        let file = changes
            .turns
            .iter()
            .flat_map(|t| &t.files)
            .find(|f| f.path == path || Path::new(&f.root).join(&f.path) == Path::new(path))
            .ok_or_else(|| CheckpointError::NoFile(path.to_owned()))?;
        let key = review_key(&file.root, &file.path, hunk);
        {
            let _held = lock(&self.inner.records);
            let mut record = self
                .load_record(&store, conversation)
                .ok_or_else(|| CheckpointError::NoTurn(turn.into()))?;
            if let Some(t) = record.turns.iter_mut().find(|t| t.turn == turn) {
                t.reviews.insert(key, Review::Kept);
            }
            store::save(&store, &record).map_err(|e| CheckpointError::Failed(e.to_string()))?;
            lock(&self.inner.unsaved).remove(conversation);
        }
        self.tell(agent, conversation, turn, changes.files_changed);
        Ok(())
    }
}
