//! The selected agent's conversation: its messages as a list of rows (the
//! conversation's own virtualised `MessageList`), the "Start a
//! Conversation" page while there are none, and following the stream:
//! while `sticky`, the end stays in view as the answer grows; the user
//! scrolling up (wheel, keys, scrollbar) stops it, reaching the end again
//! or sending a message starts it again.

use std::cell::RefCell;

use gtk::prelude::*;
use gtk::subclass::prelude::*;
use gtk::{gio, glib};

use crate::core::types::message::Role;
use crate::ui::models::{AgentObject, MessageObject, RowObject};
use crate::ui::widgets::message_list::MessageList;

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
        pub list: TemplateChild<MessageList>,
        /// The agent whose conversation is shown.
        #[property(get, set = Self::set_agent, nullable)]
        pub agent: RefCell<Option<AgentObject>>,
        /// Whether the end of the conversation is kept in view (the list's
        /// `follow-end`).
        #[property(get = Self::sticky, set = Self::set_sticky)]
        pub sticky: std::marker::PhantomData<bool>,
        pub handlers: RefCell<Vec<(glib::Object, glib::SignalHandlerId)>>,
        /// The messages shown (the agent's, until it forgets them).
        pub store: RefCell<Option<gio::ListStore>>,
    }

    impl ConversationView {
        fn set_agent(&self, agent: Option<AgentObject>) {
            for (object, id) in self.handlers.take() {
                object.disconnect(id);
            }
            self.agent.replace(agent.clone());
            self.obj().show(agent.as_ref());
        }

        fn sticky(&self) -> bool {
            self.list.follow_end()
        }

        fn set_sticky(&self, sticky: bool) {
            self.list.set_follow_end(sticky);
        }
    }

    #[glib::object_subclass]
    impl ObjectSubclass for ConversationView {
        const NAME: &'static str = "ParleyConversationView";
        type Type = super::ConversationView;
        type ParentType = gtk::Box;

        fn class_init(klass: &mut Self::Class) {
            MessageList::ensure_type();
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
    pub fn message_list(&self) -> MessageList {
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
            imp.list.set_model(None::<&gio::ListModel>);
            return;
        };
        let store = agent.conversation().messages();
        imp.store.replace(Some(store.clone()));
        imp.list.set_agent_title(agent.title());
        imp.list.set_terminals(&agent.conversation().terminals());
        imp.list.set_threads(&agent.conversation().subagents());
        // The list shows rows, several per long message (see `RowObject`).
        imp.list.set_model(Some(&agent.conversation().rows()));
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
        let changed = agent.conversation().connect_conversation_changed(glib::clone!(
            #[weak(rename_to = view)]
            self,
            #[weak]
            agent,
            move |conversation| {
                // Another configuration: the agent read its conversation anew.
                if *view.imp().store.borrow() != conversation.loaded_messages() {
                    view.show(Some(&agent));
                }
            }
        ));
        // Another conversation of the agent: its end is shown.
        let switched = agent.conversation().connect_notify_local(
            Some("conversation-id"),
            glib::clone!(
                #[weak(rename_to = view)]
                self,
                move |_, _| view.set_sticky(true)
            ),
        );
        let retitled = agent.connect_notify_local(
            Some("title"),
            glib::clone!(
                #[weak(rename_to = view)]
                self,
                move |agent, _| view.imp().list.set_agent_title(agent.title())
            ),
        );
        imp.handlers.replace(vec![
            (store.upcast(), items),
            (agent.conversation().clone().upcast(), changed),
            (agent.conversation().clone().upcast(), switched),
            (agent.clone().upcast(), retitled),
        ]);
        self.set_sticky(true);
        self.update_page();
    }

    fn update_page(&self) {
        let n = self.agent().map_or(0, |a| a.conversation().messages().n_items());
        self.imp()
            .stack
            .set_visible_child_name(if n == 0 { "empty" } else { "messages" });
    }

    fn setup_messages_view(&self) {
        let imp = self.imp();
        imp.list.connect_follow_end_notify(glib::clone!(
            #[weak(rename_to = view)]
            self,
            move |_| view.notify_sticky()
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
                        if agent.conversation().earlier() > 0 {
                            let agent = agent.clone();
                            glib::idle_add_local_once(move || {
                                agent.conversation().load_earlier(crate::ui::models::EARLIER_PAGE);
                            });
                        }
                    }
                }
            }
        ));
        // Only the user stops the following: the list itself moves the
        // value as the end grows, which is no reason to stop showing it.
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
    }

    /// Whether the conversation's last row is drawn and on screen (for the
    /// benchmarks: "the last chunk is on screen").
    pub fn last_row_shown(&self) -> bool {
        self.imp().list.last_row_shown()
    }

    /// Scrolls to message `id` (a search hit, a find match) and marks it
    /// for two seconds; stops following the stream. `false` if it is not
    /// in the conversation.
    pub fn scroll_to_message(&self, id: &str) -> bool {
        self.scroll_to(id, true)
    }

    /// The id of the first message shown at the top of the view, where the
    /// user has scrolled up; `None` at the end (which the view follows).
    pub fn top_message(&self) -> Option<String> {
        let list = &self.imp().list;
        if list.last_row_shown() {
            return None;
        }
        list.bound_rows()
            .into_iter()
            .filter_map(|(row, widget)| {
                let y = widget
                    .compute_point(&**list, &gtk::graphene::Point::new(0.0, 0.0))?
                    .y();
                let bottom = y + widget.height() as f32;
                (bottom > 0.0).then(|| (y, row.message().map(|m| m.id())))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .and_then(|(_, id)| id)
    }

    /// Scrolls back to where the user was (`top_message`), unmarked.
    pub fn restore_place(&self, id: &str) -> bool {
        self.scroll_to(id, false)
    }

    fn scroll_to(&self, id: &str, mark: bool) -> bool {
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
        imp.list.scroll_to_row(position as usize);
        if !mark {
            return true;
        }
        let id = id.to_owned();
        // Marked once the list has laid the row out.
        glib::timeout_add_local_once(
            std::time::Duration::from_millis(120),
            glib::clone!(
                #[weak(rename_to = view)]
                self,
                move || {
                    for (row, widget) in view.imp().list.bound_rows() {
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

    /// Shows the end of the conversation and follows it again.
    pub fn scroll_to_bottom(&self) {
        self.set_sticky(true);
    }
}
