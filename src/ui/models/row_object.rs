//! One row of the conversation list: a piece of a message (its parts, or a
//! segment of a long streamed text). The list shows rows, not messages, so
//! that only what is on screen is laid out (see `segments`).
//!
//! A row knows its message only as the object that made it: the message
//! knows its rows and gives them their typed `message()` (in
//! `message_object`), so the two modules do not import each other.

use std::cell::Cell;

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;

/// What of its message a row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RowKind {
    /// A message without parts yet: its header and footer only.
    #[default]
    Empty,
    /// Part `i`, whole.
    Part(usize),
    /// Parts `first..first + count`, all attachments: the files and images
    /// sent with one message are shown together, as one group.
    Attachments { first: usize, count: usize },
    /// Bytes `start..end` of the text of part `part`; `end: None` is the
    /// tail, up to the end of the text as it grows.
    Text {
        part: usize,
        start: usize,
        end: Option<usize>,
    },
}

impl RowKind {
    /// Whether `other` is this row later on: the same part, starting at the
    /// same place (a tail that became a fixed segment is the same row).
    pub fn same_row(self, other: RowKind) -> bool {
        match (self, other) {
            (RowKind::Empty, RowKind::Empty) => true,
            (RowKind::Part(a), RowKind::Part(b)) => a == b,
            (RowKind::Attachments { first: a, .. }, RowKind::Attachments { first: b, .. }) => a == b,
            (
                RowKind::Text {
                    part: a, start: s, ..
                },
                RowKind::Text {
                    part: b, start: t, ..
                },
            ) => a == b && s == t,
            _ => false,
        }
    }
}

/// What a row showed when it was last drawn; a row is drawn again only when
/// this changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    pub content: (u64, u64),
    pub first: bool,
    pub last: bool,
    /// The message's header and footer, for its first and last row.
    pub meta: u64,
}

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::RowObject)]
    pub struct RowObject {
        #[property(get)]
        pub revision: Cell<u64>,
        /// The `MessageObject` the row is a piece of.
        pub message: glib::WeakRef<glib::Object>,
        pub kind: Cell<RowKind>,
        pub stamp: Cell<Stamp>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for RowObject {
        const NAME: &'static str = "ParleyRowObject";
        type Type = super::RowObject;
    }

    #[glib::derived_properties]
    impl ObjectImpl for RowObject {}
}

glib::wrapper! {
    pub struct RowObject(ObjectSubclass<imp::RowObject>);
}

impl RowObject {
    /// A row of `message` (a `MessageObject`, which makes its rows).
    pub fn new(message: &impl IsA<glib::Object>, kind: RowKind, stamp: Stamp) -> Self {
        let o: Self = glib::Object::new();
        o.imp().message.set(Some(message.upcast_ref()));
        o.imp().kind.set(kind);
        o.imp().stamp.set(stamp);
        o
    }

    /// The object the row belongs to, untyped (see `message()`).
    pub(super) fn owner(&self) -> Option<glib::Object> {
        self.imp().message.upgrade()
    }

    pub fn kind(&self) -> RowKind {
        self.imp().kind.get()
    }

    pub fn stamp(&self) -> Stamp {
        self.imp().stamp.get()
    }

    /// Takes the row's new kind and stamp; bound widgets redraw if the
    /// stamp changed.
    pub fn update(&self, kind: RowKind, stamp: Stamp) {
        let imp = self.imp();
        imp.kind.set(kind);
        if imp.stamp.replace(stamp) != stamp {
            imp.revision.set(imp.revision.get() + 1);
            self.notify_revision();
        }
    }
}
