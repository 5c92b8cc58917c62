//! What the turn's tool calls tell the checkpoints: the files an edit,
//! deletion or move names (or shows a diff of) are the turn's, and a
//! command (kind `execute`) makes the files changed while it runs the
//! turn's (see `core::checkpoints::attribution`).

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
            acp::ToolKind::Edit | acp::ToolKind::Delete | acp::ToolKind::Move | acp::ToolKind::Other => {
                for l in &call.locations {
                    checkpoints.note_path(agent, Path::new(&l.path));
                }
            }
            acp::ToolKind::Execute => {
                let running = matches!(
                    call.status,
                    acp::ToolCallStatus::Pending | acp::ToolCallStatus::InProgress
                );
                checkpoints.note_command(agent, &call.id, running);
            }
            _ => {}
        }
    }
}
