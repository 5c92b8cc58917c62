//! The buttons under a user message: a queued one can be sent now, edited,
//! moved up or down in the queue, or removed; a sent one can be edited and
//! sent again in a new conversation. Each is a window action whose target
//! is the message's id.

use gtk::prelude::*;

use crate::core::types::message::{Message, Role};
use crate::i18n::gettext;

fn clear(b: &gtk::Box) {
    while let Some(c) = b.first_child() {
        b.remove(&c);
    }
}

/// A flat button for `action` on message `id`: an icon with its name said
/// (and shown as a tooltip), or the name as its label when `icon` is empty.
fn button(name: &str, icon: &str, action: &str, id: &str) -> gtk::Button {
    let b = if icon.is_empty() {
        gtk::Button::with_label(name)
    } else {
        let b = gtk::Button::from_icon_name(icon);
        b.set_tooltip_text(Some(name));
        crate::ui::a11y::set_label(&b, name);
        b
    };
    b.add_css_class("flat");
    b.add_css_class("caption");
    b.set_action_name(Some(action));
    b.set_action_target_value(Some(&id.to_variant()));
    b
}

/// Puts the buttons that fit `m` in `actions` (on the message's last row).
pub fn fill(actions: &gtk::Box, m: &Message, last: bool) {
    clear(actions);
    let mut any = false;
    if last && m.role == Role::User && m.queued {
        for (name, icon, action) in [
            (gettext("Send Now"), "", "win.queued-send-now"),
            (
                gettext("Edit Queued Message"),
                "document-edit-symbolic",
                "win.queued-edit",
            ),
            (gettext("Move Up in the Queue"), "go-up-symbolic", "win.queued-up"),
            (
                gettext("Move Down in the Queue"),
                "go-down-symbolic",
                "win.queued-down",
            ),
            (
                gettext("Remove from the Queue"),
                "user-trash-symbolic",
                "win.queued-remove",
            ),
        ] {
            actions.append(&button(&name, icon, action, &m.id));
        }
        any = true;
    } else if last && m.role == Role::User && m.done && !m.dropped() {
        let edit = button(
            &gettext("Edit and Send Again"),
            "document-edit-symbolic",
            "win.edit-message",
            &m.id,
        );
        actions.append(&edit);
        any = true;
    }
    actions.set_visible(any);
}
