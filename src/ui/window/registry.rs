//! Agents from the ACP registry: Add Agent… (the main menu and the empty
//! sidebar's button), an agent's Update and Remove Agent… (its menu), and
//! opening an agent just added.

use std::rc::Rc;

use super::*;

impl ParleyWindow {
    pub(super) fn setup_registry_actions(&self) {
        let add = gio::SimpleAction::new("add-agent", None);
        add.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                let weak = win.downgrade();
                let on_added = move |name: &str| {
                    if let Some(win) = weak.upgrade() {
                        win.open_added_agent(name);
                    }
                };
                crate::ui::widgets::add_agent::show(win.upcast_ref(), win.model(), Rc::new(on_added));
            }
        ));
        self.add_action(&add);
        self.agent_action("agent-update", |win, agent| {
            let core = win.core().clone();
            let name = agent.name();
            let title = agent.title();
            let id = core
                .agents
                .list()
                .into_iter()
                .find(|a| a.name == name)
                .and_then(|a| a.registry)
                .map(|r| r.id);
            let Some(id) = id else { return };
            win.toast(&gettext_f("Updating {agent}…", &[("agent", &title)]));
            crate::ui::runtime::call(
                async move { core.registry.update(Some(&id)).await },
                glib::clone!(
                    #[weak]
                    win,
                    move |r: Result<Vec<String>, String>| match r {
                        Ok(_) => win.toast(&gettext_f("{agent} was updated", &[("agent", &title)])),
                        Err(e) => win.toast(&e),
                    }
                ),
            );
        });
        self.agent_action("agent-remove", |win, agent| win.confirm_remove(&agent));
    }

    /// "Remove NAME?", with "Also delete its installed files" for an agent
    /// Add Agent installed.
    fn confirm_remove(&self, agent: &AgentObject) {
        let title = agent.title();
        let dialog = adw::MessageDialog::builder()
            .transient_for(self)
            .modal(true)
            .heading(gettext_f("Remove {agent}?", &[("agent", &title)]))
            .body(gettext(
                "Its entry is taken out of the configuration; the rest of the file stays as it is.",
            ))
            .build();
        dialog.add_response("cancel", &gettext("_Cancel"));
        dialog.add_response("remove", &gettext("_Remove"));
        crate::ui::a11y::name_mnemonics(&dialog);
        dialog.set_response_appearance("remove", adw::ResponseAppearance::Destructive);
        dialog.set_default_response(Some("cancel"));
        dialog.set_close_response("cancel");
        let delete = gtk::CheckButton::builder()
            .label(gettext("Also delete its installed files"))
            .active(true)
            .build();
        if agent.from_registry() {
            dialog.set_extra_child(Some(&delete));
        }
        let name = agent.name();
        dialog.connect_response(
            None,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |_, response| {
                    if response != "remove" {
                        return;
                    }
                    let core = win.core().clone();
                    let name = name.clone();
                    let files = delete.is_active() && delete.parent().is_some();
                    let title = title.clone();
                    crate::ui::runtime::call(
                        async move { core.registry.remove(&name, files).await },
                        glib::clone!(
                            #[weak]
                            win,
                            move |r: Result<(), String>| match r {
                                Ok(()) => win.toast(&gettext_f("{agent} was removed", &[("agent", &title)])),
                                Err(e) => win.toast(&e),
                            }
                        ),
                    );
                }
            ),
        );
        dialog.present();
    }

    /// Selects an agent just added (once the configuration's change has
    /// reached the sidebar) and starts it: one that needs signing in then
    /// shows its sign-in page.
    pub fn open_added_agent(&self, name: &str) {
        let open = |win: &ParleyWindow, name: &str| -> bool {
            if win.agent(name).is_none() {
                return false;
            }
            win.select_agent(name);
            gio::prelude::ActionGroupExt::activate_action(win, "agent-start", Some(&name.to_variant()));
            true
        };
        if open(self, name) {
            return;
        }
        let handler: std::rc::Rc<std::cell::RefCell<Option<glib::SignalHandlerId>>> = Default::default();
        let store = self.model().agents();
        let id = store.connect_items_changed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            #[strong]
            handler,
            #[to_owned]
            name,
            move |store, _, _, _| {
                if open(&win, &name) {
                    if let Some(id) = handler.borrow_mut().take() {
                        store.disconnect(id);
                    }
                }
            }
        ));
        handler.replace(Some(id));
        // An agent that never shows up (the file changed meanwhile) must
        // not be opened much later by a new one of the same name.
        glib::timeout_add_seconds_local_once(
            10,
            glib::clone!(
                #[weak]
                store,
                move || {
                    if let Some(id) = handler.borrow_mut().take() {
                        store.disconnect(id);
                    }
                }
            ),
        );
    }
}
