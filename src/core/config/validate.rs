//! `Validate(text)`: syntax errors, schema violations mapped back to their
//! line and column, duplicate agent names, and warnings (unknown keys, a
//! command not found, an idle limit under a minute).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use super::model::{parse_duration, Config};
pub use super::parse::{decode, key_path, parse};
use super::parse::{parse_with, Converter, LineIndex, Span};
use crate::i18n::gettext_f;

pub use crate::core::types::problem::Problem;

pub struct Validated {
    /// Errors and warnings, in text order.
    pub problems: Vec<Problem>,
    /// The configuration, when there are no errors.
    pub config: Option<Config>,
}

impl Validated {
    pub fn valid(&self) -> bool {
        self.config.is_some()
    }
    pub fn errors(&self) -> Vec<Problem> {
        self.problems.iter().filter(|p| !p.warning).cloned().collect()
    }
    pub fn warnings(&self) -> Vec<Problem> {
        self.problems.iter().filter(|p| p.warning).cloned().collect()
    }
}

pub const SCHEMA_TEXT: &str = include_str!("../../../data/config.schema.json");

pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| serde_json::from_str(SCHEMA_TEXT).unwrap_or(Value::Null))
}

fn validator() -> Option<&'static jsonschema::Validator> {
    static V: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    V.get_or_init(|| jsonschema::validator_for(schema()).ok())
        .as_ref()
}

/// `validate` for a file's bytes: text that is not UTF-8 is one error.
pub fn validate_bytes(bytes: &[u8]) -> Validated {
    match decode(bytes) {
        Ok(text) => validate(text),
        Err(problem) => Validated {
            problems: vec![problem],
            config: None,
        },
    }
}

/// What an agent is known to offer for a default (`agent`, key, value):
/// `None` when not known (it has not answered a session yet), else
/// `Some(Err(what it offers))` when it does not offer that value.
pub type DefaultsCheck<'a> = &'a dyn Fn(&str, &str, &Value) -> Option<Result<(), String>>;

pub fn validate(text: &str) -> Validated {
    validate_knowing(text, &|_, _, _| None)
}

