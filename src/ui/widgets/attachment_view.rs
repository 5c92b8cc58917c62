//! The files and images sent with a user message, as one group of chips
//! that wraps: an image whose bytes Parley holds shows a thumbnail.

use std::cell::RefCell;
use std::sync::Arc;

use gtk::glib;
use gtk::prelude::*;

use crate::core::types::message::{Attachment, AttachmentKind};
use crate::i18n::{gettext, gettext_f};

/// The edge of a thumbnail, in pixels.
pub const THUMBNAIL: i32 = 64;

/// How many decoded thumbnails are kept: a row is drawn again whenever it
/// is bound, and decoding a picture each time would stall a scroll.
const KEPT: usize = 16;

thread_local! {
    /// Decoded thumbnails, newest last, by the bytes they were made from
    /// (the `Arc` is kept, so its address stays theirs while cached).
    static DECODED: RefCell<Vec<(Arc<[u8]>, gtk::gdk::Texture)>> = const { RefCell::new(Vec::new()) };
}

/// The chips of `list` (one message's attachments), wrapping.
pub fn attachments(list: &[&Attachment]) -> gtk::Widget {
    let flow = super::wrap_box::WrapBox::new(6);
    flow.add_css_class("attachments");
    for a in list {
        flow.append(&chip(a));
    }
    flow.upcast()
}

/// One attachment: its thumbnail or icon, its name and how it was sent.
fn chip(a: &Attachment) -> gtk::Widget {
    let chip = gtk::Box::new(gtk::Orientation::Horizontal, 6);
    chip.add_css_class("attachment-chip");
    chip.set_halign(gtk::Align::Start);
    chip.set_valign(gtk::Align::Center);
    match a
        .content
        .as_ref()
        .filter(|_| a.sent_as == AttachmentKind::Image)
        .and_then(decoded)
    {
        Some(texture) => {
            chip.add_css_class("with-thumbnail");
            chip.append(&picture(&texture));
        }
        None => {
            let icon = match a.sent_as {
                AttachmentKind::Image => "image-x-generic-symbolic",
                _ => "text-x-generic-symbolic",
            };
            chip.append(&gtk::Image::from_icon_name(icon));
        }
    }
    let name = gtk::Label::new(Some(&a.name));
    name.set_ellipsize(gtk::pango::EllipsizeMode::Middle);
    name.set_max_width_chars(40);
    chip.append(&name);
    let hint = gtk::Label::new(Some(&kind_text(a.sent_as)));
    hint.add_css_class("dim-label");
    hint.add_css_class("caption");
    chip.append(&hint);
    let tip = if a.uri.is_empty() {
        a.name.clone()
    } else {
        a.uri.clone()
    };
    chip.set_tooltip_text(Some(&tip));
    crate::ui::a11y::set_label(&chip, &summary(a));
    chip.upcast()
}

/// A thumbnail of `texture`, scaled to fit a square of `THUMBNAIL`
/// pixels. (A `GtkImage`, not a `GtkPicture`: a picture asks for its
/// texture's own size, and the chips' wrapping would lay out by that.)
pub fn picture(texture: &gtk::gdk::Texture) -> gtk::Image {
    let image = gtk::Image::builder()
        .paintable(texture)
        .pixel_size(THUMBNAIL)
        // Decorative: the chip says the attachment's name.
        .accessible_role(gtk::AccessibleRole::Presentation)
        .build();
    image.add_css_class("thumbnail");
    image
}

/// `bytes` decoded as an image, from the cache when it was done before.
fn decoded(bytes: &Arc<[u8]>) -> Option<gtk::gdk::Texture> {
    let cached = DECODED.with(|d| {
        let mut d = d.borrow_mut();
        let i = d.iter().position(|(b, _)| Arc::ptr_eq(b, bytes))?;
        let entry = d.remove(i);
        let texture = entry.1.clone();
        d.push(entry);
        Some(texture)
    });
    if cached.is_some() {
        return cached;
    }
    let texture = from_bytes(bytes)?;
    DECODED.with(|d| {
        let mut d = d.borrow_mut();
        if d.len() >= KEPT {
            d.remove(0);
        }
        d.push((bytes.clone(), texture.clone()));
    });
    Some(texture)
}

/// The edge a thumbnail is decoded at: twice its size on screen (a 2×
/// display), so a large picture never lies whole in memory.
const DECODED_EDGE: i32 = THUMBNAIL * 2;

/// A thumbnail of the image in `bytes`, decoded at thumbnail size.
pub fn from_bytes(bytes: &[u8]) -> Option<gtk::gdk::Texture> {
    let stream = gtk::gio::MemoryInputStream::from_bytes(&glib::Bytes::from(bytes));
    let pixbuf = gtk::gdk_pixbuf::Pixbuf::from_stream_at_scale(
        &stream,
        DECODED_EDGE,
        DECODED_EDGE,
        true,
        gtk::gio::Cancellable::NONE,
    )
    .ok()?;
    Some(gtk::gdk::Texture::for_pixbuf(&pixbuf))
}

/// A thumbnail of the picture file at `path`, decoded at thumbnail size.
pub fn from_file(path: &std::path::Path) -> Option<gtk::gdk::Texture> {
    let pixbuf = gtk::gdk_pixbuf::Pixbuf::from_file_at_scale(path, DECODED_EDGE, DECODED_EDGE, true).ok()?;
    Some(gtk::gdk::Texture::for_pixbuf(&pixbuf))
}

/// "link", "embedded", "image": how an attachment went to the agent.
pub fn kind_text(kind: AttachmentKind) -> String {
    match kind {
        AttachmentKind::Link => gettext("link"),
        AttachmentKind::Embedded => gettext("embedded"),
        AttachmentKind::Image => gettext("image"),
    }
}

/// "Attachment notes.md, embedded": what a screen reader says of it.
pub fn summary(a: &Attachment) -> String {
    gettext_f(
        "Attachment {name}, {kind}",
        &[("name", &a.name), ("kind", &kind_text(a.sent_as))],
    )
}
