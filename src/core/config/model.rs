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
    pub channels: Vec<Channel>,
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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_running_agents: 4,
            stop_idle_agents_after: "15m".into(),
            max_terminals_per_agent: 8,
        }
    }
}

impl Limits {
    /// `None` means never (`"0"`).
    pub fn idle_after(&self) -> Option<Duration> {
        parse_duration(&self.stop_idle_agents_after).filter(|d| !d.is_zero())
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
    pub mcp_servers: Vec<Value>,
}

impl AgentDef {
    pub fn title_or_name(&self) -> &str {
        if self.title.is_empty() {
            &self.name
        } else {
            &self.title
        }
    }

    /// The working directory: `~` expanded, relative paths below the home
    /// directory, the home directory when unset.
    pub fn working_dir(&self) -> PathBuf {
        let home = home_dir();
        let cwd = self.cwd.trim();
        if cwd.is_empty() || cwd == "~" {
            home
        } else if let Some(rest) = cwd.strip_prefix("~/") {
            home.join(rest)
        } else if Path::new(cwd).is_absolute() {
            PathBuf::from(cwd)
        } else {
            home.join(cwd)
        }
    }
}

pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

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
