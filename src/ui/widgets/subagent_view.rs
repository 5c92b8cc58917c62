//! A subagent in the conversation: what one session told another.

use gtk::prelude::*;

use crate::core::types::subagent::SessionNote;
use crate::i18n::gettext;

/// A message between sessions: never drawn as the user's or the agent's own
/// words (a quoted card with who sent it).
pub(super) fn session_note(n: &SessionNote) -> gtk::Widget {
    let b = gtk::Box::new(gtk::Orientation::Vertical, 4);
    b.add_css_class("session-note");
    let heading = gtk::Label::new(Some(&gettext("Between sessions")));
    heading.set_xalign(0.0);
    heading.add_css_class("caption-heading");
    heading.add_css_class("dim-label");
    b.append(&heading);
    let text = gtk::Label::new(Some(&n.text));
    text.set_xalign(0.0);
    text.set_wrap(true);
    text.set_wrap_mode(gtk::pango::WrapMode::WordChar);
    text.set_selectable(true);
    b.append(&text);
    b.upcast()
}
