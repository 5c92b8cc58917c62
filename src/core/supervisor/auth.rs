//! What the supervisor keeps of signing in, per agent: the methods from the
//! last `initialize`, whether the agent offers `logout`, whether it asked to
//! be signed in to, and which method is under way. Every change goes out as
//! `auth:changed`.

use super::*;
use crate::core::secrets;
use crate::core::types::auth::{AccountStatus, AuthMethod, AuthStatus};
use crate::core::types::gateway::GATEWAY_ITEM;

#[derive(Debug, Clone, Default)]
pub struct AuthState {
    pub methods: Vec<AuthMethod>,
    pub can_logout: bool,
    /// The agent answered "authentication required" (its message), and no
    /// sign-in has succeeded since.
    pub needs_sign_in: Option<String>,
    /// The method being signed in with.
    pub signing_in: Option<String>,
    /// The agent's own last word on who is signed in.
    pub account: Option<AccountStatus>,
    /// `needs_sign_in` was set by the agent's "not logged in" (and so is
    /// cleared by its next word that someone is).
    pub needs_from_account: bool,
}

impl AgentService {
    /// Saved keys belong to this configuration file (its path).
    pub fn set_scope(&self, scope: &str) {
        *self.shared.scope.write().unwrap_or_else(|e| e.into_inner()) = scope.to_owned();
    }

    pub fn scope(&self) -> String {
        self.shared
            .scope
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn status_of(&self, e: &Entry) -> AuthStatus {
        let saved = secrets::saved_names(&self.scope(), &e.def.name);
        AuthStatus {
            agent: e.def.name.clone(),
            needs_sign_in: e.auth.needs_sign_in.is_some(),
            message: e.auth.needs_sign_in.clone().filter(|m| !m.is_empty()),
            methods: e.auth.methods.clone(),
            can_logout: e.auth.can_logout,
            signing_in: e.auth.signing_in.clone(),
            saved_keys: saved.iter().filter(|n| *n != GATEWAY_ITEM).cloned().collect(),
            gateway_saved: saved.iter().any(|n| n == GATEWAY_ITEM),
            account: e.auth.account.clone(),
        }
    }

    /// `AuthService.Status`: what is known without starting the agent.
    pub fn auth_status(&self, name: &str) -> Option<AuthStatus> {
        let mut t = lock(&self.shared.table);
        let e = t.find(name).filter(|e| !e.removed)?;
        Some(self.status_of(e))
    }

    fn change_auth(&self, name: &str, change: impl FnOnce(&mut AuthState)) {
        let mut t = lock(&self.shared.table);
        let Some(e) = t.find(name) else { return };
        let was_needed = e.auth.needs_sign_in.is_some();
        change(&mut e.auth);
        let status = self.status_of(e);
        let row_changed = was_needed != e.auth.needs_sign_in.is_some();
        let info = row_changed.then(|| e.info());
        drop(t);
        events::emit(&self.shared.events, Event::AuthChanged(status));
        if let Some(info) = info {
            self.emit_info(&info);
        }
    }

    /// Whether the agent is marked as needing a sign-in (the table only).
    pub fn needs_sign_in(&self, name: &str) -> bool {
        lock(&self.shared.table)
            .find(name)
            .is_some_and(|e| e.auth.needs_sign_in.is_some())
    }

    /// The agent asked to be signed in to (`Some(its message)`), or a
    /// sign-in succeeded (`None`).
    pub fn set_needs_sign_in(&self, name: &str, message: Option<String>) {
        self.change_auth(name, |a| {
            a.needs_sign_in = message;
            a.needs_from_account = false;
        });
    }

    /// `auth/status` (unstable in ACP), where the agent offers it: an agent
    /// that says `unauthenticated` needs a sign-in before its first prompt;
    /// one that says `authenticated` or `not_required` no longer does.
    pub(super) async fn ask_auth_status(&self, name: &str) {
        let offered = self.capabilities(name).is_some_and(|c| c.auth.status.is_some());
        let Some((conn, _)) = self.connection(name).filter(|_| offered) else {
            return;
        };
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            conn.request("auth/status", serde_json::json!({})),
        )
        .await;
        match answer {
            Ok(Ok(v)) => self.take_auth_state(name, v.get("state").and_then(serde_json::Value::as_str)),
            Ok(Err(e)) => self.log(name, format!("parley: auth/status failed: {e}")),
            Err(_) => self.log(name, "parley: auth/status was not answered within 5 s".into()),
        }
    }

    /// An `auth/status` answer's or `auth/status_update`'s `state`.
    pub(super) fn take_auth_state(&self, name: &str, state: Option<&str>) {
        let needs = self.needs_sign_in(name);
        match state {
            Some("unauthenticated") if !needs => self.set_needs_sign_in(name, Some(String::new())),
            Some("authenticated" | "not_required") if needs => self.set_needs_sign_in(name, None),
            _ => {}
        }
    }

    /// `_auth/status_update` (claude-agent-acp, codex-acp): the agent's own
    /// word on who is signed in, kept for the details and the sign-in page.
    /// "Not logged in" marks the agent as needing a sign-in from its start,
    /// before a message is written and fails; its later word that someone
    /// is clears that mark (and only that one).
    pub(super) fn take_account(&self, name: &str, account: AccountStatus) {
        let needs = self.needs_sign_in(name);
        self.change_auth(name, |a| {
            if account.signed_out() && !needs {
                a.needs_sign_in = Some(String::new());
                a.needs_from_account = true;
            } else if !account.signed_out() && needs && a.needs_from_account {
                a.needs_sign_in = None;
                a.needs_from_account = false;
            }
            a.account = Some(account);
        });
    }

    /// A sign-in with this method started (`Some`) or ended (`None`).
    pub fn set_signing_in(&self, name: &str, method: Option<String>) {
        let same = lock(&self.shared.table)
            .find(name)
            .is_some_and(|e| e.auth.signing_in == method);
        if !same {
            self.change_auth(name, |a| a.signing_in = method);
        }
    }

    /// The saved keys changed: tell the front ends.
    pub fn keys_changed(&self, name: &str) {
        self.change_auth(name, |_| {});
    }

    /// Called with the outcome of a start: the methods `initialize` gave.
    pub(super) fn learn_auth(e: &mut Entry, methods: Vec<AuthMethod>, can_logout: bool) -> bool {
        let changed = e.auth.methods != methods || e.auth.can_logout != can_logout;
        e.auth.methods = methods;
        e.auth.can_logout = can_logout;
        changed
    }

    pub(super) fn emit_auth(&self, e: &Entry) {
        events::emit(&self.shared.events, Event::AuthChanged(self.status_of(e)));
    }
}
