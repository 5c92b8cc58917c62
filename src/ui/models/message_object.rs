//! One message of a conversation. The core's message is kept as it is; its
//! rows (see `RowObject`) are what the list shows, kept in step by
//! [`MessageObject::sync_rows`], which redraws only the rows that changed.
//! A conversation's rows are listed by `ConversationRows`.

use std::cell::{Cell, RefCell};

use gtk::glib;
use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;

use super::row_object::{RowKind, RowObject, Stamp};
use super::segments;
use crate::core::types::message::{Message, Part, PartKind, Role};

mod imp {
    use super::*;

    #[derive(Default)]
    pub struct MessageObject {
        pub message: RefCell<Option<Message>>,
        pub rows: RefCell<Vec<RowObject>>,
        /// A counter per part, moved on every change of that part.
        pub part_revs: RefCell<Vec<u64>>,
        /// Moved when the header or footer may have changed (a whole
        /// message from the core).
        pub meta_rev: Cell<u64>,
        /// Per text part: the ends of its fixed segments.
        pub cuts: RefCell<Vec<Vec<usize>>>,
        /// Moved when a text part's segments were dropped (its text was
        /// replaced, not extended).
        pub cut_epoch: Cell<u64>,
        /// Per part: what a giant text had cut from its start, as the
        /// core cuts it (`core::types::long_text`).
        pub long: RefCell<std::collections::HashMap<usize, crate::core::types::long_text::Cut>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for MessageObject {
        const NAME: &'static str = "ParleyMessageObject";
        type Type = super::MessageObject;
    }

    impl ObjectImpl for MessageObject {}
}

glib::wrapper! {
    pub struct MessageObject(ObjectSubclass<imp::MessageObject>);
}

impl RowObject {
    /// The message the row is a piece of. Here rather than in `row_object`:
    /// a message makes its rows, and a row need not know what a message is.
    pub fn message(&self) -> Option<MessageObject> {
        self.owner().and_downcast()
    }
}

/// How a message's rows changed: at row `position`, `removed` rows went
/// and `added` came (as in `items-changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsChange {
    pub position: u32,
    pub removed: u32,
    pub added: u32,
}

/// Whether part `part` of `m` is streamed Markdown cut into segments (an
/// agent's or Parley's text; a user's text is shown as typed).
fn segmented(m: &Message, part: &Part) -> bool {
    matches!(part, Part::Text { .. }) && m.role != Role::User
}

impl MessageObject {
    pub fn new(message: Message) -> Self {
        let o: Self = glib::Object::new();
        o.imp().message.replace(Some(message));
        // Not in a list yet: nobody to tell.
        let _ = o.sync_rows();
        o
    }

    pub fn id(&self) -> String {
        self.with(|m| m.id.clone()).unwrap_or_default()
    }

    /// Reads the message in place: a streamed answer can be megabytes.
    pub fn with<R>(&self, f: impl FnOnce(&Message) -> R) -> Option<R> {
        self.imp().message.borrow().as_ref().map(f)
    }

    /// How many rows the conversation list shows for this message.
    pub fn n_rows(&self) -> u32 {
        self.imp().rows.borrow().len() as u32
    }

    /// Row `i` of this message.
    pub fn row(&self, i: u32) -> Option<RowObject> {
        self.imp().rows.borrow().get(i as usize).cloned()
    }

    /// Takes the core's whole message (`message:updated`).
    pub fn replace(&self, message: Message) {
        let imp = self.imp();
        {
            let old = imp.message.borrow();
            let mut cuts = imp.cuts.borrow_mut();
            // Segments stay only where the new text still begins with what
            // they cover; anything else is cut again.
            for (i, c) in cuts.iter_mut().enumerate() {
                let (Some(end), Some(Part::Text { text: old })) =
                    (c.last().copied(), old.as_ref().and_then(|m| m.parts.get(i)))
                else {
                    continue;
                };
                let kept = match message.parts.get(i) {
                    Some(Part::Text { text }) => text.get(..end) == old.get(..end),
                    _ => false,
                };
                if !kept {
                    c.clear();
                    imp.cut_epoch.set(imp.cut_epoch.get() + 1);
                }
            }
        }
        imp.message.replace(Some(message));
        for r in imp.part_revs.borrow_mut().iter_mut() {
            *r += 1;
        }
        imp.meta_rev.set(imp.meta_rev.get() + 1);
    }

