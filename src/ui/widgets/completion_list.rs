//! The popover list of the composer's completions (`/` commands, `@`
//! files): built once above the message field, filled with a row per
//! match, the first selected. While it is open, Up and Down move (and
//! wrap), Tab and Enter take the selected row, Escape closes it. The
//! focus stays in the message field, so a screen reader hears the list
//! through announcements: "N matches: FIRST" when it opens or its matches
//! change, and the row Up or Down moves to.
//!
//! A `Completion` is such a list with the items it shows and what taking
//! one does; what it completes is its `Completer` (the agent's commands in
//! `slash_completion`, files in `mention_completion`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use gtk::gdk;
use gtk::prelude::*;

struct CompletionList {
    popover: gtk::Popover,
    list: gtk::ListBox,
    rows: Cell<i32>,
    /// What was last announced of the matches, so typing a letter that
    /// keeps them as they are says nothing new.
    said: RefCell<String>,
}

/// What a key did to the list.
enum KeyUse {
    /// Tab or Enter: take this row.
    Take(i32),
    /// Up, Down or Escape.
    Used,
    /// Not the list's (or the list is closed): the text view gets it.
    NotMine,
}

impl CompletionList {
    /// The popover hangs from `anchor` (not the text view, which accepts no
    /// children but its own); `name` is what a screen reader calls the list.
    fn new(anchor: &impl IsA<gtk::Widget>, name: &str) -> Self {
        let list = gtk::ListBox::new();
        list.set_selection_mode(gtk::SelectionMode::Browse);
        list.add_css_class("navigation-sidebar");
        crate::ui::a11y::set_label(&list, name);
        let popover = gtk::Popover::builder()
            .child(&list)
            .autohide(false)
            .has_arrow(false)
            .position(gtk::PositionType::Top)
            .halign(gtk::Align::Start)
            .build();
        popover.set_parent(anchor);
        CompletionList {
            popover,
            list,
            rows: Cell::new(0),
            said: RefCell::new(String::new()),
        }
    }

    /// Shows these rows, the first selected; none closes the list.
    fn show(&self, rows: Vec<gtk::Label>) {
        while let Some(row) = self.list.first_child() {
            self.list.remove(&row);
        }
        self.rows.set(i32::try_from(rows.len()).unwrap_or(i32::MAX));
        if rows.is_empty() {
            self.close();
            return;
        }
        let n = rows.len();
        let first = rows.first().map(|l| l.text().to_string()).unwrap_or_default();
        for label in rows {
            label.set_xalign(0.0);
            self.list.append(&label);
            if let Some(row) = label.parent() {
                crate::ui::a11y::set_label(&row, &label.text());
            }
        }
        self.list.select_row(self.list.row_at_index(0).as_ref());
        self.popover.popup();
        let count = crate::i18n::fill(
            &crate::i18n::ngettext("{n} match", "{n} matches", u32::try_from(n).unwrap_or(u32::MAX)),
            &[("n", &n.to_string())],
        );
        let text = format!("{count}: {first}");
        if *self.said.borrow() != text {
            self.said.replace(text.clone());
            crate::ui::a11y::announce(&self.popover, &text, crate::ui::a11y::Priority::Medium);
        }
    }

    fn close(&self) {
        self.said.replace(String::new());
        self.popover.popdown();
    }

    /// Announces the row the selection moved to.
    fn say_selected(&self) {
        let text = self
            .list
            .selected_row()
            .and_then(|r| r.child())
            .and_then(|c| c.downcast::<gtk::Label>().ok())
            .map(|l| l.text().to_string());
        if let Some(text) = text {
            crate::ui::a11y::announce(&self.popover, &text, crate::ui::a11y::Priority::Medium);
        }
    }

    fn is_open(&self) -> bool {
        self.popover.is_visible()
    }

