//! All the rows of a conversation in one list: each message's rows (see
//! `RowObject`) one after the other, in the order of the messages.
//!
//! It does what a `GtkFlattenListModel` over a store per message would,
//! which cost about 760 bytes a message here (a store, a node in a mapped
//! model and one in the flattened one, a signal handler): 15 MB with
//! 20,000 messages. Here a message costs the number in `starts`, and its
//! rows are told of by `message_changed`.

use std::cell::{Cell, RefCell};

use gtk::gio;
use gtk::gio::prelude::*;
use gtk::gio::subclass::prelude::*;
use gtk::glib;

use super::{MessageObject, RowObject};

mod imp {
    use super::*;

    #[derive(Default)]
    pub struct ConversationRows {
        pub store: RefCell<Option<gio::ListStore>>,
        pub handler: RefCell<Option<glib::SignalHandlerId>>,
        /// Where each message's rows begin; one more at the end, the
        /// number of rows.
        pub starts: RefCell<Vec<u32>>,
        /// Where the message changed last was: a stream changes one
        /// message many times.
        pub hint: Cell<u32>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for ConversationRows {
        const NAME: &'static str = "ParleyConversationRows";
        type Type = super::ConversationRows;
        type Interfaces = (gio::ListModel,);
    }

    impl ObjectImpl for ConversationRows {
        fn dispose(&self) {
            if let (Some(store), Some(id)) = (self.store.take(), self.handler.take()) {
                store.disconnect(id);
            }
        }
    }

    impl ListModelImpl for ConversationRows {
        fn item_type(&self) -> glib::Type {
            RowObject::static_type()
        }

        fn n_items(&self) -> u32 {
            self.starts.borrow().last().copied().unwrap_or(0)
        }

        fn item(&self, position: u32) -> Option<glib::Object> {
            let (message, row) = {
                let starts = self.starts.borrow();
                if position >= starts.last().copied().unwrap_or(0) {
                    return None;
                }
                // The last message that begins at or before `position`
                // (messages without rows begin where the next one does).
                let message = starts.partition_point(|&s| s <= position) - 1;
                (message, position - starts[message])
            };
            let store = self.store.borrow();
            store
                .as_ref()?
                .item(message as u32)
                .and_downcast::<MessageObject>()?
                .row(row)
                .map(|r| r.upcast())
        }
    }
}

glib::wrapper! {
    pub struct ConversationRows(ObjectSubclass<imp::ConversationRows>)
        @implements gio::ListModel;
}

impl ConversationRows {
    /// The rows of the messages in `store`, kept in step with it.
    pub fn new(store: &gio::ListStore) -> Self {
        let o: Self = glib::Object::new();
        let imp = o.imp();
        imp.starts.replace(vec![0]);
        imp.store.replace(Some(store.clone()));
        let id = store.connect_items_changed(glib::clone!(
            #[weak]
            o,
            move |store, position, removed, added| o.messages_changed(store, position, removed, added)
        ));
        imp.handler.replace(Some(id));
        o.messages_changed(store, 0, 0, store.n_items());
        o
    }

    /// Brings message `m`'s rows in step with it (see
    /// `MessageObject::sync_rows`) and tells the list which rows changed.
    pub fn message_changed(&self, m: &MessageObject) {
        let Some(change) = m.sync_rows() else { return };
        let Some(k) = self.position_of(m) else { return };
        let imp = self.imp();
        let at = {
            let mut starts = imp.starts.borrow_mut();
            let delta = change.added as i64 - change.removed as i64;
            for s in starts[k + 1..].iter_mut() {
                *s = (*s as i64 + delta) as u32;
            }
            debug_assert_eq!(starts[k + 1] - starts[k], m.n_rows());
            starts[k] + change.position
        };
        self.items_changed(at, change.removed, change.added);
    }

    /// Where `m` is in the store: where the last one was, or found from
    /// the end (new messages are there).
    fn position_of(&self, m: &MessageObject) -> Option<usize> {
        let imp = self.imp();
        let store = imp.store.borrow().clone()?;
        let is = |i: u32| {
            store
                .item(i)
                .is_some_and(|o| o == *m.upcast_ref::<glib::Object>())
        };
        let hint = imp.hint.get();
        let found = if is(hint) {
            hint
        } else {
            (0..store.n_items()).rev().find(|&i| is(i))?
        };
        imp.hint.set(found);
        Some(found as usize)
    }

