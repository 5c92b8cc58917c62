//! The labels of a message's text: a wrapping, selectable label, and one of
//! Markdown whose links show their real target and, when misleading, wait
//! for the reader to confirm them. A leaf: text blocks (which put such a
//! label in their place) and the message's parts both use it.

use adw::prelude::MessageDialogExt;
use gtk::glib;
use gtk::prelude::*;

use crate::i18n::{gettext, gettext_f};
use crate::ui::markdown::{self, visible};

pub fn label(markup: &str) -> gtk::Label {
    let l = gtk::Label::new(None);
    l.set_markup(markup);
    l.set_wrap(true);
    l.set_wrap_mode(gtk::pango::WrapMode::WordChar);
    // Without a width in characters, GTK measures a wrapping label's
    // minimum width by laying it out a character per line: 5 ms for 1 KB
    // (docs/benchmarks-history.md). Messages are never that narrow anyway.
    l.set_width_chars(20);
    l.set_xalign(0.0);
    l.set_selectable(true);
    l
}

/// A label of Markdown text, with its links: each one's real target shows
/// on hover (`markdown::render`), and opening one whose text names another
/// address, or that leaves the web, waits for the reader to confirm it.
pub fn markdown_label(markup: &str, links: Vec<markdown::Link>) -> gtk::Label {
    let l = label(markup);
    if !links.is_empty() {
        l.connect_activate_link(move |l, uri| {
            let Some(link) = links.iter().find(|k| k.target == uri) else {
                return glib::Propagation::Proceed;
            };
            let lower = uri.trim_start().to_ascii_lowercase();
            if lower.starts_with("http://") || lower.starts_with("https://") {
                // A web link opens as parsed, or not at all.
                match crate::core::links::web_url(uri) {
                    Ok(web) if markdown::link_is_misleading(&link.label, &web.url) => {
                        confirm_link(l, &link.label, &web.url)
                    }
                    Ok(web) => {
                        let window = l.root().and_downcast::<gtk::Window>();
                        gtk::show_uri(window.as_ref(), &web.url, gtk::gdk::CURRENT_TIME);
                    }
                    Err(why) => refuse_link(l, uri, &why),
                }
            } else if markdown::link_needs_confirmation(&link.label, &link.target) {
                confirm_link(l, &link.label, uri);
            } else {
                return glib::Propagation::Proceed;
            }
            glib::Propagation::Stop
        });
    }
    l
}

/// Says why a link is not opened, showing the whole of it.
fn refuse_link(from: &gtk::Label, uri: &str, why: &str) {
    let window = from.root().and_downcast::<gtk::Window>();
    let body = gettext_f(
        "Parley does not open this link: {why}.\n\n{uri}",
        &[("why", why), ("uri", &visible(uri))],
    );
    let dialog = adw::MessageDialog::new(window.as_ref(), Some(&gettext("Link Not Opened")), Some(&body));
    dialog.add_response("close", &gettext("_Close"));
    crate::ui::a11y::name_mnemonics(&dialog);
    dialog.set_destroy_with_parent(true);
    dialog.present();
}

/// Asks before opening `uri`, showing the whole of it beside what the link
/// said.
pub(super) fn confirm_link(from: &gtk::Label, label: &str, uri: &str) {
    let window = from.root().and_downcast::<gtk::Window>();
    let body = gettext_f(
        "The link “{label}” leads to:\n\n{uri}\n\nOpen it only if you trust this address.",
        &[("label", label), ("uri", &visible(uri))],
    );
    let dialog = adw::MessageDialog::new(window.as_ref(), Some(&gettext("Open This Link?")), Some(&body));
    dialog.add_response("cancel", &gettext("_Cancel"));
    dialog.add_response("open", &gettext("_Open Link"));
    crate::ui::a11y::name_mnemonics(&dialog);
    dialog.set_default_response(Some("cancel"));
    dialog.set_close_response("cancel");
    // Gone with the window if that closes first (GTK 4.8 warns otherwise).
    dialog.set_destroy_with_parent(true);
    let uri = uri.to_owned();
    dialog.connect_response(None, move |d, response| {
        if response == "open" {
            gtk::show_uri(d.transient_for().as_ref(), &uri, gtk::gdk::CURRENT_TIME);
        }
    });
    dialog.present();
}
