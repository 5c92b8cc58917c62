//! `@`-mentions in the composer: typing `@` and part of a name lists the
//! files under the agent's working directory that match (fuzzily,
//! `.gitignore` respected; the search runs off the main thread). Up/Down
//! choose, Tab or Enter take one, Escape closes. A chosen file stays in the
//! text as `@path` and goes to the agent as a `resource_link`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use gtk::gdk;

use super::completion_list::{CompletionList, KeyUse};
use gtk::prelude::*;

pub struct MentionCompletion {
    ui: CompletionList,
    text: gtk::TextView,
    shown: RefCell<Vec<String>>,
    /// Answers to older queries are dropped.
    asked: Cell<u64>,
    /// Set while the completion writes into the buffer itself.
    writing: Cell<bool>,
    chosen: Box<dyn Fn(&str)>,
}

/// The `@query` that ends at the cursor: its start offset and the query.
fn token_at_cursor(buffer: &gtk::TextBuffer) -> Option<(i32, String)> {
    let cursor = buffer.iter_at_mark(&buffer.get_insert());
    let line_start = buffer.iter_at_line(cursor.line())?;
    let before = buffer.text(&line_start, &cursor, false).to_string();
    let at = before.rfind('@')?;
    let query = &before[at + 1..];
    let starts_word = before[..at].chars().next_back().is_none_or(char::is_whitespace);
    if !starts_word || query.contains(char::is_whitespace) {
        return None;
    }
    let offset = line_start.offset() + before[..at].chars().count() as i32;
    Some((offset, query.to_owned()))
}

impl MentionCompletion {
    /// `search(query, done)` finds the files; `chosen(path)` takes one.
    pub fn attach(
        text: &gtk::TextView,
        anchor: &impl IsA<gtk::Widget>,
        search: impl Fn(&str, Box<dyn FnOnce(Vec<String>)>) + 'static,
        chosen: impl Fn(&str) + 'static,
    ) -> Rc<Self> {
        let this = Rc::new(MentionCompletion {
            ui: CompletionList::new(anchor, &crate::i18n::gettext("Files")),
            text: text.clone(),
            shown: RefCell::new(Vec::new()),
            asked: Cell::new(0),
            writing: Cell::new(false),
            chosen: Box::new(chosen),
        });

        let weak = Rc::downgrade(&this);
        text.buffer().connect_changed(move |buffer| {
            let Some(this) = weak.upgrade() else { return };
            if this.writing.get() {
                return;
            }
            let Some((_, query)) = token_at_cursor(buffer) else {
                this.ui.close();
                return;
            };
            let n = this.asked.get() + 1;
            this.asked.set(n);
            let weak = Rc::downgrade(&this);
            search(
                &query,
                Box::new(move |paths| {
                    if let Some(this) = weak.upgrade().filter(|t| t.asked.get() == n) {
                        this.show(paths);
                    }
                }),
            );
        });
        let weak = Rc::downgrade(&this);
        this.ui.list.connect_row_activated(move |_, row| {
            if let Some(this) = weak.upgrade() {
                this.complete(row.index());
            }
        });
        this
    }

    fn show(&self, paths: Vec<String>) {
        let rows = paths
            .iter()
            .map(|p| {
                let label = gtk::Label::new(Some(p));
                label.set_ellipsize(gtk::pango::EllipsizeMode::Start);
                label.set_max_width_chars(60);
                label
            })
            .collect();
        self.shown.replace(paths);
        self.ui.show(rows);
    }

    pub fn is_open(&self) -> bool {
        self.ui.is_open()
    }

    /// Keys while open; `true` when the key was used.
    pub fn key(&self, key: gdk::Key) -> bool {
        match self.ui.key(key) {
            KeyUse::Take(i) => self.complete(i),
            KeyUse::Used => {}
            KeyUse::NotMine => return false,
        }
        true
    }

    /// Replaces `@query` by `@path ` and hands the path on.
    fn complete(&self, index: i32) {
        let Some(path) = usize::try_from(index)
            .ok()
            .and_then(|i| self.shown.borrow().get(i).cloned())
        else {
            return;
        };
        self.ui.close();
        let buffer = self.text.buffer();
        if let Some((offset, _)) = token_at_cursor(&buffer) {
            let mut start = buffer.iter_at_offset(offset);
            let mut end = buffer.iter_at_mark(&buffer.get_insert());
            self.writing.set(true);
            buffer.delete(&mut start, &mut end);
            buffer.insert(&mut start, &format!("@{path} "));
            self.writing.set(false);
        }
        (self.chosen)(&path);
        self.text.grab_focus();
    }

    /// Paths shown now (tests).
    pub fn shown(&self) -> Vec<String> {
        if self.is_open() {
            self.shown.borrow().clone()
        } else {
            Vec::new()
        }
    }
}
