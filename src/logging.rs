//! The tracing logger: `RUST_LOG` filters (default `warn`); GLib's
//! `G_MESSAGES_DEBUG` (e.g. `all` or `parley`) turns on Parley's debug output.

pub fn init() {
    use tracing_subscriber::EnvFilter;
    let debug = std::env::var("G_MESSAGES_DEBUG")
        .map(|v| v.split([',', ' ']).any(|d| d == "all" || d == "parley"))
        .unwrap_or(false);
    let default = if debug { "parley=debug,warn" } else { "warn" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
