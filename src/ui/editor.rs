//! Follow the agent: a file a tool call names opens in the user's editor
//! at its line. The configuration's `editor` is a command with `{file}` and
//! `{line}` (`gnome-text-editor +{line} {file}`, `code -g {file}:{line}`);
//! without one, the desktop's default application opens the file. With
//! `followAgent`, each file an agent's tool call names opens as it comes
//! (once per tool call and file).

use std::cell::RefCell;
use std::collections::HashSet;

use gtk::gio;
use gtk::prelude::FileExt;

use crate::core::types::message::{Location, ToolCall};

#[derive(Default)]
struct Settings {
    command: String,
    follow: bool,
    /// (tool call id, path) already opened by following.
    followed: HashSet<(String, String)>,
}

thread_local! {
    static SETTINGS: RefCell<Settings> = RefCell::new(Settings::default());
}

/// Takes the configuration's `editor` and `followAgent`.
pub fn configure(command: &str, follow: bool) {
    SETTINGS.with(|s| {
        let mut s = s.borrow_mut();
        s.command = command.to_owned();
        s.follow = follow;
    });
}

/// The command's words with `{file}` and `{line}` filled in (a missing line
/// is 1). Words are split at spaces; a word may be quoted with `"`.
pub fn command_line(command: &str, file: &str, line: Option<u32>) -> Vec<String> {
    let line = line.unwrap_or(1).max(1).to_string();
    let mut words = Vec::new();
    let (mut word, mut quoted, mut any) = (String::new(), false, false);
    for c in command.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
        .into_iter()
        .map(|w| w.replace("{file}", file).replace("{line}", &line))
        .collect()
}

/// Opens `location` in the configured editor (or the default application);
/// `fail` gets the reason when it could not be opened.
pub fn open(location: &Location, fail: impl Fn(String) + 'static) {
    // What an agent names goes to a program: only an absolute path (never
    // an option) of a regular file.
    let path = std::path::Path::new(&location.path);
    if !path.is_absolute() || !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        fail(crate::i18n::gettext_f(
            "{path} is not a file Parley opens",
            &[("path", &location.path)],
        ));
        return;
    }
    let command = SETTINGS.with(|s| s.borrow().command.clone());
    let words = command_line(&command, &location.path, location.line);
    if let Some((program, args)) = words.split_first() {
        let mut argv: Vec<&std::ffi::OsStr> = vec![program.as_ref()];
        argv.extend(args.iter().map(|a| std::ffi::OsStr::new(a.as_str())));
        // Not waited for: the editor lives on its own.
        if let Err(e) = gio::Subprocess::newv(&argv, gio::SubprocessFlags::NONE) {
            fail(e.to_string());
        }
        return;
    }
    let uri = gio::File::for_path(&location.path).uri();
    gio::AppInfo::launch_default_for_uri_async(
        &uri,
        None::<&gio::AppLaunchContext>,
        None::<&gio::Cancellable>,
        move |r| {
            if let Err(e) = r {
                fail(e.to_string());
            }
        },
    );
}

/// Whether `followAgent` is on.
pub fn following() -> bool {
    SETTINGS.with(|s| s.borrow().follow)
}

/// With `followAgent`, opens the files a tool call names, once each, when
/// they are below one of the agent's `roots`.
pub fn follow(call: &ToolCall, roots: &[std::path::PathBuf]) {
    let fresh: Vec<Location> = SETTINGS.with(|s| {
        let mut s = s.borrow_mut();
        if !s.follow {
            return Vec::new();
        }
        let mut fresh = Vec::new();
        for l in &call.locations {
            let inside = roots.iter().any(|r| std::path::Path::new(&l.path).starts_with(r));
            if inside && s.followed.insert((call.id.clone(), l.path.clone())) {
                fresh.push(l.clone());
            }
        }
        fresh
    });
    for l in fresh {
        let path = l.path.clone();
        open(&l, move |e| {
            tracing::info!("follow: could not open {path:?}: {e:?}")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::command_line;

    #[test]
    fn the_command_gets_the_file_and_line() {
        assert_eq!(
            command_line("gnome-text-editor +{line} {file}", "/p/a b.rs", Some(12)),
            ["gnome-text-editor", "+12", "/p/a b.rs"]
        );
        assert_eq!(
            command_line("code -g {file}:{line}", "/p/x.rs", None),
            ["code", "-g", "/p/x.rs:1"]
        );
        assert_eq!(
            command_line("\"/opt/My Editor/bin/ed\"  {file}", "/f", None),
            ["/opt/My Editor/bin/ed", "/f"]
        );
        assert!(command_line("  ", "/f", None).is_empty());
    }
}
