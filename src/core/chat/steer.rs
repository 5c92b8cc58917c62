//! `Steer`: a message into the running turn, for agents that take one.
//! ACP has no method for it yet. Agents advertise prompt queueing under
//! their own name in `agentCapabilities._meta` (claude-agent-acp's
//! `claudeCode.promptQueueing`, qoder's `qoder.promptQueueing`) and take a
//! `session/prompt` sent during a turn into that turn; the turn then ends
//! once every prompt sent in it has been answered. Others (codex-acp 2.6)
//! advertise the `_session/steering` extension, whose request puts the
//! message into the running turn and answers at once.

use super::state::*;

/// Whether the agent takes a prompt during a turn of its session: any
/// vendor's `promptQueueing: true` in `agentCapabilities._meta`.
fn takes_prompts_mid_turn(caps: &acp::AgentCapabilities) -> bool {
    caps.meta.as_ref().is_some_and(|m| {
        m.values()
            .any(|v| v.get("promptQueueing").and_then(Value::as_bool) == Some(true))
    })
}

/// Whether the agent takes `_session/steering` (see `acp::calls::initialize`).
fn takes_steering_requests(caps: &acp::AgentCapabilities) -> bool {
    caps.meta
        .as_ref()
        .and_then(|m| m.get("steering"))
        .and_then(|s| s.get("supported"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// `_session/steering`: the message into the running turn. `Ok` once the
/// agent says it went in; its `outcome` otherwise (`promptRequired`: no
/// turn runs; `failed`), with its reason.
async fn steering_request(
    conn: &crate::core::acp::Connection,
    sid: &acp::SessionId,
    text: String,
) -> Result<(), String> {
    let params = serde_json::json!({
        "sessionId": sid.to_string(),
        "prompt": [{"type": "text", "text": text}],
        "_meta": {"steering": {"idleBehavior": "promptRequired"}},
    });
    let answer = conn
        .request("_session/steering", params)
        .await
        .map_err(|e| e.to_string())?;
    // The agent's words, shown on the message: one short line.
    let word = |k: &str| -> String {
        answer
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_control())
            .take(200)
            .collect()
    };
    let outcome = word("outcome");
    if outcome == "injected" {
        return Ok(());
    }
    let said: Vec<String> = [outcome, word("reason")]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    Err(crate::i18n::gettext_f(
        "the agent did not take it into the turn ({outcome})",
        &[("outcome", &said.join(": "))],
    ))
}

impl ChatService {
    /// Whether `Steer` can reach the agent (the window shows the button
    /// only then).
    pub fn can_steer(&self, agent: &str) -> bool {
        self.inner
            .supervisor
            .capabilities(agent)
            .is_some_and(|c| takes_prompts_mid_turn(&c) || takes_steering_requests(&c))
    }

    /// `Steer(agent, text)`: sends `text` into the running turn; the id of
    /// the user message. The agent's answer goes on in a new message after it.
    pub fn steer(&self, agent: &str, text: &str) -> Result<String, ChatError> {
        if self.inner.supervisor.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        if text.trim().is_empty() {
            return Err(ChatError::EmptyText);
        }
        if !self.can_steer(agent) {
            return Err(ChatError::NoSteering);
        }
        let id = self.next_id("m");
        let (sid, answer_id) = {
            let mut convs = lock(&self.inner.convs);
            let c = convs.get_mut(agent).ok_or(ChatError::NotAnswering)?;
            let (Some((sid, generation)), Some(current), true, false) =
                (c.session.clone(), c.current, c.prompt_sent, c.cancelling)
            else {
                return Err(ChatError::NotAnswering);
            };
            if self.inner.supervisor.connection(agent).map(|(_, g)| g) != Some(generation) {
                return Err(ChatError::NotAnswering);
            }
            // The answer so far ends here; the rest comes after the message.
            if let Some(m) = c.messages.get_mut(current) {
                m.done = true;
                let m = m.clone();
                self.emit_message(&m);
            }
            let mut message = Message::new(id.clone(), agent, Role::User);
            message.parts.push(Part::Text {
                text: text.to_owned(),
            });
            message.steered = true;
            let mut answer = Message::new(self.next_id("m"), agent, Role::Agent);
            answer.done = false;
            // Before the queued messages, which stay the conversation's last.
            let at = c
                .messages
                .iter()
                .position(|m| m.queued)
                .filter(|&q| q > current)
                .unwrap_or(c.messages.len());
            c.messages.insert(at, answer.clone());
            c.messages.insert(at, message.clone());
            c.current = Some(at + 1);
            c.steering += 1;
            self.emit_message(&message);
            self.emit_message(&answer);
            (sid, answer.id)
        };
        let this = self.clone();
        let agent = agent.to_owned();
        let text = text.to_owned();
        let steered = id.clone();
        let queueing = self
            .inner
            .supervisor
            .capabilities(&agent)
            .is_some_and(|c| takes_prompts_mid_turn(&c));
        tokio::spawn(async move {
            let answer = match this.inner.supervisor.connection(&agent) {
                Some((conn, _)) if !queueing => steering_request(&conn, &sid, text).await,
                // A steered prompt's own answer tells its tokens too.
                Some((conn, _)) => calls::prompt(&conn, &sid, vec![acp::ContentBlock::from(text)])
                    .await
                    .map(|(_, tokens)| {
                        if let Some(t) = tokens {
                            this.turn_tokens(&agent, t);
                        }
                    })
                    .map_err(|e| e.to_string()),
                None => Err(gettext("the agent stopped")),
            };
            let mut refused = None;
            let mut convs = lock(&this.inner.convs);
            if let Some(c) = convs.get_mut(&agent) {
                c.steering = c.steering.saturating_sub(1);
                c.steered.notify_waiters();
                // The user sees that it did not reach the agent.
                if let Err(why) = &answer {
                    if let Some(m) = c.messages.iter_mut().rev().find(|m| m.id == steered) {
                        m.error = Some(why.clone());
                        refused = Some(m.clone());
                    }
                }
            }
            drop(convs);
            if let Err(why) = answer {
                this.inner
                    .supervisor
                    .log(&agent, format!("parley: a steering message was refused: {why}"));
            }
            if let Some(m) = refused {
                this.emit_message(&m);
            }
            tracing::debug!(agent, answer_id, "steering answered");
        });
        Ok(id)
    }

    /// Waits until every steering prompt of the running turn is answered
    /// (or the turn is given up).
    pub(super) async fn steering_done(&self, agent: &str, give_up: &tokio::sync::Notify) {
        loop {
            let notify = {
                let convs = lock(&self.inner.convs);
                match convs.get(agent) {
                    Some(c) if c.steering > 0 => c.steered.clone(),
                    _ => return,
                }
            };
            let wait = notify.notified();
            tokio::pin!(wait);
            wait.as_mut().enable();
            if lock(&self.inner.convs).get(agent).is_none_or(|c| c.steering == 0) {
                return;
            }
            tokio::select! {
                _ = wait => {}
                _ = give_up.notified() => return,
            }
        }
    }
}
