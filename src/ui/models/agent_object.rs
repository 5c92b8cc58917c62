//! One agent as the window knows it: what `AgentService.List` and the events
//! say, and the models it owns: its conversation (`MessageObject`s), its
//! pending permission requests (`PermissionObject`s) and its log (a live
//! `gtk::StringList`). Its properties are read-only from outside; only the
//! events (through `AppModel::apply`) change them. Widgets bind to it and
//! ask it to act (`send`, `cancel`, `answer_permission`, `lifecycle`).

use std::cell::{Cell, OnceCell, RefCell};
use std::sync::OnceLock;

use gtk::glib::prelude::*;
use gtk::glib::subclass::prelude::*;
use gtk::glib::subclass::Signal;
use gtk::prelude::*;
use gtk::{gio, glib};

use super::{AgentStatus, ConversationRows, Lifecycle, MessageObject, PermissionObject};
use crate::core::chat::AttachmentInput;
use crate::core::events::{AgentStateChanged, AuthStatus, PermissionRequest};
use crate::core::secrets::Secret;
use crate::core::services::Core;
use crate::core::supervisor::AgentInfo;
use crate::core::types::message::{Command, Usage};
use crate::core::types::options::SessionOption;
use crate::ui::runtime;

mod imp {
    use super::*;

    #[derive(Default, glib::Properties)]
    #[properties(wrapper_type = super::AgentObject)]
    pub struct AgentObject {
        #[property(get)]
        pub name: RefCell<String>,
        #[property(get)]
        pub title: RefCell<String>,
        #[property(get)]
        pub icon: RefCell<String>,
        #[property(get)]
        pub description: RefCell<String>,
        /// The newer version the registry has, or "".
        #[property(get)]
        pub update_available: RefCell<String>,
        /// Added from the ACP registry (Add Agent).
        #[property(get)]
        pub from_registry: Cell<bool>,
        #[property(get, builder(AgentStatus::Stopped))]
        pub status: Cell<AgentStatus>,
        #[property(get)]
        pub error: RefCell<String>,
        #[property(get)]
        pub outdated: Cell<bool>,
        /// A conversation turn runs.
        #[property(get)]
        pub answering: Cell<bool>,
        /// Waiting for a permission answer.
        #[property(get)]
        pub waiting: Cell<bool>,
        #[property(get)]
        pub usage_used: Cell<u64>,
        #[property(get)]
        pub usage_size: Cell<u64>,
        /// The session's cost so far ("" when the agent tells none), e.g.
        /// "0.12 USD".
        #[property(get)]
        pub cost: RefCell<String>,
        /// The session's title (`session_info_update`), or "".
        #[property(get)]
        pub session_title: RefCell<String>,
        /// The current conversation's id in the history, or "" (a new
        /// conversation before its first message).
        #[property(get)]
        pub conversation_id: RefCell<String>,
        /// Why the current conversation cannot go on, or "" (it can).
        #[property(get)]
        pub read_only: RefCell<String>,
        /// The session's options: the composer's pickers.
        pub options: RefCell<Vec<SessionOption>>,
        /// The agent asked to be signed in to.
        #[property(get)]
        pub needs_sign_in: Cell<bool>,
        /// A sign-in is under way (its method's id), or "".
        #[property(get)]
        pub signing_in: RefCell<String>,
        #[property(get)]
        pub can_logout: Cell<bool>,
        #[property(get)]
        pub has_saved_keys: Cell<bool>,
        /// The turn has had no word from the agent for a while.
        #[property(get)]
        pub stalled: Cell<bool>,
        /// A turn ended while the user looked elsewhere.
        #[property(get)]
        pub unseen: Cell<bool>,
        /// How many elicitations wait (see `elicitations()`).
        #[property(get)]
        pub elicitation_count: Cell<u32>,
        pub elicitations: RefCell<Vec<crate::core::events::ElicitationRequest>>,
        /// The whole of the last `auth:changed`.
        pub auth: RefCell<Option<AuthStatus>>,
        pub core: OnceCell<Core>,
        /// Loaded from `Conversation(agent)` when first asked for: its last
        /// page, then earlier pages as the view scrolls up.
        pub messages: RefCell<Option<gio::ListStore>>,
        /// The rows of `messages`, once a view asked for them.
        pub rows: RefCell<Option<ConversationRows>>,
        /// How many of the conversation's first messages are not in
        /// `messages` yet.
        pub earlier: Cell<usize>,
        pub permissions: OnceCell<gio::ListStore>,
        /// Filled from the supervisor when first asked for, then live.
        pub logs: OnceCell<gtk::StringList>,
        pub logs_fresh: Cell<bool>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for AgentObject {
        const NAME: &'static str = "ParleyAgentObject";
        type Type = super::AgentObject;
    }

