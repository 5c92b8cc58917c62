//! `RegistryService`: the registry listed against the configuration, and
//! agents added, updated and removed. Downloads and unpacking run on
//! tokio's blocking pool; the configuration is edited in place
//! ([`crate::core::config::edit`]) and saved as every save is: validated,
//! atomically, then applied and told as `config:changed`.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gio::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};
use sha2::Digest;

use super::fetch::{self, FetchError};
use super::unpack::{self, Kind, Limits};
use super::{Method, Registry, RegistryAgent};
use crate::core::config::edit;
use crate::core::events::{self, Event};
use crate::core::services::Core;
use crate::i18n::{gettext, gettext_f};

/// A cached copy younger than this is used without asking the network.
const FRESH: Duration = Duration::from_secs(3600);
/// The registry itself is small; more than this is not a registry.
const MAX_REGISTRY: u64 = 4 << 20;
const MAX_ICON: u64 = 64 << 10;

/// Where the listing came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Fetched just now.
    Network,
    /// The copy fetched earlier, in `$XDG_CACHE_HOME/parley/registry.json`.
    Cache,
    /// The copy that ships with Parley.
    Bundled,
}

#[derive(Debug, Clone)]
struct Loaded {
    registry: Registry,
    source: Source,
    fetched_at: u64,
    error: Option<String>,
}

/// The registry's state in a running core.
#[derive(Default)]
pub struct State {
    loaded: Mutex<Option<Loaded>>,
    /// Installs under way, by registry id.
    installs: Mutex<HashMap<String, gio::Cancellable>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `RegistryService.List`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    pub source: Source,
    /// When the shown copy was fetched (Unix seconds).
    pub fetched_at: u64,
    pub url: String,
    /// Why the network was not used, when it was asked and failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub platform: String,
    pub agents: Vec<Listed>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    #[serde(flatten)]
    pub agent: RegistryAgent,
    /// How it would be installed here; `None`: not for this platform.
    pub method: Option<Method>,
    /// The configured agents installed from it (or running its command).
    pub configured: Vec<String>,
    /// The newer version, when a configured agent has an older one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_available: Option<String>,
    /// An install is under way.
    pub installing: bool,
}

/// `registry:progress`: an install's download or unpacking.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Progress {
    pub id: String,
    /// `download` or `unpack`.
    pub phase: &'static str,
    pub done: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// `registry:changed`: the registry was read again; these configured
