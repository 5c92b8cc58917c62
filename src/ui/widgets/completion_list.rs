//! The popover list of the composer's completions (`/` commands, `@`
//! files): built once above the message field, filled with a row per
//! match, the first selected. While it is open, Up and Down move (and
//! wrap), Tab and Enter take the selected row, Escape closes it.

use std::cell::Cell;

use gtk::gdk;
use gtk::prelude::*;

pub struct CompletionList {
    pub popover: gtk::Popover,
    pub list: gtk::ListBox,
    rows: Cell<i32>,
}

/// What a key did to the list.
pub enum KeyUse {
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
    pub fn new(anchor: &impl IsA<gtk::Widget>, name: &str) -> Self {
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
        }
    }

    /// Shows these rows, the first selected; none closes the list.
    pub fn show(&self, rows: Vec<gtk::Label>) {
        while let Some(row) = self.list.first_child() {
            self.list.remove(&row);
        }
        self.rows.set(rows.len() as i32);
        if rows.is_empty() {
            self.popover.popdown();
            return;
        }
        for label in rows {
            label.set_xalign(0.0);
            self.list.append(&label);
        }
        self.list.select_row(self.list.row_at_index(0).as_ref());
        self.popover.popup();
    }

    pub fn close(&self) {
        self.popover.popdown();
    }

    pub fn is_open(&self) -> bool {
        self.popover.is_visible()
    }

    pub fn key(&self, key: gdk::Key) -> KeyUse {
        if !self.is_open() {
            return KeyUse::NotMine;
        }
        let current = self.list.selected_row().map(|r| r.index()).unwrap_or(0);
        let n = self.rows.get().max(1);
        match key {
            gdk::Key::Up => self
                .list
                .select_row(self.list.row_at_index((current - 1).rem_euclid(n)).as_ref()),
            gdk::Key::Down => self
                .list
                .select_row(self.list.row_at_index((current + 1) % n).as_ref()),
            gdk::Key::Tab | gdk::Key::Return | gdk::Key::KP_Enter => return KeyUse::Take(current),
            gdk::Key::Escape => self.popover.popdown(),
            _ => return KeyUse::NotMine,
        }
        KeyUse::Used
    }
}
