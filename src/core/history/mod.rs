//! Conversations on disk (issue 16, the store): SQLite in WAL mode with a
//! schema version and migrations, full-text search with FTS5, and one
//! writer thread that batches what the conversations send it, so nothing
//! is written on the GTK main thread or an async worker.
//!
//! The store keeps a conversation's messages as the chat model has them: a
//! row per message (its fields but the parts, as JSON), a row per part
//! (text and thought parts appended as they stream, other parts whole), and
//! the message's text in the search index once the message is done.
//! History of another configuration stays apart: every conversation
//! carries the configuration's path.
//!
//! One Parley writes the file: the first takes `history.sqlite3.lock`
//! (`flock`), and any other (`parley-cli` while the window runs) opens it
//! read-only and keeps its conversations in memory.
//!
//! A row that cannot be read (a value of the wrong type, text that is not
//! UTF-8, a message whose fields are not JSON) hides nothing else: each
//! read skips it, or keeps what it can of it, and tells it once
//! ([`History::on_skipped`]).

pub mod export;
mod joined;
mod ops;
pub mod places;
mod rows;
mod schema;
pub mod service;
mod writer;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OpenFlags};

use crate::core::types::message::Message;
use rows::*;
pub use rows::{ConversationSummary, Hit, Stored};
pub use writer::{FailureListener, Op, Writer};

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("history: {0}")]
    Io(#[from] std::io::Error),
    #[error("history: the file was written by a newer Parley (schema {found}, this one knows {known})")]
    Newer { found: i64, known: i64 },
    /// A search Parley will not run (too long), or one that ran past its
    /// deadline.
    #[error("history: {0}")]
    Query(String),
    /// A database, but not Parley's history: left exactly as it is.
    #[error("history: {path} is not Parley's history ({why}); it is left as it is")]
    Foreign { path: String, why: String },
}

/// What opening the file found that the user should hear of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenNotice {
    /// The file was not a database (or failed its check): moved aside to
    /// this path, and a new one started.
    MovedAside(PathBuf),
    /// Messages left unfinished by a crash were marked interrupted.
    Interrupted(usize),
    /// Another Parley writes the file: it is open read-only here.
    ReadOnly,
}

pub const HIGHLIGHT_START: char = '\u{2}';
pub const HIGHLIGHT_END: char = '\u{3}';

/// Where the history lives: `$XDG_DATA_HOME/parley/history.sqlite3`, or
/// `PARLEY_HISTORY` when it is set to an absolute path (tests, scripts).
pub fn default_path() -> PathBuf {
    if let Some(p) = std::env::var_os("PARLEY_HISTORY").map(PathBuf::from) {
        if p.is_absolute() {
            return p;
        }
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| crate::core::config::model::home_dir().join(".local/share"));
    data.join("parley").join("history.sqlite3")
}

/// Told how many rows a read skipped, or kept only in part, because they
/// could not be read (each row once a run).
pub type SkipListener = Box<dyn Fn(usize) + Send>;

/// The rows reads skipped so far, and whom to tell of new ones.
#[derive(Default)]
struct Skipped {
    rows: HashSet<String>,
    listener: Option<SkipListener>,
}

