//! The agent's helpers (subagents) as the window keeps them: one
//! [`SubagentObject`] per helper, with what it is and its own thread, kept
//! by the conversation in [`SubagentThreads`] (which says how many work,
//! and which ends). `AppModel` applies
//! `subagent:*` events here; a thread's view watches its object's
//! `changed` (what it is) and `thread-changed` (its messages; at most once
//! a frame, however many deltas came) and never the other way round.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::subclass::prelude::*;

use crate::core::events::SubagentDelta;
use crate::core::types::long_text;
use crate::core::types::message::{Message, Part, PartKind, Role};
use crate::core::types::subagent::{Subagent, SubagentThread};

mod imp {
    use std::sync::OnceLock;

    use gtk::glib::subclass::Signal;

    use super::*;

    #[derive(Default)]
    pub struct SubagentObject {
        pub info: RefCell<Subagent>,
        pub messages: RefCell<Vec<Message>>,
        /// What giant text parts had cut (as the core cuts them).
        pub cuts: RefCell<HashMap<(String, usize), long_text::Cut>>,
        /// A `thread-changed` is due at the next idle.
        pub due: Cell<bool>,
        /// Its card is open: a card drawn again (its row rebuilt) opens
        /// as the user left it.
        pub expanded: Cell<bool>,
        /// Each part's revision, by message id and index (a view redraws
        /// only the parts whose revision changed), and a number that
        /// changes when the whole thread is read anew.
        pub revs: RefCell<HashMap<(String, usize), u64>>,
        pub epoch: Cell<u64>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for SubagentObject {
        const NAME: &'static str = "ParleySubagentObject";
        type Type = super::SubagentObject;
    }

    impl ObjectImpl for SubagentObject {
        fn signals() -> &'static [Signal] {
            static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
            SIGNALS.get_or_init(|| {
                vec![
                    Signal::builder("changed").build(),
                    Signal::builder("thread-changed").build(),
                ]
            })
        }
    }
}

glib::wrapper! {
    pub struct SubagentObject(ObjectSubclass<imp::SubagentObject>);
}

impl SubagentObject {
    fn new(info: Subagent, messages: Vec<Message>) -> Self {
        let o: Self = glib::Object::new();
        o.imp().info.replace(info);
        o.imp().messages.replace(messages);
        o
    }

    /// What it is now (a copy).
    pub fn info(&self) -> Subagent {
        self.imp().info.borrow().clone()
    }

    /// Whether the user left its card open.
    pub fn expanded(&self) -> bool {
        self.imp().expanded.get()
    }

    pub fn set_expanded(&self, expanded: bool) {
        self.imp().expanded.set(expanded);
    }

    /// Part `index` of message `id`'s revision: it changes with the part.
    pub fn revision(&self, id: &str, index: usize) -> u64 {
        let rev = self
            .imp()
            .revs
            .borrow()
            .get(&(id.to_owned(), index))
            .copied()
            .unwrap_or(0);
        rev.wrapping_add(self.imp().epoch.get() << 32)
    }

    /// Its thread's messages, read in `f`.
    pub fn with_messages<R>(&self, f: impl FnOnce(&[Message]) -> R) -> R {
        f(&self.imp().messages.borrow())
    }

    fn set_info(&self, info: Subagent) {
        if *self.imp().info.borrow() != info {
            self.imp().info.replace(info);
            self.emit_by_name::<()>("changed", &[]);
        }
    }

    fn apply_delta(&self, d: &SubagentDelta) {
        let imp = self.imp();
        let delta = &d.delta;
        {
            let mut messages = imp.messages.borrow_mut();
            let i = match messages.iter().rposition(|m| m.id == delta.message_id) {
                Some(i) => i,
                None => {
                    messages.push(Message::new(delta.message_id.clone(), &delta.agent, Role::Agent));
                    messages.len() - 1
                }
            };
            let m = &mut messages[i];
            match (&delta.text, &delta.part) {
                (Some(t), _) => {
                    if delta.index >= m.parts.len() {
                        m.parts.push(if delta.kind == PartKind::Thought {
                            Part::Thought { text: String::new() }
                        } else {
                            Part::Text { text: String::new() }
                        });
                    }
                    if let Some(Part::Text { text } | Part::Thought { text }) = m.parts.get_mut(delta.index) {
                        text.push_str(t);
                        if text.len() > long_text::KEPT {
                            let mut cuts = imp.cuts.borrow_mut();
                            long_text::cap(text, cuts.entry((m.id.clone(), delta.index)).or_default());
                        }
                    }
                }
                (None, Some(p)) if delta.index < m.parts.len() => m.parts[delta.index] = p.clone(),
                (None, Some(p)) => m.parts.push(p.clone()),
                _ => return,
            }
        }
        *imp.revs
            .borrow_mut()
            .entry((delta.message_id.clone(), delta.index))
            .or_default() += 1;
        // Once a frame, however many deltas came.
        if !imp.due.replace(true) {
            let this = self.downgrade();
            glib::idle_add_local_once(move || {
                if let Some(this) = this.upgrade() {
                    this.imp().due.set(false);
                    this.emit_by_name::<()>("thread-changed", &[]);
                }
            });
        }
    }

