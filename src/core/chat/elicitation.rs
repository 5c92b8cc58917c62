//! Elicitation (ACP `elicitation/create`, `elicitation/complete`): the
//! agent asks the user for values (a form, from a JSON-schema subset) or to
//! visit a URL. Like permission requests, each waits in its conversation
//! until answered (`AnswerElicitation`), until the turn ends or is
//! cancelled (answered `cancel`), or, for a URL, until the agent says it is
//! complete.
//!
//! The answer to a form is checked here, before it goes to the agent, so
//! the window and `serve` refuse the same things: a missing required value,
//! a wrong type, a length, range, pattern, choice or item count outside the
//! schema's limits.

use serde_json::{Map, Value};

use super::state::*;

/// The largest elicitation request taken (its message and schema are
/// shown and kept until answered).
const MAX_REQUEST: usize = 256 * 1024;

/// The answer the agent gets.
fn response(action: &str, content: Option<Map<String, Value>>) -> Value {
    match content {
        Some(c) => json!({"action": action, "content": c}),
        None => json!({"action": action}),
    }
}

impl ChatService {
    pub(super) fn elicitation_request(&self, agent: &str, params: &RawValue, responder: Responder) {
        let raw: Value = match serde_json::from_str(params.get()) {
            Ok(v) => v,
            Err(e) => {
                responder.respond(Err(RpcError::remote(
                    crate::core::acp::connection::INVALID_PARAMS,
                    e.to_string(),
                )));
                return;
            }
        };
        let s = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_owned);
        // What the agent asks is shown and kept: bounded.
        if params.get().len() > MAX_REQUEST {
            responder.respond(Err(RpcError::remote(
                crate::core::acp::connection::INVALID_PARAMS,
                format!("an elicitation may be at most {MAX_REQUEST} bytes"),
            )));
            return;
        }
        let mode = s("mode").unwrap_or_default();
        let (schema, url) = match mode.as_str() {
            "form" => match raw.get("requestedSchema").filter(|v| v.is_object()) {
                Some(schema) => (Some(schema.clone()), None),
                None => {
                    responder.respond(Err(RpcError::remote(
                        crate::core::acp::connection::INVALID_PARAMS,
                        "a form elicitation needs requestedSchema",
                    )));
                    return;
                }
            },
            // Parsed, not prefix-checked: what is shown and opened is the
            // parsed address.
            "url" => match s("url").map(|u| crate::core::links::web_url(&u)) {
                Some(Ok(url)) => (None, Some(url.url)),
                Some(Err(why)) => {
                    responder.respond(Err(RpcError::remote(
                        crate::core::acp::connection::INVALID_PARAMS,
                        format!("a URL elicitation needs an http(s) url: {why}"),
                    )));
                    return;
                }
                None => {
                    responder.respond(Err(RpcError::remote(
                        crate::core::acp::connection::INVALID_PARAMS,
                        "a URL elicitation needs an http(s) url",
                    )));
                    return;
                }
            },
            // A mode Parley does not know: declined, as the spec allows.
            _ => {
                self.inner.supervisor.log(
                    agent,
                    format!("parley: declined an elicitation of an unknown mode {mode:?}"),
                );
                responder.respond(Ok(response("decline", None)));
                return;
            }
        };
        let mut convs = lock(&self.inner.convs);
        let c = convs.entry(agent.to_owned()).or_default();
        // A turn being cancelled asks nothing more of the user.
        if c.cancelling {
            drop(convs);
            responder.respond(Ok(response("cancel", None)));
            return;
        }
        self.heard_from(agent, c);
        let message_id = c.current.and_then(|i| c.messages.get(i)).map(|m| m.id.clone());
        let request = ElicitationRequest {
            id: self.next_id("e"),
            agent: agent.to_owned(),
            message_id,
            message: s("message").unwrap_or_default(),
            mode,
            schema,
            url,
            elicitation_id: s("elicitationId"),
            since: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        };
        c.elicitations.push(PendingElicitation {
            request: request.clone(),
            responder,
        });
        drop(convs);
        self.emit(Event::ElicitationRequested(request));
    }

    /// `elicitation/complete`: the agent says a URL elicitation is done. One
    /// the user has not answered yet is closed as accepted.
    pub(super) fn elicitation_complete(&self, agent: &str, params: &RawValue) {
        let id = serde_json::from_str::<Value>(params.get())
            .ok()
            .and_then(|v| v.get("elicitationId").and_then(Value::as_str).map(str::to_owned));
        let Some(elicitation_id) = id else { return };
        let pending = lock(&self.inner.convs).get_mut(agent).and_then(|c| {
            let i = c
                .elicitations
                .iter()
                .position(|e| e.request.elicitation_id.as_deref() == Some(&elicitation_id))?;
            Some(c.elicitations.remove(i))
        });
        if let Some(p) = pending {
            p.responder.respond(Ok(response("accept", None)));
            self.emit(Event::ElicitationResolved(ElicitationResolved {
                id: p.request.id,
                agent: agent.to_owned(),
                action: "complete".into(),
            }));
        }
    }

    /// `AnswerElicitation(id, action, content)`: `accept` (a form's values,
    /// checked against its schema first), `decline` or `cancel`.
    pub fn answer_elicitation(
        &self,
        id: &str,
        action: &str,
        content: Option<&Value>,
    ) -> Result<(), ChatError> {
        if !matches!(action, "accept" | "decline" | "cancel") {
            return Err(ChatError::InvalidAnswer(gettext_f(
                "the action must be accept, decline or cancel, not {action}",
                &[("action", action)],
            )));
        }
        let mut convs = lock(&self.inner.convs);
        for (agent, c) in convs.iter_mut() {
            let Some(i) = c.elicitations.iter().position(|e| e.request.id == id) else {
                continue;
            };
            let content = match (action, &c.elicitations[i].request.schema) {
                ("accept", Some(schema)) => Some(
                    check_content(schema, content.unwrap_or(&Value::Null))
                        .map_err(|problems| ChatError::InvalidAnswer(problems.join("; ")))?,
                ),
                _ => None,
            };
            let p = c.elicitations.remove(i);
            let agent = agent.clone();
            drop(convs);
            p.responder.respond(Ok(response(action, content)));
            self.emit(Event::ElicitationResolved(ElicitationResolved {
                id: id.to_owned(),
                agent,
                action: action.to_owned(),
            }));
            return Ok(());
        }
        Err(ChatError::NoSuchElicitation(id.to_owned()))
    }

    /// The turn ended or was cancelled: what it asked is answered `cancel`.
    pub(super) fn cancel_elicitations(&self, agent: &str) {
        let pending: Vec<PendingElicitation> = lock(&self.inner.convs)
            .get_mut(agent)
            .map(|c| c.elicitations.drain(..).collect())
            .unwrap_or_default();
        for p in pending {
            p.responder.respond(Ok(response("cancel", None)));
            self.emit(Event::ElicitationResolved(ElicitationResolved {
                id: p.request.id,
                agent: agent.to_owned(),
                action: "cancel".into(),
            }));
        }
    }

    /// The elicitations waiting for the user, every agent's.
    pub fn pending_elicitations(&self) -> Vec<ElicitationRequest> {
        lock(&self.inner.convs)
            .values()
            .flat_map(|c| c.elicitations.iter().map(|e| e.request.clone()))
            .collect()
    }
}

