//! The spec's services: `AgentService`, `ChatService`, `ConfigService`, over
//! one [`Core`]. Front ends (the window, `parley-cli`) call only these.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::core::chat::{Chat, Conversation};
use crate::core::config::model::{Channel, Config, Theme};
use crate::core::config::store::{self, Source};
use crate::core::config::validate::{self, Problem};
use crate::core::config::watch::{self as watching, Watcher};
use crate::core::events::{self, ConfigChanged, Event, EventReceiver, EventSender};
use crate::core::supervisor::{AgentInfo, Supervisor, Timings};
use crate::i18n::{gettext, gettext_f};

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

pub struct Options {
    pub config_path: Option<PathBuf>,
    pub timings: Timings,
    /// Prepended to agent commands (`flatpak-spawn --host` inside Flatpak).
    pub spawn_prefix: Vec<String>,
    /// Watch the configuration file for changes.
    pub watch: bool,
    /// Where conversations are kept (`None`: in memory only). A file
    /// another Parley writes is opened read-only.
    pub history: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            config_path: None,
            timings: Timings::from_env(),
            spawn_prefix: host_spawn_prefix(),
            watch: true,
            history: Some(crate::core::history::default_path()),
        }
    }
}

/// Inside Flatpak, agents are started on the host with `flatpak-spawn
/// --host`; outside, directly. `PARLEY_HOST_SPAWN` (a command and its
/// arguments, separated by spaces) overrides it, for tests with a stand-in.
pub fn host_spawn_prefix() -> Vec<String> {
    if let Ok(custom) = std::env::var("PARLEY_HOST_SPAWN") {
        return custom.split_whitespace().map(str::to_owned).collect();
    }
    if std::path::Path::new("/.flatpak-info").exists() {
        return ["flatpak-spawn", "--host", "--watch-bus"]
            .map(str::to_owned)
            .to_vec();
    }
    Vec::new()
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

/// Everything behind the services. Create it inside a tokio runtime.
#[derive(Clone)]
pub struct Core {
    pub supervisor: Supervisor,
    pub chat: Chat,
    config: Arc<Mutex<ConfigState>>,
    events: EventSender,
    runtime: tokio::runtime::Handle,
    /// Sign-ins under way, by agent: send to give one up (taken by the
    /// Cancel; the entry stays until the sign-in is over).
    sign_ins: Arc<Mutex<HashMap<String, Option<tokio::sync::oneshot::Sender<()>>>>>,
    /// The files under the agents' working directories, for @-mentions.
    files: Arc<crate::core::files::FileIndexes>,
    /// The ACP registry read last, and installs under way.
    pub(crate) registry: Arc<crate::core::registry::service::State>,
    /// Held by `edit_config` from reading the file to saving it.
    config_edits: Arc<tokio::sync::Mutex<()>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Core {
    /// Loads (or creates) the configuration and applies it. An unreadable
    /// file is an error; an invalid one starts with no agents and its problems.
    pub fn new(options: Options) -> Result<(Core, EventReceiver), String> {
        crate::core::supervisor::launch::probe_login_shell();
        let (tx, rx) = events::channel();
        let supervisor = Supervisor::new(tx.clone(), options.timings, options.spawn_prefix);
        let chat = Chat::new(supervisor.clone(), tx.clone());
        let (path, source) = store::initial_path(options.config_path);
        let (bytes, created) = store::read_or_create(&path).map_err(|e| e.describe(&path))?;
        let core = Core {
            supervisor,
            chat,
            config: Arc::new(Mutex::new(ConfigState {
                path: path.clone(),
                source,
                created,
                text: Vec::new(),
                problems: Vec::new(),
                warnings: Vec::new(),
                valid: false,
                applied: Config::default(),
                watcher: None,
            })),
            events: tx,
            runtime: tokio::runtime::Handle::current(),
            sign_ins: Arc::default(),
            files: Arc::default(),
            registry: Arc::default(),
            config_edits: Arc::default(),
        };
        core.supervisor.set_scope(&path.display().to_string());
        core.open_history(options.history.as_deref(), &path);
        core.load(bytes, false);
        if options.watch {
            core.watch(&path);
            core.registry_check_updates_soon();
        }
        Ok((core, rx))
    }

    /// Opens the history; what went wrong is logged and told as
    /// `history:status` (the conversations then live in memory).
    fn open_history(&self, file: Option<&Path>, config: &Path) {
        use crate::core::history::{History, OpenNotice};
        let Some(file) = file else { return };
        let history = match History::open(file) {
            Ok((h, notices)) => {
                for n in notices {
                    match n {
                        OpenNotice::MovedAside(aside) => {
                            let text = gettext_f(
                                "The history file was damaged; it was moved to {path} and a new one started",
                                &[("path", &aside.display().to_string())],
                            );
                            tracing::warn!("{text}");
                            events::emit(
                                &self.events,
                                Event::HistoryStatus(events::HistoryStatus {
                                    writable: true,
                                    error: Some(text),
                                }),
                            );
                        }
                        OpenNotice::Interrupted(n) => {
                            tracing::info!("history: {n} unfinished messages marked interrupted")
                        }
                        OpenNotice::ReadOnly => {
                            tracing::info!("history: another Parley writes it; read-only")
                        }
                    }
                }
                let events = self.events.clone();
                h.writer().on_failure(Box::new(move |error| {
                    events::emit(
                        &events,
                        Event::HistoryStatus(events::HistoryStatus {
                            writable: error.is_none(),
                            error: error.map(|e| {
                                gettext_f(
                                    "Conversations cannot be saved: {error}. They go on in memory.",
                                    &[("error", e)],
                                )
                            }),
                        }),
                    );
                }));
                Some(h)
            }
            Err(e) => {
                let text = gettext_f(
                    "The history cannot be opened: {error}. Conversations are kept in memory only.",
                    &[("error", &e.to_string())],
                );
                tracing::warn!("{text}");
                events::emit(
                    &self.events,
                    Event::HistoryStatus(events::HistoryStatus {
                        writable: false,
                        error: Some(text),
                    }),
                );
                None
            }
        };
        self.chat.set_history(history, &config.display().to_string());
    }

    pub(crate) fn sign_ins(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Option<tokio::sync::oneshot::Sender<()>>>> {
        lock(&self.sign_ins)
    }

    pub fn events(&self) -> EventSender {
        self.events.clone()
    }

    /// Validates and, when valid, applies `bytes` as the file's content.
    /// When not (not even UTF-8), the last valid configuration keeps running.
    fn load(&self, bytes: Vec<u8>, emit: bool) {
        let v = validate::validate_bytes(&bytes);
        let mut st = lock(&self.config);
        st.text = bytes;
        st.problems = v.errors();
        st.warnings = v.warnings();
        st.valid = v.valid();
        let path = st.path.display().to_string();
        if let Some(config) = v.config {
            st.applied = config.clone();
            drop(st);
            self.supervisor.set_global_mcp_servers(config.mcp_servers.clone());
            self.chat.set_permission_rules(config.permissions.clone());
            self.chat.set_turn_silence(config.limits.silence_warning());
            self.supervisor
                .apply_config(&config.agents, config.limits.clone());
        } else {
            drop(st);
        }
        if emit {
            let st = lock(&self.config);
            events::emit(
                &self.events,
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
            Ok(w) => lock(&self.config).watcher = Some(w),
            Err(e) => tracing::warn!("cannot watch {}: {e}", path.display()),
        }
        self.runtime.spawn(async move {
            while rx.recv().await.is_some() {
                // Editors save in several steps: settle, then read once.
                tokio::time::sleep(Duration::from_millis(60)).await;
                while rx.try_recv().is_ok() {}
                if lock(&this.config).path != watched {
                    return; // another file was opened
                }
                this.reload();
            }
        });
    }

    /// Re-reads the file; a change is applied and reported as `config:changed`.
    pub fn reload(&self) {
        let path = lock(&self.config).path.clone();
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
        if lock(&self.config).text == bytes {
            return;
        }
        self.load(bytes, true);
    }

    // ---- AgentService ----

    pub fn agent_list(&self) -> Vec<AgentInfo> {
        let mut list = self.supervisor.list();
        let updates = self.registry_updates();
        for info in &mut list {
            info.update_available = updates
                .iter()
                .find(|u| u.agent == info.name)
                .map(|u| u.available.clone());
        }
        list
    }

    /// `ChatService.Inbox`: what waits for the user, across agents: the
    /// conversations' requests and unseen answers, then agents that need
    /// a sign-in or are in `error`.
    pub fn inbox(&self) -> Vec<crate::core::chat::InboxItem> {
        use crate::core::chat::InboxItem;
        use crate::core::supervisor::lifecycle::AgentState;
        let mut items = self.chat.inbox_items();
        for a in self.agent_list() {
            if a.needs_sign_in {
                items.push(InboxItem {
                    kind: "sign-in",
                    agent: a.name.clone(),
                    id: None,
                    message_id: None,
                    text: gettext("sign-in needed"),
                    since: None,
                });
            }
            if a.state == AgentState::Error {
                items.push(InboxItem {
                    kind: "error",
                    agent: a.name.clone(),
                    id: None,
                    message_id: None,
                    text: a.error.clone().unwrap_or_default(),
                    since: None,
                });
            }
        }
        items
    }

    /// The agents of the configuration that runs.
    pub(crate) fn applied_agents(&self) -> Vec<crate::core::config::model::AgentDef> {
        lock(&self.config).applied.agents.clone()
    }

    // ---- ConfigService ----

    pub fn current(&self) -> Current {
        let st = lock(&self.config);
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
        }
    }

    /// The text of the configuration file.
    pub fn content(&self) -> Result<String, ConfigError> {
        let path = lock(&self.config).path.clone();
        std::fs::read_to_string(&path).map_err(|e| ConfigError::Read {
            path: path.display().to_string(),
            error: e.to_string(),
        })
    }

    /// `Validate`: also warns of agent defaults that the agent did not offer
    /// at its last session in this run.
    pub fn validate(&self, text: &str) -> Vec<Problem> {
        let chat = self.chat.clone();
        validate::validate_knowing(text, &move |agent, key, value| chat.offers(agent, key, value)).problems
    }

    /// Writes `text` if it is valid and applies it at once; otherwise returns
    /// its problems and writes nothing.
    pub fn save(&self, text: &str) -> Result<Vec<Problem>, ConfigError> {
        let path = lock(&self.config).path.clone();
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
    pub async fn edit_config<T>(
        &self,
        change: impl FnOnce(&str) -> Result<(String, T), String>,
    ) -> Result<T, String> {
        let _one_at_a_time = self.config_edits.lock().await;
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
        self.supervisor.shutdown().await;
        self.chat.forget_all();
        // The same file; this configuration's conversations apart.
        let history = self.chat.history();
        self.chat.set_history(history, &path.display().to_string());
        {
            let mut st = lock(&self.config);
            st.watcher = None;
            st.path = path.clone();
            st.source = Source::Opened;
            st.created = false;
            st.applied = Config::default();
        }
        self.supervisor.set_scope(&path.display().to_string());
        // The old file's agents go; the new file's come.
        self.supervisor.apply_config(&[], Default::default());
        self.load(bytes, true);
        self.watch(&path);
        store::remember(&path);
        Ok(())
    }

    pub fn recent(&self) -> Vec<String> {
        store::recent()
    }

    /// Quitting: every agent is stopped with the spec's sequence.
    pub async fn shutdown(&self) {
        lock(&self.config).watcher = None;
        self.supervisor.shutdown().await;
        // What the ended turns wrote is on disk, and the file is let go
        // (another Parley may write it now).
        if let Some(h) = self.chat.flush_recorded() {
            let _ = tokio::task::spawn_blocking(move || h.writer().flush()).await;
        }
        let config = lock(&self.config).path.display().to_string();
        self.chat.set_history(None, &config);
    }

    pub fn conversation(&self, agent: &str) -> Result<Conversation, crate::core::chat::ChatError> {
        self.chat.conversation(agent)
    }

    /// `ChatService.FindFiles`: files under the agent's working directory
    /// that fuzzily match `query`, best first, relative to it (the
    /// directory is walked off the async threads, and kept for 30 s).
    pub async fn find_files(&self, agent: &str, query: &str, limit: usize) -> Result<Vec<String>, String> {
        let root = self
            .supervisor
            .working_dir(agent)
            .ok_or_else(|| gettext_f("unknown agent: {name}", &[("name", agent)]))?;
        let files = self.files.clone();
        let query = query.to_owned();
        tokio::task::spawn_blocking(move || files.get(&root).search(&query, limit.clamp(1, 200)))
            .await
            .map_err(|e| e.to_string())
    }

    /// Calls a service method by its spec name (`AgentService.Start`, …),
    /// as `parley-cli serve` does.
    pub async fn call(&self, method: &str, params: &[Value]) -> Result<Value, String> {
        let s = |i: usize| -> Result<String, String> {
            params
                .get(i)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    gettext_f(
                        "{method}: argument {n} must be a string",
                        &[("method", method), ("n", &(i + 1).to_string())],
                    )
                })
        };
        let to = |v: Result<Value, serde_json::Error>| v.map_err(|e| e.to_string());
        match method {
            "AgentService.List" => to(serde_json::to_value(self.agent_list())),
            "AgentService.Start" => self
                .supervisor
                .start(&s(0)?)
                .await
                .map(|_| Value::Null)
                .map_err(String::from),
            "AgentService.Stop" => Ok(self.supervisor.stop(&s(0)?).await.map(|_| Value::Null)?),
            "AgentService.Restart" => self
                .supervisor
                .restart(&s(0)?)
                .await
                .map(|_| Value::Null)
                .map_err(String::from),
            "AgentService.Logs" => to(serde_json::to_value(self.supervisor.logs(&s(0)?)?)),
            "ChatService.Send" => {
                let attachments = attachment_inputs(params.get(2))?;
                Ok(self
                    .chat
                    .send_with(&s(0)?, &s(1)?, attachments)
                    .map(Value::String)?)
            }
            "ChatService.Prepare" => to(serde_json::to_value(self.chat.prepare(&s(0)?).await?)),
            "ChatService.Options" => {
                let agent = s(0)?;
                self.chat.conversation(&agent)?;
                to(serde_json::to_value(self.chat.options(&agent)))
            }
            "ChatService.SetOption" => {
                let value = match params.get(2) {
                    Some(v @ (Value::String(_) | Value::Bool(_))) => v.clone(),
                    _ => {
                        return Err(gettext(
                            "ChatService.SetOption: argument 3 must be a string or a boolean",
                        ))
                    }
                };
                to(serde_json::to_value(
                    self.chat.set_option(&s(0)?, &s(1)?, value).await?,
                ))
            }
            "ChatService.FindFiles" => {
                let limit = params.get(2).and_then(Value::as_u64).unwrap_or(20) as usize;
                to(serde_json::to_value(
                    self.find_files(&s(0)?, &s(1)?, limit).await?,
                ))
            }
            "ChatService.Cancel" => Ok(self.chat.cancel(&s(0)?).map(|_| Value::Null)?),
            "ChatService.AnswerPermission" => {
                Ok(self.chat.answer_permission(&s(0)?, &s(1)?).map(|_| Value::Null)?)
            }
            "ChatService.Inbox" => to(serde_json::to_value(self.inbox())),
            "ChatService.MarkSeen" => {
                self.chat.mark_seen(&s(0)?);
                Ok(Value::Null)
            }
            "ChatService.AnswerElicitation" => {
                let content = params.get(2).filter(|v| !v.is_null());
                Ok(self
                    .chat
                    .answer_elicitation(&s(0)?, &s(1)?, content)
                    .map(|_| Value::Null)?)
            }
            "ChatService.Conversation" => to(serde_json::to_value(self.chat.conversation(&s(0)?)?)),
            "ChatService.List" => {
                let offset = params.get(1).and_then(Value::as_u64).unwrap_or(0) as usize;
                let limit = params.get(2).and_then(Value::as_u64).unwrap_or(200) as usize;
                to(serde_json::to_value(
                    self.chat.list(&s(0)?, offset, limit.min(10_000)).await?,
                ))
            }
            "ChatService.New" => Ok(self.chat.new_conversation(&s(0)?).map(|_| Value::Null)?),
            "ChatService.Open" => to(serde_json::to_value(self.chat.open(&s(0)?, &s(1)?).await?)),
            "ChatService.Delete" => Ok(self.chat.delete(&s(0)?, &s(1)?).await.map(|_| Value::Null)?),
            "ChatService.Rename" => Ok(self.chat.rename(&s(0)?, &s(1)?, &s(2)?).map(|_| Value::Null)?),
            "ChatService.Search" => {
                let limit = params.get(1).and_then(Value::as_u64).unwrap_or(50) as usize;
                to(serde_json::to_value(self.chat.search(&s(0)?, limit).await?))
            }
            "ChatService.Export" => Ok(self.chat.export(&s(0)?).map(Value::String)?),
            "ChatService.HistoryStatus" => to(serde_json::to_value(self.chat.history_status())),
            "RegistryService.List" => to(serde_json::to_value(
                self.registry_list(params.first().and_then(Value::as_bool).unwrap_or(false))
                    .await,
            )),
            "RegistryService.Add" => Ok(Value::String(self.registry_add(&s(0)?).await?)),
            "RegistryService.Update" => {
                let id = params.first().and_then(Value::as_str);
                Ok(json!(self.registry_update(id).await?))
            }
            "RegistryService.Remove" => {
                let delete = params.get(1).and_then(Value::as_bool).unwrap_or(false);
                Ok(self.registry_remove(&s(0)?, delete).await.map(|_| Value::Null)?)
            }
            "RegistryService.Cancel" => Ok(Value::Bool(self.registry_cancel(&s(0)?))),
            "ConfigService.Current" => to(serde_json::to_value(self.current())),
            "ConfigService.Content" => Ok(self.content().map(Value::String)?),
            "ConfigService.Validate" => to(serde_json::to_value(self.validate(&s(0)?))),
            "ConfigService.Save" => to(serde_json::to_value(self.save(&s(0)?)?)),
            "ConfigService.Schema" => Ok(self.schema()),
            "ConfigService.Open" => Ok(self.open(Path::new(&s(0)?)).await.map(|_| Value::Null)?),
            "ConfigService.Recent" => Ok(json!(self.recent())),
            "ConfigService.Choose" => Err(gettext("no file chooser without a display")),
            "AuthService.Status" => to(serde_json::to_value(self.auth_status(&s(0)?)?)),
            "AuthService.Methods" => to(serde_json::to_value(self.auth_methods(&s(0)?).await?)),
            "AuthService.SignIn" => {
                let values = secret_values(params.get(2))?;
                Ok(self.sign_in(&s(0)?, &s(1)?, values).await.map(|_| Value::Null)?)
            }
            "AuthService.Cancel" => Ok(self.cancel_sign_in(&s(0)?).await.map(|_| Value::Null)?),
            "AuthService.ForgetKeys" => Ok(self.forget_keys(&s(0)?).await.map(|_| Value::Null)?),
            "AuthService.Logout" => Ok(self.logout(&s(0)?).await.map(|_| Value::Null)?),
            "AuthService.Terminal" => Err(gettext(
                "a terminal sign-in runs in the window; parley-cli auth prints its command",
            )),
            _ => Err(gettext_f("unknown method: {method}", &[("method", method)])),
        }
    }
}

/// `ChatService.Send`'s third argument: a list of file paths, or of
/// `{"name", "mimeType", "data"}` objects (an image, base64).
fn attachment_inputs(v: Option<&Value>) -> Result<Vec<crate::core::chat::AttachmentInput>, String> {
    use crate::core::chat::AttachmentInput;
    use base64::Engine;
    let bad = || gettext("ChatService.Send: argument 3 must be a list of file paths or images");
    let list = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(bad()),
    };
    list.iter()
        .map(|item| match item {
            Value::String(path) => Ok(AttachmentInput::File(path.into())),
            Value::Object(o) => {
                let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
                let data = text("data")
                    .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
                    .ok_or_else(bad)?;
                Ok(AttachmentInput::Image {
                    name: text("name").unwrap_or_else(|| "image".to_owned()),
                    mime_type: text("mimeType").ok_or_else(bad)?,
                    data,
                })
            }
            _ => Err(bad()),
        })
        .collect()
}

/// `AuthService.SignIn`'s third argument: an object of names to values
/// (absent or `null`: none).
fn secret_values(v: Option<&Value>) -> Result<Vec<(String, crate::core::auth::secrets::Secret)>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(o)) => o
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), crate::core::auth::secrets::Secret::new(s.clone()))),
                _ => Err(gettext_f(
                    "AuthService.SignIn: the value of {name} must be a string",
                    &[("name", k)],
                )),
            })
            .collect(),
        Some(_) => Err(gettext(
            "AuthService.SignIn: argument 3 must be an object of names to values",
        )),
    }
}
