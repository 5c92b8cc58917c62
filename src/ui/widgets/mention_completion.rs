//! `@`-mentions in the composer: typing `@` and part of a name lists the
//! files under the agent's working directory that match (fuzzily,
//! `.gitignore` respected; the search runs off the main thread). Up/Down
//! choose, Tab or Enter take one, Escape closes (`completion_list`). A
//! chosen file stays in the text as `@path` and goes to the agent as a
//! `resource_link`.

use std::cell::Cell;
use std::rc::Rc;

use gtk::prelude::*;

use super::completion_list::{Completer, Completion};

pub type MentionCompletion = Completion<Mentions>;

/// Finds the files that match a query, and hands them to `done`.
type Search = dyn Fn(&str, Box<dyn FnOnce(Vec<String>)>);

/// What `@` completes: files, found by a search.
pub struct Mentions {
    search: Box<Search>,
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
        let mentions = Mentions {
            search: Box::new(search),
            asked: Cell::new(0),
            writing: Cell::new(false),
            chosen: Box::new(chosen),
        };
        Completion::new(text, anchor, &crate::i18n::gettext("Files"), mentions)
    }

    /// Paths shown now (tests).
    pub fn shown(&self) -> Vec<String> {
        self.shown_items()
    }
}

impl Completer for Mentions {
    type Item = String;

    fn changed(completion: &Rc<Completion<Self>>, buffer: &gtk::TextBuffer) {
        let this = completion.completer();
        if this.writing.get() {
            return;
        }
        let Some((_, query)) = token_at_cursor(buffer) else {
            completion.close();
            return;
        };
        let n = this.asked.get() + 1;
        this.asked.set(n);
        let weak = Rc::downgrade(completion);
        (this.search)(
            &query,
            Box::new(move |paths| {
                if let Some(completion) = weak.upgrade().filter(|c| c.completer().asked.get() == n) {
                    completion.show(paths);
                }
            }),
        );
    }

    fn row(&self, path: &String) -> gtk::Label {
        let label = gtk::Label::new(Some(path));
        label.set_ellipsize(gtk::pango::EllipsizeMode::Start);
        label.set_max_width_chars(60);
        label
    }

    /// Replaces `@query` by `@path ` and hands the path on.
    fn take(&self, text: &gtk::TextView, path: &String) {
        let buffer = text.buffer();
        if let Some((offset, _)) = token_at_cursor(&buffer) {
            let mut start = buffer.iter_at_offset(offset);
            let mut end = buffer.iter_at_mark(&buffer.get_insert());
            self.writing.set(true);
            buffer.delete(&mut start, &mut end);
            buffer.insert(&mut start, &format!("@{path} "));
            self.writing.set(false);
        }
        (self.chosen)(path);
    }
}
