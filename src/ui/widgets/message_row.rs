//! A row of the conversation: a piece of a message (see `RowObject`):
//! Markdown text, thoughts (collapsed), tool cards with their diffs, the
//! plan; the first row of a message has its header, the last how it ended.

use std::cell::RefCell;
use std::rc::Rc;

use agent_client_protocol_schema::v1 as acp;
use gtk::glib;
use gtk::prelude::*;
use gtk::subclass::prelude::*;

use crate::core::types::message::{Message, Part, Role};
use crate::i18n::{gettext, gettext_f};
use crate::ui::markdown::visible;
use crate::ui::models::{segments, RowKind, RowObject, SubagentThreads, TerminalOutputs};
use crate::ui::widgets::message_parts::*;

mod imp {
    use super::*;

    #[derive(Default, gtk::CompositeTemplate)]
    #[template(file = "message_row.ui")]
    pub struct MessageRow {
        #[template_child]
        pub role: TemplateChild<gtk::Label>,
        #[template_child]
        pub parts: TemplateChild<gtk::Box>,
        #[template_child]
        pub footer: TemplateChild<gtk::Label>,
        #[template_child]
        pub actions: TemplateChild<gtk::Box>,
        #[template_child]
        pub rules_button: TemplateChild<gtk::Button>,
        pub bound: RefCell<Option<(RowObject, glib::SignalHandlerId)>>,
        pub agent_title: RefCell<String>,
        /// The row, revision and title last drawn: a widget bound again to
        /// the row it just showed keeps what it drew.
        pub shown: RefCell<Option<(glib::WeakRef<RowObject>, u64, String)>>,
        /// What the list the row is in does when the row changes (see
        /// `set_on_changed`).
        pub on_changed: RefCell<Option<Rc<dyn Fn()>>>,
        /// What the terminals of its tool calls printed (given by the list).
        pub terminals: RefCell<TerminalOutputs>,
        /// The conversation's helpers (given by the list).
        pub threads: RefCell<SubagentThreads>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for MessageRow {
        const NAME: &'static str = "ParleyMessageRow";
        type Type = super::MessageRow;
        type ParentType = gtk::Box;

        fn class_init(klass: &mut Self::Class) {
            klass.bind_template();
            // A row of the conversation's list (see `MessageList`).
            klass.set_accessible_role(gtk::AccessibleRole::ListItem);
        }

        fn instance_init(obj: &glib::subclass::InitializingObject<Self>) {
            obj.init_template();
        }
    }

    impl ObjectImpl for MessageRow {}
    impl WidgetImpl for MessageRow {}
    impl BoxImpl for MessageRow {}
}

glib::wrapper! {
    pub struct MessageRow(ObjectSubclass<imp::MessageRow>)
        @extends gtk::Box, gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget, gtk::Orientable;
}

impl Default for MessageRow {
    fn default() -> Self {
        Self::new()
    }
}

/// Adds or removes a style class, only when that changes anything: each
/// change restyles the widget.
fn set_class(w: &impl IsA<gtk::Widget>, class: &str, on: bool) {
    if on != w.has_css_class(class) {
        if on {
            w.add_css_class(class);
        } else {
            w.remove_css_class(class);
        }
    }
}

fn clear(b: &gtk::Box) {
    while let Some(child) = b.first_child() {
        b.remove(&child);
    }
}

impl MessageRow {
    pub fn new() -> Self {
        glib::Object::new()
    }

    pub fn bind(&self, row: &RowObject, agent_title: &str) {
        self.unbind();
        let imp = self.imp();
        imp.agent_title.replace(agent_title.to_owned());
        let handler = row.connect_revision_notify(glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |_| this.changed()
        ));
        imp.bound.replace(Some((row.clone(), handler)));
        self.refresh();
    }

    /// Has `f` called instead of the row being drawn at once when its row
    /// changes while it is in its list: the list (`MessageList`, which
    /// makes its rows and is their parent) draws it when it lays it out.
    /// The list hands this in, so that a row need not know its list.
    /// Where its tool cards' terminals read what they printed.
    pub fn set_terminals(&self, terminals: &TerminalOutputs) {
        self.imp().terminals.replace(terminals.clone());
    }

    /// Where its `subagent` parts find their helpers.
    pub fn set_threads(&self, threads: &SubagentThreads) {
        self.imp().threads.replace(threads.clone());
    }

