//! `Core` assembles the services and hands them out; front ends (the
//! window, `parley-cli`) call only the services:
//!
//! - `agents`: [`AgentService`] (the supervisor: lifecycle, processes, logs);
//! - `terminals`: [`TerminalService`] (the ACP terminals agents run);
//! - `history`: [`HistoryService`] (the conversations on disk, search);
//! - `chat`: [`ChatService`] (conversations, permissions, elicitations);
//! - `config`: [`ConfigService`] (the file, validation, saving, watching);
//! - `auth`: [`AuthService`] (signing in);
//! - `registry`: [`RegistryService`] (agents from the ACP registry).
//!
//! Who takes whom, in one direction (see docs/architecture.md): registry →
//! config, agents; auth → agents, chat; chat → agents, history; agents →
//! terminals. The configuration reaches the agents and the chat only
//! through the hooks given here; every service reports through the events.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::core::auth::AuthService;
use crate::core::chat::ChatService;
use crate::core::checkpoints::{default_store, CheckpointService};
use crate::core::config::service::{ConfigService, Hooks};
use crate::core::events::{self, EventReceiver, EventSender};
use crate::core::history::service::HistoryService;
use crate::core::registry::service::RegistryService;
use crate::core::supervisor::terminals::TerminalService;
use crate::core::supervisor::{AgentService, Timings};
use crate::core::worktrees::{default_dir as worktree_dir, WorktreeService};
use crate::i18n::{gettext, gettext_f};

pub use crate::core::config::service::{ConfigError, Current};

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

/// The services, assembled. Create it inside a tokio runtime.
#[derive(Clone)]
pub struct Core {
    pub agents: AgentService,
    pub terminals: TerminalService,
    pub history: HistoryService,
    pub chat: ChatService,
    pub config: ConfigService,
    pub auth: AuthService,
    pub registry: RegistryService,
    pub checkpoints: CheckpointService,
    pub worktrees: WorktreeService,
    events: EventSender,
}

impl Core {
    /// Loads (or creates) the configuration and applies it. An unreadable
    /// file is an error; an invalid one starts with no agents and its problems.
    pub fn new(options: Options) -> Result<(Core, EventReceiver), String> {
        crate::core::launch::probe_login_shell();
        let (tx, rx) = events::channel();
        let terminals = TerminalService::new(tx.clone());
        let agents = AgentService::new(
            tx.clone(),
            options.timings,
            options.spawn_prefix,
            terminals.clone(),
        );
        let history = HistoryService::new(tx.clone());
        let checkpoints = CheckpointService::new(tx.clone(), options.history.as_deref().map(default_store));
        agents.set_write_gate(write_gate(&checkpoints));
        let worktrees = WorktreeService::new(options.history.as_deref().map(worktree_dir));
        let chat = ChatService::new(
            agents.clone(),
            history.clone(),
            checkpoints.clone(),
            worktrees.clone(),
            tx.clone(),
        );
        let (config, bytes) = ConfigService::new(
            options.config_path,
            tx.clone(),
            config_hooks(&agents, &chat, &history, &checkpoints),
        )?;
        let auth = AuthService::new(agents.clone(), chat.clone());
        let registry = RegistryService::new(tx.clone(), config.clone(), agents.clone());
        let path = config.path();
        agents.set_scope(&path.display().to_string());
        history.open(options.history.as_deref(), &path);
        config.start(bytes, options.watch);
        if options.watch {
            registry.check_updates_soon();
        }
        Ok((
            Core {
                agents,
                terminals,
                history,
                chat,
                config,
                auth,
                registry,
                checkpoints,
                worktrees,
                events: tx,
            },
            rx,
        ))
    }

    /// The events' sending side (for front ends that tell of their own).
    pub fn events(&self) -> EventSender {
        self.events.clone()
    }

