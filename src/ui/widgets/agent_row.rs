//! A row of the Agents sidebar: icon, title, state as the spec shows it,
//! attention marker, ▶/■, and a menu with Restart and Show Logs.

use std::cell::RefCell;

use gtk::prelude::*;
use gtk::subclass::prelude::*;
use gtk::{gio, glib};

use crate::i18n::gettext;
use crate::ui::models::AgentObject;

mod imp {
    use super::*;

    #[derive(Default, gtk::CompositeTemplate)]
    #[template(file = "agent_row.ui")]
    pub struct AgentRow {
        #[template_child]
        pub icon: TemplateChild<gtk::Image>,
        #[template_child]
        pub title: TemplateChild<gtk::Label>,
        #[template_child]
        pub state: TemplateChild<gtk::Label>,
        #[template_child]
        pub update: TemplateChild<gtk::Image>,
        #[template_child]
        pub waiting_count: TemplateChild<gtk::Label>,
        #[template_child]
        pub attention: TemplateChild<gtk::Image>,
        #[template_child]
        pub start_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub stop_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub menu_button: TemplateChild<gtk::MenuButton>,
        pub bound: RefCell<Option<crate::ui::models::Handlers>>,
        /// What the menu was built for (can log out, has saved keys).
        pub menu_shape: std::cell::RefCell<Option<(bool, bool, String)>>,
        /// The agent the row shows, for its menu.
        pub agent: glib::WeakRef<AgentObject>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for AgentRow {
        const NAME: &'static str = "ParleyAgentRow";
        type Type = super::AgentRow;
        type ParentType = gtk::Box;

        fn class_init(klass: &mut Self::Class) {
            klass.bind_template();
        }

        fn instance_init(obj: &glib::subclass::InitializingObject<Self>) {
            obj.init_template();
        }
    }

    impl ObjectImpl for AgentRow {
        fn constructed(&self) {
            self.parent_constructed();
            // The menu is made when it opens, not when the row is bound:
            // a menu button makes its popover as soon as it has a model,
            // and GTK 4.8's list binds up to 200 rows before it knows its
            // height (100 agents took 0.7 s more to the first frame).
            let row = self.obj().downgrade();
            self.menu_button.set_create_popup_func(move |_| {
                if let Some(row) = row.upgrade() {
                    if let Some(agent) = row.imp().agent.upgrade() {
                        row.build_menu(&agent);
                    }
                }
            });
        }
    }
    impl WidgetImpl for AgentRow {}
    impl BoxImpl for AgentRow {}
}

glib::wrapper! {
    pub struct AgentRow(ObjectSubclass<imp::AgentRow>)
        @extends gtk::Box, gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget, gtk::Orientable;
}

impl Default for AgentRow {
    fn default() -> Self {
        Self::new()
    }
}

impl AgentRow {
    pub fn new() -> Self {
        glib::Object::new()
    }

    pub fn bind(&self, agent: &AgentObject) {
        self.unbind();
        let imp = self.imp();
        imp.menu_shape.replace(None);
        imp.agent.set(Some(agent));
        let name = agent.name();
        let target = name.to_variant();
        // The target first: an action name without its target warns.
        imp.start_button.set_action_target_value(Some(&target));
        imp.start_button.set_action_name(Some("win.agent-start"));
        imp.stop_button.set_action_target_value(Some(&target));
        imp.stop_button.set_action_name(Some("win.agent-stop"));
        // The row shows a little of every facet: its status, sign-in,
        // and what waits in its conversation.
        let handlers = agent.connect_any_notify(glib::clone!(
            #[weak(rename_to = row)]
            self,
            move |agent| row.refresh(agent)
        ));
        imp.bound.replace(Some(handlers));
        self.refresh(agent);
    }

    pub fn unbind(&self) {
        if let Some(handlers) = self.imp().bound.take() {
            crate::ui::models::disconnect_all(handlers);
        }
    }

