//! The types that events carry and every layer shares: they import nothing
//! of Parley's above them (a leaf), so the events hub, the services and the
//! history can all take them without a circle.
//!
//! - [`message`]: a conversation's messages and their parts.
//! - [`notice`]: a session notice and a context compaction, as parts.
//! - [`usage`]: what a session used: its context, cost and turns' tokens.
//! - [`tool_text`]: a tool call's output as text, and a harness's notes.
//! - [`options`]: an agent's session options (model, mode, effort …).
//! - [`auth`]: the sign-in methods an agent offers, and its sign-in status.
//! - [`gateway`]: a model gateway the user names for a `gateway` sign-in.
//! - [`draft`]: a conversation's draft and where it was scrolled.
//! - [`agent_state`]: the spec's agent states.
//! - [`problem`]: a problem found in the configuration.
//! - [`subagent`]: an agent's helper (a child session) and its thread.
//! - [`session_note`]: what one session told another.

pub mod agent_state;
pub mod auth;
pub mod draft;
pub mod gateway;
pub mod long_text;
pub mod message;
pub mod notice;
pub mod options;
pub mod problem;
pub mod session_note;
pub mod subagent;
pub mod tool_text;
pub mod usage;

pub use agent_state::AgentState;
