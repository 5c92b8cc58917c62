//! [`CheckpointService`]: its state, and a turn's snapshots (begun before
//! the prompt goes out, finished when the turn ends). Its other parts:
//! `changes` (what turns changed), `review` (reverts, Undo, Keep) and
//! `prune` (what is given up).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use super::attribution::Attribution;
use super::changes::{changes_of, count_files, Changes};
use super::diff::Review;
use super::revert::{RevertError, Write};
use super::shadow::{shadow_name, Shadow};
use super::store::{self, Record, RootRecord, TurnRecord};
use crate::core::events::{self, ChangesUpdated, Event, EventSender};

/// How long a file write of the agent's waits for the turn's first
/// snapshot at most.
const GATE_LIMIT: Duration = Duration::from_secs(120);

/// Reverts remembered for their Undo.
pub(super) const UNDO_DEPTH: usize = 32;

/// Where checkpoints are kept: beside the history file, in `checkpoints/`.
pub fn default_store(history: &Path) -> PathBuf {
    history
        .parent()
        .map_or_else(|| PathBuf::from("checkpoints"), |d| d.join("checkpoints"))
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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

/// What a revert did: its id (for `UndoRevert`) and the files written.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Reverted {
    pub id: String,
    pub files: Vec<String>,
    /// Some file was merged with changes made since the turn.
    pub merged: bool,
    /// Files that changed during the turn but that nothing ties to it: an
    /// Undo of the whole turn leaves them as they are (see `How::all`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_alone: Vec<String>,
    /// Files that could not be put back, each with why; the rest was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refused>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Refused {
    pub path: String,
    pub reason: String,
}

/// How a revert goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct How {
    /// Revert only the turn's part of a file changed since (three-way).
    pub merge: bool,
    /// With the whole turn: the files nothing ties to the turn too.
    pub all: bool,
}

/// A revert remembered for its Undo.
pub(super) struct Undo {
    pub(super) id: String,
    pub(super) agent: String,
    pub(super) conversation: String,
    pub(super) turn: String,
    pub(super) writes: Vec<Write>,
    /// The review keys the revert set, with what they were before.
    pub(super) reviews: Vec<(String, Option<Review>)>,
    /// What reverts had left (root index, path), before this one.
    pub(super) left: Vec<(usize, String, Option<String>)>,
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
    /// The directories recorded, as given.
    dirs: Vec<PathBuf>,
    /// What ties a change to this turn, gathered while it runs.
    attribution: Arc<Mutex<Attribution>>,
}

impl TurnStart {
    /// Waits (at most `limit`) until the snapshot before the turn is
    /// taken: the prompt goes out after it, so that nothing the agent does
    /// on receiving it is taken for the turn's starting point.
    pub async fn recorded(&self, limit: Duration) -> bool {
        let mut done = self.done.clone();
        let recorded = tokio::time::timeout(limit, done.wait_for(|d| *d)).await.is_ok();
        recorded
    }
}

#[derive(Clone)]
pub struct CheckpointService {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) store: Option<PathBuf>,
    pub(super) events: EventSender,
    pub(super) settings: Mutex<Settings>,
    /// One snapshot at a time per shadow repository.
    pub(super) shadows: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Each agent's turn whose first snapshot is under way.
    pub(super) befores: Mutex<HashMap<String, watch::Receiver<bool>>>,
    /// Each agent's last ended turn: `true` once its "after" is taken.
    pub(super) finishing: Mutex<HashMap<String, watch::Receiver<bool>>>,
    /// Conversation records are read, changed and written one at a time.
    pub(super) records: Mutex<()>,
    pub(super) undo: Mutex<VecDeque<Undo>>,
    pub(super) next: AtomicU64,
    pub(super) last_prune: Mutex<Option<std::time::Instant>>,
    /// Turns whose second snapshot is still under way.
    pub(super) ending: watch::Sender<usize>,
    /// Each agent's running turn's attribution (see `attribution`).
    pub(super) attributions: Mutex<HashMap<String, Arc<Mutex<Attribution>>>>,
    /// Records that could not be written (a full disk), by conversation:
    /// Changes shows them, with why, until a write succeeds.
    pub(super) unsaved: Mutex<HashMap<String, Record>>,
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

pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A ref name component from an id Parley made (escaped as a file name is).
pub(super) fn ref_part(id: &str) -> String {
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
                attributions: Mutex::new(HashMap::new()),
                unsaved: Mutex::new(HashMap::new()),
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
        let attribution = Arc::new(Mutex::new(Attribution::default()));
        lock(&self.inner.attributions).insert(agent.to_owned(), attribution.clone());
        let start = TurnStart {
            agent: agent.to_owned(),
            conversation: conversation.to_owned(),
            turn: turn.to_owned(),
            at_ms: now_ms(),
            done,
            roots: records.clone(),
            dirs: roots.clone(),
            attribution,
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
        let shadow = Shadow::open(store, root).map_err(|e| Self::said(e.to_string()))?;
        let dir_name = shadow_name(&shadow.root);
        let guard = self.shadow_lock(&shadow.root);
        let _held = lock(&guard);
        let snap = shadow.snapshot().map_err(|e| Self::said(e.to_string()))?;
        shadow
            .keep(name, &snap.commit)
            .map_err(|e| Self::said(e.to_string()))?;
        Ok((snap.commit, snap.skipped, dir_name))
    }

    /// A file the agent's running turn wrote through `fs/*`, or that one
    /// of its tool calls named as changed.
    pub fn note_path(&self, agent: &str, path: &Path) {
        if let Some(a) = lock(&self.inner.attributions).get(agent) {
            lock(a).name(path);
        }
    }

    /// A command of the agent's running turn started or ended (`key`: the
    /// tool call's or the terminal's id).
    pub fn note_command(&self, agent: &str, key: &str, running: bool) {
        if let Some(a) = lock(&self.inner.attributions).get(agent) {
            if running {
                lock(a).command_started(key, now_ms());
            } else {
                lock(a).command_ended(key, now_ms());
            }
        }
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
        let ended_ms = now_ms();
        {
            let mut all = lock(&self.inner.attributions);
            if all
                .get(&start.agent)
                .is_some_and(|a| Arc::ptr_eq(a, &start.attribution))
            {
                all.remove(&start.agent);
            }
        }
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
            let count = tokio::task::spawn_blocking(move || worker.finish(&store, start, ended_ms)).await;
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

    fn finish(&self, store: &Path, start: TurnStart, ended_ms: u64) -> usize {
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
            if let (Some(before), Some(after)) = (&rec.before, &rec.after) {
                if before != after {
                    let attribution = lock(&start.attribution).clone();
                    rec.unattributed =
                        Self::unattributed(store, rec, before, after, &start.dirs, &attribution, ended_ms);
                }
            }
        }
        let unchanged = roots
            .iter()
            .all(|r| r.error.is_none() && r.skipped.is_empty() && r.before == r.after);
        let _held = lock(&self.inner.records);
        let existing = self.load_record(store, &start.conversation);
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
        let record = self.save_record(store, record);
        count_files(&changes_of(store, &record, None))
    }

    pub(super) fn tell(&self, agent: &str, conversation: &str, turn: &str, files: usize) {
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
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let record = this.load_record(&store, &conversation).unwrap_or(Record {
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
}
