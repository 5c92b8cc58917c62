//! What waits for the user, in the window: the inbox (Ctrl+I) and its
//! count in the sidebar's header, each agent's count on its row, moving
//! between agents that wait (Alt+Up, Alt+Down), answers that came while
//! the user looked elsewhere, elicitation dialogs, the "not responding"
//! banner, and saving an "always" answer as a permission rule.

use super::*;
use crate::core::chat::InboxItem;

impl ParleyWindow {
    pub(super) fn setup_attention(&self) {
        let inbox = gio::SimpleAction::new("inbox", None);
        inbox.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, _| {
                let weak = win.downgrade();
                let open = move |item: &InboxItem| {
                    if let Some(win) = weak.upgrade() {
                        win.open_inbox_item(item);
                    }
                };
                crate::ui::widgets::inbox::show(win.upcast_ref(), win.model(), std::rc::Rc::new(open));
            }
        ));
        self.add_action(&inbox);
        for (name, step) in [("next-waiting", 1i32), ("previous-waiting", -1)] {
            let action = gio::SimpleAction::new(name, None);
            action.connect_activate(glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |_, _| win.step_waiting(step)
            ));
            self.add_action(&action);
        }
        // "Always allow/reject": the answer may become a rule (JSON target).
        let save = gio::SimpleAction::new("save-permission-rule", Some(glib::VariantTy::STRING));
        save.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, param| {
                if let Some(rule) = param.and_then(|p| p.get::<String>()) {
                    win.save_rule(&rule);
                }
                // The toast (and its focused button) goes once this returns:
                // the keyboard goes back to the composer, not to the first
                // control of the window.
                glib::idle_add_local_once(glib::clone!(
                    #[weak]
                    win,
                    move || {
                        win.composer().text_view().grab_focus();
                    }
                ));
            }
        ));
        self.add_action(&save);
        let offer = gio::SimpleAction::new("offer-permission-rule", Some(glib::VariantTy::STRING));
        offer.connect_activate(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_, param| {
                let Some(v) = param
                    .and_then(|p| p.get::<String>())
                    .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                else {
                    return;
                };
                let paths: Vec<String> = v["paths"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|p| p.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default();
                win.offer_rule(
                    v["agent"].as_str().unwrap_or_default(),
                    v["kind"].as_str().unwrap_or("other"),
                    &paths,
                    v["title"].as_str().unwrap_or_default(),
                    v["allow"].as_bool().unwrap_or(false),
                );
            }
        ));
        self.add_action(&offer);
        self.imp().stalled_restart.connect_clicked(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| {
                if let Some(name) = win.selected_agent() {
                    let _ = gtk::prelude::WidgetExt::activate_action(
                        &win,
                        "win.agent-restart",
                        Some(&name.to_variant()),
                    );
                }
            }
        ));
        let store = self.model().agents();
        for agent in (0..store.n_items()).filter_map(|i| store.item(i).and_downcast::<AgentObject>()) {
            self.watch_attention(&agent);
        }
        self.model().connect_agent_added(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |agent| win.watch_attention(agent)
        ));
        self.connect_is_active_notify(|win| {
            if let Some(agent) = win.selected_object().filter(|_| win.is_active()) {
                win.seen(&agent);
            }
        });
        self.update_inbox_count();
    }

    fn watch_attention(&self, agent: &AgentObject) {
        agent.conversation().connect_local(
            "turn-ended",
            false,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                #[weak]
                agent,
                #[upgrade_or]
                None,
                move |_| {
                    let looking = win.is_active() && win.selected_agent().as_deref() == Some(&agent.name());
                    if looking {
                        win.seen(&agent);
                    } else {
                        agent.conversation().set_unseen(true);
                    }
                    None
                }
            ),
        );
        agent.conversation().connect_local(
            "elicitation-requested",
            false,
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                #[weak]
                agent,
                #[upgrade_or]
                None,
                move |_| {
                    if win.selected_agent().as_deref() == Some(&agent.name()) {
                        win.open_elicitation(&agent, None);
                    }
                    None
                }
            ),
        );
        // (Connected for the agent's life: the window outlives none of
        // its agents' changes it must count.)
        let _ = agent.connect_attention_changed(glib::clone!(
            #[weak(rename_to = win)]
            self,
            move |_| win.update_inbox_count()
        ));
        agent
            .conversation()
            .connect_elicitation_count_notify(glib::clone!(
                #[weak(rename_to = win)]
                self,
                #[weak]
                agent,
                move |_| win.close_settled_elicitation(&agent)
            ));
    }

    /// The user sees the agent's conversation: its last answer is seen.
    pub(super) fn seen(&self, agent: &AgentObject) {
        if !self.is_active() {
            return;
        }
        // The core first: an open inbox reads it when the flag changes.
        self.core().chat.mark_seen(&agent.name());
        agent.conversation().set_unseen(false);
        if !agent.conversation().elicitations().is_empty() {
            self.open_elicitation(agent, None);
        }
    }

    fn update_inbox_count(&self) {
        let store = self.model().agents();
        let total: u32 = (0..store.n_items())
            .filter_map(|i| store.item(i).and_downcast::<AgentObject>())
            .map(|a| a.waiting_count())
            .sum();
        let imp = self.imp();
        imp.inbox_count.set_label(&total.to_string());
        imp.inbox_count.set_visible(total > 0);
        let label = if total == 0 {
            gettext("Inbox")
        } else {
            crate::i18n::fill(
                &crate::i18n::ngettext("Inbox, {n} waiting", "Inbox, {n} waiting", total),
                &[("n", &total.to_string())],
            )
        };
        crate::ui::a11y::set_label(&*imp.inbox_button, &label);
        imp.inbox_button.set_tooltip_text(Some(&label));
    }

    /// Selects the next (`1`) or previous (`-1`) agent that waits for the
    /// user, after the selected one, round the list.
    fn step_waiting(&self, step: i32) {
        let store = self.model().agents();
        let n = store.n_items();
        if n == 0 {
            return;
        }
        let current = self.selection().selected();
        let start = if current == gtk::INVALID_LIST_POSITION {
            n - 1
        } else {
            current
        };
        for k in 1..=n {
            let i = (i64::from(start) + i64::from(step) * i64::from(k)).rem_euclid(i64::from(n));
            let Some(agent) = store.item(i as u32).and_downcast::<AgentObject>() else {
                continue;
            };
            if agent.waiting_count() > 0 {
                self.select_agent(&agent.name());
                crate::ui::a11y::announce(
                    self,
                    &gettext_f("{agent} waits for you", &[("agent", &agent.title())]),
                    crate::ui::a11y::Priority::Medium,
                );
                return;
            }
        }
        crate::ui::a11y::announce(
            self,
            &gettext("No other agent waits for you"),
            crate::ui::a11y::Priority::Medium,
        );
    }

    /// Opens what an inbox row stands for.
    pub fn open_inbox_item(&self, item: &InboxItem) {
        let Some(agent) = self.agent(&item.agent) else {
            return;
        };
        match (item.kind, &item.message_id) {
            ("sign-in", _) => self.show_sign_in(&agent),
            ("elicitation", _) => {
                self.select_agent(&item.agent);
                self.open_elicitation(&agent, item.id.as_deref());
            }
            (_, Some(message)) => {
                self.open_message(&item.agent, &agent.conversation().conversation_id(), message)
            }
            _ => self.select_agent(&item.agent),
        }
        if self.imp().leaflet.is_folded() {
            self.imp().leaflet.navigate(adw::NavigationDirection::Forward);
        }
    }

    /// Shows the agent's waiting elicitation (`id`, or its oldest), once.
    pub fn open_elicitation(&self, agent: &AgentObject, id: Option<&str>) {
        let requests = agent.conversation().elicitations();
        // On its own, a dialog opens once per elicitation: one the user
        // answered (its answer on its way) is not shown again.
        let shown = self.imp().elicitations_shown.borrow().clone();
        let Some(request) = requests
            .iter()
            .find(|r| id.map_or(!shown.contains(&r.id), |id| r.id == id))
        else {
            return;
        };
        self.imp()
            .elicitations_shown
            .borrow_mut()
            .insert(request.id.clone());
        if let Some((_, shown, window)) = self.imp().elicitation_dialog.borrow().as_ref() {
            if *shown == request.id && window.is_visible() {
                window.present();
                return;
            }
        }
        let window = crate::ui::widgets::elicitation::show(self, agent, request);
        self.imp()
            .elicitation_dialog
            .replace(Some((agent.name(), request.id.clone(), window)));
    }

    /// Closes the dialog of an elicitation settled elsewhere.
    fn close_settled_elicitation(&self, agent: &AgentObject) {
        let settled = self
            .imp()
            .elicitation_dialog
            .borrow()
            .as_ref()
            .and_then(|(name, id, window)| {
                let settled =
                    *name == agent.name() && agent.conversation().elicitations().iter().all(|e| e.id != *id);
                (settled && window.is_visible()).then(|| window.clone())
            });
        if let Some(window) = settled {
            window.close();
        }
    }

    /// The elicitation dialog shown, if any (for tests).
    pub fn elicitation_dialog(&self) -> Option<gtk::Window> {
        self.imp()
            .elicitation_dialog
            .borrow()
            .as_ref()
            .map(|(_, _, w)| w.clone())
            .filter(|w| w.is_visible())
    }

    /// The banner of a turn with no word from the agent for a while.
    pub(super) fn update_stalled(&self, agent: &AgentObject) {
        let imp = self.imp();
        let stalled = agent.conversation().stalled() && agent.conversation().answering();
        imp.stalled_label.set_label(&gettext_f(
            "{agent} is not responding: nothing has come for a while. Cancel the turn, or restart the agent.",
            &[("agent", &agent.title())],
        ));
        if imp.stalled_revealer.reveals_child() != stalled {
            imp.stalled_revealer.set_reveal_child(stalled);
            if stalled {
                crate::ui::a11y::announce(self, &imp.stalled_label.label(), crate::ui::a11y::Priority::High);
            }
        }
    }

    /// Adds a permission rule (a JSON object) to the configuration.
    fn save_rule(&self, rule: &str) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(rule) else {
            return;
        };
        let core = self.core().clone();
        crate::ui::runtime::call(
            async move {
                core.config
                    .edit(|text| {
                        Ok((
                            crate::core::config::edit::append_item(text, "permissions", &value)?,
                            (),
                        ))
                    })
                    .await
            },
            glib::clone!(
                #[weak(rename_to = win)]
                self,
                move |r: Result<(), String>| match r {
                    Ok(()) => win.toast(&gettext("The rule was saved; Preferences lists your rules")),
                    Err(e) => win.toast(&e),
                }
            ),
        );
    }

    /// After an "always" answer: a toast that offers to keep it as a rule
    /// ("for this agent, for edits under ~/src/parley").
    pub fn offer_rule(&self, agent_name: &str, kind: &str, paths: &[String], title: &str, allow: bool) {
        let Some(agent) = self.agent(agent_name) else {
            return;
        };
        let dir = common_dir(paths);
        let mut rule = serde_json::json!({
            "agents": [agent.name()],
            "kind": kind,
            "decision": if allow { "allow" } else { "reject" },
        });
        let shown_dir = dir.as_ref().map(|d| tilde(d));
        // Never wider than what was answered: without a directory, the
        // rule is for this very title.
        match &shown_dir {
            Some(d) => rule["path"] = serde_json::json!(format!("{d}/**")),
            None => rule["title"] = serde_json::json!(globset::escape(title)),
        }
        let scope = match &shown_dir {
            Some(d) => gettext_f(
                "for {agent}, for {kind} under {dir}",
                &[("agent", &agent.title()), ("kind", kind), ("dir", d)],
            ),
            None => gettext_f(
                "for {agent}, for “{title}”",
                &[("agent", &agent.title()), ("title", title)],
            ),
        };
        let text = if allow {
            gettext_f(
                "Always allow {scope}, also after this session?",
                &[("scope", &scope)],
            )
        } else {
            gettext_f(
                "Always reject {scope}, also after this session?",
                &[("scope", &scope)],
            )
        };
        let toast = adw::Toast::new(&crate::ui::markdown::escape(&text));
        toast.set_button_label(Some(&gettext("Save as Rule")));
        toast.set_action_name(Some("win.save-permission-rule"));
        toast.set_action_target_value(Some(&rule.to_string().to_variant()));
        toast.set_timeout(10);
        self.imp().toast_overlay.add_toast(toast);
        crate::ui::a11y::announce(self, &text, crate::ui::a11y::Priority::Medium);
    }
}

/// The deepest directory holding every path.
fn common_dir(paths: &[String]) -> Option<String> {
    let mut parts: Option<Vec<&str>> = None;
    for p in paths {
        let dir: Vec<&str> = std::path::Path::new(p).parent()?.to_str()?.split('/').collect();
        parts = Some(match parts {
            None => dir,
            Some(prev) => prev
                .iter()
                .zip(&dir)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| *a)
                .collect(),
        });
    }
    parts.map(|p| p.join("/")).filter(|d| d.len() > 1)
}

/// `~/…` for a path in the home directory, as people write rules.
/// (Glob characters in a directory's name are escaped.)
fn tilde(path: &str) -> String {
    let home = crate::core::config::model::home_dir().display().to_string();
    match path.strip_prefix(&home) {
        Some(rest) if rest.starts_with('/') => format!("~{}", globset::escape(rest)),
        _ => globset::escape(path),
    }
}
