//! A sign-in command's terminal on the sign-in page: what runs (the
//! `Login`), and its view: the command line, the terminal, and Cancel.

use gtk::prelude::*;

use crate::i18n::gettext;
use crate::ui::widgets::terminal::Terminal;

/// A sign-in command running on the page.
pub struct Login {
    /// The agent it signs in to: the page shows it only for that agent.
    pub agent: String,
    pub terminal: Terminal,
    pub command_line: String,
    pub cancel: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Login {
    /// Asks the command to end (once).
    pub fn cancel(&mut self) {
        if let Some(tx) = self.cancel.take() {
            let _ = tx.send(());
        }
    }
}

/// The command line, the terminal and a Cancel button that calls
/// `on_cancel`; answers the view and the button.
pub fn terminal_box(
    terminal: &Terminal,
    command_line: &str,
    on_cancel: impl Fn() + 'static,
) -> (gtk::Widget, gtk::Button) {
    let column = gtk::Box::new(gtk::Orientation::Vertical, 6);
    let command = gtk::Label::new(Some(command_line));
    command.add_css_class("monospace");
    command.add_css_class("dim-label");
    command.set_wrap(true);
    command.set_wrap_mode(gtk::pango::WrapMode::Char);
    command.set_xalign(0.0);
    command.set_selectable(true);
    column.append(&command);
    let widget = terminal.widget();
    if let Some(parent) = widget.parent() {
        if let Ok(frame) = parent.downcast::<gtk::Frame>() {
            frame.set_child(None::<&gtk::Widget>);
        }
    }
    // At least a dozen rows, and what the page has to spare: at 1100×720
    // the terminal and its Cancel fit above the composer.
    widget.set_size_request(-1, 200);
    widget.set_vexpand(true);
    widget.set_hexpand(true);
    crate::ui::a11y::set_label(widget, &gettext("Sign-in terminal"));
    let frame = gtk::Frame::new(None);
    frame.set_vexpand(true);
    frame.set_child(Some(widget));
    column.append(&frame);
    let cancel = crate::ui::a11y::mnemonic_button(&gettext("_Cancel"));
    cancel.set_halign(gtk::Align::End);
    cancel.connect_clicked(move |_| on_cancel());
    column.append(&cancel);
    (column.upcast(), cancel)
}
