//! Where the configuration file lives, creating the default one, reading,
//! saving (valid text only, byte for byte, atomically), and recent files.

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
/// Returns the text and whether it was created.
pub fn read_or_create(path: &Path) -> std::io::Result<(String, bool)> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((text, false)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            crate::core::atomic::write(path, DEFAULT_TEXT.as_bytes())?;
            Ok((DEFAULT_TEXT.to_owned(), true))
        }
        Err(e) => Err(e),
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
pub fn save(path: &Path, text: &str) -> Result<Vec<Problem>, SaveError> {
    let v = validate(text);
    if !v.valid() {
        return Err(SaveError::Invalid(v.errors()));
    }
    crate::core::atomic::write(path, text.as_bytes()).map_err(|e| SaveError::Io {
        path: path.display().to_string(),
        error: e.to_string(),
    })?;
    Ok(v.warnings())
}

fn recent_file() -> PathBuf {
    xdg("XDG_STATE_HOME", ".local/state")
        .join("parley")
        .join("recent.json")
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
}
