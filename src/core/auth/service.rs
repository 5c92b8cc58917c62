//! `AuthService`: the sign-in calls. Each ends, on success, by clearing
//! the agent's "needs sign-in" and sending again the messages that waited
//! for it. It takes the agents (to start them, and to keep their sign-in
//! state) and the chat (to send the waiting messages).

use std::collections::HashMap;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};

use super::AuthError;
use crate::core::acp::{calls, RpcError};
use crate::core::chat::ChatService;
use crate::core::secrets::{self, Secret};
use crate::core::supervisor::{AgentService, LoginTerminal};
use crate::core::types::auth::{AuthKind, AuthMethod, AuthStatus};
use crate::core::types::gateway::{Gateway, GATEWAY_ITEM};
use crate::core::types::AgentState;
use crate::i18n::gettext_f;

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// Sign-ins under way, by agent: send to give one up (taken by the Cancel;
/// the entry stays until the sign-in is over).
type SignIns = HashMap<String, Option<tokio::sync::oneshot::Sender<()>>>;

/// The sign-in service; cheap to clone.
#[derive(Clone)]
pub struct AuthService {
    agents: AgentService,
    chat: ChatService,
    sign_ins: Arc<Mutex<SignIns>>,
}

impl AuthService {
    pub fn new(agents: AgentService, chat: ChatService) -> Self {
        AuthService {
            agents,
            chat,
            sign_ins: Arc::default(),
        }
    }

    fn sign_ins(&self) -> MutexGuard<'_, SignIns> {
        self.sign_ins.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `AuthService.Status(agent)`: what is known now, without starting it.
    pub fn status(&self, agent: &str) -> Result<AuthStatus, AuthError> {
        self.agents
            .auth_status(agent)
            .ok_or_else(|| AuthError::UnknownAgent(agent.to_owned()))
    }

    /// `AuthService.Methods(agent)`: the status, with the methods of a
    /// running agent (it is started when it is not).
    pub async fn methods(&self, agent: &str) -> Result<AuthStatus, AuthError> {
        self.status(agent)?;
        self.agents
            .start(agent)
            .await
            .map_err(|e| AuthError::Start(e.to_string()))?;
        self.status(agent)
    }

    async fn method(&self, agent: &str, id: &str) -> Result<AuthMethod, AuthError> {
        let mut status = self.status(agent)?;
        if status.methods.is_empty() {
            status = self.methods(agent).await?;
        }
        status
            .methods
            .into_iter()
            .find(|m| m.id == id)
            .ok_or_else(|| AuthError::UnknownMethod(id.to_owned()))
    }

    /// `AuthService.SignIn(agent, method, values)`: signs in with an agent
    /// method (`authenticate`) or an `env_var` method. `values` (names to
    /// values) are saved in the keyring first and passed in the agent's
    /// environment from its next start on, which is now.
    pub async fn sign_in(
        &self,
        agent: &str,
        method_id: &str,
        values: Vec<(String, Secret)>,
    ) -> Result<(), AuthError> {
        self.sign_in_with(agent, method_id, values, None).await
    }

    /// `AuthService.SignIn(agent, method, {"baseUrl": URL, "headers":
    /// {NAME: VALUE}})`: signs in with a gateway method. The gateway is
    /// sent in `authenticate`'s `_meta.gateway` and, once the agent took
    /// it, kept in the keyring and sent again at every start.
    pub async fn sign_in_gateway(
        &self,
        agent: &str,
        method_id: &str,
        gateway: Gateway,
    ) -> Result<(), AuthError> {
        self.sign_in_with(agent, method_id, Vec::new(), Some(gateway))
            .await
    }

