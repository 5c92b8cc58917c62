//! The libadwaita window over the core's services.
//!
//! - [`runtime`]: the tokio runtime the core lives on, and calling it from
//!   the GTK main thread without blocking.
//! - [`bridge`]: joins consecutive text deltas on a thread of its own, then
//!   drains the core's events once per frame into the application model.
//! - [`models`]: the state. `AppModel` (the core and its agents) routes each
//!   event to the `AgentObject` it concerns, which owns that agent's
//!   conversation (`MessageObject`s, shown as `RowObject`s), permission
//!   requests and log.
//! - [`notifier`] and [`theme`]: small listeners of model signals;
//!   [`terminals`]: the ACP terminals' output, fed to their views.
//! - [`window`] assembles views; [`widgets`] are those views, each binding
//!   to a model (`ConversationView`, `Composer`, `PermissionBanner`, …).
//!   Widgets never reach the window or the application: they act through
//!   the models and report errors with the `win.toast` action.
//! - [`preferences`], [`application`].

pub mod a11y;
pub mod announcer;
pub mod application;
pub mod bridge;
pub mod editor;
pub mod markdown;
pub mod models;
pub mod notifier;
pub mod preferences;
pub mod runtime;
pub mod settings;
pub mod smoke;
pub mod style;
pub mod theme;
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

/// This process's resident memory in KB (`VmRSS`), for the benchmarks.
pub fn resident_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}