    /// Restart, Show Logs, and the sign-in items the agent offers now.
    fn build_menu(&self, agent: &AgentObject) {
        let imp = self.imp();
        let shape = (
            agent.sign_in().can_logout(),
            agent.sign_in().has_saved_keys(),
            agent.update_available(),
        );
        if imp.menu_shape.borrow().as_ref() == Some(&shape) {
            return;
        }
        imp.menu_shape.replace(Some(shape.clone()));
        let target = agent.name().to_variant();
        let menu = gio::Menu::new();
        let item = |label: &str, action: &str| {
            let item = gio::MenuItem::new(Some(label), None);
            item.set_action_and_target_value(Some(action), Some(&target));
            item
        };
        menu.append_item(&item(&gettext("_Restart"), "win.agent-restart"));
        menu.append_item(&item(&gettext("Show _Logs"), "win.agent-logs"));
        let auth = gio::Menu::new();
        auth.append_item(&item(&gettext("_Sign In…"), "win.agent-sign-in"));
        if shape.0 {
            auth.append_item(&item(&gettext("Sign _Out"), "win.agent-sign-out"));
        }
        if shape.1 {
            auth.append_item(&item(&gettext("_Forget Saved Keys"), "win.agent-forget-keys"));
        }
        menu.append_section(None, &auth);
        let config = gio::Menu::new();
        if !shape.2.is_empty() {
            config.append_item(&item(
                &crate::i18n::gettext_f("_Update to {version}", &[("version", &shape.2)]),
                "win.agent-update",
            ));
        }
        config.append_item(&item(&gettext("Re_move Agent…"), "win.agent-remove"));
        menu.append_section(None, &config);
        imp.menu_button.set_menu_model(Some(&menu));
    }

    fn refresh(&self, agent: &AgentObject) {
        let imp = self.imp();
        let title = agent.title();
        set_agent_icon(&imp.icon, &agent.icon());
        imp.title.set_label(&title);
        let mut shown = agent.shown_as();
        let on_host = agent.on_host();
        if !on_host.is_empty() {
            shown = format!("{shown} · {on_host}");
        }
        imp.state.set_label(&shown);
        let failed = agent.state().status() == crate::ui::models::AgentStatus::Error;
        if failed {
            imp.state.add_css_class("error");
        } else {
            imp.state.remove_css_class("error");
        }
        let mut tooltip = match (failed, agent.description().is_empty()) {
            // The error ends with the agent's last stderr lines: shown, not
            // obeyed (a NUL would also panic on its way into GTK).
            (true, _) => crate::ui::markdown::visible(&agent.state().error()).into_owned(),
            (false, false) => agent.description(),
            (false, true) => String::new(),
        };
        // The agent's own word on who is signed in, where it gave one.
        let account = agent.sign_in().status().and_then(|s| s.account);
        if let Some(account) = account.filter(|_| !failed) {
            let line = crate::i18n::gettext_f("Sign-in: {status}", &[("status", &account.summary())]);
            tooltip = if tooltip.is_empty() {
                line
            } else {
                format!("{tooltip}\n{line}")
            };
        }
        self.set_tooltip_text((!tooltip.is_empty()).then_some(tooltip.as_str()));
        imp.attention
            .set_visible(failed || agent.conversation().waiting());
        imp.attention.set_tooltip_text(Some(&if failed {
            gettext("The agent failed")
        } else {
            gettext("The agent waits for your answer")
        }));
        let running = agent.is_running();
        imp.start_button.set_visible(!running);
        imp.stop_button.set_visible(running);
        let start_label = crate::i18n::gettext_f("Start {agent}", &[("agent", &title)]);
        let stop_label = crate::i18n::gettext_f("Stop {agent}", &[("agent", &title)]);
        crate::ui::a11y::set_label(&*imp.start_button, &start_label);
        crate::ui::a11y::set_label(&*imp.stop_button, &stop_label);
        crate::ui::a11y::set_label(
            &*imp.menu_button,
            &crate::i18n::gettext_f("More for {agent}", &[("agent", &title)]),
        );
        let waiting = agent.waiting_count();
        imp.waiting_count.set_label(&waiting.to_string());
        imp.waiting_count.set_visible(waiting > 0);
        let update = agent.update_available();
        imp.update.set_visible(!update.is_empty());
        let update_text = crate::i18n::gettext_f("Version {version} is available", &[("version", &update)]);
        imp.update.set_tooltip_text(Some(&update_text));
        let mut name = format!("{title}, {shown}");
        if waiting > 0 {
            name.push_str(", ");
            name.push_str(&crate::i18n::fill(
                &crate::i18n::ngettext("{n} waits for you", "{n} wait for you", waiting),
                &[("n", &waiting.to_string())],
            ));
        }
        if !update.is_empty() {
            name.push_str(", ");
            name.push_str(&update_text);
        }
        crate::ui::a11y::set_label(self, &name);
        // The list item around the row is what the arrow keys focus.
        if let Some(item) = self.parent() {
            crate::ui::a11y::set_label(&item, &name);
        }
    }
}

/// An agent's icon: an icon name, or the path of an SVG file (Add Agent
/// saves the registry's as `…-symbolic.svg`, which GTK recolours with the
/// text, as it does symbolic icons of the theme).
pub fn set_agent_icon(image: &gtk::Image, icon: &str) {
    if icon.starts_with('/') {
        image.set_from_gicon(&gio::FileIcon::new(&gio::File::for_path(icon)));
    } else {
        image.set_icon_name(Some(icon));
    }
}
