//! The banner above the conversation that asks the user about the selected
//! agent's oldest pending permission request. It binds to the agent's
//! permission list; answering goes through the agent object, and an error
//! becomes a toast through the `win.toast` action.

use std::cell::RefCell;

use gtk::glib;
use gtk::prelude::*;
use gtk::subclass::prelude::*;

use crate::i18n::gettext_f;
use crate::ui::models::{AgentObject, PermissionObject};

mod imp {
    use super::*;

    #[derive(Default, gtk::CompositeTemplate, glib::Properties)]
    #[template(file = "permission_banner.ui")]
    #[properties(wrapper_type = super::PermissionBanner)]
    pub struct PermissionBanner {
        #[template_child]
        pub revealer: TemplateChild<gtk::Revealer>,
        #[template_child]
        pub label: TemplateChild<gtk::Label>,
        #[template_child]
        pub diffs_scroller: TemplateChild<gtk::ScrolledWindow>,
        #[template_child]
        pub diffs: TemplateChild<gtk::Box>,
        #[template_child]
        pub buttons: TemplateChild<gtk::FlowBox>,
        /// The agent whose requests are shown.
        #[property(get, set = Self::set_agent, nullable)]
        pub agent: RefCell<Option<AgentObject>>,
        pub handler: RefCell<Option<(gtk::gio::ListStore, glib::SignalHandlerId)>>,
    }

    impl PermissionBanner {
        fn set_agent(&self, agent: Option<AgentObject>) {
            if let Some((list, id)) = self.handler.take() {
                list.disconnect(id);
            }
            if let Some(a) = &agent {
                let list = a.conversation().permissions();
                let id = list.connect_items_changed(glib::clone!(
                    #[weak(rename_to = banner)]
                    self.obj(),
                    move |_, _, _, _| banner.update()
                ));
                self.handler.replace(Some((list, id)));
            }
            self.agent.replace(agent);
            self.obj().update();
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for PermissionBanner {
        const NAME: &'static str = "ParleyPermissionBanner";
        type Type = super::PermissionBanner;
        type ParentType = gtk::Box;

        fn class_init(klass: &mut Self::Class) {
            klass.bind_template();
        }

        fn instance_init(obj: &glib::subclass::InitializingObject<Self>) {
            obj.init_template();
        }
    }

    #[glib::derived_properties]
    impl ObjectImpl for PermissionBanner {
        fn constructed(&self) {
            self.parent_constructed();
            self.obj().setup_shortcuts();
        }
    }
    impl WidgetImpl for PermissionBanner {}
    impl BoxImpl for PermissionBanner {}
}

glib::wrapper! {
    pub struct PermissionBanner(ObjectSubclass<imp::PermissionBanner>)
        @extends gtk::Box, gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget, gtk::Orientable;
}

impl PermissionBanner {
    /// The request shown, if any.
    pub fn request(&self) -> Option<PermissionObject> {
        self.agent()?.conversation().permissions().item(0).and_downcast()
    }

    pub fn is_shown(&self) -> bool {
        self.imp().revealer.reveals_child()
    }

    pub fn is_revealed(&self) -> bool {
        self.imp().revealer.is_child_revealed()
    }

    /// The text the banner shows (for tests and announcements).
    pub fn text(&self) -> String {
        self.imp().label.text().to_string()
    }

    /// The titles of the diffs the banner shows ("Changes to …").
    pub fn diff_titles(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut child = self.imp().diffs.first_child();
        while let Some(c) = child {
            if let Some(e) = c.downcast_ref::<gtk::Expander>() {
                out.push(e.label().map(|l| l.to_string()).unwrap_or_default());
            }
            child = c.next_sibling();
        }
        out
    }

    /// The option buttons, in order.
    pub fn option_buttons(&self) -> Vec<gtk::Button> {
        let mut out = Vec::new();
        let mut child = self.imp().buttons.first_child();
        while let Some(c) = child {
            if let Some(b) = c.first_child().and_downcast::<gtk::Button>() {
                out.push(b);
            }
            child = c.next_sibling();
        }
        out
    }

    /// Alt+1 … Alt+4 answer with the first to fourth option, from anywhere
    /// in the window.
    fn setup_shortcuts(&self) {
        let controller = gtk::ShortcutController::new();
        controller.set_scope(gtk::ShortcutScope::Managed);
        for n in 1..=4usize {
            let weak = self.downgrade();
            let action = gtk::CallbackAction::new(move |_, _| {
                let Some(banner) = weak.upgrade() else {
                    return glib::Propagation::Proceed;
                };
                match banner.option_buttons().get(n - 1).filter(|_| banner.is_shown()) {
                    Some(button) => {
                        button.emit_clicked();
                        glib::Propagation::Stop
                    }
                    None => glib::Propagation::Proceed,
                }
            });
            let trigger = gtk::ShortcutTrigger::parse_string(&format!("<Alt>{n}"));
            controller.add_shortcut(gtk::Shortcut::new(trigger, Some(action)));
        }
        self.add_controller(controller);
    }

