//! GObject models: they own the application's state and apply the core's
//! events to themselves ([`AppModel::apply`]); widgets bind to them.
//!
//! - [`AppModel`]: the core and the agents, for every window.
//! - [`AgentObject`]: one agent, with its conversation ([`MessageObject`]s,
//!   shown as [`RowObject`]s, all listed by [`ConversationRows`]), its
//!   [`PermissionObject`]s and its log.

mod agent_object;
mod agent_status;
mod app_model;
mod conversation_rows;
mod message_object;
mod permission_object;
mod row_object;
pub mod segments;

pub use agent_object::{AgentObject, ConversationAction, EARLIER_PAGE, MESSAGE_PAGE};
pub use agent_status::{AgentStatus, Lifecycle};
pub use app_model::AppModel;
pub use conversation_rows::ConversationRows;
pub use message_object::MessageObject;
pub use permission_object::PermissionObject;
pub use row_object::{RowKind, RowObject, Stamp};
