//! Hung turns: the silence watch (`limits.turnSilenceWarning`) and what
//! ends it.

use super::state::*;

impl ChatService {
    /// `limits.turnSilenceWarning`, applied with the configuration.
    pub fn set_turn_silence(&self, after: Option<std::time::Duration>) {
        *lock(&self.inner.silence) = after;
    }

    /// Marks the turn "not responding" (`turn:stalled`) when the agent has
    /// sent nothing for `limits.turnSilenceWarning`, while it waits on no
    /// answer of the user's. Ends with the turn.
    pub(super) fn watch_silence(&self, agent: &str, turn: &Arc<tokio::sync::Notify>) {
        let Some(warn) = *lock(&self.inner.silence) else {
            return;
        };
        let this = self.clone();
        let agent = agent.to_owned();
        let turn = Arc::downgrade(turn);
        let poll = (warn / 4).clamp(
            std::time::Duration::from_millis(50),
            std::time::Duration::from_secs(5),
        );
        tokio::spawn(async move {
            let mut seen = None;
            let mut since = std::time::Instant::now();
            loop {
                tokio::time::sleep(poll).await;
                let Some(turn) = turn.upgrade() else { return };
                // A long build in the agent's terminal is not silence either
                // (asked before the conversations' lock: never both held).
                let terminal = this.inner.supervisor.terminal_running(&agent);
                let mut convs = lock(&this.inner.convs);
                let Some(c) = convs.get_mut(&agent) else { return };
                if !c.give_up.as_ref().is_some_and(|g| Arc::ptr_eq(g, &turn)) {
                    return;
                }
                // Waiting on the user is not the agent's silence.
                let waiting_on_user = !c.permissions.is_empty() || !c.elicitations.is_empty() || terminal;
                if seen != Some(c.activity) || waiting_on_user {
                    seen = Some(c.activity);
                    since = std::time::Instant::now();
                    continue;
                }
                if !c.stalled && since.elapsed() >= warn {
                    // The turn waits on a helper at work that went silent:
                    // that helper is the one not responding.
                    let working = crate::core::types::subagent::SubagentStatus::Working;
                    if c.subagents.iter().any(|s| s.info.status == working) {
                        let silent: Vec<_> = c
                            .subagents
                            .iter_mut()
                            .filter(|s| s.info.status == working && !s.info.stalled)
                            .map(|s| {
                                s.info.stalled = true;
                                s.info.clone()
                            })
                            .collect();
                        drop(convs);
                        for subagent in silent {
                            this.emit(Event::SubagentUpdated(events::SubagentChanged {
                                agent: agent.clone(),
                                subagent,
                            }));
                        }
                        continue;
                    }
                    c.stalled = true;
                    drop(convs);
                    this.emit(Event::TurnStalled(events::TurnStalled {
                        agent: agent.clone(),
                        stalled: true,
                        silent_for: Some(since.elapsed().as_secs()),
                    }));
                }
            }
        });
    }

    /// The agent said something: a turn marked "not responding" is not any more.
    pub(super) fn heard_from(&self, agent: &str, c: &mut Conv) {
        c.activity = c.activity.wrapping_add(1);
        self.unstall(agent, c);
    }

    /// Takes the "not responding" mark off, if it was on.
    pub(super) fn unstall(&self, agent: &str, c: &mut Conv) {
        if c.stalled {
            c.stalled = false;
            self.emit(Event::TurnStalled(events::TurnStalled {
                agent: agent.to_owned(),
                stalled: false,
                silent_for: None,
            }));
        }
    }
}
