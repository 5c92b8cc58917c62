//! The end of a turn closes what the agent left open.

use super::state::*;

/// When a turn ends, no tool call of it stays open: codex-acp and
/// gemini-cli send no last status for a call whose permission was
/// refused, and an agent that is cancelled or fails may leave any call
/// `pending` or `in_progress`. Each becomes `failed`, with why as its
/// output where it has none. `current` is the turn's answer (emitted by
/// the caller); the other messages of the turn that changed are returned.
pub(super) fn close_open_tools(c: &mut Conv, current: usize, cancelled: bool) -> Vec<Message> {
    // The turn began after the last user message before its answer (the
    // queued ones a Cancel dropped come after it; one steered into the
    // turn is inside it).
    let turn_start = c.messages[..current.min(c.messages.len())]
        .iter()
        .rposition(|m| m.role == Role::User && !m.queued && !m.steered)
        .map_or(0, |i| i + 1);
    let mut changed = Vec::new();
    for (mi, m) in c.messages.iter_mut().enumerate().skip(turn_start) {
        let mut touched = false;
        for part in &mut m.parts {
            let Part::Tool(t) = part else { continue };
            if !matches!(
                t.status,
                acp::ToolCallStatus::Pending | acp::ToolCallStatus::InProgress
            ) {
                continue;
            }
            let why = if c.rejected.contains(&t.id) {
                gettext("Not run: the permission was refused.")
            } else if cancelled {
                gettext("Not finished: the turn was cancelled.")
            } else {
                gettext("Not finished: the turn ended before the agent said how it went.")
            };
            t.status = acp::ToolCallStatus::Failed;
            if t.output.is_empty() {
                t.output = why;
            } else {
                t.output = format!("{}\n{why}", t.output);
            }
            touched = true;
        }
        if touched && mi != current {
            changed.push(m.clone());
        }
    }
    changed
}
