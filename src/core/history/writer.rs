//! The one thread that writes the history: it takes what the conversations
//! send, in order, and writes it in batches (one transaction per 50 ms or
//! 20,000 changes), with a stream's text deltas to one part joined into one
//! append. A write that fails (a full disk, a read-only directory) is kept
//! as `failure()` for the window to tell; the conversations go on in memory.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

pub use super::ops::Op;
use crate::core::types::message::{Message, Part, PartKind, Role};

const BATCH_TIME: Duration = Duration::from_millis(50);
const BATCH_OPS: usize = 20_000;
/// A finished message's text longer than this is indexed for search once
/// the writer has been idle for `INDEX_IDLE` (or at the next flush): the
/// index of a 4 MB answer costs the stream that follows it otherwise.
const INDEX_NOW: usize = 64 * 1024;
const INDEX_IDLE: Duration = Duration::from_millis(500);

/// Told when writing starts failing (`Some(why)`) or works again (`None`).
pub type FailureListener = Box<dyn Fn(Option<&str>) + Send>;

#[derive(Clone)]
pub struct Writer {
    /// `None` when the history is open read-only (another Parley writes it).
    tx: Option<mpsc::Sender<Op>>,
    failure: Arc<Mutex<Option<String>>>,
    listener: Arc<Mutex<Option<FailureListener>>>,
}

impl Writer {
    pub(super) fn start(conn: Connection) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::channel();
        let failure = Arc::new(Mutex::new(None));
        let listener: Arc<Mutex<Option<FailureListener>>> = Arc::default();
        let (failed, told) = (failure.clone(), listener.clone());
        std::thread::Builder::new()
            .name("parley-history".into())
            .spawn(move || run(conn, rx, failed, told))?;
        Ok(Writer {
            tx: Some(tx),
            failure,
            listener,
        })
    }

    /// A writer that writes nothing (the history is read-only here).
    pub(super) fn none(why: String) -> Writer {
        Writer {
            tx: None,
            failure: Arc::new(Mutex::new(Some(why))),
            listener: Arc::default(),
        }
    }

    /// Whether changes are written at all.
    pub fn writes(&self) -> bool {
        self.tx.is_some()
    }

    /// Calls `f` whenever writing starts failing or works again.
    pub fn on_failure(&self, f: FailureListener) {
        *self.listener.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    /// Sends a change (never blocks; dropped if the writer is gone).
    pub fn send(&self, op: Op) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(op);
        }
    }

    /// Waits until everything sent before is written.
    pub fn flush(&self) -> Result<(), String> {
        let Some(sender) = &self.tx else {
            return Err(self.failure().unwrap_or_default());
        };
        let (tx, rx) = mpsc::channel();
        let _ = sender.send(Op::Flush(tx));
        rx.recv()
            .unwrap_or_else(|_| Err("the history writer has stopped".into()))
    }

    /// Why the last batch could not be written, if it could not.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

fn run(
    mut conn: Connection,
    rx: mpsc::Receiver<Op>,
    failure: Arc<Mutex<Option<String>>>,
    listener: Arc<Mutex<Option<FailureListener>>>,
) {
    // Writing the history is background work: on a busy machine the
    // stream it records (and the window) go first.
    // SAFETY: gettid and setpriority on this thread only.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
    let mut later: Vec<i64> = Vec::new();
    loop {
        // At rest (nothing sent, nothing left to index) the thread sleeps
        // on the channel with no timeout: it wakes only for a change.
        let first = if later.is_empty() {
            match rx.recv() {
                Ok(op) => op,
                Err(_) => return,
            }
        } else {
            match rx.recv_timeout(INDEX_IDLE) {
                Ok(op) => op,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    index_later(&conn, &mut later);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    index_later(&conn, &mut later);
                    return;
                }
            }
        };
        let mut batch = vec![first];
        let deadline = Instant::now() + BATCH_TIME;
        while batch.len() < BATCH_OPS && !matches!(batch.last(), Some(Op::Flush(_))) {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let mut flushes = Vec::new();
        let ops: Vec<Op> = batch
            .into_iter()
            .filter_map(|op| match op {
                Op::Flush(done) => {
                    flushes.push(done);
                    None
                }
                op => Some(op),
            })
            .collect();
        let result =
            write_batch(&mut conn, super::joined::join_text(ops), &mut later).map_err(|e| e.to_string());
        if !flushes.is_empty() && result.is_ok() {
            // A read follows a flush: it finds everything.
            index_later(&conn, &mut later);
        }
        let now_failing = result.as_ref().err().cloned();
        let changed = {
            let mut f = failure.lock().unwrap_or_else(|e| e.into_inner());
            let changed = *f != now_failing;
            *f = now_failing.clone();
            changed
        };
        if let Err(e) = &result {
            tracing::warn!(error = %e, "history: a batch was not written");
        }
        if changed {
            if let Some(tell) = &*listener.lock().unwrap_or_else(|e| e.into_inner()) {
                tell(now_failing.as_deref());
            }
        }
        for done in flushes {
            let _ = done.send(result.clone());
        }
    }
}

fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// What the search index holds of a message: its text parts, once done.
fn searchable(m: &Message) -> String {
    if !m.done || m.role == Role::System {
        return String::new();
    }
    m.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn message_row(tx: &Transaction<'_>, conversation: &str, id: &str) -> rusqlite::Result<Option<i64>> {
    tx.prepare_cached("SELECT rowid FROM messages WHERE conversation = ?1 AND id = ?2")?
        .query_row(params![conversation, id], |r| r.get(0))
        .optional()
}

fn put_part(tx: &Transaction<'_>, message: i64, index: usize, part: &Part) -> rusqlite::Result<()> {
    let (kind, text, json) = match part {
        Part::Text { text } => ("text", Some(text.as_str()), None),
        Part::Thought { text } => ("thought", Some(text.as_str()), None),
        other => (
            match other.kind() {
                PartKind::Tool => "tool",
                PartKind::Plan => "plan",
                PartKind::Notice => "notice",
                PartKind::Compaction => "compaction",
                _ => "attachment",
            },
            None,
            serde_json::to_string(other).ok(),
        ),
    };
    tx.prepare_cached(
        "INSERT INTO parts (message, idx, kind, text, json) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (message, idx) DO UPDATE SET kind = excluded.kind, text = excluded.text, json = excluded.json",
    )?
    .execute(params![message, index as i64, kind, text, json])?;
    Ok(())
}

/// Indexes the long messages `write_batch` left for later.
fn index_later(conn: &Connection, later: &mut Vec<i64>) {
    for rowid in later.drain(..) {
        let r = conn.execute(
            "UPDATE messages SET text = coalesce((SELECT group_concat(text, char(10)) FROM
                (SELECT text FROM parts WHERE message = ?1 AND kind = 'text' ORDER BY idx)), '')
             WHERE rowid = ?1 AND done = 1 AND role != 'system'",
            params![rowid],
        );
        if let Err(e) = r {
            tracing::warn!(error = %e, "history: a message was not indexed");
        }
    }
}

