//! Parley runs coding agents that speak the Agent Client Protocol side by
//! side, in one native GNOME window.
//!
//! ```text
//!  config file ──GFileMonitor──▶ ConfigService ─┐
//!                                               ▼
//!  widgets ◀─bind── GObject models ◀─ bridge ◀─ events ◀── supervisor (tokio)
//!     │                                              ▲          │  ▲
//!     └──────────── AgentService / ChatService ──────┘   stdin/stdout (JSON-RPC)
//!                                                           agent processes
//! ```
//!
//! - [`core`]: no display needed: [`core::acp`], [`core::supervisor`],
//!   [`core::chat`], [`core::config`], [`core::events`], [`core::services`].
//! - [`ui`]: the libadwaita window over the same services.
//! - [`i18n`]: gettext helpers.

pub mod core;
pub mod i18n;
pub mod logging;
pub mod ui;
