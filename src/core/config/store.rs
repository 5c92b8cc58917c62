//! Where the configuration file lives, creating the default one, reading,
//! saving (valid text only, byte for byte, atomically, through symlinks),
//! and recent files.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::validate::{validate, Problem};

pub const DEFAULT_TEXT: &str = include_str!("../../../data/default-config.jsonc");
const RECENT_MAX: usize = 8;

/// `Current().source`: where the path came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Default,
    CommandLine,
    Environment,
    Opened,
}

fn xdg(var: &str, fallback: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| super::model::home_dir().join(fallback))
}

/// Parley keeps its files under the home directory, or where the XDG
/// variables say. Without either it refuses to start, saying so, rather
/// than make `/.config/parley` and `/.local/share/parley`.
pub fn check_home() -> Result<(), String> {
    if super::model::home().is_some() {
        return Ok(());
    }
    let missing: Vec<&str> = [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ]
    .into_iter()
    .filter(|v| {
        !std::env::var_os(v)
            .map(PathBuf::from)
            .is_some_and(|p| p.is_absolute())
    })
    .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(crate::i18n::gettext_f(
        "Parley cannot find a home directory: HOME is not set and the password database names none. Set HOME, or {vars}.",
        &[("vars", &missing.join(", "))],
    ))
}

pub fn default_path() -> PathBuf {
    xdg("XDG_CONFIG_HOME", ".config")
        .join("parley")
        .join("config.json")
}

/// The path to use at start: the command line's, `PARLEY_CONFIG`, or the default.
pub fn initial_path(command_line: Option<PathBuf>) -> (PathBuf, Source) {
    if let Some(p) = command_line {
        return (absolute(&p), Source::CommandLine);
    }
    if let Some(p) = std::env::var_os("PARLEY_CONFIG").filter(|p| !p.is_empty()) {
        return (absolute(Path::new(&p)), Source::Environment);
    }
    (default_path(), Source::Default)
}

pub fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Reads the file, creating it with the default text if it does not exist.
/// Returns its bytes (whether they are UTF-8 is for validation to say) and
/// whether it was created. A symlink to a missing file creates its target.
pub fn read_or_create(path: &Path) -> Result<(Vec<u8>, bool), OpenFailed> {
    match std::fs::read(path) {
        Ok(bytes) => Ok((bytes, false)),
        // Absent (or under something that is not a directory): made.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            let create = || -> std::io::Result<()> {
                let target = crate::core::atomic::resolve(path)?;
                if let Some(dir) = target.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                crate::core::atomic::write_through(&target, DEFAULT_TEXT.as_bytes())
            };
            create().map_err(OpenFailed::Creating)?;
            Ok((DEFAULT_TEXT.as_bytes().to_vec(), true))
        }
        Err(e) => Err(OpenFailed::Reading(e)),
    }
}

/// What went wrong with the configuration file at start: reading it, or,
/// where there was none, making it (a read-only home).
#[derive(Debug)]
pub enum OpenFailed {
    Reading(std::io::Error),
    Creating(std::io::Error),
}

