//! The user's home directory, as every layer finds it.

use std::path::{Path, PathBuf};

/// The user's home directory as GLib finds it (`g_get_home_dir`: `$HOME`,
/// else the password database's entry), or `None` where there is none:
/// GLib then says `/`, which is never taken for a home (Parley would make
/// `/.config/parley` and run agents at the root of the file system).
pub fn home() -> Option<PathBuf> {
    let home = glib::home_dir();
    (home.is_absolute() && home != Path::new("/")).then_some(home)
}

/// [`home`], for the places that only look under it (rules, the user's
/// bin directories); `/` where there is none. What Parley writes or runs
/// in goes through [`home`] and refuses without one.
pub fn home_dir() -> PathBuf {
    home().unwrap_or_else(|| PathBuf::from("/"))
}
