//! The spec's message model: messages, parts, tool calls, plans, and their
//! conversion from the protocol's types.

use agent_client_protocol_schema::v1 as acp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
    System,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub agent: String,
    pub created_at: String,
    pub role: Role,
    pub parts: Vec<Part>,
    pub done: bool,
    pub queued: bool,
    /// A user message sent into a running turn (`Steer`): the turn began
    /// before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steered: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<acp::StopReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<MessageCode>,
}

/// Why the conversation says something itself (a `system` message): the
/// spec's closed list of codes, with its names on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MessageCode {
    /// The agent could not be started or reached for a turn.
    AgentUnavailable,
    /// The agent was restarted: a new session, the beginning is forgotten.
    AgentRestarted,
    /// Something of the configuration the agent's session could not take
    /// (an MCP server's transport, a default value, additional
    /// directories): said in the message's text.
    SessionWarning,
    /// A permission rule answered a request: which rule (its number in
    /// `permissions`) and what, in the message's `error` text.
    PermissionRule,
    /// The agent did not answer a Cancel in time: the turn was ended on
    /// Parley's side (the agent may still be working).
    TurnAbandoned,
    /// Another agent works in the same folder at the same time (its text).
    SharedFolder,
}

impl Message {
    pub fn new(id: String, agent: &str, role: Role) -> Self {
        Message {
            id,
            agent: agent.to_owned(),
            created_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            role,
            parts: Vec::new(),
            done: true,
            queued: false,
            steered: false,
            stop_reason: None,
            error: None,
            code: None,
        }
    }

    /// The text of the message's text parts (a user message's prompt).
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Part {
    Text {
        text: String,
    },
    Thought {
        text: String,
    },
    Tool(ToolCall),
    /// The session's plan (`plan`), or one of several (`plan_update`:
    /// `id` names it; `markdown` when it was given as a document).
    Plan {
        entries: Vec<PlanEntry>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        markdown: Option<String>,
    },
    /// A file or image the user attached to a message.
    Attachment(Attachment),
    /// A session notice (`notice`).
    Notice(super::notice::Notice),
    /// The agent compacted its context (`compaction_update`).
    Compaction(super::notice::Compaction),
    /// A helper the agent started (`subagent_update`): its thread is shown
    /// here; what it did is the conversation's `subagents`.
    Subagent {
        #[serde(rename = "sessionId")]
        session_id: String,
    },
    /// What one session told another (`session_message`).
    #[serde(rename = "session")]
    SessionNote(super::session_note::SessionNote),
}

/// How an attachment went to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttachmentKind {
    /// A `resource_link`: the agent reads the file itself.
    Link,
    /// An embedded `resource`: the file's text went with the prompt.
    Embedded,
    /// `image` content.
    Image,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// The file name shown.
    pub name: String,
    /// A `file://` URI (or a made-up one for a pasted image).
    pub uri: String,
    pub mime_type: String,
    pub size: u64,
    pub sent_as: AttachmentKind,
    /// What goes to the agent: a file's text or an image's bytes. Shared,
    /// as messages are cloned into every event.
    #[serde(skip)]
    pub content: Option<std::sync::Arc<[u8]>>,
}

/// The spec's part kinds (`message:delta`'s `kind`), with its names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartKind {
    Text,
    Thought,
    Tool,
    Plan,
    Attachment,
    Notice,
    Compaction,
    Subagent,
    Session,
}

impl Part {
    pub fn kind(&self) -> PartKind {
        match self {
            Part::Text { .. } => PartKind::Text,
            Part::Thought { .. } => PartKind::Thought,
            Part::Tool(_) => PartKind::Tool,
            Part::Plan { .. } => PartKind::Plan,
            Part::Attachment(_) => PartKind::Attachment,
            Part::Notice(_) => PartKind::Notice,
            Part::Compaction(_) => PartKind::Compaction,
            Part::Subagent { .. } => PartKind::Subagent,
            Part::SessionNote(_) => PartKind::Session,
        }
    }
}

/// The `error` of a queued user message that Cancel dropped before it was
/// sent: the spec's value on the wire.
pub const DROPPED: &str = "cancelled";

