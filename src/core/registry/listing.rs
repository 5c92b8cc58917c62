//! The registry as read: from the network, the cache or the copy that
//! ships with Parley; which configured agents each entry stands for, which
//! have a newer version; and the entries' icons.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::fetch;
use super::{Method, Registry, RegistryAgent};
use crate::core::events::Update;
use crate::i18n::gettext_f;

/// A cached copy younger than this is used without asking the network.
pub(super) const FRESH: Duration = Duration::from_secs(3600);
/// The registry itself is small; more than this is not a registry.
pub(super) const MAX_REGISTRY: u64 = 4 << 20;
pub(super) const MAX_ICON: u64 = 64 << 10;

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
pub(super) struct Loaded {
    pub(super) registry: Registry,
    pub(super) source: Source,
    pub(super) fetched_at: u64,
    pub(super) error: Option<String>,
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(super) fn cache_file() -> PathBuf {
    super::cache_dir().join("registry.json")
}

pub(super) fn bundled() -> Loaded {
    Loaded {
        registry: super::parse(super::BUNDLED).unwrap_or_default(),
        source: Source::Bundled,
        fetched_at: super::BUNDLED_AT,
        error: None,
    }
}

pub(super) fn cached() -> Option<Loaded> {
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
pub(super) fn load_blocking(refresh: bool) -> Loaded {
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
pub(super) fn package_name(spec: &str) -> &str {
    spec.rsplit_once('@')
        .filter(|(n, _)| !n.is_empty())
        .map_or(spec, |(n, _)| n)
}

/// The configured agents an entry stands for: installed from it, or
/// running its command or package.
pub(super) fn configured_as(
    agent: &RegistryAgent,
    defs: &[crate::core::config::model::AgentDef],
) -> Vec<String> {
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
pub(super) fn update_of(def: &crate::core::config::model::AgentDef, registry: &Registry) -> Option<Update> {
    let r = def.registry.as_ref()?;
    let entry = registry.agents.iter().find(|a| a.id == r.id)?;
    super::newer(&entry.version, &r.version).then(|| Update {
        agent: def.name.clone(),
        id: r.id.clone(),
        installed: r.version.clone(),
        available: entry.version.clone(),
    })
}

/// The entry's icon as a file in the cache, `registry-icons/ID-symbolic.svg`
/// (a name GTK recolours with the text, as it does the theme's symbolic
/// icons): the bundled copy's, or else fetched from its address when
/// `network` says the registry was reachable.
pub(super) fn cached_icon(agent: &RegistryAgent, network: bool) -> Option<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config::model::{AgentDef, RegistryRef};
    use crate::core::registry::install::{names_in, unique_name};
    use serde_json::json;

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
