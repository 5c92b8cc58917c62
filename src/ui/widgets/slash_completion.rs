//! Slash-command completion for the composer: typing `/` lists the agent's
//! commands (from `available_commands_update`); Up/Down choose, Tab or Enter
//! complete, Escape closes, and a click completes too (`completion_list`).

use std::rc::Rc;

use gtk::glib;
use gtk::prelude::*;

use super::completion_list::{Completer, Completion};
use crate::core::types::message::Command;

pub type SlashCompletion = Completion<Commands>;

/// What `/` completes: the selected agent's commands.
pub struct Commands {
    /// Gives the selected agent's commands when asked.
    commands: Box<dyn Fn() -> Vec<Command>>,
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
        let commands = Commands {
            commands: Box::new(commands),
        };
        Completion::new(text, anchor, &crate::i18n::gettext("Commands"), commands)
    }

    /// Names shown now (tests).
    pub fn shown(&self) -> Vec<String> {
        self.shown_items().into_iter().map(|c| c.name).collect()
    }
}

impl Completer for Commands {
    type Item = Command;

    fn changed(completion: &Rc<Completion<Self>>, buffer: &gtk::TextBuffer) {
        let typed = buffer
            .text(&buffer.start_iter(), &buffer.end_iter(), false)
            .to_string();
        let commands = (completion.completer().commands)();
        let Some(prefix) = typed
            .strip_prefix('/')
            .filter(|p| !p.contains(char::is_whitespace))
        else {
            completion.close();
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
        completion.show(matching);
    }

    fn row(&self, c: &Command) -> gtk::Label {
        let label = gtk::Label::new(None);
        label.set_markup(&format!(
            "<b>/{}</b>  <span alpha=\"60%\">{}</span>",
            glib::markup_escape_text(&c.name),
            glib::markup_escape_text(&c.description)
        ));
        label
    }

    fn take(&self, text: &gtk::TextView, c: &Command) {
        text.buffer().set_text(&format!("/{} ", c.name));
    }
}
