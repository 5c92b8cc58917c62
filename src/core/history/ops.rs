//! What the conversations send the history's writer: one change each
//! (`Op`). A leaf: the writer and what joins a batch both take it.

use std::sync::mpsc;

use crate::core::types::message::{Message, Part, PartKind};

/// A change to the history.
#[derive(Debug)]
pub enum Op {
    Conversation {
        id: String,
        config: String,
        agent: String,
        created_at: String,
    },
    Title {
        conversation: String,
        title: Option<String>,
    },
    Session {
        conversation: String,
        session_id: Option<String>,
    },
    /// A message added or changed as a whole (`message:updated`).
    Message {
        conversation: String,
        message: Message,
    },
    /// Part of a message changed (`message:delta`): text appended, or a
    /// whole part.
    Delta {
        conversation: String,
        message_id: String,
        index: usize,
        kind: PartKind,
        text: Option<String>,
        part: Option<Part>,
    },
    Delete {
        conversation: String,
    },
    /// A message left the conversation (`message:removed`).
    RemoveMessage {
        conversation: String,
        message_id: String,
    },
    /// Where the conversation was forked from (`ForkedFrom` as JSON).
    ForkedFrom {
        conversation: String,
        json: String,
    },
    /// A conversation's draft (`conversation` '' for the new one not yet
    /// stored); `None` (or an empty draft) removes it.
    Draft {
        config: String,
        agent: String,
        conversation: String,
        draft: Option<crate::core::types::draft::Draft>,
    },
    /// The conversation the agent has open (`None`: a new one).
    Opened {
        config: String,
        agent: String,
        conversation: Option<String>,
    },
    /// A subagent's thread (`conversation`) kept with its parent's:
    /// made if new, else what it is now (`Subagent` as JSON) replaced.
    Subagent {
        parent: String,
        conversation: String,
        json: String,
    },
    /// Answered once everything sent before it is written.
    Flush(mpsc::Sender<Result<(), String>>),
}
