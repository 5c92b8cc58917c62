//! `ChatService`: conversations, one current per agent in memory; session
//! updates arrive through the agents' `AgentClient` in the order the agent
//! sent them. The service's state is `state.rs`'s; every other file is one
//! part of the service (`impl ChatService`): turns, session and options,
//! permissions, elicitation, the silence watch, sign-in waits, stored
//! conversations, the inbox, attachments.

mod attachments;
mod attribution;
mod changes;
mod client;
mod closing;
pub mod conversations;
mod current;
mod drafts;
mod elicitation;
mod export;
mod fork;
mod inbox;
mod options;
mod permissions;
mod queue;
mod session;
mod shared_folders;
mod sign_in;
mod silence;
mod state;
mod steer;
mod subagents;
mod timeline;
mod turns;
mod unasked;
mod updates;
mod worktree;

pub use attachments::{check_file, image_mime, AttachmentInput};
pub use conversations::Conversations;
pub use elicitation::check_content as check_form;
pub use fork::Forked;
pub use inbox::InboxItem;
pub use queue::QueueEdit;
pub use state::{ChatError, ChatService, Conversation, CANCEL_GRACE, MAX_ATTACHMENTS, MAX_ATTACHMENT_BYTES};