    #[glib::derived_properties]
    impl ObjectImpl for AgentObject {
        fn signals() -> &'static [Signal] {
            static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
            SIGNALS.get_or_init(|| {
                vec![
                    // Messages were added or changed (once per frame at most).
                    Signal::builder("conversation-changed").build(),
                    // A turn that ran has ended.
                    Signal::builder("turn-ended").build(),
                    // The agent went to `error`; the argument is the reason.
                    Signal::builder("failed")
                        .param_types([String::static_type()])
                        .build(),
                    // The sign-in status changed (see `auth()`).
                    Signal::builder("auth-changed").build(),
                    // The session's options changed (see `options()`).
                    Signal::builder("options-changed").build(),
                    // The list of stored conversations changed.
                    Signal::builder("conversations-changed").build(),
                    Signal::builder("permission-requested")
                        .param_types([PermissionObject::static_type()])
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
    pub struct AgentObject(ObjectSubclass<imp::AgentObject>);
}

impl AgentObject {
    pub fn new(info: &AgentInfo, core: &Core) -> Self {
        let o: Self = glib::Object::new();
        o.imp().name.replace(info.name.clone());
        let _ = o.imp().core.set(core.clone());
        o.update(info);
        o
    }

    fn core(&self) -> &Core {
        self.imp()
            .core
            .get()
            .unwrap_or_else(|| unreachable!("set in new()"))
    }

    /// Takes what `AgentService.List` says.
    pub fn update(&self, info: &AgentInfo) {
        let imp = self.imp();
        set_string(self, &imp.title, &info.title, "title");
        let icon = if info.icon.is_empty() {
            "system-run-symbolic"
        } else {
            info.icon.as_str()
        };
        set_string(self, &imp.icon, icon, "icon");
        set_string(self, &imp.description, &info.description, "description");
        let update = info.update_available.as_deref().unwrap_or_default();
        set_string(self, &imp.update_available, update, "update-available");
        if imp.from_registry.replace(info.registry.is_some()) != info.registry.is_some() {
            self.notify_from_registry();
        }
        if imp.needs_sign_in.replace(info.needs_sign_in) != info.needs_sign_in {
            self.notify_needs_sign_in();
        }
        self.set_status(
            info.state.into(),
            info.error.as_deref().unwrap_or_default(),
            info.outdated,
        );
    }

    /// Takes an `agent:state` event; going to `error` emits `failed`.
    pub fn apply_state(&self, s: &AgentStateChanged) {
        let error = s.error.as_deref().unwrap_or_default();
        let failed = AgentStatus::from(s.state) == AgentStatus::Error && self.status() != AgentStatus::Error;
        self.set_status(s.state.into(), error, s.outdated);
        if failed {
            self.emit_by_name::<()>("failed", &[&error.to_owned()]);
        }
    }

    fn set_status(&self, status: AgentStatus, error: &str, outdated: bool) {
        let imp = self.imp();
        let _guard = self.freeze_notify();
        if imp.status.replace(status) != status {
            self.notify_status();
        }
        set_string(self, &imp.error, error, "error");
        if imp.outdated.replace(outdated) != outdated {
            self.notify_outdated();
        }
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

    pub fn apply_usage(&self, usage: &Usage) {
        let imp = self.imp();
        let _guard = self.freeze_notify();
        if imp.usage_used.replace(usage.used) != usage.used {
            self.notify_usage_used();
        }
        if imp.usage_size.replace(usage.size) != usage.size {
            self.notify_usage_size();
        }
        let cost = usage
            .cost
            .as_ref()
            .map(|c| format!("{:.2} {}", c.amount, c.currency))
            .unwrap_or_default();
        set_string(self, &imp.cost, &cost, "cost");
    }

    /// Takes a `session:changed`: the title and the pickers.
    pub fn apply_session(&self, title: Option<&str>, options: Vec<SessionOption>) {
        let imp = self.imp();
        set_string(
            self,
            &imp.session_title,
            title.unwrap_or_default(),
            "session-title",
        );
        if *imp.options.borrow() != options {
            imp.options.replace(options);
            self.emit_by_name::<()>("options-changed", &[]);
        }
    }

    /// The session's options (empty before a session is open).
    pub fn options(&self) -> Vec<SessionOption> {
        self.imp().options.borrow().clone()
    }

    pub fn connect_options_changed<F: Fn(&Self) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        self.connect_local("options-changed", false, move |args| {
            if let Some(o) = args.first().and_then(|a| a.get::<Self>().ok()) {
                f(&o);
            }
            None
        })
    }

    /// Opens the agent's session (starting it if need be), so its pickers
    /// show before the first message. Quietly: a failure shows where the
    /// agent's state and the sign-in page already tell it.
    pub fn prepare(&self) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(async move { core.chat.prepare(&agent).await.map(|_| ()) }, |_| {});
    }

    /// Changes a session option; `done` gets the agent's refusal, if any
    /// (the pickers then show the old value again, from `options()`).
    pub fn set_option(
        &self,
        id: &str,
        value: serde_json::Value,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let (agent, id) = (self.name(), id.to_owned());
        runtime::call(
            async move {
                core.chat
                    .set_option(&agent, &id, value)
                    .await
                    .map(|_| ())
                    .map_err(String::from)
            },
            glib::clone!(
                #[weak(rename_to = this)]
                self,
                move |r: Result<(), String>| {
                    if r.is_err() {
                        // The pickers show the old value again.
                        this.emit_by_name::<()>("options-changed", &[]);
                    }
                    done(r);
                }
            ),
        );
    }

    /// Files under the agent's working directory matching `query` (for
    /// `@`-mentions), best first, with the directory they are relative to.
    pub fn find_files(&self, query: &str, done: impl FnOnce(Vec<String>) + 'static) {
        let core = self.core().clone();
        let (agent, query) = (self.name(), query.to_owned());
        runtime::call(
            async move { core.chat.find_files(&agent, &query, 12).await.unwrap_or_default() },
            done,
        );
    }

    pub fn working_dir(&self) -> Option<std::path::PathBuf> {
        self.core().agents.working_dir(&self.name())
    }

    /// What the agent's last `initialize` said it takes in a prompt.
    pub fn prompt_capabilities(&self) -> Option<agent_client_protocol_schema::v1::PromptCapabilities> {
        self.core()
            .agents
            .capabilities(&self.name())
            .map(|c| c.prompt_capabilities)
    }

    /// The spec's "Shown as", with "restart to apply changes" when outdated
    /// and "sign-in needed" when the agent asked for it.
    pub fn shown_as(&self) -> String {
        let status = self.status();
        let mut shown = status.shown_as();
        if self.outdated() && status.is_running() {
            shown = format!("{shown} · {}", crate::i18n::gettext("restart to apply changes"));
        }
        if self.needs_sign_in() && status != AgentStatus::Error {
            shown = format!("{shown} · {}", crate::i18n::gettext("sign-in needed"));
        }
        shown
    }

    // ---- signing in ----

    /// Takes an `auth:changed` event.
    pub fn apply_auth(&self, status: AuthStatus) {
        let imp = self.imp();
        let _guard = self.freeze_notify();
        if imp.needs_sign_in.replace(status.needs_sign_in) != status.needs_sign_in {
            self.notify_needs_sign_in();
        }
        let signing = status.signing_in.clone().unwrap_or_default();
        set_string(self, &imp.signing_in, &signing, "signing-in");
        if imp.can_logout.replace(status.can_logout) != status.can_logout {
            self.notify_can_logout();
        }
        let saved = !status.saved_keys.is_empty();
        if imp.has_saved_keys.replace(saved) != saved {
            self.notify_has_saved_keys();
        }
        let changed = imp.auth.borrow().as_ref() != Some(&status);
        imp.auth.replace(Some(status));
        if changed {
            self.emit_by_name::<()>("auth-changed", &[]);
        }
    }

    pub fn connect_auth_changed<F: Fn(&Self) + 'static>(&self, f: F) -> glib::SignalHandlerId {
        self.connect_local("auth-changed", false, move |args| {
            if let Some(o) = args.first().and_then(|a| a.get::<Self>().ok()) {
                f(&o);
            }
            None
        })
    }

    /// The last sign-in status (read from the core the first time).
    pub fn auth(&self) -> Option<AuthStatus> {
        if self.imp().auth.borrow().is_none() {
            if let Ok(status) = self.core().auth.status(&self.name()) {
                self.apply_auth(status);
            }
        }
        self.imp().auth.borrow().clone()
    }

    /// Signs in with an agent or `env_var` method; `values` are saved in
    /// the keyring first.
    pub fn sign_in(
        &self,
        method: &str,
        values: Vec<(String, Secret)>,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let (agent, method) = (self.name(), method.to_owned());
        runtime::call(
            async move {
                core.auth
                    .sign_in(&agent, &method, values)
                    .await
                    .map_err(String::from)
            },
            done,
        );
    }

    /// Starts the agent if it is not running, so that its sign-in methods
    /// are known (they come as `auth:changed`).
    pub fn load_auth_methods(&self, done: impl FnOnce(Result<(), String>) + 'static) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(
            async move { core.auth.methods(&agent).await.map(|_| ()).map_err(String::from) },
            done,
        );
    }

