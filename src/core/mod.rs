//! Everything that runs without a display: the ACP connection, the
//! supervisor, conversations, configuration, and the services over them.
//! Nothing here imports gtk, adw or sourceview.

pub mod acp;
pub mod atomic;
pub mod auth;
pub mod channels;
pub mod chat;
pub mod checkpoints;
pub mod config;
pub mod events;
pub mod files;
pub mod history;
pub mod home;
pub mod launch;
pub mod links;
pub mod registry;
pub mod remote;
pub mod secrets;
pub mod services;
pub mod supervisor;
pub mod types;
pub mod worktrees;
