//! What checkpoints give up: a deleted conversation's, and by the
//! settings, the oldest turns' (by age, then by size), and the objects no
//! ref keeps any more.

use std::path::Path;
use std::time::Duration;

use super::service::{lock, now_ms, ref_part, CheckpointService};
use super::shadow::Shadow;
use super::store::{self, Record};

impl CheckpointService {
    /// Drops a conversation's checkpoints (its record, and the refs that
    /// kept its snapshots).
    pub async fn forget(&self, conversation: &str) {
        let Some(store) = self.inner.store.clone() else {
            return;
        };
        let conversation = conversation.to_owned();
        let this = self.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let _held = lock(&this.inner.records);
            if let Some(record) = this.load_record(&store, &conversation) {
                lock(&this.inner.unsaved).remove(&conversation);
                this.drop_turns(
                    &store,
                    &record,
                    &record.turns.iter().map(|t| t.turn.clone()).collect::<Vec<_>>(),
                );
            }
            store::remove(&store, &conversation);
        })
        .await;
    }

    /// Removes the refs of `turns` from the shadows they are in.
    fn drop_turns(&self, store: &Path, record: &Record, turns: &[String]) {
        for t in record.turns.iter().filter(|t| turns.contains(&t.turn)) {
            for root in &t.roots {
                let Ok(shadow) = Shadow::open(store, Path::new(&root.root)) else {
                    continue;
                };
                let prefix = format!("{}/{}/", ref_part(&record.conversation), ref_part(&t.turn));
                let _ = shadow.drop_refs(&prefix);
            }
        }
    }

    /// Prunes by the settings at most every ten minutes, in the background.
    pub(super) fn prune_now_and_then(&self) {
        {
            let mut last = lock(&self.inner.last_prune);
            if last.is_some_and(|l| l.elapsed() < Duration::from_secs(600)) {
                return;
            }
            *last = Some(std::time::Instant::now());
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.prune());
    }

    /// Drops turns older than `keep_for`, then the oldest while the store
    /// is larger than `max_bytes`, and what no ref keeps any more.
    pub fn prune(&self) {
        let Some(store) = self.inner.store.clone() else {
            return;
        };
        let settings = lock(&self.inner.settings).clone();
        let cutoff = settings
            .keep_for
            .map(|k| now_ms().saturating_sub(k.as_millis() as u64));
        let mut size = dir_size(&store);
        for _round in 0..8 {
            let over = size > settings.max_bytes;
            let dropped_any = {
                let _held = lock(&self.inner.records);
                let mut records = store::all(&store);
                let mut all: Vec<u64> = records
                    .iter()
                    .flat_map(|r| r.turns.iter().map(|t| t.at_ms))
                    .collect();
                all.sort_unstable();
                // Over the size: the oldest quarter of what is left goes.
                let size_cut = if over {
                    all.get(all.len() / 4).copied()
                } else {
                    None
                };
                let Some(limit) = cutoff.into_iter().chain(size_cut).max() else {
                    break;
                };
                let mut dropped_any = false;
                for record in &mut records {
                    let old: Vec<String> = record
                        .turns
                        .iter()
                        .filter(|t| t.at_ms < limit || (over && Some(t.at_ms) == size_cut))
                        .map(|t| t.turn.clone())
                        .collect();
                    if old.is_empty() {
                        continue;
                    }
                    dropped_any = true;
                    self.drop_turns(&store, record, &old);
                    record.turns.retain(|t| !old.contains(&t.turn));
                    if record.turns.is_empty() {
                        store::remove(&store, &record.conversation);
                    } else {
                        let _ = store::save(&store, record);
                    }
                }
                dropped_any
            };
            // Under pressure what no ref keeps goes at once; else what an
            // hour has not claimed (a revert's copy for its Undo).
            let expire = if over {
                "--expire=now"
            } else {
                "--expire=1.hour.ago"
            };
            for shadow in shadows(&store) {
                let guard = lock(&self.inner.shadows)
                    .entry(shadow.clone())
                    .or_default()
                    .clone();
                let _held = lock(&guard);
                let git = super::git::Git {
                    dir: store.join(&shadow),
                    work: store.to_owned(),
                };
                let _ = git.run(&["prune", expire], None);
            }
            let now = dir_size(&store);
            // Nothing more to drop, or dropping frees nothing: stop.
            if !over || !dropped_any || now >= size {
                break;
            }
            size = now;
        }
    }
}

fn shadows(store: &Path) -> Vec<String> {
    std::fs::read_dir(store)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().join("HEAD").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn dir_size(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.blocks() * 512,
                Err(_) => {}
            }
        }
    }
    total
}
