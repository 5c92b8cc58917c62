//! `RegistryService`: the registry listed against the configuration, and
//! agents added, updated and removed. Downloads and unpacking run on
//! tokio's blocking pool; the configuration is edited in place
//! ([`crate::core::config::edit`]) through the `ConfigService` and saved as
//! every save is: validated, atomically, then applied and told as
//! `config:changed`. It takes the configuration and the agents, and
//! nothing takes it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use gio::prelude::*;
use serde_json::json;

use super::install::{install_blocking, names_in, unique_name, Installed};
use super::listing::{
    bundled, cached_icon, configured_as, load_blocking, update_of, Listed, Listing, Loaded, Source,
};
use super::RegistryAgent;
use crate::core::config::edit;
use crate::core::config::service::ConfigService;
use crate::core::events::{self, Changed, Event, EventSender, Update};
use crate::core::supervisor::AgentService;
use crate::i18n::gettext_f;

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

/// The registry's service; cheap to clone.
#[derive(Clone)]
pub struct RegistryService {
    state: Arc<State>,
    events: EventSender,
    config: ConfigService,
    agents: AgentService,
}

impl RegistryService {
    pub fn new(events: EventSender, config: ConfigService, agents: AgentService) -> Self {
        RegistryService {
            state: Arc::default(),
            events,
            config,
            agents,
        }
    }
}

impl RegistryService {
    fn loaded(&self) -> Option<Loaded> {
        lock(&self.state.loaded).clone()
    }

    async fn load(&self, refresh: bool) -> Loaded {
        if !refresh {
            if let Some(l) = self.loaded() {
                return l;
            }
        }
        let loaded = tokio::task::spawn_blocking(move || load_blocking(refresh))
            .await
            .unwrap_or_else(|_| bundled());
        *lock(&self.state.loaded) = Some(loaded.clone());
        self.tell_agents(&loaded.registry);
        let updates = self.updates();
        events::emit(&self.events.clone(), Event::RegistryChanged(Changed { updates }));
        loaded
    }

    /// The agents' list shows the newer versions of the registry read last.
    fn tell_agents(&self, registry: &super::Registry) {
        let registry = registry.clone();
        self.agents.set_updates(Box::new(move |def| {
            update_of(def, &registry).map(|u| u.available)
        }));
    }

    /// The configured agents with a newer version in the registry read last.
    pub fn updates(&self) -> Vec<Update> {
        let Some(loaded) = self.loaded() else {
            return Vec::new();
        };
        self.config
            .applied_agents()
            .iter()
            .filter_map(|d| update_of(d, &loaded.registry))
            .collect()
    }