    pub fn connect_changed<F: Fn(&Self) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        super::props::connect_plain(self, "changed", f)
    }

    pub fn connect_thread_changed<F: Fn(&Self) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        super::props::connect_plain(self, "thread-changed", f)
    }
}

mod threads_imp {
    use std::sync::OnceLock;

    use gtk::glib::subclass::Signal;

    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::SubagentThreads)]
    pub struct SubagentThreads {
        pub threads: RefCell<HashMap<String, super::SubagentObject>>,
        /// How many helpers work now (or wait for the user).
        #[property(get)]
        pub working: Cell<u32>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for SubagentThreads {
        const NAME: &'static str = "ParleySubagentThreads";
        type Type = super::SubagentThreads;
    }

    #[glib::derived_properties]
    impl ObjectImpl for SubagentThreads {
        fn signals() -> &'static [Signal] {
            static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
            SIGNALS.get_or_init(|| {
                vec![
                    // A helper stopped working: its object.
                    Signal::builder("ended")
                        .param_types([super::SubagentObject::static_type()])
                        .build(),
                ]
            })
        }
    }
}

glib::wrapper! {
    /// A conversation's helpers, by session id.
    pub struct SubagentThreads(ObjectSubclass<threads_imp::SubagentThreads>);
}

impl Default for SubagentThreads {
    fn default() -> Self {
        glib::Object::new()
    }
}

impl SubagentThreads {
    pub fn get(&self, session_id: &str) -> Option<SubagentObject> {
        self.imp().threads.borrow().get(session_id).cloned()
    }

    /// A helper announced or changed (`subagent:started|updated|ended`).
    pub fn apply(&self, info: Subagent) {
        match self.get(&info.session_id) {
            Some(o) => {
                let was = o.info().status.is_active();
                let ends = was && !info.status.is_active();
                o.set_info(info);
                if ends {
                    self.emit_by_name::<()>("ended", &[&o]);
                }
            }
            None => {
                let id = info.session_id.clone();
                self.imp()
                    .threads
                    .borrow_mut()
                    .insert(id, SubagentObject::new(info, Vec::new()));
            }
        }
        self.count();
    }

    /// Every helper of the conversation.
    pub fn all(&self) -> Vec<SubagentObject> {
        self.imp().threads.borrow().values().cloned().collect()
    }

    /// The helpers that tool call `id` of their parent links.
    pub fn linked_to(&self, id: &str) -> Vec<SubagentObject> {
        self.imp()
            .threads
            .borrow()
            .values()
            .filter(|o| o.imp().info.borrow().tool_call.as_deref() == Some(id))
            .cloned()
            .collect()
    }

    /// A delta of a helper's thread (`subagent:delta`).
    pub fn delta(&self, d: &SubagentDelta) {
        if let Some(o) = self.get(&d.session_id) {
            o.apply_delta(d);
        }
    }

    /// The conversation's helpers as read from the core (a conversation
    /// opened or read anew): what is kept of each is brought in step, so
    /// that the views of a helper still shown stay.
    pub fn load(&self, threads: Vec<SubagentThread>) {
        let mut map = self.imp().threads.borrow_mut();
        let mut kept = HashMap::new();
        for t in threads {
            let id = t.subagent.session_id.clone();
            let o = match map.remove(&id) {
                Some(o) => {
                    o.imp().messages.replace(t.messages);
                    o.imp().revs.borrow_mut().clear();
                    o.imp().epoch.set(o.imp().epoch.get() + 1);
                    o.set_info(t.subagent);
                    o.emit_by_name::<()>("thread-changed", &[]);
                    o
                }
                None => SubagentObject::new(t.subagent, t.messages),
            };
            kept.insert(id, o);
        }
        *map = kept;
        drop(map);
        self.count();
    }

    /// Calls `f` with each helper that stops working.
    pub fn connect_ended<F: Fn(&SubagentObject) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        self.connect_local("ended", false, move |args| {
            if let Some(o) = args.get(1).and_then(|v| v.get::<SubagentObject>().ok()) {
                f(&o);
            }
            None
        })
    }

    fn count(&self) {
        let n = self
            .imp()
            .threads
            .borrow()
            .values()
            .filter(|o| o.imp().info.borrow().status.is_active())
            .count() as u32;
        if self.imp().working.replace(n) != n {
            self.notify_working();
        }
    }
}