    fn update(&self) {
        let imp = self.imp();
        // A focused option is about to go: focus goes to the composer first
        // (never to a removed button, or an unnamed row off screen), and to
        // the next request's first option if one follows.
        let had_focus = self
            .root()
            .and_then(|r| r.focus())
            .is_some_and(|f| f.is_ancestor(self));
        if had_focus {
            let _ = self.activate_action("win.focus-composer", None);
        }
        while let Some(child) = imp.buttons.first_child() {
            imp.buttons.remove(&child);
        }
        let Some(object) = self.request() else {
            imp.revealer.set_reveal_child(false);
            return;
        };
        let request = object.request();
        // The agent's text: control and bidi characters shown, not obeyed
        // (a NUL would also panic on its way into GTK).
        let title = crate::ui::markdown::escape(&request.tool_call.title);
        let mut text = match &request.subagent {
            Some(a) => gettext_f(
                "<b>Its subagent {agent} asks to run a tool:</b> {title}",
                &[
                    ("agent", &crate::ui::markdown::escape(&a.title)),
                    ("title", &title),
                ],
            ),
            None => gettext_f(
                "<b>The agent asks to run a tool:</b> {title}",
                &[("title", &title)],
            ),
        };
        if request.rejections > 0 {
            text.push_str(&glib::markup_escape_text(&format!(
                " ({})",
                gettext_f(
                    "refused {n} time(s) in this turn",
                    &[("n", &request.rejections.to_string())]
                )
            )));
        }
        imp.label.set_markup(&text);
        while let Some(child) = imp.diffs.first_child() {
            imp.diffs.remove(&child);
        }
        for d in &request.tool_call.diffs {
            imp.diffs.append(&super::message_parts::diff_view(d));
        }
        imp.diffs_scroller
            .set_visible(!request.tool_call.diffs.is_empty());
        for (i, option) in request.options.iter().enumerate() {
            let button = gtk::Button::with_label(&crate::ui::markdown::visible(&option.name));
            if i < 4 {
                button.set_tooltip_text(Some(&format!("Alt+{}", i + 1)));
            }
            if option.allows() {
                button.add_css_class("suggested-action");
            } else {
                button.add_css_class("destructive-action");
            }
            let (id, option_id) = (request.id.clone(), option.option_id.clone());
            button.connect_clicked(glib::clone!(
                #[weak(rename_to = banner)]
                self,
                move |_| banner.answer(&id, &option_id)
            ));
            imp.buttons.append(&button);
            // The button takes the focus, not the flow box's child around it.
            if let Some(child) = button.parent() {
                child.set_focusable(false);
            }
        }
        imp.revealer.set_reveal_child(true);
        if had_focus {
            if let Some(first) = self.option_buttons().first() {
                first.grab_focus();
            }
        }
    }

    fn answer(&self, id: &str, option_id: &str) {
        let Some(agent) = self.agent() else { return };
        // An "always" answer lasts as long as the agent's process: the
        // window offers to keep it as a rule.
        let always = (0..agent.conversation().permissions().n_items())
            .filter_map(|i| {
                agent
                    .conversation()
                    .permissions()
                    .item(i)
                    .and_downcast::<crate::ui::models::PermissionObject>()
            })
            .map(|p| p.request().clone())
            .find(|r| r.id == id)
            .and_then(|r| {
                let option = r.options.iter().find(|o| o.option_id == option_id)?;
                use agent_client_protocol_schema::v1::PermissionOptionKind as K;
                let allow = match option.kind {
                    K::AllowAlways => true,
                    K::RejectAlways => false,
                    _ => return None,
                };
                let paths: Vec<String> = r
                    .tool_call
                    .locations
                    .iter()
                    .map(|l| l.path.clone())
                    .chain(r.tool_call.diffs.iter().map(|d| d.path.clone()))
                    .collect();
                Some(serde_json::json!({
                    "agent": agent.name(),
                    "kind": if r.tool_call.kind_given {
                        crate::core::config::rules::kind_name(r.tool_call.kind)
                    } else {
                        "other"
                    },
                    "paths": paths,
                    "title": r.tool_call.title,
                    "allow": allow,
                }))
            });
        if let Some(offer) = always {
            let _ = self.activate_action("win.offer-permission-rule", Some(&offer.to_string().to_variant()));
        }
        agent.conversation().answer_permission(
            id,
            option_id,
            glib::clone!(
                #[weak(rename_to = banner)]
                self,
                move |r: Result<(), String>| {
                    if let Err(e) = r {
                        let _ = banner.activate_action("win.toast", Some(&e.to_variant()));
                    }
                }
            ),
        );
    }
}
