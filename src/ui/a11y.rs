//! Accessible names and descriptions for widgets built in code, and
//! announcements.
//!
//! `gtk_accessible_update_property_value` exists since GTK 4.0, but gtk4-rs
//! only binds it with the `v4_10` feature, which Debian 12's GTK 4.8 cannot
//! have; so it is declared here. `gtk_accessible_announce` came in GTK 4.14:
//! it is looked up at run time ([`announce`]).

use gtk::glib;
use gtk::glib::translate::ToGlibPtr;
use gtk::prelude::*;

const GTK_ACCESSIBLE_PROPERTY_DESCRIPTION: std::ffi::c_int = 1;
const GTK_ACCESSIBLE_PROPERTY_LABEL: std::ffi::c_int = 4;

extern "C" {
    fn gtk_accessible_update_property_value(
        accessible: *mut std::ffi::c_void,
        n_properties: std::ffi::c_int,
        properties: *mut std::ffi::c_int,
        values: *const glib::gobject_ffi::GValue,
    );
    // In GTK since 4.0; gtk4-rs binds it only with `v4_10` too.
    fn gtk_accessible_reset_relation(accessible: *mut std::ffi::c_void, relation: std::ffi::c_int);
}

/// Sets the name a screen reader (and the accessibility tree) gives `widget`.
pub fn set_label(widget: &impl IsA<gtk::Widget>, label: &str) {
    name_once(widget.as_ref(), label);
    // SAFETY: the key holds `()` only, here and in `name_mnemonics`.
    unsafe { widget.as_ref().set_data(NAMED_IN_CODE, ()) };
}

/// Marks a widget whose name was set by [`set_label`], so that
/// [`name_mnemonics`] leaves it as it is.
const NAMED_IN_CODE: &str = "parley-a11y-named";

/// GTK 4.8 makes a name of the `label` property *and* the text of each
/// widget that labels this one: a button is labelled by its own label
/// child, so a button named in code was said twice ("Cancel the Turn
/// Cancel"). The name given here is the whole name.
fn name_once(widget: &gtk::Widget, label: &str) {
    set_property(widget, GTK_ACCESSIBLE_PROPERTY_LABEL, label);
    // SAFETY: every GtkWidget implements GtkAccessible.
    unsafe {
        gtk_accessible_reset_relation(
            widget.as_ptr().cast(),
            gtk::ffi::GTK_ACCESSIBLE_RELATION_LABELLED_BY,
        )
    };
}

