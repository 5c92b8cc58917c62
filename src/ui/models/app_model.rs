//! The application's state over one core: the agents (each with its own
//! conversation, permissions and log), and the routing of the core's events
//! to them. Every window of the application shows this one model; the
//! bridge feeds it once per frame and never touches a widget.

use std::cell::{OnceCell, RefCell};
use std::collections::HashSet;
use std::sync::OnceLock;

use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;
use gtk::glib::subclass::Signal;
use gtk::prelude::*;
use gtk::{gio, glib};

use super::{AgentObject, MessageObject};
use crate::core::events::Event;
use crate::core::services::Core;

use super::TerminalOutputs;

mod imp {
    use super::*;

    #[derive(Default)]
    pub struct AppModel {
        pub core: OnceCell<Core>,
        pub agents: OnceCell<gio::ListStore>,
        /// The names in `agents`, in order (to see when the list changed).
        pub names: RefCell<Vec<String>>,
        /// The frame clock of the window showing the model, while it is
        /// realized: the bridge applies events at the start of its frames.
        pub frame_clock: RefCell<Option<gtk::gdk::FrameClock>>,
        /// What the agents' ACP terminals printed, for the tool cards.
        pub terminals: TerminalOutputs,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for AppModel {
        const NAME: &'static str = "ParleyAppModel";
        type Type = super::AppModel;
    }

    impl ObjectImpl for AppModel {
        fn signals() -> &'static [Signal] {
            static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
            SIGNALS.get_or_init(|| {
                vec![
                    // The configuration changed: whether it is valid, and
                    // its first problem ("" when none).
                    Signal::builder("config-changed")
                        .param_types([bool::static_type(), String::static_type()])
                        .build(),
                    // Whether conversations are written to disk, and
                    // why not ("" when they are).
                    Signal::builder("history-status")
                        .param_types([bool::static_type(), String::static_type()])
                        .build(),
                    // An install's progress: registry id, phase, bytes
                    // done, bytes in all (-1: not known).
                    Signal::builder("registry-progress")
                        .param_types([
                            String::static_type(),
                            String::static_type(),
                            i64::static_type(),
                            i64::static_type(),
                        ])
                        .build(),
                    // A new agent object (for listeners of its signals).
                    Signal::builder("agent-added")
                        .param_types([AgentObject::static_type()])
                        .build(),
                ]
            })
        }
    }
}

glib::wrapper! {
    pub struct AppModel(ObjectSubclass<imp::AppModel>);
}

impl AppModel {
    pub fn new(core: &Core) -> Self {
        let o: Self = glib::Object::new();
        let _ = o.imp().core.set(core.clone());
        let _ = o.imp().agents.set(gio::ListStore::new::<AgentObject>());
        o.refresh_agents();
        o.configure_editor();
        o
    }

    /// The directories the agent works in (its cwd and additional ones).
    fn roots_of(&self, agent: &str) -> Vec<std::path::PathBuf> {
        // An agent on another host: its files are not here to open.
        let Some(def) = self.core().agents.definition(agent).filter(|d| !d.is_remote()) else {
            return Vec::new();
        };
        let mut roots = vec![def.working_dir()];
        roots.extend(def.additional_dirs());
        roots
    }

    /// Follow the agent: the configuration's `editor` and `followAgent`.
    fn configure_editor(&self) {
        let current = self.core().config.current();
        crate::ui::editor::configure(&current.editor, current.follow_agent);
    }

    /// The frame clock of the window that shows the model (`None`: no
    /// window is realized).
    pub fn frame_clock(&self) -> Option<gtk::gdk::FrameClock> {
        self.imp().frame_clock.borrow().clone()
    }

    /// Set by the window as it is realized and unrealized.
    pub fn set_frame_clock(&self, clock: Option<gtk::gdk::FrameClock>) {
        self.imp().frame_clock.replace(clock);
    }

    /// What the agents' ACP terminals printed (the tool cards' views watch it).
    pub fn terminals(&self) -> TerminalOutputs {
        self.imp().terminals.clone()
    }

