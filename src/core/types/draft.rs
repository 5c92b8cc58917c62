//! A conversation's draft: what the user was writing in the composer, and
//! where the conversation was scrolled, kept across a restart or a crash.

use serde::{Deserialize, Serialize};

/// At most this many bytes of a draft are kept.
pub const MAX_DRAFT: usize = 256 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    /// The composer's text ("" for none).
    pub text: String,
    /// The id of the message at the top of the view, where the user had
    /// scrolled to (omitted at the end of the conversation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<String>,
}

impl Draft {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.anchor.is_none()
    }

    /// The draft as kept: cut at `MAX_DRAFT` on a character boundary, the
    /// anchor an id of at most 64 characters.
    pub fn bounded(mut self) -> Self {
        if self.text.len() > MAX_DRAFT {
            let mut end = MAX_DRAFT;
            while !self.text.is_char_boundary(end) {
                end -= 1;
            }
            self.text.truncate(end);
        }
        self.anchor = self
            .anchor
            .filter(|a| !a.is_empty() && a.len() <= 64 && a.chars().all(|c| c.is_ascii_graphic()));
        self
    }
}
