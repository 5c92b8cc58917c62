//! Conversations: one per agent, in memory. `ChatService` is built on
//! [`ChatService`]; session updates arrive through [`AgentClient`] in the order the
//! agent sent them.

mod attachments;
mod client;
mod closing;
pub mod conversations;
mod current;
mod elicitation;
mod inbox;
mod options;
mod permissions;
mod session;
mod sign_in;
mod silence;
mod state;
mod turns;
mod updates;

pub use attachments::{check_file, AttachmentInput};
pub use conversations::Conversations;
pub use elicitation::check_content as check_form;
pub use inbox::InboxItem;
pub use state::{ChatError, ChatService, Conversation, CANCEL_GRACE, MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES};