/// agents have a newer version in it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Changed {
    pub updates: Vec<Update>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Update {
    pub agent: String,
    pub id: String,
    pub installed: String,
    pub available: String,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn cache_file() -> PathBuf {
    super::cache_dir().join("registry.json")
}

fn bundled() -> Loaded {
    Loaded {
        registry: super::parse(super::BUNDLED).unwrap_or_default(),
        source: Source::Bundled,
        fetched_at: super::BUNDLED_AT,
        error: None,
    }
}

fn cached() -> Option<Loaded> {
    let path = cache_file();
    let text = std::fs::read_to_string(&path).ok()?;
    let registry = super::parse(&text)?;
    let fetched_at = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    Some(Loaded {
        registry,
        source: Source::Cache,
        fetched_at,
        error: None,
    })
}

/// The network's copy, kept in the cache; else the cache's; else the bundled one.
fn load_blocking(refresh: bool) -> Loaded {
    if !refresh {
        if let Some(c) = cached().filter(|c| now().saturating_sub(c.fetched_at) < FRESH.as_secs()) {
            return c;
        }
    }
    let url = super::url();
    let mut body = Vec::new();
    let got = fetch::get(
        &url,
        MAX_REGISTRY,
        &gio::Cancellable::new(),
        &mut body,
        &mut |_, _| {},
    );
    let error = match got {
        Ok(_) => match std::str::from_utf8(&body).ok().and_then(super::parse) {
            Some(registry) => {
                let file = cache_file();
                if let Some(dir) = file.parent() {
                    let _ = std::fs::create_dir_all(dir);
                }
                if let Err(e) = crate::core::atomic::write(&file, &body) {
                    tracing::warn!("cannot cache the registry at {}: {e}", file.display());
                }
                return Loaded {
                    registry,
                    source: Source::Network,
                    fetched_at: now(),
                    error: None,
                };
            }
            None => gettext_f("{url} is not an agent registry", &[("url", &url)]),
        },
        Err(e) => e.to_string(),
    };
    tracing::info!("registry: {error}");
    let mut fallback = cached().unwrap_or_else(bundled);
    fallback.error = Some(error);
    fallback
}

/// A package spec without its version: `@scope/name@1.2` → `@scope/name`.
fn package_name(spec: &str) -> &str {
    spec.rsplit_once('@')
        .filter(|(n, _)| !n.is_empty())
        .map_or(spec, |(n, _)| n)
}

/// The configured agents an entry stands for: installed from it, or
/// running its command or package.
fn configured_as(agent: &RegistryAgent, defs: &[crate::core::config::model::AgentDef]) -> Vec<String> {
    let package = |p: &Option<super::Package>| p.as_ref().map(|p| package_name(&p.package).to_owned());
    let packages: Vec<String> = [package(&agent.distribution.npx), package(&agent.distribution.uvx)]
        .into_iter()
        .flatten()
        .collect();
    defs.iter()
        .filter(|d| {
            d.registry.as_ref().is_some_and(|r| r.id == agent.id)
                || Path::new(&d.command).file_name().is_some_and(|f| *f == *agent.id)
                || d.args.iter().any(|a| {
                    packages
                        .iter()
                        .any(|p| a == p || a.strip_prefix(p.as_str()).is_some_and(|v| v.starts_with('@')))
                })
        })
        .map(|d| d.name.clone())
        .collect()
}

/// What `updates` says for one configured agent, if anything.
fn update_of(def: &crate::core::config::model::AgentDef, registry: &Registry) -> Option<Update> {
    let r = def.registry.as_ref()?;
    let entry = registry.agents.iter().find(|a| a.id == r.id)?;
    super::newer(&entry.version, &r.version).then(|| Update {
        agent: def.name.clone(),
        id: r.id.clone(),
        installed: r.version.clone(),
        available: entry.version.clone(),
    })
}

impl Core {
    fn registry_loaded(&self) -> Option<Loaded> {
        lock(&self.registry.loaded).clone()
    }

    async fn registry_load(&self, refresh: bool) -> Loaded {
        if !refresh {
            if let Some(l) = self.registry_loaded() {
                return l;
            }
        }
        let loaded = tokio::task::spawn_blocking(move || load_blocking(refresh))
            .await
            .unwrap_or_else(|_| bundled());
        *lock(&self.registry.loaded) = Some(loaded.clone());
        let updates = self.registry_updates();
        events::emit(&self.events(), Event::RegistryChanged(Changed { updates }));
        loaded
    }

    /// The configured agents with a newer version in the registry read last.
    pub fn registry_updates(&self) -> Vec<Update> {
        let Some(loaded) = self.registry_loaded() else {
            return Vec::new();
        };
        self.applied_agents()
            .iter()
            .filter_map(|d| update_of(d, &loaded.registry))
            .collect()
    }

    /// At start: when an agent came from the registry, its updates are
    /// looked for (the cached copy when it is less than an hour old).
    pub fn registry_check_updates_soon(&self) {
        if self.applied_agents().iter().all(|d| d.registry.is_none()) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            this.registry_load(false).await;
        });
    }

    /// The icons of the registry read last, by id, as files (see
    /// [`cached_icon`]); entries with none are left out.
    pub async fn registry_icons(&self) -> HashMap<String, PathBuf> {
        let Some(loaded) = self.registry_loaded() else {
            return HashMap::new();
        };
        tokio::task::spawn_blocking(move || {
            let network = loaded.source == Source::Network;
            loaded
                .registry
                .agents
                .iter()
                .filter_map(|a| cached_icon(a, network).map(|p| (a.id.clone(), p)))
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// `RegistryService.List(refresh)`: `refresh` asks the network even
    /// when a copy was read in this run or the cache is fresh.
    pub async fn registry_list(&self, refresh: bool) -> Listing {
        let loaded = self.registry_load(refresh).await;
        let defs = self.applied_agents();
        let installing = lock(&self.registry.installs).keys().cloned().collect::<Vec<_>>();
        let agents = loaded
            .registry
            .agents
            .iter()
            .map(|a| Listed {
                method: a.method(),
                configured: configured_as(a, &defs),
                update_available: defs
                    .iter()
                    .filter(|d| d.registry.as_ref().is_some_and(|r| r.id == a.id))
                    .find_map(|d| update_of(d, &loaded.registry))
                    .map(|u| u.available),
                installing: installing.contains(&a.id),
                agent: a.clone(),
            })
            .collect();
        Listing {
            source: loaded.source,
            fetched_at: loaded.fetched_at,
            url: super::url(),
            error: loaded.error,
            platform: super::platform(),
            agents,
        }
    }

    /// The entry `id` of the registry read last (read now if none was).
    async fn registry_entry(&self, id: &str) -> Result<RegistryAgent, String> {
        let loaded = self.registry_load(false).await;
        loaded
            .registry
            .agents
            .into_iter()
            .find(|a| a.id == id)
            .ok_or_else(|| gettext_f("the registry has no agent {id}", &[("id", id)]))
    }

    /// `RegistryService.Add(id)`: installs the agent and adds it to the
    /// configuration; answers the new agent's name.
    pub async fn registry_add(&self, id: &str) -> Result<String, String> {
        let agent = self.registry_entry(id).await?;
        let defs = self.applied_agents();
        if let Some(d) = defs
            .iter()
            .find(|d| d.registry.as_ref().is_some_and(|r| r.id == id))
        {
            return Err(gettext_f(
                "{title} is already added, as {name}",
                &[("title", &agent.name), ("name", &d.name)],
            ));
        }
        let installed = self.registry_install(&agent).await?;
        // The name is taken from the file as it is now: the download may
        // have taken minutes.
        let added = self
            .edit_config(|text| {
                let name = unique_name(&agent.id, &names_in(text));
                let entry = installed.entry(&agent, vec![("name".to_owned(), json!(name))]);
                Ok((edit::append_agent(text, &entry)?, name))
            })
            .await;
        if added.is_err() {
            installed.undo();
        }
        added
    }

    /// `RegistryService.Update(id?)`: every agent installed from the
    /// registry (or from entry `id`) that has a newer version there is
    /// installed anew and its entry rewritten (only its command, arguments,
    /// environment and `registry`). Answers the names updated.
    pub async fn registry_update(&self, id: Option<&str>) -> Result<Vec<String>, String> {
        let loaded = self.registry_load(true).await;
        let mut updated = Vec::new();
        for def in self.applied_agents() {
            let Some(u) = update_of(&def, &loaded.registry) else {
                continue;
            };
            if id.is_some_and(|id| id != u.id) {
                continue;
            }
            let Some(agent) = loaded.registry.agents.iter().find(|a| a.id == u.id) else {
                continue;
            };
            let installed = self.registry_install(agent).await?;
            let saved = self
                .edit_config(|text| {
                    let current = edit::agent_entry(text, &def.name).unwrap_or_default();
                    let members = installed.update_members(agent, &current);
                    Ok((edit::set_agent_members(text, &def.name, &members)?, ()))
                })
                .await;
            if let Err(e) = saved {
                installed.undo();
                return Err(e);
            }
            self.prune_versions(&u.id).await;
            updated.push(def.name.clone());
        }
        if let Some(id) = id {
            if updated.is_empty()
                && !self
                    .applied_agents()
                    .iter()
                    .any(|d| d.registry.as_ref().is_some_and(|r| r.id == id))
            {
                return Err(gettext_f(
                    "no agent was added from the registry as {id}",
                    &[("id", id)],
                ));
            }
        }
        *lock(&self.registry.loaded) = Some(loaded);
        events::emit(
            &self.events(),
            Event::RegistryChanged(Changed {
                updates: self.registry_updates(),
            }),
        );
        Ok(updated)
    }

    /// `RegistryService.Remove(name, deleteFiles)`: the agent's entry goes;
    /// with `deleteFiles`, so do the files Add installed for it (unless
    /// another entry uses them).
    pub async fn registry_remove(&self, name: &str, delete_files: bool) -> Result<(), String> {
        let defs = self.applied_agents();
        let def = defs.iter().find(|d| d.name == name).cloned();
        self.edit_config(|text| Ok((edit::remove_agent(text, name)?, ())))
            .await?;
        let Some(r) = def.and_then(|d| d.registry) else {
            return Ok(());
        };
        let shared = defs
            .iter()
            .any(|d| d.name != name && d.registry.as_ref().is_some_and(|o| o.id == r.id));
        // The id becomes a directory name: only a plain word (the schema
        // says so too, but an id must never name `agents/` itself).
        if delete_files && !shared && super::is_safe_id(&r.id) {
            let dir = super::agents_dir().join(&r.id);
            tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(format!("{}: {e}", dir.display())),
            })
            .await
            .map_err(|e| e.to_string())??;
        }
        Ok(())
    }

    /// `RegistryService.Cancel(id)`: gives up an install under way; what it
    /// downloaded or unpacked is removed.
    pub fn registry_cancel(&self, id: &str) -> bool {
        match lock(&self.registry.installs).get(id) {
            Some(c) => {
                c.cancel();
                true
            }
            None => false,
        }
    }

    /// Removes the version directories of `id` that no configured agent's
    /// command is in. Not while an agent of `id` runs: after an update it
    /// runs the old version until it restarts, and a later update or
    /// Remove prunes it.
    async fn prune_versions(&self, id: &str) {
        use crate::core::supervisor::lifecycle::AgentState;
        let defs = self.applied_agents();
        let ours: Vec<&str> = defs
            .iter()
            .filter(|d| d.registry.as_ref().is_some_and(|r| r.id == id))
            .map(|d| d.name.as_str())
            .collect();
        if self
            .agent_list()
            .iter()
            .any(|a| ours.contains(&a.name.as_str()) && a.state != AgentState::Stopped)
        {
            return;
        }
        let in_use: Vec<PathBuf> = defs.iter().map(|d| PathBuf::from(&d.command)).collect();
        let dir = super::agents_dir().join(id);
        let _ = tokio::task::spawn_blocking(move || {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                return;
            };
            for e in entries.flatten() {
                let path = e.path();
                let hidden = e.file_name().to_string_lossy().starts_with('.');
                if hidden || !path.is_dir() || in_use.iter().any(|c| c.starts_with(&path)) {
                    continue;
                }
                let _ = std::fs::remove_dir_all(&path);
            }
        })
        .await;
    }

    async fn registry_install(&self, agent: &RegistryAgent) -> Result<Installed, String> {
        let method = agent.method().ok_or_else(|| {
            gettext_f(
                "{title} has no build for {platform}",
                &[("title", &agent.name), ("platform", &super::platform())],
            )
        })?;
        let cancel = gio::Cancellable::new();
        {
            let mut installs = lock(&self.registry.installs);
            if installs.contains_key(&agent.id) {
                return Err(gettext_f(
                    "{title} is being installed already",
                    &[("title", &agent.name)],
                ));
            }
            installs.insert(agent.id.clone(), cancel.clone());
        }
        // A call given up (serve's input closed) cancels the install, which
        // then removes what it made.
        let _under_way = UnderWay {
            state: self.registry.clone(),
            id: agent.id.clone(),
            cancel: cancel.clone(),
        };
        let events = self.events();
        let a = agent.clone();
        let on_host = self.supervisor.spawns_on_host();
        tokio::task::spawn_blocking(move || install_blocking(&a, method, on_host, &cancel, &events))
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
    }
}