    /// Applies a `message:delta` without telling the rows yet.
    pub fn apply_delta(&self, index: usize, kind: PartKind, text: Option<&str>, part: Option<&Part>) {
        let imp = self.imp();
        {
            let mut slot = imp.message.borrow_mut();
            let Some(m) = slot.as_mut() else { return };
            match (text, part) {
                (Some(t), _) => {
                    if index >= m.parts.len() {
                        m.parts.push(if kind == PartKind::Thought {
                            Part::Thought { text: String::new() }
                        } else {
                            Part::Text { text: String::new() }
                        });
                    }
                    if let Some(Part::Text { text } | Part::Thought { text }) = m.parts.get_mut(index) {
                        text.push_str(t);
                        // The end of a giant answer only, as the core keeps
                        // it: its segments start again.
                        if text.len() > crate::core::types::long_text::KEPT {
                            let mut long = imp.long.borrow_mut();
                            let cut = long.entry(index).or_default();
                            if crate::core::types::long_text::cap(text, cut) {
                                if let Some(c) = imp.cuts.borrow_mut().get_mut(index) {
                                    c.clear();
                                }
                                imp.cut_epoch.set(imp.cut_epoch.get() + 1);
                            }
                        }
                    }
                }
                (None, Some(p)) => {
                    if index < m.parts.len() {
                        m.parts[index] = p.clone();
                    } else {
                        m.parts.push(p.clone());
                    }
                }
                _ => return,
            }
        }
        let mut revs = imp.part_revs.borrow_mut();
        if let Some(r) = revs.get_mut(index) {
            *r += 1;
        }
    }