    /// Messages `position..position + removed` were replaced by `added`
    /// others: their rows are, too.
    fn messages_changed(&self, store: &gio::ListStore, position: u32, removed: u32, added: u32) {
        let imp = self.imp();
        let (position, removed) = (position as usize, removed as usize);
        let (at, rows_removed, rows_added) = {
            let mut starts = imp.starts.borrow_mut();
            let Some(&at) = starts.get(position) else {
                return;
            };
            let end = starts.get(position + removed).copied().unwrap_or(at);
            // How many rows each message after the removed ones has.
            let after: Vec<u32> = starts
                .get(position + removed..)
                .unwrap_or_default()
                .windows(2)
                .map(|w| w[1] - w[0])
                .collect();
            starts.truncate(position + 1);
            let mut next = at;
            for i in position..position + added as usize {
                next += store
                    .item(i as u32)
                    .and_downcast::<MessageObject>()
                    .map_or(0, |m| m.n_rows());
                starts.push(next);
            }
            let rows_added = next - at;
            for n in after {
                next += n;
                starts.push(next);
            }
            (at, end - at, rows_added)
        };
        if rows_removed > 0 || rows_added > 0 {
            self.items_changed(at, rows_removed, rows_added);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;
    use crate::core::types::message::{Message, Part, PartKind, Role};

    fn message(id: &str, text: &str) -> MessageObject {
        let mut m = Message::new(id.into(), "demo", Role::Agent);
        if !text.is_empty() {
            m.parts.push(Part::Text { text: text.into() });
        }
        MessageObject::new(m)
    }

    /// The rows as the messages have them, one message after the other.
    fn expected(store: &gio::ListStore) -> Vec<RowObject> {
        (0..store.n_items())
            .filter_map(|i| store.item(i).and_downcast::<MessageObject>())
            .flat_map(|m| (0..m.n_rows()).filter_map(move |r| m.row(r)))
            .collect()
    }

    fn listed(rows: &ConversationRows) -> Vec<RowObject> {
        (0..rows.n_items())
            .map(|i| rows.item(i).and_downcast::<RowObject>().expect("a row"))
            .collect()
    }

    #[test]
    fn the_rows_and_their_changes_follow_the_messages() {
        let store = gio::ListStore::new::<MessageObject>();
        store.append(&message("a", "one\n\ntwo"));
        let rows = ConversationRows::new(&store);
        // What a list view knows: only what `items-changed` told it.
        let seen: Rc<RefCell<Vec<RowObject>>> = Rc::new(RefCell::new(listed(&rows)));
        let s = seen.clone();
        rows.connect_items_changed(move |rows, position, removed, added| {
            let (p, r) = (position as usize, removed as usize);
            let new: Vec<RowObject> = (position..position + added)
                .map(|i| rows.item(i).and_downcast::<RowObject>().expect("a row"))
                .collect();
            s.borrow_mut().splice(p..p + r, new);
        });
        let check = |what: &str| {
            let want = expected(&store);
            assert_eq!(listed(&rows), want, "{what}: the rows listed");
            assert_eq!(*seen.borrow(), want, "{what}: the rows told of");
            assert_eq!(rows.n_items() as usize, want.len(), "{what}");
            assert!(
                rows.item(rows.n_items()).is_none(),
                "{what}: nothing past the end"
            );
        };
        check("one message");
        assert_eq!(rows.n_items(), 2);

        store.append(&message("b", ""));
        store.append(&message("c", "three\n\nfour\n\nfive"));
        check("appended");
        // An earlier page comes in front.
        store.splice(0, 0, &[message("x", "early"), message("y", "p\n\nq")]);
        check("an earlier page");

        // A stream into a message in the middle, then at the end.
        let b = store.item(3).and_downcast::<MessageObject>().expect("b");
        b.apply_delta(0, PartKind::Text, Some("streamed\n\nmore"), None);
        rows.message_changed(&b);
        check("streamed into the middle");
        let c = store.item(4).and_downcast::<MessageObject>().expect("c");
        for chunk in ["\n\nsix", " goes on", "\n\nseven\n\n", "eight"] {
            c.apply_delta(0, PartKind::Text, Some(chunk), None);
            rows.message_changed(&c);
            check("streamed at the end");
        }
        // A message replaced by a shorter one has fewer rows.
        let mut short = Message::new("c".into(), "demo", Role::Agent);
        short.parts.push(Part::Text { text: "short".into() });
        c.replace(short);
        rows.message_changed(&c);
        check("replaced by a shorter one");
        assert_eq!(c.n_rows(), 1);

        // Removed from the middle, moved to the end, then all gone.
        store.remove(1);
        check("removed");
        let x = store.item(0).and_downcast::<MessageObject>().expect("x");
        store.remove(0);
        store.append(&x);
        check("moved to the end");
        store.remove_all();
        check("all gone");
        assert_eq!(rows.n_items(), 0);
    }
}
