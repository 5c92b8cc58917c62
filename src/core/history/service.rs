//! `HistoryService`: the history file Parley keeps conversations in, and
//! the recorder that writes what the conversations emit to it (text deltas
//! joined first). The chat takes this handle to give a conversation its
//! row and to read stored ones; `Search` and `HistoryStatus` are its own.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{History, Hit, Op, OpenNotice};
use crate::core::events::{self, Event, EventSender, HistoryStatus};
use crate::core::types::message::PartKind;
use crate::i18n::{fill, gettext, gettext_f, ngettext};

/// What the conversations write to, and which conversation each agent's
/// events belong to. One lock for both: it is taken for every streamed chunk.
#[derive(Default)]
pub struct Recorder {
    pub history: Option<History>,
    /// The configuration's path: history of another stays apart.
    pub config: String,
    /// Agent → its current conversation's id (once it has a row).
    pub ids: HashMap<String, String>,
    /// Agent → the title last written (titles come with every option change).
    pub titles: HashMap<String, Option<String>>,
    /// The titles of the sessions agents listed, by agent and session id
    /// (an opened one keeps its title).
    pub listed: HashMap<(String, String), String>,
    /// Streamed text not yet sent to the writer (see `record`).
    pending: Option<PendingText>,
    /// Bytes of each part's streamed text sent to the writer so far, by
    /// message id and part (see `STREAMED_KEPT`).
    streamed: HashMap<(String, usize), usize>,
}

/// How much of one part's streamed text goes to the history while it
/// streams. A giant answer keeps only its end (`types::long_text`), and
/// the whole message, as kept, is written when it is done; past this,
/// its pieces would only be written to be dropped, and SQLite, slower
/// than an agent streaming as fast as it can, would queue them in memory
/// (a 256 MiB answer took 770 MB). A crash in the middle of such an answer
/// keeps its first pieces.
const STREAMED_KEPT: usize = 2 * crate::core::types::long_text::KEPT;

/// Text deltas to one part, joined here before they go to the writer: a
/// stream is thousands of deltas, and one channel message per delta costs
/// the stream a tenth of its speed.
struct PendingText {
    agent: String,
    conversation: String,
    message_id: String,
    index: usize,
    kind: PartKind,
    text: String,
    since: Instant,
}

/// Joined text goes to the writer at least this often (the writer's own
/// batches then take at most 50 ms more: what a crash can lose).
const PENDING_TIME: Duration = Duration::from_millis(50);
const PENDING_BYTES: usize = 1 << 20;

impl Recorder {
    /// Sends the joined text, if any.
    fn flush_pending(&mut self) {
        if let Some(p) = &self.pending {
            if self.streamed.len() > 1000 {
                self.streamed.clear();
            }
            let sent = self.streamed.entry((p.message_id.clone(), p.index)).or_default();
            *sent += p.text.len();
            if *sent > STREAMED_KEPT {
                self.pending = None;
                return;
            }
        }
        if let (Some(p), Some(h)) = (self.pending.take(), &self.history) {
            h.writer().send(Op::Delta {
                conversation: p.conversation,
                message_id: p.message_id,
                index: p.index,
                kind: p.kind,
                text: Some(p.text),
                part: None,
            });
        }
    }

    /// Sends a change, after the joined text (order is kept).
    pub fn send(&mut self, op: Op) {
        self.flush_pending();
        if let Some(h) = &self.history {
            h.writer().send(op);
        }
    }
}

struct Inner {
    recorder: Mutex<Recorder>,
    events: EventSender,
    /// Poked when joined text starts waiting (`Recorder::pending` became
    /// `Some`), and when the service goes: the flusher sleeps on it, so
    /// that nothing wakes at rest.
    pending_arrived: Arc<tokio::sync::Notify>,
    /// Whether the flusher runs (one for the service's life).
    flusher: std::sync::atomic::AtomicBool,
    /// How many times the flusher woke (for the tests: none at rest).
    #[cfg(test)]
    flusher_wakes: std::sync::atomic::AtomicUsize,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The flusher ends.
        self.pending_arrived.notify_one();
    }
}

