//! The main window: it only assembles views. The Agents sidebar lists the
//! application model's agents; the selected one's conversation, permission
//! banner and composer are widgets of their own that bind to its
//! `AgentObject`.

use std::cell::{OnceCell, RefCell};

use adw::prelude::*;
use adw::subclass::prelude::*;
use gtk::{gio, glib};

use crate::i18n::{gettext, gettext_f};
use crate::ui::models::{AgentObject, AppModel, Lifecycle};
use crate::ui::widgets::{AgentRow, Composer, ConversationView, PermissionBanner};

#[doc(hidden)]
pub mod imp {
    use super::*;

    #[derive(Default, gtk::CompositeTemplate)]
    #[template(file = "window.ui")]
    pub struct ParleyWindow {
        #[template_child]
        pub toast_overlay: TemplateChild<adw::ToastOverlay>,
        #[template_child]
        pub leaflet: TemplateChild<adw::Leaflet>,
        #[template_child]
        pub sidebar: TemplateChild<gtk::Box>,
        #[template_child]
        pub content: TemplateChild<gtk::Box>,
        #[template_child]
        pub back_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub sidebar_stack: TemplateChild<gtk::Stack>,
        #[template_child]
        pub agents_view: TemplateChild<gtk::ListView>,
        #[template_child]
        pub content_stack: TemplateChild<gtk::Stack>,
        #[template_child]
        pub conversation_title: TemplateChild<adw::WindowTitle>,
        #[template_child]
        pub context_meter: TemplateChild<gtk::Label>,
        #[template_child]
        pub permission_banner: TemplateChild<PermissionBanner>,
        #[template_child]
        pub conversation_view: TemplateChild<ConversationView>,
        #[template_child]
        pub composer: TemplateChild<Composer>,
        #[template_child]
        pub recent_section: TemplateChild<gio::Menu>,

        pub model: OnceCell<AppModel>,
        pub selection: OnceCell<gtk::SingleSelection>,
        pub selected: RefCell<Option<String>>,
        /// The selection is being moved with the keyboard in the list.
        pub keyboard_selection: std::cell::Cell<bool>,
        /// The selected agent's handlers (header, announcements).
        pub agent_handlers: RefCell<Vec<(AgentObject, glib::SignalHandlerId)>>,
        pub settings: OnceCell<Option<gio::Settings>>,
        /// The configuration editor, while it is open.
        pub editor: RefCell<std::rc::Weak<crate::ui::widgets::config_editor::Editor>>,
        /// The file chooser, until it answers.
        pub file_chooser: RefCell<Option<gtk::FileChooserNative>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for ParleyWindow {
        const NAME: &'static str = "ParleyWindow";
        type Type = super::ParleyWindow;
        type ParentType = adw::ApplicationWindow;

        fn class_init(klass: &mut Self::Class) {
            AgentRow::ensure_type();
            PermissionBanner::ensure_type();
            ConversationView::ensure_type();
            Composer::ensure_type();
            klass.bind_template();
        }

        fn instance_init(obj: &glib::subclass::InitializingObject<Self>) {
            obj.init_template();
        }
    }

