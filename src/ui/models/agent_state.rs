//! An agent's status facet: its state in the lifecycle, why it failed, and
//! whether a configuration change waits for a restart. The agent row and
//! the announcer bind to it.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;
use gtk::glib::subclass::Signal;

use super::props::set_string;
use super::AgentStatus;

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::AgentState)]
    pub struct AgentState {
        #[property(get, builder(AgentStatus::Stopped))]
        pub status: Cell<AgentStatus>,
        #[property(get)]
        pub error: RefCell<String>,
        /// The configuration changed since it started.
        #[property(get)]
        pub outdated: Cell<bool>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for AgentState {
        const NAME: &'static str = "ParleyAgentState";
        type Type = super::AgentState;
    }

    #[glib::derived_properties]
    impl ObjectImpl for AgentState {
        fn signals() -> &'static [Signal] {
            static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
            SIGNALS.get_or_init(|| {
                // The agent went to `error`; the argument is the reason.
                vec![Signal::builder("failed")
                    .param_types([String::static_type()])
                    .build()]
            })
        }
    }
}

glib::wrapper! {
    pub struct AgentState(ObjectSubclass<imp::AgentState>);
}

impl Default for AgentState {
    fn default() -> Self {
        glib::Object::new()
    }
}

impl AgentState {
    /// Takes a state; going to `error` (from another state) emits `failed`
    /// when `tell` says so.
    pub(super) fn set(&self, status: AgentStatus, error: &str, outdated: bool, tell: bool) {
        let imp = self.imp();
        let failed = tell && status == AgentStatus::Error && self.status() != AgentStatus::Error;
        {
            let _guard = self.freeze_notify();
            if imp.status.replace(status) != status {
                self.notify_status();
            }
            set_string(self, &imp.error, error, "error");
            if imp.outdated.replace(outdated) != outdated {
                self.notify_outdated();
            }
        }
        if failed {
            self.emit_by_name::<()>("failed", &[&error.to_owned()]);
        }
    }

    pub fn is_running(&self) -> bool {
        self.status().is_running()
    }

    pub fn connect_failed<F: Fn(&Self, &str) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        self.connect_local("failed", false, move |args| {
            let this = args.first().and_then(|a| a.get::<Self>().ok());
            let why = args
                .get(1)
                .and_then(|a| a.get::<String>().ok())
                .unwrap_or_default();
            if let Some(this) = this {
                f(&this, &why);
            }
            None
        })
    }
}