    pub fn set_on_changed(&self, f: impl Fn() + 'static) {
        self.imp().on_changed.replace(Some(Rc::new(f)));
    }

    /// The row changed. In a list it is drawn again when the list next
    /// lays it out, not now: a streamed row changes every frame, and one
    /// that scrolls off the page before then is never drawn again
    /// (docs/benchmarks-history.md, "Round two, where the frames go").
    fn changed(&self) {
        let in_list = self.parent().and(self.imp().on_changed.borrow().clone());
        match in_list {
            Some(list_changed) => list_changed(),
            None => self.refresh(),
        }
    }

    /// Draws the row again if it changed since it was last drawn; a widget
    /// bound again to the row it just showed keeps what it drew.
    pub fn refresh(&self) {
        let imp = self.imp();
        let Some(row) = self.row() else { return };
        let unchanged = imp
            .shown
            .borrow()
            .as_ref()
            .is_some_and(|(shown, revision, title)| {
                shown.upgrade().as_ref() == Some(&row)
                    && *revision == row.revision()
                    && *title == *imp.agent_title.borrow()
            });
        if !unchanged {
            self.render(&row);
        }
    }

    pub fn unbind(&self) {
        if let Some((row, handler)) = self.imp().bound.take() {
            row.disconnect(handler);
        }
    }

    /// Shows nothing until bound again (a spare row of the list).
    pub fn clear(&self) {
        let imp = self.imp();
        imp.shown.replace(None);
        clear(&imp.parts);
        imp.role.set_label("");
        imp.footer.set_label("");
        clear(&imp.actions);
        imp.actions.set_visible(false);
        crate::ui::a11y::set_label(self, "");
    }

    /// The row it shows.
    pub fn row(&self) -> Option<RowObject> {
        self.imp().bound.borrow().as_ref().map(|(row, _)| row.clone())
    }

    /// Draws the row again, whole: a row is at most a segment of a text
    /// (see `segments`) or one part, so this stays small.
    fn render(&self, row: &RowObject) {
        let imp = self.imp();
        let weak = glib::WeakRef::new();
        weak.set(Some(row));
        imp.shown
            .replace(Some((weak, row.revision(), imp.agent_title.borrow().clone())));
        clear(&imp.parts);
        let Some(m) = row.message() else { return };
        let stamp = row.stamp();
        m.with(|msg| {
            // Only what differs: each change restyles the row, and a
            // stream rebinds hundreds of rows a frame.
            // One paragraph cut in two rows for size reads as one.
            let (top, bottom) = match row.kind() {
                RowKind::Text { part, start, end } => match msg.parts.get(part) {
                    Some(Part::Text { text }) => (
                        segments::splits_paragraph(text, start),
                        end.is_some_and(|e| segments::splits_paragraph(text, e)),
                    ),
                    _ => (false, false),
                },
                _ => (false, false),
            };
            for (class, on) in [
                ("user", msg.role == Role::User),
                ("agent", msg.role == Role::Agent),
                ("system", msg.role == Role::System),
                ("queued", msg.queued),
                ("first", stamp.first),
                ("last", stamp.last),
                ("joined-top", top),
                ("joined-bottom", bottom),
            ] {
                set_class(self, class, on);
            }
            imp.role.set_visible(stamp.first);
            imp.role.set_label(&match msg.role {
                Role::User => gettext("You"),
                Role::Agent => visible(&imp.agent_title.borrow()).into_owned(),
                Role::System => gettext("Parley"),
            });
            match row.kind() {
                RowKind::Empty => {}
                RowKind::Part(i) => {
                    if let Some(part) = msg.parts.get(i) {
                        let terminals = imp.terminals.borrow().clone();
                        let threads = imp.threads.borrow().clone();
                        let content =
                            self.content_for(row, |b| b.append(&part_widget(part, &terminals, &threads)));
                        imp.parts.append(&content);
                    }
                }
                RowKind::Attachments { first, count } => {
                    let list = attachments_of(msg, first, count);
                    let content =
                        self.content_for(row, |b| b.append(&super::attachment_view::attachments(&list)));
                    imp.parts.append(&content);
                }
                RowKind::Text { part, start, end } => {
                    if let Some(Part::Text { text }) = msg.parts.get(part) {
                        let slice = match end {
                            Some(end) => text.get(start..end),
                            None => text.get(start..),
                        }
                        .unwrap_or_default();
                        let content = self.content_for(row, |b| append_markdown(b, slice));
                        imp.parts.append(&content);
                    }
                }
            }
            imp.parts.set_visible(imp.parts.first_child().is_some());
            let footer = if stamp.last {
                footer_text(msg)
            } else {
                String::new()
            };
            imp.footer.set_visible(!footer.is_empty());
            super::message_actions::fill(&imp.actions, msg, stamp.last);
            imp.rules_button.set_visible(
                stamp.last && msg.code == Some(crate::core::types::message::MessageCode::PermissionRule),
            );
            // It may quote the agent's error.
            imp.footer.set_label(&visible(&footer));
            // The row is what a screen reader lands on: it is named by who
            // speaks and what the row holds.
            let who = imp.role.label();
            let what = row_summary(msg, row.kind(), &footer);
            crate::ui::a11y::set_label(self, &format!("{who}: {what}"));
        });
    }
}

