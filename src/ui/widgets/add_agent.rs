//! "Add Agent…": the ACP registry's agents, searchable, each with its icon,
//! name, description, version, licence and source, and Add (or Added, or
//! Update). Adding installs the agent (a progress bar with Cancel while it
//! downloads), writes its entry into the configuration, then selects and
//! starts it, so that one that needs signing in shows its sign-in page.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use adw::prelude::*;
use gtk::{gio, glib};

use crate::core::registry::listing::{Listed, Listing, Source};
use crate::core::registry::service::RegistryService;
use crate::i18n::{gettext, gettext_f};
use crate::ui::models::AppModel;

/// One row's parts that change while it installs.
struct RowParts {
    listed: Listed,
    row: adw::ActionRow,
    stack: gtk::Stack,
    progress: gtk::ProgressBar,
    icon: gtk::Image,
}

/// Opens an agent that was just added, by its name.
pub type OnAdded = Rc<dyn Fn(&str)>;

struct Dialog {
    /// The window it opened over: its toasts tell what happened after the
    /// dialog closed.
    parent: glib::WeakRef<gtk::Window>,
    registry: RegistryService,
    on_added: OnAdded,
    /// Weak: the window holds the dialog (its close-request handler), not
    /// the other way round.
    window: glib::WeakRef<adw::Window>,
    /// The model's `registry-progress` handler, let go with the dialog.
    progress_handler: RefCell<Option<(crate::ui::models::AppModel, glib::SignalHandlerId)>>,
    toasts: adw::ToastOverlay,
    source: gtk::Label,
    stack: gtk::Stack,
    list: gtk::ListBox,
    search: gtk::SearchEntry,
    rows: RefCell<Vec<RowParts>>,
    /// Where the agent added runs (here, unless switched on).
    place: super::add_agent_place::Place,
}

/// Opens the dialog over `parent` and reads the registry (the cached copy
/// when it is fresh); `model` tells how installs go, and an agent added
/// goes to `on_added`.
pub fn show(parent: &gtk::Window, model: &AppModel, on_added: OnAdded) -> adw::Window {
    let window = adw::Window::builder()
        .title(gettext("Add Agent"))
        .modal(true)
        .transient_for(parent)
        .default_width(640)
        .default_height(640)
        .build();
    let search = gtk::SearchEntry::builder()
        .placeholder_text(gettext("Search agents"))
        .hexpand(true)
        .build();
    crate::ui::a11y::set_label(&search, &gettext("Search agents"));
    let refresh = gtk::Button::builder()
        .icon_name("view-refresh-symbolic")
        .tooltip_text(gettext("Fetch the Registry Again"))
        .build();
    crate::ui::a11y::set_label(&refresh, &gettext("Fetch the Registry Again"));
    let header = adw::HeaderBar::builder()
        .title_widget(&adw::Clamp::builder().maximum_size(400).child(&search).build())
        .build();
    header.pack_start(&refresh);
    let source = gtk::Label::builder()
        .wrap(true)
        .xalign(0.0)
        .margin_start(12)
        .margin_end(12)
        .margin_top(6)
        .css_classes(["dim-label", "caption"])
        .build();
    let (list, scroller) = super::boxed_list(&gettext("Agents in the registry"), 720);
    let loading = adw::StatusPage::builder()
        .title(gettext("Reading the Registry…"))
        .child(
            &gtk::Spinner::builder()
                .spinning(true)
                .width_request(32)
                .height_request(32)
                .build(),
        )
        .vexpand(true)
        .build();
    let empty = adw::StatusPage::builder()
        .icon_name("system-search-symbolic")
        .title(gettext("No Agents Match"))
        .description(gettext("Try other words"))
        .vexpand(true)
        .build();
    let stack = gtk::Stack::new();
    stack.add_named(&loading, Some("loading"));
    stack.add_named(&scroller, Some("list"));
    stack.add_named(&empty, Some("empty"));
    let content = gtk::Box::new(gtk::Orientation::Vertical, 0);
    content.append(&header);
    content.append(&source);
    let place = super::add_agent_place::Place::new();
    content.append(&place.widget(720));
    content.append(&stack);
    let toasts = adw::ToastOverlay::new();
    toasts.set_child(Some(&content));
    window.set_content(Some(&toasts));
    let keys = gtk::ShortcutController::new();
    super::add_close_keys(&keys);
    window.add_controller(keys);

    let dialog = Rc::new(Dialog {
        parent: parent.downgrade(),
        registry: model.core().registry.clone(),
        on_added,
        window: window.downgrade(),
        progress_handler: RefCell::default(),
        toasts,
        source,
        stack,
        list: list.clone(),
        search: search.clone(),
        rows: RefCell::default(),
        place,
    });
    list.set_filter_func(glib::clone!(
        #[weak]
        search,
        #[upgrade_or]
        true,
        move |row| matches(row, &search.text())
    ));
    search.connect_search_changed(glib::clone!(
        #[weak]
        dialog,
        move |_| dialog.filter()
    ));
    refresh.connect_clicked(glib::clone!(
        #[weak]
        dialog,
        move |_| dialog.load(true)
    ));
    let progress = model.connect_registry_progress(glib::clone!(
        #[weak]
        dialog,
        move |id, phase, done, total| dialog.progress(id, phase, done, total)
    ));
    dialog.progress_handler.replace(Some((model.clone(), progress)));
    // The dialog lives as long as this handler, that is, as the window.
    window.connect_close_request(glib::clone!(
        #[strong]
        dialog,
        move |_| {
            dialog.let_go_of_progress();
            glib::Propagation::Proceed
        }
    ));
    dialog.load(false);
    window.present();
    search.grab_focus();
    window
}

