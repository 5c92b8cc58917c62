//! One agent of the sidebar: what `AgentService.List` and the events say.

use std::cell::RefCell;

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;

use crate::core::supervisor::AgentInfo;

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::AgentObject)]
    pub struct AgentObject {
        #[property(get, set)]
        pub name: RefCell<String>,
        #[property(get, set)]
        pub title: RefCell<String>,
        #[property(get, set)]
        pub icon: RefCell<String>,
        #[property(get, set)]
        pub description: RefCell<String>,
        /// The spec's state name: stopped, starting, ready, busy, error.
        #[property(get, set)]
        pub state: RefCell<String>,
        #[property(get, set)]
        pub error: RefCell<String>,
        #[property(get, set)]
        pub outdated: std::cell::Cell<bool>,
        /// A conversation turn runs.
        #[property(get, set)]
        pub answering: std::cell::Cell<bool>,
        /// Waiting for a permission answer.
        #[property(get, set)]
        pub waiting: std::cell::Cell<bool>,
        #[property(get, set)]
        pub usage_used: std::cell::Cell<u64>,
        #[property(get, set)]
        pub usage_size: std::cell::Cell<u64>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for AgentObject {
        const NAME: &'static str = "ParleyAgentObject";
        type Type = super::AgentObject;
    }

    #[glib::derived_properties]
    impl ObjectImpl for AgentObject {}
}

glib::wrapper! {
    pub struct AgentObject(ObjectSubclass<imp::AgentObject>);
}

impl AgentObject {
    pub fn new(info: &AgentInfo) -> Self {
        let o: Self = glib::Object::builder().property("name", &info.name).build();
        o.update(info);
        o
    }

    pub fn update(&self, info: &AgentInfo) {
        self.set_title(info.title.as_str());
        self.set_icon(if info.icon.is_empty() {
            "system-run-symbolic"
        } else {
            info.icon.as_str()
        });
        self.set_description(info.description.as_str());
        self.set_state(info.state.as_str());
        self.set_error(info.error.clone().unwrap_or_default());
        self.set_outdated(info.outdated);
    }

    /// The spec's "Shown as", with "restart to apply changes" when outdated.
    pub fn shown_as(&self) -> String {
        use crate::core::supervisor::lifecycle::AgentState as S;
        let state = match self.state().as_str() {
            "starting" => S::Starting,
            "ready" => S::Ready,
            "busy" => S::Busy,
            "error" => S::Error,
            _ => S::Stopped,
        };
        let shown = state.shown_as();
        if self.outdated() && state.is_running() {
            format!("{shown} · {}", crate::i18n::gettext("restart to apply changes"))
        } else {
            shown
        }
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state().as_str(), "starting" | "ready" | "busy")
    }
}
