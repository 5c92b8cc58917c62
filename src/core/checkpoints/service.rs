//! [`CheckpointService`]: a turn's snapshots (begun before the prompt goes
//! out, finished when the turn ends), the Changes of a conversation, and
//! the review's reverts, with Undo.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use super::diff::{self, FileChange, FileStatus, Review};
use super::revert::{self, RevertError, Sides, Write};
use super::shadow::{shadow_name, Shadow};
use super::store::{self, review_key, Record, RootRecord, TurnRecord};
use crate::core::events::{self, ChangesUpdated, Event, EventSender};

/// How long a file write of the agent's waits for the turn's first
/// snapshot at most.
const GATE_LIMIT: Duration = Duration::from_secs(120);

/// Reverts remembered for their Undo.
const UNDO_DEPTH: usize = 32;

/// Where checkpoints are kept: beside the history file, in `checkpoints/`.
pub fn default_store(history: &Path) -> PathBuf {
    history
        .parent()
        .map_or_else(|| PathBuf::from("checkpoints"), |d| d.join("checkpoints"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The configuration's `checkpoints`.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub enabled: bool,
    /// Turns older than this go (`None`: kept).
    pub keep_for: Option<Duration>,
    /// Past this many bytes in all, the oldest turns go.
    pub max_bytes: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            keep_for: Some(Duration::from_secs(30 * 24 * 3600)),
            max_bytes: 2 << 30,
        }
    }
}

impl Settings {
    /// From the configuration's `checkpoints`.
    pub fn from_config(c: &crate::core::config::model::CheckpointSettings) -> Self {
        use crate::core::config::model::parse_duration;
        Settings {
            enabled: c.enabled,
            keep_for: parse_duration(&c.keep_for).filter(|d| !d.is_zero()),
            max_bytes: c.max_size_mib.saturating_mul(1 << 20),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointError {
    Off,
    NoTurn(String),
    NoFile(String),
    NoHunk { path: String, hunk: usize },
    NoRevert(String),
    Revert(RevertError),
    Failed(String),
}

impl std::fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::i18n::{gettext, gettext_f};
        let text = match self {
            CheckpointError::Off => gettext("checkpoints are off"),
            CheckpointError::NoTurn(t) if t.is_empty() => gettext("there is no checkpoint of a turn to undo"),
            CheckpointError::NoTurn(t) => gettext_f("no checkpoint of turn {turn}", &[("turn", t)]),
            CheckpointError::NoFile(p) => gettext_f("the turn changed no file {path}", &[("path", p)]),
            CheckpointError::NoHunk { path, hunk } => gettext_f(
                "{path} has no hunk {hunk}",
                &[("path", path), ("hunk", &hunk.to_string())],
            ),
            CheckpointError::NoRevert(id) => gettext_f("no revert {id} to undo", &[("id", id)]),
            CheckpointError::Revert(e) => e.to_string(),
            CheckpointError::Failed(why) => why.clone(),
        };
        f.write_str(&text)
    }
}

impl std::error::Error for CheckpointError {}

impl From<RevertError> for CheckpointError {
    fn from(e: RevertError) -> Self {
        CheckpointError::Revert(e)
    }
}

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

/// What a revert did: its id (for `UndoRevert`) and the files written.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Reverted {
    pub id: String,
    pub files: Vec<String>,
    /// Some file was merged with changes made since the turn.
    pub merged: bool,
}

struct Undo {
    id: String,
    agent: String,
    conversation: String,
    turn: String,
    writes: Vec<Write>,
    /// The review keys the revert set, with what they were before.
    reviews: Vec<(String, Option<Review>)>,
    /// What reverts had left (root index, path), before this one.
    left: Vec<(usize, String, Option<String>)>,
}

/// A turn whose first snapshot is under way; [`CheckpointService::end`]
/// takes the second.
pub struct TurnStart {
    agent: String,
    conversation: String,
    turn: String,
    at_ms: u64,
    done: watch::Receiver<bool>,
    roots: Arc<Mutex<Vec<RootRecord>>>,
}

