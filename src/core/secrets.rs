//! Saved keys: the values of `env_var` methods (and the keys an agent method
//! wants), kept in the user's keyring through the Secret Service (`oo7`,
//! which uses the Secret portal inside Flatpak) and passed in the agent's
//! environment at every start.
//!
//! Each value is one keyring item with the attributes `application`,
//! `configuration` (the configuration file's path, so that another
//! configuration's agent of the same name gets none of them), `agent` and
//! `variable`. Which variables are saved (the names, never the values) is
//! also kept in `$XDG_STATE_HOME/parley/saved-keys.json`, so that an agent
//! with no saved keys starts without asking the keyring anything.
//!
//! A value never goes to a log, an event, the configuration or an answer of
//! `parley-cli`: it lives in [`Secret`], whose `Debug` hides it, and in the
//! agent's environment.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::core::config::store;
use crate::i18n::{gettext, gettext_f};

const APPLICATION: &str = "io.github.parley.Parley";
/// A keyring that does not answer (a locked one waiting on its prompt is
/// answered by the user) is given up on after this long.
const KEYRING_LIMIT: Duration = Duration::from_secs(60);

/// A value that must not be printed by accident: its `Debug` hides it, and
/// it has no `Display` or `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Self {
        Secret(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// Why the keyring could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyringError(pub String);

fn keyring_error(e: impl std::fmt::Display) -> KeyringError {
    KeyringError(gettext_f(
        "the keyring could not be used: {error}",
        &[("error", &e.to_string())],
    ))
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Index {
    /// configuration path → agent → variable names.
    saved: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

fn index_file() -> std::path::PathBuf {
    store::state_file("saved-keys.json")
}

/// The list as last read or written, with its file: the status of an agent
/// (which the window asks for on its main thread) reads no file.
static INDEX: std::sync::Mutex<Option<(std::path::PathBuf, Index)>> = std::sync::Mutex::new(None);

fn read_index() -> Index {
    let file = index_file();
    let mut cached = INDEX.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, index)) = cached.as_ref().filter(|(p, _)| *p == file) {
        return index.clone();
    }
    let index: Index = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    *cached = Some((file, index.clone()));
    index
}

fn write_index(index: &Index) {
    let file = index_file();
    *INDEX.lock().unwrap_or_else(|e| e.into_inner()) = Some((file.clone(), index.clone()));
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(text) = serde_json::to_string_pretty(index) {
        if let Err(e) = crate::core::atomic::write(&file, text.as_bytes()) {
            tracing::warn!("could not write the list of saved keys: {e}");
        }
    }
}

/// The names of the variables saved for this agent of this configuration.
pub fn saved_names(config: &str, agent: &str) -> Vec<String> {
    read_index()
        .saved
        .get(config)
        .and_then(|a| a.get(agent))
        .cloned()
        .unwrap_or_default()
}

fn attributes<'a>(config: &'a str, agent: &'a str, variable: Option<&'a str>) -> HashMap<&'a str, &'a str> {
    let mut a = HashMap::from([
        ("application", APPLICATION),
        ("configuration", config),
        ("agent", agent),
    ]);
    if let Some(v) = variable {
        a.insert("variable", v);
    }
    a
}

async fn keyring() -> Result<oo7::Keyring, KeyringError> {
    let keyring = tokio::time::timeout(KEYRING_LIMIT, oo7::Keyring::new())
        .await
        .map_err(|_| keyring_error(gettext("no answer")))?
        .map_err(keyring_error)?;
    // A locked collection asks the user (the keyring's own prompt).
    if keyring.is_locked().await.unwrap_or(false) {
        tokio::time::timeout(KEYRING_LIMIT, keyring.unlock())
            .await
            .map_err(|_| keyring_error(gettext("no answer")))?
            .map_err(keyring_error)?;
    }
    Ok(keyring)
}

/// Saves `values` for the agent, replacing earlier ones of the same names.
pub async fn save(config: &str, agent: &str, values: &[(String, Secret)]) -> Result<(), KeyringError> {
    let keyring = keyring().await?;
    for (name, value) in values {
        let label = gettext_f(
            "Parley: {variable} for {agent}",
            &[("variable", name), ("agent", agent)],
        );
        tokio::time::timeout(
            KEYRING_LIMIT,
            keyring.create_item(
                &label,
                &attributes(config, agent, Some(name)),
                value.expose(),
                true,
            ),
        )
        .await
        .map_err(|_| keyring_error(gettext("no answer")))?
        .map_err(keyring_error)?;
        // Listed as soon as it is saved: a later failure leaves no item
        // that the next start would not read.
        let mut index = read_index();
        let names = index
            .saved
            .entry(config.to_owned())
            .or_default()
            .entry(agent.to_owned())
            .or_default();
        if !names.contains(name) {
            names.push(name.clone());
            write_index(&index);
        }
    }
    Ok(())
}

/// The saved values for the agent; none (without asking the keyring) when
/// nothing was saved.
pub async fn load(config: &str, agent: &str) -> Result<Vec<(String, Secret)>, KeyringError> {
    if saved_names(config, agent).is_empty() {
        return Ok(Vec::new());
    }
    let keyring = keyring().await?;
    let items = tokio::time::timeout(
        KEYRING_LIMIT,
        keyring.search_items(&attributes(config, agent, None)),
    )
    .await
    .map_err(|_| keyring_error(gettext("no answer")))?
    .map_err(keyring_error)?;
    let mut out = Vec::new();
    for item in items {
        let Ok(attrs) = item.attributes().await else {
            continue;
        };
        let Some(name) = attrs.get("variable").filter(|n| {
            crate::core::types::auth::is_env_name(n) || *n == crate::core::types::gateway::GATEWAY_ITEM
        }) else {
            continue;
        };
        let Ok(secret) = item.secret().await else { continue };
        let Ok(value) = String::from_utf8(secret.as_bytes().to_vec()) else {
            continue;
        };
        out.push((name.clone(), Secret::new(value)));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Forgets every value saved for the agent.
pub async fn forget(config: &str, agent: &str) -> Result<(), KeyringError> {
    let mut index = read_index();
    let had = index
        .saved
        .get_mut(config)
        .and_then(|a| a.remove(agent))
        .is_some();
    if had {
        index.saved.retain(|_, agents| !agents.is_empty());
        write_index(&index);
    }
    // Asked even when the list had nothing: an item saved by an earlier
    // run whose list was lost is forgotten too.
    let keyring = keyring().await?;
    tokio::time::timeout(KEYRING_LIMIT, keyring.delete(&attributes(config, agent, None)))
        .await
        .map_err(|_| keyring_error(gettext("no answer")))?
        .map_err(keyring_error)?;
    Ok(())
}
