//! Accessible names for widgets built in code.
//!
//! `gtk_accessible_update_property_value` exists since GTK 4.0, but gtk4-rs
//! only binds it with the `v4_10` feature, which Debian 12's GTK 4.8 cannot
//! have; so it is declared here.

use gtk::glib;
use gtk::glib::translate::ToGlibPtr;
use gtk::prelude::*;

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
    let value = label.to_value();
    let mut property = GTK_ACCESSIBLE_PROPERTY_LABEL;
    let ptr: *const glib::gobject_ffi::GValue = value.to_glib_none().0;
    // SAFETY: every GtkWidget implements GtkAccessible; one property, one
    // initialised GValue holding a string, as the function requires.
    unsafe {
        gtk_accessible_update_property_value(widget.as_ref().as_ptr().cast(), 1, &mut property, ptr);
    }
}