impl OpenFailed {
    /// In words, naming the file.
    pub fn describe(&self, path: &Path) -> String {
        let path = path.display().to_string();
        match self {
            OpenFailed::Reading(e) => crate::i18n::gettext_f(
                "cannot read {path}: {error}",
                &[("path", &path), ("error", &e.to_string())],
            ),
            OpenFailed::Creating(e) => crate::i18n::gettext_f(
                "there is no configuration at {path}, and it cannot be created: {error}",
                &[("path", &path), ("error", &e.to_string())],
            ),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("the configuration has problems and was not saved")]
    Invalid(Vec<Problem>),
    #[error("{path}: {error}")]
    Io { path: String, error: String },
}

/// Writes `text` byte for byte if it is valid; otherwise writes nothing.
/// A symlink at `path` is written through and stays a link.
pub fn save(path: &Path, text: &str) -> Result<Vec<Problem>, SaveError> {
    let v = validate(text);
    if !v.valid() {
        return Err(SaveError::Invalid(v.errors()));
    }
    // Through a symlink to its target: the link (a dotfile manager's) stays.
    crate::core::atomic::write_through(path, text.as_bytes()).map_err(|e| SaveError::Io {
        path: path.display().to_string(),
        error: e.to_string(),
    })?;
    Ok(v.warnings())
}

/// A file of Parley's state (`$XDG_STATE_HOME/parley/NAME`).
pub fn state_file(name: &str) -> PathBuf {
    xdg("XDG_STATE_HOME", ".local/state").join("parley").join(name)
}

fn recent_file() -> PathBuf {
    state_file("recent.json")
}

/// The configuration files opened from the application, most recent first,
/// 8 at most; files that no longer exist are left out.
pub fn recent() -> Vec<String> {
    let list: Vec<String> = std::fs::read_to_string(recent_file())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    list.into_iter()
        .filter(|p| Path::new(p).exists())
        .take(RECENT_MAX)
        .collect()
}

pub fn remember(path: &Path) {
    let p = path.display().to_string();
    let mut list = recent();
    list.retain(|x| *x != p);
    list.insert(0, p);
    list.truncate(RECENT_MAX);
    let file = recent_file();
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(text) = serde_json::to_string_pretty(&list) {
        if let Err(e) = crate::core::atomic::write(&file, text.as_bytes()) {
            tracing::warn!("could not remember recent configurations: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_configuration_is_valid() {
        let v = validate(DEFAULT_TEXT);
        assert!(v.valid(), "{:?}", v.problems);
        let c = v.config.expect("config");
        assert_eq!(c.agents.len(), 1);
        assert_eq!(c.agents[0].name, "demo");
    }

    fn is_link(p: &Path) -> bool {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
    }

    #[test]
    fn save_writes_through_a_link_and_never_writes_invalid_text() {
        let home = tempfile::tempdir().expect("tempdir");
        let dots = tempfile::tempdir().expect("tempdir");
        let real = dots.path().join("parley.json");
        std::fs::write(&real, "{}").expect("write");
        let link = home.path().join("config.json");
        std::os::unix::fs::symlink(&real, &link).expect("link");

        assert!(matches!(
            save(&link, "{\"agents\": 1, \"agents\": []}"),
            Err(SaveError::Invalid(_))
        ));
        assert!(is_link(&link));
        assert_eq!(std::fs::read_to_string(&real).expect("read"), "{}");

        save(&link, "{\"theme\": \"dark\"}").expect("saved");
        assert!(is_link(&link), "the link stays a link");
        assert_eq!(
            std::fs::read_to_string(&real).expect("read"),
            "{\"theme\": \"dark\"}"
        );
    }

    #[test]
    fn a_link_to_a_missing_file_creates_its_target() {
        let home = tempfile::tempdir().expect("tempdir");
        let dots = tempfile::tempdir().expect("tempdir");
        let real = dots.path().join("sub/parley.json");
        let link = home.path().join("config.json");
        std::os::unix::fs::symlink(&real, &link).expect("link");
        let (bytes, created) = read_or_create(&link).expect("created");
        assert!(created);
        assert_eq!(bytes, DEFAULT_TEXT.as_bytes());
        assert!(is_link(&link));
        assert_eq!(std::fs::read(&real).expect("read"), DEFAULT_TEXT.as_bytes());
    }

    #[test]
    fn a_file_that_is_not_utf8_is_read_not_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.json");
        std::fs::write(&path, b"{\"theme\": \"\xff\"}").expect("write");
        let (bytes, created) = read_or_create(&path).expect("read");
        assert!(!created);
        assert_eq!(bytes, b"{\"theme\": \"\xff\"}");
    }

    /// Where the file cannot be made (here: its directory would be under a
    /// file; a read-only home does the same), that is what is said, not
    /// "cannot read".
    #[test]
    fn a_configuration_that_cannot_be_made_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("home"), "a file").expect("file");
        let path = dir.path().join("home/.config/parley/config.json");
        let e = read_or_create(&path).expect_err("cannot be made");
        assert!(matches!(e, OpenFailed::Creating(_)), "{e:?}");
        let said = e.describe(&path);
        assert!(
            said.starts_with("there is no configuration at") && said.contains("cannot be created"),
            "{said}"
        );
        // A directory in the file's place cannot be read.
        let dir_path = dir.path().join("adir");
        std::fs::create_dir(&dir_path).expect("dir");
        let e = read_or_create(&dir_path).expect_err("a directory");
        assert!(e.describe(&dir_path).starts_with("cannot read"), "{e:?}");
    }
}
