//! One message of a conversation. The core's message is kept as it is; the
//! `revision` property tells rows to redraw after the bridge changed it.

use std::cell::{Cell, RefCell};

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;

use crate::core::chat::message::{Message, Part};

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::MessageObject)]
    pub struct MessageObject {
        #[property(get)]
        pub revision: Cell<u64>,
        pub message: RefCell<Option<Message>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for MessageObject {
        const NAME: &'static str = "ParleyMessageObject";
        type Type = super::MessageObject;
    }

    #[glib::derived_properties]
    impl ObjectImpl for MessageObject {}
}

glib::wrapper! {
    pub struct MessageObject(ObjectSubclass<imp::MessageObject>);
}

impl MessageObject {
    pub fn new(message: Message) -> Self {
        let o: Self = glib::Object::new();
        o.imp().message.replace(Some(message));
        o
    }

    pub fn id(&self) -> String {
        self.imp()
            .message
            .borrow()
            .as_ref()
            .map(|m| m.id.clone())
            .unwrap_or_default()
    }

    pub fn message(&self) -> Option<Message> {
        self.imp().message.borrow().clone()
    }

    pub fn replace(&self, message: Message) {
        self.imp().message.replace(Some(message));
    }

    /// Applies a `message:delta` without telling the rows yet.
    pub fn apply_delta(&self, index: usize, kind: &str, text: Option<&str>, part: Option<&Part>) {
        let mut slot = self.imp().message.borrow_mut();
        let Some(m) = slot.as_mut() else { return };
        match (text, part) {
            (Some(t), _) => {
                if index >= m.parts.len() {
                    m.parts.push(if kind == "thought" {
                        Part::Thought { text: String::new() }
                    } else {
                        Part::Text { text: String::new() }
                    });
                }
                if let Some(Part::Text { text } | Part::Thought { text }) = m.parts.get_mut(index) {
                    text.push_str(t);
                }
            }
            (None, Some(p)) => {
                if index < m.parts.len() {
                    m.parts[index] = p.clone();
                } else {
                    m.parts.push(p.clone());
                }
            }
            _ => {}
        }
    }

    /// Tells bound rows to redraw.
    pub fn changed(&self) {
        let imp = self.imp();
        imp.revision.set(imp.revision.get() + 1);
        self.notify_revision();
    }
}
