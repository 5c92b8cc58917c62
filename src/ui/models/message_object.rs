//! One message of a conversation. The core's message is kept as it is; its
//! rows (see `RowObject`) are what the list shows, kept in step by
//! [`MessageObject::changed`], which redraws only the rows that changed.

use std::cell::{Cell, RefCell};

use gtk::gio;
use gtk::gio::prelude::*;
use gtk::glib;
use gtk::glib::subclass::prelude::*;

use super::row_object::{RowKind, RowObject, Stamp};
use super::segments;
use crate::core::chat::message::{Message, Part, PartKind, Role};

mod imp {
    use super::*;

    #[derive(Default)]
    pub struct MessageObject {
        pub message: RefCell<Option<Message>>,
        pub rows: RefCell<Option<gio::ListStore>>,
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
        /// What each row in `rows` was last given: compared here, a long
        /// streamed message's unchanged rows are not looked up in the
        /// store on every change (thousands of them in a flood).
        pub given: RefCell<Vec<(RowKind, Stamp)>>,
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

/// Whether part `part` of `m` is streamed Markdown cut into segments (an
/// agent's or Parley's text; a user's text is shown as typed).
fn segmented(m: &Message, part: &Part) -> bool {
    matches!(part, Part::Text { .. }) && m.role != Role::User
}

impl MessageObject {
    pub fn new(message: Message) -> Self {
        let o: Self = glib::Object::new();
        o.imp().message.replace(Some(message));
        o.imp().rows.replace(Some(gio::ListStore::new::<RowObject>()));
        o.sync_rows();
        o
    }

    pub fn id(&self) -> String {
        self.with(|m| m.id.clone()).unwrap_or_default()
    }

    /// Reads the message in place: a streamed answer can be megabytes.
    pub fn with<R>(&self, f: impl FnOnce(&Message) -> R) -> Option<R> {
        self.imp().message.borrow().as_ref().map(f)
    }

    /// The rows the conversation list shows for this message.
    pub fn rows(&self) -> gio::ListStore {
        self.imp()
            .rows
            .borrow()
            .clone()
            .unwrap_or_else(gio::ListStore::new::<RowObject>)
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
    pub fn changed(&self) {
        self.sync_rows();
    }

    fn sync_rows(&self) {
        let imp = self.imp();
        let Some(rows) = imp.rows.borrow().clone() else {
            return;
        };
        let want = {
            let message = imp.message.borrow();
            let Some(m) = message.as_ref() else { return };
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
        let n_old = rows.n_items() as usize;
        let mut given = imp.given.borrow_mut();
        if given.len() != n_old {
            // Only this function changes the store; were it changed
            // elsewhere, each row is asked.
            *given = (0..n_old as u32)
                .map(|i| {
                    rows.item(i)
                        .and_downcast::<RowObject>()
                        .map_or((RowKind::Empty, Stamp::default()), |r| (r.kind(), r.stamp()))
                })
                .collect();
        }
        let mut kept = 0;
        let mut changed = Vec::new();
        while kept < n_old.min(want.len()) {
            let (kind, content) = want[kept];
            let (old_kind, old_stamp) = given[kept];
            if !old_kind.same_row(kind) {
                break;
            }
            let new_stamp = stamp(kept, content);
            if (old_kind, old_stamp) != (kind, new_stamp) {
                given[kept] = (kind, new_stamp);
                changed.push(kept);
            }
            kept += 1;
        }
        let added: Vec<(RowKind, Stamp)> = want[kept..]
            .iter()
            .enumerate()
            .map(|(j, &(kind, content))| (kind, stamp(kept + j, content)))
            .collect();
        given.truncate(kept);
        given.extend(added.iter().copied());
        // Rows tell their views, and the store its list: not while borrowed.
        drop(given);
        for i in changed {
            if let Some(row) = rows.item(i as u32).and_downcast::<RowObject>() {
                let (kind, st) = imp.given.borrow()[i];
                row.update(kind, st);
            }
        }
        if kept < n_old || !added.is_empty() {
            let objects: Vec<RowObject> = added
                .iter()
                .map(|&(kind, st)| RowObject::new(self, kind, st))
                .collect();
            rows.splice(kept as u32, (n_old - kept) as u32, &objects);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(m: &MessageObject) -> Vec<(RowKind, u64)> {
        let store = m.rows();
        (0..store.n_items())
            .filter_map(|i| store.item(i).and_downcast::<RowObject>())
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
        m.changed();
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
        m.changed();
        let r = rows(&m);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].1, fixed_rev, "a fixed row is not drawn again");
        assert!(r[1].1 > tail_rev, "the tail is drawn again");
        // A long paragraph is cut into rows of about MAX_SEGMENT.
        let line = "x".repeat(99) + "\n";
        m.apply_delta(0, PartKind::Text, Some(&format!("\n{}", line.repeat(40))), None);
        m.changed();
        assert!(rows(&m).len() >= 4, "{:?}", rows(&m));
    }

    #[test]
    fn a_replaced_text_is_cut_again_and_parts_get_rows_of_their_own() {
        let m = agent_message();
        m.apply_delta(0, PartKind::Text, Some("one\n\ntwo\n\nthree"), None);
        m.changed();
        assert_eq!(rows(&m).len(), 3);
        let mut whole = Message::new("m1".into(), "demo", Role::Agent);
        whole.parts.push(Part::Text {
            text: "other\n\ntext".into(),
        });
        whole.parts.push(Part::Thought { text: "hmm".into() });
        m.replace(whole);
        m.changed();
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
        let u = MessageObject::new(user);
        assert_eq!(
            rows(&u).into_iter().map(|r| r.0).collect::<Vec<_>>(),
            vec![RowKind::Part(0)]
        );
    }
}
