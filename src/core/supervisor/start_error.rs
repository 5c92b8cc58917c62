//! `StartError`: why an agent could not start.

use super::hosts;

/// Why an agent could not start: the reason, and the agent's last lines on
/// standard error (for the log's context). Its text is the reason, then the
/// lines, one per line, as `AgentService.Start` answers and the agent's
/// `error` shows; the window's toast shows the reason alone.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.text())]
pub struct StartError {
    pub reason: String,
    pub last_lines: Vec<String>,
}

impl StartError {
    /// An error with no lines of the agent's.
    pub fn plain(reason: impl Into<String>) -> Self {
        StartError {
            reason: reason.into(),
            last_lines: Vec::new(),
        }
    }

    fn text(&self) -> String {
        if self.last_lines.is_empty() {
            self.reason.clone()
        } else {
            format!("{}\n{}", self.reason, self.last_lines.join("\n"))
        }
    }
}

impl From<hosts::LinkError> for StartError {
    fn from(e: hosts::LinkError) -> Self {
        StartError {
            reason: e.reason,
            last_lines: e.last_lines,
        }
    }
}

impl From<StartError> for String {
    fn from(e: StartError) -> Self {
        e.to_string()
    }
}
