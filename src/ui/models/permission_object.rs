//! A pending permission request, as an item of an agent's list model.

use std::cell::OnceCell;

use gtk::glib;
use gtk::subclass::prelude::*;

use crate::core::events::PermissionRequest;

mod imp {
    use super::*;

    #[derive(Default)]
    pub struct PermissionObject {
        pub request: OnceCell<PermissionRequest>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for PermissionObject {
        const NAME: &'static str = "ParleyPermissionObject";
        type Type = super::PermissionObject;
    }

    impl ObjectImpl for PermissionObject {}
}

glib::wrapper! {
    pub struct PermissionObject(ObjectSubclass<imp::PermissionObject>);
}

impl PermissionObject {
    pub fn new(request: PermissionRequest) -> Self {
        let o: Self = glib::Object::new();
        let _ = o.imp().request.set(request);
        o
    }

    pub fn request(&self) -> &PermissionRequest {
        self.imp()
            .request
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }
}
