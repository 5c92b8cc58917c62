//! Messages that wait for a sign-in, and sending them once it succeeded.

use super::state::*;

impl ChatService {
    /// The user message `id` waits (as `queued`) for a sign-in, and the
    /// agent is marked as needing one (`auth:changed`).
    pub(super) fn wait_for_sign_in(&self, agent: &str, id: &str, why: String) {
        let waiting = {
            let mut convs = lock(&self.inner.convs);
            let c = convs.entry(agent.to_owned()).or_default();
            if !c.awaiting_sign_in.iter().any(|w| w == id) {
                c.awaiting_sign_in.push(id.to_owned());
            }
            c.messages.iter_mut().rev().find(|m| m.id == id).map(|m| {
                m.queued = true;
                m.clone()
            })
        };
        if let Some(m) = waiting {
            self.emit_message(&m);
        }
        self.inner.supervisor.set_needs_sign_in(agent, Some(why));
    }

    /// The agent accepted a session or a prompt: if it was marked as
    /// needing a sign-in (signed in elsewhere, restarted, or the words
    /// misled), it is not any more, and the waiting messages go.
    pub(super) fn signed_in_after_all(&self, agent: &str) {
        if self.inner.supervisor.needs_sign_in(agent) {
            self.inner.supervisor.set_needs_sign_in(agent, None);
            self.resume_after_sign_in(agent);
        }
    }

    /// A sign-in succeeded: the messages that waited for it are sent again,
    /// in their order (after a turn under way, if any).
    pub fn resume_after_sign_in(&self, agent: &str) {
        let first = {
            let mut convs = lock(&self.inner.convs);
            let Some(c) = convs.get_mut(agent) else { return };
            let mut ids = std::mem::take(&mut c.awaiting_sign_in);
            ids.retain(|id| c.messages.iter().any(|m| m.id == *id));
            let Some((first, rest)) = ids.split_first() else {
                return;
            };
            if c.busy {
                c.queue.extend(ids.iter().cloned());
                self.emit_turn(agent, c);
                return;
            }
            c.queue.extend(rest.iter().cloned());
            c.busy = true;
            // Sent now: it moves to the end, as a queued message does.
            let Some(i) = c.messages.iter().rposition(|m| m.id == *first) else {
                return; // kept above only if it is there
            };
            let mut m = c.messages.remove(i);
            m.queued = false;
            c.messages.push(m.clone());
            self.emit_message(&m);
            self.emit_turn(agent, c);
            first.clone()
        };
        let this = self.clone();
        let agent = agent.to_owned();
        tokio::spawn(async move { this.run_turns(agent, first).await });
    }
}