/// A row matches when every word of the query is in its name, id or description.
fn matches(row: &gtk::ListBoxRow, query: &str) -> bool {
    let hay = row.widget_name().to_lowercase();
    query.to_lowercase().split_whitespace().all(|w| hay.contains(w))
}

fn age(fetched_at: u64) -> String {
    let then = std::time::UNIX_EPOCH + std::time::Duration::from_secs(fetched_at);
    super::conversation_list::when(&humantime::format_rfc3339(then).to_string())
}

impl Drop for Dialog {
    fn drop(&mut self) {
        self.let_go_of_progress();
    }
}

impl Dialog {
    /// A toast in the window the dialog opened over.
    fn toast_parent(&self, text: &str) {
        if let Some(parent) = self.parent.upgrade() {
            let _ = parent.activate_action("win.toast", Some(&text.to_variant()));
        }
    }

    fn let_go_of_progress(&self) {
        if let Some((model, id)) = self.progress_handler.take() {
            model.disconnect(id);
        }
    }

    fn is_open(&self) -> bool {
        self.window.upgrade().is_some_and(|w| w.is_visible())
    }

    fn load(self: &Rc<Self>, refresh: bool) {
        self.stack.set_visible_child_name("loading");
        let registry = self.registry.clone();
        let this = self.clone();
        crate::ui::runtime::call(
            async move { registry.list(refresh).await },
            move |listing: Listing| {
                this.show_listing(listing);
                this.load_icons();
            },
        );
    }

    /// The icons come after the list: those not cached yet are fetched.
    fn load_icons(self: &Rc<Self>) {
        let registry = self.registry.clone();
        let this = self.clone();
        crate::ui::runtime::call(
            async move { registry.icons().await },
            move |icons: HashMap<String, PathBuf>| {
                for p in this.rows.borrow().iter() {
                    if let Some(path) = icons.get(&p.listed.agent.id) {
                        p.icon
                            .set_from_gicon(&gio::FileIcon::new(&gio::File::for_path(path)));
                    }
                }
            },
        );
    }

