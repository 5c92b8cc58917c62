//! What the history keeps besides messages: where a conversation was
//! forked from, each conversation's draft, and the conversation each agent
//! had open (reopened at start).

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::{History, HistoryError, READ_DEADLINE};
use crate::core::types::draft::Draft;

/// Where a conversation was forked from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    /// The conversation it was forked from.
    pub conversation: String,
    /// That conversation's title then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The message the fork was made before (omitted: after its last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

impl History {
    /// Where `conversation` was forked from (`None` too when that cannot be
    /// read: then it is told as a row skipped).
    pub fn forked_from(&self, conversation: &str) -> Result<Option<ForkedFrom>, HistoryError> {
        self.read(READ_DEADLINE, |conn, skips| {
            let found: Option<(i64, Result<Option<String>, rusqlite::Error>)> = conn
                .query_row(
                    "SELECT rowid, forked_from FROM conversations WHERE id = ?1",
                    params![conversation],
                    |r| Ok((r.get(0)?, r.get(1))),
                )
                .optional()?;
            let Some((rowid, json)) = found else {
                return Ok(None);
            };
            let key = format!("forked_from:{rowid}");
            match json {
                Ok(None) => Ok(None),
                Ok(Some(j)) => match serde_json::from_str(&j) {
                    Ok(from) => Ok(Some(from)),
                    Err(e) => {
                        skips.row(key, e);
                        Ok(None)
                    }
                },
                Err(e) => {
                    skips.row(key, e);
                    Ok(None)
                }
            }
        })
    }

    /// The draft of `conversation` ('' for the new one); an empty one when
    /// its row cannot be read (told as a row skipped).
    pub fn draft(&self, config: &str, agent: &str, conversation: &str) -> Result<Draft, HistoryError> {
        self.read(READ_DEADLINE, |conn, skips| {
            let found = conn
                .query_row(
                    "SELECT text, anchor FROM drafts WHERE config = ?1 AND agent = ?2 AND conversation = ?3",
                    params![config, agent, conversation],
                    |r| Ok(draft_of(r)),
                )
                .optional()?;
            match found {
                None => Ok(Draft::default()),
                Some(Ok(d)) => Ok(d),
                Some(Err(e)) => {
                    skips.row(format!("drafts:{config}/{agent}/{conversation}"), e);
                    Ok(Draft::default())
                }
            }
        })
    }

    /// The conversation `agent` had open when Parley last quit, if it is
    /// still there (and its row can be read).
    pub fn opened(&self, config: &str, agent: &str) -> Result<Option<String>, HistoryError> {
        self.read(READ_DEADLINE, |conn, skips| {
            let found: Option<Result<String, rusqlite::Error>> = conn
                .query_row(
                    "SELECT o.conversation FROM open_conversations o
                     JOIN conversations c ON c.id = o.conversation
                     WHERE o.config = ?1 AND o.agent = ?2",
                    params![config, agent],
                    |r| Ok(r.get(0)),
                )
                .optional()?;
            match found {
                None => Ok(None),
                Some(Ok(id)) => Ok(Some(id)),
                Some(Err(e)) => {
                    skips.row(format!("open_conversations:{config}/{agent}"), e);
                    Ok(None)
                }
            }
        })
    }
}

fn draft_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Draft> {
    Ok(Draft {
        text: r.get(0)?,
        anchor: r.get(1)?,
    })
}