impl Message {
    /// A queued message that Cancel dropped before it was sent.
    pub fn dropped(&self) -> bool {
        self.role == Role::User && self.error.as_deref() == Some(DROPPED)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub title: String,
    /// The tool's own name (`Read`, `shell`), where the agent gives it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The protocol's closed lists, written with the protocol's names.
    pub kind: acp::ToolKind,
    pub status: acp::ToolCallStatus,
    /// The tool's input as compact JSON ("" when none).
    pub input: String,
    pub output: String,
    pub locations: Vec<Location>,
    pub diffs: Vec<Diff>,
    /// The agent gave the call a kind, in its announcement or an update
    /// (`kind` is `other` when it never did). Permission rules read it.
    #[serde(skip)]
    pub kind_given: bool,
    /// The ACP terminals it shows (their output comes as `terminal:output`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terminals: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Location {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    pub path: String,
    pub old_text: String,
    pub new_text: String,
    pub new_file: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    pub priority: acp::PlanEntryPriority,
    pub status: acp::PlanEntryStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: acp::PermissionOptionKind,
}

impl PermissionOption {
    /// Allows, once or always.
    pub fn allows(&self) -> bool {
        matches!(
            self.kind,
            acp::PermissionOptionKind::AllowOnce | acp::PermissionOptionKind::AllowAlways
        )
    }

    /// Rejects, once or always.
    pub fn rejects(&self) -> bool {
        matches!(
            self.kind,
            acp::PermissionOptionKind::RejectOnce | acp::PermissionOptionKind::RejectAlways
        )
    }
}

pub use super::usage::{Cost, TurnTokens, Usage};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    pub name: String,
    pub description: String,
}

/// The protocol's snake_case name of a serde enum value (`in_progress`, …).
pub fn wire_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "other".into(),
    }
}

/// The kinds the spec shows; any other (a newer protocol's) is `other`.
fn tool_kind(kind: &acp::ToolKind) -> acp::ToolKind {
    use acp::ToolKind as K;
    match kind {
        K::Read | K::Edit | K::Delete | K::Move | K::Search | K::Execute | K::Think | K::Fetch => *kind,
        _ => K::Other,
    }
}

/// Text of a content block as Markdown; media are named, not shown.
/// [`block_text`], taking the block: a text chunk's text is moved, not
/// copied.
pub fn into_text(block: acp::ContentBlock) -> String {
    match block {
        acp::ContentBlock::Text(t) => t.text,
        other => block_text(&other),
    }
}

pub fn block_text(block: &acp::ContentBlock) -> String {
    match block {
        acp::ContentBlock::Text(t) => t.text.clone(),
        acp::ContentBlock::ResourceLink(l) => format!("[{}]({})", l.name, l.uri),
        acp::ContentBlock::Image(_) => "[image]".into(),
        acp::ContentBlock::Audio(_) => "[audio]".into(),
        acp::ContentBlock::Resource(_) => "[resource]".into(),
        _ => "[content]".into(),
    }
}

fn compact(v: &Option<serde_json::Value>) -> String {
    v.as_ref().map(|v| v.to_string()).unwrap_or_default()
}

pub use super::tool_text::{command_line, output_text};

fn apply_content(call: &mut ToolCall, content: &[acp::ToolCallContent]) {
    let mut output = Vec::new();
    let mut diffs = Vec::new();
    let mut terminals = Vec::new();
    let mut internal = false;
    for c in content {
        match c {
            acp::ToolCallContent::Content(c) => {
                let text = block_text(&c.content);
                // A harness's note to the model is no one's words here.
                if super::tool_text::is_internal(&text) {
                    internal = true;
                } else {
                    output.push(text);
                }
            }
            acp::ToolCallContent::Diff(d) => diffs.push(Diff {
                path: d.path.display().to_string(),
                old_text: d.old_text.clone().unwrap_or_default(),
                new_text: d.new_text.clone(),
                new_file: d.old_text.is_none(),
            }),
            acp::ToolCallContent::Terminal(t) => terminals.push(t.terminal_id.to_string()),
            // The subagent it started: its thread is shown of its own.
            acp::ToolCallContent::Session(_) => {}
            _ => output.push("[content]".into()),
        }
    }
    if internal && output.is_empty() && diffs.is_empty() && terminals.is_empty() {
        // Only internal text came: what the call showed (its task) stays.
        return;
    }
    call.output = output.join("\n");
    call.diffs = diffs;
    call.terminals = terminals;
}