    impl ObjectImpl for ParleyWindow {
        fn dispose(&self) {
            // The agents outlive a closed window (--new-window): its views
            // let go of them.
            for (agent, id) in self.agent_handlers.take() {
                agent.disconnect(id);
            }
            self.conversation_view.set_agent(None::<&AgentObject>);
            self.permission_banner.set_agent(None::<&AgentObject>);
            self.composer.set_agent(None::<&AgentObject>);
        }
    }
    impl WidgetImpl for ParleyWindow {}
    impl WindowImpl for ParleyWindow {
        fn close_request(&self) -> glib::Propagation {
            self.obj().save_size();
            self.parent_close_request()
        }
    }
    impl ApplicationWindowImpl for ParleyWindow {}
    impl AdwApplicationWindowImpl for ParleyWindow {}
}

glib::wrapper! {
    pub struct ParleyWindow(ObjectSubclass<imp::ParleyWindow>)
        @extends adw::ApplicationWindow, gtk::ApplicationWindow, gtk::Window, gtk::Widget,
        @implements gio::ActionGroup, gio::ActionMap, gtk::Buildable,
                    gtk::ConstraintTarget, gtk::Native, gtk::Root, gtk::ShortcutManager;
}

impl ParleyWindow {
    pub fn new(app: &impl IsA<gtk::Application>, model: &AppModel) -> Self {
        let win: Self = glib::Object::builder().property("application", app).build();
        let imp = win.imp();
        let _ = imp.model.set(model.clone());
        // Made empty, then given the agents: created over a full list, it
        // would select the first one on its own.
        let selection = gtk::SingleSelection::new(None::<gio::ListStore>);
        selection.set_autoselect(false);
        selection.set_can_unselect(true);
        selection.set_model(Some(&model.agents()));
        let _ = imp.selection.set(selection.clone());
        let _ = imp.settings.set(crate::ui::settings::settings());
        win.restore_size();
        win.setup_agents_view(&selection);
        win.setup_actions();
        win.update_sidebar();
        win.refresh_recent();
        model.agents().connect_items_changed(glib::clone!(
            #[weak]
            win,
            move |_, _, _, _| win.agents_changed()
        ));
        model.connect_config_changed(glib::clone!(
            #[weak]
            win,
            move |_, valid, problem| {
                win.refresh_recent();
                if !valid && !problem.is_empty() {
                    win.toast(&gettext_f(
                        "The configuration has problems and was not applied: {problem}",
                        &[("problem", problem)],
                    ));
                }
            }
        ));
        imp.leaflet.connect_folded_notify(glib::clone!(
            #[weak]
            win,
            move |_| {
                if let Some(agent) = win.selected_agent().and_then(|n| win.agent(&n)) {
                    win.update_header(&agent);
                }
            }
        ));
        imp.back_button.connect_clicked(glib::clone!(
            #[weak]
            win,
            move |_| {
                win.imp().leaflet.navigate(adw::NavigationDirection::Back);
            }
        ));
        let shortcuts = gtk::Builder::from_string(include_str!("shortcuts.ui"));
        if let Some(help) = shortcuts.object::<gtk::ShortcutsWindow>("help_overlay") {
            win.set_help_overlay(Some(&help));
        }
        win
    }

    pub fn model(&self) -> &AppModel {
        self.imp()
            .model
            .get()
            .unwrap_or_else(|| unreachable!("the model is set in new()"))
    }

    pub fn core(&self) -> &crate::core::services::Core {
        self.model().core()
    }

    /// Opens the configuration editor, or brings the open one forward (of
    /// any window: two editors on one file would overwrite each other).
    pub fn edit_config(&self) {
        let windows = self
            .application()
            .map(|app| app.windows())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|w| w.downcast::<ParleyWindow>().ok());
        if let Some(editor) = std::iter::once(self.clone())
            .chain(windows)
            .find_map(|w| w.config_editor())
        {
            editor.window().present();
            return;
        }
        if let Some(editor) = crate::ui::widgets::config_editor::show(self, self.model()) {
            self.imp().editor.replace(std::rc::Rc::downgrade(&editor));
        }
    }

    /// The open configuration editor.
    pub fn config_editor(&self) -> Option<std::rc::Rc<crate::ui::widgets::config_editor::Editor>> {
        self.imp()
            .editor
            .borrow()
            .upgrade()
            .filter(|e| e.window().is_visible())
    }