/// `validate`, and a warning for each agent default that the agent, at its
/// last session, did not offer (see `DefaultsCheck`).
pub fn validate_knowing(text: &str, offered: DefaultsCheck<'_>) -> Validated {
    let index = LineIndex::new(text);
    let mut conv = Converter::default();
    let value = match parse_with(text, &mut conv) {
        Ok(v) => v,
        Err(p) => {
            return Validated {
                problems: vec![p],
                config: None,
            }
        }
    };
    let mut problems: Vec<Problem> = conv.duplicates.iter().map(|d| d.problem(&index)).collect();
    let at = |pointer: &str, on_key: bool| -> (usize, usize) {
        let span = conv
            .spans
            .get(pointer)
            .copied()
            .unwrap_or(Span { key: None, value: 0 });
        let offset = if on_key {
            span.key.unwrap_or(span.value)
        } else {
            span.value
        };
        index.at(offset)
    };
    let mut push = |pointer: &str, on_key: bool, message: String, warning: bool| {
        let (line, column) = at(pointer, on_key);
        problems.push(Problem {
            line,
            column,
            message,
            warning,
        });
    };

    if let Some(v) = validator() {
        for error in v.iter_errors(&value) {
            let pointer = error.instance_path().to_string();
            let path = key_path(&pointer);
            let message = schema_message(&path, &pointer, &error);
            push(&pointer, false, message, false);
        }
    }

    // Duplicate agent names.
    if let Some(agents) = value.get("agents").and_then(Value::as_array) {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, agent) in agents.iter().enumerate() {
            let Some(name) = agent.get("name").and_then(Value::as_str) else {
                continue;
            };
            if let Some(first) = seen.get(name) {
                push(
                    &format!("/agents/{i}/name"),
                    false,
                    gettext_f(
                        "agents[{index}].name: the name \"{name}\" is already used by agents[{first}]",
                        &[
                            ("index", &i.to_string()),
                            ("name", name),
                            ("first", &first.to_string()),
                        ],
                    ),
                    false,
                );
            } else {
                seen.insert(name, i);
            }
        }
    }

    // Hosts: one Parley can reach, and a cwd that names a place there.
    if let Some(agents) = value.get("agents").and_then(Value::as_array) {
        for (i, agent) in agents.iter().enumerate() {
            let Some(host) = agent.get("host").and_then(Value::as_str) else {
                continue;
            };
            if host.trim().is_empty() {
                continue;
            }
            if let Err(why) = crate::core::remote::Host::parse(host) {
                push(
                    &format!("/agents/{i}/host"),
                    false,
                    gettext_f(
                        "agents[{index}].host: {why}",
                        &[("index", &i.to_string()), ("why", &why)],
                    ),
                    false,
                );
            }
            let cwd = agent.get("cwd").and_then(Value::as_str).unwrap_or("");
            if !cwd.trim().starts_with('/') {
                let (ptr, key) = if agent.get("cwd").is_some() {
                    (format!("/agents/{i}/cwd"), "cwd")
                } else {
                    (format!("/agents/{i}/host"), "host")
                };
                push(
                    &ptr,
                    false,
                    gettext_f(
                        "agents[{index}].{key}: an agent on another host needs an absolute cwd (a path on that host)",
                        &[("index", &i.to_string()), ("key", key)],
                    ),
                    false,
                );
            }
        }
    }

    // Permission rules' globs.
    if let Some(rules) = value.get("permissions").and_then(Value::as_array) {
        for (i, rule) in rules.iter().enumerate() {
            for key in ["title", "path"] {
                let Some(glob) = rule.get(key).and_then(Value::as_str) else {
                    continue;
                };
                if let Err(e) = crate::core::config::rules::compile(glob, key == "path") {
                    push(
                        &format!("/permissions/{i}/{key}"),
                        false,
                        gettext_f(
                            "permissions[{index}].{key}: not a glob: {error}",
                            &[("index", &i.to_string()), ("key", key), ("error", &e)],
                        ),
                        false,
                    );
                }
            }
        }
    }

    // Warnings: unknown keys.
    for (object_ptr, key, _) in &conv.keys {
        if let Some(known) = known_keys(object_ptr) {
            if !known.contains(&key.as_str()) {
                let ptr = format!("{object_ptr}/{}", key.replace('~', "~0").replace('/', "~1"));
                push(
                    &ptr,
                    true,
                    gettext_f(
                        "{path}: unknown key \"{key}\" is ignored",
                        &[("path", &key_path(&ptr)), ("key", key)],
                    ),
                    true,
                );
            }
        }
    }

    // Warnings: defaults the agent did not offer at its last session.
    if let Some(agents) = value.get("agents").and_then(Value::as_array) {
        for (i, agent) in agents.iter().enumerate() {
            let Some(name) = agent.get("name").and_then(Value::as_str) else {
                continue;
            };
            let mut asked: Vec<(String, &str, &Value)> = Vec::new();
            if let Some(mode) = agent.get("startMode").filter(|v| v.is_string()) {
                asked.push((format!("/agents/{i}/startMode"), "mode", mode));
            }
            for (key, v) in agent
                .get("defaults")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let ptr = format!(
                    "/agents/{i}/defaults/{}",
                    key.replace('~', "~0").replace('/', "~1")
                );
                asked.push((ptr, key, v));
            }
            for (ptr, key, v) in asked {
                if let Some(Err(offers)) = offered(name, key, v) {
                    let shown = v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
                    push(
                        &ptr,
                        false,
                        gettext_f(
                            "{path}: {agent} did not offer “{value}” at its last session (it offered {offers}); the default is left out",
                            &[
                                ("path", &key_path(&ptr)),
                                ("agent", name),
                                ("value", &shown),
                                ("offers", &offers),
                            ],
                        ),
                        true,
                    );
                }
            }
        }
    }

    // Warnings: commands not found, idle limit under a minute.
    if let Some(agents) = value.get("agents").and_then(Value::as_array) {
        let mut cache: HashMap<(String, Option<String>), bool> = HashMap::new();
        for (i, agent) in agents.iter().enumerate() {
            let Some(command) = agent.get("command").and_then(Value::as_str) else {
                continue;
            };
            // On another host it is looked for there, when it starts.
            if agent
                .get("host")
                .and_then(Value::as_str)
                .is_some_and(|h| !h.trim().is_empty())
            {
                continue;
            }
            if command.is_empty() || command.contains('/') || crate::core::launch::bundled(command).is_some()
            {
                continue;
            }
            let env_path = agent
                .get("env")
                .and_then(|e| e.get("PATH"))
                .and_then(Value::as_str);
            let found = *cache
                .entry((command.to_owned(), env_path.map(str::to_owned)))
                .or_insert_with(|| {
                    {
                        // The login shell's PATH if it is known already:
                        // validation runs on each keystroke and never waits.
                        let dirs = crate::core::launch::search_dirs(
                            env_path,
                            crate::core::launch::login_shell_path_now(),
                        );
                        crate::core::launch::resolve_program(command, std::path::Path::new("/"), &dirs)
                            .is_some()
                    }
                });
            if !found {
                push(
                    &format!("/agents/{i}/command"),
                    false,
                    {
                        let mut text = gettext_f(
                            "agents[{index}].command: {command} was not found on PATH",
                            &[("index", &i.to_string()), ("command", command)],
                        );
                        if let Some(hint) = crate::core::launch::install_hint(command) {
                            text.push_str(&gettext_f("; install it with {hint}", &[("hint", hint)]));
                        }
                        text
                    },
                    true,
                );
            }
        }
    }
    if let Some(idle) = value
        .get("limits")
        .and_then(|l| l.get("stopIdleAgentsAfter"))
        .and_then(Value::as_str)
        .and_then(parse_duration)
    {
        if !idle.is_zero() && idle.as_secs() < 60 {
            push(
                "/limits/stopIdleAgentsAfter",
                false,
                crate::i18n::gettext(
                    "limits.stopIdleAgentsAfter: under one minute, agents will stop very often",
                ),
                true,
            );
        }
    }

    problems.sort_by_key(|p| (p.line, p.column, p.warning));
    let config = if problems.iter().any(|p| !p.warning) {
        None
    } else {
        match serde_json::from_value::<Config>(value) {
            Ok(c) => Some(c),
            Err(e) => {
                problems.insert(
                    0,
                    Problem {
                        line: 1,
                        column: 1,
                        message: e.to_string(),
                        warning: false,
                    },
                );
                None
            }
        }
    };
    Validated { problems, config }
}