    pub fn cancel_sign_in(&self) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(async move { core.auth.cancel(&agent).await }, |_| {});
    }

    pub fn forget_keys(&self, done: impl FnOnce(Result<(), String>) + 'static) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(
            async move { core.auth.forget_keys(&agent).await.map_err(String::from) },
            done,
        );
    }

    pub fn logout(&self, done: impl FnOnce(Result<(), String>) + 'static) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(
            async move { core.auth.logout(&agent).await.map_err(String::from) },
            done,
        );
    }

    /// Starts a terminal method's command; `started` gets it (to show), and
    /// [`AgentObject::watch_login`] then waits for its end.
    pub fn login_terminal(
        &self,
        method: &str,
        started: impl FnOnce(Result<crate::core::supervisor::LoginTerminal, String>) + 'static,
    ) {
        let core = self.core().clone();
        let (agent, method) = (self.name(), method.to_owned());
        runtime::call(
            async move {
                core.auth
                    .login_terminal(&agent, &method)
                    .await
                    .map_err(String::from)
            },
            started,
        );
    }

    /// Waits for the sign-in command to end, or ends it when `cancel`
    /// fires; then tells the core (which restarts the agent on success).
    pub fn watch_login(
        &self,
        mut terminal: crate::core::supervisor::LoginTerminal,
        cancel: tokio::sync::oneshot::Receiver<()>,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(
            async move {
                let status = tokio::select! {
                    status = terminal.wait() => status,
                    _ = cancel => None,
                };
                // Whatever it left goes (and all of it when cancelled).
                tokio::spawn(terminal.end());
                core.auth
                    .login_finished(&agent, status)
                    .await
                    .map_err(String::from)
            },
            done,
        );
    }

    pub fn is_running(&self) -> bool {
        self.status().is_running()
    }

    // ---- the conversation ----

    /// The conversation's messages, loaded from `Conversation(agent)` the
    /// first time (with its pending permission requests).
    pub fn messages(&self) -> gio::ListStore {
        let imp = self.imp();
        if let Some(store) = imp.messages.borrow().as_ref() {
            return store.clone();
        }
        let store = gio::ListStore::new::<MessageObject>();
        if let Ok((conv, earlier)) = self.core().chat.conversation_tail(&self.name(), MESSAGE_PAGE) {
            imp.earlier.set(earlier);
            let objects: Vec<MessageObject> = conv.messages.into_iter().map(MessageObject::new).collect();
            store.splice(0, 0, &objects);
            let permissions = self.permissions();
            let objects: Vec<PermissionObject> =
                conv.permissions.into_iter().map(PermissionObject::new).collect();
            permissions.splice(0, permissions.n_items(), &objects);
            self.update_waiting();
            self.apply_session(conv.title.as_deref(), conv.options);
            self.apply_usage(&conv.usage);
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
        let Some(store) = self.loaded_messages() else {
            return;
        };
        let Ok((conv, earlier)) = self.core().chat.conversation_tail(&self.name(), MESSAGE_PAGE) else {
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
        if !same {
            imp.earlier.set(earlier);
            let objects: Vec<MessageObject> = conv.messages.into_iter().map(MessageObject::new).collect();
            store.splice(0, store.n_items(), &objects);
        }
        let permissions = self.permissions();
        let objects: Vec<PermissionObject> =
            conv.permissions.into_iter().map(PermissionObject::new).collect();
        permissions.splice(0, permissions.n_items(), &objects);
        self.update_waiting();
        self.apply_session(conv.title.as_deref(), conv.options);
        self.apply_usage(&conv.usage);
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
        let messages = self.core().chat.messages_range(&self.name(), from, earlier);
        let count = messages.len();
        let objects: Vec<MessageObject> = messages.into_iter().map(MessageObject::new).collect();
        store.splice(0, 0, &objects);
        imp.earlier.set(from);
        count
    }

    /// Loads the earlier messages down to message `id`; whether it is
    /// loaded now.
    pub fn ensure_loaded(&self, id: &str) -> bool {
        let Some(position) = self.core().chat.message_position(&self.name(), id) else {
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
                .message_position(&self.name(), id)
                .is_some_and(|p| p < earlier)
    }

    /// The ids of the conversation's messages whose text contains `query`
    /// (lower case), loaded or not, in order.
    pub fn find(&self, query: &str) -> Vec<String> {
        self.core()
            .chat
            .messages_range(&self.name(), 0, usize::MAX)
            .into_iter()
            .filter(|m| m.text().to_lowercase().contains(query))
            .map(|m| m.id)
            .collect()
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
        self.connect_local("conversations-changed", false, move |args| {
            if let Some(o) = args.first().and_then(|a| a.get::<Self>().ok()) {
                f(&o);
            }
            None
        })
    }

    /// The stored conversations, newest first (and the agent's own
    /// sessions Parley has not stored).
    pub fn list_conversations(
        &self,
        done: impl FnOnce(Result<crate::core::chat::Conversations, String>) + 'static,
    ) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(
            async move { core.chat.list(&agent, 0, 10_000).await.map_err(String::from) },
            done,
        );
    }

    /// `New`, `Open`, `Delete`, `Rename` of a conversation. A switch
    /// shows at once (its event, a frame later, then finds it shown).
    pub fn conversation_action(
        &self,
        what: ConversationAction,
        done: impl FnOnce(Result<(), String>) + 'static,
    ) {
        let core = self.core().clone();
        let agent = self.name();
        let switches = matches!(what, ConversationAction::New | ConversationAction::Open(_));
        let done = glib::clone!(
            #[weak(rename_to = this)]
            self,
            move |r: Result<(), String>| {
                if switches && r.is_ok() {
                    if let Ok((conv, _)) = this.core().chat.conversation_tail(&this.name(), 0) {
                        this.apply_switched(conv.id.as_deref(), conv.read_only.as_deref());
                    }
                }
                done(r);
            }
        );
        runtime::call(
            async move {
                match what {
                    ConversationAction::New => core.chat.new_conversation(&agent),
                    ConversationAction::Open(id) => core.chat.switch_to(&agent, &id).await,
                    ConversationAction::Delete(id) => core.chat.delete(&agent, &id).await,
                    ConversationAction::Rename(id, title) => core.chat.rename(&agent, &id, &title),
                }
                .map_err(String::from)
            },
            done,
        );
    }

    /// The current conversation as Markdown.
    pub fn export(&self) -> Result<String, String> {
        self.core().chat.export(&self.name()).map_err(String::from)
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
        self.connect_local("conversation-changed", false, move |args| {
            if let Some(o) = args.first().and_then(|a| a.get::<Self>().ok()) {
                f(&o);
            }
            None
        })
    }

    /// The slash commands the agent offers.
    pub fn commands(&self) -> Vec<Command> {
        self.core().chat.commands(&self.name())
    }

    // ---- permissions ----

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

    /// How many things wait for the user at this agent (its badge): its
    /// permission and elicitation requests, an unseen answer, a sign-in, a
    /// failure.
    pub fn waiting_count(&self) -> u32 {
        self.permissions().n_items()
            + self.elicitation_count()
            + u32::from(self.unseen())
            + u32::from(self.needs_sign_in())
            + u32::from(self.status() == AgentStatus::Error)
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

    // ---- the log ----

    /// The last lines of the agent's stderr, live.
    pub fn logs(&self) -> gtk::StringList {
        self.imp()
            .logs
            .get_or_init(|| {
                let lines = self.core().agents.logs(&self.name()).unwrap_or_default();
                let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
                self.imp().logs_fresh.set(true);
                gtk::StringList::new(&refs)
            })
            .clone()
    }

    pub fn push_log(&self, line: &str) {
        // Until someone looks, the supervisor keeps the lines.
        let Some(logs) = self.imp().logs.get() else {
            return;
        };
        let n = logs.n_items();
        // The first event after the list was read may carry its last line.
        if self.imp().logs_fresh.replace(false) && n > 0 && logs.string(n - 1).as_deref() == Some(line) {
            return;
        }
        // (Views redraw at most once a frame, however fast lines come.)
        if n as usize >= crate::core::supervisor::LOG_LINES {
            logs.remove(0);
        }
        logs.append(line);
    }

    // ---- acting ----

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
        let agent = self.name();
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
        let agent = self.name();
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

    pub fn lifecycle(&self, what: Lifecycle, done: impl FnOnce(Result<(), String>) + 'static) {
        let core = self.core().clone();
        let agent = self.name();
        runtime::call(
            async move {
                // A failed start is told by its reason; the agent's last
                // lines are in its log and its error.
                match what {
                    Lifecycle::Start => core.agents.start(&agent).await.map_err(|e| e.reason),
                    Lifecycle::Stop => core.agents.stop(&agent).await.map_err(String::from),
                    Lifecycle::Restart => core.agents.restart(&agent).await.map_err(|e| e.reason),
                }
            },
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

/// What `conversation_action` does.
pub enum ConversationAction {
    New,
    Open(String),
    Delete(String),
    Rename(String, String),
}

/// Sets a string property's cell and notifies when it changed.
fn set_string(o: &AgentObject, cell: &RefCell<String>, value: &str, property: &str) {
    if *cell.borrow() != value {
        cell.replace(value.to_owned());
        o.notify(property);
    }
}