    /// The length of the message's text, for the benchmarks.
    pub fn text_len(&self) -> usize {
        self.with(|m| {
            m.parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => text.len(),
                    _ => 0,
                })
                .sum()
        })
        .unwrap_or(0)
    }

    /// Brings the rows in step with the message: new segments are added,
    /// rows that changed are told to redraw, the others are left alone.
    /// Says which rows came and went, for the list of the conversation's
    /// rows (`ConversationRows::message_changed`, which calls this; called
    /// elsewhere on a listed message, it would leave that list behind).
    #[must_use]
    pub(crate) fn sync_rows(&self) -> Option<RowsChange> {
        let imp = self.imp();
        let want = {
            let message = imp.message.borrow();
            let m = message.as_ref()?;
            let mut revs = imp.part_revs.borrow_mut();
            revs.resize(m.parts.len(), 0);
            let mut cuts = imp.cuts.borrow_mut();
            cuts.resize_with(m.parts.len(), Vec::new);
            let epoch = imp.cut_epoch.get();
            let mut want: Vec<(RowKind, (u64, u64))> = Vec::new();
            for (i, part) in m.parts.iter().enumerate() {
                match part {
                    Part::Text { text } if segmented(m, part) => {
                        let c = &mut cuts[i];
                        let from = c.last().copied().unwrap_or(0);
                        segments::boundaries(text, from, c);
                        let mut start = 0;
                        for &end in c.iter() {
                            want.push((
                                RowKind::Text {
                                    part: i,
                                    start,
                                    end: Some(end),
                                },
                                (end as u64, epoch),
                            ));
                            start = end;
                        }
                        if start < text.len() || c.is_empty() {
                            let kind = RowKind::Text {
                                part: i,
                                start,
                                end: None,
                            };
                            want.push((kind, (text.len() as u64, revs[i])));
                        }
                    }
                    Part::Attachment(_) => match want.last_mut() {
                        Some((RowKind::Attachments { first, count }, content)) if *first + *count == i => {
                            // Any of its parts changed (a replaced message
                            // raises them all): the group is drawn again.
                            *count += 1;
                            *content = (content.0 + revs[i], epoch);
                        }
                        _ => want.push((RowKind::Attachments { first: i, count: 1 }, (revs[i], epoch))),
                    },
                    _ => want.push((RowKind::Part(i), (revs[i], epoch))),
                }
            }
            if want.is_empty() {
                want.push((RowKind::Empty, (0, 0)));
            }
            want
        };
        let meta = imp.meta_rev.get();
        let last = want.len() - 1;
        let stamp = |i: usize, content: (u64, u64)| Stamp {
            content,
            first: i == 0,
            last: i == last,
            meta: if i == 0 || i == last { meta } else { 0 },
        };
        // Rows are matched from the start: a streamed message only grows at
        // its end, so all but its last rows are kept as they are.
        let mut changed = Vec::new();
        let (kept, n_old) = {
            let rows = imp.rows.borrow();
            let mut kept = 0;
            while kept < rows.len().min(want.len()) {
                let (kind, content) = want[kept];
                let row = &rows[kept];
                if !row.kind().same_row(kind) {
                    break;
                }
                let new_stamp = stamp(kept, content);
                if (row.kind(), row.stamp()) != (kind, new_stamp) {
                    changed.push((row.clone(), kind, new_stamp));
                }
                kept += 1;
            }
            (kept, rows.len())
        };
        // Rows tell their views: not while borrowed.
        for (row, kind, st) in changed {
            row.update(kind, st);
        }
        if kept == n_old && kept == want.len() {
            return None;
        }
        let added: Vec<RowObject> = want[kept..]
            .iter()
            .enumerate()
            .map(|(j, &(kind, content))| RowObject::new(self, kind, stamp(kept + j, content)))
            .collect();
        let n_added = added.len();
        imp.rows.borrow_mut().splice(kept.., added);
        Some(RowsChange {
            position: kept as u32,
            removed: (n_old - kept) as u32,
            added: n_added as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(m: &MessageObject) -> Vec<(RowKind, u64)> {
        (0..m.n_rows())
            .filter_map(|i| m.row(i))
            .map(|r| (r.kind(), r.revision()))
            .collect()
    }

    fn agent_message() -> MessageObject {
        MessageObject::new(Message::new("m1".into(), "demo", Role::Agent))
    }

    #[test]
    fn a_streamed_text_grows_by_rows_and_only_its_tail_is_redrawn() {
        let m = agent_message();
        assert_eq!(rows(&m), vec![(RowKind::Empty, 0)]);
        m.apply_delta(0, PartKind::Text, Some("first paragraph\n\nsecond"), None);
        let _ = m.sync_rows();
        let r = rows(&m);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            r[0].0,
            RowKind::Text {
                part: 0,
                start: 0,
                end: Some(17)
            }
        );
        assert_eq!(
            r[1].0,
            RowKind::Text {
                part: 0,
                start: 17,
                end: None
            }
        );
        let fixed_rev = r[0].1;
        let tail_rev = r[1].1;
        m.apply_delta(0, PartKind::Text, Some(" paragraph goes on"), None);
        let _ = m.sync_rows();
        let r = rows(&m);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].1, fixed_rev, "a fixed row is not drawn again");
        assert!(r[1].1 > tail_rev, "the tail is drawn again");
        // A long paragraph is cut into rows of about MAX_SEGMENT.
        let line = "x".repeat(99) + "\n";
        m.apply_delta(0, PartKind::Text, Some(&format!("\n{}", line.repeat(40))), None);
        let _ = m.sync_rows();
        assert!(rows(&m).len() >= 4, "{:?}", rows(&m));
    }

    #[test]
    fn a_replaced_text_is_cut_again_and_parts_get_rows_of_their_own() {
        let m = agent_message();
        m.apply_delta(0, PartKind::Text, Some("one\n\ntwo\n\nthree"), None);
        let _ = m.sync_rows();
        assert_eq!(rows(&m).len(), 3);
        let mut whole = Message::new("m1".into(), "demo", Role::Agent);
        whole.parts.push(Part::Text {
            text: "other\n\ntext".into(),
        });
        whole.parts.push(Part::Thought { text: "hmm".into() });
        m.replace(whole);
        let _ = m.sync_rows();
        let kinds: Vec<RowKind> = rows(&m).into_iter().map(|r| r.0).collect();
        assert_eq!(
            kinds,
            vec![
                RowKind::Text {
                    part: 0,
                    start: 0,
                    end: Some(7)
                },
                RowKind::Text {
                    part: 0,
                    start: 7,
                    end: None
                },
                RowKind::Part(1),
            ]
        );
        // A user's text is one row, as typed.
        let mut user = Message::new("m2".into(), "demo", Role::User);
        user.parts.push(Part::Text {
            text: "a\n\nb\n\nc".into(),
        });
        // Its attachments are one row together.
        for name in ["a.md", "b.png"] {
            user.parts
                .push(Part::Attachment(crate::core::types::message::Attachment {
                    name: name.into(),
                    uri: format!("file:///tmp/{name}"),
                    mime_type: "text/plain".into(),
                    size: 1,
                    sent_as: crate::core::types::message::AttachmentKind::Link,
                    content: None,
                }));
        }
        let u = MessageObject::new(user);
        assert_eq!(
            rows(&u).into_iter().map(|r| r.0).collect::<Vec<_>>(),
            vec![RowKind::Part(0), RowKind::Attachments { first: 1, count: 2 }]
        );
    }
}