#[derive(Clone)]
pub struct CheckpointService {
    inner: Arc<Inner>,
}

struct Inner {
    store: Option<PathBuf>,
    events: EventSender,
    settings: Mutex<Settings>,
    /// One snapshot at a time per shadow repository.
    shadows: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Each agent's turn whose first snapshot is under way.
    befores: Mutex<HashMap<String, watch::Receiver<bool>>>,
    /// Each agent's last ended turn: `true` once its "after" is taken.
    finishing: Mutex<HashMap<String, watch::Receiver<bool>>>,
    /// Conversation records are read, changed and written one at a time.
    records: Mutex<()>,
    undo: Mutex<VecDeque<Undo>>,
    next: AtomicU64,
    last_prune: Mutex<Option<std::time::Instant>>,
    /// Turns whose second snapshot is still under way.
    ending: watch::Sender<usize>,
}

/// Says a turn's "after" is taken when dropped.
struct Finished(watch::Sender<bool>);

impl Drop for Finished {
    fn drop(&mut self) {
        let _ = self.0.send(true);
    }
}

/// Counts a turn's ending while it lives.
struct Ending(watch::Sender<usize>);

impl Drop for Ending {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A ref name component from an id Parley made (escaped as a file name is).
fn ref_part(id: &str) -> String {
    store::file_name(id).trim_end_matches(".json").to_owned()
}

impl CheckpointService {
    /// `store`: where shadows and records live (`None`: checkpoints off).
    pub fn new(events: EventSender, store: Option<PathBuf>) -> Self {
        CheckpointService {
            inner: Arc::new(Inner {
                store,
                events,
                settings: Mutex::new(Settings::default()),
                shadows: Mutex::new(HashMap::new()),
                befores: Mutex::new(HashMap::new()),
                finishing: Mutex::new(HashMap::new()),
                records: Mutex::new(()),
                undo: Mutex::new(VecDeque::new()),
                next: AtomicU64::new(1),
                last_prune: Mutex::new(None),
                ending: watch::channel(0).0,
            }),
        }
    }

    pub fn set_settings(&self, settings: Settings) {
        *lock(&self.inner.settings) = settings;
    }

    pub fn store(&self) -> Option<PathBuf> {
        self.inner.store.clone()
    }

    fn enabled_store(&self) -> Option<PathBuf> {
        if !lock(&self.inner.settings).enabled || !super::git::available_cached() {
            return None;
        }
        self.inner.store.clone()
    }

    fn shadow_lock(&self, root: &Path) -> Arc<Mutex<()>> {
        lock(&self.inner.shadows)
            .entry(shadow_name(root))
            .or_default()
            .clone()
    }

    /// Starts the snapshot before a turn, on the blocking pool, and
    /// answers at once. `None` when checkpoints are off.
    pub fn begin(
        &self,
        agent: &str,
        conversation: &str,
        turn: &str,
        roots: Vec<PathBuf>,
    ) -> Option<TurnStart> {
        let store = self.enabled_store()?;
        let (tx, done) = watch::channel(false);
        lock(&self.inner.befores).insert(agent.to_owned(), done.clone());
        let records = Arc::new(Mutex::new(Vec::new()));
        let start = TurnStart {
            agent: agent.to_owned(),
            conversation: conversation.to_owned(),
            turn: turn.to_owned(),
            at_ms: now_ms(),
            done,
            roots: records.clone(),
        };
        let this = self.clone();
        let name = format!("{}/{}/before", ref_part(conversation), ref_part(turn));
        // The agent's previous turn takes its "after" first: else this
        // turn's early writes could land in it.
        let previous = lock(&self.inner.finishing).get(agent).cloned();
        tokio::spawn(async move {
            if let Some(mut previous) = previous {
                let _ = previous.wait_for(|done| *done).await;
            }
            let _ =
                tokio::task::spawn_blocking(move || this.before_roots(&store, roots, &name, &records, tx))
                    .await;
        });
        Some(start)
    }