fn write_batch(conn: &mut Connection, ops: Vec<Op>, later: &mut Vec<i64>) -> rusqlite::Result<()> {
    if ops.is_empty() {
        return Ok(());
    }
    let tx = conn.transaction()?;
    let mut touched: Vec<String> = Vec::new();
    for op in ops {
        match op {
            Op::Conversation {
                id,
                config,
                agent,
                created_at,
            } => {
                tx.prepare_cached(
                    "INSERT OR IGNORE INTO conversations (id, config, agent, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?4)",
                )?
                .execute(params![id, config, agent, created_at])?;
            }
            Op::Title { conversation, title } => {
                tx.prepare_cached("UPDATE conversations SET title = ?2 WHERE id = ?1")?
                    .execute(params![conversation, title])?;
            }
            Op::Session {
                conversation,
                session_id,
            } => {
                tx.prepare_cached("UPDATE conversations SET session_id = ?2 WHERE id = ?1")?
                    .execute(params![conversation, session_id])?;
            }
            // Answered by `run`, after the batch.
            Op::Flush(_) => {}
            Op::Delete { conversation } => {
                // Its subagents' threads go with it.
                tx.prepare_cached("DELETE FROM conversations WHERE id = ?1 OR parent = ?1")?
                    .execute(params![conversation])?;
                tx.prepare_cached("DELETE FROM drafts WHERE conversation = ?1")?
                    .execute(params![conversation])?;
                tx.prepare_cached("DELETE FROM open_conversations WHERE conversation = ?1")?
                    .execute(params![conversation])?;
            }
            Op::Subagent {
                parent,
                conversation,
                json,
            } => {
                let at = now();
                tx.prepare_cached(
                    "INSERT INTO conversations (id, config, agent, created_at, updated_at, parent, subagent)
                     SELECT ?2, config, agent, ?4, ?4, ?1, ?3 FROM conversations WHERE id = ?1
                     ON CONFLICT (id) DO UPDATE SET subagent = ?3, updated_at = ?4",
                )?
                .execute(params![parent, conversation, json, at])?;
            }
            Op::ForkedFrom { conversation, json } => {
                tx.prepare_cached("UPDATE conversations SET forked_from = ?2 WHERE id = ?1")?
                    .execute(params![conversation, json])?;
            }
            Op::Draft {
                config,
                agent,
                conversation,
                draft,
            } => match draft.filter(|d| !d.is_empty()) {
                Some(d) => {
                    tx.prepare_cached(
                        "INSERT INTO drafts (config, agent, conversation, text, anchor) VALUES (?1, ?2, ?3, ?4, ?5)
                         ON CONFLICT (config, agent, conversation) DO UPDATE SET text = excluded.text, anchor = excluded.anchor",
                    )?
                    .execute(params![config, agent, conversation, d.text, d.anchor])?;
                }
                None => {
                    tx.prepare_cached(
                        "DELETE FROM drafts WHERE config = ?1 AND agent = ?2 AND conversation = ?3",
                    )?
                    .execute(params![config, agent, conversation])?;
                }
            },
            Op::Opened {
                config,
                agent,
                conversation,
            } => match conversation {
                Some(c) => {
                    tx.prepare_cached(
                        "INSERT INTO open_conversations (config, agent, conversation) VALUES (?1, ?2, ?3)
                         ON CONFLICT (config, agent) DO UPDATE SET conversation = excluded.conversation",
                    )?
                    .execute(params![config, agent, c])?;
                }
                None => {
                    tx.prepare_cached("DELETE FROM open_conversations WHERE config = ?1 AND agent = ?2")?
                        .execute(params![config, agent])?;
                }
            },
            Op::RemoveMessage {
                conversation,
                message_id,
            } => {
                tx.prepare_cached("DELETE FROM messages WHERE conversation = ?1 AND id = ?2")?
                    .execute(params![conversation, message_id])?;
            }
            Op::Message {
                conversation,
                mut message,
            } => {
                let parts = std::mem::take(&mut message.parts);
                let meta = serde_json::to_string(&message).unwrap_or_default();
                message.parts = parts;
                let mut text = searchable(&message);
                let index_later = text.len() > INDEX_NOW;
                if index_later {
                    text.clear();
                }
                let existing: Option<(i64, String)> = tx
                    .prepare_cached("SELECT rowid, meta FROM messages WHERE conversation = ?1 AND id = ?2")?
                    .query_row(params![conversation, message.id], |r| {
                        // Fields that cannot be read are written anew.
                        Ok((r.get(0)?, r.get::<_, String>(1).unwrap_or_default()))
                    })
                    .optional()?;
                let rowid = match existing {
                    Some((rowid, old)) => {
                        // A queued message that is sent now moves after the
                        // answer it waited for, as in the conversation.
                        let was_queued = old.contains("\"queued\":true");
                        let moved = was_queued && !message.queued;
                        tx.prepare_cached(
                            "UPDATE messages SET meta = ?2, text = ?3, done = ?4,
                               seq = CASE WHEN ?5 THEN (SELECT max(seq) + 1 FROM messages WHERE conversation = ?6)
                                     ELSE seq END
                             WHERE rowid = ?1",
                        )?
                        .execute(params![rowid, meta, text, message.done, moved, conversation])?;
                        rowid
                    }
                    None => {
                        tx.prepare_cached(
                            "INSERT INTO messages (id, conversation, seq, role, meta, text, done)
                             VALUES (?1, ?2, (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE conversation = ?2),
                                     ?3, ?4, ?5, ?6)",
                        )?
                        .execute(params![
                            message.id,
                            conversation,
                            crate::core::types::message::wire_name(&message.role),
                            meta,
                            text,
                            message.done
                        ])?;
                        tx.last_insert_rowid()
                    }
                };
                if index_later {
                    later.push(rowid);
                }
                tx.prepare_cached("DELETE FROM parts WHERE message = ?1 AND idx >= ?2")?
                    .execute(params![rowid, message.parts.len() as i64])?;
                // The whole message holds what was streamed.
                tx.prepare_cached("DELETE FROM part_chunks WHERE message = ?1")?
                    .execute(params![rowid])?;
                for (i, part) in message.parts.iter().enumerate() {
                    put_part(&tx, rowid, i, part)?;
                }
                if !touched.contains(&conversation) {
                    touched.push(conversation);
                }
            }
            Op::Delta {
                conversation,
                message_id,
                index,
                kind,
                text,
                part,
            } => {
                // The message's own row comes first (message:updated).
                let Some(rowid) = message_row(&tx, &conversation, &message_id)? else {
                    continue;
                };
                match (part, text) {
                    (Some(part), _) => put_part(&tx, rowid, index, &part)?,
                    (None, Some(text)) => {
                        let kind = if kind == PartKind::Thought {
                            "thought"
                        } else {
                            "text"
                        };
                        tx.prepare_cached(
                            "INSERT INTO parts (message, idx, kind, text) VALUES (?1, ?2, ?3, '')
                             ON CONFLICT (message, idx) DO NOTHING",
                        )?
                        .execute(params![rowid, index as i64, kind])?;
                        tx.prepare_cached(
                            "INSERT INTO part_chunks (message, idx, text) VALUES (?1, ?2, ?3)",
                        )?
                        .execute(params![rowid, index as i64, text])?;
                    }
                    (None, None) => {}
                }
                if !touched.contains(&conversation) {
                    touched.push(conversation);
                }
            }
        }
    }
    let at = now();
    for c in touched {
        tx.prepare_cached("UPDATE conversations SET updated_at = ?2 WHERE id = ?1")?
            .execute(params![c, at])?;
    }
    tx.commit()
}
