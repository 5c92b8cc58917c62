//! "Sign in to AGENT": shown in place of the conversation while the agent
//! needs a sign-in (or the user asked for it from the agent's menu). It
//! lists the agent's methods with their names and descriptions:
//!
//! - an agent method signs in with a click (progress and Cancel while the
//!   agent works; it may open a browser itself);
//! - a method that wants keys (`env_var`, or an agent method such as
//!   gemini's API key) shows a password entry for each, saved in the keyring;
//! - a terminal method runs its command in a terminal on this page.
//!
//! The message that waited is sent again by the core once a sign-in
//! succeeds; the page then gives way to the conversation.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use adw::prelude::*;
use adw::subclass::prelude::*;
use gtk::glib;

use super::terminal::Terminal;
use crate::core::auth::AuthStatus;
use crate::core::secrets::Secret;
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::AgentObject;
use crate::ui::widgets::secret_entry::KeyField;
use crate::ui::widgets::sign_in_methods::{self, MethodHost};
use crate::ui::widgets::sign_in_terminal::{self, Login};

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::SignInPage)]
    pub struct SignInPage {
        #[property(get, set = Self::set_agent, nullable)]
        pub agent: RefCell<Option<AgentObject>>,
        /// Whether the page is to be shown instead of the conversation.
        #[property(get)]
        pub active: Cell<bool>,
        /// Asked for from the agent's menu, though not needed.
        pub requested: Cell<bool>,
        /// Put aside with "Back to Conversation" while needed (with the
        /// agent's words then); shown again when they change.
        pub dismissed: RefCell<Option<Option<String>>>,
        /// The page shows the terminal now.
        pub showing_terminal: Cell<bool>,
        pub handlers: RefCell<crate::ui::models::Handlers>,
        pub login: RefCell<Option<Login>>,
        /// The buttons of the methods (in their order) and the key entries.
        pub buttons: RefCell<Vec<(String, gtk::Button)>>,
        pub entries: RefCell<HashMap<String, KeyField>>,
    }

    impl SignInPage {
        fn set_agent(&self, agent: Option<AgentObject>) {
            crate::ui::models::disconnect_all(self.handlers.take());
            self.requested.set(false);
            self.dismissed.replace(None);
            self.agent.replace(agent.clone());
            let obj = self.obj();
            if let Some(agent) = agent {
                let page = obj.downgrade();
                let id = agent.sign_in().connect_auth_changed(move |_| {
                    if let Some(page) = page.upgrade() {
                        page.refresh();
                    }
                });
                self.handlers
                    .borrow_mut()
                    .push((agent.sign_in().clone().upcast(), id));
                // "Your message waits" once the refused turn has ended.
                let page = obj.downgrade();
                let id = agent.conversation().connect_answering_notify(move |_| {
                    if let Some(page) = page.upgrade().filter(|p| p.active()) {
                        page.refresh();
                    }
                });
                self.handlers
                    .borrow_mut()
                    .push((agent.conversation().clone().upcast(), id));
            }
            obj.refresh();
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for SignInPage {
        const NAME: &'static str = "ParleySignInPage";
        type Type = super::SignInPage;
        type ParentType = adw::Bin;
    }

    #[glib::derived_properties]
    impl ObjectImpl for SignInPage {}
    impl WidgetImpl for SignInPage {}
    impl BinImpl for SignInPage {}
}

glib::wrapper! {
    pub struct SignInPage(ObjectSubclass<imp::SignInPage>)
        @extends adw::Bin, gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget;
}

impl Default for SignInPage {
    fn default() -> Self {
        glib::Object::new()
    }
}

fn toast(widget: &impl IsA<gtk::Widget>, text: &str) {
    let _ = widget.activate_action("win.toast", Some(&text.to_variant()));
}

impl SignInPage {
    /// Shows the page for the agent even if it does not need a sign-in.
    pub fn request(&self) {
        self.imp().requested.set(true);
        self.refresh();
        // The methods come with the agent's `initialize`: start it to learn them.
        if let Some(agent) = self.agent() {
            if agent.sign_in().status().is_none_or(|s| s.methods.is_empty()) {
                agent.sign_in().load_auth_methods(glib::clone!(
                    #[weak(rename_to = page)]
                    self,
                    move |r: Result<(), String>| {
                        if let Err(e) = r {
                            toast(&page, &e);
                        }
                    }
                ));
            }
        }
    }

    /// The button that signs in with method `id` (for tests and focus).
    pub fn method_button(&self, id: &str) -> Option<gtk::Button> {
        self.imp()
            .buttons
            .borrow()
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, b)| b.clone())
    }

    /// The entry of key `name` (for tests).
    pub fn key_entry(&self, name: &str) -> Option<KeyField> {
        self.imp().entries.borrow().get(name).cloned()
    }

    /// The running sign-in command's terminal, if it is this agent's.
    pub fn terminal(&self) -> Option<Terminal> {
        let name = self.agent().map(|a| a.name())?;
        self.imp()
            .login
            .borrow()
            .as_ref()
            .filter(|l| l.agent == name)
            .map(|l| l.terminal.clone())
    }

    fn set_active(&self, active: bool) {
        if self.imp().active.replace(active) != active {
            self.notify_active();
        }
    }

    /// Rebuilds the page from the agent's sign-in status.
    pub fn refresh(&self) {
        let imp = self.imp();
        let Some(agent) = self.agent() else {
            self.set_active(false);
            adw::prelude::BinExt::set_child(self, None::<&gtk::Widget>);
            return;
        };
        let status = agent.sign_in().status();
        let needed = status.as_ref().is_some_and(|s| s.needs_sign_in);
        let message = status.as_ref().and_then(|s| s.message.clone());
        let signing = status.as_ref().and_then(|s| s.signing_in.clone());
        let running = self.terminal().is_some();
        if needed {
            imp.requested.set(false);
        }
        // Put aside until the agent says something new.
        let dismissed = needed && imp.dismissed.borrow().as_ref() == Some(&message);
        if !dismissed {
            imp.dismissed.replace(None);
        }
        let active = (needed && !dismissed) || signing.is_some() || running || imp.requested.get();
        let focus_was_here = self.focus_child().is_some();
        // While the terminal is shown, a rebuild would take it from under
        // the user's fingers: only its end rebuilds.
        if running && imp.showing_terminal.get() {
            self.set_active(true);
            return;
        }
        if !active && focus_was_here {
            // The page goes: the keyboard goes to the composer, not to
            // wherever GTK would look for it next.
            let _ = self.activate_action("win.focus-composer", None);
        }
        self.set_active(active);
        if !active {
            adw::prelude::BinExt::set_child(self, None::<&gtk::Widget>);
            return;
        }
        // Half-typed keys survive a rebuild.
        let typed: Vec<(String, String)> = imp
            .entries
            .borrow()
            .iter()
            .map(|(n, e)| (n.clone(), e.value()))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        imp.buttons.borrow_mut().clear();
        imp.entries.borrow_mut().clear();
        imp.showing_terminal.set(false);
        let body = gtk::Box::new(gtk::Orientation::Vertical, 18);
        body.set_margin_top(36);
        body.set_margin_bottom(24);
        body.set_margin_start(12);
        body.set_margin_end(12);
        let icon = gtk::Image::from_icon_name("dialog-password-symbolic");
        icon.set_pixel_size(64);
        icon.add_css_class("dim-label");
        body.append(&icon);
        let title = gtk::Label::new(Some(&gettext_f(
            "Sign in to {agent}",
            &[("agent", &agent.title())],
        )));
        title.add_css_class("title-1");
        title.set_wrap(true);
        title.set_justify(gtk::Justification::Center);
        body.append(&title);
        // The agent's own word on who is signed in (`_auth/status_update`).
        if let Some(account) = status.as_ref().and_then(|s| s.account.as_ref()) {
            let label = gtk::Label::new(Some(&gettext_f(
                "The agent says: {status}",
                &[("status", &account.summary())],
            )));
            label.set_wrap(true);
            label.set_justify(gtk::Justification::Center);
            label.set_selectable(true);
            body.append(&label);
        }
        if let Some(message) = status.as_ref().and_then(|s| s.message.clone()) {
            let label = gtk::Label::new(Some(&crate::ui::markdown::visible(&message)));
            label.set_wrap(true);
            label.set_wrap_mode(gtk::pango::WrapMode::WordChar);
            label.set_justify(gtk::Justification::Center);
            label.set_selectable(true);
            label.add_css_class("dim-label");
            body.append(&label);
        }
        let waiting = agent.conversation().loaded_messages().is_some_and(|store| {
            (0..store.n_items()).any(|i| {
                store
                    .item(i)
                    .and_downcast::<crate::ui::models::MessageObject>()
                    .is_some_and(|m| m.with(|m| m.queued).unwrap_or(false))
            })
        });
        if needed && waiting && !agent.conversation().answering() {
            let note = gtk::Label::new(Some(&gettext(
                "Your message waits and is sent once you are signed in.",
            )));
            note.set_wrap(true);
            note.set_justify(gtk::Justification::Center);
            body.append(&note);
        }
        let login_text = imp
            .login
            .borrow()
            .as_ref()
            .map(|l| (l.terminal.clone(), l.command_line.clone()));
        if let Some((terminal, command_line)) = login_text.filter(|_| running) {
            imp.showing_terminal.set(true);
            let page = self.downgrade();
            let (view, cancel) = sign_in_terminal::terminal_box(&terminal, &command_line, move || {
                if let Some(page) = page.upgrade() {
                    if let Some(login) = page.imp().login.borrow_mut().as_mut() {
                        login.cancel();
                    }
                }
            });
            self.imp().buttons.borrow_mut().push(("cancel".into(), cancel));
            body.append(&view);
        } else if let Some(method) = signing.clone() {
            body.append(&self.progress_box(&agent, status.as_ref(), &method));
        } else if let Some(status) = status.as_ref() {
            body.append(&self.methods_group(&agent, status));
        }
        let footer = gtk::Box::new(gtk::Orientation::Horizontal, 12);
        footer.set_halign(gtk::Align::Center);
        if status
            .as_ref()
            .is_some_and(|s| !s.saved_keys.is_empty() || s.gateway_saved)
            && !running
        {
            let forget = crate::ui::a11y::mnemonic_button(&gettext("_Forget Saved Keys"));
            forget.add_css_class("destructive-action");
            forget.set_tooltip_text(Some(&gettext("Remove this agent's keys from the keyring")));
            forget.connect_clicked(glib::clone!(
                #[weak(rename_to = page)]
                self,
                #[weak]
                agent,
                move |_| page.forget_keys(&agent)
            ));
            footer.append(&forget);
        }
        if !running && signing.is_none() {
            let back = crate::ui::a11y::mnemonic_button(&gettext("_Back to Conversation"));
            back.connect_clicked(glib::clone!(
                #[weak(rename_to = page)]
                self,
                move |_| {
                    let imp = page.imp();
                    imp.requested.set(false);
                    imp.dismissed.replace(Some(message.clone()));
                    page.refresh();
                }
            ));
            footer.append(&back);
        }
        if footer.first_child().is_some() {
            body.append(&footer);
        }
        let clamp = adw::Clamp::builder().maximum_size(640).child(&body).build();
        let scroller = gtk::ScrolledWindow::builder()
            .hscrollbar_policy(gtk::PolicyType::Never)
            .vexpand(true)
            .child(&clamp)
            .build();
        adw::prelude::BinExt::set_child(self, Some(&scroller));
        for (name, text) in typed {
            if let Some(e) = imp.entries.borrow().get(&name) {
                e.set_value(&text);
            }
        }
        if focus_was_here {
            // Keep the keyboard on the page: its first button, with the
            // focus ring drawn (a rebuild after a refusal hid it).
            if let Some((_, b)) = imp.buttons.borrow().first() {
                b.grab_focus();
                if let Some(window) = self.root().and_then(|r| r.downcast::<gtk::Window>().ok()) {
                    window.set_focus_visible(true);
                }
            }
        }
    }

    fn methods_group(&self, agent: &AgentObject, status: &AuthStatus) -> gtk::Widget {
        let group = adw::PreferencesGroup::new();
        group.set_title(&gettext("Ways to Sign In"));
        if status.methods.is_empty() {
            group.set_description(Some(&gettext(
                "The agent offers no way to sign in from Parley. Sign in as its documentation says, then restart it.",
            )));
        }
        for method in &status.methods {
            group.add(&sign_in_methods::method_row(self, agent, method));
        }
        group.upcast()
    }

    fn progress_box(&self, agent: &AgentObject, status: Option<&AuthStatus>, method: &str) -> gtk::Widget {
        let name = status
            .and_then(|s| s.methods.iter().find(|m| m.id == method))
            .map(|m| m.name.clone())
            .unwrap_or_else(|| method.to_owned());
        let row = gtk::Box::new(gtk::Orientation::Horizontal, 12);
        row.set_halign(gtk::Align::Center);
        let spinner = gtk::Spinner::new();
        spinner.start();
        crate::ui::a11y::set_label(&spinner, &gettext("Signing in"));
        row.append(&spinner);
        let label = gtk::Label::new(Some(&gettext_f(
            "Signing in with {method}… The agent may open your browser.",
            &[("method", &name)],
        )));
        label.set_wrap(true);
        row.append(&label);
        let cancel = crate::ui::a11y::mnemonic_button(&gettext("_Cancel"));
        cancel.connect_clicked(glib::clone!(
            #[weak]
            agent,
            move |_| agent.sign_in().cancel_sign_in()
        ));
        row.append(&cancel);
        self.imp().buttons.borrow_mut().push(("cancel".into(), cancel));
        row.upcast()
    }

    fn sign_in_with(&self, agent: &AgentObject, method: &str, values: Vec<(String, Secret)>) {
        let title = agent.title();
        agent.sign_in().sign_in(
            method,
            values,
            glib::clone!(
                #[weak(rename_to = page)]
                self,
                move |r: Result<(), String>| match r {
                    Ok(()) => page.signed_in(&title),
                    Err(e) => toast(&page, &e),
                }
            ),
        );
    }

    /// A gateway method's form was sent: checked here first (a bad address
    /// is said at once, and nothing reaches the agent).
    fn sign_in_gateway_with(&self, agent: &AgentObject, method: &str, args: &serde_json::Value) {
        let gateway = match crate::core::types::gateway::Gateway::from_args(method, args) {
            Ok(g) => g,
            Err(why) => return toast(self, &crate::core::auth::AuthError::BadGateway(why).to_string()),
        };
        let title = agent.title();
        agent.sign_in().sign_in_gateway(
            gateway,
            glib::clone!(
                #[weak(rename_to = page)]
                self,
                move |r: Result<(), String>| match r {
                    Ok(()) => page.signed_in(&title),
                    Err(e) => toast(&page, &e),
                }
            ),
        );
    }

    /// A sign-in succeeded: the page gives way (also when it was asked for).
    fn signed_in(&self, title: &str) {
        self.imp().requested.set(false);
        self.refresh();
        // The focus (a terminal's, gone now) goes to the message.
        let _ = self.activate_action("win.back-to-composer", None);
        toast(self, &gettext_f("Signed in to {agent}", &[("agent", title)]));
    }

    fn forget_keys(&self, agent: &AgentObject) {
        agent.sign_in().forget_keys(glib::clone!(
            #[weak(rename_to = page)]
            self,
            move |r: Result<(), String>| match r {
                Ok(()) => toast(&page, &gettext("Saved keys forgotten")),
                Err(e) => toast(&page, &e),
            }
        ));
    }

    fn open_terminal_for(&self, agent: &AgentObject, method: &str) {
        agent.sign_in().login_terminal(
            method,
            glib::clone!(
                #[weak(rename_to = page)]
                self,
                #[weak]
                agent,
                move |r: Result<crate::core::supervisor::LoginTerminal, String>| {
                    let mut login = match r {
                        Ok(l) => l,
                        Err(e) => return toast(&page, &e),
                    };
                    let terminal = Terminal::new();
                    let attached = login
                        .take_terminal()
                        .ok_or_else(|| gettext("the terminal could not be opened"))
                        .and_then(|fd| terminal.attach(fd));
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    match attached {
                        Ok(()) => {
                            page.imp().login.replace(Some(Login {
                                agent: agent.name(),
                                terminal: terminal.clone(),
                                command_line: login.command_line.clone(),
                                cancel: Some(tx),
                            }));
                            page.refresh();
                            terminal.widget().grab_focus();
                        }
                        Err(e) => {
                            // Ended at once (below), which also ends the sign-in.
                            let _ = tx.send(());
                            toast(&page, &e);
                        }
                    }
                    let title = agent.title();
                    agent.sign_in().watch_login(
                        login,
                        rx,
                        glib::clone!(
                            #[weak]
                            page,
                            move |r: Result<(), String>| {
                                // Only this command's view goes (not a newer one's).
                                let mine = page
                                    .imp()
                                    .login
                                    .borrow()
                                    .as_ref()
                                    .is_some_and(|l| l.terminal.widget() == terminal.widget());
                                if mine {
                                    page.imp().login.replace(None);
                                    page.imp().showing_terminal.set(false);
                                }
                                page.refresh();
                                match r {
                                    Ok(()) => page.signed_in(&title),
                                    Err(e) if e == crate::core::auth::AuthError::Cancelled.to_string() => {}
                                    Err(e) => toast(&page, &e),
                                }
                            }
                        ),
                    );
                }
            ),
        );
    }
}

impl MethodHost for SignInPage {
    fn keep_button(&self, id: &str, button: &gtk::Button) {
        self.imp()
            .buttons
            .borrow_mut()
            .push((id.to_owned(), button.clone()));
    }

    fn keep_entry(&self, name: &str, entry: &KeyField) {
        self.imp()
            .entries
            .borrow_mut()
            .insert(name.to_owned(), entry.clone());
    }

    fn sign_in(&self, agent: &AgentObject, method: &str, values: Vec<(String, Secret)>) {
        self.sign_in_with(agent, method, values);
    }

    fn sign_in_gateway(&self, agent: &AgentObject, method: &str, args: &serde_json::Value) {
        self.sign_in_gateway_with(agent, method, args);
    }

    fn open_terminal(&self, agent: &AgentObject, method: &str) {
        self.open_terminal_for(agent, method);
    }
}
