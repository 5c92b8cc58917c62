//! Search across all conversations (Ctrl+Shift+F): a window with a search
//! entry and the hits, best first, each with its conversation's title, the
//! agent, and the matching words in bold. Activating a hit opens its
//! conversation and scrolls to the message.

use adw::prelude::*;
use gtk::glib;

use crate::core::history::{Hit, HIGHLIGHT_END, HIGHLIGHT_START};
use crate::i18n::{fill, gettext, gettext_f, ngettext};
use std::rc::Rc;

use crate::core::history::service::HistoryService;

/// The snippet as Pango markup: escaped, the matches in bold.
pub fn snippet_markup(snippet: &str) -> String {
    let shown = crate::core::types::options::shown_text(
        &snippet
            .replace(HIGHLIGHT_START, "\u{e000}")
            .replace(HIGHLIGHT_END, "\u{e001}")
            .replace('\n', " "),
        400,
    );
    glib::markup_escape_text(&shown)
        .replace('\u{e000}', "<b>")
        .replace('\u{e001}', "</b>")
}

/// Opens a message found: its agent, conversation and message.
pub type OpenMessage = Rc<dyn Fn(&str, &str, &str)>;

/// Opens the search window over `parent`: it searches `history`, and a
/// result chosen closes it and goes to `open`.
pub fn show(parent: &gtk::Window, history: HistoryService, open: OpenMessage) -> adw::Window {
    let window = adw::Window::builder()
        .title(gettext("Search Conversations"))
        .modal(true)
        .transient_for(parent)
        .default_width(560)
        .default_height(520)
        .build();
    let entry = gtk::SearchEntry::builder()
        .placeholder_text(gettext("Search all conversations"))
        .hexpand(true)
        .build();
    crate::ui::a11y::set_label(&entry, &gettext("Search all conversations"));
    let header = adw::HeaderBar::builder()
        .title_widget(&adw::Clamp::builder().maximum_size(400).child(&entry).build())
        .build();
    let (results, scroller) = super::boxed_list(&gettext("Search results"), 640);
    let status = adw::StatusPage::builder()
        .icon_name("system-search-symbolic")
        .title(gettext("Search Conversations"))
        .description(gettext("Find what an agent said, in every conversation"))
        .vexpand(true)
        .build();
    // The first Down lands in one of these panes: each has a name.
    crate::ui::a11y::name_status_page(&status);
    crate::ui::a11y::set_label(&scroller, &gettext("Search results"));
    let stack = gtk::Stack::new();
    stack.add_named(&status, Some("status"));
    stack.add_named(&scroller, Some("results"));
    let content = gtk::Box::new(gtk::Orientation::Vertical, 0);
    content.append(&header);
    content.append(&stack);
    window.set_content(Some(&content));
    let keys = gtk::ShortcutController::new();
    super::add_close_keys(&keys);
    window.add_controller(keys);

    let generation = std::rc::Rc::new(std::cell::Cell::new(0u64));
    entry.connect_search_changed(glib::clone!(
        #[weak]
        window,
        #[weak]
        results,
        #[weak]
        stack,
        #[weak]
        status,
        move |entry| {
            let query = entry.text().to_string();
            let n = generation.get() + 1;
            generation.set(n);
            if query.trim().is_empty() {
                status.set_title(&gettext("Search Conversations"));
                status.set_description(Some(&gettext("Find what an agent said, in every conversation")));
                stack.set_visible_child_name("status");
                return;
            }
            let history = history.clone();
            let (generation, open) = (generation.clone(), open.clone());
            crate::ui::runtime::call(
                async move { history.search(&query, 100).await },
                move |r: Result<Vec<Hit>, String>| {
                    if generation.get() != n {
                        return; // an older query's answer
                    }
                    show_hits(&open, &window, &results, &stack, &status, r);
                },
            );
        }
    ));
    window.present();
    entry.grab_focus();
    window
}

fn show_hits(
    open: &OpenMessage,
    window: &adw::Window,
    results: &gtk::ListBox,
    stack: &gtk::Stack,
    status: &adw::StatusPage,
    hits: Result<Vec<Hit>, String>,
) {
    while let Some(row) = results.first_child() {
        results.remove(&row);
    }
    let hits = match hits {
        Ok(h) => h,
        Err(e) => {
            status.set_title(&gettext("Search Failed"));
            status.set_description(Some(&glib::markup_escape_text(&e)));
            stack.set_visible_child_name("status");
            return;
        }
    };
    if hits.is_empty() {
        status.set_title(&gettext("No Results"));
        status.set_description(Some(&gettext("No message says that")));
        stack.set_visible_child_name("status");
        crate::ui::a11y::announce(window, &gettext("No results"), crate::ui::a11y::Priority::Medium);
        return;
    }
    let count = hits.len();
    for hit in hits {
        let title = if hit.title.is_empty() {
            gettext("Untitled Conversation")
        } else {
            hit.title.clone()
        };
        let row = adw::ActionRow::builder()
            .title(glib::markup_escape_text(&gettext_f(
                "{title} · {agent}",
                &[("title", &title), ("agent", &hit.agent)],
            )))
            .subtitle(snippet_markup(&hit.snippet))
            .subtitle_lines(3)
            .activatable(true)
            .build();
        row.add_suffix(&gtk::Image::from_icon_name("go-next-symbolic"));
        let open = open.clone();
        row.connect_activated(glib::clone!(
            #[weak]
            window,
            move |_| {
                window.close();
                open(&hit.agent, &hit.conversation, &hit.message_id);
            }
        ));
        results.append(&row);
    }
    stack.set_visible_child_name("results");
    crate::ui::a11y::announce(
        window,
        &fill(
            &ngettext(
                "{n} result",
                "{n} results",
                u32::try_from(count).unwrap_or(u32::MAX),
            ),
            &[("n", &count.to_string())],
        ),
        crate::ui::a11y::Priority::Medium,
    );
}

/// The rows' titles and subtitles as their labels hold them, markup and
/// all (for tests).
pub fn rows(window: &impl IsA<gtk::Widget>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![window.as_ref().clone()];
    while let Some(w) = stack.pop() {
        if w.is::<adw::ActionRow>() {
            let mut labels = Vec::new();
            crate::ui::a11y::for_each_descendant(&w, &mut |d| {
                if let Some(l) = d.downcast_ref::<gtk::Label>() {
                    labels.push(l.label().to_string());
                }
            });
            let mut labels = labels.into_iter();
            out.push((
                labels.next().unwrap_or_default(),
                labels.next().unwrap_or_default(),
            ));
            continue;
        }
        let mut child = w.last_child();
        while let Some(c) = child {
            stack.push(c.clone());
            child = c.prev_sibling();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_are_bold_and_the_rest_escaped() {
        assert_eq!(
            super::snippet_markup("a <b> \u{2}lazy\u{3} dog\nsleeps"),
            "a &lt;b&gt; <b>lazy</b> dog sleeps"
        );
    }
}
