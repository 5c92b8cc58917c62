//! What the agent lets the user choose for a session: its config options
//! (`configOptions`, ACP stable), or, where it has none of a category, the
//! legacy `modes` (`session/set_mode`) and `models` (`session/set_model`).
//! Read from the raw answers, so one odd option cannot hide the others, and
//! bounded: an agent's lists are not trusted to be small or clean.

use serde::Serialize;
use serde_json::Value;

/// At most this many options, and choices per option, are kept.
const MAX_OPTIONS: usize = 32;
const MAX_CHOICES: usize = 200;
/// Names, values and descriptions are cut at this many characters.
const MAX_TEXT: usize = 500;

/// Where an option comes from, which says how it is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OptionSource {
    /// `configOptions`: `session/set_config_option`.
    Config,
    /// The legacy `modes`: `session/set_mode`.
    LegacyMode,
    /// The legacy `models`: `session/set_model`.
    LegacyModel,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    pub value: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The name of the group it is listed under, if the agent grouped them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum OptionValue {
    Select { current: String, choices: Vec<Choice> },
    Boolean { current: bool },
}

/// One picker by the composer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionOption {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `mode`, `model`, `thought_level` or `other` (anything else the agent
    /// names is `other`).
    pub category: String,
    #[serde(flatten)]
    pub value: OptionValue,
    pub source: OptionSource,
}

impl SessionOption {
    /// The current value as text (`true`/`false` for a boolean).
    pub fn current_text(&self) -> String {
        match &self.value {
            OptionValue::Select { current, .. } => current.clone(),
            OptionValue::Boolean { current } => current.to_string(),
        }
    }

    /// The name of the current choice (the value itself if unlisted).
    pub fn current_name(&self) -> String {
        match &self.value {
            OptionValue::Select { current, choices } => choices
                .iter()
                .find(|c| c.value == *current)
                .map(|c| c.name.clone())
                .unwrap_or_else(|| current.clone()),
            OptionValue::Boolean { current } => current.to_string(),
        }
    }

    /// Whether the current choice lets the agent edit files and run
    /// commands without asking the user: a mode of that kind by its id
    /// (claude-agent-acp's `auto` and `bypassPermissions`, codex-acp's
    /// `agent-full-access`, gemini-cli's and qwen-code's `yolo`, qwen's
    /// `auto`), or by the agent's own description of it.
    pub fn asks_nothing(&self) -> bool {
        let OptionValue::Select { current, choices } = &self.value else {
            return false;
        };
        if self.category != "mode" {
            return false;
        }
        const IDS: &[&str] = &[
            "auto",
            "bypassPermissions",
            "dontAsk",
            "yolo",
            "agent-full-access",
            "full-access",
        ];
        if IDS.contains(&current.as_str()) {
            return true;
        }
        let described = choices
            .iter()
            .find(|c| c.value == *current)
            .and_then(|c| c.description.as_deref())
            .map(str::to_lowercase)
            .unwrap_or_default();
        [
            "auto-approves all",
            "accepts all permissions",
            "without asking",
            "without approval",
        ]
        .iter()
        .any(|w| described.contains(w))
    }

    /// Whether `value` is one the option offers.
    pub fn offers(&self, value: &Value) -> bool {
        match (&self.value, value) {
            (OptionValue::Select { choices, .. }, Value::String(v)) => choices.iter().any(|c| c.value == *v),
            (OptionValue::Boolean { .. }, Value::Bool(_)) => true,
            _ => false,
        }
    }

    /// Sets the current value here (after the agent took it).
    pub fn set_current(&mut self, value: &Value) {
        match (&mut self.value, value) {
            (OptionValue::Select { current, .. }, Value::String(v)) => *current = v.clone(),
            (OptionValue::Boolean { current }, Value::Bool(b)) => *current = *b,
            _ => {}
        }
    }
}

/// The grouping order of the pickers.
pub const CATEGORIES: [&str; 4] = ["mode", "model", "thought_level", "other"];

fn category(raw: Option<&str>) -> String {
    match raw {
        Some(c) if CATEGORIES.contains(&c) => c.to_owned(),
        // Settings of the model (e.g. a context size) sit with the model.
        Some("model_config") => "model".to_owned(),
        _ => "other".to_owned(),
    }
}

/// Text from the agent, as it is shown: no control characters, bounded.
fn clean(text: &str) -> String {
    shown_text(text, MAX_TEXT)
}

