//! The file's schema, its version (`PRAGMA user_version`) and migrations,
//! and what happens to a file that is not a database.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// Each entry takes the schema from its index to the next version.
const MIGRATIONS: &[&str] = &[
    // 0 → 1
    "CREATE TABLE conversations (
        id TEXT PRIMARY KEY,
        config TEXT NOT NULL,
        agent TEXT NOT NULL,
        title TEXT,
        session_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX conversations_by_agent ON conversations (config, agent, updated_at);
    CREATE TABLE messages (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        conversation TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        meta TEXT NOT NULL,
        text TEXT NOT NULL DEFAULT '',
        done INTEGER NOT NULL,
        interrupted INTEGER NOT NULL DEFAULT 0,
        UNIQUE (conversation, id)
    );
    CREATE INDEX messages_in_order ON messages (conversation, seq);
    CREATE TABLE parts (
        message INTEGER NOT NULL REFERENCES messages (rowid) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        kind TEXT NOT NULL,
        text TEXT,
        json TEXT,
        PRIMARY KEY (message, idx)
    ) WITHOUT ROWID;
    CREATE VIRTUAL TABLE messages_fts USING fts5 (text, content = 'messages', content_rowid = 'rowid');
    CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
    END;
    CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    END;
    CREATE TRIGGER messages_au AFTER UPDATE OF text ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
        INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
    END;",
    // 1 → 2: streamed text goes to rows of its own, appended, and joined
    // into its part when the message is written whole (appending to one
    // growing value rewrote all of it each time).
    "CREATE TABLE part_chunks (
        seq INTEGER PRIMARY KEY,
        message INTEGER NOT NULL REFERENCES messages (rowid) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX part_chunks_by_part ON part_chunks (message, idx, seq);",
    // 2 → 3: where a conversation was forked from; each conversation's
    // draft (the new, unsaved one's under ''); the conversation each agent
    // had open, to reopen at start.
    "ALTER TABLE conversations ADD COLUMN forked_from TEXT;
    CREATE TABLE drafts (
        config TEXT NOT NULL,
        agent TEXT NOT NULL,
        conversation TEXT NOT NULL,
        text TEXT NOT NULL,
        anchor TEXT,
        PRIMARY KEY (config, agent, conversation)
    ) WITHOUT ROWID;
    CREATE TABLE open_conversations (
        config TEXT NOT NULL,
        agent TEXT NOT NULL,
        conversation TEXT NOT NULL,
        PRIMARY KEY (config, agent)
    ) WITHOUT ROWID;",
    // 3 → 4: a subagent's thread is a conversation of its own, kept with
    // its parent (`parent`, the top conversation's id) and never listed;
    // `subagent` holds what it was (`Subagent` as JSON).
    "ALTER TABLE conversations ADD COLUMN parent TEXT;
    ALTER TABLE conversations ADD COLUMN subagent TEXT;
    CREATE INDEX conversations_by_parent ON conversations (parent);",
];

pub const VERSION: i64 = MIGRATIONS.len() as i64;

pub enum OpenError {
    /// Not a database, or it failed its integrity check.
    Corrupt,
    Newer {
        found: i64,
        known: i64,
    },
    /// A database of another program, or of no version Parley wrote.
    Foreign(String),
    Sql(rusqlite::Error),
}

/// The tables every version of Parley's history has.
const OWN_TABLES: &[&str] = &["conversations", "messages", "parts"];

/// Checks, on a read-only connection that changes nothing, that `path` is
/// Parley's history at a version this Parley knows, or empty, or absent;
/// and that a link there leads to such a file. Only then may
/// [`open_checked`] write (WAL, migrations).
pub fn check_untouched(path: &Path) -> Result<(), OpenError> {
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        // Absent (a dangling link too: SQLite would create its target).
        Err(_) if link => return Err(OpenError::Foreign("a link to a file that does not exist".into())),
        Err(_) => return Ok(()),
    };
    if !meta.is_file() {
        return Err(OpenError::Foreign("not a regular file".into()));
    }
    if meta.len() == 0 {
        return Ok(());
    }
    let read = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let found: i64 = read.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let tables: Vec<String> = read
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let ours = OWN_TABLES.iter().all(|t| tables.iter().any(|n| n == t));
    match found {
        f if f < 0 => Err(OpenError::Foreign(format!("schema version {f}"))),
        // A new file that SQLite made but nothing filled yet.
        0 if tables.is_empty() && !link => Ok(()),
        0 => Err(OpenError::Foreign("another program's database".into())),
        f if f > VERSION && ours => Err(OpenError::Newer {
            found: f,
            known: VERSION,
        }),
        f if f > VERSION => Err(OpenError::Foreign(format!(
            "schema version {f}, without Parley's tables"
        ))),
        _ if ours => Ok(()),
        _ => Err(OpenError::Foreign("another program's database".into())),
    }
}

impl From<rusqlite::Error> for OpenError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
                OpenError::Corrupt
            }
            _ => OpenError::Sql(e),
        }
    }
}

/// Opens the file for writing: WAL, foreign keys, a busy timeout, the
/// schema brought up to date (each migration in its own transaction).
pub fn open_checked(path: &Path) -> Result<Connection, OpenError> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // The first statement that reads the file tells whether it is one.
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(mode, "history: WAL is not available");
    }
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
    let ok: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if ok != "ok" {
        return Err(OpenError::Corrupt);
    }
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > VERSION {
        return Err(OpenError::Newer {
            found,
            known: VERSION,
        });
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", from as i64 + 1)?;
        tx.commit()?;
    }
    Ok(conn)
}

/// Moves a file that is not a database aside (with its WAL and shared
/// memory files), to `history.sqlite3.corrupt-SECONDS`.
pub fn move_aside(path: &Path) -> std::io::Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".corrupt-{stamp}"));
    let aside = PathBuf::from(aside);
    std::fs::rename(path, &aside)?;
    for suffix in ["-wal", "-shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(side));
    }
    Ok(aside)
}
