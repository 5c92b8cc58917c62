//! The sign-in methods an agent offers in `initialize`'s `authMethods`,
//! read from the raw JSON: the schema crate knows `agent` and `terminal`,
//! but not `env_var` (codex-acp) nor the legacy `_meta["terminal-auth"]`
//! (claude-agent-acp) nor `_meta["api-key"]` (gemini-cli).
//!
//! The list comes from the agent, so it is bounded and every string capped.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// At most this many methods are kept.
const MAX_METHODS: usize = 16;
/// At most this many variables, arguments or environment entries a method.
const MAX_ITEMS: usize = 16;
/// Names, descriptions and arguments are cut to this many bytes.
const MAX_TEXT: usize = 1024;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthMethod {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(flatten)]
    pub kind: AuthKind,
}

/// How a method signs in, by its ACP `type`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuthKind {
    /// `authenticate` with the method's id; `keys` are the values it wants
    /// first (gemini's `gemini-api-key`), saved and passed like `env_var`.
    Agent {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        keys: Vec<KeyVar>,
    },
    /// Values the user enters, passed in the agent's environment.
    EnvVar { vars: Vec<KeyVar> },
    /// A model gateway the user names (`_meta.gateway`, with the
    /// `protocol` it speaks: `anthropic`, `bedrock`, `openai`, `google`):
    /// `authenticate` with `_meta.gateway = {baseUrl, headers}`, which
    /// Parley keeps in the keyring and sends again at every start (the
    /// agents keep it in memory only).
    Gateway { protocol: String },
    /// The agent's command run in a terminal with `args` and `env` added;
    /// `command` replaces the agent's own (the legacy `terminal-auth` form).
    Terminal {
        #[serde(skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        args: Vec<String>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
}

/// One value the user enters for a method.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KeyVar {
    /// The environment variable, e.g. `CODEX_API_KEY`.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Shown as a password entry and kept in the keyring (the default).
    pub secret: bool,
    pub optional: bool,
}

impl AuthMethod {
    /// The values this method wants entered (none for a terminal method).
    pub fn keys(&self) -> &[KeyVar] {
        match &self.kind {
            AuthKind::Agent { keys } => keys,
            AuthKind::EnvVar { vars } => vars,
            AuthKind::Terminal { .. } | AuthKind::Gateway { .. } => &[],
        }
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    // No control character (a NUL would not even reach GTK, nor exec) in
    // what is shown, logged or run.
    let s: String = v?.as_str()?.chars().filter(|c| !c.is_control()).collect();
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut end = s.len().min(MAX_TEXT);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Some(s[..end].to_owned())
}

/// A name a process environment can carry and a shell could export.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 128
}

fn key_var(v: &Value) -> Option<KeyVar> {
    // Either `"NAME"` or `{"name": …, "label": …, "secret": …, "optional": …}`.
    let name = match v {
        Value::String(s) => s.clone(),
        _ => text(v.get("name"))?,
    };
    is_env_name(&name).then(|| KeyVar {
        name,
        label: text(v.get("label")),
        secret: v.get("secret").and_then(Value::as_bool).unwrap_or(true),
        optional: v.get("optional").and_then(Value::as_bool).unwrap_or(false),
    })
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().take(MAX_ITEMS).filter_map(|s| text(Some(s))).collect())
        .unwrap_or_default()
}

fn env_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter(|(k, _)| is_env_name(k))
                .filter_map(|(k, v)| Some((k.clone(), text(Some(v))?)))
                .take(MAX_ITEMS)
                .collect()
        })
        .unwrap_or_default()
}

/// The variable an API key of a known provider goes in (gemini-cli's
/// `_meta: {"api-key": {"provider": "google"}}`).
fn provider_key(meta: &Value) -> Option<KeyVar> {
    let key = meta.get("api-key")?;
    let name = match text(key.get("env")).or_else(|| text(key.get("envVar"))) {
        Some(name) => name,
        None => match key.get("provider").and_then(Value::as_str)? {
            "google" | "gemini" => "GEMINI_API_KEY".to_owned(),
            "openai" => "OPENAI_API_KEY".to_owned(),
            "anthropic" => "ANTHROPIC_API_KEY".to_owned(),
            _ => return None,
        },
    };
    let ok = is_env_name(&name);
    ok.then_some(KeyVar {
        name,
        label: None,
        secret: true,
        optional: false,
    })
}

/// A key the agent names in its words but does not declare as a field
/// (droid: "set FACTORY_API_KEY"; qwen-code's `openai` method): the first
/// word that looks like a key's variable (`…_API_KEY`, `…_KEY`,
/// `…_TOKEN`), offered as a key to keep in the keyring and pass in its
/// environment.
pub fn named_key(words: Option<&str>) -> Option<KeyVar> {
    words?
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| {
            w.len() > 4
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && ["_KEY", "_TOKEN"].iter().any(|end| w.ends_with(end))
                && is_env_name(w)
        })
        .map(|name| KeyVar {
            name: name.to_owned(),
            label: None,
            secret: true,
            optional: false,
        })
}

