//! The Agents sidebar: the list, following the model's agents, and
//! selecting with the mouse or the keyboard.

use super::*;

impl ParleyWindow {
    pub fn agent(&self, name: &str) -> Option<AgentObject> {
        self.model().agent(name)
    }

    pub(super) fn selection(&self) -> &gtk::SingleSelection {
        self.imp()
            .selection
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// The agent list changed: the selection follows the selected agent by
    /// name, or goes when it was removed.
    pub(super) fn agents_changed(&self) {
        self.update_sidebar();
        let selected = self.imp().selected.borrow().clone();
        if let Some(name) = selected {
            let store = self.model().agents();
            match (0..store.n_items()).find(|&i| {
                store
                    .item(i)
                    .and_downcast::<AgentObject>()
                    .is_some_and(|a| a.name() == name)
            }) {
                Some(i) => self.selection().set_selected(i),
                None => self.show_agent(None),
            }
        }
    }

    pub(super) fn update_sidebar(&self) {
        let empty = self.model().agents().n_items() == 0;
        self.imp()
            .sidebar_stack
            .set_visible_child_name(if empty { "empty" } else { "list" });
    }

    /// Selects an agent by name and shows its conversation.
    pub fn select_agent(&self, name: &str) {
        let store = self.model().agents();
        if let Some(i) = (0..store.n_items()).find(|&i| {
            store
                .item(i)
                .and_downcast::<AgentObject>()
                .is_some_and(|a| a.name() == name)
        }) {
            self.selection().set_selected(i);
        }
    }

    pub(super) fn setup_agents_view(&self, selection: &gtk::SingleSelection) {
        let factory = gtk::SignalListItemFactory::new();
        factory.connect_setup(|_, item| {
            if let Some(item) = item.downcast_ref::<gtk::ListItem>() {
                item.set_child(Some(&AgentRow::new()));
            }
        });
        factory.connect_bind(|_, item| {
            let Some(item) = item.downcast_ref::<gtk::ListItem>() else {
                return;
            };
            if let (Some(row), Some(agent)) = (
                item.child().and_downcast::<AgentRow>(),
                item.item().and_downcast::<AgentObject>(),
            ) {
                row.bind(&agent);
            }
        });
        factory.connect_unbind(|_, item| {
            let Some(item) = item.downcast_ref::<gtk::ListItem>() else {
                return;
            };
            if let Some(row) = item.child().and_downcast::<AgentRow>() {
                row.unbind();
            }
        });
        let view = &self.imp().agents_view;
        view.set_factory(Some(&factory));
        view.set_model(Some(selection));
        let keys = gtk::EventControllerKey::new();
        keys.set_propagation_phase(gtk::PropagationPhase::Capture);
        keys.connect_key_pressed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            #[upgrade_or]
            glib::Propagation::Proceed,
            move |_, key, _, _| {
                use gtk::gdk::Key;
                let moving = matches!(
                    key,
                    Key::Up
                        | Key::Down
                        | Key::Home
                        | Key::End
                        | Key::Page_Up
                        | Key::Page_Down
                        | Key::KP_Up
                        | Key::KP_Down
                );
                win.imp().keyboard_selection.set(moving);
                glib::Propagation::Proceed
            }
        ));
        // A key that moved nothing (Up on the first row) must not leave the
        // flag for the next click.
        keys.connect_key_released(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _, _, _| win.imp().keyboard_selection.set(false)
        ));
        view.add_controller(keys);
        view.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                win.imp().leaflet.navigate(adw::NavigationDirection::Forward);
                win.imp().composer.grab_focus();
            }
        ));
        selection.connect_selected_item_notify(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |sel| {
                let name = sel
                    .selected_item()
                    .and_downcast::<AgentObject>()
                    .map(|a| a.name());
                // At phone width the arrow keys stay in the list; Enter or a
                // click opens the conversation.
                let keyboard = win.imp().keyboard_selection.get();
                win.show_agent(name.as_deref());
                if name.is_some() && !keyboard {
                    win.imp().leaflet.navigate(adw::NavigationDirection::Forward);
                }
            }
        ));
    }
}
