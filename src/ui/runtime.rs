//! The tokio runtime the core runs on, beside the GTK main loop. The main
//! thread never waits on it: results come back as futures polled by GLib.

use std::future::Future;
use std::sync::OnceLock;

use gtk::glib;

use crate::core::services::Core;

static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

pub fn runtime() -> &'static tokio::runtime::Runtime {
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("parley-core")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the tokio runtime: {e}"))
    })
}

/// Runs `work` on the core's runtime and `done` with its result on the GTK
/// main thread.
pub fn call<T, F, D>(work: F, done: D)
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
    D: FnOnce(T) + 'static,
{
    let handle = runtime().spawn(work);
    glib::MainContext::default().spawn_local(async move {
        if let Ok(value) = handle.await {
            done(value);
        }
    });
}

/// Creates the core inside the runtime.
pub fn start_core(
    options: crate::core::services::Options,
) -> Result<(Core, crate::core::events::EventReceiver), String> {
    let _guard = runtime().enter();
    Core::new(options)
}