    pub fn core(&self) -> &Core {
        self.imp()
            .core
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// The agents, in the configuration's order.
    pub fn agents(&self) -> gio::ListStore {
        self.imp()
            .agents
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
            .clone()
    }

    pub fn agent(&self, name: &str) -> Option<AgentObject> {
        let store = self.agents();
        (0..store.n_items())
            .filter_map(|i| store.item(i).and_downcast::<AgentObject>())
            .find(|a| a.name() == name)
    }

    /// Re-reads `AgentService.List`, keeping the objects of agents that stay
    /// (and so their conversations and the views bound to them).
    pub fn refresh_agents(&self) {
        let list = self.core().agents.list();
        let names: Vec<String> = list.iter().map(|a| a.name.clone()).collect();
        if *self.imp().names.borrow() == names {
            for info in &list {
                if let Some(a) = self.agent(&info.name) {
                    a.update(info);
                }
            }
            return;
        }
        let mut added = Vec::new();
        let objects: Vec<AgentObject> = list
            .iter()
            .map(|info| match self.agent(&info.name) {
                Some(a) => {
                    a.update(info);
                    a
                }
                None => {
                    let a = AgentObject::new(info, self.core(), &self.imp().terminals);
                    added.push(a.clone());
                    a
                }
            })
            .collect();
        self.imp().names.replace(names);
        let store = self.agents();
        store.splice(0, store.n_items(), &objects);
        for a in added {
            self.emit_by_name::<()>("agent-added", &[&a]);
        }
    }

    /// Another configuration was opened: every conversation is read again
    /// when next shown.
    pub fn forget_conversations(&self) {
        let store = self.agents();
        for a in (0..store.n_items()).filter_map(|i| store.item(i).and_downcast::<AgentObject>()) {
            a.conversation().forget_conversation();
        }
    }

    pub fn connect_registry_progress<F: Fn(&str, &str, i64, i64) + 'static>(
        &self,
        f: F,
    ) -> glib::SignalHandlerId {
        self.connect_local("registry-progress", false, move |args| {
            let s = |i: usize| {
                args.get(i)
                    .and_then(|a| a.get::<String>().ok())
                    .unwrap_or_default()
            };
            let n = |i: usize| args.get(i).and_then(|a| a.get::<i64>().ok()).unwrap_or(-1);
            f(&s(1), &s(2), n(3), n(4));
            None
        })
    }