/// The most rows whose drawn widgets are kept for when the list binds them
/// again; bounded, so memory does not grow with the conversation.
const KEPT_CONTENTS: usize = 256;

/// Widgets drawn for rows, by row, with the row's revision and when each
/// was last used. The conversation's list lets a row's widget go when it
/// leaves the page and binds another when it comes back (scrolling back
/// and forth, paging through search hits); drawing a tool card or a
/// paragraph again each time would cost most of a frame (docs/benchmarks-history.md).
#[derive(Default)]
struct Contents {
    map: std::collections::HashMap<RowObject, (u64, gtk::Box, u64)>,
    clock: u64,
}

thread_local! {
    static CONTENTS: RefCell<Contents> = RefCell::default();
}

/// The widgets kept for `row` at its current revision.
fn cached(row: &RowObject) -> Option<gtk::Box> {
    CONTENTS.with_borrow(|c| {
        c.map
            .get(row)
            .filter(|(revision, _, _)| *revision == row.revision())
            .map(|(_, content, _)| content.clone())
    })
}

impl MessageRow {
    /// The content of `row`: kept widgets when there are some that no
    /// other row widget shows, or new ones made by `fill`.
    fn content_for(&self, row: &RowObject, fill: impl FnOnce(&gtk::Box)) -> gtk::Box {
        if let Some(content) = cached(row) {
            let holder = content.parent().and_downcast::<gtk::Box>();
            let owner = holder
                .as_ref()
                .and_then(|h| h.parent())
                .and_downcast::<MessageRow>();
            let shown_elsewhere = owner
                .as_ref()
                .is_some_and(|o| o != self && o.row().as_ref() == Some(row));
            if !shown_elsewhere {
                if let (Some(holder), Some(owner)) = (holder, owner) {
                    holder.remove(&content);
                    // It draws again whatever it is bound to next.
                    owner.imp().shown.replace(None);
                }
                CONTENTS.with_borrow_mut(|c| {
                    c.clock += 1;
                    let now = c.clock;
                    if let Some(entry) = c.map.get_mut(row) {
                        entry.2 = now;
                    }
                });
                return content;
            }
        }
        let content = gtk::Box::new(gtk::Orientation::Vertical, 8);
        fill(&content);
        CONTENTS.with_borrow_mut(|c| {
            c.clock += 1;
            let now = c.clock;
            c.map.insert(row.clone(), (row.revision(), content.clone(), now));
            if c.map.len() > KEPT_CONTENTS {
                if let Some(oldest) = c.map.iter().min_by_key(|(_, e)| e.2).map(|(r, _)| r.clone()) {
                    c.map.remove(&oldest);
                }
            }
        });
        content
    }
}

