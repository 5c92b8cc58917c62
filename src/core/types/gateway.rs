//! A model gateway for an agent's `gateway` sign-in method: the base URL
//! its model requests go to and the headers they carry (a key among them).
//! The agents that offer one (claude-agent-acp, codex-acp, gemini-cli) take
//! it in `authenticate`'s `_meta.gateway = {baseUrl, headers}` and keep it
//! in memory only, so Parley keeps it in the keyring (as one item,
//! [`GATEWAY_ITEM`], never in a file or a log) and sends it again after
//! every `initialize`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::i18n::{gettext, gettext_f};

/// The keyring item's `variable`: not a name an environment can carry, so
/// it is never passed to the agent as one.
pub const GATEWAY_ITEM: &str = "parley:gateway";

const MAX_URL: usize = 2048;
const MAX_HEADERS: usize = 32;
const MAX_VALUE: usize = 8192;

#[derive(Clone, PartialEq)]
pub struct Gateway {
    /// The sign-in method it is for.
    pub method: String,
    pub base_url: String,
    pub headers: BTreeMap<String, String>,
}

// Header values hold keys: never printed.
impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("method", &self.method)
            .field("base_url", &self.base_url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A header name as HTTP allows it (a token).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl Gateway {
    /// From `AuthService.SignIn`'s third argument, `{"baseUrl": URL,
    /// "headers": {NAME: VALUE}}`; checked.
    pub fn from_args(method: &str, v: &Value) -> Result<Gateway, String> {
        let base_url = v
            .get("baseUrl")
            .and_then(Value::as_str)
            .ok_or_else(|| gettext("the gateway needs a baseUrl (a string)"))?
            .trim()
            .to_owned();
        let mut headers = BTreeMap::new();
        match v.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => {
                for (k, v) in o {
                    let Some(value) = v.as_str() else {
                        return Err(gettext_f(
                            "the value of the header {name} must be a string",
                            &[("name", k)],
                        ));
                    };
                    headers.insert(k.trim().to_owned(), value.trim().to_owned());
                }
            }
            Some(_) => {
                return Err(gettext(
                    "the gateway's headers must be an object of names to values",
                ))
            }
        }
        let g = Gateway {
            method: method.to_owned(),
            base_url,
            headers,
        };
        g.check()?;
        Ok(g)
    }

    /// An absolute http(s) URL with a host, and headers an HTTP request can
    /// carry: what the agents would refuse, or send nowhere, is refused
    /// here with a clear reason.
    pub fn check(&self) -> Result<(), String> {
        let url = &self.base_url;
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
        if url.len() > MAX_URL
            || url.chars().any(|c| c.is_control() || c.is_whitespace())
            || host.is_none_or(|h| h.is_empty() || h.starts_with(':'))
        {
            return Err(gettext_f(
                "“{url}” is not an http or https address with a host",
                &[("url", &url.chars().take(200).collect::<String>())],
            ));
        }
        if self.headers.len() > MAX_HEADERS {
            return Err(gettext("too many headers"));
        }
        for (name, value) in &self.headers {
            if !is_header_name(name) {
                return Err(gettext_f(
                    "“{name}” is not a header name",
                    &[("name", &name.chars().take(200).collect::<String>())],
                ));
            }
            if value.len() > MAX_VALUE || value.chars().any(|c| c.is_control()) {
                return Err(gettext_f(
                    "the value of the header {name} is too long or holds a line break",
                    &[("name", name)],
                ));
            }
        }
        Ok(())
    }

    /// `authenticate`'s `_meta`.
    pub fn meta(&self) -> Map<String, Value> {
        Map::from_iter([(
            "gateway".to_owned(),
            json!({"baseUrl": self.base_url, "headers": self.headers}),
        )])
    }

    /// The keyring item's secret.
    pub fn to_saved(&self) -> String {
        json!({"method": self.method, "baseUrl": self.base_url, "headers": self.headers}).to_string()
    }

    /// Read back from the keyring; `None` when it is not one (any more).
    pub fn from_saved(text: &str) -> Option<Gateway> {
        let v: Value = serde_json::from_str(text).ok()?;
        let method = v.get("method")?.as_str()?;
        Gateway::from_args(method, &v).ok()
    }

    /// Where it goes, for the window and the log: the host only (a URL may
    /// carry a key in its query).
    pub fn host(&self) -> &str {
        let rest = self
            .base_url
            .split_once("://")
            .map(|(_, r)| r)
            .unwrap_or(&self.base_url);
        rest.split(['/', '?', '#']).next().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_is_checked_and_its_keys_never_printed() {
        let g = Gateway::from_args(
            "gateway",
            &json!({"baseUrl": " http://127.0.0.1:8080/v1 ", "headers": {"x-api-key": "sk-secret"}}),
        )
        .expect("gateway");
        assert_eq!(g.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(g.host(), "127.0.0.1:8080");
        assert_eq!(
            Value::Object(g.meta()),
            json!({"gateway": {"baseUrl": "http://127.0.0.1:8080/v1", "headers": {"x-api-key": "sk-secret"}}})
        );
        assert!(!format!("{g:?}").contains("sk-secret"));
        assert_eq!(Gateway::from_saved(&g.to_saved()), Some(g));
        for bad in [
            json!({}),
            json!({"baseUrl": ""}),
            json!({"baseUrl": "ftp://x"}),
            json!({"baseUrl": "http://"}),
            json!({"baseUrl": "https://a b"}),
            json!({"baseUrl": "https://h", "headers": {"bad name": "v"}}),
            json!({"baseUrl": "https://h", "headers": {"n": "a\r\nInjected: 1"}}),
            json!({"baseUrl": "https://h", "headers": {"n": 3}}),
            json!({"baseUrl": "https://h", "headers": ["n"]}),
        ] {
            assert!(Gateway::from_args("gateway", &bad).is_err(), "{bad}");
        }
        assert_eq!(Gateway::from_saved("not json"), None);
    }
}
