//! The demo agent: the ACP v1 agent that ships with Parley. No network, no
//! keys, deterministic. See `--help` for its scripted test modes.
//!
//! It lives in the library so that every Parley program can be it: the
//! `parley-demo-agent` program, and `parley --demo-agent` /
//! `parley-cli --demo-agent` for a tree where only `parley` was built
//! (`cargo run`). See `core::launch::bundled`.
//!
//! Its files, from the bottom up. Shared by all: `state` (what the agent
//! keeps), `wire` (how it writes to the client) and `help` (`--help` and the
//! slash commands). The scenarios, one family a file: `startup`,
//! `handshake`, `auth`, `controls`, `sessions`, `showcase` (the normal
//! answer), `turns`, `permissions`, `elicitation`, `session_updates`,
//! `timeline`, `steering`, `unknown_messages`, `fs_boundary`, `terminals` and `hostile_text`. On top,
//! the dispatchers: `prompt` (which keyword goes to which scenario),
//! `methods` (which ACP method goes where) and `program` (the entry points
//! and the loop reading stdin). This file only declares them.

mod auth;
mod controls;
mod disk;
mod elicitation;
mod fs_boundary;
mod handshake;
mod help;
mod hostile_text;
mod methods;
mod permissions;
mod program;
mod prompt;
mod session_updates;
mod sessions;
mod showcase;
mod startup;
mod state;
mod steering;
mod subagents;
mod terminals;
mod timeline;
mod turns;
mod unknown_messages;
mod wire;

pub use program::{main, run_if_asked, FLAG};
