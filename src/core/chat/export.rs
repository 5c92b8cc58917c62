//! `Export`: the current conversation as Markdown, its subagents' threads
//! quoted where they started (`history::export`).

use super::state::*;

impl ChatService {
    /// `Export(agent)`: the agent's current conversation as Markdown.
    pub fn export(&self, agent: &str) -> Result<String, ChatError> {
        let c = self.conversation(agent)?;
        Ok(crate::core::history::export::markdown(
            c.title.as_deref().unwrap_or_else(|| first_line(&c.messages)),
            agent,
            &c.messages,
            &c.subagents,
        ))
    }
}

/// The first line of the conversation's first user message (a title for
/// one the agent gave none).
fn first_line(messages: &[Message]) -> &str {
    messages
        .iter()
        .find(|m| m.role == Role::User)
        .and_then(|m| {
            m.parts.iter().find_map(|p| match p {
                crate::core::types::message::Part::Text { text } => text.lines().next(),
                _ => None,
            })
        })
        .unwrap_or_default()
}