/// The store: a read connection (reads run where they are called, off the
/// main thread) and the writer thread.
#[derive(Clone)]
pub struct History {
    read: Arc<Mutex<Connection>>,
    writer: Writer,
    skipped: Arc<Mutex<Skipped>>,
    /// Held while this Parley writes the file (closing it unlocks).
    _lock: Option<Arc<std::fs::File>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl History {
    /// Opens (or creates) the file for reading and writing. A file that is
    /// not a database is moved aside and a new one started; messages a
    /// crash left unfinished are marked interrupted.
    pub fn open(path: &Path) -> Result<(History, Vec<OpenNotice>), HistoryError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let lock = match take_lock(path)? {
            Some(lock) => lock,
            None => return Self::open_read_only(path).map(|h| (h, vec![OpenNotice::ReadOnly])),
        };
        let mut notices = Vec::new();
        // Read first, changing nothing: a file that is not Parley's at a
        // version it knows is never switched to WAL nor given tables.
        match schema::check_untouched(path) {
            Ok(()) | Err(schema::OpenError::Corrupt) => {}
            Err(schema::OpenError::Sql(e)) => return Err(e.into()),
            Err(schema::OpenError::Newer { found, known }) => {
                return Err(HistoryError::Newer { found, known })
            }
            Err(schema::OpenError::Foreign(why)) => {
                return Err(HistoryError::Foreign {
                    path: path.display().to_string(),
                    why,
                })
            }
        }
        let conn = match schema::open_checked(path) {
            Ok(c) => c,
            Err(schema::OpenError::Corrupt) => {
                let aside = schema::move_aside(path)?;
                notices.push(OpenNotice::MovedAside(aside));
                schema::open_checked(path).map_err(|e| match e {
                    schema::OpenError::Sql(e) => HistoryError::Sql(e),
                    schema::OpenError::Newer { found, known } => HistoryError::Newer { found, known },
                    schema::OpenError::Corrupt | schema::OpenError::Foreign(_) => {
                        HistoryError::Io(std::io::Error::other("still not a database"))
                    }
                })?
            }
            Err(schema::OpenError::Sql(e)) => return Err(e.into()),
            Err(schema::OpenError::Newer { found, known }) => {
                return Err(HistoryError::Newer { found, known })
            }
            Err(schema::OpenError::Foreign(why)) => {
                return Err(HistoryError::Foreign {
                    path: path.display().to_string(),
                    why,
                })
            }
        };
        let interrupted = conn.execute("UPDATE messages SET done = 1, interrupted = 1 WHERE done = 0", [])?;
        if interrupted > 0 {
            notices.push(OpenNotice::Interrupted(interrupted));
        }
        let writer = Writer::start(conn)?;
        let read = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        Ok((
            History {
                read: Arc::new(Mutex::new(read)),
                writer,
                skipped: Arc::default(),
                _lock: Some(Arc::new(lock)),
            },
            notices,
        ))
    }

    /// Opens the file only to read it (another Parley writes it).
    fn open_read_only(path: &Path) -> Result<History, HistoryError> {
        let read = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        read.busy_timeout(std::time::Duration::from_secs(2))?;
        let found: i64 = read.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found != schema::VERSION {
            return Err(HistoryError::Newer {
                found,
                known: schema::VERSION,
            });
        }
        Ok(History {
            read: Arc::new(Mutex::new(read)),
            writer: Writer::none(crate::i18n::gettext(
                "another Parley is writing the history; it is read-only here",
            )),
            skipped: Arc::default(),
            _lock: None,
        })
    }

    /// Whether this Parley writes the history (else it is read-only).
    pub fn writable(&self) -> bool {
        self.writer.writes()
    }

    /// A stored conversation's own fields (`None` too when its row cannot
    /// be read).
    pub fn conversation(&self, id: &str) -> Result<Option<Stored>, HistoryError> {
        self.read(READ_DEADLINE, |conn, skips| {
            let mut stmt = conn.prepare_cached(
                "SELECT rowid, id, config, agent, title, session_id FROM conversations
                 WHERE id = ?1 AND parent IS NULL",
            )?;
            let mut rows = stmt.query(params![id])?;
            let Some(r) = rows.next()? else {
                return Ok(None);
            };
            match stored_of(r) {
                Ok(s) => Ok(Some(s)),
                Err(e) => {
                    skips.row(row_key("conversations", r), e);
                    Ok(None)
                }
            }
        })
    }

