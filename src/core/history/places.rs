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
    pub fn forked_from(&self, conversation: &str) -> Result<Option<ForkedFrom>, HistoryError> {
        self.read(READ_DEADLINE, |conn| {
            let json: Option<Option<String>> = conn
                .query_row(
                    "SELECT forked_from FROM conversations WHERE id = ?1",
                    params![conversation],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(json.flatten().and_then(|j| serde_json::from_str(&j).ok()))
        })
    }

    /// The draft of `conversation` ('' for the new one).
    pub fn draft(&self, config: &str, agent: &str, conversation: &str) -> Result<Draft, HistoryError> {
        self.read(READ_DEADLINE, |conn| {
            let found = conn
                .query_row(
                    "SELECT text, anchor FROM drafts WHERE config = ?1 AND agent = ?2 AND conversation = ?3",
                    params![config, agent, conversation],
                    |r| {
                        Ok(Draft {
                            text: r.get(0)?,
                            anchor: r.get(1)?,
                        })
                    },
                )
                .optional()?;
            Ok(found.unwrap_or_default())
        })
    }

    /// The conversation `agent` had open when Parley last quit, if it is
    /// still there.
    pub fn opened(&self, config: &str, agent: &str) -> Result<Option<String>, HistoryError> {
        self.read(READ_DEADLINE, |conn| {
            Ok(conn
                .query_row(
                    "SELECT o.conversation FROM open_conversations o
                     JOIN conversations c ON c.id = o.conversation
                     WHERE o.config = ?1 AND o.agent = ?2",
                    params![config, agent],
                    |r| r.get(0),
                )
                .optional()?)
        })
    }
}
