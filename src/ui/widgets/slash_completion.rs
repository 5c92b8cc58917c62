//! Slash-command completion for the composer: typing `/` lists the agent's
//! commands (from `available_commands_update`); Up/Down choose, Tab or Enter
//! complete, Escape closes, and a click completes too.

use std::cell::RefCell;
use std::rc::Rc;

use gtk::prelude::*;
use gtk::{gdk, glib};

use super::completion_list::{CompletionList, KeyUse};
use crate::core::types::message::Command;

pub struct SlashCompletion {
    ui: CompletionList,
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
        let this = Rc::new(SlashCompletion {
            ui: CompletionList::new(anchor, &crate::i18n::gettext("Commands")),
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
        this.ui.list.connect_row_activated(move |_, row| {
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
            self.ui.close();
            return;
        };
        let mut matching: Vec<Command> = commands
            .iter()
            .filter(|c| c.name.starts_with(prefix))
            .cloned()
            .collect();
        // Nothing to offer once the one match is written out.
        if matching.len() == 1 && matching[0].name == prefix {
            matching.clear();
        }
        let rows = matching
            .iter()
            .map(|c| {
                let label = gtk::Label::new(None);
                label.set_markup(&format!(
                    "<b>/{}</b>  <span alpha=\"60%\">{}</span>",
                    glib::markup_escape_text(&c.name),
                    glib::markup_escape_text(&c.description)
                ));
                label
            })
            .collect();
        self.shown.replace(matching);
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

    fn complete(&self, index: i32) {
        let Some(c) = usize::try_from(index)
            .ok()
            .and_then(|i| self.shown.borrow().get(i).cloned())
        else {
            return;
        };
        self.ui.close();
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
