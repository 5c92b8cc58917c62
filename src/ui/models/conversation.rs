//! An agent's conversation facet: its messages (`MessageObject`s, listed
//! as rows by `ConversationRows`), its pending permission requests
//! (`PermissionObject`s) and elicitations, the turn (answering, stalled,
//! unseen), which stored conversation it is, and the conversation calls
//! (send, cancel, answer; new, open, rename, delete, export). The
//! conversation view, the composer and the permission banner bind to it.

use std::cell::{Cell, OnceCell, RefCell};
use std::sync::OnceLock;

use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;
use gtk::glib::subclass::Signal;
use gtk::prelude::*;
use gtk::{gio, glib};

use super::props::{connect_plain, set_string, AgentRef};
use super::{ConversationRows, MessageObject, PermissionObject, SessionControls, TerminalOutputs};
use crate::core::chat::AttachmentInput;
use crate::core::events::PermissionRequest;
use crate::core::services::Core;
use crate::ui::runtime;

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::ConversationObject)]
    pub struct ConversationObject {
        pub owner: AgentRef,
        /// Where a loaded conversation's title, options and usage go.
        pub session: OnceCell<SessionControls>,
        /// What the terminals its tool calls ran printed.
        pub terminals: OnceCell<TerminalOutputs>,
        /// A conversation turn runs.
        #[property(get)]
        pub answering: Cell<bool>,
        /// Waiting for a permission or elicitation answer.
        #[property(get)]
        pub waiting: Cell<bool>,
        /// The turn has had no word from the agent for a while.
        #[property(get)]
        pub stalled: Cell<bool>,
        /// A turn ended while the user looked elsewhere.
        #[property(get)]
        pub unseen: Cell<bool>,
        /// How many elicitations wait (see `elicitations()`).
        #[property(get)]
        pub elicitation_count: Cell<u32>,
        /// The current conversation's id in the history, or "" (a new
        /// conversation before its first message).
        #[property(get)]
        pub conversation_id: RefCell<String>,
        /// Why the current conversation cannot go on, or "" (it can).
        #[property(get)]
        pub read_only: RefCell<String>,
        /// The title of the conversation this one was forked from ("" when
        /// it was not), and that conversation's id.
        #[property(get)]
        pub forked_from: RefCell<String>,
        pub forked_from_id: RefCell<String>,
        /// Files the conversation's turns changed (the Changes badge).
        #[property(get)]
        pub files_changed: Cell<u32>,
        pub elicitations: RefCell<Vec<crate::core::events::ElicitationRequest>>,
        /// Loaded from `Conversation(agent)` when first asked for: its last
        /// page, then earlier pages as the view scrolls up.
        pub messages: RefCell<Option<gio::ListStore>>,
        /// The rows of `messages`, once a view asked for them.
        pub rows: RefCell<Option<ConversationRows>>,
        /// How many of the conversation's first messages are not in
        /// `messages` yet.
        pub earlier: Cell<usize>,
        pub permissions: OnceCell<gio::ListStore>,
        /// The agent's helpers in this conversation, each with its thread.
        pub subagents: crate::ui::models::SubagentThreads,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for ConversationObject {
        const NAME: &'static str = "ParleyConversation";
        type Type = super::ConversationObject;
    }

    #[glib::derived_properties]
    impl ObjectImpl for ConversationObject {
        fn signals() -> &'static [Signal] {
            static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
            SIGNALS.get_or_init(|| {
                vec![
                    // Messages were added or changed (once per frame at most).
                    Signal::builder("conversation-changed").build(),
                    // A turn that ran has ended.
                    Signal::builder("turn-ended").build(),
                    // The list of stored conversations changed.
                    Signal::builder("conversations-changed").build(),
                    Signal::builder("permission-requested")
                        .param_types([PermissionObject::static_type()])
                        .build(),
                    // A session notice came: its severity, title and
                    // description ("" for none).
                    Signal::builder("notice")
                        .param_types([
                            String::static_type(),
                            String::static_type(),
                            String::static_type(),
                        ])
                        .build(),
                    // An elicitation came; the argument is its id.
                    Signal::builder("elicitation-requested")
                        .param_types([String::static_type()])
                        .build(),
                ]
            })
        }
    }
}

glib::wrapper! {
    pub struct ConversationObject(ObjectSubclass<imp::ConversationObject>);
}

impl ConversationObject {
    pub(super) fn new(
        agent: &str,
        core: &Core,
        session: &SessionControls,
        terminals: &TerminalOutputs,
    ) -> Self {
        let o: Self = glib::Object::new();
        o.imp().owner.set(agent, core);
        let _ = o.imp().session.set(session.clone());
        let _ = o.imp().terminals.set(terminals.clone());
        o
    }

