//! GObject models: they own the application's state and apply the core's
//! events to themselves ([`AppModel::apply`]); widgets bind to them.
//!
//! - [`AppModel`]: the core and the agents, for every window, and the
//!   ACP terminals' output ([`TerminalOutputs`]).
//! - [`AgentObject`]: one agent, its log, and its facets: [`AgentState`],
//!   [`SessionControls`], [`SignIn`] and [`ConversationObject`] (its
//!   [`MessageObject`]s, shown as [`RowObject`]s, all listed by
//!   [`ConversationRows`], its [`PermissionObject`]s, and its helpers'
//!   [`SubagentObject`]s in [`SubagentThreads`]).

mod agent_object;
mod agent_state;
mod agent_status;
mod app_model;
mod conversation;
mod conversation_rows;
mod message_object;
mod permission_object;
mod props;
mod row_object;
pub mod segments;
mod session_controls;
mod sign_in;
mod steering;
mod stored;
mod subagent_threads;
mod terminal_outputs;

pub use agent_object::{disconnect_all, AgentObject, Handlers};
pub use agent_state::AgentState;
pub use agent_status::{AgentStatus, Lifecycle};
pub use app_model::AppModel;
pub use conversation::{ConversationObject, EARLIER_PAGE, MESSAGE_PAGE};
pub use conversation_rows::ConversationRows;
pub use message_object::MessageObject;
pub use permission_object::PermissionObject;
pub use row_object::{RowKind, RowObject, Stamp};
pub use session_controls::SessionControls;
pub use sign_in::SignIn;
pub use stored::ConversationAction;
pub use subagent_threads::{SubagentObject, SubagentThreads};
pub use terminal_outputs::{TerminalOutputs, TerminalView};