    fn before_roots(
        &self,
        store: &Path,
        roots: Vec<PathBuf>,
        name: &str,
        records: &Mutex<Vec<RootRecord>>,
        tx: watch::Sender<bool>,
    ) {
        {
            for root in roots {
                let mut rec = RootRecord {
                    root: root.display().to_string(),
                    shadow: shadow_name(&root),
                    ..Default::default()
                };
                match self.snap(store, &root, name) {
                    Ok((commit, skipped, shadow)) => {
                        rec.before = Some(commit);
                        rec.skipped = skipped;
                        rec.shadow = shadow;
                    }
                    Err(e) => rec.error = Some(e),
                }
                lock(records).push(rec);
            }
            let _ = tx.send(true);
        }
    }

    /// One root's snapshot, kept under `refs/parley/{name}`.
    fn snap(
        &self,
        store: &Path,
        root: &Path,
        name: &str,
    ) -> Result<(String, Vec<super::shadow::Skipped>, String), String> {
        let shadow = Shadow::open(store, root).map_err(|e| e.to_string())?;
        let dir_name = shadow_name(&shadow.root);
        let guard = self.shadow_lock(&shadow.root);
        let _held = lock(&guard);
        let snap = shadow.snapshot().map_err(|e| e.to_string())?;
        shadow.keep(name, &snap.commit).map_err(|e| e.to_string())?;
        Ok((snap.commit, snap.skipped, dir_name))
    }

    /// Waits (a bounded time) until the agent's turn has its first
    /// snapshot: a file the agent writes through Parley is then recorded
    /// as the turn's change, never as its starting point.
    pub async fn before_recorded(&self, agent: &str) {
        let rx = lock(&self.inner.befores).get(agent).cloned();
        if let Some(mut rx) = rx {
            let _ = tokio::time::timeout(GATE_LIMIT, rx.wait_for(|d| *d)).await;
        }
    }

    /// Takes the snapshot after a turn (when the one before it is done),
    /// writes the turn's record and tells `changes:updated`.
    pub fn end(&self, start: TurnStart) {
        let this = self.clone();
        self.inner.ending.send_modify(|n| *n += 1);
        let ending = Ending(self.inner.ending.clone());
        let (finished, finishing) = watch::channel(false);
        lock(&self.inner.finishing).insert(start.agent.clone(), finishing);
        tokio::spawn(async move {
            let _ending = ending;
            // Told when this task ends, however it ends.
            let _finished = Finished(finished);
            let mut done = start.done.clone();
            let _ = done.wait_for(|d| *d).await;
            {
                let mut befores = lock(&this.inner.befores);
                if befores
                    .get(&start.agent)
                    .is_some_and(|rx| rx.same_channel(&start.done))
                {
                    befores.remove(&start.agent);
                }
            }
            let Some(store) = this.inner.store.clone() else {
                return;
            };
            let worker = this.clone();
            let (agent, conversation, turn) = (
                start.agent.clone(),
                start.conversation.clone(),
                start.turn.clone(),
            );
            let count = tokio::task::spawn_blocking(move || worker.finish(&store, start)).await;
            if let Ok(files) = count {
                this.tell(&agent, &conversation, &turn, files);
            }
            this.prune_now_and_then();
        });
    }