fn locations(l: &[acp::ToolCallLocation]) -> Vec<Location> {
    l.iter()
        .map(|l| Location {
            path: l.path.display().to_string(),
            line: l.line,
        })
        .collect()
}

impl From<&acp::ToolCall> for ToolCall {
    fn from(t: &acp::ToolCall) -> Self {
        let mut call = ToolCall {
            id: t.tool_call_id.to_string(),
            title: t.title.clone(),
            name: tool_name(t.name.as_deref()),
            kind: tool_kind(&t.kind),
            status: t.status,
            input: compact(&t.raw_input),
            output: String::new(),
            locations: locations(&t.locations),
            diffs: Vec::new(),
            // The protocol type cannot tell an absent kind from `other`:
            // taken as not given, so only a rule that says "other" fits.
            kind_given: t.kind != acp::ToolKind::Other,
            terminals: Vec::new(),
        };
        apply_content(&mut call, &t.content);
        if call.output.is_empty() {
            call.output = t
                .raw_output
                .as_ref()
                .map(|v| call.raw_output_text(v))
                .unwrap_or_default();
        }
        call.name_command(t.raw_input.as_ref());
        call
    }
}

impl ToolCall {
    /// A tool call known only from an update (or a permission request).
    pub fn from_update(u: &acp::ToolCallUpdate) -> Self {
        let mut call = ToolCall {
            id: u.tool_call_id.to_string(),
            kind: acp::ToolKind::Other,
            status: acp::ToolCallStatus::Pending,
            ..Default::default()
        };
        call.merge(u);
        call
    }

    /// Updates merge into the call: only the fields the update carries change.
    pub fn merge(&mut self, u: &acp::ToolCallUpdate) {
        let f = &u.fields;
        if let Some(k) = &f.kind {
            self.kind = tool_kind(k);
            self.kind_given = true;
        }
        if let Some(s) = f.status {
            self.status = s;
        }
        if let Some(t) = &f.title {
            self.title = t.clone();
        }
        if f.name.is_some() {
            self.name = tool_name(f.name.as_deref());
        }
        if let Some(c) = &f.content {
            apply_content(self, c);
        }
        if let Some(l) = &f.locations {
            self.locations = locations(l);
        }
        if f.raw_input.is_some() {
            self.input = compact(&f.raw_input);
        }
        if let (Some(out), true) = (&f.raw_output, self.output.is_empty()) {
            self.output = self.raw_output_text(out);
        }
        self.name_command(f.raw_input.as_ref());
    }

    /// `rawOutput` as shown. An object Parley cannot read as text is dumped
    /// as JSON only when the call shows nothing else: beside a diff or a
    /// terminal it is the same change again, as data (qwen-code's edit
    /// holds both whole files in it).
    fn raw_output_text(&self, v: &serde_json::Value) -> String {
        let shows_more = !self.diffs.is_empty() || !self.terminals.is_empty();
        // The fields `output_text` reads as text; without one it dumps.
        let readable = [
            "formatted_output",
            "stdout",
            "stderr",
            "aggregated_output",
            "output",
        ]
        .iter()
        .any(|k| {
            v.get(k)
                .and_then(|s| s.as_str())
                .is_some_and(|s| !s.trim().is_empty())
        });
        if shows_more && v.is_object() && !readable {
            return String::new();
        }
        output_text(v)
    }

    /// A command with no title of its own, or only a generic one (codex-acp
    /// sends its commands' `rawInput` and no content): titled by its
    /// command line, as a terminal would show it.
    fn name_command(&mut self, raw_input: Option<&serde_json::Value>) {
        let title = self.title.trim();
        let generic = title.is_empty()
            || ["terminal", "run command", "shell", "exec_command", "bash"]
                .iter()
                .any(|g| title.eq_ignore_ascii_case(g));
        if !generic {
            return;
        }
        if let Some(line) = raw_input.and_then(command_line) {
            self.title = line;
        }
    }
}

