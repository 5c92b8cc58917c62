//! The shapes a line from the agent is decoded into: the JSON-RPC envelope
//! (`params` and `result` kept as raw text), and the two fast paths for
//! `session/update`, a whole notification decoded in one pass and a plain
//! text chunk decoded into plain structs. `connection` dispatches by them.

use agent_client_protocol_schema::v1::SessionNotification;
use serde_json::value::RawValue;
use serde_json::Value;

/// A `session/update` notification line, decoded whole in one pass.
#[derive(serde::Deserialize)]
pub(super) struct UpdateLine<'a> {
    #[serde(borrow)]
    pub(super) method: std::borrow::Cow<'a, str>,
    #[serde(default)]
    pub(super) id: Option<serde::de::IgnoredAny>,
    pub(super) params: SessionNotification,
}

/// A `session/update` line carrying a text chunk and nothing else, decoded
/// into plain structs: the protocol's own types are internally tagged
/// enums, which serde decodes by buffering every field first; for the
/// thousands of chunks of a streamed answer that was most of the core's
/// work (docs/benchmarks-history.md). Any other field (annotations, `messageId`,
/// `_meta`, an `id`) makes it fail, and the line takes the general path,
/// so nothing is lost.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TextChunkLine<'a> {
    #[allow(dead_code)]
    jsonrpc: IgnoredString,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    params: TextChunkParams<'a>,
}

/// Accepts any string without keeping it.
struct IgnoredString;

impl<'de> serde::Deserialize<'de> for IgnoredString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d).map(|_| IgnoredString)
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TextChunkParams<'a> {
    #[serde(borrow)]
    session_id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    update: TextChunkUpdate<'a>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TextChunkUpdate<'a> {
    #[serde(borrow)]
    session_update: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    content: TextChunkContent<'a>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TextChunkContent<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    text: String,
}

impl TextChunkLine<'_> {
    /// The protocol's notification, when this is one of the three chunk
    /// kinds with text content.
    pub(super) fn into_notification(self) -> Option<SessionNotification> {
        use agent_client_protocol_schema::v1 as acp;
        if self.method != "session/update" || self.params.update.content.kind != "text" {
            return None;
        }
        let chunk = acp::ContentChunk::new(acp::ContentBlock::Text(acp::TextContent::new(
            self.params.update.content.text,
        )));
        let update = match self.params.update.session_update.as_ref() {
            "agent_message_chunk" => acp::SessionUpdate::AgentMessageChunk(chunk),
            "agent_thought_chunk" => acp::SessionUpdate::AgentThoughtChunk(chunk),
            "user_message_chunk" => acp::SessionUpdate::UserMessageChunk(chunk),
            _ => return None,
        };
        Some(SessionNotification::new(
            self.params.session_id.into_owned(),
            update,
        ))
    }
}

/// The JSON-RPC envelope. `params` and `result` stay unparsed text until
/// whoever knows their type reads them: a session update is decoded once,
/// straight from the line, into the protocol's own type.
#[derive(serde::Deserialize)]
pub(super) struct Envelope<'a> {
    #[serde(default)]
    pub(super) id: Option<Value>,
    #[serde(default, borrow)]
    pub(super) method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) result: Option<&'a RawValue>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}
