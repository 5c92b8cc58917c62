//! An agent's sign-in facet: whether it asked to be signed in to, a
//! sign-in under way, saved keys, and the sign-in calls (agent methods,
//! keys, terminal commands, cancel, forget, sign out). The sign-in page
//! binds to it.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;
use gtk::glib::subclass::Signal;

use super::props::{connect_plain, set_string, AgentRef};
use crate::core::events::AuthStatus;
use crate::core::secrets::Secret;
use crate::core::services::Core;
use crate::ui::runtime;

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::SignIn)]
    pub struct SignIn {
        pub owner: AgentRef,
        /// The agent asked to be signed in to.
        #[property(get)]
        pub needs_sign_in: Cell<bool>,
        /// A sign-in is under way (its method's id), or "".
        #[property(get)]
        pub signing_in: RefCell<String>,
        #[property(get)]
        pub can_logout: Cell<bool>,
        #[property(get)]
        pub has_saved_keys: Cell<bool>,
        /// The whole of the last `auth:changed`.
        pub status: RefCell<Option<AuthStatus>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for SignIn {
        const NAME: &'static str = "ParleySignIn";
        type Type = super::SignIn;
    }

    #[glib::derived_properties]
    impl ObjectImpl for SignIn {
        fn signals() -> &'static [Signal] {
            static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
            // The sign-in status changed (see `status()`).
            SIGNALS.get_or_init(|| vec![Signal::builder("auth-changed").build()])
        }
    }
}

glib::wrapper! {
    pub struct SignIn(ObjectSubclass<imp::SignIn>);
}

impl SignIn {
    pub(super) fn new(agent: &str, core: &Core) -> Self {
        let o: Self = glib::Object::new();
        o.imp().owner.set(agent, core);
        o
    }

    fn core(&self) -> &Core {
        self.imp().owner.core()
    }

    fn agent(&self) -> String {
        self.imp().owner.name()
    }

    /// What `AgentService.List` says of it.
    pub(super) fn set_needs_sign_in(&self, needs: bool) {
        if self.imp().needs_sign_in.replace(needs) != needs {
            self.notify_needs_sign_in();
        }
    }

    /// Takes an `auth:changed` event.
    pub(super) fn apply(&self, status: AuthStatus) {
        let imp = self.imp();
        let _guard = self.freeze_notify();
        self.set_needs_sign_in(status.needs_sign_in);
        let signing = status.signing_in.clone().unwrap_or_default();
        set_string(self, &imp.signing_in, &signing, "signing-in");
        if imp.can_logout.replace(status.can_logout) != status.can_logout {
            self.notify_can_logout();
        }
        let saved = !status.saved_keys.is_empty() || status.gateway_saved;
        if imp.has_saved_keys.replace(saved) != saved {
            self.notify_has_saved_keys();
        }
        let changed = imp.status.borrow().as_ref() != Some(&status);
        imp.status.replace(Some(status));
        if changed {
            self.emit_by_name::<()>("auth-changed", &[]);
        }
    }

    pub fn connect_auth_changed<F: Fn(&Self) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        connect_plain(self, "auth-changed", f)
    }

    /// The last sign-in status (read from the core the first time).
    pub fn status(&self) -> Option<AuthStatus> {
        if self.imp().status.borrow().is_none() {
            if let Ok(status) = self.core().auth.status(&self.agent()) {
                self.apply(status);
            }
        }
        self.imp().status.borrow().clone()
    }

    /// Signs in with an agent or `env_var` method; `values` are saved in
    /// the keyring first.
    pub fn sign_in(
        &self,
        method: &str,
        values: Vec<(String, Secret)>,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let (agent, method) = (self.agent(), method.to_owned());
        runtime::call(
            async move {
                core.auth
                    .sign_in(&agent, &method, values)
                    .await
                    .map_err(String::from)
            },
            done,
        );
    }

    /// Signs in with a gateway method (its base URL and headers).
    pub fn sign_in_gateway(
        &self,
        gateway: crate::core::types::gateway::Gateway,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(
            async move {
                let method = gateway.method.clone();
                core.auth
                    .sign_in_gateway(&agent, &method, gateway)
                    .await
                    .map_err(String::from)
            },
            done,
        );
    }

    /// Starts the agent if it is not running, so that its sign-in methods
    /// are known (they come as `auth:changed`).
    pub fn load_auth_methods(&self, done: impl FnOnce(Result<(), String>) + 'static) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(
            async move { core.auth.methods(&agent).await.map(|_| ()).map_err(String::from) },
            done,
        );
    }

    pub fn cancel_sign_in(&self) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(async move { core.auth.cancel(&agent).await }, |_| {});
    }

    pub fn forget_keys(&self, done: impl FnOnce(Result<(), String>) + 'static) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(
            async move { core.auth.forget_keys(&agent).await.map_err(String::from) },
            done,
        );
    }

    pub fn logout(&self, done: impl FnOnce(Result<(), String>) + 'static) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(
            async move { core.auth.logout(&agent).await.map_err(String::from) },
            done,
        );
    }

    /// Starts a terminal method's command; `started` gets it (to show), and
    /// [`SignIn::watch_login`] then waits for its end.
    pub fn login_terminal(
        &self,
        method: &str,
        started: impl FnOnce(Result<crate::core::supervisor::LoginTerminal, String>) + 'static,
    ) {
        let core = self.core().clone();
        let (agent, method) = (self.agent(), method.to_owned());
        runtime::call(
            async move {
                core.auth
                    .login_terminal(&agent, &method)
                    .await
                    .map_err(String::from)
            },
            started,
        );
    }

    /// Waits for the sign-in command to end, or ends it when `cancel`
    /// fires; then tells the core (which restarts the agent on success).
    pub fn watch_login(
        &self,
        mut terminal: crate::core::supervisor::LoginTerminal,
        cancel: tokio::sync::oneshot::Receiver<()>,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(
            async move {
                let status = tokio::select! {
                    status = terminal.wait() => status,
                    _ = cancel => None,
                };
                // Whatever it left goes (and all of it when cancelled).
                tokio::spawn(terminal.end());
                core.auth
                    .login_finished(&agent, status)
                    .await
                    .map_err(String::from)
            },
            done,
        );
    }
}
