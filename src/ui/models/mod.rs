//! GObject models the widgets bind to; the bridge fills them.

mod agent_object;
mod message_object;

pub use agent_object::AgentObject;
pub use message_object::MessageObject;
