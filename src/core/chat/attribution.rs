//! What the turn's tool calls tell the checkpoints: the files an edit,
//! deletion or move names (or any call shows a diff of) are the turn's,
//! and a command (kind `execute`, from `in_progress` to its end) makes the
//! files changed while it runs the turn's (see `core::checkpoints::attribution`).

use std::path::Path;

use super::state::*;
use crate::core::types::message::ToolCall;

impl ChatService {
    /// Tells the checkpoints what `call` (as it stands after an update)
    /// says about the files of the agent's running turn.
    pub(super) fn note_tool(&self, agent: &str, call: &ToolCall) {
        let checkpoints = &self.inner.checkpoints;
        for d in &call.diffs {
            checkpoints.note_path(agent, Path::new(&d.path));
        }
        match call.kind {
            // `other` is what unknown tools (often reads) default to: its
            // locations do not count, its diffs do.
            acp::ToolKind::Edit | acp::ToolKind::Delete | acp::ToolKind::Move => {
                for l in &call.locations {
                    checkpoints.note_path(agent, Path::new(&l.path));
                }
            }
            acp::ToolKind::Execute => {
                // Pending may still wait for the user's permission: the
                // command runs from in_progress to its end.
                match call.status {
                    acp::ToolCallStatus::Pending => {}
                    acp::ToolCallStatus::InProgress => checkpoints.note_command(agent, &call.id, true),
                    _ => checkpoints.note_command(agent, &call.id, false),
                }
            }
            _ => {}
        }
    }
}
