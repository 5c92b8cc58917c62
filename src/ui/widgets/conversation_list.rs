//! The selected agent's conversations, in the sidebar under the agents:
//! newest first, the current one selected, each with a menu (Rename,
//! Delete); "New Conversation" above them. A `GtkListView` over boxed
//! summaries, so a thousand conversations cost a screenful of rows.

use std::cell::RefCell;

use gtk::prelude::*;
use gtk::subclass::prelude::*;
use gtk::{gio, glib};

use crate::core::history::ConversationSummary;
use crate::i18n::{fill, gettext, gettext_f, ngettext};
use crate::ui::models::AgentObject;

mod imp {
    use super::*;

    #[derive(Default)]
    pub struct ConversationList {
        pub store: RefCell<Option<gio::ListStore>>,
        pub selection: RefCell<Option<gtk::SingleSelection>>,
        pub list: RefCell<Option<gtk::ListView>>,
        pub stack: RefCell<Option<gtk::Stack>>,
        pub agent: RefCell<Option<AgentObject>>,
        pub handlers: RefCell<Vec<glib::SignalHandlerId>>,
        /// The selection is being set from the agent, not by the user.
        pub syncing: std::cell::Cell<bool>,
        /// Each refresh's number: an answer to an older one is dropped.
        pub generation: std::cell::Cell<u64>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for ConversationList {
        const NAME: &'static str = "ParleyConversationList";
        type Type = super::ConversationList;
        type ParentType = gtk::Box;
    }

    impl ObjectImpl for ConversationList {
        fn constructed(&self) {
            self.parent_constructed();
            self.obj().build();
        }

        fn dispose(&self) {
            self.obj().set_agent(None);
        }
    }
    impl WidgetImpl for ConversationList {}
    impl BoxImpl for ConversationList {}
}

glib::wrapper! {
    pub struct ConversationList(ObjectSubclass<imp::ConversationList>)
        @extends gtk::Box, gtk::Widget,
        @implements gtk::Buildable, gtk::ConstraintTarget, gtk::Orientable;
}

impl Default for ConversationList {
    fn default() -> Self {
        glib::Object::new()
    }
}

/// "5 minutes ago"-style words for an RFC 3339 time (the list's subtitle).
pub fn when(rfc3339: &str) -> String {
    let Ok(then) = humantime::parse_rfc3339(rfc3339).or_else(|_| humantime::parse_rfc3339_weak(rfc3339))
    else {
        return String::new();
    };
    let Ok(ago) = std::time::SystemTime::now().duration_since(then) else {
        return gettext("just now");
    };
    let minutes = ago.as_secs() / 60;
    let n = |v: u64| v.to_string();
    match minutes {
        0 => gettext("just now"),
        1..=59 => gettext_f("{n} min ago", &[("n", &n(minutes))]),
        60..=1439 => gettext_f("{n} h ago", &[("n", &n(minutes / 60))]),
        _ => {
            let days = minutes / 1440;
            fill(
                &ngettext(
                    "{n} day ago",
                    "{n} days ago",
                    u32::try_from(days).unwrap_or(u32::MAX),
                ),
                &[("n", &n(days))],
            )
        }
    }
}

fn summary(item: &glib::Object) -> Option<std::cell::Ref<'_, ConversationSummary>> {
    item.downcast_ref::<glib::BoxedAnyObject>()
        .and_then(|b| b.try_borrow::<ConversationSummary>().ok())
}

