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
use crate::ui::widgets::{
    AgentRow, Composer, ConversationList, ConversationView, PermissionBanner, SignInPage,
};

mod actions;
mod attention;
mod conversations;
mod drafts;
mod header;
mod registry;
mod sidebar;
mod steering;

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
        pub changes_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub permission_banner: TemplateChild<PermissionBanner>,
        #[template_child]
        pub conversation_stack: TemplateChild<gtk::Stack>,
        #[template_child]
        pub conversation_view: TemplateChild<ConversationView>,
        #[template_child]
        pub sign_in_page: TemplateChild<SignInPage>,
        #[template_child]
        pub composer: TemplateChild<Composer>,
        #[template_child]
        pub recent_section: TemplateChild<gio::Menu>,
        #[template_child]
        pub conversation_list: TemplateChild<ConversationList>,
        #[template_child]
        pub find_bar: TemplateChild<gtk::SearchBar>,
        #[template_child]
        pub find_entry: TemplateChild<gtk::SearchEntry>,
        #[template_child]
        pub find_count: TemplateChild<gtk::Label>,
        #[template_child]
        pub find_previous: TemplateChild<gtk::Button>,
        #[template_child]
        pub find_next: TemplateChild<gtk::Button>,
        #[template_child]
        pub read_only_revealer: TemplateChild<gtk::Revealer>,
        #[template_child]
        pub read_only_label: TemplateChild<gtk::Label>,
        #[template_child]
        pub retry_revealer: TemplateChild<gtk::Revealer>,
        #[template_child]
        pub forked_revealer: TemplateChild<gtk::Revealer>,
        #[template_child]
        pub forked_label: TemplateChild<gtk::Label>,
        #[template_child]
        pub stalled_revealer: TemplateChild<gtk::Revealer>,
        #[template_child]
        pub stalled_label: TemplateChild<gtk::Label>,
        #[template_child]
        pub stalled_restart: TemplateChild<gtk::Button>,
        #[template_child]
        pub stalled_cancel: TemplateChild<gtk::Button>,
        #[template_child]
        pub read_only_continue: TemplateChild<gtk::Button>,
        #[template_child]
        pub inbox_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub inbox_count: TemplateChild<gtk::Label>,
        /// The elicitation dialog shown: its agent, the elicitation's id.
        pub elicitation_dialog: RefCell<Option<(String, String, gtk::Window)>>,
        /// Elicitations whose dialog was opened (not opened again by itself).
        pub elicitations_shown: RefCell<std::collections::HashSet<String>>,
        /// Waiting for the message field to be shown, to give it the focus.
        pub composer_map: RefCell<Option<glib::SignalHandlerId>>,
        /// The conversation the composer's text is the draft of: its agent
        /// and its id ('' for a new one).
        pub draft_for: RefCell<Option<(AgentObject, String)>>,
        /// The draft is kept when this fires.
        pub draft_timer: RefCell<Option<glib::SourceId>>,
        /// The shown conversation's draft was read (or typed over): only
        /// then is the composer's text kept as its draft.
        pub draft_read: std::cell::Cell<bool>,
        /// The user was told that the draft is cut (until it fits again).
        pub draft_cut_told: std::cell::Cell<bool>,
        /// The composer's text is being set to a draft (not a change to keep).
        pub draft_loading: std::cell::Cell<bool>,
        /// The find bar's matches (message ids, in order) and which is shown.
        pub find: RefCell<(Vec<String>, usize)>,

        pub model: OnceCell<AppModel>,
        pub selection: OnceCell<gtk::SingleSelection>,
        pub selected: RefCell<Option<String>>,
        /// The selection is being moved with the keyboard in the list.
        pub keyboard_selection: std::cell::Cell<bool>,
        /// The selected agent's handlers (header, announcements).
        pub agent_handlers: RefCell<crate::ui::models::Handlers>,
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
            crate::ui::widgets::wrap_box::WrapBox::ensure_type();
            SignInPage::ensure_type();
            ConversationList::ensure_type();
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
            crate::ui::models::disconnect_all(self.agent_handlers.take());
            self.conversation_view.set_agent(None::<&AgentObject>);
            self.conversation_list.set_agent(None);
            self.sign_in_page.set_agent(None::<&AgentObject>);
            self.permission_banner.set_agent(None::<&AgentObject>);
            self.composer.set_agent(None::<&AgentObject>);
        }
    }
    impl WidgetImpl for ParleyWindow {
        fn realize(&self) {
            self.parent_realize();
            if let Some(model) = self.model.get() {
                model.set_frame_clock(self.obj().frame_clock());
            }
        }

        fn unrealize(&self) {
            // Another window (--new-window) may have taken the model's
            // frames since: then it keeps them.
            if let Some(model) = self.model.get() {
                if model.frame_clock() == self.obj().frame_clock() {
                    model.set_frame_clock(None);
                }
            }
            self.parent_unrealize();
        }
    }
    impl WindowImpl for ParleyWindow {
        fn close_request(&self) -> glib::Propagation {
            self.obj().save_size();
            self.obj().flush_draft();
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
    /// A window with the window settings read here (tests, and windows of
    /// an application that is not Parley's).
    pub fn new(app: &impl IsA<gtk::Application>, model: &AppModel) -> Self {
        Self::with_settings(app, model, crate::ui::settings::settings())
    }

    /// A window that remembers its size in `settings` (the application's).
    pub fn with_settings(
        app: &impl IsA<gtk::Application>,
        model: &AppModel,
        settings: Option<gio::Settings>,
    ) -> Self {
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
        let _ = imp.settings.set(settings);
        win.restore_size();
        win.setup_agents_view(&selection);
        win.setup_actions();
        win.setup_conversations();
        win.setup_registry_actions();
        win.setup_attention();
        win.setup_drafts();
        win.setup_steering();
        imp.sign_in_page.connect_active_notify(glib::clone!(
            #[weak]
            win,
            move |_| win.update_sign_in_page()
        ));
        win.update_sidebar();
        win.refresh_recent();
        // Each agent shows the conversation it had open when Parley quit
        // (its `conversation:switched` brings it to the window).
        let core = model.core().clone();
        crate::ui::runtime::call(async move { core.chat.restore().await }, |_| {});
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
        // Files and pictures dropped on the conversation are attached.
        imp.conversation_view.add_controller(imp.composer.drop_target());
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
        // The empty states' own scroll panes are named as they are titled.
        crate::ui::a11y::for_each_descendant(win.upcast_ref(), &mut |w| {
            if let Some(page) = w.downcast_ref::<adw::StatusPage>() {
                crate::ui::a11y::name_status_page(page);
            }
        });
        crate::ui::a11y::set_label(&*imp.stalled_cancel, &gettext("Cancel the Turn"));
        crate::ui::a11y::set_label(&*imp.stalled_restart, &gettext("Restart the Agent"));
        // GtkSearchBar's own close button has no name ("GtkImage").
        crate::ui::a11y::for_each_descendant(imp.find_bar.upcast_ref(), &mut |w| {
            let closes = w
                .first_child()
                .and_downcast::<gtk::Image>()
                .and_then(|i| i.icon_name())
                .is_some_and(|n| n.contains("close"));
            if w.is::<gtk::Button>() && closes {
                crate::ui::a11y::set_label(w, &gettext("Close the Find Bar"));
            }
        });
        crate::ui::a11y::name_mnemonics(&win);
        win.wrap_banner_labels();
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

    /// The header's "N files changed" button (opens the Changes).
    pub fn changes_button(&self) -> gtk::Button {
        self.imp().changes_button.get()
    }

    /// The conversation header's subtitle (where and how the agent runs,
    /// its helpers at work).
    pub fn conversation_subtitle(&self) -> String {
        self.imp().conversation_title.subtitle().to_string()
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

    // ---- the selected agent ----

    pub fn selected_agent(&self) -> Option<String> {
        self.imp().selected.borrow().clone()
    }

    pub(super) fn show_agent(&self, name: Option<&str>) {
        let imp = self.imp();
        imp.selected.replace(name.map(str::to_owned));
        crate::ui::models::disconnect_all(imp.agent_handlers.take());
        let agent = name.and_then(|n| self.agent(n));
        // Before the view shows the other agent: the place kept is this one's.
        self.show_draft(agent.as_ref());
        imp.conversation_view.set_agent(agent.as_ref());
        imp.conversation_list.set_agent(agent.as_ref());
        imp.find_bar.set_search_mode(false);
        imp.sign_in_page.set_agent(agent.as_ref());
        self.update_sign_in_page();
        imp.permission_banner.set_agent(agent.as_ref());
        imp.composer.set_agent(agent.as_ref());
        let Some(agent) = agent else {
            imp.content_stack.set_visible_child_name("empty");
            imp.conversation_title.set_title(&gettext("Parley"));
            imp.conversation_title.set_subtitle("");
            imp.context_meter.set_visible(false);
            imp.changes_button.set_visible(false);
            return;
        };
        let mut handlers = agent.connect_any_notify(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |agent| {
                win.update_header(agent);
                win.update_read_only(agent);
                win.update_stalled(agent);
                win.update_steering(agent);
            }
        ));
        // Another conversation of the agent: its draft.
        let switched = agent.conversation().connect_notify_local(
            Some("conversation-id"),
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                #[weak]
                agent,
                move |_, _| win.show_draft(Some(&agent))
            ),
        );
        handlers.push((agent.conversation().clone().upcast(), switched));
        // Retry follows the conversation's last message.
        let changed = agent.conversation().connect_conversation_changed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            #[weak]
            agent,
            move |_| win.update_steering(&agent)
        ));
        handlers.push((agent.conversation().clone().upcast(), changed));
        // "2 subagents working", in the header.
        let threads = agent.conversation().subagents();
        let working = threads.connect_working_notify(glib::clone!(
            #[weak(rename_to = win)]
            self,
            #[weak]
            agent,
            move |_| win.update_header(&agent)
        ));
        handlers.push((threads.upcast(), working));
        handlers.extend(crate::ui::announcer::watch(
            &agent,
            &imp.permission_banner,
            &imp.composer,
        ));
        imp.agent_handlers.replace(handlers);
        imp.content_stack.set_visible_child_name("conversation");
        self.update_header(&agent);
        self.update_read_only(&agent);
        self.update_stalled(&agent);
        self.update_steering(&agent);
        self.seen(&agent);
        // Moving through the agents with the arrow keys keeps the focus in
        // the list (Enter then goes to the composer); a click or a selection
        // from elsewhere goes to the composer at once.
        if !imp.keyboard_selection.replace(false) {
            imp.composer.grab_focus();
        }
    }

    /// The sign-in page takes the conversation's place while it is active.
    pub(super) fn update_sign_in_page(&self) {
        let imp = self.imp();
        let page = if imp.sign_in_page.active() {
            "sign-in"
        } else {
            "conversation"
        };
        imp.conversation_stack.set_visible_child_name(page);
    }

    pub fn sign_in_page(&self) -> SignInPage {
        self.imp().sign_in_page.clone()
    }

    /// Whether the conversation's last row is drawn for real and on screen
    /// (for the benchmarks: "the last chunk is on screen").
    pub fn last_row_shown(&self) -> bool {
        self.imp().conversation_view.last_row_shown()
    }
}
