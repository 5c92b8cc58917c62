//! An entry for an API key that a screen reader cannot read out.
//!
//! GTK 4.8 gives a `GtkPasswordEntry` the "password text" role, but its
//! accessible text is the key itself, and an `AdwPasswordEntryRow` is a
//! plain "text" with the key as its text. So the entry here holds only
//! bullets; the key is kept beside it, updated as the person types,
//! pastes or deletes. "Show Key" puts the key itself in the entry (and so
//! in its accessible text, as the person asked).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use adw::prelude::*;
use gtk::glib;

use crate::i18n::gettext;

const BULLET: char = '●';

#[derive(Default)]
struct State {
    key: RefCell<String>,
    /// The key is shown as it is.
    shown: Cell<bool>,
    /// Our own edit of the entry's text: not the person typing.
    ours: Cell<bool>,
}

/// A row titled as the key, with the entry and a "Show Key" toggle.
#[derive(Clone)]
pub struct SecretEntry {
    row: adw::ActionRow,
    entry: gtk::PasswordEntry,
    state: Rc<State>,
}

impl SecretEntry {
    pub fn new(title: &str) -> Self {
        let entry = gtk::PasswordEntry::builder()
            .hexpand(true)
            .valign(gtk::Align::Center)
            .build();
        let state = Rc::new(State::default());
        // First, before GTK's accessibility connects to the same signal (it
        // would report what was typed, before the bullets replace it).
        follow_edits(&entry, &state);
        let show = gtk::ToggleButton::builder()
            .icon_name("view-reveal-symbolic")
            .valign(gtk::Align::Center)
            .tooltip_text(gettext("Show Key"))
            .css_classes(["flat"])
            .build();
        crate::ui::a11y::set_label(&show, &gettext("Show Key"));
        let row = adw::ActionRow::builder()
            .title(glib::markup_escape_text(title).as_str())
            .activatable_widget(&entry)
            .build();
        row.add_suffix(&entry);
        row.add_suffix(&show);
        // After the row made its title a label of the entry (said twice).
        crate::ui::a11y::set_label(&entry, title);
        let this = Self { row, entry, state };
        let weak = Rc::downgrade(&this.state);
        let entry = this.entry.clone();
        show.connect_toggled(move |show| {
            if let Some(state) = weak.upgrade() {
                state.shown.set(show.is_active());
                show.set_icon_name(if show.is_active() {
                    "view-conceal-symbolic"
                } else {
                    "view-reveal-symbolic"
                });
                redraw(&entry, &state);
            }
        });
        this
    }
}

/// Keeps the key in step with the entry's edits, and the entry's text
/// bullets while the key is hidden.
fn follow_edits(entry: &gtk::PasswordEntry, state: &Rc<State>) {
    let Some(text) = entry.delegate() else {
        return;
    };
    let weak = Rc::downgrade(state);
    let state = weak.clone();
    text.connect_insert_text(move |editable, new, position| {
        let Some(state) = state.upgrade() else { return };
        if state.ours.get() {
            return;
        }
        let at = usize::try_from(*position).unwrap_or(0);
        {
            let mut key = state.key.borrow_mut();
            let byte = key.char_indices().nth(at).map_or(key.len(), |(i, _)| i);
            key.insert_str(byte, new);
        }
        if state.shown.get() {
            return;
        }
        // Bullets go in instead of what was typed.
        editable.stop_signal_emission_by_name("insert-text");
        let bullets: String = std::iter::repeat_n(BULLET, new.chars().count()).collect();
        state.ours.set(true);
        editable.insert_text(&bullets, position);
        state.ours.set(false);
    });
    let state = weak;
    text.connect_delete_text(move |_, start, end| {
        let Some(state) = state.upgrade() else { return };
        if state.ours.get() {
            return;
        }
        let mut key = state.key.borrow_mut();
        let count = key.chars().count();
        let start = usize::try_from(start).unwrap_or(0).min(count);
        let end = usize::try_from(end).map_or(count, |e| e.min(count));
        if start < end {
            let byte = |n: usize| key.char_indices().nth(n).map_or(key.len(), |(i, _)| i);
            let (a, b) = (byte(start), byte(end));
            key.replace_range(a..b, "");
        }
    });
}

impl SecretEntry {
    /// The row to put in a list.
    pub fn row(&self) -> &adw::ActionRow {
        &self.row
    }

    /// The entry (to focus, to submit on Enter).
    pub fn entry(&self) -> &gtk::PasswordEntry {
        &self.entry
    }

    /// The key as typed.
    pub fn key(&self) -> String {
        self.state.key.borrow().clone()
    }

    /// Puts `key` in the entry, as if it was typed.
    pub fn set_key(&self, key: &str) {
        self.entry.set_text(key);
    }
}

/// The entry's text after "Show Key" was toggled: the key or its bullets.
fn redraw(entry: &gtk::PasswordEntry, state: &State) {
    let key = state.key.borrow().clone();
    let text = if state.shown.get() {
        key
    } else {
        std::iter::repeat_n(BULLET, key.chars().count()).collect()
    };
    state.ours.set(true);
    entry.set_text(&text);
    state.ours.set(false);
    entry.set_show_peek_icon(false);
    // Drawn as typed when shown; GTK's own bullets otherwise.
    if let Some(t) = entry.delegate().and_downcast::<gtk::Text>() {
        t.set_visibility(state.shown.get());
    }
}

/// The entry of one key a sign-in method wants: a secret's hides it (see
/// [`SecretEntry`]; a plain one is an `AdwEntryRow`).
#[derive(Clone)]
pub enum KeyField {
    Plain(adw::EntryRow),
    Secret(SecretEntry),
}

impl KeyField {
    /// What was typed.
    pub fn value(&self) -> String {
        match self {
            KeyField::Plain(row) => row.text().to_string(),
            KeyField::Secret(e) => e.key(),
        }
    }

    /// Puts `text` in, as if typed.
    pub fn set_value(&self, text: &str) {
        match self {
            KeyField::Plain(row) => row.set_text(text),
            KeyField::Secret(e) => e.set_key(text),
        }
    }

    /// The control a screen reader reads (its accessible text is what it
    /// holds: bullets for a secret).
    pub fn control(&self) -> gtk::Widget {
        match self {
            KeyField::Plain(row) => row.clone().upcast(),
            KeyField::Secret(e) => e.entry().clone().upcast(),
        }
    }

    pub fn row(&self) -> gtk::Widget {
        match self {
            KeyField::Plain(row) => row.clone().upcast(),
            KeyField::Secret(e) => e.row().clone().upcast(),
        }
    }

    pub fn connect_activate(&self, f: impl Fn() + 'static) {
        match self {
            KeyField::Plain(row) => {
                row.connect_entry_activated(move |_| f());
            }
            KeyField::Secret(e) => {
                e.entry().connect_activate(move |_| f());
            }
        }
    }
}