/// Text from an agent or a file name, as a label shows it: no control
/// characters, and none of the invisible ones that reorder or hide text
/// (bidi overrides and isolates, zero-width marks), at most `max` chars.
pub fn shown_text(text: &str, max: usize) -> String {
    text.chars()
        .filter(|&c| {
            !c.is_control()
                && !matches!(c,
                    '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                    | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
        })
        .take(max)
        .collect()
}

fn text_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(clean)
}

/// An id or value the agent gets back: taken as it is, or not at all (one
/// with control characters or over the length limit is left out).
fn id_at(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| s.len() <= MAX_TEXT && !s.chars().any(char::is_control))
        .map(str::to_owned)
}

fn choice(v: &Value, group: Option<&str>) -> Option<Choice> {
    let value = id_at(v, "value")?;
    Some(Choice {
        name: text_at(v, "name").unwrap_or_else(|| value.clone()),
        value,
        description: text_at(v, "description").filter(|d| !d.is_empty()),
        group: group.map(str::to_owned),
    })
}

/// One entry of `configOptions`; `None` for one Parley cannot show.
fn config_option(v: &Value) -> Option<SessionOption> {
    let id = id_at(v, "id").filter(|i| !i.is_empty())?;
    let value = match v.get("type").and_then(Value::as_str)? {
        "select" => {
            let mut choices = Vec::new();
            for o in v.get("options").and_then(Value::as_array)? {
                if let Some(entries) = o.get("options").and_then(Value::as_array) {
                    // A group of choices.
                    let group = text_at(o, "name");
                    choices.extend(entries.iter().filter_map(|e| choice(e, group.as_deref())));
                } else {
                    choices.extend(choice(o, None));
                }
                if choices.len() >= MAX_CHOICES {
                    choices.truncate(MAX_CHOICES);
                    break;
                }
            }
            OptionValue::Select {
                current: id_at(v, "currentValue")?,
                choices,
            }
        }
        "boolean" => OptionValue::Boolean {
            current: v.get("currentValue").and_then(Value::as_bool)?,
        },
        _ => return None,
    };
    Some(SessionOption {
        name: text_at(v, "name").unwrap_or_else(|| id.clone()),
        id,
        description: text_at(v, "description").filter(|d| !d.is_empty()),
        category: category(v.get("category").and_then(Value::as_str)),
        value,
        source: OptionSource::Config,
    })
}

/// A list of `configOptions` (from a session answer, a
/// `config_option_update` or a `session/set_config_option` answer).
pub fn config_options(list: &Value) -> Vec<SessionOption> {
    let mut out: Vec<SessionOption> = Vec::new();
    for v in list.as_array().map(Vec::as_slice).unwrap_or_default() {
        if let Some(o) = config_option(v) {
            if !out.iter().any(|x| x.id == o.id) {
                out.push(o);
            }
        }
        if out.len() >= MAX_OPTIONS {
            break;
        }
    }
    out
}

/// The legacy `modes` or `models` state of a session answer as a picker.
fn legacy(answer: &Value, source: OptionSource) -> Option<SessionOption> {
    let (key, current, list, id_key, id, name) = match source {
        OptionSource::LegacyMode => ("modes", "currentModeId", "availableModes", "id", "mode", "Mode"),
        OptionSource::LegacyModel => (
            "models",
            "currentModelId",
            "availableModels",
            "modelId",
            "model",
            "Model",
        ),
        OptionSource::Config => return None,
    };
    let state = answer.get(key)?;
    let choices: Vec<Choice> = state
        .get(list)
        .and_then(Value::as_array)?
        .iter()
        .take(MAX_CHOICES)
        .filter_map(|m| {
            let value = id_at(m, id_key)?;
            Some(Choice {
                name: text_at(m, "name").unwrap_or_else(|| value.clone()),
                value,
                description: text_at(m, "description").filter(|d| !d.is_empty()),
                group: None,
            })
        })
        .collect();
    if choices.is_empty() {
        return None;
    }
    Some(SessionOption {
        id: id.to_owned(),
        name: name.to_owned(),
        description: None,
        category: id.to_owned(),
        value: OptionValue::Select {
            current: id_at(state, current).unwrap_or_default(),
            choices,
        },
        source,
    })
}

/// The pickers of a `session/new` (or `load`/`resume`) answer: its config
/// options, then the legacy modes and models where no config option of
/// that category exists.
pub fn from_session_answer(answer: &Value) -> Vec<SessionOption> {
    let mut out = config_options(answer.get("configOptions").unwrap_or(&Value::Null));
    for source in [OptionSource::LegacyMode, OptionSource::LegacyModel] {
        if let Some(o) = legacy(answer, source) {
            if !out.iter().any(|x| x.category == o.category) {
                out.push(o);
            }
        }
    }
    out
}