    fn show_listing(self: &Rc<Self>, listing: Listing) {
        let when = age(listing.fetched_at);
        let text = match (listing.source, &listing.error) {
            (Source::Network, _) => gettext_f("The ACP registry, fetched {when}", &[("when", &when)]),
            (Source::Cache, None) => gettext_f("The ACP registry as fetched {when}", &[("when", &when)]),
            (Source::Cache, Some(e)) => gettext_f(
                "Offline: the ACP registry as fetched {when}. {error}",
                &[("when", &when), ("error", e)],
            ),
            (Source::Bundled, e) => {
                let mut t = gettext_f(
                    "Offline: the copy of the ACP registry that came with Parley, from {when}.",
                    &[("when", &when)],
                );
                if let Some(e) = e {
                    t.push(' ');
                    t.push_str(e);
                }
                t
            }
        };
        self.source.set_label(&text);
        while let Some(row) = self.list.first_child() {
            self.list.remove(&row);
        }
        let mut rows = Vec::new();
        let mut sorted = listing.agents;
        sorted.sort_by_key(|a| a.agent.name.to_lowercase());
        for listed in sorted {
            let parts = self.row(listed);
            self.list.append(&parts.row);
            rows.push(parts);
        }
        self.rows.replace(rows);
        self.filter();
        if listing.source != Source::Network && listing.error.is_some() {
            if let Some(window) = self.window.upgrade() {
                crate::ui::a11y::announce(&window, &text, crate::ui::a11y::Priority::Medium);
            }
        }
    }

    fn filter(&self) {
        self.list.invalidate_filter();
        if self.stack.visible_child_name().as_deref() == Some("loading") && self.rows.borrow().is_empty() {
            return;
        }
        let query = self.search.text();
        let any = self
            .rows
            .borrow()
            .iter()
            .any(|p| matches(p.row.upcast_ref(), &query));
        self.stack
            .set_visible_child_name(if any { "list" } else { "empty" });
    }