/// The history and its recorder; cheap to clone.
#[derive(Clone)]
pub struct HistoryService {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl HistoryService {
    /// No file yet: conversations live in memory until [`Self::open`].
    pub fn new(events: EventSender) -> Self {
        HistoryService {
            inner: Arc::new(Inner {
                recorder: Mutex::default(),
                events,
                pending_arrived: Arc::default(),
                flusher: std::sync::atomic::AtomicBool::new(false),
                #[cfg(test)]
                flusher_wakes: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }

    /// Opens the history for the configuration at `config`; what went
    /// wrong is logged and told as `history:status` (the conversations
    /// then live in memory).
    pub fn open(&self, file: Option<&Path>, config: &Path) {
        let Some(file) = file else { return };
        let history = match History::open(file) {
            Ok((h, notices)) => {
                for n in notices {
                    match n {
                        OpenNotice::MovedAside(aside) => {
                            let text = gettext_f(
                                "The history file was damaged; it was moved to {path} and a new one started",
                                &[("path", &aside.display().to_string())],
                            );
                            tracing::warn!("{text}");
                            self.emit_status(true, Some(text));
                        }
                        OpenNotice::Interrupted(n) => {
                            tracing::info!("history: {n} unfinished messages marked interrupted")
                        }
                        OpenNotice::ReadOnly => {
                            tracing::info!("history: another Parley writes it; read-only")
                        }
                    }
                }
                let events = self.inner.events.clone();
                h.writer().on_failure(Box::new(move |error| {
                    events::emit(
                        &events,
                        Event::HistoryStatus(HistoryStatus {
                            writable: error.is_none(),
                            error: error.map(|e| {
                                gettext_f(
                                    "Conversations cannot be saved: {error}. They go on in memory.",
                                    &[("error", e)],
                                )
                            }),
                            skipped: None,
                        }),
                    );
                }));
                let (events, writer) = (self.inner.events.clone(), h.writer().clone());
                h.on_skipped(Box::new(move |n| {
                    let text = fill(
                        &ngettext(
                            "{n} damaged row of the history could not be read: it was left out, or shown with what could be read.",
                            "{n} damaged rows of the history could not be read: they were left out, or shown with what could be read.",
                            u32::try_from(n).unwrap_or(u32::MAX),
                        ),
                        &[("n", &n.to_string())],
                    );
                    tracing::warn!("{text}");
                    events::emit(
                        &events,
                        Event::HistoryStatus(HistoryStatus {
                            writable: writer.writes() && writer.failure().is_none(),
                            error: Some(text),
                            skipped: Some(n as u64),
                        }),
                    );
                }));
                Some(h)
            }
            Err(e) => {
                let text = gettext_f(
                    "The history cannot be opened: {error}. Conversations are kept in memory only.",
                    &[("error", &e.to_string())],
                );
                tracing::warn!("{text}");
                self.emit_status(false, Some(text));
                None
            }
        };
        self.set(history, &config.display().to_string());
    }

    fn emit_status(&self, writable: bool, error: Option<String>) {
        events::emit(
            &self.inner.events,
            Event::HistoryStatus(HistoryStatus {
                writable,
                error,
                skipped: None,
            }),
        );
    }

    /// Keeps the conversations of configuration `config` in `history`
    /// (`None`: in memory only).
    pub fn set(&self, history: Option<History>, config: &str) {
        let start = history.is_some();
        {
            let mut r = lock(&self.inner.recorder);
            r.flush_pending();
            r.history = history;
            r.config = config.to_owned();
            r.ids.clear();
            r.titles.clear();
        }
        if start {
            self.start_pending_timer();
        }
    }

    /// The history, if conversations are kept.
    pub fn store(&self) -> Option<History> {
        lock(&self.inner.recorder).history.clone()
    }

    /// Writes what an event changes of the agent's current conversation.
    /// Text deltas are joined first (`PendingText`); this runs for every
    /// chunk of every answer.
    ///
    /// Answers the agent whose conversation's title changed, if one did.
    pub fn record(&self, e: &Event) -> Option<String> {
        let mut title_changed = None;
        {
            let mut r = lock(&self.inner.recorder);
            r.history.as_ref()?;
            let op = match e {
                Event::MessageDelta(d) => {
                    if let (Some(text), None) = (&d.text, &d.part) {
                        if let Some(p) = &mut r.pending {
                            if p.agent == d.agent
                                && p.message_id == d.message_id
                                && p.index == d.index
                                && p.kind == d.kind
                            {
                                p.text.push_str(text);
                                if p.text.len() >= PENDING_BYTES || p.since.elapsed() >= PENDING_TIME {
                                    r.flush_pending();
                                }
                                return None;
                            }
                        }
                        let id = r.ids.get(&d.agent).cloned()?;
                        r.flush_pending();
                        r.pending = Some(PendingText {
                            agent: d.agent.clone(),
                            conversation: id,
                            message_id: d.message_id.clone(),
                            index: d.index,
                            kind: d.kind,
                            text: text.clone(),
                            since: Instant::now(),
                        });
                        // The flusher sends it if the stream pauses.
                        self.inner.pending_arrived.notify_one();
                        return None;
                    }
                    let id = r.ids.get(&d.agent)?;
                    Op::Delta {
                        conversation: id.clone(),
                        message_id: d.message_id.clone(),
                        index: d.index,
                        kind: d.kind,
                        text: d.text.clone(),
                        part: d.part.clone(),
                    }
                }
                Event::MessageUpdated(u) => {
                    if u.message.done {
                        let m = &u.message.id;
                        r.streamed.retain(|(id, _), _| id != m);
                    }
                    let id = r.ids.get(&u.agent)?;
                    Op::Message {
                        conversation: id.clone(),
                        message: u.message.clone(),
                    }
                }
                Event::MessageRemoved(m) => {
                    let id = r.ids.get(&m.agent)?;
                    Op::RemoveMessage {
                        conversation: id.clone(),
                        message_id: m.message_id.clone(),
                    }
                }
                Event::SessionChanged(s) => {
                    let id = r.ids.get(&s.agent).cloned()?;
                    if r.titles.get(&s.agent) == Some(&s.title) {
                        return None;
                    }
                    r.titles.insert(s.agent.clone(), s.title.clone());
                    title_changed = Some(s.agent.clone());
                    Op::Title {
                        conversation: id,
                        title: s.title.clone(),
                    }
                }
                _ => return None,
            };
            r.send(op);
        }
        title_changed
    }

    /// Sends the joined text to the writer; returns the history (to flush
    /// it, off the async threads, before a read).
    pub fn flushed(&self) -> Option<History> {
        let mut r = lock(&self.inner.recorder);
        r.flush_pending();
        r.history.clone()
    }

    /// Sends joined text that waited `PENDING_TIME` (a stream that paused),
    /// while the service lives (one flusher, started with the first
    /// history). It sleeps until text starts waiting (the recorder pokes
    /// `pending_arrived`), then until that text is due: nothing wakes at
    /// rest.
    fn start_pending_timer(&self) {
        use std::sync::atomic::Ordering;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.inner.flusher.swap(true, Ordering::AcqRel) {
            return;
        }
        let arrived = self.inner.pending_arrived.clone();
        let weak = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            loop {
                arrived.notified().await;
                // Text that came after a flush has its own, later, time.
                loop {
                    let due = {
                        let Some(inner) = weak.upgrade() else { return };
                        #[cfg(test)]
                        inner.flusher_wakes.fetch_add(1, Ordering::Relaxed);
                        let mut r = lock(&inner.recorder);
                        match &r.pending {
                            None => break,
                            Some(p) if p.since.elapsed() >= PENDING_TIME => {
                                r.flush_pending();
                                break;
                            }
                            Some(p) => p.since + PENDING_TIME,
                        }
                    };
                    tokio::time::sleep_until(due.into()).await;
                }
            }
        });
    }

    /// How many times the flusher of joined text woke.
    #[cfg(test)]
    pub(super) fn flusher_wakes(&self) -> &std::sync::atomic::AtomicUsize {
        &self.inner.flusher_wakes
    }

    /// The recorder, locked: which conversation each agent's events go
    /// to, and changes to send after the joined text.
    pub fn recorder(&self) -> MutexGuard<'_, Recorder> {
        lock(&self.inner.recorder)
    }

