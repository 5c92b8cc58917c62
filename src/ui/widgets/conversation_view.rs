//! The selected agent's conversation: its messages as a list of rows, the
//! "Start a Conversation" page while there are none, and following the
//! stream: while `sticky`, the end stays in view as the answer grows; the
//! user scrolling up (wheel, keys, scrollbar) stops it, reaching the end
//! again or sending a message starts it again. Rows are drawn lazily (see
//! `MessageRow`): those on screen are revealed after each layout.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use gtk::prelude::*;
use gtk::subclass::prelude::*;
use gtk::{gio, glib};

use crate::core::chat::message::Role;
use crate::ui::models::{AgentObject, MessageObject, RowObject};
use crate::ui::widgets::MessageRow;

mod imp {
    use super::*;

    #[derive(Default, gtk::CompositeTemplate, glib::Properties)]
    #[template(file = "conversation_view.ui")]
    #[properties(wrapper_type = super::ConversationView)]
    pub struct ConversationView {
        #[template_child]
        pub stack: TemplateChild<gtk::Stack>,
        #[template_child]
        pub scroller: TemplateChild<gtk::ScrolledWindow>,
        #[template_child]
        pub list: TemplateChild<gtk::ListView>,
        /// The agent whose conversation is shown.
        #[property(get, set = Self::set_agent, nullable)]
        pub agent: RefCell<Option<AgentObject>>,
        /// Whether the end of the conversation is kept in view.
        #[property(get, set)]
        pub sticky: Cell<bool>,
        pub handlers: RefCell<Vec<(glib::Object, glib::SignalHandlerId)>>,
        /// The messages shown (the agent's, until it forgets them).
        pub store: RefCell<Option<gio::ListStore>>,
        /// Rows on screen wait to be revealed (`reveal_on_layout`).
        pub reveal_pending: Cell<bool>,
        /// A scroll to the end waits for the list's allocation to end.
        pub scroll_pending: Cell<bool>,
        pub reveal_handler: RefCell<Option<(gtk::gdk::FrameClock, glib::SignalHandlerId)>>,
    }

    impl ConversationView {
        fn set_agent(&self, agent: Option<AgentObject>) {
            for (object, id) in self.handlers.take() {
                object.disconnect(id);
            }
            self.agent.replace(agent.clone());
            self.obj().show(agent.as_ref());
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for ConversationView {
        const NAME: &'static str = "ParleyConversationView";
        type Type = super::ConversationView;
        type ParentType = gtk::Box;

        fn class_init(klass: &mut Self::Class) {
            klass.bind_template();
        }

        fn instance_init(obj: &glib::subclass::InitializingObject<Self>) {
            obj.init_template();
        }
    }

    #[glib::derived_properties]
    impl ObjectImpl for ConversationView {
        fn constructed(&self) {
            self.parent_constructed();
            self.sticky.set(true);
            self.obj().setup_messages_view();
        }
    }
    impl WidgetImpl for ConversationView {}
    impl BoxImpl for ConversationView {}
}

glib::wrapper! {
    pub struct ConversationView(ObjectSubclass<imp::ConversationView>)
        @extends gtk::Box, gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget, gtk::Orientable;
}

impl ConversationView {
    /// The list of rows (for tests and the benchmarks).
    pub fn list_view(&self) -> gtk::ListView {
        self.imp().list.get()
    }

    pub fn scroller(&self) -> gtk::ScrolledWindow {
        self.imp().scroller.get()
    }

    /// Which page shows: "empty" or "messages".
    pub fn page(&self) -> String {
        self.imp()
            .stack
            .visible_child_name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    }