/// Keeps what a new list of config options leaves out of the legacy ones
/// (an agent that sends `config_option_update` keeps its legacy modes).
pub fn replace_config(options: &mut Vec<SessionOption>, config: Vec<SessionOption>) {
    let legacy: Vec<SessionOption> = options
        .drain(..)
        .filter(|o| o.source != OptionSource::Config && !config.iter().any(|c| c.category == o.category))
        .collect();
    *options = config;
    options.extend(legacy);
}

/// The option a configuration default names: by id, else by category.
pub fn find<'a>(options: &'a [SessionOption], key: &str) -> Option<&'a SessionOption> {
    options
        .iter()
        .find(|o| o.id == key)
        .or_else(|| options.iter().find(|o| o.category == key))
}

/// The name of the current mode when it asks nothing (see
/// [`SessionOption::asks_nothing`]).
pub fn asking_nothing(options: &[SessionOption]) -> Option<String> {
    options
        .iter()
        .find(|o| o.asks_nothing())
        .map(SessionOption::current_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_agent_acp_shape() {
        // As claude-agent-acp 0.49 answers session/new (shortened).
        let answer = json!({
            "sessionId": "s",
            "modes": {"currentModeId": "default", "availableModes": [
                {"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan Mode"}]},
            "configOptions": [
                {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": "default",
                 "options": [{"value": "default", "name": "Default"}, {"value": "plan", "name": "Plan Mode"}]},
                {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "default",
                 "options": [{"value": "default", "name": "Default", "description": "Opus · $5/$25"},
                             {"value": "sonnet", "name": "Sonnet"}]},
                {"id": "effort", "name": "Effort", "category": "thought_level", "type": "select",
                 "currentValue": "high", "options": [{"value": "high", "name": "High"}]}
            ]
        });
        let options = from_session_answer(&answer);
        let ids: Vec<_> = options.iter().map(|o| o.id.as_str()).collect();
        // The legacy modes are not repeated: a config option of that category exists.
        assert_eq!(ids, ["mode", "model", "effort"]);
        assert_eq!(options[1].current_name(), "Default");
        assert!(options[1].offers(&json!("sonnet")));
        assert!(!options[1].offers(&json!("gpt")));
        assert!(!options[1].offers(&json!(true)));
        assert_eq!(
            find(&options, "thought_level").map(|o| o.id.as_str()),
            Some("effort")
        );
    }

    #[test]
    fn legacy_modes_and_models() {
        let answer = json!({
            "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]},
            "models": {"currentModelId": "m1", "availableModels": [{"modelId": "m1", "name": "One"}]}
        });
        let options = from_session_answer(&answer);
        assert_eq!(options.len(), 2);
        assert_eq!(options[0].source, OptionSource::LegacyMode);
        assert_eq!(options[0].current_text(), "ask");
        assert_eq!(options[1].source, OptionSource::LegacyModel);
        let mut options = options;
        // A config option of category model replaces the legacy models only.
        replace_config(
            &mut options,
            config_options(
                &json!([{"id": "m", "name": "M", "category": "model", "type": "boolean", "currentValue": false}]),
            ),
        );
        let ids: Vec<_> = options.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["m", "mode"]);
    }

    #[test]
    fn hostile_lists_are_bounded_and_clean() {
        let many: Vec<Value> = (0..1000)
            .map(|i| json!({"id": format!("o{i}"), "name": "x\u{1b}[31my", "type": "boolean", "currentValue": true}))
            .collect();
        let options = config_options(&Value::Array(many));
        assert_eq!(options.len(), MAX_OPTIONS);
        assert_eq!(options[0].name, "x[31my");
        assert_eq!(shown_text("gpt\u{202E}4\u{200B}o", 10), "gpt4o");
        let odd = json!([
            {"id": "a", "type": "slider", "currentValue": 3},
            {"id": "b", "type": "select", "currentValue": "x", "options": [{"group": "g", "name": "G",
                "options": [{"value": "x", "name": "X"}]}], "category": "speed"},
            {"type": "boolean", "currentValue": true},
            {"id": "b", "type": "boolean", "currentValue": true},
            {"id": "c\u{7}", "type": "boolean", "currentValue": true}
        ]);
        let options = config_options(&odd);
        assert_eq!(
            options.len(),
            1,
            "unknown types, missing, repeated and unclean ids are left out, never rewritten"
        );
        assert_eq!(options[0].category, "other");
        match &options[0].value {
            OptionValue::Select { choices, .. } => assert_eq!(choices[0].group.as_deref(), Some("G")),
            other => panic!("{other:?}"),
        }
    }
}