    /// At start: when an agent came from the registry, its updates are
    /// looked for (the cached copy when it is less than an hour old).
    pub fn check_updates_soon(&self) {
        if self.config.applied_agents().iter().all(|d| d.registry.is_none()) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            this.load(false).await;
        });
    }

    /// The icons of the registry read last, by id, as files (see
    /// `cached_icon`); entries with none are left out.
    pub async fn icons(&self) -> HashMap<String, PathBuf> {
        let Some(loaded) = self.loaded() else {
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
    pub async fn list(&self, refresh: bool) -> Listing {
        let loaded = self.load(refresh).await;
        let defs = self.config.applied_agents();
        let installing = lock(&self.state.installs).keys().cloned().collect::<Vec<_>>();
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
    async fn entry(&self, id: &str) -> Result<RegistryAgent, String> {
        let loaded = self.load(false).await;
        loaded
            .registry
            .agents
            .into_iter()
            .find(|a| a.id == id)
            .ok_or_else(|| gettext_f("the registry has no agent {id}", &[("id", id)]))
    }

    /// `RegistryService.Add(id)`: installs the agent and adds it to the
    /// configuration; answers the new agent's name.
    pub async fn add(&self, id: &str) -> Result<String, String> {
        self.add_to(id, None).await
    }

    /// `add`, for an agent that runs on another host (`place`: its `host`
    /// and its `cwd` there): only an `npx` or `uvx` package can, as
    /// nothing is downloaded here for it; the program is looked for there
    /// when it starts.
    pub async fn add_to(&self, id: &str, place: Option<(String, String)>) -> Result<String, String> {
        let agent = self.entry(id).await?;
        let place = match place.filter(|(h, _)| !h.trim().is_empty()) {
            None => None,
            Some((host, cwd)) => {
                let parsed = crate::core::remote::Host::parse(&host)?;
                if !cwd.trim().starts_with('/') {
                    return Err(crate::i18n::gettext(
                        "an agent on another host needs an absolute cwd (a path on that host)",
                    ));
                }
                Some((parsed, host.trim().to_owned(), cwd.trim().to_owned()))
            }
        };
        let host_text = place.as_ref().map(|p| p.1.clone()).unwrap_or_default();
        let defs = self.config.applied_agents();
        if let Some(d) = defs
            .iter()
            .find(|d| d.registry.as_ref().is_some_and(|r| r.id == id) && d.host.trim() == host_text)
        {
            return Err(gettext_f(
                "{title} is already added, as {name}",
                &[("title", &agent.name), ("name", &d.name)],
            ));
        }
        let installed = match &place {
            None => self.install(&agent).await?,
            Some((host, _, _)) => self.package_for_host(&agent, &host.name)?,
        };
        // The name is taken from the file as it is now: the download may
        // have taken minutes.
        let added = self
            .config
            .edit(|text| {
                let mut members = Vec::new();
                let name = match &place {
                    None => unique_name(&agent.id, &names_in(text)),
                    Some((host, uri, cwd)) => {
                        members.push(("host".to_owned(), json!(uri)));
                        members.push(("cwd".to_owned(), json!(cwd)));
                        unique_name(
                            &format!("{}-{}", agent.id, host_word(&host.name)),
                            &names_in(text),
                        )
                    }
                };
                members.insert(0, ("name".to_owned(), json!(name)));
                let entry = installed.entry(&agent, members);
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
    pub async fn update(&self, id: Option<&str>) -> Result<Vec<String>, String> {
        let loaded = self.load(true).await;
        let mut updated = Vec::new();
        for def in self.config.applied_agents() {
            let Some(u) = update_of(&def, &loaded.registry) else {
                continue;
            };
            if id.is_some_and(|id| id != u.id) {
                continue;
            }
            let Some(agent) = loaded.registry.agents.iter().find(|a| a.id == u.id) else {
                continue;
            };
            let installed = self.install(agent).await?;
            let saved = self
                .config
                .edit(|text| {
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
                    .config
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
        self.tell_agents(&loaded.registry);
        *lock(&self.state.loaded) = Some(loaded);
        events::emit(
            &self.events.clone(),
            Event::RegistryChanged(Changed {
                updates: self.updates(),
            }),
        );
        Ok(updated)
    }

    /// `RegistryService.Remove(name, deleteFiles)`: the agent's entry goes;
    /// with `deleteFiles`, so do the files Add installed for it (unless
    /// another entry uses them).
    pub async fn remove(&self, name: &str, delete_files: bool) -> Result<(), String> {
        let defs = self.config.applied_agents();
        let def = defs.iter().find(|d| d.name == name).cloned();
        self.config
            .edit(|text| Ok((edit::remove_agent(text, name)?, ())))
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
    pub fn cancel(&self, id: &str) -> bool {
        match lock(&self.state.installs).get(id) {
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
        use crate::core::types::AgentState;
        let defs = self.config.applied_agents();
        let ours: Vec<&str> = defs
            .iter()
            .filter(|d| d.registry.as_ref().is_some_and(|r| r.id == id))
            .map(|d| d.name.as_str())
            .collect();
        if self
            .agents
            .list()
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

    /// How an agent on another host runs its `npx` (or `uvx`) package:
    /// nothing is installed here.
    fn package_for_host(&self, agent: &RegistryAgent, host: &str) -> Result<Installed, String> {
        let method = if agent.distribution.npx.is_some() {
            super::Method::Npx
        } else if agent.distribution.uvx.is_some() {
            super::Method::Uvx
        } else {
            return Err(gettext_f(
                "{title} comes only as a download for this machine; on {host} only an npx or uvx package can run",
                &[("title", &agent.name), ("host", host)],
            ));
        };
        let cancel = gio::Cancellable::new();
        // `on_host`: the program is not looked for here.
        super::install::install_blocking(agent, method, true, &cancel, &self.events)
    }

    async fn install(&self, agent: &RegistryAgent) -> Result<Installed, String> {
        let method = agent.method().ok_or_else(|| {
            gettext_f(
                "{title} has no build for {platform}",
                &[("title", &agent.name), ("platform", &super::platform())],
            )
        })?;
        let cancel = gio::Cancellable::new();
        {
            let mut installs = lock(&self.state.installs);
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
            state: self.state.clone(),
            id: agent.id.clone(),
            cancel: cancel.clone(),
        };
        let events = self.events.clone();
        let a = agent.clone();
        let on_host = self.agents.spawns_on_host();
        tokio::task::spawn_blocking(move || install_blocking(&a, method, on_host, &cancel, &events))
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
    }
}

/// A host's name as part of an agent's name: lower case, `-` for the rest.
fn host_word(host: &str) -> String {
    host.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}
