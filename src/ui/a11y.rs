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
}

/// Sets the name a screen reader (and the accessibility tree) gives `widget`.
pub fn set_label(widget: &impl IsA<gtk::Widget>, label: &str) {
    set_property(widget, GTK_ACCESSIBLE_PROPERTY_LABEL, label);
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

thread_local! {
    /// How many announcements were made (the main thread's only).
    static SAID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn set_property(widget: &impl IsA<gtk::Widget>, property: std::ffi::c_int, label: &str) {
    let value = label.to_value();
    let mut property = property;
    let ptr: *const glib::gobject_ffi::GValue = value.to_glib_none().0;
    // SAFETY: every GtkWidget implements GtkAccessible; one property, one
    // initialised GValue holding a string, as the function requires.
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