    /// The conversation of this configuration and agent that holds the
    /// agent's session `session_id`, if any.
    pub fn by_session(
        &self,
        config: &str,
        agent: &str,
        session_id: &str,
    ) -> Result<Option<String>, HistoryError> {
        self.read(READ_DEADLINE, |conn, skips| {
            let mut stmt = conn.prepare_cached(
                "SELECT rowid, id FROM conversations WHERE config = ?1 AND agent = ?2 AND session_id = ?3
                 AND parent IS NULL ORDER BY updated_at DESC",
            )?;
            let mut rows = stmt.query(params![config, agent, session_id])?;
            while let Some(r) = rows.next()? {
                match r.get(1) {
                    Ok(id) => return Ok(Some(id)),
                    Err(e) => skips.row(row_key("conversations", r), e),
                }
            }
            Ok(None)
        })
    }

    /// Where changes go (the conversations send them; the writer batches).
    pub fn writer(&self) -> &Writer {
        &self.writer
    }

    /// An agent's conversations of this configuration, newest first; a
    /// row that cannot be read is skipped (and told).
    pub fn list(
        &self,
        config: &str,
        agent: &str,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<ConversationSummary>, HistoryError> {
        self.read(READ_DEADLINE, |conn, skips| {
            let mut stmt = conn.prepare_cached(
                "SELECT c.rowid, c.id, c.agent, c.title, c.created_at, c.updated_at,
                        (SELECT count(*) FROM messages m WHERE m.conversation = c.id),
                        (SELECT m.text FROM messages m WHERE m.conversation = c.id AND m.role = 'user'
                           ORDER BY m.seq LIMIT 1),
                        c.session_id
                 FROM conversations c WHERE c.config = ?1 AND c.agent = ?2 AND c.parent IS NULL
                 ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ?3 OFFSET ?4",
            )?;
            let mut rows = stmt.query(params![config, agent, limit as i64, offset as i64])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                match summary_of(r) {
                    Ok(s) => out.push(s),
                    Err(e) => skips.row(row_key("conversations", r), e),
                }
            }
            Ok(out)
        })
    }

    /// A conversation's messages, in order, as the chat model has them. A
    /// message whose fields cannot be read keeps its parts (its fields are
    /// then the row's own: id, role, done); a part that cannot be read is
    /// left out; both are told.
    pub fn messages(&self, conversation: &str) -> Result<Vec<Message>, HistoryError> {
        self.read(READ_DEADLINE, |conn, skips| {
            // One pass over the messages and their parts, in order. A part's
            // text of a message a crash left unfinished also has what was
            // streamed to it and not yet written whole.
            let mut stmt = conn.prepare_cached(
                "SELECT m.rowid, m.meta, m.interrupted, p.kind,
                        CASE WHEN m.done = 0 OR m.interrupted = 1 THEN
                            p.text || coalesce((SELECT group_concat(c.text, '') FROM
                                (SELECT text FROM part_chunks WHERE message = p.message AND idx = p.idx ORDER BY seq) c), '')
                        ELSE p.text END,
                        p.json, m.id, m.role, m.done, p.idx
                 FROM messages m LEFT JOIN parts p ON p.message = m.rowid
                 WHERE m.conversation = ?1 ORDER BY m.seq, p.idx",
            )?;
            let mut rows = stmt.query(params![conversation])?;
            let mut out: Vec<Message> = Vec::new();
            let mut current: Option<(i64, Option<Message>)> = None;
            // The conversation's agent and start, for a message whose fields
            // cannot be read (asked once, when one is found).
            let mut owner: Option<(String, Option<String>)> = None;
            while let Some(r) = rows.next()? {
                let rowid: i64 = r.get(0)?;
                if current.as_ref().is_none_or(|(id, _)| *id != rowid) {
                    if let Some((_, Some(m))) = current.take() {
                        out.push(m);
                    }
                    let key = format!("messages:{rowid}");
                    let meta = r
                        .get::<_, String>(1)
                        .map_err(|e| e.to_string())
                        .and_then(|meta| serde_json::from_str::<Message>(&meta).map_err(|e| e.to_string()));
                    let m = match meta {
                        Ok(m) => Some(m),
                        Err(why) => match r.get::<_, String>(6) {
                            Ok(id) => {
                                skips.row(key, why);
                                let (agent, created_at) =
                                    owner.get_or_insert_with(|| conversation_owner(conn, conversation));
                                Some(bare_message(id, agent, created_at.as_deref(), r))
                            }
                            Err(e) => {
                                skips.row(key, e);
                                None
                            }
                        },
                    };
                    let interrupted = r.get::<_, bool>(2).unwrap_or(false);
                    let m = m.map(|mut m| {
                        if interrupted {
                            m.done = true;
                            m.error.get_or_insert_with(|| INTERRUPTED.to_owned());
                        }
                        m
                    });
                    current = Some((rowid, m));
                }
                let Some((_, Some(m))) = current.as_mut() else {
                    continue;
                };
                match read_part(r) {
                    Ok(Some(part)) => m.parts.push(part),
                    Ok(None) => {}
                    Err(why) => {
                        let idx = r.get::<_, i64>(9).unwrap_or(-1);
                        skips.row(format!("parts:{rowid}:{idx}"), why);
                    }
                }
            }
            if let Some((_, Some(m))) = current.take() {
                out.push(m);
            }
            Ok(out)
        })
    }

