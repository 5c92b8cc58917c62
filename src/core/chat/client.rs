//! The supervisor's view of the conversations (`AgentClient`): what an
//! agent sends, handed to the chat; updates that do not decode are named.

use super::*;

/// Names what was wrong with a session update that did not decode: an
/// unknown kind, or an unknown content block type (never dropped silently).
pub(super) fn describe_bad_update(params: &RawValue, e: &serde_json::Error) -> String {
    let raw: Value = serde_json::from_str(params.get()).unwrap_or(Value::Null);
    let update = &raw["update"];
    let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("?");
    match update
        .get("content")
        .and_then(|c| c.get("type"))
        .and_then(Value::as_str)
    {
        Some(t) if !matches!(t, "text" | "image" | "audio" | "resource_link" | "resource") => {
            format!("an unknown content block type {t} in a {kind} update")
        }
        _ => format!("an unknown or malformed session update {kind} ({e})"),
    }
}

/// The supervisor's view of the conversations.
pub(super) struct ChatClient(pub(super) std::sync::Weak<ChatInner>);

impl ChatClient {
    fn chat(&self) -> Option<Chat> {
        self.0.upgrade().map(|inner| Chat { inner })
    }
}

impl AgentClient for ChatClient {
    fn notification(&self, agent: &str, method: &str, params: &RawValue) {
        let Some(chat) = self.chat() else { return };
        if method == "elicitation/complete" {
            chat.elicitation_complete(agent, params);
            return;
        }
        if method != "session/update" {
            chat.inner
                .supervisor
                .log(agent, format!("parley: ignored an unknown notification {method}"));
            return;
        }
        // The hot path: decoded once, straight from the agent's line.
        match serde_json::from_str::<acp::SessionNotification>(params.get()) {
            Ok(n) => chat.apply_update(agent, &n.session_id.0, n.update),
            Err(e) => {
                let what = describe_bad_update(params, &e);
                tracing::warn!(agent, "{what}");
                chat.inner
                    .supervisor
                    .log(agent, format!("parley: ignored {what}"));
            }
        }
    }

    fn session_update(&self, agent: &str, n: acp::SessionNotification) {
        if let Some(chat) = self.chat() {
            chat.apply_update(agent, &n.session_id.0, n.update);
        }
    }

    fn request(&self, agent: &str, method: &str, params: &RawValue, responder: Responder) {
        match self.chat() {
            Some(chat) if method == "session/request_permission" => {
                chat.permission_request(agent, params, responder)
            }
            Some(chat) if method == "elicitation/create" => {
                chat.elicitation_request(agent, params, responder)
            }
            _ => responder.respond(Err(RpcError::remote(
                crate::core::acp::connection::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            ))),
        }
    }

    fn has_session(&self, agent: &str, session_id: &str) -> bool {
        self.chat()
            .is_some_and(|chat| chat.has_session(agent, session_id))
    }

    fn disconnected(&self, agent: &str, _reason: &str) {
        if let Some(chat) = self.chat() {
            chat.disconnected(agent);
        }
    }
}
