//! A read-only view of an ACP terminal in a tool card: what it printed so
//! far, then live (from the window's [`TerminalOutputs`]), how it ended,
//! Copy the Output and Show at Full Height.

use std::rc::Rc;

use gtk::glib;
use gtk::prelude::*;

use crate::i18n::gettext;
use crate::ui::models::{TerminalOutputs, TerminalView};
use crate::ui::widgets::terminal::Terminal;

/// How many rows a finished terminal shows before it scrolls (the
/// "Show at Full Height" button shows more).
const SHORT_ROWS: usize = 12;

/// What the model feeds: the view's terminal and its status line, weakly
/// (the widgets own the view, not the other way round).
struct Fed {
    terminal: glib::WeakRef<gtk::Widget>,
    status: glib::WeakRef<gtk::Label>,
}

impl TerminalView for Fed {
    fn feed(&self, piece: &str) {
        if let Some(widget) = self.terminal.upgrade() {
            Terminal::from_widget(widget).feed(piece);
        }
    }

    fn exited(&self, text: &str, lines: usize) {
        if let Some(label) = self.status.upgrade() {
            label.set_label(text);
        }
        if let Some(widget) = self.terminal.upgrade() {
            Terminal::from_widget(widget).fit_lines(lines, SHORT_ROWS);
        }
    }
}

/// A read-only view of terminal `id`: what it printed so far, then live.
pub fn view(outputs: &TerminalOutputs, id: &str) -> gtk::Widget {
    let column = gtk::Box::new(gtk::Orientation::Vertical, 4);
    let terminal = Terminal::new();
    terminal.set_read_only();
    let widget = terminal.widget().clone();
    widget.set_size_request(-1, 200);
    widget.set_hexpand(true);
    crate::ui::a11y::set_label(&widget, &gettext("Terminal"));
    let frame = gtk::Frame::new(None);
    frame.set_child(Some(&widget));
    column.append(&frame);
    let bar = gtk::Box::new(gtk::Orientation::Horizontal, 6);
    let status = gtk::Label::new(Some(&gettext("Running…")));
    status.add_css_class("dim-label");
    status.add_css_class("caption");
    status.set_hexpand(true);
    status.set_xalign(0.0);
    bar.append(&status);
    let copy = gtk::Button::from_icon_name("edit-copy-symbolic");
    copy.add_css_class("flat");
    copy.set_tooltip_text(Some(&gettext("Copy the Output")));
    crate::ui::a11y::set_label(&copy, &gettext("Copy the Output"));
    let t = terminal.clone();
    copy.connect_clicked(move |_| t.copy_all());
    bar.append(&copy);
    let tall = gtk::ToggleButton::new();
    tall.set_icon_name("view-fullscreen-symbolic");
    tall.add_css_class("flat");
    tall.set_tooltip_text(Some(&gettext("Show at Full Height")));
    crate::ui::a11y::set_label(&tall, &gettext("Show at Full Height"));
    let w = widget.clone();
    tall.connect_toggled(move |b| {
        let t = Terminal::from_widget(w.clone());
        match (b.is_active(), t.fitted_lines()) {
            (true, _) => w.set_size_request(-1, 640),
            // Back to the lines a finished command printed.
            (false, Some(lines)) => {
                t.fit_lines(lines, SHORT_ROWS);
            }
            (false, None) => w.set_size_request(-1, 200),
        }
    });
    bar.append(&tall);
    column.append(&bar);
    let fed: Rc<dyn TerminalView> = Rc::new(Fed {
        terminal: widget.downgrade(),
        status: status.downgrade(),
    });
    let start = outputs.watch(id, &fed);
    terminal.feed(&start.text);
    if let Some((text, lines)) = start.exited {
        status.set_label(&text);
        terminal.fit_lines(lines, SHORT_ROWS);
    }
    // Fed as long as the view lives.
    column.connect_destroy(move |_| {
        let _ = &fed;
    });
    column.upcast()
}
