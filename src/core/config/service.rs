//! `ConfigService`: the configuration file Parley runs: reading (or
//! creating) it, validating, saving atomically, watching it for changes,
//! edits that keep comments, opening another file, and the recent files.
//!
//! It imports no service above it: what a valid configuration changes
//! (agents, rules, limits) and what opening another file stops are the
//! [`Hooks`] that `Core` gives it.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::model::{Channel, Config, Theme};
use super::store::{self, Source};
use super::validate::{self, Problem};
use super::watch::{self as watching, Watcher};
use crate::core::events::{self, ConfigChanged, Event, EventSender};
use crate::i18n::gettext_f;

/// `ConfigService.Current()`.
#[derive(Debug, Clone, Serialize)]
pub struct Current {
    pub path: String,
    pub source: Source,
    pub created: bool,
    pub valid: bool,
    pub problems: Vec<Problem>,
    pub warnings: Vec<Problem>,
    pub theme: Theme,
    pub language: String,
    pub channels: Vec<Channel>,
    /// The permission rules in use.
    pub permissions: Vec<crate::core::config::model::PermissionRule>,
    /// The command that opens a file at a line; empty: the default.
    pub editor: String,
    #[serde(rename = "followAgent")]
    pub follow_agent: bool,
}

struct ConfigState {
    path: PathBuf,
    source: Source,
    created: bool,
    /// The bytes last read from the file (not always UTF-8: a file that is
    /// not is still read, and reported as invalid).
    text: Vec<u8>,
    problems: Vec<Problem>,
    warnings: Vec<Problem>,
    valid: bool,
    /// The last valid configuration: what runs, even while the file is invalid.
    applied: Config,
    watcher: Option<Watcher>,
}

/// Why a `ConfigService` call failed. The text is what `parley-cli`
/// answers and the window's toast shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub enum ConfigError {
    /// The file could not be read.
    Read { path: String, error: String },
    /// The file could not be written (it was valid).
    Write { path: String, error: String },
    /// Another file could not be opened.
    Open { path: String, error: String },
}

impl ConfigError {
    // In a function body, not the attribute: xgettext finds it here.
    fn text(&self) -> String {
        match self {
            ConfigError::Read { path, error } | ConfigError::Write { path, error } => {
                format!("{path}: {error}")
            }
            ConfigError::Open { path, error } => {
                gettext_f("cannot open {path}: {error}", &[("path", path), ("error", error)])
            }
        }
    }
}

impl From<ConfigError> for String {
    fn from(e: ConfigError) -> Self {
        e.to_string()
    }
}

/// What the configuration does to the rest of Parley, given by `Core`.
pub struct Hooks {
    /// A valid configuration was read: run it (agents, rules, limits).
    pub apply: Box<dyn Fn(&Config) + Send + Sync>,
    /// Whether the agent offered `key = value` at its last session in this
    /// run (for `Validate`'s warnings about agent defaults): `None` when
    /// it is not known, else why not.
    #[allow(clippy::type_complexity)]
    pub offers: Box<dyn Fn(&str, &str, &Value) -> Option<Result<(), String>> + Send + Sync>,
    /// Another file (the path) is about to be opened: stop every agent and
    /// put the conversations of the old one away.
    #[allow(clippy::type_complexity)]
    pub leave: Box<dyn Fn(PathBuf) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>,
}

struct Inner {
    state: Mutex<ConfigState>,
    events: EventSender,
    runtime: tokio::runtime::Handle,
    /// Held by `edit` from reading the file to saving it.
    edits: tokio::sync::Mutex<()>,
    hooks: Hooks,
}

/// The configuration's service; cheap to clone. Create it inside a tokio
/// runtime.
#[derive(Clone)]
pub struct ConfigService {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ConfigService {
    /// Reads (or creates) the file at `path` (the default one when `None`);
    /// an unreadable file is an error. Nothing is applied before
    /// [`Self::start`].
    pub fn new(path: Option<PathBuf>, events: EventSender, hooks: Hooks) -> Result<(Self, Vec<u8>), String> {
        let (path, source) = store::initial_path(path);
        let (bytes, created) = store::read_or_create(&path).map_err(|e| e.describe(&path))?;
        let service = ConfigService {
            inner: Arc::new(Inner {
                state: Mutex::new(ConfigState {
                    path,
                    source,
                    created,
                    text: Vec::new(),
                    problems: Vec::new(),
                    warnings: Vec::new(),
                    valid: false,
                    applied: Config::default(),
                    watcher: None,
                }),
                events,
                runtime: tokio::runtime::Handle::current(),
                edits: tokio::sync::Mutex::new(()),
                hooks,
            }),
        };
        Ok((service, bytes))
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        lock(&self.inner.state).path.clone()
    }

    /// Applies what [`Self::new`] read; with `watch`, follows the file's changes.
    pub fn start(&self, bytes: Vec<u8>, watch: bool) {
        self.load(bytes, false);
        if watch {
            let path = self.path();
            self.watch(&path);
        }
    }

    /// Stops watching the file (quitting).
    pub fn stop_watching(&self) {
        lock(&self.inner.state).watcher = None;
    }

    /// Validates and, when valid, applies `bytes` as the file's content.
    /// When not (not even UTF-8), the last valid configuration keeps running.
    fn load(&self, bytes: Vec<u8>, emit: bool) {
        let v = validate::validate_bytes(&bytes);
        let mut st = lock(&self.inner.state);
        st.text = bytes;
        st.problems = v.errors();
        st.warnings = v.warnings();
        st.valid = v.valid();
        let path = st.path.display().to_string();
        if let Some(config) = v.config {
            st.applied = config.clone();
            drop(st);
            (self.inner.hooks.apply)(&config);
        } else {
            drop(st);
        }
        if emit {
            let st = lock(&self.inner.state);
            events::emit(
                &self.inner.events,
                Event::ConfigChanged(ConfigChanged {
                    path,
                    valid: st.valid,
                    problems: st.problems.clone(),
                }),
            );
        }
    }

