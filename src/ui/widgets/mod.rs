//! The window's widgets; each `x.rs` beside its `x.ui` template.

pub mod agent_row;
pub mod config_editor;
pub mod diff;
pub mod logs;
pub mod message_row;
pub mod slash_completion;

pub use agent_row::AgentRow;
pub use message_row::MessageRow;
