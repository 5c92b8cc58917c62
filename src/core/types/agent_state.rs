//! An agent's state, as the spec names it and as events carry it.

use serde::Serialize;

/// The spec's "Agent states".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Stopped,
    Starting,
    Ready,
    Busy,
    Error,
}

impl AgentState {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Stopped => "stopped",
            AgentState::Starting => "starting",
            AgentState::Ready => "ready",
            AgentState::Busy => "busy",
            AgentState::Error => "error",
        }
    }

    /// A process exists (or is being started) for the agent.
    pub fn is_running(self) -> bool {
        matches!(self, AgentState::Starting | AgentState::Ready | AgentState::Busy)
    }

    /// The spec's "Shown as" column, translated.
    pub fn shown_as(self) -> String {
        use gettextrs::gettext;
        match self {
            AgentState::Stopped => gettext("stopped"),
            AgentState::Starting => gettext("starting…"),
            AgentState::Ready => gettext("ready"),
            AgentState::Busy => gettext("busy"),
            AgentState::Error => gettext("error"),
        }
    }
}