    /// Waits (at most `limit`) until every ended turn has its record:
    /// quitting must not lose the last turn's checkpoint.
    pub async fn settle(&self, limit: Duration) {
        let mut rx = self.inner.ending.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|n| *n == 0)).await;
    }

    fn finish(&self, store: &Path, start: TurnStart) -> usize {
        let name = format!(
            "{}/{}/after",
            ref_part(&start.conversation),
            ref_part(&start.turn)
        );
        let mut roots = lock(&start.roots).clone();
        for rec in &mut roots {
            if rec.before.is_none() {
                continue;
            }
            match self.snap(store, Path::new(&rec.root), &name) {
                Ok((commit, skipped, _)) => {
                    rec.after = Some(commit);
                    for s in skipped {
                        if !rec.skipped.contains(&s) {
                            rec.skipped.push(s);
                        }
                    }
                }
                Err(e) => rec.error = Some(e),
            }
        }
        let unchanged = roots
            .iter()
            .all(|r| r.error.is_none() && r.skipped.is_empty() && r.before == r.after);
        let _held = lock(&self.inner.records);
        let existing = store::load(store, &start.conversation);
        if unchanged {
            // A turn that changed nothing is not listed.
            return existing.map_or(0, |r| count_files(&changes_of(store, &r, None)));
        }
        let mut record = existing.unwrap_or_else(|| Record {
            conversation: start.conversation.clone(),
            agent: start.agent.clone(),
            turns: Vec::new(),
        });
        record.turns.retain(|t| t.turn != start.turn);
        record.turns.push(TurnRecord {
            turn: start.turn.clone(),
            at_ms: start.at_ms,
            roots,
            reviews: BTreeMap::new(),
        });
        if let Err(e) = store::save(store, &record) {
            tracing::warn!("checkpoints: could not write {}: {e}", start.conversation);
        }
        count_files(&changes_of(store, &record, None))
    }

    fn tell(&self, agent: &str, conversation: &str, turn: &str, files: usize) {
        events::emit(
            &self.inner.events,
            Event::ChangesUpdated(ChangesUpdated {
                agent: agent.to_owned(),
                conversation: conversation.to_owned(),
                turn: turn.to_owned(),
                files_changed: files,
            }),
        );
    }

    /// The conversation's changes (one turn's, with `turn`).
    pub async fn changes(&self, conversation: &str, turn: Option<&str>) -> Result<Changes, CheckpointError> {
        let store = self.inner.store.clone().ok_or(CheckpointError::Off)?;
        let (conversation, turn) = (conversation.to_owned(), turn.map(str::to_owned));
        tokio::task::spawn_blocking(move || {
            let record = store::load(&store, &conversation).unwrap_or(Record {
                conversation: conversation.clone(),
                ..Default::default()
            });
            if let Some(t) = &turn {
                if !record.turns.iter().any(|r| &r.turn == t) {
                    return Err(CheckpointError::NoTurn(t.clone()));
                }
            }
            Ok(changes_of(&store, &record, turn.as_deref()))
        })
        .await
        .map_err(|e| CheckpointError::Failed(e.to_string()))?
    }

    /// Reverts a hunk, a file (`hunk: None`) or every file of the turn
    /// (`path: None`). `merge`: revert only the turn's part of files
    /// changed since.
    pub async fn revert(
        &self,
        agent: &str,
        conversation: &str,
        turn: &str,
        path: Option<&str>,
        hunk: Option<usize>,
        merge: bool,
    ) -> Result<Reverted, CheckpointError> {
        let store = self.inner.store.clone().ok_or(CheckpointError::Off)?;
        let this = self.clone();
        let (agent, conversation, turn) = (agent.to_owned(), conversation.to_owned(), turn.to_owned());
        let path = path.map(str::to_owned);
        let (a, c, t) = (agent.clone(), conversation.clone(), turn.clone());
        let result = tokio::task::spawn_blocking(move || {
            this.revert_blocking(&store, &a, &c, &t, path.as_deref(), hunk, merge)
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
        merge: bool,
    ) -> Result<Reverted, CheckpointError> {
        let _held = lock(&self.inner.records);
        let mut record =
            store::load(store, conversation).ok_or_else(|| CheckpointError::NoTurn(turn.into()))?;
        let t = record
            .turns
            .iter()
            .position(|r| r.turn == turn)
            .ok_or_else(|| CheckpointError::NoTurn(turn.into()))?;
        let turn_rec = record.turns[t].clone();
        let mut writes = Vec::new();
        let mut reviewed = Vec::new();
        let mut found = false;
        for (ri, root) in turn_rec.roots.iter().enumerate() {
            let (Some(before), Some(after)) = (&root.before, &root.after) else {
                continue;
            };
            let shadow = Shadow::open(store, Path::new(&root.root))
                .map_err(|e| CheckpointError::Failed(e.to_string()))?;
            let files = diff::changes(&shadow.git, &root.root, &shadow.prefix, before, after)
                .map_err(|e| CheckpointError::Failed(e.to_string()))?;
            let sides = Sides {
                shadow: &shadow,
                before,
                after,
                left: &root.left,
            };
            for file in &files {
                if let Some(p) = path {
                    let full = Path::new(&root.root).join(&file.path);
                    if p != file.path && Path::new(p) != full {
                        continue;
                    }
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
                writes.extend(
                    revert::plan_file(&sides, file, hunk, merge)?
                        .into_iter()
                        .map(|w| (ri, w)),
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
        let plain: Vec<Write> = writes.iter().map(|(_, w)| w.clone()).collect();
        revert::apply(&plain)?;
        // The review, and what the revert left in each file.
        // What this revert changes in the record, as it was (its Undo puts
        // back only these).
        let mut old_reviews = Vec::new();
        let mut old_left = Vec::new();
        let rec = &mut record.turns[t];
        for key in reviewed {
            let was = rec.reviews.insert(key.clone(), Review::Reverted);
            old_reviews.push((key, was));
        }
        for (ri, w) in &writes {
            let Some(root) = rec.roots.get_mut(*ri) else {
                continue;
            };
            old_left.push((*ri, w.git_path.clone(), root.left.get(&w.git_path).cloned()));
            let shadow = Shadow::open(store, Path::new(&root.root)).ok();
            match (&w.content, shadow) {
                (Some(bytes), Some(s)) => {
                    if let Ok(id) = s.git.hash(bytes) {
                        root.left.insert(w.git_path.clone(), id);
                    }
                }
                _ => {
                    root.left.remove(&w.git_path);
                }
            }
        }
        if let Err(e) = store::save(store, &record) {
            tracing::warn!("checkpoints: could not write {conversation}: {e}");
        }
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
        Ok(Reverted { id, files, merged })
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
                let now = std::fs::read(&w.full).ok();
                if now != w.content {
                    return Err(CheckpointError::Revert(RevertError::ChangedSince(
                        w.shown.clone(),
                    )));
                }
            }
            let back: Vec<Write> = undo
                .writes
                .iter()
                .map(|w| Write {
                    previous: w.content.clone(),
                    content: w.previous.clone(),
                    ..w.clone()
                })
                .collect();
            revert::apply(&back)?;
            if let Some(mut record) = store::load(&store, &undo.conversation) {
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
                let _ = store::save(&store, &record);
            }
            Ok(Reverted {
                id,
                files: back.iter().map(|w| w.shown.clone()).collect(),
                merged: false,
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
            let mut record =
                store::load(&store, conversation).ok_or_else(|| CheckpointError::NoTurn(turn.into()))?;
            if let Some(t) = record.turns.iter_mut().find(|t| t.turn == turn) {
                t.reviews.insert(key, Review::Kept);
            }
            store::save(&store, &record).map_err(|e| CheckpointError::Failed(e.to_string()))?;
        }
        self.tell(agent, conversation, turn, changes.files_changed);
        Ok(())
    }

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
            if let Some(record) = store::load(&store, &conversation) {
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
    fn prune_now_and_then(&self) {
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

fn count_files(changes: &Changes) -> usize {
    changes.files_changed
}

/// Reads the changes of a record's turns (all, or one).
fn changes_of(store: &Path, record: &Record, only: Option<&str>) -> Changes {
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
                    }
                    let span = spans
                        .entry(root.root.clone())
                        .or_insert_with(|| (before.clone(), after.clone(), Default::default()));
                    span.1 = after.clone();
                    for f in &fs {
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