    /// The agent's helpers in this conversation.
    pub fn subagents(&self) -> super::SubagentThreads {
        self.imp().subagents.clone()
    }

    pub(super) fn forked_from_id_cell(&self) -> String {
        self.imp().forked_from_id.borrow().clone()
    }

    pub(super) fn core(&self) -> &Core {
        self.imp().owner.core()
    }

    /// What the terminals of its tool calls printed (the tool cards show it).
    pub fn terminals(&self) -> TerminalOutputs {
        self.imp().terminals.get().cloned().unwrap_or_default()
    }

    fn session(&self) -> &SessionControls {
        self.imp()
            .session
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// The agent's name.
    pub fn agent(&self) -> String {
        self.imp().owner.name()
    }

    /// A notice came (`notice`, announced by the window).
    pub fn notice(&self, n: &crate::core::types::notice::Notice) {
        let description = n.description.clone().unwrap_or_default();
        self.emit_by_name::<()>("notice", &[&n.severity, &n.title, &description]);
    }

    /// Takes a `turn:changed` event; the end of a turn emits `turn-ended`.
    pub fn apply_turn(&self, busy: bool) {
        let was = self.imp().answering.replace(busy);
        if was != busy {
            self.notify_answering();
        }
        if was && !busy {
            self.emit_by_name::<()>("turn-ended", &[]);
        }
    }

    /// The conversation's messages, loaded from `Conversation(agent)` the
    /// first time (with its pending permission requests).
    pub fn messages(&self) -> gio::ListStore {
        let imp = self.imp();
        if let Some(store) = imp.messages.borrow().as_ref() {
            return store.clone();
        }
        let store = gio::ListStore::new::<MessageObject>();
        if let Ok((conv, earlier)) = self.core().chat.conversation_tail(&self.agent(), MESSAGE_PAGE) {
            imp.earlier.set(earlier);
            let objects: Vec<MessageObject> = conv.messages.into_iter().map(MessageObject::new).collect();
            store.splice(0, 0, &objects);
            imp.subagents.load(conv.subagents);
            self.take_requests_and_session(
                conv.permissions,
                conv.title.as_deref(),
                conv.options,
                &conv.usage,
            );
            set_string(
                self,
                &imp.conversation_id,
                conv.id.as_deref().unwrap_or_default(),
                "conversation-id",
            );
            set_string(
                self,
                &imp.read_only,
                conv.read_only.as_deref().unwrap_or_default(),
                "read-only",
            );
            self.refresh_changes();
        }
        imp.messages.replace(Some(store.clone()));
        store
    }

    /// The rows the conversation view lists: every message's, in order.
    pub fn rows(&self) -> ConversationRows {
        if let Some(rows) = self.imp().rows.borrow().as_ref() {
            return rows.clone();
        }
        let rows = ConversationRows::new(&self.messages());
        self.imp().rows.replace(Some(rows.clone()));
        rows
    }

    /// Brings message `m`'s rows in step with it (once per frame), and
    /// the list of rows if there is one.
    pub fn message_changed(&self, m: &MessageObject) {
        let rows = self.imp().rows.borrow().clone();
        match rows {
            Some(rows) => rows.message_changed(m),
            None => {
                let _ = m.sync_rows();
            }
        }
    }

    /// Takes a `changes:updated` of `conversation` (this one's or not).
    pub fn set_changes(&self, conversation: &str, files: u32) {
        let id = self.conversation_id();
        let current = if id.is_empty() {
            format!("unsaved-{}", self.agent())
        } else {
            id
        };
        if current == conversation && self.imp().files_changed.replace(files) != files {
            self.notify_files_changed();
        }
    }

    /// Reads how many files the current conversation's turns changed.
    pub fn refresh_changes(&self) {
        let (core, agent) = (self.core().clone(), self.agent());
        let this = self.downgrade();
        runtime::call(
            async move { core.chat.changes(&agent, None, None).await },
            move |r| {
                let Some(this) = this.upgrade() else { return };
                let files = r.map(|c| c.files_changed as u32).unwrap_or(0);
                if this.imp().files_changed.replace(files) != files {
                    this.notify_files_changed();
                }
            },
        );
    }

    /// Takes a `conversation:switched`: the current conversation is
    /// another (its last page is read again, into the same list), or
    /// became read-only.
    pub fn apply_switched(&self, id: Option<&str>, read_only: Option<&str>) {
        let imp = self.imp();
        set_string(
            self,
            &imp.conversation_id,
            id.unwrap_or_default(),
            "conversation-id",
        );
        set_string(self, &imp.read_only, read_only.unwrap_or_default(), "read-only");
        self.refresh_changes();
        let forked = self
            .core()
            .chat
            .conversation_tail(&self.agent(), 0)
            .ok()
            .and_then(|(c, _)| c.forked_from);
        imp.forked_from_id.replace(
            forked
                .as_ref()
                .map(|f| f.conversation.clone())
                .unwrap_or_default(),
        );
        let title = forked.map(|f| {
            f.title
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| crate::i18n::gettext("an earlier conversation"))
        });
        set_string(self, &imp.forked_from, &title.unwrap_or_default(), "forked-from");
        let Some(store) = self.loaded_messages() else {
            return;
        };
        let Ok((conv, earlier)) = self.core().chat.conversation_tail(&self.agent(), MESSAGE_PAGE) else {
            return;
        };
        let same = imp.earlier.get() == earlier
            && store.n_items() as usize == conv.messages.len()
            && conv.messages.iter().enumerate().all(|(i, m)| {
                store
                    .item(i as u32)
                    .and_downcast::<MessageObject>()
                    .is_some_and(|o| o.id() == m.id)
            });
        imp.subagents.load(conv.subagents);
        if !same {
            imp.earlier.set(earlier);
            let objects: Vec<MessageObject> = conv.messages.into_iter().map(MessageObject::new).collect();
            store.splice(0, store.n_items(), &objects);
        }
        self.take_requests_and_session(conv.permissions, conv.title.as_deref(), conv.options, &conv.usage);
    }

