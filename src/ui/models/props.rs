//! A small helper the models share: set a string property's cell and tell
//! its listeners only when it changed.

use std::cell::RefCell;

use gtk::glib;
use gtk::glib::prelude::*;

/// Sets `cell` to `value` and notifies `property` of `o` when it changed.
pub fn set_string(o: &impl IsA<glib::Object>, cell: &RefCell<String>, value: &str, property: &str) {
    if *cell.borrow() != value {
        cell.replace(value.to_owned());
        o.notify(property);
    }
}
