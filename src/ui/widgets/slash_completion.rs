//! Slash-command completion for the composer: typing `/` lists the agent's
//! commands (from `available_commands_update`); Up/Down choose, Tab or Enter
//! complete, Escape closes, and a click completes too.

use std::cell::RefCell;
use std::rc::Rc;

use gtk::prelude::*;
use gtk::{gdk, glib};

use crate::core::chat::message::Command;

/// What a key does to an open completion list.
pub enum ListKey {
    /// Up or Down moved the selection.
    Moved,
    /// Tab or Enter takes the selected row.
    Take(i32),
    /// Escape closes the list.
    Close,
    /// Not the list's: the text view gets it.
    Other,
}

/// Up/Down (wrapping), Tab/Enter and Escape on a list of `n` rows (the
/// `/` and `@` completions share them).
pub fn list_key(list: &gtk::ListBox, n: i32, key: gdk::Key) -> ListKey {
    let current = list.selected_row().map(|r| r.index()).unwrap_or(0);
    let n = n.max(1);
    match key {
        gdk::Key::Up => list.select_row(list.row_at_index((current - 1).rem_euclid(n)).as_ref()),
        gdk::Key::Down => list.select_row(list.row_at_index((current + 1) % n).as_ref()),
        gdk::Key::Tab | gdk::Key::Return | gdk::Key::KP_Enter => return ListKey::Take(current),
        gdk::Key::Escape => return ListKey::Close,
        _ => return ListKey::Other,
    }
    ListKey::Moved
}

pub struct SlashCompletion {
    popover: gtk::Popover,
    list: gtk::ListBox,
    text: gtk::TextView,
    shown: RefCell<Vec<Command>>,
}

impl SlashCompletion {
    /// `commands` gives the selected agent's commands when asked.
    /// The popover hangs from `anchor` (not the text view, which accepts no
    /// children but its own).
    pub fn attach(
        text: &gtk::TextView,
        anchor: &impl IsA<gtk::Widget>,
        commands: impl Fn() -> Vec<Command> + 'static,
    ) -> Rc<Self> {
        let list = gtk::ListBox::new();
        list.set_selection_mode(gtk::SelectionMode::Browse);
        list.add_css_class("navigation-sidebar");
        crate::ui::a11y::set_label(&list, &crate::i18n::gettext("Commands"));
        let popover = gtk::Popover::builder()
            .child(&list)
            .autohide(false)
            .has_arrow(false)
            .position(gtk::PositionType::Top)
            .halign(gtk::Align::Start)
            .build();
        popover.set_parent(anchor);
        let this = Rc::new(SlashCompletion {
            popover,
            list,
            text: text.clone(),
            shown: RefCell::new(Vec::new()),
        });

        let weak = Rc::downgrade(&this);
        text.buffer().connect_changed(move |buffer| {
            let Some(this) = weak.upgrade() else { return };
            let typed = buffer
                .text(&buffer.start_iter(), &buffer.end_iter(), false)
                .to_string();
            this.update(&typed, &commands());
        });
        let weak = Rc::downgrade(&this);
        this.list.connect_row_activated(move |_, row| {
            if let Some(this) = weak.upgrade() {
                this.complete(row.index());
            }
        });
        this
    }

    fn update(&self, typed: &str, commands: &[Command]) {
        let Some(prefix) = typed
            .strip_prefix('/')
            .filter(|p| !p.contains(char::is_whitespace))
        else {
            self.popover.popdown();
            return;
        };
        let matching: Vec<Command> = commands
            .iter()
            .filter(|c| c.name.starts_with(prefix))
            .cloned()
            .collect();
        while let Some(row) = self.list.first_child() {
            self.list.remove(&row);
        }
        if matching.is_empty() || (matching.len() == 1 && matching[0].name == prefix) {
            self.popover.popdown();
            return;
        }
        for c in &matching {
            let label = gtk::Label::new(None);
            label.set_markup(&format!(
                "<b>/{}</b>  <span alpha=\"60%\">{}</span>",
                glib::markup_escape_text(&c.name),
                glib::markup_escape_text(&c.description)
            ));
            label.set_xalign(0.0);
            self.list.append(&label);
        }
        self.list.select_row(self.list.row_at_index(0).as_ref());
        self.shown.replace(matching);
        self.popover.popup();
    }

    pub fn is_open(&self) -> bool {
        self.popover.is_visible()
    }

    /// Keys while open; `true` when the key was used.
    pub fn key(&self, key: gdk::Key) -> bool {
        if !self.is_open() {
            return false;
        }
        match list_key(&self.list, self.shown.borrow().len() as i32, key) {
            ListKey::Moved => {}
            ListKey::Take(i) => self.complete(i),
            ListKey::Close => self.popover.popdown(),
            ListKey::Other => return false,
        }
        true
    }

    fn complete(&self, index: i32) {
        let Some(c) = usize::try_from(index)
            .ok()
            .and_then(|i| self.shown.borrow().get(i).cloned())
        else {
            return;
        };
        self.popover.popdown();
        self.text.buffer().set_text(&format!("/{} ", c.name));
        self.text.grab_focus();
    }

    /// Names shown now (tests).
    pub fn shown(&self) -> Vec<String> {
        if self.is_open() {
            self.shown.borrow().iter().map(|c| c.name.clone()).collect()
        } else {
            Vec::new()
        }
    }
}