    /// The subagents' threads kept with conversation `parent`, in the
    /// order they were announced: each one's row id and what it was. A
    /// row that cannot be read is skipped (and told).
    pub fn subagents(
        &self,
        parent: &str,
    ) -> Result<Vec<(String, crate::core::types::subagent::Subagent)>, HistoryError> {
        self.read(READ_DEADLINE, |conn, skips| {
            let mut stmt = conn.prepare_cached(
                "SELECT rowid, id, subagent FROM conversations WHERE parent = ?1 ORDER BY rowid",
            )?;
            let mut rows = stmt.query(params![parent])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                let read = r.get::<_, String>(1).map_err(|e| e.to_string()).and_then(|id| {
                    let json: String = r.get(2).map_err(|e| e.to_string())?;
                    serde_json::from_str(&json)
                        .map(|s| (id, s))
                        .map_err(|e| e.to_string())
                });
                match read {
                    Ok(s) => out.push(s),
                    Err(e) => skips.row(row_key("conversations", r), e),
                }
            }
            Ok(out)
        })
    }

    /// Full-text search across this configuration's conversations, best
    /// first. `query` is taken as words (each a prefix), not FTS syntax.
    pub fn search(&self, config: &str, query: &str, limit: usize) -> Result<Vec<Hit>, HistoryError> {
        let words = search_terms(query)?;
        if words.is_empty() {
            return Ok(Vec::new());
        }
        self.read(SEARCH_DEADLINE, |conn, skips| {
            run_search(conn, skips, &words, config, limit)
        })
    }

    /// Calls `f` with the number of rows a read skips, or keeps only in
    /// part, because they cannot be read: each row once while this history
    /// is open.
    pub fn on_skipped(&self, f: SkipListener) {
        lock(&self.skipped).listener = Some(f);
    }

    /// How many rows reads skipped (or kept only in part) so far.
    pub fn skipped(&self) -> usize {
        lock(&self.skipped).rows.len()
    }

    /// Runs `f` on the read connection, which List, Open, Export and Search
    /// share, within `limit`: no query holds the others up for longer. The
    /// rows `f` skipped are told after.
    fn read<T>(
        &self,
        limit: std::time::Duration,
        f: impl FnOnce(&Connection, &mut Skips) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        let mut skips = Skips::default();
        let result = {
            let conn = lock(&self.read);
            within(&conn, limit, || f(&conn, &mut skips))
        };
        if !skips.0.is_empty() {
            self.tell_skipped(skips);
        }
        result
    }

    /// Logs the rows not skipped before, and tells how many there were.
    fn tell_skipped(&self, skips: Skips) {
        let mut s = lock(&self.skipped);
        let mut new = 0;
        for (key, why) in skips.0 {
            if s.rows.insert(key.clone()) {
                tracing::warn!(row = %key, why = %why, "history: a row that cannot be read was skipped");
                new += 1;
            }
        }
        if new > 0 {
            if let Some(tell) = &s.listener {
                tell(new);
            }
        }
    }
}