    async fn sign_in_with(
        &self,
        agent: &str,
        method_id: &str,
        values: Vec<(String, Secret)>,
        gateway: Option<Gateway>,
    ) -> Result<(), AuthError> {
        let method = self.method(agent, method_id).await?;
        if matches!(method.kind, AuthKind::Terminal { .. }) {
            return Err(AuthError::NeedsTerminal(method.id));
        }
        // A gateway method is never signed in to without its gateway (gemini
        // would save a sign-in that goes nowhere), nor a gateway given to
        // another method.
        match (&method.kind, &gateway) {
            (AuthKind::Gateway { .. }, None) => return Err(AuthError::GatewayMissing(method.id)),
            (AuthKind::Gateway { .. }, Some(g)) => g.check().map_err(AuthError::BadGateway)?,
            (_, Some(_)) => return Err(AuthError::UnknownMethod(method.id)),
            _ => {}
        }
        for (name, value) in &values {
            if value.expose().is_empty() || !method.keys().iter().any(|k| &k.name == name) {
                return Err(AuthError::BadKey(name.clone()));
            }
        }
        // One sign-in at a time per agent; Cancel reaches it from here on.
        let cancel = {
            let mut pending = self.sign_ins();
            if pending.contains_key(agent) {
                return Err(AuthError::Busy);
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            pending.insert(agent.to_owned(), Some(tx));
            rx
        };
        self.agents.set_signing_in(agent, Some(method.id.clone()));
        let result = self
            .run_sign_in(agent, &method, &values, gateway.as_ref(), cancel)
            .await;
        if result == Err(AuthError::Cancelled) {
            // A login the agent began (a browser flow) ends with it; the
            // next message starts it again. Stopped here, after the
            // sign-in's own start, so that nothing starts it after the stop.
            let _ = self.agents.stop(agent).await;
        }
        self.sign_ins().remove(agent);
        self.agents.set_signing_in(agent, None);
        self.signed_in(agent, result)
    }

    async fn run_sign_in(
        &self,
        agent: &str,
        method: &AuthMethod,
        values: &[(String, Secret)],
        gateway: Option<&Gateway>,
        mut cancel: tokio::sync::oneshot::Receiver<()>,
    ) -> Result<(), AuthError> {
        let scope = self.agents.scope();
        if !values.is_empty() {
            secrets::save(&scope, agent, values)
                .await
                .map_err(|e| AuthError::Keyring(e.to_string()))?;
            self.agents.keys_changed(agent);
        }
        let saved = secrets::saved_names(&scope, agent);
        let missing: Vec<String> = method
            .keys()
            .iter()
            .filter(|k| !k.optional && !saved.contains(&k.name))
            .map(|k| k.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(AuthError::KeysMissing(missing));
        }
        // A start is never dropped half-way (the agent would stay
        // `starting`): a Cancel during it takes effect once it is over.
        // Keys are in the environment only from a start on.
        let restart =
            !method.keys().is_empty() && self.agents.state(agent).is_some_and(AgentState::is_running);
        let started = if restart {
            self.agents.restart(agent).await
        } else {
            self.agents.start(agent).await
        };
        started.map_err(|e| AuthError::Start(e.to_string()))?;
        if cancel.try_recv().is_ok() {
            return Err(AuthError::Cancelled);
        }
        let Some((conn, _)) = self.agents.connection(agent) else {
            return Err(AuthError::Start(gettext_f(
                "the agent {name} is not running",
                &[("name", agent)],
            )));
        };
        // gemini-cli also takes the key itself in `_meta["api-key"]`.
        let meta =
            match (&method.kind, method.keys(), values) {
                (AuthKind::Gateway { .. }, _, _) => gateway.map(Gateway::meta),
                (AuthKind::Agent { .. }, [key], [(name, value)]) if &key.name == name => Some(
                    Map::from_iter([("api-key".to_owned(), Value::String(value.expose().to_owned()))]),
                ),
                _ => None,
            };
        // An `env_var` method is also passed to `authenticate` (codex-acp
        // wants it, once the variable is set); an agent that does not know
        // the call needs nothing more.
        let env_var = matches!(method.kind, AuthKind::EnvVar { .. });
        // Only a Cancel ends the wait (not the sender going away).
        let cancelled = async {
            if cancel.await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        let result = tokio::select! {
            r = calls::authenticate(&conn, &method.id, meta) => match r {
                Err(calls::CallError::Rpc(RpcError::Remote { code: METHOD_NOT_FOUND, .. })) if env_var => Ok(()),
                r => r.map_err(|e| AuthError::Failed(e.to_string())),
            },
            _ = cancelled => Err(AuthError::Cancelled),
        };
        // Kept only once the agent took it: a gateway it refused is not
        // sent again at the next start.
        if let (Ok(()), Some(g)) = (&result, gateway) {
            secrets::save(
                &scope,
                agent,
                &[(GATEWAY_ITEM.to_owned(), Secret::new(g.to_saved()))],
            )
            .await
            .map_err(|e| AuthError::Keyring(e.to_string()))?;
            self.agents.keys_changed(agent);
        }
        result
    }

    /// The end of every sign-in: on success the waiting messages go.
    fn signed_in(&self, agent: &str, result: Result<(), AuthError>) -> Result<(), AuthError> {
        match &result {
            Ok(()) => {
                self.agents.set_needs_sign_in(agent, None);
                self.chat.resume_after_sign_in(agent);
            }
            Err(AuthError::Cancelled) => {}
            Err(e) => {
                // Still needed; the page shows why the attempt failed.
                if self.status(agent).is_ok_and(|s| s.needs_sign_in) {
                    self.agents.set_needs_sign_in(agent, Some(e.to_string()));
                }
            }
        }
        result
    }

    /// `AuthService.Cancel(agent)`: gives up a sign-in under way (which then
    /// stops the agent, see `sign_in`); answers at once.
    pub async fn cancel(&self, agent: &str) -> Result<(), AuthError> {
        self.status(agent)?;
        let pending = self.sign_ins().get_mut(agent).and_then(Option::take);
        if let Some(tx) = pending {
            let _ = tx.send(());
        }
        Ok(())
    }

    /// `AuthService.ForgetKeys(agent)`: removes the agent's saved keys from
    /// the keyring. A running agent that is not answering is restarted
    /// without them.
    pub async fn forget_keys(&self, agent: &str) -> Result<(), AuthError> {
        self.status(agent)?;
        let result = secrets::forget(&self.agents.scope(), agent)
            .await
            .map_err(|e| AuthError::Keyring(e.to_string()));
        self.agents.keys_changed(agent);
        result?;
        if self.agents.state(agent) == Some(AgentState::Ready) {
            self.agents
                .restart(agent)
                .await
                .map_err(|e| AuthError::Start(e.to_string()))?;
        }
        Ok(())
    }

    /// `AuthService.Logout(agent)`, where the agent offers `logout`.
    pub async fn logout(&self, agent: &str) -> Result<(), AuthError> {
        let status = self.methods(agent).await?;
        if !status.can_logout {
            return Err(AuthError::NoLogout);
        }
        let Some((conn, _)) = self.agents.connection(agent) else {
            return Err(AuthError::NoLogout);
        };
        calls::logout(&conn)
            .await
            .map_err(|e| AuthError::Failed(e.to_string()))?;
        self.agents
            .set_needs_sign_in(agent, Some(crate::i18n::gettext("signed out")));
        Ok(())
    }

    /// Starts a terminal method's command; the front end shows it and calls
    /// [`AuthService::login_finished`] with how it ended.
    pub async fn login_terminal(&self, agent: &str, method_id: &str) -> Result<LoginTerminal, AuthError> {
        let method = self.method(agent, method_id).await?;
        if !matches!(method.kind, AuthKind::Terminal { .. }) {
            return Err(AuthError::UnknownMethod(method_id.to_owned()));
        }
        if self.sign_ins().contains_key(agent) || self.status(agent)?.signing_in.is_some() {
            return Err(AuthError::Busy);
        }
        let mut terminal = self
            .agents
            .login_terminal(agent, &method)
            .await
            .map_err(|e| AuthError::Start(e.to_string()))?;
        self.agents.set_signing_in(agent, Some(method.id));
        // However the terminal goes (finished, cancelled, or dropped by a
        // view that went away), the sign-in is no longer under way.
        let agents = self.agents.clone();
        let name = agent.to_owned();
        terminal.on_drop(move || agents.set_signing_in(&name, None));
        Ok(terminal)
    }

    /// A terminal method's command ended: exit status 0 is success, and
    /// the agent is restarted (initialized again) before the waiting
    /// messages go; anything else is a failure.
    pub async fn login_finished(&self, agent: &str, status: Option<ExitStatus>) -> Result<(), AuthError> {
        self.agents.set_signing_in(agent, None);
        let result = match status {
            Some(s) if s.success() => {
                let restarted = if self.agents.state(agent).is_some_and(AgentState::is_running) {
                    self.agents.restart(agent).await
                } else {
                    self.agents.start(agent).await
                };
                restarted.map_err(|e| AuthError::Start(e.to_string()))
            }
            Some(s) => Err(AuthError::Failed(gettext_f(
                "the sign-in command ended with {status}",
                &[("status", &s.to_string())],
            ))),
            None => Err(AuthError::Cancelled),
        };
        self.signed_in(agent, result)
    }
}
