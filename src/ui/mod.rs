//! The libadwaita window over the core's services.
//!
//! - [`runtime`]: the tokio runtime the core lives on, and calling it from
//!   the GTK main thread without blocking.
//! - [`bridge`]: joins consecutive text deltas on a thread of its own, then
//!   drains the core's events once per frame into the models.
//! - [`models`]: `AgentObject`, `MessageObject` and the `RowObject`s the
//!   conversation list shows (`segments` says where text is cut).
//! - [`window`], [`widgets`], [`preferences`], [`application`].

pub mod a11y;
pub mod application;
pub mod bridge;
pub mod markdown;
pub mod models;
pub mod preferences;
pub mod runtime;
pub mod smoke;
pub mod widgets;
pub mod window;

/// The application id: meson's development profile builds `….Devel`, which
/// installs beside the release (and owns its own D-Bus name in Flatpak).
pub const APP_ID: &str = match option_env!("PARLEY_APP_ID") {
    Some(id) => id,
    None => "io.github.parley.Parley",
};

/// The GSettings schema is the same for every profile.
pub const SCHEMA_ID: &str = "io.github.parley.Parley";
