//! What the history's reads make of a row: a conversation's summary, a
//! stored conversation, a search hit, a message whose fields cannot be
//! read, a part; and the rows a read skipped. A leaf: it imports nothing
//! of the history's other files.

use rusqlite::{params, Connection};
use serde::Serialize;

use crate::core::types::message::{Message, Part, Role};

/// One conversation in a list, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub id: String,
    pub agent: String,
    /// The agent's title, else the first user message's first line.
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
    pub messages: u64,
    /// The agent's session, to resume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// A session the agent listed (`session/list`) that Parley has not
    /// stored: opening it loads it from the agent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
}

/// A search hit: the message and its text around the match, the matching
/// words between `\u{2}` and `\u{3}` (the window turns them into markup).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub conversation: String,
    pub agent: String,
    pub message_id: String,
    /// The conversation's title (as in the list).
    pub title: String,
    pub snippet: String,
}

/// A stored conversation's own fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub id: String,
    pub config: String,
    pub agent: String,
    pub title: Option<String>,
    pub session_id: Option<String>,
}

/// The rows one read skipped (or kept in part): a key naming each (its
/// table and rowid), and why.
#[derive(Default)]
pub(super) struct Skips(pub(super) Vec<(String, String)>);

impl Skips {
    pub(super) fn row(&mut self, key: String, why: impl std::fmt::Display) {
        self.0.push((key, why.to_string()));
    }
}

/// A row of `History::conversation`.
pub(super) fn stored_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Stored> {
    Ok(Stored {
        id: r.get(1)?,
        config: r.get(2)?,
        agent: r.get(3)?,
        title: r.get(4)?,
        session_id: r.get(5)?,
    })
}

/// A row of `History::list`.
pub(super) fn summary_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<ConversationSummary> {
    Ok(ConversationSummary {
        id: r.get(1)?,
        agent: r.get(2)?,
        title: title_of(r.get(3)?, r.get(7)?),
        created_at: r.get(4)?,
        updated_at: r.get(5)?,
        messages: r.get::<_, i64>(6)? as u64,
        session_id: r.get(8)?,
        external: false,
    })
}

/// A row of `run_search`.
pub(super) fn hit_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Hit> {
    Ok(Hit {
        conversation: r.get(1)?,
        agent: r.get(2)?,
        message_id: r.get(3)?,
        title: title_of(r.get(5)?, r.get(6)?),
        snippet: r.get(4)?,
    })
}

/// Names row `r` of `table` by its rowid (the query's first column).
pub(super) fn row_key(table: &str, r: &rusqlite::Row<'_>) -> String {
    match r.get::<_, i64>(0) {
        Ok(rowid) => format!("{table}:{rowid}"),
        Err(_) => format!("{table}:?"),
    }
}

/// The agent and start of `conversation`, as far as they can be read.
pub(super) fn conversation_owner(conn: &Connection, conversation: &str) -> (String, Option<String>) {
    conn.query_row(
        "SELECT agent, created_at FROM conversations WHERE id = ?1",
        params![conversation],
        |r| {
            Ok((
                r.get::<_, String>(0).unwrap_or_default(),
                r.get::<_, String>(1).ok(),
            ))
        },
    )
    .unwrap_or_default()
}

/// A message whose fields (`meta`) cannot be read: what its row says of
/// it (id, role, whether it is done), to carry its parts.
pub(super) fn bare_message(
    id: String,
    agent: &str,
    created_at: Option<&str>,
    r: &rusqlite::Row<'_>,
) -> Message {
    let role = r
        .get::<_, String>(7)
        .ok()
        .and_then(|role| serde_json::from_value::<Role>(serde_json::Value::String(role)).ok())
        .unwrap_or(Role::Agent);
    let mut m = Message::new(id, agent, role);
    if let Some(at) = created_at {
        m.created_at = at.to_owned();
    }
    m.done = r.get::<_, bool>(8).unwrap_or(true);
    m
}

/// The part on row `r` of `History::messages` (`None`: the message has
/// none), or why it cannot be read.
pub(super) fn read_part(r: &rusqlite::Row<'_>) -> Result<Option<Part>, String> {
    let text = || r.get::<_, Option<String>>(4).map(Option::unwrap_or_default);
    let kind: Option<String> = r.get(3).map_err(|e| e.to_string())?;
    Ok(match kind.as_deref() {
        None => None,
        Some("text") => Some(Part::Text {
            text: text().map_err(|e| e.to_string())?,
        }),
        Some("thought") => Some(Part::Thought {
            text: text().map_err(|e| e.to_string())?,
        }),
        Some(_) => match r.get::<_, Option<String>>(5).map_err(|e| e.to_string())? {
            None => None,
            Some(j) => Some(serde_json::from_str(&j).map_err(|e| e.to_string())?),
        },
    })
}

/// A conversation's title: the agent's, else its first user message's
/// first line (80 characters at most).
pub(super) fn title_of(title: Option<String>, first: Option<String>) -> String {
    title
        .filter(|t| !t.is_empty())
        .or_else(|| first.map(|f| f.lines().next().unwrap_or_default().chars().take(80).collect()))
        .unwrap_or_default()
}