/// An install under way: taken out of `installs` when its call ends, and
/// cancelled when the call is dropped before the install is over.
struct UnderWay {
    state: std::sync::Arc<State>,
    id: String,
    cancel: gio::Cancellable,
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        lock(&self.state.installs).remove(&self.id);
        // Cancelling an install that is over does nothing.
        self.cancel.cancel();
    }
}

/// The agents' names in a configuration's text.
fn names_in(text: &str) -> Vec<String> {
    crate::core::config::validate::parse(text)
        .ok()
        .and_then(|v| {
            v.get("agents")?.as_array().map(|a| {
                a.iter()
                    .filter_map(|e| e.get("name")?.as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// `id`, or `id-2`, `id-3`… when taken.
fn unique_name(id: &str, names: &[String]) -> String {
    let taken = |n: &str| names.iter().any(|x| x == n);
    if !taken(id) {
        return id.to_owned();
    }
    (2..)
        .map(|i| format!("{id}-{i}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| id.to_owned())
}

/// What an install left: how to run the agent, and what to remove if the
/// configuration cannot take it.
struct Installed {
    method: Method,
    command: String,
    args: Vec<String>,
    env: std::collections::BTreeMap<String, String>,
    icon: Option<PathBuf>,
    /// The version directory this install made (not one that was there).
    made: Option<PathBuf>,
}

impl Installed {
    /// `base` (the entry as it was, or just its name) with the registry's
    /// fields set. Title, description and icon are set only when absent:
    /// the user may have changed them.
    fn entry(&self, agent: &RegistryAgent, mut e: edit::Entry) -> edit::Entry {
        fn set(e: &mut edit::Entry, key: &str, value: Option<Value>, replace: bool) {
            match (e.iter().position(|(k, _)| k == key), value) {
                (Some(i), Some(v)) if replace => e[i].1 = v,
                (Some(_), Some(_)) => {}
                (Some(i), None) => {
                    e.remove(i);
                }
                (None, Some(v)) => e.push((key.to_owned(), v)),
                (None, None) => {}
            }
        }
        set(&mut e, "title", Some(json!(agent.name)), false);
        if let Some(icon) = &self.icon {
            set(&mut e, "icon", Some(json!(icon.display().to_string())), false);
        }
        if !agent.description.is_empty() {
            set(&mut e, "description", Some(json!(agent.description)), false);
        }
        set(&mut e, "command", Some(json!(self.command)), true);
        set(
            &mut e,
            "args",
            (!self.args.is_empty()).then(|| json!(self.args)),
            true,
        );
        set(
            &mut e,
            "env",
            (!self.env.is_empty()).then(|| json!(self.env)),
            true,
        );
        set(
            &mut e,
            "registry",
            Some(json!({"id": agent.id, "version": agent.version, "distribution": self.method.name()})),
            true,
        );
        e
    }

    /// What Update sets in an entry (`current`, as the file has it): the
    /// command and `registry`; the environment merged (the registry's
    /// variables win, the user's others stay); the arguments as they are,
    /// with the package's word replaced by the new version's (npx, uvx),
    /// or the registry's when the entry has none. Title, description and
    /// icon only where absent.
    fn update_members(&self, agent: &RegistryAgent, current: &edit::Entry) -> edit::Entry {
        let get = |key: &str| current.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let mut out: edit::Entry = vec![("command".to_owned(), json!(self.command))];
        let package = match self.method {
            Method::Npx => agent.distribution.npx.as_ref(),
            Method::Uvx => agent.distribution.uvx.as_ref(),
            Method::Binary => None,
        };
        let args = match (get("args"), package) {
            (Some(Value::Array(mut args)), Some(p)) => {
                let base = package_name(&p.package);
                match args
                    .iter()
                    .position(|a| a.as_str().is_some_and(|a| package_name(a) == base))
                {
                    Some(i) => {
                        args[i] = json!(p.package);
                        Some(Value::Array(args))
                    }
                    None => (!self.args.is_empty()).then(|| json!(self.args)),
                }
            }
            (Some(args @ Value::Array(_)), None) => Some(args),
            _ => (!self.args.is_empty()).then(|| json!(self.args)),
        };
        if let Some(args) = args {
            out.push(("args".to_owned(), args));
        }
        let mut env = match get("env") {
            Some(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        for (k, v) in &self.env {
            env.insert(k.clone(), json!(v));
        }
        if !env.is_empty() {
            out.push(("env".to_owned(), Value::Object(env)));
        }
        out.push((
            "registry".to_owned(),
            json!({"id": agent.id, "version": agent.version, "distribution": self.method.name()}),
        ));
        for (key, value) in [
            ("title", Some(json!(agent.name))),
            (
                "description",
                (!agent.description.is_empty()).then(|| json!(agent.description)),
            ),
            ("icon", self.icon.as_ref().map(|i| json!(i.display().to_string()))),
        ] {
            if let (None, Some(v)) = (get(key), value) {
                out.push((key.to_owned(), v));
            }
        }
        out
    }

    fn undo(&self) {
        if let Some(dir) = &self.made {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Removes the paths it holds when dropped, unless disarmed.
struct Leftovers(Vec<PathBuf>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(p)
            } else {
                std::fs::remove_file(p)
            };
        }
    }
}

/// Hashes what passes through to a file.
struct Hashing<W> {
    inner: W,
    hash: sha2::Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn max_download() -> u64 {
    std::env::var("PARLEY_REGISTRY_MAX_DOWNLOAD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30)
}

/// Progress as `registry:progress`, at most ten times a second.
struct Reporter<'a> {
    events: &'a events::EventSender,
    id: String,
    last: Option<Instant>,
}

impl Reporter<'_> {
    fn report(&mut self, phase: &'static str, done: u64, total: Option<u64>, force: bool) {
        if !force
            && self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Instant::now());
        events::emit(
            self.events,
            Event::RegistryProgress(Progress {
                id: self.id.clone(),
                phase,
                done,
                total,
            }),
        );
    }
}

/// `on_host`: agents run on the host (Flatpak), where npx or uvx cannot be
/// looked for from here; the agent's start says so if it is missing.
fn install_blocking(
    agent: &RegistryAgent,
    method: Method,
    on_host: bool,
    cancel: &gio::Cancellable,
    events: &events::EventSender,
) -> Result<Installed, String> {
    let result = install_method(agent, method, on_host, cancel, events);
    if result.is_err() {
        // Removed only when empty: an installed version stays.
        let _ = std::fs::remove_dir(super::agents_dir().join(&agent.id));
    }
    let (command, args, env, made) = result?;
    Ok(Installed {
        method,
        command,
        args,
        env,
        icon: save_icon(agent),
        made,
    })
}

/// The command, arguments, environment, and the version directory made.
type HowToRun = (
    String,
    Vec<String>,
    std::collections::BTreeMap<String, String>,
    Option<PathBuf>,
);

fn install_method(
    agent: &RegistryAgent,
    method: Method,
    on_host: bool,
    cancel: &gio::Cancellable,
    events: &events::EventSender,
) -> Result<HowToRun, String> {
    Ok(match method {
        Method::Npx | Method::Uvx => {
            let (program, package) = match method {
                Method::Npx => ("npx", agent.distribution.npx.as_ref()),
                _ => ("uvx", agent.distribution.uvx.as_ref()),
            };
            let package = package.ok_or_else(|| gettext("the registry entry has no package"))?;
            // After `npx --yes` a word starting with "-" would be one of
            // npx's own options (`-c` runs a shell command).
            if package.package.starts_with('-') || package.package.trim().is_empty() {
                return Err(gettext_f(
                    "the registry entry's package {package} is not a package name",
                    &[("package", &package.package)],
                ));
            }
            if !on_host {
                check_program(program)?;
            }
            let mut args = Vec::new();
            if method == Method::Npx {
                args.push("--yes".to_owned()); // no question on a terminal nobody sees
            }
            args.push(package.package.clone());
            args.extend(package.args.iter().cloned());
            (program.to_owned(), args, package.env.clone(), None)
        }
        Method::Binary => {
            let target = agent
                .binary()
                .ok_or_else(|| gettext("no build for this platform"))?;
            let (cmd, made) = install_binary(agent, target, cancel, events)?;
            (
                cmd.display().to_string(),
                target.args.clone(),
                target.env.clone(),
                made,
            )
        }
    })
}

/// `npx` or `uvx` where the launch doctor looks for programs, or what to install.
fn check_program(program: &str) -> Result<(), String> {
    use crate::core::supervisor::{launch, process};
    let dirs = launch::search_dirs(None, launch::login_shell_path_now());
    let home = crate::core::config::model::home_dir();
    match process::resolve_program(program, &home, &dirs) {
        Some(_) => Ok(()),
        None => Err(launch::not_found(program, &dirs)),
    }
}

/// The entry's icon as a file in the cache, `registry-icons/ID-symbolic.svg`
/// (a name GTK recolours with the text, as it does the theme's symbolic
/// icons): the bundled copy's, or else fetched from its address when
/// `network` says the registry was reachable.
fn cached_icon(agent: &RegistryAgent, network: bool) -> Option<PathBuf> {
    let path = super::cache_dir()
        .join("registry-icons")
        .join(format!("{}-symbolic.svg", agent.id));
    if path.exists() {
        return Some(path);
    }
    let bundled: HashMap<String, String> = serde_json::from_str(super::BUNDLED_ICONS).unwrap_or_default();
    let svg = match bundled.get(&agent.id) {
        Some(svg) => svg.clone().into_bytes(),
        None if network && !agent.icon.is_empty() => {
            let mut body = Vec::new();
            fetch::get(
                &agent.icon,
                MAX_ICON,
                &gio::Cancellable::new(),
                &mut body,
                &mut |_, _| {},
            )
            .ok()?;
            body
        }
        None => return None,
    };
    let head = String::from_utf8_lossy(&svg[..svg.len().min(512)]).to_ascii_lowercase();
    if !head.contains("<svg") {
        return None;
    }
    std::fs::create_dir_all(path.parent()?).ok()?;
    crate::core::atomic::write(&path, &svg).ok()?;
    Some(path)
}

/// The icon kept with the installed agent, `agents/ID/ID-symbolic.svg`
/// (the cache may be cleared).
fn save_icon(agent: &RegistryAgent) -> Option<PathBuf> {
    let cached = cached_icon(agent, true)?;
    let dir = super::agents_dir().join(&agent.id);
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("{}-symbolic.svg", agent.id));
    std::fs::copy(cached, &path).ok()?;
    Some(path)
}

/// Downloads, checks and unpacks the archive into
/// `agents/ID/VERSION/`; answers the command's path, and the version
/// directory when this install made it.
fn install_binary(
    agent: &RegistryAgent,
    target: &super::BinaryTarget,
    cancel: &gio::Cancellable,
    events: &events::EventSender,
) -> Result<(PathBuf, Option<PathBuf>), String> {
    let kind = Kind::of(&target.archive).ok_or_else(|| {
        gettext_f(
            "{url}: Parley unpacks .tar.gz, .tgz, .tar and .zip archives",
            &[("url", &target.archive)],
        )
    })?;
    let rel_cmd = Path::new(target.cmd.trim_start_matches("./")).to_path_buf();
    if rel_cmd
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(gettext_f(
            "the command {cmd} is not inside the archive",
            &[("cmd", &target.cmd)],
        ));
    }
    let dir = super::agents_dir().join(&agent.id);
    let version_dir = dir.join(&agent.version);
    let cmd = version_dir.join(&rel_cmd);
    if crate::core::supervisor::process::is_executable(&cmd) {
        return Ok((cmd, None)); // there already
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    remove_stale(&dir);
    let tag = format!("{}-{}", agent.version, std::process::id());
    let download = dir.join(format!(".download-{tag}"));
    let unpacked = dir.join(format!(".unpack-{tag}"));
    let _leftovers = Leftovers(vec![download.clone(), unpacked.clone()]);
    let mut reporter = Reporter {
        events,
        id: agent.id.clone(),
        last: None,
    };

    let file = std::fs::File::create(&download).map_err(|e| format!("{}: {e}", download.display()))?;
    let mut sink = Hashing {
        inner: std::io::BufWriter::new(file),
        hash: sha2::Sha256::new(),
    };
    let size = fetch::get(
        &target.archive,
        max_download(),
        cancel,
        &mut sink,
        &mut |done, total| reporter.report("download", done, total.or(target.size), false),
    )
    .map_err(|e| match e {
        FetchError::Cancelled => gettext("cancelled"),
        FetchError::Failed(e) => e,
    })?;
    sink.flush().map_err(|e| e.to_string())?;
    reporter.report("download", size, Some(size), true);
    if let Some(want) = target.size.filter(|w| *w != size) {
        return Err(gettext_f(
            "the download has {got} bytes; the registry says {want}",
            &[("got", &size.to_string()), ("want", &want.to_string())],
        ));
    }
    let digest = sink.hash.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    if let Some(want) = &target.sha256 {
        if !want.eq_ignore_ascii_case(&hex) {
            return Err(gettext_f(
                "the download's SHA-256 is {got}; the registry says {want}",
                &[("got", &hex), ("want", want)],
            ));
        }
    }

    reporter.report("unpack", 0, None, true);
    std::fs::create_dir(&unpacked).map_err(|e| format!("{}: {e}", unpacked.display()))?;
    unpack::unpack(&download, kind, &unpacked, Limits::from_env(), &|| {
        cancel.is_cancelled()
    })
    .map_err(|e| e.0)?;
    let staged = unpacked.join(&rel_cmd);
    let meta = std::fs::metadata(&staged)
        .ok()
        .filter(|m| m.is_file())
        .ok_or_else(|| gettext_f("the archive has no {cmd}", &[("cmd", &target.cmd)]))?;
    // The command resolves inside the version directory, links included.
    let real = std::fs::canonicalize(&staged).map_err(|e| e.to_string())?;
    let root = std::fs::canonicalize(&unpacked).map_err(|e| e.to_string())?;
    if !real.starts_with(&root) {
        return Err(gettext_f(
            "the command {cmd} is not inside the archive",
            &[("cmd", &target.cmd)],
        ));
    }
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & 0o111 == 0 {
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
    }
    if cancel.is_cancelled() {
        return Err(gettext("cancelled"));
    }
    if version_dir.exists() {
        std::fs::remove_dir_all(&version_dir).map_err(|e| format!("{}: {e}", version_dir.display()))?;
    }
    std::fs::rename(&unpacked, &version_dir).map_err(|e| format!("{}: {e}", version_dir.display()))?;
    reporter.report("unpack", 1, Some(1), true);
    Ok((cmd, Some(version_dir)))
}

/// Downloads and unpackings a crashed run left, over an hour old.
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(".download-") || name.starts_with(".unpack-")) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        if old {
            let p = e.path();
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config::model::{AgentDef, RegistryRef};

    fn agent(id: &str, version: &str) -> RegistryAgent {
        serde_json::from_value(json!({
            "id": id, "name": id, "version": version,
            "distribution": {"npx": {"package": format!("@scope/{id}@{version}")}}
        }))
        .expect("agent")
    }

    #[test]
    fn configured_agents_are_found_by_registry_id_command_or_package() {
        let defs = vec![
            AgentDef {
                name: "mine".into(),
                command: "x".into(),
                registry: Some(RegistryRef {
                    id: "a".into(),
                    version: "1.0.0".into(),
                    distribution: "npx".into(),
                }),
                ..Default::default()
            },
            AgentDef {
                name: "by-command".into(),
                command: "/opt/b/b".into(),
                ..Default::default()
            },
            AgentDef {
                name: "by-package".into(),
                command: "npx".into(),
                args: vec!["-y".into(), "@scope/c@2".into()],
                ..Default::default()
            },
        ];
        assert_eq!(configured_as(&agent("a", "1.0.0"), &defs), ["mine"]);
        assert_eq!(configured_as(&agent("b", "1.0.0"), &defs), ["by-command"]);
        assert_eq!(configured_as(&agent("c", "1.0.0"), &defs), ["by-package"]);
        assert!(configured_as(&agent("d", "1.0.0"), &defs).is_empty());
        let registry = Registry {
            version: "1".into(),
            agents: vec![agent("a", "1.1.0")],
        };
        let u = update_of(&defs[0], &registry).expect("update");
        assert_eq!((u.installed.as_str(), u.available.as_str()), ("1.0.0", "1.1.0"));
        assert!(update_of(&defs[1], &registry).is_none());
        let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
        assert_eq!(unique_name("mine", &names), "mine-2");
        assert_eq!(
            names_in("{\"agents\": [{\"name\": \"a\"}, // c\n {\"name\": \"b\"}]}"),
            ["a", "b"]
        );
    }
}
