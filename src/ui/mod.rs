//! The libadwaita window over the core's services.
//!
//! - [`runtime`]: the tokio runtime the core lives on, and calling it from
//!   the GTK main thread without blocking.
//! - [`bridge`]: drains the core's events once per frame into the models.
//! - [`models`]: `AgentObject`, `MessageObject`.
//! - [`window`], [`widgets`], [`preferences`], [`application`].

pub mod a11y;
pub mod application;
pub mod bridge;
pub mod markdown;
pub mod models;
pub mod preferences;
pub mod runtime;
pub mod widgets;
pub mod window;

pub const APP_ID: &str = "io.github.parley.Parley";