/// What a form's answer may hold: only the schema's properties, each as
/// the schema says. Answers the values to send, or every problem.
pub fn check_content(schema: &Value, content: &Value) -> Result<Map<String, Value>, Vec<String>> {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let given = match content {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        _ => return Err(vec![gettext("the answer must be an object of values")]),
    };
    let mut problems = Vec::new();
    let mut out = Map::new();
    for key in given.keys() {
        if !props.contains_key(key) {
            problems.push(gettext_f("{field}: not asked for", &[("field", key)]));
        }
    }
    for (key, prop) in props {
        let title = prop.get("title").and_then(Value::as_str).unwrap_or(key);
        let value = given
            .get(key)
            .filter(|v| !v.is_null() && *v != &Value::String(String::new()));
        let Some(value) = value else {
            if required.contains(&key.as_str()) {
                problems.push(gettext_f("{field} is required", &[("field", title)]));
            }
            continue;
        };
        match check_value(prop, value) {
            Ok(()) => {
                out.insert(key.clone(), value.clone());
            }
            Err(why) => problems.push(format!("{title}: {why}")),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

fn num(prop: &Value, key: &str) -> Option<f64> {
    prop.get(key).and_then(Value::as_f64)
}

/// The choices a string (or an array's items) may take, if limited.
fn choices(prop: &Value) -> Option<Vec<String>> {
    if let Some(e) = prop.get("enum").and_then(Value::as_array) {
        return Some(e.iter().filter_map(Value::as_str).map(str::to_owned).collect());
    }
    let one_of = prop.get("oneOf").or_else(|| prop.get("anyOf"))?.as_array()?;
    Some(
        one_of
            .iter()
            .filter_map(|o| o.get("const").and_then(Value::as_str).map(str::to_owned))
            .collect(),
    )
}

fn check_value(prop: &Value, value: &Value) -> Result<(), String> {
    let kind = prop.get("type").and_then(Value::as_str).unwrap_or("string");
    match kind {
        "string" => {
            let Some(s) = value.as_str() else {
                return Err(gettext("must be text"));
            };
            let len = s.chars().count() as f64;
            if let Some(min) = num(prop, "minLength").filter(|m| len < *m) {
                return Err(gettext_f("at least {n} characters", &[("n", &min.to_string())]));
            }
            if let Some(max) = num(prop, "maxLength").filter(|m| len > *m) {
                return Err(gettext_f("at most {n} characters", &[("n", &max.to_string())]));
            }
            if let Some(pattern) = prop.get("pattern").and_then(Value::as_str) {
                match regex::Regex::new(pattern) {
                    Ok(re) if re.is_match(s) => {}
                    Ok(_) => return Err(gettext_f("must match {pattern}", &[("pattern", pattern)])),
                    Err(_) => {} // the agent's pattern is broken: not the user's fault
                }
            }
            if let Some(c) = choices(prop) {
                if !c.iter().any(|x| x == s) {
                    return Err(gettext("not one of the choices"));
                }
            }
            Ok(())
        }
        "number" | "integer" => {
            let Some(n) = value.as_f64() else {
                return Err(gettext("must be a number"));
            };
            if kind == "integer" && n.fract() != 0.0 {
                return Err(gettext("must be a whole number"));
            }
            if let Some(min) = num(prop, "minimum").filter(|m| n < *m) {
                return Err(gettext_f("at least {n}", &[("n", &min.to_string())]));
            }
            if let Some(max) = num(prop, "maximum").filter(|m| n > *m) {
                return Err(gettext_f("at most {n}", &[("n", &max.to_string())]));
            }
            Ok(())
        }
        "boolean" => value
            .as_bool()
            .map(|_| ())
            .ok_or_else(|| gettext("must be true or false")),
        "array" => {
            let Some(items) = value.as_array() else {
                return Err(gettext("must be a list"));
            };
            let allowed = prop.get("items").and_then(choices);
            for item in items {
                let ok = item
                    .as_str()
                    .is_some_and(|s| allowed.as_ref().is_none_or(|a| a.iter().any(|x| x == s)));
                if !ok {
                    return Err(gettext("not one of the choices"));
                }
            }
            let n = items.len() as f64;
            if let Some(min) = num(prop, "minItems").filter(|m| n < *m) {
                return Err(gettext_f("choose at least {n}", &[("n", &min.to_string())]));
            }
            if let Some(max) = num(prop, "maxItems").filter(|m| n > *m) {
                return Err(gettext_f("choose at most {n}", &[("n", &max.to_string())]));
            }
            Ok(())
        }
        other => Err(gettext_f(
            "a field of type {kind} cannot be answered",
            &[("kind", other)],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 10, "pattern": "^[A-Za-z ]+$"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ratio": {"type": "number", "minimum": 0.5},
                "subscribe": {"type": "boolean", "default": false},
                "colour": {"type": "string", "enum": ["red", "green"]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1}
            },
            "required": ["name", "age"]
        })
    }

    #[test]
    fn a_good_answer_passes_and_keeps_only_what_was_given() {
        let out = check_content(&schema(), &json!({"name": "Ada", "age": 36, "colour": "red"})).expect("ok");
        assert_eq!(
            Value::Object(out),
            json!({"name": "Ada", "age": 36, "colour": "red"})
        );
    }

    #[test]
    fn every_limit_is_checked_before_the_agent_sees_it() {
        let bad = |content: Value| {
            check_content(&schema(), &content)
                .expect_err("refused")
                .join("; ")
        };
        assert!(bad(json!({"age": 3})).contains("Name is required"));
        assert!(bad(json!({"name": "A", "age": 3})).contains("at least 2 characters"));
        assert!(bad(json!({"name": "Adalovelacebyron", "age": 3})).contains("at most 10"));
        assert!(bad(json!({"name": "Ada1", "age": 3})).contains("must match"));
        assert!(bad(json!({"name": "Ada", "age": 3.5})).contains("whole number"));
        assert!(bad(json!({"name": "Ada", "age": 200})).contains("at most 150"));
        assert!(bad(json!({"name": "Ada", "age": 1, "ratio": 0.1})).contains("at least 0.5"));
        assert!(bad(json!({"name": "Ada", "age": 1, "subscribe": "yes"})).contains("true or false"));
        assert!(bad(json!({"name": "Ada", "age": 1, "colour": "blue"})).contains("choices"));
        assert!(bad(json!({"name": "Ada", "age": 1, "tags": ["a", "b"]})).contains("at most 1"));
        assert!(bad(json!({"name": "Ada", "age": 1, "extra": 1})).contains("not asked for"));
        assert!(bad(json!([1])).contains("object"));
    }
}
