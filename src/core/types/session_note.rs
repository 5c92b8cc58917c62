//! What one session told another (`session_message`): a part of the
//! thread it arrived on. A leaf: `message` takes it as a part.

use serde::{Deserialize, Serialize};

/// What one session told another (`session_message`): shown in the thread
/// it arrived on as a message between sessions, never as the user's or the
/// agent's own words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SessionNote {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    pub text: String,
}
