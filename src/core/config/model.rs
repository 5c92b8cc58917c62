//! The configuration's shape, as read after validation. The JSON Schema in
//! `data/config.schema.json` is the authority; these types follow it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    pub theme: Theme,
    pub language: String,
    pub limits: Limits,
    pub agents: Vec<AgentDef>,
    /// MCP servers for every agent.
    pub mcp_servers: Vec<McpServerDef>,
    pub channels: Vec<Channel>,
    /// What the turns' checkpoints keep.
    pub checkpoints: CheckpointSettings,
    /// A command that opens a file at a line (`{file}`, `{line}`); empty:
    /// the desktop's default application.
    pub editor: String,
    /// Open each file an agent's tool call names as it comes.
    pub follow_agent: bool,
    /// Permission rules, in order: the first that matches answers.
    pub permissions: Vec<PermissionRule>,
}

/// A rule of `permissions`: which requests it answers, and how.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRule {
    /// Only these agents (by name); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    /// The tool call's kind (`read`, `edit`, … `other`); any kind when
    /// absent, but never a call with no kind unless this says `other`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A glob the tool call's title must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A glob every path the tool call touches must match (`~` expanded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub decision: Decision,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allow,
    Reject,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Limits {
    pub max_running_agents: u32,
    pub stop_idle_agents_after: String,
    pub max_terminals_per_agent: u32,
    /// A turn with no word from the agent for this long is marked "not
    /// responding" (`"0"`: never).
    pub turn_silence_warning: String,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_running_agents: 4,
            stop_idle_agents_after: "15m".into(),
            max_terminals_per_agent: 8,
            turn_silence_warning: "5m".into(),
        }
    }
}

impl Limits {
    /// `None` means never (`"0"`).
    pub fn idle_after(&self) -> Option<Duration> {
        parse_duration(&self.stop_idle_agents_after).filter(|d| !d.is_zero())
    }

    /// `None` means never (`"0"`).
    pub fn silence_warning(&self) -> Option<Duration> {
        parse_duration(&self.turn_silence_warning).filter(|d| !d.is_zero())
    }
}

/// `checkpoints`: Parley's snapshots of the agents' directories per turn.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CheckpointSettings {
    pub enabled: bool,
    /// Turns older than this lose their checkpoints (`"0"`: never).
    pub keep_for: String,
    /// Past this many MiB in all, the oldest turns' checkpoints go.
    pub max_size_mib: u64,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings {
            enabled: true,
            keep_for: "30d".into(),
            max_size_mib: 2048,
        }
    }
}

/// `"15m"`, `"1h 30m"`, `"90s"`, or `"0"` for never.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    if t == "0" {
        return Some(Duration::ZERO);
    }
    humantime::parse_duration(t).ok()
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentDef {
    pub name: String,
    pub title: String,
    pub icon: String,
    pub description: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: String,
    /// Where it runs: `ssh://[user@]host[:port]`, `toolbox://NAME`,
    /// `distrobox://NAME` or `podman://CONTAINER`; here when empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    pub mcp_servers: Vec<McpServerDef>,
    pub additional_directories: Vec<String>,
    /// Session option values (by option id or category) for new sessions.
    pub defaults: BTreeMap<String, Value>,
    /// The mode every new session starts in (`defaults.mode`, said plainly;
    /// it wins over `defaults.mode`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub start_mode: String,
    /// Where Add Agent installed it from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<RegistryRef>,
    /// Whether its new conversations work in a git worktree of their own.
    #[serde(skip_serializing_if = "WorktreeMode::is_never")]
    pub worktree: WorktreeMode,
}

/// An agent's `worktree`: whether a new conversation gets a worktree of
/// its own (`always`), the window asks (`ask`), or not (`never`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WorktreeMode {
    Always,
    Ask,
    #[default]
    Never,
}

impl WorktreeMode {
    pub fn is_never(&self) -> bool {
        *self == WorktreeMode::Never
    }
}

/// An agent's `registry`: the ACP registry entry and version it came from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct RegistryRef {
    pub id: String,
    pub version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub distribution: String,
}

impl AgentDef {
    /// The option values a new session is given, in order: `startMode`
    /// first (as the `mode` category), then `defaults` (without a `mode`
    /// that `startMode` replaces).
    pub fn session_defaults(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        if !self.start_mode.is_empty() {
            out.push(("mode".to_owned(), Value::String(self.start_mode.clone())));
        }
        for (k, v) in &self.defaults {
            if k != "mode" || self.start_mode.is_empty() {
                out.push((k.clone(), v.clone()));
            }
        }
        out
    }

