//! Parts of a conversation that are neither the agent's words nor its
//! tools: a session notice, a context compaction. Both are the protocol's
//! own updates (`notice`, `compaction_update`/`compaction_summary_chunk`),
//! kept with the schema's names for their closed lists.

use agent_client_protocol_schema::v1 as acp;
use serde::{Deserialize, Serialize};

/// A notice's text is cut to this many characters (the agent's, shown as is).
const MAX_NOTICE: usize = 2_000;
/// A compaction's summary is cut to this many bytes.
pub const MAX_SUMMARY: usize = 256 * 1024;

/// `notice`: fire-and-forget information for the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// `info`, `warning`, `error`, or a name the protocol does not know
    /// yet (shown as `info`).
    pub severity: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl From<&acp::Notice> for Notice {
    fn from(n: &acp::Notice) -> Self {
        let severity = match &n.severity {
            acp::NoticeSeverity::Info => "info".to_owned(),
            acp::NoticeSeverity::Warning => "warning".to_owned(),
            acp::NoticeSeverity::Error => "error".to_owned(),
            acp::NoticeSeverity::Other(s) => plain(s, 32),
            _ => "info".to_owned(),
        };
        Notice {
            severity,
            title: plain(&n.title, MAX_NOTICE),
            description: n
                .description
                .as_deref()
                .map(|d| plain(d, MAX_NOTICE))
                .filter(|d| !d.is_empty()),
        }
    }
}

/// A context compaction: the agent summarised the conversation so far to
/// free its context window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// The agent's id of the compaction, unique within the session.
    pub id: String,
    /// `in_progress`, `completed`, `failed`, `cancelled` (or a newer name).
    pub status: String,
    /// The summary the agent kept, as Markdown (may be empty).
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Compaction {
    pub fn new(id: String) -> Self {
        Compaction {
            id,
            status: "in_progress".to_owned(),
            summary: String::new(),
            error: None,
        }
    }

    /// Applies a `compaction_update` (patch semantics: an omitted field
    /// stays, `null` clears it); `text` is a content block's text.
    pub fn patch(&mut self, u: &acp::CompactionUpdate, text: impl Fn(acp::ContentBlock) -> String) {
        use agent_client_protocol_schema::MaybeUndefined as M;
        self.status = status_name(&u.status);
        match &u.summary {
            M::Value(blocks) => {
                self.summary.clear();
                for b in blocks {
                    self.append(&text(b.clone()));
                }
            }
            M::Null => self.summary.clear(),
            M::Undefined => {}
        }
        match &u.error {
            M::Value(e) => self.error = Some(plain(e, MAX_NOTICE)),
            M::Null => self.error = None,
            M::Undefined => {}
        }
    }

    /// Appends a summary block's text (`compaction_summary_chunk`).
    pub fn append(&mut self, text: &str) {
        let room = MAX_SUMMARY.saturating_sub(self.summary.len());
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.summary.push_str(&text[..end]);
    }
}

fn status_name(s: &acp::CompactionStatus) -> String {
    match s {
        acp::CompactionStatus::InProgress => "in_progress".to_owned(),
        acp::CompactionStatus::Completed => "completed".to_owned(),
        acp::CompactionStatus::Failed => "failed".to_owned(),
        acp::CompactionStatus::Cancelled => "cancelled".to_owned(),
        acp::CompactionStatus::Other(s) => plain(s, 32),
        _ => "in_progress".to_owned(),
    }
}

/// The agent's text without control characters (newlines and tabs kept),
/// at most `max` characters.
fn plain(s: &str, max: usize) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .take(max)
        .collect::<String>()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_notice_keeps_its_severity_and_loses_control_characters() {
        let n: acp::Notice = serde_json::from_value(json!({
            "severity": "warning", "title": "Rate\u{1b} limited", "description": "  "
        }))
        .expect("a notice");
        let n = Notice::from(&n);
        assert_eq!(
            (n.severity.as_str(), n.title.as_str()),
            ("warning", "Rate limited")
        );
        assert_eq!(n.description, None, "a blank description is none");
    }

    #[test]
    fn a_compaction_patch_replaces_clears_or_keeps() {
        let mut c = Compaction::new("c1".into());
        c.append("kept: ");
        let keep: acp::CompactionUpdate =
            serde_json::from_value(json!({"compactionId": "c1", "status": "completed"})).expect("update");
        c.patch(&keep, |_| String::new());
        assert_eq!((c.status.as_str(), c.summary.as_str()), ("completed", "kept: "));
        let replace: acp::CompactionUpdate = serde_json::from_value(json!({
            "compactionId": "c1", "status": "failed", "error": "too long",
            "summary": [{"type": "text", "text": "new"}]
        }))
        .expect("update");
        c.patch(&replace, |_| "new".into());
        assert_eq!(c.summary, "new");
        assert_eq!(c.error.as_deref(), Some("too long"));
        let clear: acp::CompactionUpdate = serde_json::from_value(json!({
            "compactionId": "c1", "status": "failed", "summary": null, "error": null
        }))
        .expect("update");
        c.patch(&clear, |_| String::new());
        assert_eq!((c.summary.as_str(), c.error.clone()), ("", None));
    }
}