    /// Quitting: every agent is stopped with the spec's sequence.
    pub async fn shutdown(&self) {
        self.config.stop_watching();
        // The turns that ended have their last snapshots recorded first
        // (`changes:updated` before the agents' last `agent:state`), then
        // those the stop ends, before the files go.
        let settle = std::time::Duration::from_secs(30);
        self.checkpoints.settle(settle).await;
        self.agents.shutdown().await;
        self.checkpoints.settle(settle).await;
        // What the ended turns wrote is on disk, and the file is let go
        // (another Parley may write it now).
        if let Some(h) = self.history.flushed() {
            let _ = tokio::task::spawn_blocking(move || h.writer().flush()).await;
        }
        let config = self.config.path().display().to_string();
        self.history.set(None, &config);
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
            "AgentService.List" => to(serde_json::to_value(self.agents.list())),
            "AgentService.Start" => self
                .agents
                .start(&s(0)?)
                .await
                .map(|_| Value::Null)
                .map_err(String::from),
            "AgentService.Stop" => Ok(self.agents.stop(&s(0)?).await.map(|_| Value::Null)?),
            "AgentService.Restart" => self
                .agents
                .restart(&s(0)?)
                .await
                .map(|_| Value::Null)
                .map_err(String::from),
            "AgentService.Logs" => to(serde_json::to_value(self.agents.logs(&s(0)?)?)),
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
                    self.chat.find_files(&s(0)?, &s(1)?, limit).await?,
                ))
            }
            "ChatService.Cancel" => Ok(self.chat.cancel(&s(0)?).map(|_| Value::Null)?),
            "ChatService.CancelSubagent" => {
                Ok(self.chat.cancel_subagent(&s(0)?, &s(1)?).map(|_| Value::Null)?)
            }
            "ChatService.AnswerPermission" => {
                Ok(self.chat.answer_permission(&s(0)?, &s(1)?).map(|_| Value::Null)?)
            }
            "ChatService.Inbox" => to(serde_json::to_value(self.chat.inbox())),
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
                to(serde_json::to_value(self.history.search(&s(0)?, limit).await?))
            }
            "ChatService.Export" => Ok(self.chat.export(&s(0)?).map(Value::String)?),
            "ChatService.Changes" => {
                let conversation = opt_str(params, 1);
                let turn = opt_str(params, 2);
                to(serde_json::to_value(
                    self.chat.changes(&s(0)?, conversation, turn).await?,
                ))
            }
            "ChatService.Revert" => {
                let hunk = params.get(3).and_then(Value::as_u64).map(|h| h as usize);
                let merge = params.get(4).and_then(Value::as_bool).unwrap_or(false);
                to(serde_json::to_value(
                    self.chat
                        .revert(&s(0)?, &s(1)?, opt_str(params, 2), hunk, merge)
                        .await?,
                ))
            }
            "ChatService.UndoTurn" => {
                let how = crate::core::checkpoints::How {
                    merge: params.get(2).and_then(Value::as_bool).unwrap_or(false),
                    all: params.get(3).and_then(Value::as_bool).unwrap_or(false),
                };
                to(serde_json::to_value(
                    self.chat.undo_turn(&s(0)?, opt_str(params, 1), how).await?,
                ))
            }
            "ChatService.NewInWorktree" => {
                let wt = self.chat.new_in_worktree(&s(0)?, opt_str(params, 1)).await?;
                Ok(
                    serde_json::json!({"path": wt.path, "cwd": wt.cwd, "branch": wt.branch, "base": wt.base, "baseName": wt.base_name}),
                )
            }
            "ChatService.Worktree" => to(serde_json::to_value(self.chat.worktree(&s(0)?).await?)),
            "ChatService.Apply" => to(serde_json::to_value(self.chat.apply_worktree(&s(0)?).await?)),
            "ChatService.UndoApply" => to(serde_json::to_value(self.chat.undo_apply(&s(0)?, &s(1)?).await?)),
            "ChatService.Merge" => {
                let commit = self.chat.merge_worktree(&s(0)?, opt_str(params, 1)).await?;
                Ok(serde_json::json!({ "commit": commit }))
            }
            "ChatService.Discard" => Ok(self.chat.discard_worktree(&s(0)?).await.map(|_| Value::Null)?),
            "ChatService.UndoRevert" => {
                to(serde_json::to_value(self.chat.undo_revert(&s(0)?, &s(1)?).await?))
            }
            "ChatService.Keep" => {
                let hunk = params.get(3).and_then(Value::as_u64).map(|h| h as usize);
                Ok(self
                    .chat
                    .keep(&s(0)?, &s(1)?, &s(2)?, hunk)
                    .await
                    .map(|_| Value::Null)?)
            }
            "ChatService.HistoryStatus" => to(serde_json::to_value(self.history.status())),
            "ChatService.EditQueued" => {
                let edit: crate::core::chat::QueueEdit =
                    serde_json::from_value(params.get(2).cloned().unwrap_or(Value::Null)).map_err(|e| {
                        gettext_f(
                            "ChatService.EditQueued: argument 3 must be an object of text, position or delete: {e}",
                            &[("e", &e.to_string())],
                        )
                    })?;
                to(serde_json::to_value(self.chat.edit_queued(
                    &s(0)?,
                    &s(1)?,
                    edit,
                )?))
            }
            "ChatService.SendNow" => Ok(self.chat.send_now(&s(0)?, &s(1)?).map(|_| Value::Null)?),
            "ChatService.Retry" => Ok(self.chat.retry(&s(0)?).map(Value::String)?),
            "ChatService.Steer" => Ok(self.chat.steer(&s(0)?, &s(1)?).map(Value::String)?),
            "ChatService.Fork" => {
                let (before, text) = (opt_str(params, 1), opt_str(params, 2));
                to(serde_json::to_value(self.chat.fork(&s(0)?, before, text).await?))
            }
            "ChatService.SetDraft" => {
                let draft = crate::core::types::draft::Draft {
                    text: s(1)?,
                    anchor: opt_str(params, 2).map(str::to_owned),
                };
                // `null`, or what was cut, so a script knows.
                Ok(self.chat.set_draft(&s(0)?, draft).map(|cut| match cut {
                    0 => Value::Null,
                    n => serde_json::json!({ "cutBytes": n }),
                })?)
            }
            "ChatService.Draft" => to(serde_json::to_value(self.chat.draft(&s(0)?).await?)),
            "ChatService.Restore" => to(serde_json::to_value(self.chat.restore().await)),
            "RegistryService.List" => to(serde_json::to_value(
                self.registry
                    .list(params.first().and_then(Value::as_bool).unwrap_or(false))
                    .await,
            )),
            "RegistryService.Add" => {
                // `{host, cwd}`: the agent runs there (see `RegistryService::add_to`).
                let place = params.get(1).filter(|p| p.is_object()).map(|p| {
                    (
                        p["host"].as_str().unwrap_or_default().to_owned(),
                        p["cwd"].as_str().unwrap_or_default().to_owned(),
                    )
                });
                Ok(Value::String(self.registry.add_to(&s(0)?, place).await?))
            }
            "RegistryService.Update" => {
                let id = params.first().and_then(Value::as_str);
                Ok(json!(self.registry.update(id).await?))
            }
            "RegistryService.Remove" => {
                let delete = params.get(1).and_then(Value::as_bool).unwrap_or(false);
                Ok(self.registry.remove(&s(0)?, delete).await.map(|_| Value::Null)?)
            }
            "RegistryService.Cancel" => Ok(Value::Bool(self.registry.cancel(&s(0)?))),
            "ConfigService.Current" => to(serde_json::to_value(self.config.current())),
            "ConfigService.Content" => Ok(self.config.content().map(Value::String)?),
            "ConfigService.Validate" => to(serde_json::to_value(self.config.validate(&s(0)?))),
            "ConfigService.Save" => to(serde_json::to_value(self.config.save(&s(0)?)?)),
            "ConfigService.Schema" => Ok(self.config.schema()),
            "ConfigService.Open" => Ok(self.config.open(Path::new(&s(0)?)).await.map(|_| Value::Null)?),
            "ConfigService.Recent" => Ok(json!(self.config.recent())),
            "ConfigService.Choose" => Err(gettext("no file chooser without a display")),
            "AuthService.Status" => to(serde_json::to_value(self.auth.status(&s(0)?)?)),
            "AuthService.Methods" => to(serde_json::to_value(self.auth.methods(&s(0)?).await?)),
            "AuthService.SignIn" if params.get(2).is_some_and(|v| v.get("baseUrl").is_some()) => {
                let method = s(1)?;
                let gateway = crate::core::types::gateway::Gateway::from_args(&method, &params[2])
                    .map_err(|why| crate::core::auth::AuthError::BadGateway(why).to_string())?;
                Ok(self
                    .auth
                    .sign_in_gateway(&s(0)?, &method, gateway)
                    .await
                    .map(|_| Value::Null)?)
            }
            "AuthService.SignIn" => {
                let values = secret_values(params.get(2))?;
                Ok(self
                    .auth
                    .sign_in(&s(0)?, &s(1)?, values)
                    .await
                    .map(|_| Value::Null)?)
            }
            "AuthService.Cancel" => Ok(self.auth.cancel(&s(0)?).await.map(|_| Value::Null)?),
            "AuthService.ForgetKeys" => Ok(self.auth.forget_keys(&s(0)?).await.map(|_| Value::Null)?),
            "AuthService.Logout" => Ok(self.auth.logout(&s(0)?).await.map(|_| Value::Null)?),
            "AuthService.Terminal" => Err(gettext(
                "a terminal sign-in runs in the window; parley-cli auth prints its command",
            )),
            _ => Err(gettext_f("unknown method: {method}", &[("method", method)])),
        }
    }
}