/// The keys the schema knows for the object at `pointer`; `None` where any
/// key is fine (env, headers, defaults).
fn known_keys(pointer: &str) -> Option<&'static [&'static str]> {
    let segs: Vec<&str> = pointer.split('/').skip(1).collect();
    match segs.as_slice() {
        [] => Some(&[
            "$schema",
            "theme",
            "language",
            "limits",
            "agents",
            "mcpServers",
            "channels",
            "permissions",
        ]),
        ["limits"] => Some(&[
            "maxRunningAgents",
            "stopIdleAgentsAfter",
            "maxTerminalsPerAgent",
            "turnSilenceWarning",
        ]),
        ["permissions", i] if i.parse::<usize>().is_ok() => {
            Some(&["agents", "kind", "title", "path", "decision"])
        }
        ["agents", i] if i.parse::<usize>().is_ok() => Some(&[
            "name",
            "title",
            "icon",
            "description",
            "command",
            "args",
            "env",
            "cwd",
            "host",
            "mcpServers",
            "additionalDirectories",
            "defaults",
            "startMode",
            "registry",
            "worktree",
        ]),
        ["mcpServers", i] | ["agents", _, "mcpServers", i] if i.parse::<usize>().is_ok() => {
            Some(&["name", "type", "command", "args", "env", "url", "headers"])
        }
        ["channels", i] if i.parse::<usize>().is_ok() => {
            Some(&["name", "kind", "events", "agents", "command", "args"])
        }
        _ => None,
    }
}

fn schema_message(path: &str, pointer: &str, error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match error.kind() {
        K::Required { property } => gettext_f(
            "{path}: the key {key} is required",
            &[("path", path), ("key", &property.to_string())],
        ),
        K::Type { kind } => gettext_f(
            "{path}: expected {type}",
            &[
                ("path", path),
                (
                    "type",
                    &format!("{kind:?}")
                        .to_lowercase()
                        .replace("single(", "")
                        .replace(')', ""),
                ),
            ],
        ),
        K::Enum { options } => gettext_f(
            "{path}: must be one of {options}",
            &[("path", path), ("options", &options.to_string())],
        ),
        K::Minimum { limit } => gettext_f(
            "{path}: must be at least {limit}",
            &[("path", path), ("limit", &limit.to_string())],
        ),
        K::MinLength { .. } => gettext_f("{path}: must not be empty", &[("path", path)]),
        K::Pattern { .. } if pointer.ends_with("stopIdleAgentsAfter") => gettext_f(
            "{path}: not a duration (write e.g. \"15m\", \"1h 30m\", or \"0\" for never)",
            &[("path", path)],
        ),
        K::Pattern { pattern } => gettext_f(
            "{path}: does not have the expected form {pattern}",
            &[("path", path), ("pattern", pattern)],
        ),
        K::UniqueItems => gettext_f("{path}: has duplicate items", &[("path", path)]),
        _ => format!("{path}: {error}"),
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