    fn show(&self, agent: Option<&AgentObject>) {
        let imp = self.imp();
        for (object, id) in imp.handlers.take() {
            object.disconnect(id);
        }
        let Some(agent) = agent else {
            imp.store.replace(None);
            imp.list.set_model(None::<&gtk::NoSelection>);
            return;
        };
        let store = agent.messages();
        imp.store.replace(Some(store.clone()));
        // The list shows rows, several per long message (see `RowObject`).
        let rows = gtk::MapListModel::new(Some(store.clone()), |m| {
            m.downcast_ref::<MessageObject>()
                .map(|m| m.rows())
                .unwrap_or_else(gio::ListStore::new::<RowObject>)
                .upcast()
        });
        let flat = gtk::FlattenListModel::new(Some(rows));
        imp.list.set_model(Some(&gtk::NoSelection::new(Some(flat))));
        let items = store.connect_items_changed(glib::clone!(
            #[weak(rename_to = view)]
            self,
            move |store, _, _, added| {
                // A message the user just sent brings the end back.
                let sent = added > 0
                    && store
                        .item(store.n_items().saturating_sub(1))
                        .and_downcast::<MessageObject>()
                        .and_then(|m| m.with(|m| m.role == Role::User))
                        .unwrap_or(false);
                if sent {
                    view.set_sticky(true);
                }
                view.update_page();
            }
        ));
        let changed = agent.connect_conversation_changed(glib::clone!(
            #[weak(rename_to = view)]
            self,
            move |agent| {
                // Another configuration: the agent read its conversation anew.
                if *view.imp().store.borrow() != agent.loaded_messages() {
                    view.show(Some(agent));
                } else {
                    view.follow_conversation();
                }
            }
        ));
        // Another conversation of the agent: its end is shown.
        let switched = agent.connect_notify_local(
            Some("conversation-id"),
            glib::clone!(
                #[weak(rename_to = view)]
                self,
                move |_, _| {
                    view.set_sticky(true);
                    view.follow_conversation();
                }
            ),
        );
        imp.handlers.replace(vec![
            (store.upcast(), items),
            (agent.clone().upcast(), changed),
            (agent.clone().upcast(), switched),
        ]);
        self.set_sticky(true);
        self.update_page();
        self.scroll_to_bottom();
    }