fn run_search(
    conn: &Connection,
    skips: &mut Skips,
    words: &[String],
    config: &str,
    limit: usize,
) -> Result<Vec<Hit>, HistoryError> {
    let mut stmt = conn.prepare_cached(
        "SELECT m.rowid, c.id, c.agent, m.id,
                    snippet(messages_fts, 0, char(2), char(3), '…', 16), c.title,
                    (SELECT f.text FROM messages f WHERE f.conversation = c.id AND f.role = 'user'
                       ORDER BY f.seq LIMIT 1)
             FROM messages_fts JOIN messages m ON m.rowid = messages_fts.rowid
             JOIN conversations own ON own.id = m.conversation
             JOIN conversations c ON c.id = coalesce(own.parent, own.id)
             WHERE messages_fts MATCH ?1 AND c.config = ?2
             ORDER BY rank LIMIT ?3",
    )?;
    let mut rows = stmt.query(params![words.join(" "), config, limit as i64])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        match hit_of(r) {
            Ok(h) => out.push(h),
            // The message found, or its conversation: named as a hit.
            Err(e) => skips.row(row_key("hits", r), e),
        }
    }
    Ok(out)
}

/// The most a search may be: each word is a prefix term, and the time
/// FTS5 takes grows with the square of their number (16,000 words took
/// 12.6 s, 200,000 never ended).
pub const SEARCH_MAX_BYTES: usize = 1_000;
pub const SEARCH_MAX_WORDS: usize = 32;
/// A search still running after this ends with an error, so that it never
/// holds List, Open and Export (which share its connection) for long.
pub const SEARCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);
/// Every other read: a conversation of 10,000 messages is read in 0.1 s.
pub const READ_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// The prefix terms of a search: its words, each once (case folded), or
/// why it is refused.
fn search_terms(query: &str) -> Result<Vec<String>, HistoryError> {
    if query.len() > SEARCH_MAX_BYTES {
        return Err(HistoryError::Query(crate::i18n::gettext_f(
            "the search is too long: at most {n} bytes",
            &[("n", &SEARCH_MAX_BYTES.to_string())],
        )));
    }
    let mut words: Vec<String> = Vec::new();
    for w in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let w = w.to_lowercase();
        if !words.contains(&w) {
            words.push(w);
        }
    }
    if words.len() > SEARCH_MAX_WORDS {
        return Err(HistoryError::Query(crate::i18n::gettext_f(
            "the search has too many words: at most {n}",
            &[("n", &SEARCH_MAX_WORDS.to_string())],
        )));
    }
    Ok(words.into_iter().map(|w| format!("\"{w}\"*")).collect())
}

/// Runs `f` on `conn` with a deadline: SQLite's progress handler ends the
/// statement (`interrupted`) once `limit` has passed, and `f`'s error says so.
fn within<T>(
    conn: &Connection,
    limit: std::time::Duration,
    f: impl FnOnce() -> Result<T, HistoryError>,
) -> Result<T, HistoryError> {
    let deadline = std::time::Instant::now() + limit;
    conn.progress_handler(10_000, Some(move || std::time::Instant::now() > deadline));
    let result = f();
    conn.progress_handler(0, None::<fn() -> bool>);
    match result {
        Err(HistoryError::Sql(e))
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) =>
        {
            Err(HistoryError::Query(crate::i18n::gettext_f(
                "the history took longer than {n} seconds to answer and was stopped",
                &[("n", &limit.as_secs().max(1).to_string())],
            )))
        }
        other => other,
    }
}

/// Takes `PATH.lock` for this process, or `None` if another holds it.
fn take_lock(path: &Path) -> Result<Option<std::fs::File>, HistoryError> {
    use std::os::fd::AsRawFd;
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(name))?;
    // SAFETY: flock on a descriptor this function owns.
    let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if taken {
        return Ok(Some(file));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(e.into())
    }
}

/// The `error` of a message a crash left unfinished.
pub const INTERRUPTED: &str = "interrupted";

#[cfg(test)]
mod tests;