/// A tool's name as shown: one line of at most 64 characters.
fn tool_name(name: Option<&str>) -> String {
    name.unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(64)
        .collect::<String>()
        .trim()
        .to_owned()
}

pub fn plan_entries(p: &acp::Plan) -> Vec<PlanEntry> {
    p.entries
        .iter()
        .map(|e| PlanEntry {
            content: e.content.clone(),
            priority: e.priority.clone(),
            status: e.status.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_output_is_shown_as_itself_not_as_json() {
        // claude-agent-acp's Edit.
        let v = json!("The file /p/notes.txt has been updated successfully. (\"x\")");
        assert_eq!(
            output_text(&v),
            "The file /p/notes.txt has been updated successfully. (\"x\")"
        );
        assert_eq!(output_text(&json!({"a": 1})), r#"{"a":1}"#);
        assert_eq!(output_text(&json!(null)), "");
    }

    #[test]
    fn a_codex_command_shows_its_command_line_and_what_it_printed() {
        let input = json!({"call_id": "call_1", "command": ["bash", "-lc", "echo hi"], "cwd": "/p",
            "parsed_cmd": [{"type": "unknown", "cmd": "echo hi"}]});
        let output = json!({"call_id": "call_1", "stdout": "hi\n", "stderr": "", "exit_code": 0,
            "formatted_output": "hi\n", "aggregated_output": "hi\n"});
        let update: acp::ToolCallUpdate = serde_json::from_value(json!({
            "toolCallId": "call_1", "kind": "execute", "status": "completed", "title": "Run command",
            "rawInput": input, "rawOutput": output}))
        .expect("an update");
        let call = ToolCall::from_update(&update);
        assert_eq!(call.title, "echo hi");
        assert_eq!(call.output, "hi\n");
        // Without formatted_output: the streams; a plain argument list.
        assert_eq!(output_text(&json!({"stdout": "a", "stderr": "b"})), "a\nb");
        assert_eq!(
            command_line(&json!({"command": ["ls", "-la"]})).as_deref(),
            Some("ls -la")
        );
        assert_eq!(
            command_line(&json!({"parsed_cmd": [{"cmd": "cat a"}, {"cmd": "wc -l"}]})).as_deref(),
            Some("cat a && wc -l")
        );
        // A title of the agent's own is kept.
        let named: acp::ToolCallUpdate = serde_json::from_value(json!({
            "toolCallId": "c2", "kind": "execute", "title": "List the files",
            "rawInput": {"command": ["ls"]}}))
        .expect("an update");
        assert_eq!(ToolCall::from_update(&named).title, "List the files");
        // codex-acp's replay of a stored session: `cmd`, and the tool's name.
        let replayed: acp::ToolCallUpdate = serde_json::from_value(json!({
            "toolCallId": "c3", "title": "exec_command", "rawInput": {"cmd": "cat notes.txt"},
            "rawOutput": "Output:\nline one\n"}))
        .expect("an update");
        let call = ToolCall::from_update(&replayed);
        assert_eq!(
            (call.title.as_str(), call.output.as_str()),
            ("cat notes.txt", "Output:\nline one\n")
        );
    }

    #[test]
    fn the_closed_lists_keep_the_spec_names_on_the_wire() {
        let mut m = Message::new("m1".into(), "a", Role::System);
        m.code = Some(MessageCode::AgentUnavailable);
        m.stop_reason = Some(acp::StopReason::MaxTurnRequests);
        let v = serde_json::to_value(&m).expect("json");
        assert_eq!(v["code"], "agent-unavailable");
        assert_eq!(v["stopReason"], "max_turn_requests");
        assert_eq!(wire_name(&MessageCode::AgentRestarted), "agent-restarted");
        let call = ToolCall {
            kind: acp::ToolKind::Execute,
            status: acp::ToolCallStatus::InProgress,
            ..Default::default()
        };
        let v = serde_json::to_value(&call).expect("json");
        assert_eq!(
            (v["kind"].as_str(), v["status"].as_str()),
            (Some("execute"), Some("in_progress"))
        );
    }
}
