//! The spec's agent states as a GObject enum, so widgets bind to a value
//! instead of comparing strings.

use gtk::glib;

use crate::core::types::AgentState;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, glib::Enum)]
#[enum_type(name = "ParleyAgentStatus")]
pub enum AgentStatus {
    #[default]
    Stopped,
    Starting,
    Ready,
    Busy,
    Error,
}

impl From<AgentState> for AgentStatus {
    fn from(s: AgentState) -> Self {
        match s {
            AgentState::Stopped => Self::Stopped,
            AgentState::Starting => Self::Starting,
            AgentState::Ready => Self::Ready,
            AgentState::Busy => Self::Busy,
            AgentState::Error => Self::Error,
        }
    }
}

impl From<AgentStatus> for AgentState {
    fn from(s: AgentStatus) -> Self {
        match s {
            AgentStatus::Stopped => Self::Stopped,
            AgentStatus::Starting => Self::Starting,
            AgentStatus::Ready => Self::Ready,
            AgentStatus::Busy => Self::Busy,
            AgentStatus::Error => Self::Error,
        }
    }
}

impl AgentStatus {
    pub fn is_running(self) -> bool {
        AgentState::from(self).is_running()
    }

    /// The spec's "Shown as", translated.
    pub fn shown_as(self) -> String {
        AgentState::from(self).shown_as()
    }
}

/// What ▶, ■ and Restart ask of the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    Start,
    Stop,
    Restart,
}
