//! The window's actions (▶, ■, Restart, Show Logs, toasts, Stop, the
//! editor) and the Open Recent menu.

use super::*;

impl ParleyWindow {
    pub(super) fn agent_action(&self, name: &str, run: impl Fn(&ParleyWindow, AgentObject) + 'static) {
        let action = gio::SimpleAction::new(name, Some(glib::VariantTy::STRING));
        action.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, param| {
                if let Some(agent) = param.and_then(|p| p.get::<String>()).and_then(|a| win.agent(&a)) {
                    run(&win, agent);
                }
            }
        ));
        self.add_action(&action);
    }

    pub(super) fn setup_actions(&self) {
        fn lifecycle(win: &ParleyWindow, agent: AgentObject, what: Lifecycle) {
            agent.lifecycle(
                what,
                glib::clone!(
                    #[weak]
                    win,
                    move |r: Result<(), String>| {
                        if let Err(e) = r {
                            win.toast(&e);
                        }
                    }
                ),
            );
        }
        self.agent_action("agent-start", |w, a| lifecycle(w, a, Lifecycle::Start));
        self.agent_action("agent-stop", |w, a| lifecycle(w, a, Lifecycle::Stop));
        self.agent_action("agent-restart", |w, a| lifecycle(w, a, Lifecycle::Restart));
        self.agent_action("agent-logs", |w, a| crate::ui::widgets::logs::show(w, &a));
        self.agent_action("agent-sign-in", |w, a| w.show_sign_in(&a));
        self.agent_action("agent-sign-out", |w, a| {
            a.sign_in().logout(glib::clone!(
                #[weak]
                w,
                move |r: Result<(), String>| {
                    if let Err(e) = r {
                        w.toast(&e);
                    }
                }
            ))
        });
        self.agent_action("agent-forget-keys", |w, a| {
            a.sign_in().forget_keys(glib::clone!(
                #[weak]
                w,
                move |r: Result<(), String>| match r {
                    Ok(()) => w.toast(&gettext("Saved keys forgotten")),
                    Err(e) => w.toast(&e),
                }
            ))
        });
        // Widgets report errors here: a toast with the text.
        let toast = gio::SimpleAction::new("toast", Some(glib::VariantTy::STRING));
        toast.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, param| {
                if let Some(text) = param.and_then(|p| p.get::<String>()) {
                    win.toast(&text);
                }
            }
        ));
        self.add_action(&toast);
        let focus = gio::SimpleAction::new("focus-composer", None);
        focus.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                win.imp().composer.grab_focus();
            }
        ));
        self.add_action(&focus);
        // A page gave way to the conversation: the focus, on the page (a
        // sign-in terminal, gone now), goes to the message once it is shown
        // (the crossfade's length varies with the renderer); given up on
        // after five seconds, or when asked again.
        let back = gio::SimpleAction::new("back-to-composer", None);
        back.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                let composer = win.imp().composer.get();
                if let Some(old) = win.imp().composer_map.take() {
                    composer.disconnect(old);
                }
                if composer.is_mapped() {
                    composer.grab_focus();
                    return;
                }
                let id = composer.connect_map(glib::clone!(
                    #[weak]
                    win,
                    move |composer| {
                        if let Some(id) = win.imp().composer_map.take() {
                            composer.disconnect(id);
                        }
                        composer.grab_focus();
                    }
                ));
                win.imp().composer_map.replace(Some(id));
                glib::timeout_add_local_once(
                    std::time::Duration::from_secs(5),
                    glib::clone!(
                        #[weak]
                        win,
                        move || {
                            if let Some(id) = win.imp().composer_map.take() {
                                win.imp().composer.disconnect(id);
                            }
                        }
                    ),
                );
            }
        ));
        self.add_action(&back);
        let cancel = gio::SimpleAction::new("cancel", None);
        cancel.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| win.imp().composer.cancel()
        ));
        self.add_action(&cancel);
        let edit = gio::SimpleAction::new("edit-config", None);
        edit.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| win.edit_config()
        ));
        self.add_action(&edit);
        // The shortcuts window is built the first time it is asked for, not
        // before the first frame: parsing it took ~9 ms of start-up
        // (docs/benchmarks-history.md). `set_help_overlay` keeps this action.
        let shortcuts = gio::SimpleAction::new("show-help-overlay", None);
        shortcuts.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| win.show_shortcuts()
        ));
        self.add_action(&shortcuts);
    }

    /// The Keyboard Shortcuts window (Ctrl+?), built on first use.
    fn show_shortcuts(&self) {
        if self.help_overlay().is_none() {
            let builder = gtk::Builder::from_string(include_str!("../shortcuts.ui"));
            if let Some(help) = builder.object::<gtk::ShortcutsWindow>("help_overlay") {
                crate::ui::a11y::name_shortcuts_window(&help);
                // Otherwise a screen reader calls the window "GtkShortcutsWindow".
                help.set_title(Some(&gettext("Keyboard Shortcuts")));
                self.set_help_overlay(Some(&help));
            }
        }
        if let Some(help) = self.help_overlay() {
            help.present();
        }
    }

    pub fn refresh_recent(&self) {
        let section = &self.imp().recent_section;
        section.remove_all();
        for path in self.core().config.recent() {
            let label = std::path::Path::new(&path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.clone());
            let item = gio::MenuItem::new(Some(&label), None);
            item.set_action_and_target_value(Some("app.open-recent"), Some(&path.to_variant()));
            section.append_item(&item);
        }
    }
}

impl ParleyWindow {
    /// Selects the agent and shows its sign-in page (its menu's "Sign In…").
    pub fn show_sign_in(&self, agent: &AgentObject) {
        self.select_agent(&agent.name());
        let page = self.imp().sign_in_page.clone();
        page.request();
        page.grab_focus();
    }
}