    fn watch(&self, path: &Path) {
        let this = self.clone();
        let watched = path.to_path_buf();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let watcher = watching::watch(path, move || {
            let _ = tx.send(());
        });
        match watcher {
            Ok(w) => lock(&self.inner.state).watcher = Some(w),
            Err(e) => tracing::warn!("cannot watch {}: {e}", path.display()),
        }
        self.inner.runtime.spawn(async move {
            while rx.recv().await.is_some() {
                // Editors save in several steps: settle, then read once.
                tokio::time::sleep(Duration::from_millis(60)).await;
                while rx.try_recv().is_ok() {}
                if lock(&this.inner.state).path != watched {
                    return; // another file was opened
                }
                this.reload();
            }
        });
    }

    /// Re-reads the file; a change is applied and reported as `config:changed`.
    pub fn reload(&self) {
        let path = lock(&self.inner.state).path.clone();
        // Bytes, not a string: a file saved as something other than UTF-8
        // must be reported as invalid, not skipped like an unreadable one.
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return, // mid-replace, or deleted: keep running
            Err(e) => {
                tracing::warn!("cannot read {}: {e}", path.display());
                return;
            }
        };
        if lock(&self.inner.state).text == bytes {
            return;
        }
        self.load(bytes, true);
    }

    /// The agents of the configuration that runs.
    pub fn applied_agents(&self) -> Vec<crate::core::config::model::AgentDef> {
        lock(&self.inner.state).applied.agents.clone()
    }

    pub fn current(&self) -> Current {
        let st = lock(&self.inner.state);
        Current {
            path: st.path.display().to_string(),
            source: st.source,
            created: st.created,
            valid: st.valid,
            problems: st.problems.clone(),
            warnings: st.warnings.clone(),
            theme: st.applied.theme,
            language: st.applied.language.clone(),
            channels: st.applied.channels.clone(),
            permissions: st.applied.permissions.clone(),
            editor: st.applied.editor.clone(),
            follow_agent: st.applied.follow_agent,
        }
    }

    /// The text of the configuration file.
    pub fn content(&self) -> Result<String, ConfigError> {
        let path = lock(&self.inner.state).path.clone();
        std::fs::read_to_string(&path).map_err(|e| ConfigError::Read {
            path: path.display().to_string(),
            error: e.to_string(),
        })
    }

    /// `Validate`: also warns of agent defaults that the agent did not offer
    /// at its last session in this run.
    pub fn validate(&self, text: &str) -> Vec<Problem> {
        validate::validate_knowing(text, &|agent, key, value| {
            (self.inner.hooks.offers)(agent, key, value)
        })
        .problems
    }

    /// Writes `text` if it is valid and applies it at once; otherwise returns
    /// its problems and writes nothing.
    pub fn save(&self, text: &str) -> Result<Vec<Problem>, ConfigError> {
        let path = lock(&self.inner.state).path.clone();
        match store::save(&path, text) {
            Ok(_) => {
                self.load(text.as_bytes().to_vec(), true);
                Ok(Vec::new())
            }
            Err(store::SaveError::Invalid(problems)) => Ok(problems),
            Err(store::SaveError::Io { path, error }) => Err(ConfigError::Write { path, error }),
        }
    }

    /// Reads the file, lets `change` edit its text, and saves the result
    /// if it is valid (else answers its first problem and writes nothing).
    /// One such change at a time (Preferences, Add Agent), so none is lost
    /// to another made meanwhile.
    pub async fn edit<T>(
        &self,
        change: impl FnOnce(&str) -> Result<(String, T), String>,
    ) -> Result<T, String> {
        let _one_at_a_time = self.inner.edits.lock().await;
        let text = self.content().map_err(String::from)?;
        let (edited, out) = change(&text)?;
        let problems = self.save(&edited).map_err(String::from)?;
        match problems.into_iter().find(|p| !p.warning) {
            Some(p) => Err(gettext_f(
                "the configuration would not be valid ({line}:{column}: {message}); nothing was saved",
                &[
                    ("line", &p.line.to_string()),
                    ("column", &p.column.to_string()),
                    ("message", &p.message),
                ],
            )),
            None => Ok(out),
        }
    }

    pub fn schema(&self) -> Value {
        validate::schema().clone()
    }

    /// Stops every agent, forgets the conversations, loads and watches
    /// `path`, and remembers it.
    pub async fn open(&self, path: &Path) -> Result<(), ConfigError> {
        let path = store::absolute(path);
        // Opened even if it is not UTF-8: then it is shown invalid, as a
        // change to the file while watched would be.
        let bytes = std::fs::read(&path).map_err(|e| ConfigError::Open {
            path: path.display().to_string(),
            error: e.to_string(),
        })?;
        // What runs for the old file stops; its conversations are put away.
        (self.inner.hooks.leave)(path.clone()).await;
        {
            let mut st = lock(&self.inner.state);
            st.watcher = None;
            st.path = path.clone();
            st.source = Source::Opened;
            st.created = false;
            st.applied = Config::default();
        }
        self.load(bytes, true);
        self.watch(&path);
        store::remember(&path);
        Ok(())
    }

    pub fn recent(&self) -> Vec<String> {
        store::recent()
    }
}