    fn key(&self, key: gdk::Key) -> KeyUse {
        if !self.is_open() {
            return KeyUse::NotMine;
        }
        let current = self.list.selected_row().map(|r| r.index()).unwrap_or(0);
        let n = self.rows.get().max(1);
        match key {
            gdk::Key::Up => {
                self.list
                    .select_row(self.list.row_at_index((current - 1).rem_euclid(n)).as_ref());
                self.say_selected();
            }
            gdk::Key::Down => {
                self.list
                    .select_row(self.list.row_at_index((current + 1) % n).as_ref());
                self.say_selected();
            }
            gdk::Key::Tab | gdk::Key::Return | gdk::Key::KP_Enter => return KeyUse::Take(current),
            gdk::Key::Escape => self.close(),
            _ => return KeyUse::NotMine,
        }
        KeyUse::Used
    }
}

/// What a completion completes: when to show which items, how a row shows
/// one, and what taking one writes.
pub trait Completer: Sized + 'static {
    type Item: Clone;

    /// The message field's text changed (`buffer`): shows the items it
    /// asks for (`Completion::show`), now or when they are found, or
    /// closes the list.
    fn changed(completion: &Rc<Completion<Self>>, buffer: &gtk::TextBuffer);

    /// A row showing `item`.
    fn row(&self, item: &Self::Item) -> gtk::Label;

    /// Writes `item` into `text`, the list closed; the focus comes back to
    /// `text` after.
    fn take(&self, text: &gtk::TextView, item: &Self::Item);
}

/// A completion of the composer's message field: its list, the items the
/// list shows, and its `Completer`.
pub struct Completion<C: Completer> {
    ui: CompletionList,
    text: gtk::TextView,
    shown: RefCell<Vec<C::Item>>,
    completer: C,
}

impl<C: Completer> Completion<C> {
    /// Follows the text of `text`. The popover hangs from `anchor` (not the
    /// text view, which accepts no children but its own); `name` is what a
    /// screen reader calls the list. A click on a row takes it.
    pub fn new(text: &gtk::TextView, anchor: &impl IsA<gtk::Widget>, name: &str, completer: C) -> Rc<Self> {
        let this = Rc::new(Completion {
            ui: CompletionList::new(anchor, name),
            text: text.clone(),
            shown: RefCell::new(Vec::new()),
            completer,
        });

        let weak = Rc::downgrade(&this);
        text.buffer().connect_changed(move |buffer| {
            if let Some(this) = weak.upgrade() {
                C::changed(&this, buffer);
            }
        });
        let weak = Rc::downgrade(&this);
        this.ui.list.connect_row_activated(move |_, row| {
            if let Some(this) = weak.upgrade() {
                this.take(row.index());
            }
        });
        this
    }

    pub fn completer(&self) -> &C {
        &self.completer
    }

    /// Shows `items`, the first selected; none closes the list.
    pub fn show(&self, items: Vec<C::Item>) {
        let rows = items.iter().map(|item| self.completer.row(item)).collect();
        self.shown.replace(items);
        self.ui.show(rows);
    }

    pub fn close(&self) {
        self.ui.close();
    }

    pub fn is_open(&self) -> bool {
        self.ui.is_open()
    }

    /// Keys while open; `true` when the key was used.
    pub fn key(&self, key: gdk::Key) -> bool {
        match self.ui.key(key) {
            KeyUse::Take(i) => self.take(i),
            KeyUse::Used => {}
            KeyUse::NotMine => return false,
        }
        true
    }

    /// Takes the item of row `index`.
    fn take(&self, index: i32) {
        let Some(item) = usize::try_from(index)
            .ok()
            .and_then(|i| self.shown.borrow().get(i).cloned())
        else {
            return;
        };
        self.ui.close();
        self.completer.take(&self.text, &item);
        self.text.grab_focus();
    }

    /// The items shown now (tests).
    pub fn shown_items(&self) -> Vec<C::Item> {
        if self.is_open() {
            self.shown.borrow().clone()
        } else {
            Vec::new()
        }
    }
}