    pub fn title_or_name(&self) -> &str {
        if self.title.is_empty() {
            &self.name
        } else {
            &self.title
        }
    }

    /// The working directory: `~` expanded, relative paths below the home
    /// directory, the home directory when unset. On another host, the
    /// path as written (validation asks for an absolute one there).
    pub fn working_dir(&self) -> PathBuf {
        if self.is_remote() {
            return PathBuf::from(self.cwd.trim());
        }
        expand_dir(&self.cwd)
    }

    /// Whether it runs on another host or in a container (`host`).
    pub fn is_remote(&self) -> bool {
        !self.host.trim().is_empty()
    }

    /// Where it runs, when not here; an error for a `host` Parley cannot
    /// read (validation refuses those).
    pub fn remote_host(&self) -> Option<Result<crate::core::remote::Host, String>> {
        self.is_remote()
            .then(|| crate::core::remote::Host::parse(&self.host))
    }

    /// The working directory the agent may start in, or why not: it must be
    /// a directory, and without a home only an absolute `cwd` names one
    /// (an agent never runs in `/` unless its `cwd` says so).
    pub fn checked_working_dir(&self) -> Result<PathBuf, String> {
        let cwd = self.cwd.trim();
        if self.is_remote() {
            // Checked on the far side, by Parley's helper.
            return if Path::new(cwd).is_absolute() {
                Ok(PathBuf::from(cwd))
            } else {
                Err(crate::i18n::gettext(
                    "an agent on another host needs an absolute cwd (a path on that host)",
                ))
            };
        }
        if !Path::new(cwd).is_absolute() && home().is_none() {
            return Err(crate::i18n::gettext(
                "there is no home directory (HOME is not set and the password database names none), so the agent has no working directory: give it a cwd",
            ));
        }
        let dir = self.working_dir();
        let shown = dir.display().to_string();
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => Ok(dir),
            Ok(_) => Err(crate::i18n::gettext_f(
                "the working directory {cwd} is not a directory",
                &[("cwd", &shown)],
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(crate::i18n::gettext_f(
                "the working directory {cwd} does not exist",
                &[("cwd", &shown)],
            )),
            Err(e) => Err(crate::i18n::gettext_f(
                "the working directory {cwd} cannot be used: {error}",
                &[("cwd", &shown), ("error", &e.to_string())],
            )),
        }
    }

    /// `additionalDirectories`, expanded as the working directory is.
    pub fn additional_dirs(&self) -> Vec<PathBuf> {
        if self.is_remote() {
            return self.additional_directories.iter().map(PathBuf::from).collect();
        }
        self.additional_directories
            .iter()
            .map(|d| expand_dir(d))
            .collect()
    }
}

fn expand_dir(dir: &str) -> PathBuf {
    let home = home_dir();
    let dir = dir.trim();
    if dir.is_empty() || dir == "~" {
        home
    } else if let Some(rest) = dir.strip_prefix("~/") {
        home.join(rest)
    } else if Path::new(dir).is_absolute() {
        PathBuf::from(dir)
    } else {
        home.join(dir)
    }
}

/// An MCP server of the configuration (the schema's `mcpServer`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct McpServerDef {
    pub name: String,
    #[serde(rename = "type")]
    pub transport: McpTransport,
    pub command: String,
    pub args: Vec<String>,
    pub env: NameValues,
    pub url: String,
    pub headers: NameValues,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    #[default]
    Stdio,
    Http,
    Sse,
}

impl McpTransport {
    pub fn name(self) -> &'static str {
        match self {
            McpTransport::Stdio => "stdio",
            McpTransport::Http => "http",
            McpTransport::Sse => "sse",
        }
    }
}

/// Environment variables or HTTP headers: an object, or the protocol's
/// own list of `{name, value}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum NameValues {
    Map(BTreeMap<String, String>),
    List(Vec<NameValue>),
}

impl Default for NameValues {
    fn default() -> Self {
        NameValues::Map(BTreeMap::new())
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

impl NameValues {
    pub fn pairs(&self) -> Vec<(String, String)> {
        match self {
            NameValues::Map(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            NameValues::List(l) => l.iter().map(|p| (p.name.clone(), p.value.clone())).collect(),
        }
    }
}

pub use crate::core::home::{home, home_dir};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    Desktop,
    Command,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
    pub name: String,
    pub kind: ChannelKind,
    #[serde(default)]
    pub events: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_duration("15m"), Some(Duration::from_secs(900)));
        assert_eq!(parse_duration("1h 30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("soon"), None);
        let limits = Limits {
            max_running_agents: 1,
            stop_idle_agents_after: "0".into(),
            ..Limits::default()
        };
        assert_eq!(limits.idle_after(), None);
    }
}
