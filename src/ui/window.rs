//! The main window: the Agents sidebar and the selected agent's
//! conversation, bound to the models the bridge fills.

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, VecDeque};

use adw::prelude::*;
use adw::subclass::prelude::*;
use gtk::{gdk, gio, glib};

use crate::core::events::PermissionRequest;
use crate::core::services::Core;
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::{AgentObject, MessageObject, RowObject};
use crate::ui::runtime;
use crate::ui::widgets::{AgentRow, MessageRow};

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
        pub context_meter: TemplateChild<gtk::LevelBar>,
        #[template_child]
        pub permission_revealer: TemplateChild<gtk::Revealer>,
        #[template_child]
        pub permission_label: TemplateChild<gtk::Label>,
        #[template_child]
        pub permission_buttons: TemplateChild<gtk::Box>,
        #[template_child]
        pub messages_stack: TemplateChild<gtk::Stack>,
        #[template_child]
        pub messages_scroller: TemplateChild<gtk::ScrolledWindow>,
        #[template_child]
        pub messages_view: TemplateChild<gtk::ListView>,
        #[template_child]
        pub composer_text: TemplateChild<gtk::TextView>,
        #[template_child]
        pub send_button: TemplateChild<gtk::Button>,
        #[template_child]
        pub composer: TemplateChild<gtk::Box>,
        #[template_child]
        pub recent_section: TemplateChild<gio::Menu>,

        pub core: OnceCell<Core>,
        pub agents: OnceCell<gio::ListStore>,
        pub selection: OnceCell<gtk::SingleSelection>,
        pub conversations: RefCell<HashMap<String, gio::ListStore>>,
        pub permissions: RefCell<HashMap<String, Vec<PermissionRequest>>>,
        pub logs: RefCell<HashMap<String, VecDeque<String>>>,
        pub selected: RefCell<Option<String>>,
        pub stick_to_bottom: std::cell::Cell<bool>,
        /// Rows on screen wait to be revealed (`reveal_on_layout`).
        pub reveal_pending: std::cell::Cell<bool>,
        /// A scroll to the end waits for the list's allocation to end.
        pub scroll_pending: std::cell::Cell<bool>,
        pub reveal_handler: RefCell<Option<(gtk::gdk::FrameClock, glib::SignalHandlerId)>>,
        pub settings: OnceCell<Option<gio::Settings>>,
        pub completion: OnceCell<std::rc::Rc<crate::ui::widgets::slash_completion::SlashCompletion>>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for ParleyWindow {
        const NAME: &'static str = "ParleyWindow";
        type Type = super::ParleyWindow;
        type ParentType = adw::ApplicationWindow;

        fn class_init(klass: &mut Self::Class) {
            AgentRow::ensure_type();
            klass.bind_template();
        }

        fn instance_init(obj: &glib::subclass::InitializingObject<Self>) {
            obj.init_template();
        }
    }

    impl ObjectImpl for ParleyWindow {}
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
    pub fn new(app: &adw::Application, core: Core) -> Self {
        let win: Self = glib::Object::builder().property("application", app).build();
        let imp = win.imp();
        let _ = imp.core.set(core);
        let store = gio::ListStore::new::<AgentObject>();
        let selection = gtk::SingleSelection::new(Some(store.clone()));
        selection.set_autoselect(false);
        selection.set_can_unselect(true);
        let _ = imp.agents.set(store);
        let _ = imp.selection.set(selection.clone());
        let _ = imp.settings.set(crate::ui::application::settings());
        imp.stick_to_bottom.set(true);
        win.restore_size();
        win.setup_agents_view(&selection);
        win.setup_messages_view();
        win.setup_composer();
        win.setup_actions();
        win.refresh_agents();
        win.refresh_recent();
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

    pub fn core(&self) -> &Core {
        self.imp()
            .core
            .get()
            .unwrap_or_else(|| unreachable!("the core is set in new()"))
    }

    fn agents(&self) -> &gio::ListStore {
        self.imp()
            .agents
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    pub fn toast(&self, text: &str) {
        let toast = adw::Toast::new(&glib::markup_escape_text(text));
        toast.set_timeout(6);
        self.imp().toast_overlay.add_toast(toast);
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

    // ---- agents ----

    pub fn agent(&self, name: &str) -> Option<AgentObject> {
        let store = self.agents();
        (0..store.n_items())
            .filter_map(|i| store.item(i).and_downcast::<AgentObject>())
            .find(|a| a.name() == name)
    }

    /// Re-reads `AgentService.List` into the sidebar, keeping objects (and
    /// the selection) of agents that stay.
    pub fn refresh_agents(&self) {
        let list = self.core().agent_list();
        let store = self.agents();
        let current: Vec<String> = (0..store.n_items())
            .filter_map(|i| store.item(i).and_downcast::<AgentObject>())
            .map(|a| a.name())
            .collect();
        let names: Vec<String> = list.iter().map(|a| a.name.clone()).collect();
        if current == names {
            for (i, info) in list.iter().enumerate() {
                if let Some(a) = store.item(i as u32).and_downcast::<AgentObject>() {
                    a.update(info);
                }
            }
        } else {
            let objects: Vec<AgentObject> = list
                .iter()
                .map(|info| match self.agent(&info.name) {
                    Some(a) => {
                        a.update(info);
                        a
                    }
                    None => AgentObject::new(info),
                })
                .collect();
            store.splice(0, store.n_items(), &objects);
            let selected = self.imp().selected.borrow().clone();
            if let Some(name) = selected {
                match names.iter().position(|n| *n == name) {
                    Some(i) => self.selection().set_selected(i as u32),
                    None => self.show_agent(None),
                }
            }
        }
        self.imp()
            .sidebar_stack
            .set_visible_child_name(if names.is_empty() { "empty" } else { "list" });
    }

    fn selection(&self) -> &gtk::SingleSelection {
        self.imp()
            .selection
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// Selects an agent by name and shows its conversation.
    pub fn select_agent(&self, name: &str) {
        let store = self.agents();
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
        selection.connect_selected_item_notify(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |sel| {
                let name = sel
                    .selected_item()
                    .and_downcast::<AgentObject>()
                    .map(|a| a.name());
                win.show_agent(name.as_deref());
                if name.is_some() {
                    win.imp().leaflet.navigate(adw::NavigationDirection::Forward);
                }
            }
        ));
    }

    // ---- conversation ----

    /// The message list of an agent, loaded from `Conversation(agent)` the
    /// first time it is needed.
    pub fn conversation(&self, agent: &str) -> gio::ListStore {
        if let Some(s) = self.imp().conversations.borrow().get(agent) {
            return s.clone();
        }
        let store = gio::ListStore::new::<MessageObject>();
        if let Ok(conv) = self.core().conversation(agent) {
            let objects: Vec<MessageObject> = conv.messages.into_iter().map(MessageObject::new).collect();
            store.splice(0, 0, &objects);
            self.imp()
                .permissions
                .borrow_mut()
                .insert(agent.to_owned(), conv.permissions);
        }
        self.imp()
            .conversations
            .borrow_mut()
            .insert(agent.to_owned(), store.clone());
        store
    }

    /// The message list of an agent if it was ever shown.
    pub fn imp_conversation(&self, agent: &str) -> Option<gio::ListStore> {
        self.imp().conversations.borrow().get(agent).cloned()
    }

    /// Forgets the models of every conversation (another configuration).
    pub fn forget_conversations(&self) {
        self.imp().conversations.borrow_mut().clear();
        self.imp().permissions.borrow_mut().clear();
        let selected = self.imp().selected.borrow().clone();
        self.show_agent(selected.as_deref());
    }

    pub fn selected_agent(&self) -> Option<String> {
        self.imp().selected.borrow().clone()
    }

    fn show_agent(&self, name: Option<&str>) {
        let imp = self.imp();
        imp.selected.replace(name.map(str::to_owned));
        let Some(name) = name else {
            imp.content_stack.set_visible_child_name("empty");
            imp.conversation_title.set_title(&gettext("Parley"));
            imp.conversation_title.set_subtitle("");
            imp.context_meter.set_visible(false);
            return;
        };
        let store = self.conversation(name);
        // The list shows rows, several per long message (see `RowObject`).
        let rows = gtk::MapListModel::new(Some(store), |m| {
            m.downcast_ref::<MessageObject>()
                .map(|m| m.rows())
                .unwrap_or_else(gio::ListStore::new::<RowObject>)
                .upcast()
        });
        let flat = gtk::FlattenListModel::new(Some(rows));
        imp.messages_view
            .set_model(Some(&gtk::NoSelection::new(Some(flat))));
        imp.content_stack.set_visible_child_name("conversation");
        imp.stick_to_bottom.set(true);
        self.update_header();
        self.update_messages_page();
        self.update_permission_banner();
        self.update_composer();
        self.scroll_to_bottom();
        imp.composer_text.grab_focus();
    }

    pub fn update_messages_page(&self) {
        let Some(name) = self.selected_agent() else { return };
        let n = self.conversation(&name).n_items();
        self.imp()
            .messages_stack
            .set_visible_child_name(if n == 0 { "empty" } else { "messages" });
    }

    /// Title, state and context meter of the selected agent.
    pub fn update_header(&self) {
        let imp = self.imp();
        let Some(agent) = self.selected_agent().and_then(|n| self.agent(&n)) else {
            return;
        };
        imp.conversation_title.set_title(&agent.title());
        imp.conversation_title.set_subtitle(&agent.shown_as());
        let (used, size) = (agent.usage_used(), agent.usage_size());
        imp.context_meter.set_visible(size > 0);
        if size > 0 {
            imp.context_meter
                .set_value((used as f64 / size as f64).clamp(0.0, 1.0));
            imp.context_meter.set_tooltip_text(Some(&gettext_f(
                "Context: {used} of {size} tokens",
                &[("used", &used.to_string()), ("size", &size.to_string())],
            )));
        }
    }

    fn setup_messages_view(&self) {
        let factory = gtk::SignalListItemFactory::new();
        factory.connect_setup(|_, item| {
            if let Some(item) = item.downcast_ref::<gtk::ListItem>() {
                item.set_activatable(false);
                item.set_child(Some(&MessageRow::new()));
            }
        });
        factory.connect_bind(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, item| {
                let Some(item) = item.downcast_ref::<gtk::ListItem>() else {
                    return;
                };
                if let (Some(widget), Some(row)) = (
                    item.child().and_downcast::<MessageRow>(),
                    item.item().and_downcast::<RowObject>(),
                ) {
                    let agent = row
                        .message()
                        .and_then(|m| m.with(|m| m.agent.clone()))
                        .unwrap_or_default();
                    let title = win.agent(&agent).map(|a| a.title()).unwrap_or(agent);
                    widget.bind(&row, &title);
                }
            }
        ));
        factory.connect_unbind(|_, item| {
            let Some(item) = item.downcast_ref::<gtk::ListItem>() else {
                return;
            };
            if let Some(row) = item.child().and_downcast::<MessageRow>() {
                row.unbind();
            }
        });
        let imp = self.imp();
        imp.messages_view.set_factory(Some(&factory));
        // After each layout, stand-in rows that came on screen are drawn
        // for real before the next frame (see `reveal_on_layout`).
        imp.messages_view.connect_realize(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |view| {
                let Some(clock) = view.frame_clock() else { return };
                let weak = win.downgrade();
                // Connected "after": the window's own handler, which
                // allocates the rows, has run.
                let handler = clock.connect_local("layout", true, move |_| {
                    if let Some(win) = weak.upgrade() {
                        win.reveal_on_layout();
                    }
                    None
                });
                win.imp().reveal_handler.replace(Some((clock, handler)));
            }
        ));
        imp.messages_view.connect_unrealize(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| {
                if let Some((clock, handler)) = win.imp().reveal_handler.take() {
                    clock.disconnect(handler);
                }
            }
        ));
        let adj = imp.messages_scroller.vadjustment();
        adj.connect_value_changed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |a| {
                if a.value() + a.page_size() >= a.upper() - 48.0 {
                    win.imp().stick_to_bottom.set(true);
                }
            }
        ));
        // Only the user stops the following: the list view itself moves
        // the value when rows above the visible ones change height, which
        // is no reason to stop showing the end of a stream.
        let scroll = gtk::EventControllerScroll::new(gtk::EventControllerScrollFlags::VERTICAL);
        scroll.set_propagation_phase(gtk::PropagationPhase::Capture);
        scroll.connect_scroll(glib::clone!(
            #[weak(rename_to = win)]
            self,
            #[upgrade_or]
            glib::Propagation::Proceed,
            move |_, _, dy| {
                if dy < 0.0 {
                    win.imp().stick_to_bottom.set(false);
                }
                glib::Propagation::Proceed
            }
        ));
        imp.messages_scroller.add_controller(scroll);
        imp.messages_scroller.connect_scroll_child(glib::clone!(
            #[weak(rename_to = win)]
            self,
            #[upgrade_or]
            false,
            move |_, kind, _| {
                use gtk::ScrollType::*;
                if matches!(kind, StepUp | PageUp | Start | StepBackward | PageBackward) {
                    win.imp().stick_to_bottom.set(false);
                }
                false
            }
        ));
        let grab = gtk::GestureClick::new();
        grab.set_propagation_phase(gtk::PropagationPhase::Capture);
        grab.connect_pressed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _, _, _| win.imp().stick_to_bottom.set(false)
        ));
        imp.messages_scroller.vscrollbar().add_controller(grab);
        // The list view changes its adjustment while it allocates, with its
        // own value-changed handler blocked: a value set from here would be
        // lost to it (it would keep showing the old rows), so the scroll
        // waits for the allocation to end.
        adj.connect_changed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| {
                let imp = win.imp();
                if imp.stick_to_bottom.get() && !imp.scroll_pending.replace(true) {
                    let weak = win.downgrade();
                    glib::idle_add_local_full(glib::Priority::HIGH, move || {
                        if let Some(win) = weak.upgrade() {
                            win.imp().scroll_pending.set(false);
                            if win.imp().stick_to_bottom.get() {
                                win.scroll_to_bottom();
                            }
                        }
                        glib::ControlFlow::Break
                    });
                }
            }
        ));
    }

    /// After a layout: rows on screen that are still stand-ins are revealed
    /// before the next frame. Not during the layout itself: that lays out
    /// again, more rows may come into view, and GDK gives up after four
    /// rounds, leaving the list unallocated for good.
    fn reveal_on_layout(&self) {
        let imp = self.imp();
        if imp.reveal_pending.get() || !self.reveal_visible_rows(false) {
            return;
        }
        imp.reveal_pending.set(true);
        let weak = self.downgrade();
        glib::idle_add_local_full(glib::Priority::HIGH, move || {
            if let Some(win) = weak.upgrade() {
                win.imp().reveal_pending.set(false);
                win.reveal_visible_rows(true);
            }
            glib::ControlFlow::Break
        });
    }

    /// The list view's row widgets and the rows they show.
    fn bound_rows(&self) -> HashMap<RowObject, (gtk::Widget, MessageRow)> {
        let mut out = HashMap::new();
        let mut child = self.imp().messages_view.first_child();
        while let Some(c) = child {
            if let Some(widget) = c.first_child().and_downcast::<MessageRow>() {
                if let Some(row) = widget.row() {
                    out.insert(row, (c.clone(), widget));
                }
            }
            child = c.next_sibling();
        }
        out
    }

    /// While following a stream, the rows that will fill the page are the
    /// last ones: they are revealed before the frame that shows them.
    fn reveal_bottom_rows(&self) {
        let imp = self.imp();
        let Some(model) = imp.messages_view.model() else {
            return;
        };
        let page = imp.messages_scroller.height();
        let bound = self.bound_rows();
        let mut filled = 0;
        let mut i = model.n_items();
        while i > 0 && filled < page {
            i -= 1;
            let Some(row) = model.item(i).and_downcast::<RowObject>() else {
                break;
            };
            let Some((_, widget)) = bound.get(&row) else { break };
            widget.reveal();
            // A row just bound has no width yet; it will have the list's.
            let width = match widget.width() {
                w if w > 0 => w,
                _ => imp.messages_view.width().max(1),
            };
            let (_, natural, _, _) = widget.measure(gtk::Orientation::Vertical, width);
            filled += natural.max(1);
        }
    }

    /// Reveals the lazy rows on screen (the list view allocates only those;
    /// others have no size), or with `reveal` false only tells whether
    /// there are any.
    fn reveal_visible_rows(&self, reveal: bool) -> bool {
        let imp = self.imp();
        let scroller = imp.messages_scroller.get();
        if !scroller.is_mapped() {
            return false;
        }
        let page = scroller.height() as f32;
        let mut found = false;
        for (c, row) in self.bound_rows().into_values() {
            if !row.is_lazy() {
                continue;
            }
            let visible = c
                .compute_bounds(&scroller)
                .is_some_and(|b| b.height() > 0.0 && b.y() + b.height() > 0.0 && b.y() < page);
            if visible {
                found = true;
                if reveal {
                    row.reveal();
                }
            }
        }
        found
    }

    /// Whether the conversation's last row is drawn for real and on screen
    /// (for the benchmarks: "the last chunk is on screen").
    pub fn last_row_shown(&self) -> bool {
        let imp = self.imp();
        let scroller = imp.messages_scroller.get();
        let Some(model) = imp.messages_view.model() else {
            return false;
        };
        let Some(last) = model
            .item(model.n_items().saturating_sub(1))
            .and_downcast::<RowObject>()
        else {
            return false;
        };
        let page = scroller.height() as f32;
        let mut child = imp.messages_view.first_child();
        while let Some(c) = child {
            if let Some(row) = c.first_child().and_downcast::<MessageRow>() {
                if row.row().as_ref() == Some(&last) {
                    return !row.is_lazy()
                        && c.compute_bounds(&scroller)
                            .is_some_and(|b| b.height() > 0.0 && b.y() < page && b.y() + b.height() > 0.0);
                }
            }
            child = c.next_sibling();
        }
        false
    }

    pub fn scroll_to_bottom(&self) {
        let adj = self.imp().messages_scroller.vadjustment();
        adj.set_value(adj.upper() - adj.page_size());
    }

    /// Keeps the newest message in view while it grows, unless the user
    /// scrolled up to read.
    pub fn follow_conversation(&self) {
        if !self.imp().stick_to_bottom.get() {
            return;
        }
        if self.selected_agent().is_none() {
            return;
        }
        let n = self.imp().messages_view.model().map_or(0, |m| m.n_items());
        if n > 0 {
            // Row heights are known only once laid out: the last row is
            // brought in (which moves the list view's anchor: a value set on
            // the adjustment alone may be refused by it while rows' heights
            // are estimates), then the end when the allocation changes the
            // adjustment (above).
            let _ = WidgetExt::activate_action(
                &*self.imp().messages_view,
                "list.scroll-to-item",
                Some(&(n - 1).to_variant()),
            );
            self.reveal_bottom_rows();
        }
    }

    // ---- permissions ----

    pub fn permissions_changed(&self, agent: &str) {
        let waiting = self
            .imp()
            .permissions
            .borrow()
            .get(agent)
            .is_some_and(|p| !p.is_empty());
        if let Some(a) = self.agent(agent) {
            a.set_waiting(waiting);
        }
        if self.selected_agent().as_deref() == Some(agent) {
            self.update_permission_banner();
        }
    }

    pub fn add_permission(&self, request: PermissionRequest) {
        let agent = request.agent.clone();
        self.imp()
            .permissions
            .borrow_mut()
            .entry(agent.clone())
            .or_default()
            .push(request);
        self.permissions_changed(&agent);
    }

    pub fn remove_permission(&self, agent: &str, id: &str) {
        if let Some(list) = self.imp().permissions.borrow_mut().get_mut(agent) {
            list.retain(|p| p.id != id);
        }
        self.permissions_changed(agent);
    }

    fn update_permission_banner(&self) {
        let imp = self.imp();
        let request = self
            .selected_agent()
            .and_then(|a| imp.permissions.borrow().get(&a).and_then(|l| l.first().cloned()));
        while let Some(child) = imp.permission_buttons.first_child() {
            imp.permission_buttons.remove(&child);
        }
        let Some(request) = request else {
            imp.permission_revealer.set_reveal_child(false);
            return;
        };
        let mut text = gettext_f(
            "<b>The agent asks to run a tool:</b> {title}",
            // The agent's text: control and bidi characters shown, not
            // obeyed (a NUL would also panic on its way into GTK).
            &[("title", &crate::ui::markdown::escape(&request.tool_call.title))],
        );
        if request.rejections > 0 {
            text.push_str(&glib::markup_escape_text(&format!(
                " ({})",
                gettext_f(
                    "refused {n} time(s) in this turn",
                    &[("n", &request.rejections.to_string())]
                )
            )));
        }
        imp.permission_label.set_markup(&text);
        for option in &request.options {
            let button = gtk::Button::with_label(&crate::ui::markdown::visible(&option.name));
            if option.kind.starts_with("allow") {
                button.add_css_class("suggested-action");
            } else {
                button.add_css_class("destructive-action");
            }
            let (id, option_id) = (request.id.clone(), option.option_id.clone());
            button.connect_clicked(glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |_| win.answer_permission(&id, &option_id)
            ));
            imp.permission_buttons.append(&button);
        }
        imp.permission_revealer.set_reveal_child(true);
    }

    pub fn answer_permission(&self, id: &str, option_id: &str) {
        let core = self.core().clone();
        let (id, option_id) = (id.to_owned(), option_id.to_owned());
        runtime::call(
            async move { core.chat.answer_permission(&id, &option_id) },
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |r: Result<(), String>| {
                    if let Err(e) = r {
                        win.toast(&e);
                    }
                }
            ),
        );
    }

    // ---- composer ----

    fn setup_composer(&self) {
        let imp = self.imp();
        let weak = self.downgrade();
        let completion = crate::ui::widgets::slash_completion::SlashCompletion::attach(
            &imp.composer_text,
            &*imp.composer,
            move || {
                weak.upgrade()
                    .and_then(|win| win.selected_agent().map(|a| win.core().chat.commands(&a)))
                    .unwrap_or_default()
            },
        );
        let _ = imp.completion.set(completion);
        let keys = gtk::EventControllerKey::new();
        keys.connect_key_pressed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            #[upgrade_or]
            glib::Propagation::Proceed,
            move |_, key, _, state| {
                if win.imp().completion.get().is_some_and(|c| c.key(key)) {
                    return glib::Propagation::Stop;
                }
                match key {
                    gdk::Key::Return | gdk::Key::KP_Enter
                        if !state.contains(gdk::ModifierType::SHIFT_MASK) =>
                    {
                        win.send();
                        glib::Propagation::Stop
                    }
                    gdk::Key::Escape => {
                        win.cancel();
                        glib::Propagation::Stop
                    }
                    _ => glib::Propagation::Proceed,
                }
            }
        ));
        imp.composer_text.add_controller(keys);
        imp.send_button.connect_clicked(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| {
                let answering = win
                    .selected_agent()
                    .and_then(|a| win.agent(&a))
                    .is_some_and(|a| a.answering());
                if answering {
                    win.cancel();
                } else {
                    win.send();
                }
            }
        ));
    }

    /// Send turns into Stop while a turn runs.
    pub fn update_composer(&self) {
        let imp = self.imp();
        let answering = self
            .selected_agent()
            .and_then(|a| self.agent(&a))
            .is_some_and(|a| a.answering());
        if answering {
            imp.send_button.set_icon_name("media-playback-stop-symbolic");
            crate::ui::a11y::set_label(&*imp.send_button, &gettext("Stop"));
            imp.send_button.set_tooltip_text(Some(&gettext("Stop (Escape)")));
            imp.send_button.remove_css_class("suggested-action");
            imp.send_button.add_css_class("destructive-action");
        } else {
            imp.send_button.set_icon_name("mail-send-symbolic");
            crate::ui::a11y::set_label(&*imp.send_button, &gettext("Send"));
            imp.send_button.set_tooltip_text(Some(&gettext("Send (Enter)")));
            imp.send_button.remove_css_class("destructive-action");
            imp.send_button.add_css_class("suggested-action");
        }
    }

    pub fn send(&self) {
        let Some(agent) = self.selected_agent() else {
            return;
        };
        let buffer = self.imp().composer_text.buffer();
        let text = buffer
            .text(&buffer.start_iter(), &buffer.end_iter(), false)
            .to_string();
        if text.trim().is_empty() {
            return;
        }
        buffer.set_text("");
        self.imp().stick_to_bottom.set(true);
        let core = self.core().clone();
        runtime::call(
            async move { core.chat.send(&agent, &text).map_err(|e| (e, text)) },
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |r: Result<String, (String, String)>| {
                    if let Err((e, text)) = r {
                        // Nothing is lost: the text goes back into the composer.
                        win.imp().composer_text.buffer().set_text(&text);
                        win.toast(&e);
                    }
                }
            ),
        );
    }

    pub fn cancel(&self) {
        let Some(agent) = self.selected_agent() else {
            return;
        };
        let core = self.core().clone();
        runtime::call(async move { core.chat.cancel(&agent) }, |_| {});
    }

    // ---- actions ----

    fn agent_action(&self, name: &str, run: fn(&ParleyWindow, String)) -> gio::SimpleAction {
        let action = gio::SimpleAction::new(name, Some(glib::VariantTy::STRING));
        action.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, param| {
                if let Some(agent) = param.and_then(|p| p.get::<String>()) {
                    run(&win, agent);
                }
            }
        ));
        self.add_action(&action);
        action
    }

    fn setup_actions(&self) {
        fn lifecycle(win: &ParleyWindow, agent: String, what: &'static str) {
            let core = win.core().clone();
            runtime::call(
                async move {
                    match what {
                        "start" => core.supervisor.start(&agent).await,
                        "stop" => core.supervisor.stop(&agent).await,
                        _ => core.supervisor.restart(&agent).await,
                    }
                },
                glib::clone!(
                    #[weak]
                    win,
                    move |r: Result<(), String>| {
                        if let Err(e) = r {
                            win.toast(e.lines().next().unwrap_or_default());
                        }
                    }
                ),
            );
        }
        self.agent_action("agent-start", |w, a| lifecycle(w, a, "start"));
        self.agent_action("agent-stop", |w, a| lifecycle(w, a, "stop"));
        self.agent_action("agent-restart", |w, a| lifecycle(w, a, "restart"));
        self.agent_action("agent-logs", |w, a| crate::ui::widgets::logs::show(w, &a));
        let cancel = gio::SimpleAction::new("cancel", None);
        cancel.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| win.cancel()
        ));
        self.add_action(&cancel);
        let edit = gio::SimpleAction::new("edit-config", None);
        edit.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| crate::ui::widgets::config_editor::show(&win)
        ));
        self.add_action(&edit);
    }

    pub fn logs(&self, agent: &str) -> Vec<String> {
        self.imp()
            .logs
            .borrow()
            .get(agent)
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn push_log(&self, agent: &str, line: String) {
        let mut logs = self.imp().logs.borrow_mut();
        let l = logs.entry(agent.to_owned()).or_default();
        if l.is_empty() {
            // First line seen here: start from what the supervisor kept.
            l.extend(self.core().supervisor.logs(agent).unwrap_or_default());
            if l.back() == Some(&line) {
                return;
            }
        }
        if l.len() >= crate::core::supervisor::LOG_LINES {
            l.pop_front();
        }
        l.push_back(line);
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