/// `_Save` as it is said: "Save" (a doubled underscore is a real one).
pub fn without_mnemonic(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    let mut chars = label.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '_' {
            if chars.peek() == Some(&'_') {
                out.push('_');
                chars.next();
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// A button that GTK 4.8 would call "_Cancel Cancel" (its raw label, with
/// the mnemonic's underscore, and then its label child's text) is named
/// once, as it reads: "Cancel". Call it again if the label changes.
pub fn name_mnemonic(button: &impl IsA<gtk::Button>) {
    let button = button.as_ref();
    if let Some(label) = button.label().filter(|_| button.uses_underline()) {
        name_once(button.upcast_ref(), &without_mnemonic(&label));
    }
}

/// [`name_mnemonic`] for every button under `root` that was not named in
/// code: the response buttons of a message dialog, the buttons of a
/// template.
pub fn name_mnemonics(root: &impl IsA<gtk::Widget>) {
    for_each_descendant(root.as_ref(), &mut |w| {
        // SAFETY: the key holds `()` only (see `set_label`).
        let named = unsafe { w.data::<()>(NAMED_IN_CODE) }.is_some();
        if let Some(button) = w.downcast_ref::<gtk::Button>().filter(|_| !named) {
            name_mnemonic(button);
        }
    });
}

/// A button with a mnemonic (`_Save`), named as it reads.
pub fn mnemonic_button(label: &str) -> gtk::Button {
    let button = gtk::Button::with_mnemonic(label);
    name_mnemonic(&button);
    button
}

/// Sets the description a screen reader reads after `widget`'s name.
pub fn set_description(widget: &impl IsA<gtk::Widget>, text: &str) {
    set_property(widget, GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, text);
}

/// How urgent an announcement is (GtkAccessibleAnnouncementPriority).
#[derive(Debug, Clone, Copy)]
pub enum Priority {
    Medium = 1,
    High = 2,
}

type AnnounceFn = unsafe extern "C" fn(*mut std::ffi::c_void, *const std::ffi::c_char, std::ffi::c_int);

/// `gtk_accessible_announce` of the running GTK, if it has one (≥ 4.14).
fn announce_fn() -> Option<AnnounceFn> {
    static FOUND: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let address = *FOUND.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only
        // looks a symbol up.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"gtk_accessible_announce".as_ptr()) };
        (!p.is_null()).then_some(p as usize)
    });
    // SAFETY: the symbol, when present, has this signature (GTK ≥ 4.14).
    address.map(|a| unsafe { std::mem::transmute::<usize, AnnounceFn>(a) })
}

/// Says `text` to a screen reader now. With GTK ≥ 4.14 through
/// `gtk_accessible_announce` on `widget`; before, the text becomes the
/// description of the focused control (or of `widget`), a change screen
/// readers read out.
pub fn announce(widget: &impl IsA<gtk::Widget>, text: &str, priority: Priority) {
    let widget = widget.as_ref();
    // Whatever it came from (an agent's text, a file's), no control
    // character reaches the screen reader raw, and no NUL reaches GTK.
    let text = crate::ui::markdown::visible(text);
    LAST.with(|l| l.replace(text.to_string()));
    HEARD.with_borrow_mut(|h| {
        if h.len() == 32 {
            h.pop_front();
        }
        h.push_back(text.to_string());
    });
    if let Some(f) = announce_fn() {
        let Ok(message) = std::ffi::CString::new(text.as_bytes()) else {
            return;
        };
        // SAFETY: `widget` is a live GtkAccessible; `message` outlives the call.
        unsafe {
            f(
                widget.as_ptr().cast(),
                message.as_ptr(),
                priority as std::ffi::c_int,
            )
        };
        return;
    }
    let target = widget
        .root()
        .and_then(|r| r.focus())
        .map(|f| outer_editable(&f).unwrap_or(f))
        .unwrap_or_else(|| widget.clone());
    // Cleared first, so the same text twice is still a change; cleared
    // again a moment later (unless something newer was said), so the
    // control does not keep saying it whenever it gets the focus.
    set_description(&target, "");
    set_description(&target, &text);
    let said = SAID.with(|n| {
        n.set(n.get().wrapping_add(1));
        n.get()
    });
    let weak = target.downgrade();
    glib::timeout_add_local_once(std::time::Duration::from_secs(3), move || {
        if let Some(target) = weak.upgrade().filter(|_| SAID.with(|n| n.get() == said)) {
            set_description(&target, "");
        }
    });
}

/// The focus in a search entry, an entry or a password entry is on the
/// `GtkText` inside, which GTK 4.8 leaves out of the accessible tree: what
/// it is told no one hears. The field around it is what a reader has.
fn outer_editable(focus: &gtk::Widget) -> Option<gtk::Widget> {
    if !focus.is::<gtk::Text>() {
        return None;
    }
    focus
        .parent()
        .and_then(|p| p.ancestor(gtk::Editable::static_type()))
}

thread_local! {
    /// How many announcements were made (the main thread's only).
    static SAID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// What was announced last (for the window tests).
    static LAST: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    /// The last 32 announcements, oldest first (for the window tests).
    static HEARD: std::cell::RefCell<std::collections::VecDeque<String>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

/// The last 32 announcements on this thread, oldest first.
pub fn recent_announcements() -> Vec<String> {
    HEARD.with_borrow(|h| h.iter().cloned().collect())
}

/// What [`announce`] said last on this thread.
pub fn last_announcement() -> String {
    LAST.with(|l| l.borrow().clone())
}

/// Tells a screen reader that a form's field must be filled in.
pub fn set_required(widget: &impl IsA<gtk::Widget>) {
    set_value(
        widget,
        gtk::ffi::GTK_ACCESSIBLE_PROPERTY_REQUIRED,
        &true.to_value(),
    );
}

fn set_property(widget: &impl IsA<gtk::Widget>, property: std::ffi::c_int, label: &str) {
    set_value(widget, property, &label.to_value());
}

fn set_value(widget: &impl IsA<gtk::Widget>, property: std::ffi::c_int, value: &glib::Value) {
    let mut property = property;
    let ptr: *const glib::gobject_ffi::GValue = value.to_glib_none().0;
    // SAFETY: every GtkWidget implements GtkAccessible; one property, one
    // initialised GValue of the property's type (a string for the label
    // and the description, a boolean for "required").
    unsafe {
        gtk_accessible_update_property_value(widget.as_ref().as_ptr().cast(), 1, &mut property, ptr);
    }
}

/// Calls `f` on `root` and every widget beneath it (to name the parts of
/// GTK's and libadwaita's own widgets that have none, and to take empty
/// scroll panes out of the Tab order).
pub fn for_each_descendant(root: &gtk::Widget, f: &mut dyn FnMut(&gtk::Widget)) {
    f(root);
    let mut child = root.first_child();
    while let Some(c) = child {
        for_each_descendant(&c, f);
        child = c.next_sibling();
    }
}

/// Names a drop-down, and the button inside it that takes the focus
/// ("GtkToggleButton" otherwise): "LABEL: CHOSEN", kept up as the choice
/// changes.
pub fn name_drop_down(drop_down: &gtk::DropDown, label: &str) {
    set_label(drop_down, label);
    let name = |d: &gtk::DropDown, label: &str| {
        let chosen = d
            .selected_item()
            .and_downcast::<gtk::StringObject>()
            .map(|s| s.string().to_string())
            .unwrap_or_default();
        let text = format!("{label}: {chosen}");
        for_each_descendant(d.upcast_ref(), &mut |w| {
            if w.is::<gtk::ToggleButton>() {
                set_label(w, &text);
            }
        });
    };
    name(drop_down, label);
    let label = label.to_owned();
    drop_down.connect_selected_notify(move |d| name(d, &label));
}

/// An `AdwStatusPage` scrolls its content in a scrolled window of its own,
/// which GTK 4.8 puts in the Tab order as an unnamed "scroll pane". It
/// stays a Tab stop (taking it out leaves GTK 4.8's list view, when it is
/// the last stop, unable to pass Tab on), named as the page is titled.
pub fn name_status_page(page: &adw::StatusPage) {
    let title = page.title();
    for_each_descendant(page.upcast_ref(), &mut |w| {
        if w.is::<gtk::ScrolledWindow>() {
            set_label(w, &title);
        }
    });
}

/// GTK leaves the window's own buttons (Close) out of the Tab order: in a
/// dialog with little else, Tab must reach them too.
///
/// The controls make their buttons when the header is rooted and again when
/// the layout changes, so this runs now and each time the header is mapped.
/// GTK 4.8 makes the buttons, and some of the parts that hold them,
/// can-focus false, which keeps the focus out of everything beneath.
pub fn tab_reaches_window_controls(header: &impl IsA<gtk::Widget>) {
    fn reach(header: &gtk::Widget) {
        for_each_descendant(header, &mut |w| {
            let in_controls = w.ancestor(gtk::WindowControls::static_type()).is_some();
            if in_controls && w.is::<gtk::Button>() {
                w.set_focusable(true);
                let mut up = Some(w.clone());
                while let Some(u) = up {
                    u.set_can_focus(true);
                    if &u == header {
                        break;
                    }
                    up = u.parent();
                }
            }
        });
    }
    reach(header.as_ref());
    header.as_ref().connect_map(reach);
}

/// Names the controls of GTK's Keyboard Shortcuts window that have none
/// (its search button is "GtkImage" otherwise).
pub fn name_shortcuts_window(window: &impl IsA<gtk::Widget>) {
    for_each_descendant(window.as_ref(), &mut |w| {
        let is_button = w.is::<gtk::ToggleButton>() || w.is::<gtk::Button>();
        let finds = w
            .first_child()
            .and_downcast::<gtk::Image>()
            .and_then(|i| i.icon_name())
            .is_some_and(|n| n.contains("find"));
        if is_button && finds {
            set_label(w, &crate::i18n::gettext("Search Shortcuts"));
        }
    });
}

/// Names the About window's version button ("Version 1.2.3").
pub fn name_about_window(window: &impl IsA<gtk::Widget>, version: &str) {
    for_each_descendant(window.as_ref(), &mut |w| {
        if w.is::<gtk::Button>() && w.has_css_class("app-version") {
            set_label(
                w,
                &crate::i18n::gettext_f("Version {version}", &[("version", version)]),
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::without_mnemonic;

    #[test]
    fn a_mnemonic_reads_without_its_underscore() {
        assert_eq!(without_mnemonic("_Cancel"), "Cancel");
        assert_eq!(without_mnemonic("Back to _Conversation"), "Back to Conversation");
        assert_eq!(without_mnemonic("snake__case"), "snake_case");
        assert_eq!(without_mnemonic("Plain"), "Plain");
    }
}