    /// What a conversation read from the core brings beside its messages:
    /// the permission requests pending in it, and its session's title,
    /// options and usage.
    fn take_requests_and_session(
        &self,
        requests: Vec<PermissionRequest>,
        title: Option<&str>,
        options: Vec<crate::core::types::options::SessionOption>,
        usage: &crate::core::types::message::Usage,
    ) {
        let permissions = self.permissions();
        let objects: Vec<PermissionObject> = requests.into_iter().map(PermissionObject::new).collect();
        permissions.splice(0, permissions.n_items(), &objects);
        self.update_waiting();
        self.session().apply_session(title, options);
        self.session().apply_usage(usage);
    }

    /// How many earlier messages are not loaded yet.
    pub fn earlier(&self) -> usize {
        self.imp().earlier.get()
    }

    /// Loads up to `n` earlier messages in front of the loaded ones;
    /// returns how many came.
    pub fn load_earlier(&self, n: usize) -> usize {
        let imp = self.imp();
        let earlier = imp.earlier.get();
        let (Some(store), true) = (self.loaded_messages(), earlier > 0) else {
            return 0;
        };
        let from = earlier.saturating_sub(n);
        let messages = self.core().chat.messages_range(&self.agent(), from, earlier);
        let count = messages.len();
        let objects: Vec<MessageObject> = messages.into_iter().map(MessageObject::new).collect();
        store.splice(0, 0, &objects);
        imp.earlier.set(from);
        count
    }

    /// Loads the earlier messages down to message `id`; whether it is
    /// loaded now.
    pub fn ensure_loaded(&self, id: &str) -> bool {
        let Some(position) = self.core().chat.message_position(&self.agent(), id) else {
            return false;
        };
        let earlier = self.imp().earlier.get();
        if position < earlier {
            self.load_earlier(earlier - position);
        }
        true
    }

    /// Whether message `id` is one of the earlier ones not loaded (an
    /// update to it is read when it is loaded).
    pub fn is_unloaded(&self, id: &str) -> bool {
        let earlier = self.imp().earlier.get();
        earlier > 0
            && self
                .core()
                .chat
                .message_position(&self.agent(), id)
                .is_some_and(|p| p < earlier)
    }

    /// Tells the conversation list to read the stored conversations again;
    /// `current` is the current conversation's id.
    pub fn conversations_changed(&self, current: Option<&str>) {
        set_string(
            self,
            &self.imp().conversation_id,
            current.unwrap_or_default(),
            "conversation-id",
        );
        self.emit_by_name::<()>("conversations-changed", &[]);
    }