impl ConversationList {
    fn build(&self) {
        self.set_orientation(gtk::Orientation::Vertical);
        self.add_css_class("conversation-list");
        let header = gtk::Box::new(gtk::Orientation::Horizontal, 6);
        header.add_css_class("conversation-list-header");
        let label = gtk::Label::builder()
            .label(gettext("Conversations"))
            .xalign(0.0)
            .hexpand(true)
            .css_classes(["heading"])
            .build();
        let new = gtk::Button::builder()
            .icon_name("list-add-symbolic")
            .tooltip_text(gettext("New Conversation (Ctrl+N)"))
            .action_name("win.new-conversation")
            .css_classes(["flat"])
            .build();
        crate::ui::a11y::set_label(&new, &gettext("New Conversation"));
        let search = gtk::Button::builder()
            .icon_name("system-search-symbolic")
            .tooltip_text(gettext("Search All Conversations (Ctrl+Shift+F)"))
            .action_name("win.search-conversations")
            .css_classes(["flat"])
            .build();
        crate::ui::a11y::set_label(&search, &gettext("Search All Conversations"));
        header.append(&label);
        header.append(&search);
        header.append(&new);
        self.append(&header);

        let store = gio::ListStore::new::<glib::BoxedAnyObject>();
        let selection = gtk::SingleSelection::new(Some(store.clone()));
        selection.set_autoselect(false);
        selection.set_can_unselect(true);
        let factory = gtk::SignalListItemFactory::new();
        factory.connect_setup(|_, item| {
            let Some(item) = item.downcast_ref::<gtk::ListItem>() else {
                return;
            };
            let row = gtk::Box::new(gtk::Orientation::Horizontal, 6);
            let text = gtk::Box::new(gtk::Orientation::Vertical, 2);
            text.set_hexpand(true);
            let title = gtk::Label::builder()
                .xalign(0.0)
                .ellipsize(gtk::pango::EllipsizeMode::End)
                .build();
            let subtitle = gtk::Label::builder()
                .xalign(0.0)
                .ellipsize(gtk::pango::EllipsizeMode::End)
                .css_classes(["caption", "dim-label"])
                .build();
            text.append(&title);
            text.append(&subtitle);
            let menu = gtk::MenuButton::builder()
                .icon_name("view-more-symbolic")
                .valign(gtk::Align::Center)
                .css_classes(["flat"])
                .build();
            // The menu is made when it opens: a popover menu for each of a
            // thousand rows bound would cost the list its speed.
            menu.set_create_popup_func(|menu| {
                // SAFETY: "conversation" is only ever set to a
                // `(String, bool)` by the bind below.
                let Some((id, external)) = (unsafe {
                    menu.data::<(String, bool)>("conversation")
                        .map(|p| p.as_ref().clone())
                }) else {
                    return;
                };
                let model = gio::Menu::new();
                let target = id.to_variant();
                if !external {
                    let rename = gio::MenuItem::new(Some(&gettext("_Rename…")), None);
                    rename.set_action_and_target_value(Some("win.rename-conversation"), Some(&target));
                    model.append_item(&rename);
                }
                let delete = gio::MenuItem::new(Some(&gettext("_Delete…")), None);
                delete.set_action_and_target_value(Some("win.delete-conversation"), Some(&target));
                model.append_item(&delete);
                menu.set_menu_model(Some(&model));
            });
            row.append(&text);
            row.append(&menu);
            item.set_child(Some(&row));
        });
        factory.connect_bind(|_, item| {
            let Some(item) = item.downcast_ref::<gtk::ListItem>() else {
                return;
            };
            let (Some(row), Some(object)) = (item.child(), item.item()) else {
                return;
            };
            let Some(s) = summary(&object) else { return };
            let text = row.first_child();
            let title = text
                .as_ref()
                .and_then(|t| t.first_child())
                .and_downcast::<gtk::Label>();
            let subtitle = title
                .as_ref()
                .and_then(|t| t.next_sibling())
                .and_downcast::<gtk::Label>();
            let menu = row.last_child().and_downcast::<gtk::MenuButton>();
            let shown_title = if s.title.is_empty() {
                gettext("Untitled Conversation")
            } else {
                s.title.clone()
            };
            let sub = if s.external {
                gettext_f("Not in Parley yet · {when}", &[("when", &when(&s.updated_at))])
            } else {
                fill(
                    &ngettext(
                        "{when} · {n} message",
                        "{when} · {n} messages",
                        u32::try_from(s.messages).unwrap_or(u32::MAX),
                    ),
                    &[("when", &when(&s.updated_at)), ("n", &s.messages.to_string())],
                )
            };
            if let (Some(title), Some(subtitle)) = (title, subtitle) {
                title.set_label(&shown_title);
                subtitle.set_label(&sub);
            }
            let name = format!("{shown_title}, {sub}");
            crate::ui::a11y::set_label(&row, &name);
            // The list item around the row is what the arrow keys focus.
            if let Some(item) = row.parent() {
                crate::ui::a11y::set_label(&item, &name);
            }
            if let Some(menu) = menu {
                // SAFETY: read back as the same type in the popup func.
                unsafe { menu.set_data("conversation", (s.id.clone(), s.external)) };
                crate::ui::a11y::set_label(&menu, &gettext_f("Menu of {title}", &[("title", &shown_title)]));
            }
        });
        let list = gtk::ListView::new(Some(selection.clone()), Some(factory));
        list.set_single_click_activate(true);
        list.add_css_class("navigation-sidebar");
        crate::ui::a11y::set_label(&list, &gettext("Conversations"));
        list.connect_activate(glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |_, position| this.open_at(position)
        ));
        let scroller = gtk::ScrolledWindow::builder()
            .hscrollbar_policy(gtk::PolicyType::Never)
            .vexpand(true)
            .child(&list)
            .build();
        // An empty list leaves its pane as the Tab stop: it is named too.
        crate::ui::a11y::set_label(&scroller, &gettext("Conversations"));
        let empty = gtk::Label::builder()
            .label(gettext("No conversations yet"))
            .css_classes(["dim-label"])
            .valign(gtk::Align::Start)
            .margin_top(12)
            .build();
        let stack = gtk::Stack::new();
        stack.set_vexpand(true);
        stack.add_named(&scroller, Some("list"));
        stack.add_named(&empty, Some("empty"));
        self.append(&stack);
        let imp = self.imp();
        imp.store.replace(Some(store));
        imp.selection.replace(Some(selection));
        imp.list.replace(Some(list));
        imp.stack.replace(Some(stack));
    }

    fn open_at(&self, position: u32) {
        let Some(store) = self.imp().store.borrow().clone() else {
            return;
        };
        let Some(id) = store
            .item(position)
            .and_then(|o| summary(&o).map(|s| s.id.clone()))
        else {
            return;
        };
        let _ = WidgetExt::activate_action(self, "win.open-conversation", Some(&id.to_variant()));
    }

    /// Shows `agent`'s conversations (and follows them), or none.
    pub fn set_agent(&self, agent: Option<&AgentObject>) {
        let imp = self.imp();
        if let Some(old) = imp.agent.take() {
            for id in imp.handlers.take() {
                old.conversation().disconnect(id);
            }
        }
        let Some(agent) = agent else {
            if let Some(store) = imp.store.borrow().as_ref() {
                store.remove_all();
            }
            return;
        };
        let changed = agent.conversation().connect_conversations_changed(glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |_| this.refresh()
        ));
        let current = agent.conversation().connect_conversation_id_notify(glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |_| this.select_current()
        ));
        // The order follows the latest activity: read again after a turn.
        let turn = agent.conversation().connect_answering_notify(glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |conversation| {
                if !conversation.answering() {
                    this.refresh();
                }
            }
        ));
        imp.handlers.replace(vec![changed, current, turn]);
        imp.agent.replace(Some(agent.clone()));
        self.refresh();
    }

    /// Reads the agent's conversations again.
    pub fn refresh(&self) {
        let Some(agent) = self.imp().agent.borrow().clone() else {
            return;
        };
        let generation = self.imp().generation.get() + 1;
        self.imp().generation.set(generation);
        agent.conversation().list_conversations(glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |r: Result<crate::core::chat::Conversations, String>| {
                if this.imp().generation.get() != generation {
                    return;
                }
                match r {
                    Ok(list) => this.show(list.conversations),
                    Err(e) => tracing::warn!("conversations: {e}"),
                }
            }
        ));
    }

    fn show(&self, conversations: Vec<ConversationSummary>) {
        let imp = self.imp();
        let Some(store) = imp.store.borrow().clone() else {
            return;
        };
        // The same list again (a refresh after a turn that changed nothing
        // shown) leaves the rows as they are.
        let same = store.n_items() as usize == conversations.len()
            && conversations.iter().enumerate().all(|(i, c)| {
                store
                    .item(i as u32)
                    .is_some_and(|o| summary(&o).is_some_and(|s| *s == *c))
            });
        let objects: Vec<glib::BoxedAnyObject> = if same {
            Vec::new()
        } else {
            conversations.into_iter().map(glib::BoxedAnyObject::new).collect()
        };
        if !same {
            imp.syncing.set(true);
            store.splice(0, store.n_items(), &objects);
            imp.syncing.set(false);
        }
        let empty = store.n_items() == 0;
        if let Some(stack) = imp.stack.borrow().as_ref() {
            stack.set_visible_child_name(if empty { "empty" } else { "list" });
        }
        self.select_current();
    }

    /// Selects the agent's current conversation in the list.
    fn select_current(&self) {
        let imp = self.imp();
        let (Some(agent), Some(store), Some(selection)) = (
            imp.agent.borrow().clone(),
            imp.store.borrow().clone(),
            imp.selection.borrow().clone(),
        ) else {
            return;
        };
        let current = agent.conversation().conversation_id();
        let at = (0..store.n_items()).find(|&i| {
            !current.is_empty()
                && store
                    .item(i)
                    .is_some_and(|o| summary(&o).is_some_and(|s| s.id == current))
        });
        imp.syncing.set(true);
        selection.set_selected(at.unwrap_or(gtk::INVALID_LIST_POSITION));
        imp.syncing.set(false);
    }

    /// The titles shown, in order (for tests).
    pub fn titles(&self) -> Vec<String> {
        let Some(store) = self.imp().store.borrow().clone() else {
            return Vec::new();
        };
        (0..store.n_items())
            .filter_map(|i| store.item(i))
            .filter_map(|o| summary(&o).map(|s| s.title.clone()))
            .collect()
    }

    /// The id of the conversation at `position` (for tests).
    pub fn id_at(&self, position: u32) -> Option<String> {
        let store = self.imp().store.borrow().clone()?;
        store
            .item(position)
            .and_then(|o| summary(&o).map(|s| s.id.clone()))
    }
}
