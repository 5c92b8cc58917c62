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

/// Which agent a facet belongs to, and the core it asks; set once, as the
/// facet is made.
#[derive(Default)]
pub struct AgentRef(std::cell::OnceCell<(String, crate::core::services::Core)>);

impl AgentRef {
    pub fn set(&self, agent: &str, core: &crate::core::services::Core) {
        let _ = self.0.set((agent.to_owned(), core.clone()));
    }

    /// The agent's name.
    pub fn name(&self) -> String {
        self.0.get().map(|(n, _)| n.clone()).unwrap_or_default()
    }

    pub fn core(&self) -> &crate::core::services::Core {
        &self
            .0
            .get()
            .unwrap_or_else(|| unreachable!("set as the facet is made"))
            .1
    }
}

/// Connects `f` to `signal` of `o`, a signal that carries nothing but the
/// object.
pub fn connect_plain<O: IsA<glib::Object>, F: Fn(&O) + 'static>(
    o: &O,
    signal: &str,
    f: F,
) -> glib::SignalHandlerId {
    o.connect_local(signal, false, move |args| {
        let this = args.first().and_then(|a| a.get::<glib::Object>().ok());
        if let Some(this) = this.and_then(|o| o.downcast::<O>().ok()) {
            f(&this);
        }
        None
    })
}
