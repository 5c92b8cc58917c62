//! The queue of messages waiting for the running turn: edit one, move it,
//! delete it, or send it now (the running turn is cancelled and it goes
//! next, the rest of the queue waiting behind it); and `Retry`, which sends
//! the last prompt again.

use super::state::*;

/// Runs `change` on the messages, then finds the answer being streamed
/// again by its id (its index may have moved).
pub(super) fn keeping_current(c: &mut Conv, change: impl FnOnce(&mut Conv)) {
    let id = c.current.and_then(|i| c.messages.get(i)).map(|m| m.id.clone());
    change(c);
    c.current = id.and_then(|id| c.messages.iter().rposition(|m| m.id == id));
}

/// What `EditQueued` changes in a queued message.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueEdit {
    /// The message's new text (its attachments stay).
    #[serde(default)]
    pub text: Option<String>,
    /// Its new place in the queue, 0 for next (past the end: last).
    #[serde(default)]
    pub position: Option<usize>,
    /// `true`: the message is taken out of the queue and the conversation.
    #[serde(default)]
    pub delete: bool,
}

impl ChatService {
    /// `EditQueued(agent, messageId, edit)`: the queue after the change.
    pub fn edit_queued(&self, agent: &str, id: &str, edit: QueueEdit) -> Result<Vec<String>, ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        if let Some(text) = &edit.text {
            if text.trim().is_empty() {
                return Err(ChatError::EmptyText);
            }
        }
        let mut convs = lock(&self.inner.convs);
        let c = convs
            .get_mut(agent)
            .ok_or_else(|| ChatError::NotQueued(id.to_owned()))?;
        let at = c
            .queue
            .iter()
            .position(|q| q == id)
            .ok_or_else(|| ChatError::NotQueued(id.to_owned()))?;
        if edit.delete {
            c.queue.remove(at);
            keeping_current(c, |c| {
                if let Some(i) = c.messages.iter().rposition(|m| m.id == id) {
                    c.messages.remove(i);
                }
            });
            self.emit(Event::MessageRemoved(events::MessageRemoved {
                agent: agent.to_owned(),
                message_id: id.to_owned(),
            }));
            self.emit_turn(agent, c);
            return Ok(c.queue.iter().cloned().collect());
        }
        if let Some(text) = edit.text {
            if let Some(m) = c.messages.iter_mut().rev().find(|m| m.id == id) {
                m.parts.retain(|p| !matches!(p, Part::Text { .. }));
                m.parts.insert(0, Part::Text { text });
                let m = m.clone();
                self.emit_message(&m);
            }
        }
        if let Some(position) = edit.position {
            self.move_queued(agent, c, at, position);
        }
        Ok(c.queue.iter().cloned().collect())
    }

    /// Moves the queued message at `from` to `to`, in the queue and in the
    /// conversation (queued messages are its last, in queue order).
    fn move_queued(&self, agent: &str, c: &mut Conv, from: usize, to: usize) {
        let to = to.min(c.queue.len() - 1);
        if from == to {
            return;
        }
        if let Some(id) = c.queue.remove(from) {
            c.queue.insert(to, id);
        }
        let order: Vec<String> = c.queue.iter().cloned().collect();
        keeping_current(c, |c| {
            let mut queued: Vec<Message> = Vec::new();
            c.messages.retain(|m| {
                let waits = m.queued && order.contains(&m.id);
                if waits {
                    queued.push(m.clone());
                }
                !waits
            });
            for id in &order {
                if let Some(i) = queued.iter().position(|m| &m.id == id) {
                    c.messages.push(queued.swap_remove(i));
                }
            }
        });
        self.emit(Event::QueueChanged(events::QueueChanged {
            agent: agent.to_owned(),
            queue: order,
        }));
    }

    /// `SendNow(agent, messageId)`: the queued message goes next, and the
    /// running turn is cancelled (as `Cancel`, but the queue stays).
    pub fn send_now(&self, agent: &str, id: &str) -> Result<(), ChatError> {
        let edit = QueueEdit {
            position: Some(0),
            ..QueueEdit::default()
        };
        self.edit_queued(agent, id, edit)?;
        // The turn that ran may have ended meanwhile and this one begun:
        // it is not the one to cancel.
        let still_waits = lock(&self.inner.convs)
            .get(agent)
            .is_some_and(|c| c.queue.front().is_some_and(|q| q == id));
        if !still_waits {
            return Ok(());
        }
        self.cancel_turn(agent, true)
    }

    /// `Retry(agent)`: sends the last prompt of the open conversation again
    /// (its text and attachments), as a new message: the id of that message.
    pub fn retry(&self, agent: &str) -> Result<String, ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        let parts = {
            let convs = lock(&self.inner.convs);
            let c = convs.get(agent);
            if c.is_some_and(|c| c.busy) {
                return Err(ChatError::Busy);
            }
            c.and_then(|c| {
                c.messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User && !m.dropped() && !m.parts.is_empty())
                    .map(|m| m.parts.clone())
            })
            .ok_or(ChatError::NothingToRetry)?
        };
        self.send_parts(agent, parts)
    }
}
