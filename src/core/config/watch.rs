//! Watching the configuration file with `gio::FileMonitor`, on the file and
//! on its directory (editors replace files by rename). The monitors run on a
//! GLib main loop of their own thread, so the core needs no display and the
//! window's main loop never waits on them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gio::prelude::*;

pub struct Watcher {
    context: glib::MainContext,
    main_loop: glib::MainLoop,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let l = self.main_loop.clone();
        self.context.invoke(move || l.quit());
    }
}

/// Calls `on_change` (from the watcher's thread) whenever the file at `path`
/// may have changed: written in place, replaced by a rename, deleted or
/// created again. When `path` is a symlink, the file it names is watched too:
/// a dotfile manager (stow, chezmoi) changes that file, in its own directory,
/// and a monitor on the link's directory sees nothing of it.
pub fn watch(path: &Path, on_change: impl Fn() + Send + 'static) -> std::io::Result<Watcher> {
    let context = glib::MainContext::new();
    let main_loop = glib::MainLoop::new(Some(&context), false);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let mut paths: Vec<PathBuf> = vec![path.to_path_buf()];
    match crate::core::atomic::resolve(path) {
        Ok(target) if target != path => paths.push(target),
        Ok(_) => {}
        Err(e) => tracing::warn!("cannot follow the link {}: {e}", path.display()),
    }
    let (ctx, ml) = (context.clone(), main_loop.clone());
    std::thread::Builder::new()
        .name("parley-config-watch".into())
        .spawn(move || {
            let result = ctx.with_thread_default(|| {
                let on_change: Arc<dyn Fn() + Send> = Arc::new(on_change);
                let monitors = paths
                    .iter()
                    .map(|p| monitor(p, &on_change))
                    .collect::<Result<Vec<_>, String>>()?;
                let _ = ready_tx.send(Ok(()));
                ml.run();
                drop(monitors);
                Ok::<(), String>(())
            });
            match result {
                Ok(Err(e)) => {
                    let _ = ready_tx.send(Err(e));
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                }
                Ok(Ok(())) => {}
            }
        })?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(Watcher { context, main_loop }),
        Ok(Err(e)) => Err(std::io::Error::other(e)),
        Err(_) => Err(std::io::Error::other("the watcher thread ended")),
    }
}

/// Monitors on the file at `path` and on its directory (for renames onto
/// it), calling `on_change` for either.
fn monitor(path: &Path, on_change: &Arc<dyn Fn() + Send>) -> Result<[gio::FileMonitor; 2], String> {
    let file = gio::File::for_path(path);
    let name = path.file_name().map(|n| n.to_owned());
    let dir = file.parent().ok_or("no parent directory")?;
    let flags = gio::FileMonitorFlags::WATCH_MOVES;
    let dir_monitor = dir
        .monitor_directory(flags, gio::Cancellable::NONE)
        .map_err(|e| e.to_string())?;
    let file_monitor = file
        .monitor_file(flags, gio::Cancellable::NONE)
        .map_err(|e| e.to_string())?;
    dir_monitor.set_rate_limit(50);
    file_monitor.set_rate_limit(50);
    let cb = on_change.clone();
    dir_monitor.connect_changed(move |_, f, other, _| {
        let concerns = |x: Option<&gio::File>| {
            x.and_then(|x| x.basename()).map(|b| Some(b.into_os_string())) == Some(name.clone())
        };
        if concerns(Some(f)) || concerns(other) {
            cb();
        }
    });
    let cb = on_change.clone();
    file_monitor.connect_changed(move |_, _, _, _| cb());
    Ok([dir_monitor, file_monitor])
}
