//! An agent's session options: the configuration's defaults applied to a
//! new session, the composer's pickers and `parley-cli send --model/--mode/
//! --option`, and what `Validate` knows the agent offered.

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use super::session::agent_words;
use super::state::{lock, ChatError, ChatService};
use crate::core::acp::{calls, Connection};
use crate::core::types::options::{self as controls, OptionSource, SessionOption};
use crate::i18n::gettext_f;

impl ChatService {
    /// A configured default; a warning if the agent does not offer it or
    /// refuses it.
    pub(super) async fn apply_default(
        &self,
        agent: &str,
        conn: &Connection,
        sid: &acp::SessionId,
        key: &str,
        value: &Value,
    ) -> Option<String> {
        let shown = value
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| value.to_string());
        let option = {
            let convs = lock(&self.inner.convs);
            let options = convs.get(agent).map(|c| c.options.clone()).unwrap_or_default();
            controls::find(&options, key).cloned()
        };
        let Some(option) = option.filter(|o| o.offers(value)) else {
            return Some(gettext_f(
                "The default {key} “{value}” is not offered by this agent; it was left out",
                &[("key", key), ("value", &shown)],
            ));
        };
        if option.current_text() == shown {
            return None;
        }
        match self.set_on_agent(agent, conn, sid, &option, value).await {
            Ok(()) => None,
            Err(e) => Some(gettext_f(
                "The agent refused the default {key} “{value}”: {error}",
                &[("key", key), ("value", &shown), ("error", &e)],
            )),
        }
    }

    /// Calls the agent for one option, and keeps what it answered.
    pub(super) async fn set_on_agent(
        &self,
        agent: &str,
        conn: &Connection,
        sid: &acp::SessionId,
        option: &SessionOption,
        value: &Value,
    ) -> Result<(), String> {
        let answer = match option.source {
            OptionSource::Config => calls::set_config_option(conn, sid, &option.id, value)
                .await
                .map(Some),
            OptionSource::LegacyMode => calls::set_mode(conn, sid, value.as_str().unwrap_or_default())
                .await
                .map(|()| None),
            OptionSource::LegacyModel => calls::set_model(conn, sid, value.as_str().unwrap_or_default())
                .await
                .map(|()| None),
        }
        .map_err(|e| agent_words(&e))?;
        let mut convs = lock(&self.inner.convs);
        let Some(c) = convs.get_mut(agent) else {
            return Ok(());
        };
        // The session may have ended (or another opened) meanwhile: its
        // answer is not this session's.
        if c.session.as_ref().is_none_or(|(s, _)| s != sid) {
            return Err(crate::i18n::gettext("the agent stopped"));
        }
        match answer {
            // The agent's whole list after the change.
            Some(list) if list.is_array() => {
                controls::replace_config(&mut c.options, controls::config_options(&list))
            }
            _ => {
                if let Some(o) = c.options.iter_mut().find(|o| o.id == option.id) {
                    o.set_current(value);
                }
            }
        }
        self.emit(c.session_changed(agent));
        Ok(())
    }

    /// `Prepare(agent)`: starts the agent if need be and opens its session,
    /// so its options can be shown and set before the first message.
    pub async fn prepare(&self, agent: &str) -> Result<Vec<SessionOption>, ChatError> {
        let sup = &self.inner.supervisor;
        if sup.definition(agent).is_none() {
            return Err(ChatError::UnknownAgent(agent.to_owned()));
        }
        sup.start(agent)
            .await
            .map_err(|e| ChatError::Unavailable(e.to_string()))?;
        let Some((conn, generation)) = sup.connection(agent) else {
            return Err(ChatError::Unavailable(crate::i18n::gettext("the agent stopped")));
        };
        // Left for another conversation while its session opened: the one
        // now current is prepared instead (a user who keeps switching
        // gets the agent ready, not an error).
        let mut tries = 0;
        let opened = loop {
            match self.session_for(agent, &conn, generation).await {
                Err(calls::CallError::Superseded) if tries < 3 => tries += 1,
                other => break other,
            }
        };
        match opened {
            Ok((_, early)) => {
                self.signed_in_after_all(agent);
                for (s, update) in early {
                    self.apply_update(agent, &s, update);
                }
            }
            Err(calls::CallError::AuthRequired(why)) => {
                sup.set_needs_sign_in(agent, Some(why.clone()));
                return Err(ChatError::Unavailable(why));
            }
            Err(calls::CallError::NotResumable(why)) => return Err(ChatError::ReadOnly(why)),
            Err(e) => return Err(ChatError::Unavailable(e.to_string())),
        }
        Ok(self.options(agent))
    }

    /// Whether the agent, at its last session in this run, offered `value`
    /// for the option `key` (an id or a category): `None` when not known.
    pub fn offers(&self, agent: &str, key: &str, value: &Value) -> Option<Result<(), String>> {
        let offered = lock(&self.inner.offered);
        let options = offered.get(agent)?;
        let Some(option) = controls::find(options, key) else {
            let ids: Vec<&str> = options.iter().map(|o| o.id.as_str()).collect();
            return Some(Err(gettext_f(
                "no option {key}; its options are {ids}",
                &[("key", key), ("ids", &ids.join(", "))],
            )));
        };
        if option.offers(value) {
            return Some(Ok(()));
        }
        Some(Err(match &option.value {
            controls::OptionValue::Select { choices, .. } => choices
                .iter()
                .map(|c| c.value.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            controls::OptionValue::Boolean { .. } => "true, false".to_owned(),
        }))
    }

    /// The session's options (empty before a session is open).
    pub fn options(&self, agent: &str) -> Vec<SessionOption> {
        lock(&self.inner.convs)
            .get(agent)
            .map(|c| c.options.clone())
            .unwrap_or_default()
    }

    /// `SetOption(agent, id, value)`: a select's value id, or a boolean.
    /// Opens the session first if need be. If the agent refuses, nothing
    /// changes and its words are the error (the picker shows the old value).
    pub async fn set_option(
        &self,
        agent: &str,
        id: &str,
        value: Value,
    ) -> Result<Vec<SessionOption>, ChatError> {
        let options = self.prepare(agent).await?;
        let option = options
            .iter()
            .find(|o| o.id == id)
            .ok_or_else(|| ChatError::NoSuchControl(id.to_owned()))?;
        if !option.offers(&value) {
            let shown = value
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| value.to_string());
            return Err(ChatError::NotOffered(id.to_owned(), shown));
        }
        if option.current_text()
            == value
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| value.to_string())
        {
            return Ok(options);
        }
        let session = lock(&self.inner.convs).get(agent).and_then(|c| c.session.clone());
        let (Some((sid, generation)), Some((conn, g))) = (session, self.inner.supervisor.connection(agent))
        else {
            return Err(ChatError::Unavailable(crate::i18n::gettext("the agent stopped")));
        };
        if g != generation {
            return Err(ChatError::Unavailable(crate::i18n::gettext("the agent stopped")));
        }
        if let Err(e) = self.set_on_agent(agent, &conn, &sid, option, &value).await {
            // The old value stands: tell the pickers again.
            if let Some(c) = lock(&self.inner.convs).get(agent) {
                self.emit(c.session_changed(agent));
            }
            return Err(ChatError::Refused(e));
        }
        Ok(self.options(agent))
    }
}