    /// The configuration whose conversations are kept (history of another
    /// stays apart).
    pub fn config_key(&self) -> String {
        lock(&self.inner.recorder).config.clone()
    }

    /// Stores the agent session of the agent's current conversation.
    pub fn record_session(&self, agent: &str, session_id: &str) {
        let mut r = lock(&self.inner.recorder);
        if let Some(id) = r.ids.get(agent).cloned() {
            r.send(Op::Session {
                conversation: id,
                session_id: Some(session_id.to_owned()),
            });
        }
    }

    /// Forgets which conversation each agent's events go to (another
    /// configuration was opened).
    pub fn forget_current(&self) {
        let mut r = lock(&self.inner.recorder);
        r.ids.clear();
        r.titles.clear();
    }

    /// `Search(query)`: across this configuration's conversations, best
    /// first; the matching words between U+0002 and U+0003.
    pub async fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, String> {
        let h = self.flushed().ok_or_else(|| gettext("no history is kept"))?;
        let config = self.config_key();
        let query = query.to_owned();
        tokio::task::spawn_blocking(move || {
            flushed(&h);
            h.search(&config, &query, limit.clamp(1, 500))
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
    }

    /// Tells the front ends whether the history is written (`history:status`).
    pub fn status(&self) -> HistoryStatus {
        match self.store() {
            None => HistoryStatus {
                writable: false,
                error: Some(gettext("no history is kept")),
                skipped: None,
            },
            Some(h) => HistoryStatus {
                writable: h.writable() && h.writer().failure().is_none(),
                error: h.writer().failure(),
                skipped: None,
            },
        }
    }
}

/// Waits until what was sent to the writer is on disk, so a read that
/// follows sees it (a read-only history has nothing to wait for).
pub fn flushed(h: &History) {
    // (The chat's joined text was sent before: see `HistoryService::flushed`.)
    if h.writable() {
        if let Err(e) = h.writer().flush() {
            tracing::debug!(error = %e, "history: flush before a read");
        }
    }
}