    pub fn connect_conversations_changed<F: Fn(&Self) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        connect_plain(self, "conversations-changed", f)
    }

    /// The messages if they were ever loaded: events for a conversation
    /// never shown are skipped, it is read whole when first shown.
    pub fn loaded_messages(&self) -> Option<gio::ListStore> {
        self.imp().messages.borrow().clone()
    }

    /// Tells the views that messages changed (once per frame).
    pub fn conversation_changed(&self) {
        self.emit_by_name::<()>("conversation-changed", &[]);
    }

    pub fn connect_conversation_changed<F: Fn(&Self) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        connect_plain(self, "conversation-changed", f)
    }

    /// The pending permission requests, oldest first.
    pub fn permissions(&self) -> gio::ListStore {
        self.imp()
            .permissions
            .get_or_init(gio::ListStore::new::<PermissionObject>)
            .clone()
    }

    pub fn add_permission(&self, request: PermissionRequest) {
        let object = PermissionObject::new(request);
        self.permissions().append(&object);
        self.update_waiting();
        self.emit_by_name::<()>("permission-requested", &[&object]);
    }

    /// Tells listeners of a request that was already pending when the
    /// conversation was first read (it came in with it).
    pub fn permission_came(&self, object: &PermissionObject) {
        self.emit_by_name::<()>("permission-requested", &[object]);
    }

    pub fn remove_permission(&self, id: &str) {
        let list = self.permissions();
        if let Some(i) = (0..list.n_items()).find(|&i| {
            list.item(i)
                .and_downcast::<PermissionObject>()
                .is_some_and(|p| p.request().id == id)
        }) {
            list.remove(i);
        }
        self.update_waiting();
    }

    /// Takes `turn:stalled`.
    pub fn set_stalled(&self, stalled: bool) {
        if self.imp().stalled.replace(stalled) != stalled {
            self.notify_stalled();
        }
    }

    /// A turn's end was seen (`false`), or happened unseen (`true`).
    pub fn set_unseen(&self, unseen: bool) {
        if self.imp().unseen.replace(unseen) != unseen {
            self.notify_unseen();
        }
    }

    /// The elicitations waiting for the user, oldest first.
    pub fn elicitations(&self) -> Vec<crate::core::events::ElicitationRequest> {
        self.imp().elicitations.borrow().clone()
    }

    /// Takes `elicitation:requested`.
    pub fn add_elicitation(&self, request: crate::core::events::ElicitationRequest) {
        let id = request.id.clone();
        self.imp().elicitations.borrow_mut().push(request);
        self.elicitations_changed();
        self.emit_by_name::<()>("elicitation-requested", &[&id]);
    }

    /// Takes `elicitation:resolved`.
    pub fn remove_elicitation(&self, id: &str) {
        self.imp().elicitations.borrow_mut().retain(|e| e.id != id);
        self.elicitations_changed();
    }

    fn elicitations_changed(&self) {
        let n = u32::try_from(self.imp().elicitations.borrow().len()).unwrap_or(u32::MAX);
        if self.imp().elicitation_count.replace(n) != n {
            self.notify_elicitation_count();
        }
        self.update_waiting();
    }

    /// Answers an elicitation: `accept` with the form's values, `decline`
    /// or `cancel`. `done` gets the refusal's words, if refused.
    pub fn answer_elicitation(
        &self,
        id: &str,
        action: &str,
        content: Option<serde_json::Value>,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let (id, action) = (id.to_owned(), action.to_owned());
        runtime::call(
            async move {
                core.chat
                    .answer_elicitation(&id, &action, content.as_ref())
                    .map_err(String::from)
            },
            done,
        );
    }

    fn update_waiting(&self) {
        let waiting = self.permissions().n_items() > 0 || !self.imp().elicitations.borrow().is_empty();
        if self.imp().waiting.replace(waiting) != waiting {
            self.notify_waiting();
        }
    }

    /// Another configuration was opened: the conversation is read again
    /// when next shown.
    pub fn forget_conversation(&self) {
        let imp = self.imp();
        imp.earlier.set(0);
        if let Some(store) = imp.messages.take() {
            store.remove_all();
        }
        self.permissions().remove_all();
        self.update_waiting();
        self.conversation_changed();
    }

    /// Sends `text`; on failure `done` gets the reason (and the text, to put
    /// back: nothing is lost).
    /// Sends text and attachments; on failure `done` gets the error and
    /// the text back (nothing is lost).
    pub fn send(
        &self,
        text: String,
        attachments: Vec<AttachmentInput>,
        done: impl FnOnce(Result<(), (String, String)>) + 'static,
    ) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(
            async move {
                core.chat
                    .send_with(&agent, &text, attachments)
                    .map(|_| ())
                    .map_err(|e| (e.to_string(), text))
            },
            done,
        );
    }

    pub fn cancel(&self) {
        let core = self.core().clone();
        let agent = self.agent();
        runtime::call(async move { core.chat.cancel(&agent) }, |_| {});
    }

    pub fn answer_permission(
        &self,
        id: &str,
        option_id: &str,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let (id, option_id) = (id.to_owned(), option_id.to_owned());
        runtime::call(
            async move { core.chat.answer_permission(&id, &option_id).map_err(String::from) },
            done,
        );
    }
}

/// How many of a conversation's last messages the window holds at first
/// (a screenful and more: a 10,000-message conversation opens in about
/// 100 ms, see `cargo bench --bench window -- open`)...
pub const MESSAGE_PAGE: usize = 20;
/// ...and how many more it loads each time the view nears the top.
pub const EARLIER_PAGE: usize = 100;