    fn row(self: &Rc<Self>, listed: Listed) -> RowParts {
        let a = &listed.agent;
        let mut details = vec![gettext_f("Version {version}", &[("version", &a.version)])];
        if !a.license.is_empty() {
            details.push(a.license.clone());
        }
        if let Some(m) = listed.method {
            details.push(match m {
                crate::core::registry::Method::Binary => gettext("download"),
                crate::core::registry::Method::Npx => gettext("runs with npx"),
                crate::core::registry::Method::Uvx => gettext("runs with uvx"),
            });
        }
        // Each line cleaned on its own: the cleaning drops control
        // characters, the line break between them too ("…engineVersion").
        let subtitle = format!(
            "{}\n{}",
            crate::core::types::options::shown_text(a.description.trim(), 900),
            crate::core::types::options::shown_text(&details.join(" · "), 100)
        );
        let row = adw::ActionRow::builder()
            // From the network: no control or reordering characters shown.
            .title(glib::markup_escape_text(
                &crate::core::types::options::shown_text(&a.name, 200),
            ))
            .subtitle(glib::markup_escape_text(subtitle.trim()))
            .subtitle_lines(4)
            .build();
        // What the search looks in.
        row.set_widget_name(&format!("{} {} {}", a.name, a.id, a.description));
        let icon = gtk::Image::from_icon_name("system-run-symbolic");
        icon.set_icon_size(gtk::IconSize::Large);
        row.add_prefix(&icon);
        if a.repository.starts_with("https://") {
            let link = gtk::LinkButton::builder()
                .uri(&a.repository)
                .icon_name("web-browser-symbolic")
                .valign(gtk::Align::Center)
                .tooltip_text(a.repository.as_str())
                .css_classes(["flat"])
                .build();
            crate::ui::a11y::set_label(&link, &gettext_f("Source of {agent}", &[("agent", &a.name)]));
            row.add_suffix(&link);
        }
        let stack = gtk::Stack::builder()
            .valign(gtk::Align::Center)
            .hhomogeneous(false)
            .build();
        let add = gtk::Button::builder()
            .label(gettext("_Add"))
            .use_underline(true)
            .valign(gtk::Align::Center)
            .css_classes(["suggested-action"])
            .build();
        crate::ui::a11y::set_label(&add, &gettext_f("Add {agent}", &[("agent", &a.name)]));
        let added = gtk::Box::new(gtk::Orientation::Horizontal, 6);
        added.append(&gtk::Image::from_icon_name("object-select-symbolic"));
        added.append(&gtk::Label::new(Some(&gettext("Added"))));
        added.add_css_class("dim-label");
        let update = gtk::Button::builder()
            .label(gettext("_Update"))
            .use_underline(true)
            .valign(gtk::Align::Center)
            .build();
        crate::ui::a11y::set_label(&update, &gettext_f("Update {agent}", &[("agent", &a.name)]));
        let progress = gtk::ProgressBar::builder()
            .width_request(120)
            .valign(gtk::Align::Center)
            .show_text(true)
            .build();
        crate::ui::a11y::set_label(&progress, &gettext_f("Installing {agent}", &[("agent", &a.name)]));
        let cancel = gtk::Button::builder()
            .icon_name("process-stop-symbolic")
            .valign(gtk::Align::Center)
            .tooltip_text(gettext("Cancel"))
            .css_classes(["flat", "circular"])
            .build();
        crate::ui::a11y::set_label(
            &cancel,
            &gettext_f("Cancel installing {agent}", &[("agent", &a.name)]),
        );
        let installing = gtk::Box::new(gtk::Orientation::Horizontal, 6);
        installing.append(&progress);
        installing.append(&cancel);
        let unavailable = gtk::Label::builder()
            .label(gettext("Not for this computer"))
            .css_classes(["dim-label"])
            .build();
        stack.add_named(&add, Some("add"));
        stack.add_named(&added, Some("added"));
        stack.add_named(&update, Some("update"));
        stack.add_named(&installing, Some("installing"));
        stack.add_named(&unavailable, Some("unavailable"));
        row.add_suffix(&stack);
        let id = a.id.clone();
        add.connect_clicked(glib::clone!(
            #[weak(rename_to = this)]
            self,
            #[strong]
            id,
            move |_| this.add(&id)
        ));
        update.connect_clicked(glib::clone!(
            #[weak(rename_to = this)]
            self,
            #[strong]
            id,
            move |_| this.update(&id)
        ));
        cancel.connect_clicked(glib::clone!(
            #[weak(rename_to = this)]
            self,
            #[strong]
            id,
            move |_| {
                {
                    this.registry.cancel(&id);
                }
            }
        ));
        let parts = RowParts {
            listed,
            row,
            stack,
            progress,
            icon,
        };
        set_state(&parts, None);
        parts
    }

    fn parts<R>(&self, id: &str, f: impl FnOnce(&RowParts) -> R) -> Option<R> {
        self.rows.borrow().iter().find(|p| p.listed.agent.id == id).map(f)
    }

    fn progress(&self, id: &str, phase: &str, done: i64, total: i64) {
        self.parts(id, |p| {
            p.stack.set_visible_child_name("installing");
            if phase == "unpack" {
                p.progress.set_text(Some(&gettext("Unpacking…")));
                p.progress.pulse();
            } else if total > 0 {
                p.progress
                    .set_fraction((done as f64 / total as f64).clamp(0.0, 1.0));
                p.progress.set_text(Some(&glib::format_size(done.max(0) as u64)));
            } else {
                p.progress.pulse();
                p.progress.set_text(Some(&glib::format_size(done.max(0) as u64)));
            }
        });
    }