fn method(v: &Value) -> Option<AuthMethod> {
    let id = text(v.get("id"))?;
    let name = text(v.get("name")).unwrap_or_else(|| id.clone());
    let description = text(v.get("description"));
    let meta = v.get("_meta").cloned().unwrap_or(Value::Null);
    let kind = match v.get("type").and_then(Value::as_str) {
        Some("terminal") => AuthKind::Terminal {
            command: None,
            args: strings(v.get("args")),
            env: env_map(v.get("env")),
        },
        Some("env_var") => {
            let vars: Vec<KeyVar> = v
                .get("vars")
                .and_then(Value::as_array)
                .map(|a| a.iter().take(MAX_ITEMS).filter_map(key_var).collect())
                .unwrap_or_default();
            if vars.is_empty() {
                return None;
            }
            AuthKind::EnvVar { vars }
        }
        Some("agent") | None => match meta.get("terminal-auth") {
            // The legacy form: a command of its own.
            Some(t) if text(t.get("command")).is_some() => AuthKind::Terminal {
                command: text(t.get("command")),
                args: strings(t.get("args")),
                env: env_map(t.get("env")),
            },
            // A gateway method needs its form: never a bare button.
            _ if meta.get("gateway").is_some_and(Value::is_object) => AuthKind::Gateway {
                protocol: text(meta.pointer("/gateway/protocol")).unwrap_or_default(),
            },
            _ => AuthKind::Agent {
                keys: provider_key(&meta)
                    .or_else(|| named_key(description.as_deref()))
                    .into_iter()
                    .collect(),
            },
        },
        // A type this Parley does not know cannot be offered.
        Some(_) => return None,
    };
    Some(AuthMethod {
        id,
        name,
        description,
        kind,
    })
}

/// The methods of an `initialize` answer's `authMethods`, in its order;
/// entries that cannot be offered are left out.
pub fn parse(auth_methods: Option<&Value>) -> Vec<AuthMethod> {
    let Some(list) = auth_methods.and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out: Vec<AuthMethod> = Vec::new();
    for m in list.iter().filter_map(method) {
        if out.len() == MAX_METHODS {
            break;
        }
        if !out.iter().any(|o| o.id == m.id) {
            out.push(m);
        }
    }
    out
}

/// `AuthService.Status` and the `auth:changed` event: one agent's sign-in.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthStatus {
    pub agent: String,
    /// The agent answered "authentication required" and no sign-in has
    /// succeeded since.
    pub needs_sign_in: bool,
    /// The agent's words (or why the last sign-in failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// From the agent's last `initialize` (empty before its first start).
    pub methods: Vec<AuthMethod>,
    /// The agent offers `logout`.
    pub can_logout: bool,
    /// The id of the method being signed in with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_in: Option<String>,
    /// The names (never the values) of the keys saved for the agent.
    pub saved_keys: Vec<String>,
    /// A gateway is saved for the agent (sent at every start).
    pub gateway_saved: bool,
    /// The agent's own word on who is signed in (`_auth/status_update`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<AccountStatus>,
}

/// What an agent says of its sign-in in `_auth/status_update`
/// (`{authStatus: {kind, label, detail?, account?: {email?, organization?,
/// plan?}}}`; claude-agent-acp and codex-acp push it).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccountStatus {
    /// `none`, `account`, `api_key`, `gateway` or `external` (another is
    /// kept as it came, cut).
    pub kind: String,
    /// The agent's label, e.g. "Claude Max", "Not logged in".
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

impl AccountStatus {
    /// Read from the notification's params; `None` when it holds no status.
    pub fn parse(params: &Value) -> Option<AccountStatus> {
        let s = params.get("authStatus")?;
        let kind: String = text(s.get("kind"))?.chars().take(32).collect();
        let account = s.get("account");
        Some(AccountStatus {
            label: text(s.get("label")).unwrap_or_else(|| kind.clone()),
            kind,
            detail: text(s.get("detail")),
            email: text(account.and_then(|a| a.get("email"))),
            organization: text(account.and_then(|a| a.get("organization"))),
            plan: text(account.and_then(|a| a.get("plan"))),
        })
    }

    /// The agent says nobody is signed in.
    pub fn signed_out(&self) -> bool {
        self.kind == "none"
    }