/// An optional string argument (absent, `null` or `""`: none).
fn opt_str(params: &[Value], i: usize) -> Option<&str> {
    params.get(i).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// What a valid configuration changes, and what opening another file stops.
fn config_hooks(
    agents: &AgentService,
    chat: &ChatService,
    history: &HistoryService,
    checkpoints: &CheckpointService,
) -> Hooks {
    let (a, c, k) = (agents.clone(), chat.clone(), checkpoints.clone());
    let apply = move |config: &crate::core::config::model::Config| {
        k.set_settings(crate::core::checkpoints::Settings::from_config(
            &config.checkpoints,
        ));
        a.set_global_mcp_servers(config.mcp_servers.clone());
        c.set_permission_rules(config.permissions.clone());
        c.set_turn_silence(config.limits.silence_warning());
        a.apply_config(&config.agents, config.limits.clone());
    };
    let c = chat.clone();
    let offers = move |agent: &str, key: &str, value: &Value| c.offers(agent, key, value);
    let (a, c, h) = (agents.clone(), chat.clone(), history.clone());
    let leave = move |path: PathBuf| {
        let (a, c, h) = (a.clone(), c.clone(), h.clone());
        Box::pin(async move {
            a.shutdown().await;
            c.forget_all();
            // The same file; this configuration's conversations apart.
            h.set(h.store(), &path.display().to_string());
            a.set_scope(&path.display().to_string());
            // The old file's agents go; the new file's come.
            a.apply_config(&[], Default::default());
        }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
    };
    Hooks {
        apply: Box::new(apply),
        offers: Box::new(offers),
        leave: Box::new(leave),
    }
}

/// A file write or a command of the agent's waits for its turn's first
/// snapshot; what it writes, or the time it runs, is the turn's.
fn write_gate(checkpoints: &CheckpointService) -> crate::core::supervisor::WriteGate {
    let k = checkpoints.clone();
    std::sync::Arc::new(move |agent: &str, written: Option<std::path::PathBuf>| {
        let (k, agent) = (k.clone(), agent.to_owned());
        Box::pin(async move {
            k.before_recorded(&agent).await;
            match written {
                Some(path) => k.note_path(&agent, &path),
                // A terminal's command runs until the turn ends, as far as
                // the checkpoints know.
                None => {
                    static TERMINALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                    let n = TERMINALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    k.note_command(&agent, &format!("terminal {n}"), true);
                }
            }
        }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
    })
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
fn secret_values(v: Option<&Value>) -> Result<Vec<(String, crate::core::secrets::Secret)>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(o)) => o
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), crate::core::secrets::Secret::new(s.clone()))),
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
