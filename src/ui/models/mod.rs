//! GObject models the widgets bind to; the bridge fills them.

mod agent_object;
mod message_object;
mod row_object;
pub mod segments;

pub use agent_object::AgentObject;
pub use message_object::MessageObject;
pub use row_object::{RowKind, RowObject, Stamp};