/// What one row of a message holds, in a few words: its text (its first
/// 160 characters, on one line), or the kind of part with its title.
fn row_summary(msg: &Message, kind: RowKind, footer: &str) -> String {
    let short = |text: &str| {
        let one_line: String = visible(text).split_whitespace().collect::<Vec<_>>().join(" ");
        match one_line.char_indices().nth(160) {
            Some((i, _)) => format!("{}…", &one_line[..i]),
            None => one_line,
        }
    };
    // An agent's text is Markdown: a screen reader hears it as shown
    // ("What I did", not "## What I did"), from its first kilobyte.
    let said = |text: &str| {
        if msg.role == crate::core::types::message::Role::User {
            return short(text);
        }
        let mut end = text.len().min(1024);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        short(&crate::ui::markdown::plain_text(&text[..end]))
    };
    match kind {
        RowKind::Text { part, start, end } => match msg.parts.get(part) {
            Some(Part::Text { text }) => {
                let slice = match end {
                    Some(end) => text.get(start..end),
                    None => text.get(start..),
                };
                said(slice.unwrap_or_default())
            }
            _ => String::new(),
        },
        RowKind::Part(i) => match msg.parts.get(i) {
            Some(Part::Text { text }) => said(text),
            Some(Part::Thought { .. }) => gettext("Thinking"),
            Some(Part::Tool(t)) => gettext_f(
                "tool {title}, {status}",
                &[
                    ("title", &short(&t.title)),
                    ("status", &super::message_parts::tool_status(t.status).0),
                ],
            ),
            Some(Part::Plan { .. }) => gettext("Plan"),
            Some(Part::Attachment(a)) => super::attachment_view::summary(a),
            Some(Part::Notice(n)) => super::notice_parts::part_name(n),
            Some(Part::Compaction(_)) => gettext("The agent compacted the conversation"),
            Some(Part::Subagent { .. }) => gettext("Subagent"),
            Some(Part::SessionNote(n)) => said(&n.text),
            None => String::new(),
        },
        RowKind::Attachments { first, count } => attachments_of(msg, first, count)
            .into_iter()
            .map(super::attachment_view::summary)
            .collect::<Vec<_>>()
            .join(", "),
        RowKind::Empty => short(footer),
    }
}

/// The attachments of a row of kind `Attachments { first, count }`.
fn attachments_of(
    msg: &Message,
    first: usize,
    count: usize,
) -> Vec<&crate::core::types::message::Attachment> {
    msg.parts
        .iter()
        .skip(first)
        .take(count)
        .filter_map(|p| match p {
            Part::Attachment(a) => Some(a),
            _ => None,
        })
        .collect()
}

fn footer_text(m: &Message) -> String {
    if m.queued {
        return gettext("Queued: sent when the current answer ends");
    }
    use crate::core::types::message::MessageCode;
    match m.code {
        Some(MessageCode::AgentRestarted) => return gettext(
            "The agent was restarted in a new session: it has forgotten the beginning of this conversation.",
        ),
        // The message says what happened (a rule's answer, a turn ended here).
        Some(MessageCode::PermissionRule | MessageCode::TurnAbandoned) => {
            return m.error.clone().unwrap_or_default();
        }
        Some(MessageCode::AgentUnavailable) => {
            return gettext_f(
                "The agent could not be reached: {error}",
                &[("error", m.error.as_deref().unwrap_or_default())],
            )
        }
        _ => {}
    }
    if let Some(e) = &m.error {
        return if m.dropped() {
            gettext("Cancelled before it was sent")
        } else {
            gettext_f("Ended with an error: {error}", &[("error", e)])
        };
    }
    if !m.done {
        return gettext("Answering…");
    }
    use acp::StopReason as R;
    match m.stop_reason {
        Some(R::Cancelled) => gettext("Stopped"),
        Some(R::MaxTokens) => gettext("Stopped: the answer reached the token limit"),
        Some(R::MaxTurnRequests) => gettext("Stopped: too many requests in one turn"),
        Some(R::Refusal) => gettext("The agent refused to answer"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::types::message::Role;

    /// A screen reader hears an agent's Markdown as it is shown, and a
    /// user's text as typed.
    #[test]
    fn a_row_is_said_as_shown_not_as_markdown() {
        let mut m = Message::new("m1".into(), "a", Role::Agent);
        m.parts.push(Part::Text {
            text: "## What I did\n\n1. **Read** `src/main.rs`\n".into(),
        });
        let said = row_summary(&m, RowKind::Part(0), "");
        assert_eq!(said, "What I did 1. Read src/main.rs");
        let mut u = Message::new("u1".into(), "a", Role::User);
        u.parts.push(Part::Text {
            text: "**as typed**".into(),
        });
        assert_eq!(row_summary(&u, RowKind::Part(0), ""), "**as typed**");
    }
}