    fn update_page(&self) {
        let n = self.agent().map_or(0, |a| a.messages().n_items());
        self.imp()
            .stack
            .set_visible_child_name(if n == 0 { "empty" } else { "messages" });
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
            #[weak(rename_to = view)]
            self,
            move |_, item| {
                let Some(item) = item.downcast_ref::<gtk::ListItem>() else {
                    return;
                };
                if let (Some(widget), Some(row)) = (
                    item.child().and_downcast::<MessageRow>(),
                    item.item().and_downcast::<RowObject>(),
                ) {
                    let title = view.agent().map(|a| a.title()).unwrap_or_default();
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
        imp.list.set_factory(Some(&factory));
        // After each layout, stand-in rows that came on screen are drawn
        // for real before the next frame (see `reveal_on_layout`).
        imp.list.connect_realize(glib::clone!(
            #[weak(rename_to = view)]
            self,
            move |list| {
                let Some(clock) = list.frame_clock() else { return };
                let weak = view.downgrade();
                // Connected "after": the window's own handler, which
                // allocates the rows, has run.
                let handler = clock.connect_local("layout", true, move |_| {
                    if let Some(view) = weak.upgrade() {
                        view.reveal_on_layout();
                    }
                    None
                });
                view.imp().reveal_handler.replace(Some((clock, handler)));
            }
        ));
        imp.list.connect_unrealize(glib::clone!(
            #[weak(rename_to = view)]
            self,
            move |_| {
                if let Some((clock, handler)) = view.imp().reveal_handler.take() {
                    clock.disconnect(handler);
                }
            }
        ));
        let adj = imp.scroller.vadjustment();
        adj.connect_value_changed(glib::clone!(
            #[weak(rename_to = view)]
            self,
            move |a| {
                if a.value() + a.page_size() >= a.upper() - 48.0 {
                    view.set_sticky(true);
                }
                // Near the top of a long conversation: its earlier page.
                if a.value() < a.page_size() && !view.sticky() {
                    if let Some(agent) = view.agent() {
                        if agent.earlier() > 0 {
                            let agent = agent.clone();
                            glib::idle_add_local_once(move || {
                                agent.load_earlier(crate::ui::models::EARLIER_PAGE);
                            });
                        }
                    }
                }
            }
        ));
        // Only the user stops the following: the list view itself moves
        // the value when rows above the visible ones change height, which
        // is no reason to stop showing the end of a stream.
        let scroll = gtk::EventControllerScroll::new(gtk::EventControllerScrollFlags::VERTICAL);
        scroll.set_propagation_phase(gtk::PropagationPhase::Capture);
        scroll.connect_scroll(glib::clone!(
            #[weak(rename_to = view)]
            self,
            #[upgrade_or]
            glib::Propagation::Proceed,
            move |_, _, dy| {
                if dy < 0.0 {
                    view.set_sticky(false);
                }
                glib::Propagation::Proceed
            }
        ));
        imp.scroller.add_controller(scroll);
        imp.scroller.connect_scroll_child(glib::clone!(
            #[weak(rename_to = view)]
            self,
            #[upgrade_or]
            false,
            move |_, kind, _| {
                use gtk::ScrollType::*;
                if matches!(kind, StepUp | PageUp | Start | StepBackward | PageBackward) {
                    view.set_sticky(false);
                }
                false
            }
        ));
        let grab = gtk::GestureClick::new();
        grab.set_propagation_phase(gtk::PropagationPhase::Capture);
        grab.connect_pressed(glib::clone!(
            #[weak(rename_to = view)]
            self,
            move |_, _, _, _| view.set_sticky(false)
        ));
        imp.scroller.vscrollbar().add_controller(grab);
        // The list view changes its adjustment while it allocates, with its
        // own value-changed handler blocked: a value set from here would be
        // lost to it (it would keep showing the old rows), so the scroll
        // waits for the allocation to end.
        adj.connect_changed(glib::clone!(
            #[weak(rename_to = view)]
            self,
            move |_| {
                let imp = view.imp();
                if view.sticky() && !imp.scroll_pending.replace(true) {
                    let weak = view.downgrade();
                    glib::idle_add_local_full(glib::Priority::HIGH, move || {
                        if let Some(view) = weak.upgrade() {
                            view.imp().scroll_pending.set(false);
                            if view.sticky() {
                                view.scroll_to_bottom();
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
            if let Some(view) = weak.upgrade() {
                view.imp().reveal_pending.set(false);
                view.reveal_visible_rows(true);
            }
            glib::ControlFlow::Break
        });
    }

    /// The list view's row widgets and the rows they show.
    fn bound_rows(&self) -> HashMap<RowObject, (gtk::Widget, MessageRow)> {
        let mut out = HashMap::new();
        let mut child = self.imp().list.first_child();
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
        let Some(model) = imp.list.model() else {
            return;
        };
        let page = imp.scroller.height();
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
                _ => imp.list.width().max(1),
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
        let scroller = imp.scroller.get();
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
        let scroller = imp.scroller.get();
        let Some(model) = imp.list.model() else {
            return false;
        };
        let Some(last) = model
            .item(model.n_items().saturating_sub(1))
            .and_downcast::<RowObject>()
        else {
            return false;
        };
        let page = scroller.height() as f32;
        let mut child = imp.list.first_child();
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

    /// Scrolls to message `id` (a search hit, a find match) and marks it
    /// for two seconds; stops following the stream. `false` if it is not
    /// in the conversation.
    pub fn scroll_to_message(&self, id: &str) -> bool {
        let imp = self.imp();
        let Some(model) = imp.list.model() else {
            return false;
        };
        let found = (0..model.n_items()).find(|&i| {
            model
                .item(i)
                .and_downcast::<RowObject>()
                .and_then(|r| r.message())
                .is_some_and(|m| m.id() == id)
        });
        let Some(position) = found else {
            return false;
        };
        self.set_sticky(false);
        let _ = WidgetExt::activate_action(&*imp.list, "list.scroll-to-item", Some(&position.to_variant()));
        let id = id.to_owned();
        // Marked once the list has laid the row out.
        glib::timeout_add_local_once(
            std::time::Duration::from_millis(120),
            glib::clone!(
                #[weak(rename_to = view)]
                self,
                move || {
                    for (row, (_, widget)) in view.bound_rows() {
                        if row.message().is_some_and(|m| m.id() == id) {
                            widget.add_css_class("found");
                            glib::timeout_add_local_once(
                                std::time::Duration::from_secs(2),
                                glib::clone!(
                                    #[weak]
                                    widget,
                                    move || widget.remove_css_class("found")
                                ),
                            );
                        }
                    }
                }
            ),
        );
        true
    }

    pub fn scroll_to_bottom(&self) {
        let adj = self.imp().scroller.vadjustment();
        adj.set_value(adj.upper() - adj.page_size());
    }

    /// Keeps the newest message in view while it grows, unless the user
    /// scrolled up to read.
    pub fn follow_conversation(&self) {
        if !self.sticky() {
            return;
        }
        if self.agent().is_none() {
            return;
        }
        let n = self.imp().list.model().map_or(0, |m| m.n_items());
        if n > 0 {
            // Row heights are known only once laid out: the last row is
            // brought in (which moves the list view's anchor: a value set on
            // the adjustment alone may be refused by it while rows' heights
            // are estimates), then the end when the allocation changes the
            // adjustment (above).
            let _ = WidgetExt::activate_action(
                &*self.imp().list,
                "list.scroll-to-item",
                Some(&(n - 1).to_variant()),
            );
            self.reveal_bottom_rows();
        }
    }
}