    /// One line for the details and the sign-in page: the label, then the
    /// account's e-mail or the detail.
    pub fn summary(&self) -> String {
        match self.email.as_deref().or(self.detail.as_deref()) {
            Some(more) => format!("{} ({more})", self.label),
            None => self.label.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_three_agents_methods_are_read() {
        // What gemini-cli 0.61, claude-agent-acp 0.49 and codex-acp 0.16 send.
        let gemini = parse(Some(&json!([
            {"id": "oauth-personal", "name": "Log in with Google", "description": null},
            {"id": "gemini-api-key", "name": "Use Gemini API key", "_meta": {"api-key": {"provider": "google"}}},
        ])));
        assert_eq!(gemini[0].kind, AuthKind::Agent { keys: vec![] });
        assert_eq!(gemini[1].keys()[0].name, "GEMINI_API_KEY");
        let claude = parse(Some(&json!([
            {"id": "claude-ai-login", "name": "Log in with Claude", "type": "terminal",
             "args": ["--cli", "auth", "login", "--claudeai"],
             "_meta": {"terminal-auth": {"command": "node", "args": ["x.js", "auth"], "label": "Claude login"}}},
            {"id": "legacy", "name": "Legacy", "_meta": {"terminal-auth": {"command": "claude", "args": ["/login"]}}},
        ])));
        assert_eq!(
            claude[0].kind,
            AuthKind::Terminal {
                command: None,
                args: vec!["--cli".into(), "auth".into(), "login".into(), "--claudeai".into()],
                env: BTreeMap::new()
            }
        );
        assert!(matches!(&claude[1].kind, AuthKind::Terminal { command: Some(c), .. } if c == "claude"));
        let codex = parse(Some(&json!([
            {"id": "chatgpt", "name": "Login with ChatGPT"},
            {"id": "codex-api-key", "name": "Use CODEX_API_KEY", "type": "env_var",
             "vars": [{"name": "CODEX_API_KEY"}]},
        ])));
        assert_eq!(codex[1].keys()[0].name, "CODEX_API_KEY");
        assert!(codex[1].keys()[0].secret);
        let wire = serde_json::to_value(&codex[1]).expect("json");
        assert_eq!(wire["type"], "env_var");
        assert_eq!(wire["vars"][0]["name"], "CODEX_API_KEY");
    }

    #[test]
    fn a_key_named_in_the_description_is_offered() {
        let methods = parse(Some(&json!([
            {"id": "factory-api-key", "name": "Factory API key", "description": "Set FACTORY_API_KEY to sign in"},
            {"id": "openai", "name": "OpenAI", "description": "Use an OpenAI-compatible API (OPENAI_API_KEY, OPENAI_BASE_URL)"},
            {"id": "login", "name": "Log in", "description": "Opens your browser"},
        ])));
        assert_eq!(methods[0].keys()[0].name, "FACTORY_API_KEY");
        assert_eq!(methods[1].keys()[0].name, "OPENAI_API_KEY");
        assert!(methods[2].keys().is_empty());
    }

    #[test]
    fn gateway_methods_and_auth_status_are_read() {
        // claude-agent-acp 0.101 and gemini-cli 0.61, as they sent them.
        let methods = parse(Some(&json!([
            {"id": "gateway", "name": "Custom model gateway", "_meta": {"gateway": {"protocol": "anthropic"}}},
            {"id": "gateway", "name": "AI API Gateway", "_meta": {"gateway": {"protocol": "google", "restartRequired": "false"}}},
            {"id": "g2", "name": "Odd", "_meta": {"gateway": true}},
        ])));
        assert_eq!(methods.len(), 2, "{methods:?}");
        assert_eq!(
            methods[0].kind,
            AuthKind::Gateway {
                protocol: "anthropic".into()
            }
        );
        assert!(methods[0].keys().is_empty());
        assert_eq!(
            methods[1].kind,
            AuthKind::Agent { keys: vec![] },
            "not an object: no form"
        );
        let wire = serde_json::to_value(&methods[0]).expect("json");
        assert_eq!(wire["type"], "gateway");
        assert_eq!(wire["protocol"], "anthropic");

        let max = AccountStatus::parse(&json!({"authStatus": {"kind": "account", "label": "Claude Max",
            "account": {"plan": "max", "email": "a@b.c"}}}))
        .expect("status");
        assert_eq!(max.summary(), "Claude Max (a@b.c)");
        assert_eq!(max.plan.as_deref(), Some("max"));
        assert!(!max.signed_out());
        let none = AccountStatus::parse(&json!({"authStatus": {"kind": "none", "label": "Not logged in"}}))
            .expect("status");
        assert!(none.signed_out());
        assert_eq!(
            AccountStatus::parse(&json!({"authStatus": {"label": "no kind"}})),
            None
        );
        assert_eq!(AccountStatus::parse(&json!({})), None);
    }

    #[test]
    fn hostile_lists_are_bounded() {
        let many: Vec<Value> = (0..100)
            .map(|i| json!({"id": format!("m{i}"), "name": "x".repeat(5000)}))
            .collect();
        let methods = parse(Some(&Value::Array(many)));
        assert_eq!(methods.len(), MAX_METHODS);
        assert_eq!(methods[0].name.len(), MAX_TEXT);
        let odd = parse(Some(&json!([
            {"name": "no id"},
            {"id": "e", "type": "env_var", "vars": [{"name": "NOT A NAME"}, {"name": "1X"}]},
            {"id": "u", "type": "future_kind"},
            {"id": "d"}, {"id": "d"},
        ])));
        assert_eq!(odd.len(), 1, "{odd:?}");
        assert_eq!(odd[0].name, "d");
        let hostile = parse(Some(
            &json!([{"id": "h", "name": "Log\u{0}in\n\u{1b}[31m", "type": "terminal", "args": ["a\u{0}b"]}]),
        ));
        assert_eq!(hostile[0].name, "Login[31m");
        assert!(matches!(&hostile[0].kind, AuthKind::Terminal { args, .. } if args == &["ab"]));
    }
}