    pub fn connect_history_status<F: Fn(bool, &str) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        self.connect_local("history-status", false, move |args| {
            let writable = args.get(1).and_then(|a| a.get::<bool>().ok()).unwrap_or(true);
            let error = args
                .get(2)
                .and_then(|a| a.get::<String>().ok())
                .unwrap_or_default();
            f(writable, &error);
            None
        })
    }

    pub fn connect_config_changed<F: Fn(&Self, bool, &str) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        self.connect_local("config-changed", false, move |args| {
            let model = args.first().and_then(|a| a.get::<Self>().ok());
            let valid = args.get(1).and_then(|a| a.get::<bool>().ok()).unwrap_or(true);
            let problem = args
                .get(2)
                .and_then(|a| a.get::<String>().ok())
                .unwrap_or_default();
            if let Some(model) = model {
                f(&model, valid, &problem);
            }
            None
        })
    }

    pub fn connect_agent_added<F: Fn(&AgentObject) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        self.connect_local("agent-added", false, move |args| {
            if let Some(a) = args.get(1).and_then(|a| a.get::<AgentObject>().ok()) {
                f(&a);
            }
            None
        })
    }

    /// Applies one frame's events to the models. Text deltas that arrive
    /// within a frame redraw their message once, and each conversation that
    /// changed says so once.
    pub fn apply(&self, batch: Vec<Event>) {
        let mut dirty: Vec<(AgentObject, MessageObject)> = Vec::new();
        let mut dirty_ids: HashSet<String> = HashSet::new();
        let mut changed: Vec<AgentObject> = Vec::new();
        let mut last_delta: Option<(String, String, MessageObject)> = None;
        let mut refresh_agents = false;
        for event in batch {
            match event {
                Event::AgentState(s) => match self.agent(&s.agent) {
                    Some(a) => a.apply_state(&s),
                    None => refresh_agents = true,
                },
                Event::AgentLog(l) => {
                    if let Some(a) = self.agent(&l.agent) {
                        a.push_log(&l.line);
                    }
                }
                Event::ConfigChanged(c) => {
                    refresh_agents = true;
                    self.configure_editor();
                    let problem = c
                        .problems
                        .first()
                        .map(|p| {
                            crate::i18n::gettext_f(
                                "line {line}: {message}",
                                &[("line", &p.line.to_string()), ("message", &p.message)],
                            )
                        })
                        .unwrap_or_default();
                    self.emit_by_name::<()>("config-changed", &[&c.valid, &problem]);
                }
                Event::MessageUpdated(u) => {
                    last_delta = None;
                    let Some(a) = self.agent(&u.agent) else { continue };
                    let Some(store) = a.conversation().loaded_messages() else {
                        continue;
                    };
                    touched(&a, &mut changed);
                    match find_message(&store, &u.message.id) {
                        Some((i, m)) => {
                            let was_queued = m.with(|old| old.queued).unwrap_or(false);
                            if was_queued && !u.message.queued && u.message.error.is_none() {
                                // Sent now: it moves after the answer it waited for.
                                store.remove(i);
                                store.append(&m);
                            }
                            m.replace(u.message);
                            if dirty_ids.insert(m.id()) {
                                dirty.push((a.clone(), m));
                            }
                        }
                        // An earlier message not loaded is read when it is.
                        None if a.conversation().is_unloaded(&u.message.id) => {}
                        None => store.append(&MessageObject::new(u.message)),
                    }
                }
                Event::MessageRemoved(r) => {
                    last_delta = None;
                    let Some(a) = self.agent(&r.agent) else { continue };
                    let Some(store) = a.conversation().loaded_messages() else {
                        continue;
                    };
                    if let Some((i, _)) = find_message(&store, &r.message_id) {
                        store.remove(i);
                        touched(&a, &mut changed);
                    }
                }
                Event::QueueChanged(q) => {
                    last_delta = None;
                    let Some(a) = self.agent(&q.agent) else { continue };
                    let Some(store) = a.conversation().loaded_messages() else {
                        continue;
                    };
                    // The queued messages are the last ones: taken out and
                    // put back in the queue's order.
                    for id in &q.queue {
                        if let Some((i, m)) = find_message(&store, id) {
                            store.remove(i);
                            store.append(&m);
                        }
                    }
                    touched(&a, &mut changed);
                }
                // The window sets drafts itself; another client's are read
                // when the conversation is opened.
                Event::DraftChanged(_) => {}
                Event::ChangesUpdated(c) => {
                    if let Some(a) = self.agent(&c.agent) {
                        a.conversation()
                            .set_changes(&c.conversation, c.files_changed as u32);
                    }
                }
                Event::TerminalOutput(o) => self.imp().terminals.output(&o.terminal_id, &o.data),
                Event::TerminalExited(e) => {
                    self.imp()
                        .terminals
                        .exited(&e.terminal_id, e.exit_code, e.signal.as_deref())
                }
                Event::AuthChanged(status) => {
                    if let Some(a) = self.agent(&status.agent) {
                        a.sign_in().apply(status);
                    }
                }
                Event::MessageDelta(d) => {
                    if let Some(crate::core::types::message::Part::Notice(n)) = d.part.as_ref() {
                        if let Some(a) = self.agent(&d.agent) {
                            a.conversation().notice(n);
                        }
                    }
                    // A stream is thousands of deltas in a row to one
                    // message: the last one found is tried first.
                    if let Some((agent, id, m)) = &last_delta {
                        if *agent == d.agent && *id == d.message_id {
                            m.apply_delta(d.index, d.kind, d.text.as_deref(), d.part.as_ref());
                            continue;
                        }
                    }
                    let Some(a) = self.agent(&d.agent) else { continue };
                    let Some(store) = a.conversation().loaded_messages() else {
                        continue;
                    };
                    touched(&a, &mut changed);
                    if let Some(crate::core::types::message::Part::Tool(call)) = d.part.as_ref() {
                        if crate::ui::editor::following() && !call.locations.is_empty() {
                            crate::ui::editor::follow(call, &self.roots_of(&d.agent));
                        }
                    }
                    if let Some((_, m)) = find_message(&store, &d.message_id) {
                        m.apply_delta(d.index, d.kind, d.text.as_deref(), d.part.as_ref());
                        if dirty_ids.insert(d.message_id.clone()) {
                            dirty.push((a.clone(), m.clone()));
                        }
                        last_delta = Some((d.agent, d.message_id, m));
                    }
                }
                Event::TurnChanged(t) => {
                    if let Some(a) = self.agent(&t.agent) {
                        a.conversation().apply_turn(t.busy);
                    }
                }
                Event::PermissionRequested(p) => {
                    if let Some(a) = self.agent(&p.agent) {
                        // Read the conversation first, so the request is
                        // not counted twice when it is read later. Read
                        // now, it already holds the request: listeners
                        // still hear of it.
                        let was_loaded = a.conversation().loaded_messages().is_some();
                        a.conversation().messages();
                        match find_permission(&a, &p.id) {
                            None => a.conversation().add_permission(p),
                            Some(object) if !was_loaded => a.conversation().permission_came(&object),
                            Some(_) => {}
                        }
                    }
                }
                Event::PermissionResolved(p) => {
                    if let Some(a) = self.agent(&p.agent) {
                        a.conversation().remove_permission(&p.id);
                    }
                }
                Event::UsageChanged(u) => {
                    if let Some(a) = self.agent(&u.agent) {
                        a.session().apply_usage(&u.usage);
                    }
                }
                Event::SessionChanged(c) => {
                    if let Some(a) = self.agent(&c.agent) {
                        a.session().apply_session(c.title.as_deref(), c.options);
                    }
                }
                Event::ConversationSwitched(c) => {
                    last_delta = None;
                    if let Some(a) = self.agent(&c.agent) {
                        a.conversation()
                            .apply_switched(c.conversation.as_deref(), c.reason.as_deref());
                        touched(&a, &mut changed);
                    }
                }
                Event::ConversationsChanged(c) => {
                    if let Some(a) = self.agent(&c.agent) {
                        a.conversation().conversations_changed(c.current.as_deref());
                    }
                }
                Event::HistoryStatus(h) => {
                    let text = h.error.unwrap_or_default();
                    self.emit_by_name::<()>("history-status", &[&h.writable, &text]);
                }
                Event::RegistryProgress(p) => {
                    let total = p.total.map_or(-1, |t| t as i64);
                    self.emit_by_name::<()>(
                        "registry-progress",
                        &[&p.id, &p.phase.to_string(), &(p.done as i64), &total],
                    );
                }
                // The sidebar's "update available" marks.
                Event::RegistryChanged(_) => refresh_agents = true,
                Event::TurnStalled(t) => {
                    if let Some(a) = self.agent(&t.agent) {
                        a.conversation().set_stalled(t.stalled);
                    }
                }
                Event::ElicitationRequested(e) => {
                    if let Some(a) = self.agent(&e.agent) {
                        a.conversation().add_elicitation(e);
                    }
                }
                Event::SubagentStarted(e) | Event::SubagentUpdated(e) | Event::SubagentEnded(e) => {
                    if let Some(a) = self.agent(&e.agent) {
                        a.conversation().subagents().apply(e.subagent);
                    }
                }
                Event::SubagentDelta(d) => {
                    if let Some(a) = self.agent(&d.delta.agent) {
                        a.conversation().subagents().delta(&d);
                    }
                }
                Event::ElicitationResolved(e) => {
                    if let Some(a) = self.agent(&e.agent) {
                        a.conversation().remove_elicitation(&e.id);
                    }
                }
            }
        }
        for (a, m) in dirty {
            a.conversation().message_changed(&m);
        }
        if refresh_agents {
            self.refresh_agents();
        }
        for a in changed {
            a.conversation().conversation_changed();
        }
    }
}

fn touched(a: &AgentObject, changed: &mut Vec<AgentObject>) {
    if !changed.contains(a) {
        changed.push(a.clone());
    }
}

fn find_permission(a: &AgentObject, id: &str) -> Option<super::PermissionObject> {
    let list = a.conversation().permissions();
    (0..list.n_items())
        .filter_map(|i| list.item(i).and_downcast::<super::PermissionObject>())
        .find(|p| p.request().id == id)
}

fn find_message(store: &gio::ListStore, id: &str) -> Option<(u32, MessageObject)> {
    (0..store.n_items())
        .rev()
        .filter_map(|i| store.item(i).and_downcast::<MessageObject>().map(|m| (i, m)))
        .find(|(_, m)| m.id() == id)
}
