//! The ACP agent registry: a public `registry.json` of agents and how each
//! is distributed (a binary archive per platform, or an `npx` / `uvx`
//! package). Parley lists it, installs an agent from it into the
//! configuration, and offers updates of the agents it installed.
//!
//! - [`fetch`]: HTTPS through libsoup 3 (the desktop's proxy, glib-networking's TLS).
//! - [`unpack`]: archives unpacked so that nothing lands outside their directory.
//! - [`service`]: `RegistryService` on [`crate::core::services::Core`]: List, Add, Update, Remove, Cancel.
//!
//! Everything read from the registry is untrusted: entries with an id or a
//! version that could name another directory are dropped, and so is an
//! entry that does not parse.

pub mod fetch;
mod install;
pub mod listing;
pub mod service;
pub mod unpack;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where the registry is published (the RFD "acp-agent-registry").
pub const DEFAULT_URL: &str = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/// The copy that ships with Parley, for when there is no network.
pub const BUNDLED: &str = include_str!("../../../data/registry.json");

/// When the bundled copy was taken (Unix seconds), shown as its age.
pub const BUNDLED_AT: u64 = 1_770_488_559; // 2026-02-07

/// The bundled entries' icons, by id: the SVG text.
pub const BUNDLED_ICONS: &str = include_str!("../../../data/registry-icons.json");

/// The registry's address: `PARLEY_REGISTRY_URL` (tests, mirrors) or the published one.
pub fn url() -> String {
    std::env::var("PARLEY_REGISTRY_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| DEFAULT_URL.to_owned())
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    #[serde(default)]
    pub version: String,
    pub agents: Vec<RegistryAgent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryAgent {
    pub id: String,
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub repository: String,
    #[serde(default)]
    pub authors: Vec<String>,
    #[serde(default)]
    pub license: String,
    /// The address of a single-colour SVG.
    #[serde(default)]
    pub icon: String,
    pub distribution: Distribution,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<BTreeMap<String, BinaryTarget>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npx: Option<Package>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uvx: Option<Package>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryTarget {
    pub archive: String,
    pub cmd: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Hex SHA-256 of the archive, where the registry gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The archive's size in bytes, where the registry gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Package {
    pub package: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// How Parley would install an agent here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Binary,
    Npx,
    Uvx,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Binary => "binary",
            Method::Npx => "npx",
            Method::Uvx => "uvx",
        }
    }
}

/// This machine's platform key, e.g. `linux-x86_64`.
pub fn platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

impl RegistryAgent {
    /// The binary for this platform, if there is one.
    pub fn binary(&self) -> Option<&BinaryTarget> {
        self.distribution.binary.as_ref()?.get(&platform())
    }

    /// A binary for this platform first (no runtime needed), then npx, then uvx.
    pub fn method(&self) -> Option<Method> {
        if self.binary().is_some() {
            Some(Method::Binary)
        } else if self.distribution.npx.is_some() {
            Some(Method::Npx)
        } else if self.distribution.uvx.is_some() {
            Some(Method::Uvx)
        } else {
            None
        }
    }
}

/// An id or version that is safe as one directory name.
fn is_safe_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && id.len() <= 64
}

fn is_safe_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 64
        && v.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && v.chars().all(|c| c.is_ascii_alphanumeric() || ".-+_".contains(c))
}

/// Parses a registry, dropping entries that do not parse or whose id or
/// version is unsafe; `None` when the text is not a registry at all.
pub fn parse(text: &str) -> Option<Registry> {
    #[derive(Deserialize)]
    struct Raw {
        #[serde(default)]
        version: String,
        agents: Vec<Value>,
    }
    let raw: Raw = serde_json::from_str(text).ok()?;
    let agents = raw
        .agents
        .into_iter()
        .filter_map(|v| serde_json::from_value::<RegistryAgent>(v).ok())
        .filter(|a| is_safe_id(&a.id) && is_safe_version(&a.version))
        .collect();
    Some(Registry {
        version: raw.version,
        agents,
    })
}

/// Compares two versions by their numeric parts (`1.10.0` > `1.9.2`);
/// anything after a `-` sorts before the plain release.
pub fn newer(candidate: &str, installed: &str) -> bool {
    fn key(v: &str) -> (Vec<u64>, bool) {
        let (main, pre) = match v.split_once('-') {
            Some((m, _)) => (m, true),
            None => (v, false),
        };
        let nums = main
            .split(['.', '+'])
            .map(|p| p.parse::<u64>().unwrap_or(0))
            .collect();
        (nums, !pre)
    }
    let (a, ar) = key(candidate);
    let (b, br) = key(installed);
    (a, ar) > (b, br)
}

/// `$XDG_CACHE_HOME/parley`.
pub fn cache_dir() -> PathBuf {
    xdg("XDG_CACHE_HOME", ".cache").join("parley")
}

/// Where binary agents are installed: `$XDG_DATA_HOME/parley/agents`.
pub fn agents_dir() -> PathBuf {
    xdg("XDG_DATA_HOME", ".local/share").join("parley").join("agents")
}

fn xdg(var: &str, fallback: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| crate::core::config::model::home_dir().join(fallback))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_copy_parses_and_every_entry_installs_here_somehow() {
        let r = parse(BUNDLED).expect("bundled registry");
        assert!(r.agents.len() >= 8, "{}", r.agents.len());
        for a in &r.agents {
            assert!(
                a.method().is_some() || a.distribution.binary.is_some(),
                "{}",
                a.id
            );
        }
    }

    #[test]
    fn unsafe_ids_and_versions_are_dropped() {
        let text = r#"{"version": "1", "agents": [
            {"id": "../etc", "name": "x", "version": "1.0.0", "distribution": {}},
            {"id": "ok", "name": "x", "version": "../1", "distribution": {}},
            {"id": "fine", "name": "Fine", "version": "1.2.3", "distribution": {"npx": {"package": "p"}}},
            {"id": "broken", "name": 3}
        ]}"#;
        let r = parse(text).expect("parses");
        assert_eq!(r.agents.len(), 1);
        assert_eq!(r.agents[0].id, "fine");
        assert_eq!(r.agents[0].method(), Some(Method::Npx));
        assert!(parse("[]").is_none());
    }

    #[test]
    fn versions_compare_by_number() {
        assert!(newer("1.10.0", "1.9.2"));
        assert!(newer("0.27.3", "0.27.2"));
        assert!(!newer("1.0.0", "1.0.0"));
        assert!(newer("1.0.0", "1.0.0-rc.1"));
        assert!(!newer("1.0.0-rc.1", "1.0.0"));
    }
}
