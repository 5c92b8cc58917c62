//! One agent as the window knows it: who it is (what `AgentService.List`
//! says), its lifecycle calls and its log (a live `gtk::StringList`), and
//! the facets it holds, each an object of its own that widgets bind to:
//!
//! - [`AgentState`]: its state, error, and whether a restart waits;
//! - [`SessionControls`]: the session's options, title, usage, commands;
//! - [`SignIn`]: signing in;
//! - [`ConversationObject`]: messages, permissions, elicitations, the turn.
//!
//! Properties are read-only from outside; only the events (through
//! `AppModel::apply`) change them.

use std::cell::{Cell, OnceCell, RefCell};

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;
use gtk::prelude::*;

use super::props::set_string;
use super::{
    AgentState, AgentStatus, ConversationObject, Lifecycle, SessionControls, SignIn, TerminalOutputs,
};
use crate::core::services::Core;
use crate::core::supervisor::AgentInfo;
use crate::ui::runtime;

/// Signal handlers connected to an agent and its facets, to let go of
/// together ([`disconnect_all`]).
pub type Handlers = Vec<(glib::Object, glib::SignalHandlerId)>;

/// Disconnects what `connect_*_changed` and `connect_any_notify` connected.
pub fn disconnect_all(handlers: Handlers) {
    for (o, id) in handlers {
        o.disconnect(id);
    }
}

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::AgentObject)]
    pub struct AgentObject {
        #[property(get)]
        pub name: RefCell<String>,
        #[property(get)]
        pub title: RefCell<String>,
        #[property(get)]
        pub icon: RefCell<String>,
        #[property(get)]
        pub description: RefCell<String>,
        /// The newer version the registry has, or "".
        #[property(get)]
        pub update_available: RefCell<String>,
        /// Where it runs when not here: the host's or container's name.
        #[property(get)]
        pub host: RefCell<String>,
        /// Added from the ACP registry (Add Agent).
        #[property(get)]
        pub from_registry: Cell<bool>,
        pub core: OnceCell<Core>,
        pub state: AgentState,
        pub session: OnceCell<SessionControls>,
        pub sign_in: OnceCell<SignIn>,
        pub conversation: OnceCell<ConversationObject>,
        /// Filled from the supervisor when first asked for, then live.
        pub logs: OnceCell<gtk::StringList>,
        pub logs_fresh: Cell<bool>,
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
    pub fn new(info: &AgentInfo, core: &Core, terminals: &TerminalOutputs) -> Self {
        let o: Self = glib::Object::new();
        let imp = o.imp();
        imp.name.replace(info.name.clone());
        let _ = imp.core.set(core.clone());
        let session = SessionControls::new(&info.name, core);
        let _ = imp
            .conversation
            .set(ConversationObject::new(&info.name, core, &session, terminals));
        let _ = imp.session.set(session);
        let _ = imp.sign_in.set(SignIn::new(&info.name, core));
        o.update(info);
        o
    }

    fn core(&self) -> &Core {
        self.imp()
            .core
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// Its status facet.
    pub fn state(&self) -> &AgentState {
        &self.imp().state
    }

    /// Its session controls facet.
    pub fn session(&self) -> &SessionControls {
        self.imp()
            .session
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// Its sign-in facet.
    pub fn sign_in(&self) -> &SignIn {
        self.imp()
            .sign_in
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// Its conversation facet.
    pub fn conversation(&self) -> &ConversationObject {
        self.imp()
            .conversation
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// Takes what `AgentService.List` says.
    pub fn update(&self, info: &AgentInfo) {
        let imp = self.imp();
        set_string(self, &imp.title, &info.title, "title");
        let icon = if info.icon.is_empty() {
            "system-run-symbolic"
        } else {
            info.icon.as_str()
        };
        set_string(self, &imp.icon, icon, "icon");
        set_string(self, &imp.description, &info.description, "description");
        let host = info
            .host
            .as_deref()
            .and_then(|h| crate::core::remote::Host::parse(h).ok())
            .map(|h| h.name)
            .unwrap_or_default();
        set_string(self, &imp.host, &host, "host");
        let update = info.update_available.as_deref().unwrap_or_default();
        set_string(self, &imp.update_available, update, "update-available");
        if imp.from_registry.replace(info.registry.is_some()) != info.registry.is_some() {
            self.notify_from_registry();
        }
        self.sign_in().set_needs_sign_in(info.needs_sign_in);
        self.state().set(
            info.state.into(),
            info.error.as_deref().unwrap_or_default(),
            info.outdated,
            false,
        );
    }

    /// Takes an `agent:state` event; going to `error` emits the state's `failed`.
    pub fn apply_state(&self, s: &crate::core::events::AgentStateChanged) {
        let error = s.error.as_deref().unwrap_or_default();
        self.state().set(s.state.into(), error, s.outdated, true);
    }

    pub fn is_running(&self) -> bool {
        self.state().is_running()
    }

    /// The spec's "Shown as", with "restart to apply changes" when outdated
    /// and "sign-in needed" when the agent asked for it.
    pub fn shown_as(&self) -> String {
        let status = self.state().status();
        let mut shown = status.shown_as();
        if self.state().outdated() && status.is_running() {
            shown = format!("{shown} · {}", crate::i18n::gettext("restart to apply changes"));
        }
        if self.sign_in().needs_sign_in() && status != AgentStatus::Error {
            shown = format!("{shown} · {}", crate::i18n::gettext("sign-in needed"));
        }
        shown
    }

    /// "on devbox" for an agent on another host; "" here.
    pub fn on_host(&self) -> String {
        let host = self.host();
        if host.is_empty() {
            String::new()
        } else {
            crate::i18n::gettext_f("on {host}", &[("host", &host)])
        }
    }

    /// Its title, with its host when it has one ("Claude on devbox").
    pub fn title_on_host(&self) -> String {
        let host = self.host();
        if host.is_empty() {
            self.title()
        } else {
            crate::i18n::gettext_f("{agent} on {host}", &[("agent", &self.title()), ("host", &host)])
        }
    }

    /// How many things wait for the user at this agent (its badge): its
    /// permission and elicitation requests, an unseen answer, a sign-in, a
    /// failure.
    pub fn waiting_count(&self) -> u32 {
        let c = self.conversation();
        c.permissions().n_items()
            + c.elicitation_count()
            + u32::from(c.unseen())
            + u32::from(self.sign_in().needs_sign_in())
            + u32::from(self.state().status() == AgentStatus::Error)
    }

    /// Calls `f` when anything the badge counts, or the status, changes.
    pub fn connect_attention_changed<F: Fn(&Self) + Clone + 'static>(&self, f: F) -> Handlers {
        vec![
            self.on_notify(self.state().upcast_ref(), &["status"], f.clone()),
            self.on_notify(self.sign_in().upcast_ref(), &["needs-sign-in"], f.clone()),
            self.on_notify(
                self.conversation().upcast_ref(),
                &["waiting", "unseen", "elicitation-count"],
                f,
            ),
        ]
    }

    /// Calls `f` when any property of the agent or of one of its facets
    /// changes (a view that shows a little of each).
    pub fn connect_any_notify<F: Fn(&Self) + Clone + 'static>(&self, f: F) -> Handlers {
        let objects: [&glib::Object; 5] = [
            self.upcast_ref(),
            self.state().upcast_ref(),
            self.session().upcast_ref(),
            self.sign_in().upcast_ref(),
            self.conversation().upcast_ref(),
        ];
        objects
            .into_iter()
            .map(|o| self.on_notify(o, &[], f.clone()))
            .collect()
    }

    /// `f` on a change of `props` of `o` (any, when empty).
    fn on_notify<F: Fn(&Self) + 'static>(
        &self,
        o: &glib::Object,
        props: &'static [&'static str],
        f: F,
    ) -> (glib::Object, glib::SignalHandlerId) {
        let weak = self.downgrade();
        let id = o.connect_notify_local(None, move |_, p| {
            if props.is_empty() || props.contains(&p.name()) {
                if let Some(agent) = weak.upgrade() {
                    f(&agent);
                }
            }
        });
        (o.clone(), id)
    }

    // ---- the log ----

    /// The last lines of the agent's stderr, live.
    pub fn logs(&self) -> gtk::StringList {
        self.imp()
            .logs
            .get_or_init(|| {
                let lines = self.core().agents.logs(&self.name()).unwrap_or_default();
                let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
                self.imp().logs_fresh.set(true);
                gtk::StringList::new(&refs)
            })
            .clone()
    }

    pub fn push_log(&self, line: &str) {
        // Until someone looks, the supervisor keeps the lines.
        let Some(logs) = self.imp().logs.get() else {
            return;
        };
        let n = logs.n_items();
        // The first event after the list was read may carry its last line.
        if self.imp().logs_fresh.replace(false) && n > 0 && logs.string(n - 1).as_deref() == Some(line) {
            return;
        }
        // (Views redraw at most once a frame, however fast lines come.)
        if n as usize >= crate::core::supervisor::LOG_LINES {
            logs.remove(0);
        }
        logs.append(line);
    }

    // ---- acting ----

    pub fn lifecycle(&self, what: Lifecycle, done: impl FnOnce(Result<(), String>) + 'static) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(
            async move {
                // A failed start is told by its reason; the agent's last
                // lines are in its log and its error.
                match what {
                    Lifecycle::Start => core.agents.start(&agent).await.map_err(|e| e.reason),
                    Lifecycle::Stop => core.agents.stop(&agent).await.map_err(String::from),
                    Lifecycle::Restart => core.agents.restart(&agent).await.map_err(|e| e.reason),
                }
            },
            done,
        );
    }
}
