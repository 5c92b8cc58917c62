//! The attention inbox (Ctrl+I): one list, across agents, of what waits
//! for the user: permission and elicitation requests, answers that came
//! while the user looked elsewhere, agents that need a sign-in or failed.
//! Each row says the agent, what, and since when; activating it opens that
//! agent at that place. The list follows the agents as they change.

use adw::prelude::*;
use gtk::glib;

use crate::core::chat::InboxItem;
use crate::i18n::{fill, gettext, gettext_f, ngettext};
use crate::ui::models::AppModel;

fn icon(kind: &str) -> &'static str {
    match kind {
        "permission" => "dialog-question-symbolic",
        "elicitation" => "dialog-information-symbolic",
        "answer" => "mail-unread-symbolic",
        "sign-in" => "dialog-password-symbolic",
        _ => "dialog-error-symbolic",
    }
}

/// What a row says, after the agent's title.
fn what(item: &InboxItem) -> String {
    let text = crate::ui::markdown::visible(&item.text.chars().take(300).collect::<String>()).into_owned();
    match item.kind {
        "permission" => match &item.subagent {
            Some(a) => gettext_f(
                "its subagent {agent} asks to run a tool: {title}",
                &[
                    ("agent", &crate::ui::markdown::visible(&a.title)),
                    ("title", &text),
                ],
            ),
            None => gettext_f("asks to run a tool: {title}", &[("title", &text)]),
        },
        "elicitation" => gettext_f("asks: {message}", &[("message", &text)]),
        "answer" => gettext("answered while you were away"),
        "sign-in" => gettext("needs you to sign in"),
        _ => gettext_f(
            "failed: {error}",
            &[("error", text.lines().next().unwrap_or_default())],
        ),
    }
}

/// Opens what an inbox row stands for.
pub type OpenItem = std::rc::Rc<dyn Fn(&InboxItem)>;

/// Opens the inbox over `parent` (the list is read from `model` now and
/// again whenever an agent changes while it is open); a row chosen closes
/// it and goes to `open`.
pub fn show(parent: &gtk::Window, model: &AppModel, open: OpenItem) -> adw::Window {
    let window = adw::Window::builder()
        .title(gettext("Inbox"))
        .modal(true)
        .transient_for(parent)
        .default_width(560)
        .default_height(480)
        .build();
    let header = adw::HeaderBar::new();
    let (list, scroller) = super::boxed_list(&gettext("Waiting for you"), 640);
    let empty = adw::StatusPage::builder()
        .icon_name("user-available-symbolic")
        .title(gettext("Nothing Waits for You"))
        .description(gettext("Requests and answers from every agent come here"))
        .vexpand(true)
        .build();
    crate::ui::a11y::name_status_page(&empty);
    let stack = gtk::Stack::new();
    stack.add_named(&scroller, Some("list"));
    stack.add_named(&empty, Some("empty"));
    let content = gtk::Box::new(gtk::Orientation::Vertical, 0);
    content.append(&header);
    content.append(&stack);
    window.set_content(Some(&content));
    crate::ui::a11y::tab_reaches_window_controls(&header);
    let keys = gtk::ShortcutController::new();
    super::add_close_keys(&keys);
    window.add_controller(keys);

    let fill_list = {
        let (model, window, list, stack) = (
            model.downgrade(),
            window.downgrade(),
            list.downgrade(),
            stack.downgrade(),
        );
        move || {
            let (Some(model), Some(window), Some(list), Some(stack)) =
                (model.upgrade(), window.upgrade(), list.upgrade(), stack.upgrade())
            else {
                return;
            };
            while let Some(row) = list.first_child() {
                list.remove(&row);
            }
            let items = model.core().chat.inbox();
            stack.set_visible_child_name(if items.is_empty() { "empty" } else { "list" });
            let n = items.len();
            window.set_title(Some(&if n == 0 {
                gettext("Inbox")
            } else {
                fill(
                    &ngettext("Inbox ({n})", "Inbox ({n})", u32::try_from(n).unwrap_or(u32::MAX)),
                    &[("n", &n.to_string())],
                )
            }));
            for item in items {
                let title = model
                    .agent(&item.agent)
                    .map(|a| a.title())
                    .unwrap_or_else(|| item.agent.clone());
                let since = item
                    .since
                    .as_deref()
                    .map(super::conversation_list::when)
                    .unwrap_or_default();
                let subtitle = if since.is_empty() {
                    what(&item)
                } else {
                    gettext_f("{what} · {since}", &[("what", &what(&item)), ("since", &since)])
                };
                let row = adw::ActionRow::builder()
                    .title(glib::markup_escape_text(&title))
                    .subtitle(glib::markup_escape_text(&subtitle))
                    .subtitle_lines(2)
                    .activatable(true)
                    .build();
                // Said whole: whose, what waits, since when (unescaped).
                crate::ui::a11y::set_label(
                    &row,
                    &gettext_f("{agent}: {what}", &[("agent", &title), ("what", &subtitle)]),
                );
                row.add_prefix(&gtk::Image::from_icon_name(icon(item.kind)));
                row.add_suffix(&gtk::Image::from_icon_name("go-next-symbolic"));
                let open = open.clone();
                row.connect_activated(glib::clone!(
                    #[weak]
                    window,
                    move |_| {
                        window.close();
                        open(&item);
                    }
                ));
                list.append(&row);
            }
        }
    };
    fill_list();
    // Kept in step with the agents while open.
    let store = model.agents();
    let mut handlers = Vec::new();
    for agent in
        (0..store.n_items()).filter_map(|i| store.item(i).and_downcast::<crate::ui::models::AgentObject>())
    {
        let refill = fill_list.clone();
        handlers.extend(agent.connect_attention_changed(move |_| refill()));
    }
    let handlers = std::cell::RefCell::new(handlers);
    window.connect_close_request(move |_| {
        crate::ui::models::disconnect_all(handlers.take());
        glib::Propagation::Proceed
    });
    window.present();
    window
}

/// The inbox's rows: (title, subtitle), for tests.
pub fn rows(window: &impl IsA<gtk::Widget>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    crate::ui::a11y::for_each_descendant(window.as_ref(), &mut |w| {
        if let Some(row) = w.downcast_ref::<adw::ActionRow>() {
            out.push((
                row.title().to_string(),
                row.subtitle().map(|s| s.to_string()).unwrap_or_default(),
            ));
        }
    });
    out
}
