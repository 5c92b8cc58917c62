//! `Validate(text)`: syntax errors, schema violations mapped back to their
//! line and column, duplicate agent names, and warnings (unknown keys, a
//! command not found, an idle limit under a minute).

use std::collections::HashMap;
use std::sync::OnceLock;

use jsonc_parser::ast;
use serde_json::{Map, Value};

use super::model::{parse_duration, Config};
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

/// Byte offset → 1-based line and column (in characters).
struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }
    fn at(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, column + 1)
    }
}

/// Where a JSON pointer's key and value start in the text.
#[derive(Clone, Copy)]
struct Span {
    key: Option<usize>,
    value: usize,
}

#[derive(Default)]
struct Converter {
    spans: HashMap<String, Span>,
    /// (pointer of the object, key, key offset) for every key.
    keys: Vec<(String, String, usize)>,
    /// Keys given twice in one object, at any depth. serde_json (and the
    /// map below) keeps the last one, so the first would be dropped without
    /// a word: each is an error instead.
    duplicates: Vec<Duplicate>,
}

struct Duplicate {
    /// The pointer of the key given again.
    pointer: String,
    key: String,
    /// Offsets of the second occurrence and of the first.
    at: usize,
    first: usize,
}

impl Duplicate {
    fn problem(&self, index: &LineIndex<'_>) -> Problem {
        let (line, column) = index.at(self.at);
        let (first_line, _) = index.at(self.first);
        Problem {
            line,
            column,
            message: gettext_f(
                "{path}: duplicate key \"{key}\" (first at line {line})",
                &[
                    ("path", &key_path(&self.pointer)),
                    ("key", &self.key),
                    ("line", &first_line.to_string()),
                ],
            ),
            warning: false,
        }
    }
}

impl Converter {
    fn value(&mut self, v: &ast::Value<'_>, pointer: &str, key: Option<usize>) -> Value {
        let start = match v {
            ast::Value::StringLit(s) => s.range.start,
            ast::Value::NumberLit(n) => n.range.start,
            ast::Value::BooleanLit(b) => b.range.start,
            ast::Value::Object(o) => o.range.start,
            ast::Value::Array(a) => a.range.start,
            ast::Value::NullKeyword(n) => n.range.start,
        };
        self.spans.insert(pointer.to_owned(), Span { key, value: start });
        match v {
            ast::Value::StringLit(s) => Value::String(s.value.to_string()),
            ast::Value::NumberLit(n) => serde_json::from_str(n.value).unwrap_or(Value::Null),
            ast::Value::BooleanLit(b) => Value::Bool(b.value),
            ast::Value::NullKeyword(_) => Value::Null,
            ast::Value::Array(a) => Value::Array(
                a.elements
                    .iter()
                    .enumerate()
                    .map(|(i, e)| self.value(e, &format!("{pointer}/{i}"), None))
                    .collect(),
            ),
            ast::Value::Object(o) => {
                let mut map = Map::new();
                let mut first_at: HashMap<&str, usize> = HashMap::new();
                for prop in &o.properties {
                    let name = prop.name.as_str();
                    let key_start = match &prop.name {
                        ast::ObjectPropName::String(s) => s.range.start,
                        ast::ObjectPropName::Word(w) => w.range.start,
                    };
                    self.keys.push((pointer.to_owned(), name.to_owned(), key_start));
                    let child = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                    if let Some(&first) = first_at.get(name) {
                        self.duplicates.push(Duplicate {
                            pointer: child.clone(),
                            key: name.to_owned(),
                            at: key_start,
                            first,
                        });
                    } else {
                        first_at.insert(name, key_start);
                    }
                    let value = self.value(&prop.value, &child, Some(key_start));
                    map.insert(name.to_owned(), value);
                }
                Value::Object(map)
            }
        }
    }
}

/// `/agents/0/name` → `agents[0].name`, as people read a key path.
pub fn key_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    if out.is_empty() {
        "(top level)".into()
    } else {
        out
    }
}

fn parse_options() -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Turns the text into a plain JSON value (comments and trailing commas
/// accepted), or the first syntax error or duplicate key, with its position
/// and message.
pub fn parse(text: &str) -> Result<Value, Problem> {
    let mut conv = Converter::default();
    let value = parse_with(text, &mut conv)?;
    match conv.duplicates.first() {
        Some(d) => Err(d.problem(&LineIndex::new(text))),
        None => Ok(value),
    }
}

/// The file's bytes as text, or where they stop being UTF-8.
pub fn decode(bytes: &[u8]) -> Result<&str, Problem> {
    std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let before = &bytes[..offset];
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        Problem {
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            // Unlike every other problem's, this column counts bytes, not
            // characters: what follows the bad byte is not text to count in.
            column: offset - line_start + 1,
            message: gettext_f(
                "the file is not valid UTF-8 at byte {offset}",
                &[("offset", &offset.to_string())],
            ),
            warning: false,
        }
    })
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

fn parse_with(text: &str, conv: &mut Converter) -> Result<Value, Problem> {
    let index = LineIndex::new(text);
    match jsonc_parser::parse_to_ast(text, &Default::default(), &parse_options()) {
        Err(e) => {
            let (line, column) = index.at(e.range().start);
            Err(Problem {
                line,
                column,
                message: gettext_f("syntax error: {error}", &[("error", &e.kind().to_string())]),
                warning: false,
            })
        }
        Ok(result) => match result.value {
            None => Err(Problem {
                line: 1,
                column: 1,
                message: crate::i18n::gettext("the file is empty: a JSON object was expected"),
                warning: false,
            }),
            Some(v) => Ok(conv.value(&v, "", None)),
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
            let (Some(name), Some(defaults)) = (
                agent.get("name").and_then(Value::as_str),
                agent.get("defaults").and_then(Value::as_object),
            ) else {
                continue;
            };
            for (key, v) in defaults {
                if let Some(Err(offers)) = offered(name, key, v) {
                    let ptr = format!(
                        "/agents/{i}/defaults/{}",
                        key.replace('~', "~0").replace('/', "~1")
                    );
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
            "mcpServers",
            "additionalDirectories",
            "defaults",
            "registry",
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