    fn toast(&self, text: &str) {
        let toast = adw::Toast::new(&crate::ui::markdown::escape(text));
        toast.set_timeout(8);
        self.toasts.add_toast(toast);
        if let Some(window) = self.window.upgrade() {
            crate::ui::a11y::announce(&window, text, crate::ui::a11y::Priority::Medium);
        }
    }

    fn add(self: &Rc<Self>, id: &str) {
        let place = match self.place.value() {
            Ok(place) => place,
            Err(why) => return self.toast(&why),
        };
        let Some(title) = self.parts(id, |p| {
            set_state(p, Some("installing"));
            p.progress.set_text(Some(&gettext("Starting…")));
            p.listed.agent.name.clone()
        }) else {
            return;
        };
        let registry = self.registry.clone();
        let this = self.clone();
        let id = id.to_owned();
        let key = id.clone();
        crate::ui::runtime::call(
            async move { registry.add_to(&key, place).await },
            move |r: Result<String, String>| match r {
                Ok(name) => {
                    if let Some(window) = this.window.upgrade() {
                        window.close();
                    }
                    this.toast_parent(&gettext_f("{agent} was added", &[("agent", &title)]));
                    (this.on_added)(&name);
                }
                Err(e) => {
                    this.parts(&id, |p| set_state(p, Some("add")));
                    if this.is_open() {
                        this.toast(&e);
                    } else {
                        this.toast_parent(&e);
                    }
                }
            },
        );
    }

    fn update(self: &Rc<Self>, id: &str) {
        self.parts(id, |p| set_state(p, Some("installing")));
        let registry = self.registry.clone();
        let this = self.clone();
        let id = id.to_owned();
        let key = id.clone();
        crate::ui::runtime::call(
            async move { registry.update(Some(&key)).await },
            move |r: Result<Vec<String>, String>| {
                match r {
                    Ok(names) if !names.is_empty() => {
                        this.toast(&gettext_f("Updated {agents}", &[("agents", &names.join(", "))]));
                        this.parts(&id, |p| p.stack.set_visible_child_name("added"));
                    }
                    Ok(_) => this
                        .parts(&id, |p| p.stack.set_visible_child_name("added"))
                        .unwrap_or(()),
                    Err(e) => {
                        this.parts(&id, |p| set_state(p, Some("update")));
                        this.toast(&e);
                    }
                };
            },
        );
    }
}

/// The row's suffix: Add, Added, Update, a progress bar, or "not for this computer".
fn set_state(p: &RowParts, forced: Option<&str>) {
    let l = &p.listed;
    let state = forced.unwrap_or(if l.installing {
        "installing"
    } else if l.update_available.is_some() {
        "update"
    } else if !l.configured.is_empty() {
        "added"
    } else if l.method.is_none() {
        "unavailable"
    } else {
        "add"
    });
    p.stack.set_visible_child_name(state);
    let description = match state {
        "added" => gettext_f("Added as {names}", &[("names", &l.configured.join(", "))]),
        "update" => gettext_f(
            "Version {version} is available",
            &[("version", l.update_available.as_deref().unwrap_or_default())],
        ),
        "unavailable" => gettext("Not for this computer"),
        _ => String::new(),
    };
    crate::ui::a11y::set_description(&p.row, &description);
}

/// The dialog's rows: (title, the state shown), for tests.
pub fn rows(window: &impl IsA<gtk::Widget>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    crate::ui::a11y::for_each_descendant(window.as_ref(), &mut |w| {
        if let Some(row) = w.downcast_ref::<adw::ActionRow>() {
            let mut state = String::new();
            crate::ui::a11y::for_each_descendant(row.upcast_ref(), &mut |d| {
                if let Some(s) = d.downcast_ref::<gtk::Stack>() {
                    state = s.visible_child_name().map(|n| n.to_string()).unwrap_or_default();
                }
            });
            // (Run on Another Host's own rows have no state.)
            if !state.is_empty() {
                out.push((row.title().to_string(), state));
            }
        }
    });
    out
}
