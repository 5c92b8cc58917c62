//! An agent's session controls facet: the session's options (the
//! composer's pickers: model, mode, effort …), its title, what it has used
//! of its context and what it cost, its slash commands, and what a prompt
//! may carry. The pickers and the composer bind to it.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;
use gtk::glib::subclass::Signal;

use super::props::{connect_plain, set_string, AgentRef};
use crate::core::services::Core;
use crate::core::types::message::{Command, Usage};
use crate::core::types::options::SessionOption;
use crate::ui::runtime;

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::SessionControls)]
    pub struct SessionControls {
        pub owner: AgentRef,
        #[property(get)]
        pub usage_used: Cell<u64>,
        #[property(get)]
        pub usage_size: Cell<u64>,
        /// The session's cost so far ("" when the agent tells none), e.g.
        /// "0.12 USD".
        #[property(get)]
        pub cost: RefCell<String>,
        /// The tokens of the session's turns so far, where the agent told
        /// them (0 when it told none).
        #[property(get)]
        pub tokens: Cell<u64>,
        /// The session's title (`session_info_update`), or "".
        #[property(get)]
        pub session_title: RefCell<String>,
        /// The session's options: the composer's pickers.
        pub options: RefCell<Vec<SessionOption>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for SessionControls {
        const NAME: &'static str = "ParleySessionControls";
        type Type = super::SessionControls;
    }

    #[glib::derived_properties]
    impl ObjectImpl for SessionControls {
        fn signals() -> &'static [Signal] {
            static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
            // The session's options changed (see `options()`).
            SIGNALS.get_or_init(|| vec![Signal::builder("options-changed").build()])
        }
    }
}

glib::wrapper! {
    pub struct SessionControls(ObjectSubclass<imp::SessionControls>);
}

impl SessionControls {
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

    pub(super) fn apply_usage(&self, usage: &Usage) {
        let imp = self.imp();
        let _guard = self.freeze_notify();
        if imp.usage_used.replace(usage.used) != usage.used {
            self.notify_usage_used();
        }
        if imp.usage_size.replace(usage.size) != usage.size {
            self.notify_usage_size();
        }
        let cost = usage
            .cost
            .as_ref()
            .map(|c| format!("{:.2} {}", c.amount, c.currency))
            .unwrap_or_default();
        set_string(self, &imp.cost, &cost, "cost");
        let tokens = usage.tokens.map(|t| t.total_tokens).unwrap_or(0);
        if imp.tokens.replace(tokens) != tokens {
            self.notify_tokens();
        }
    }

    /// Takes a `session:changed`: the title and the pickers.
    pub(super) fn apply_session(&self, title: Option<&str>, options: Vec<SessionOption>) {
        let imp = self.imp();
        set_string(
            self,
            &imp.session_title,
            title.unwrap_or_default(),
            "session-title",
        );
        if *imp.options.borrow() != options {
            imp.options.replace(options);
            self.emit_by_name::<()>("options-changed", &[]);
        }
    }

    /// The session's options (empty before a session is open).
    pub fn options(&self) -> Vec<SessionOption> {
        self.imp().options.borrow().clone()
    }

    pub fn connect_options_changed<F: Fn(&Self) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        connect_plain(self, "options-changed", f)
    }

    /// Opens the agent's session (starting it if need be), so its pickers
    /// show before the first message. Quietly: a failure shows where the
    /// agent's state and the sign-in page already tell it.
    pub fn prepare(&self) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(async move { core.chat.prepare(&agent).await.map(|_| ()) }, |_| {});
    }

    /// Changes a session option; `done` gets the agent's refusal, if any
    /// (the pickers then show the old value again, from `options()`).
    pub fn set_option(
        &self,
        id: &str,
        value: serde_json::Value,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let (agent, id) = (self.agent(), id.to_owned());
        runtime::call(
            async move {
                core.chat
                    .set_option(&agent, &id, value)
                    .await
                    .map(|_| ())
                    .map_err(String::from)
            },
            glib::clone!(
                #[weak(rename_to = this)]
                self,
                move |r: Result<(), String>| {
                    if r.is_err() {
                        // The pickers show the old value again.
                        this.emit_by_name::<()>("options-changed", &[]);
                    }
                    done(r);
                }
            ),
        );
    }

    /// Files under the agent's working directory matching `query` (for
    /// `@`-mentions), best first, with the directory they are relative to.
    pub fn find_files(&self, query: &str, done: impl FnOnce(Vec<String>) + 'static) {
        let core = self.core().clone();
        let (agent, query) = (self.agent(), query.to_owned());
        runtime::call(
            async move { core.chat.find_files(&agent, &query, 12).await.unwrap_or_default() },
            done,
        );
    }

    pub fn working_dir(&self) -> Option<std::path::PathBuf> {
        self.core().agents.working_dir(&self.agent())
    }

    /// What the agent's last `initialize` said it takes in a prompt.
    pub fn prompt_capabilities(&self) -> Option<agent_client_protocol_schema::v1::PromptCapabilities> {
        self.core()
            .agents
            .capabilities(&self.agent())
            .map(|c| c.prompt_capabilities)
    }

    /// The slash commands the agent offers.
    pub fn commands(&self) -> Vec<Command> {
        self.core().chat.commands(&self.agent())
    }
}