    /// Keeps the native file chooser alive until it answers.
    pub fn keep_file_chooser(&self, chooser: gtk::FileChooserNative) {
        chooser.connect_response(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                win.imp().file_chooser.take();
            }
        ));
        self.imp().file_chooser.replace(Some(chooser));
    }

    pub fn toast(&self, text: &str) {
        let toast = adw::Toast::new(&crate::ui::markdown::escape(text));
        toast.set_timeout(6);
        self.imp().toast_overlay.add_toast(toast);
        // Toasts are not read out by GTK 4.8 on their own.
        crate::ui::a11y::announce(self, text, crate::ui::a11y::Priority::Medium);
    }

    fn restore_size(&self) {
        if let Some(Some(s)) = self.imp().settings.get() {
            self.set_default_size(s.int("window-width"), s.int("window-height"));
            if s.boolean("is-maximized") {
                self.maximize();
            }
        }
    }

    fn save_size(&self) {
        if let Some(Some(s)) = self.imp().settings.get() {
            let (w, h) = self.default_size();
            let _ = s.set_int("window-width", w);
            let _ = s.set_int("window-height", h);
            let _ = s.set_boolean("is-maximized", self.is_maximized());
        }
    }

    /// The views of the selected agent.
    pub fn permission_banner(&self) -> PermissionBanner {
        self.imp().permission_banner.get()
    }

    pub fn conversation_view(&self) -> ConversationView {
        self.imp().conversation_view.get()
    }

    pub fn composer(&self) -> Composer {
        self.imp().composer.get()
    }

    /// Which page the sidebar shows: "empty" or "list".
    pub fn sidebar_page(&self) -> String {
        self.imp()
            .sidebar_stack
            .visible_child_name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    }

    /// The sidebar (for tests reading what it shows).
    pub fn sidebar(&self) -> gtk::Widget {
        self.imp().sidebar.get().upcast()
    }

    /// Which page the content shows: "empty" or "conversation".
    pub fn content_page(&self) -> String {
        self.imp()
            .content_stack
            .visible_child_name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    }

    // ---- agents ----

    pub fn agent(&self, name: &str) -> Option<AgentObject> {
        self.model().agent(name)
    }

    fn selection(&self) -> &gtk::SingleSelection {
        self.imp()
            .selection
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// The agent list changed: the selection follows the selected agent by
    /// name, or goes when it was removed.
    fn agents_changed(&self) {
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

    fn update_sidebar(&self) {
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

    fn setup_agents_view(&self, selection: &gtk::SingleSelection) {
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

    // ---- the selected agent ----

    pub fn selected_agent(&self) -> Option<String> {
        self.imp().selected.borrow().clone()
    }

    fn show_agent(&self, name: Option<&str>) {
        let imp = self.imp();
        imp.selected.replace(name.map(str::to_owned));
        for (agent, id) in imp.agent_handlers.take() {
            agent.disconnect(id);
        }
        let agent = name.and_then(|n| self.agent(n));
        imp.conversation_view.set_agent(agent.as_ref());
        imp.permission_banner.set_agent(agent.as_ref());
        imp.composer.set_agent(agent.as_ref());
        let Some(agent) = agent else {
            imp.content_stack.set_visible_child_name("empty");
            imp.conversation_title.set_title(&gettext("Parley"));
            imp.conversation_title.set_subtitle("");
            imp.context_meter.set_visible(false);
            return;
        };
        let id = agent.connect_notify_local(
            None,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |agent, _| win.update_header(agent)
            ),
        );
        let mut handlers = vec![(agent.clone(), id)];
        handlers.extend(crate::ui::announcer::watch(
            &agent,
            &imp.permission_banner,
            &imp.composer,
        ));
        imp.agent_handlers.replace(handlers);
        imp.content_stack.set_visible_child_name("conversation");
        self.update_header(&agent);
        // Moving through the agents with the arrow keys keeps the focus in
        // the list (Enter then goes to the composer); a click or a selection
        // from elsewhere goes to the composer at once.
        if !imp.keyboard_selection.replace(false) {
            imp.composer.grab_focus();
        }
    }

    /// Title, state and context meter of the selected agent.
    fn update_header(&self, agent: &AgentObject) {
        let imp = self.imp();
        imp.conversation_title.set_title(&agent.title());
        imp.conversation_title.set_subtitle(&agent.shown_as());
        let (used, size) = (agent.usage_used(), agent.usage_size());
        // A compact "42 %" that folds away with the sidebar at phone width.
        imp.context_meter
            .set_visible(size > 0 && !imp.leaflet.is_folded());
        if size > 0 {
            let percent = (used as f64 * 100.0 / size as f64).clamp(0.0, 100.0).round();
            imp.context_meter.set_label(&format!("{percent} %"));
            let text = gettext_f(
                "Context: {used} of {size} tokens",
                &[("used", &used.to_string()), ("size", &size.to_string())],
            );
            imp.context_meter.set_tooltip_text(Some(&text));
            crate::ui::a11y::set_label(&*imp.context_meter, &text);
        }
    }

    /// Whether the conversation's last row is drawn for real and on screen
    /// (for the benchmarks: "the last chunk is on screen").
    pub fn last_row_shown(&self) -> bool {
        self.imp().conversation_view.last_row_shown()
    }

    // ---- actions ----

    fn agent_action(&self, name: &str, run: impl Fn(&ParleyWindow, AgentObject) + 'static) {
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

    fn setup_actions(&self) {
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
    }

    pub fn refresh_recent(&self) {
        let section = &self.imp().recent_section;
        section.remove_all();
        for path in self.core().recent() {
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
