//! A fenced code block of a message: highlighted once by GtkSourceView's
//! language definitions and style scheme, then drawn as a [`TextBlock`].
//!
//! A `GtkSourceView` per block was most of what drawing a page of code
//! cost: it highlights what it shows while it is drawn, keeps a text
//! layout of its own, and is slow to make and to destroy: in a long
//! scroll, 9 of the 11.6 % of the main thread's time that went to
//! drawing, and 6 % more to destroying (docs/benchmarks-history.md, "Round two, code
//! blocks"). The highlighting is the same, read from a buffer's tags into
//! Pango markup; the block is selectable as any text block is (a label
//! takes its place when the pointer or the focus comes).
//! Long code (over `MAX_BLOCK`) is still shown by a source view.

use gtk::prelude::*;
use sourceview5::prelude::*;

use super::text_block::TextBlock;
use crate::i18n::gettext;
use crate::ui::markdown::{escape, visible};

/// Code longer than this, in bytes, is shown by a `GtkSourceView`, which
/// lays out and highlights only what is on screen, in idle time: a block
/// is highlighted and laid out whole, which is for code that fits in a
/// frame (docs/benchmarks-history.md, "Round two, code blocks").
const MAX_BLOCK: usize = 4 * 1024;

/// A block showing `text` as code of the language `lang` (a fence's info
/// string, as `sh` or `rust`; unknown ones are shown plain). Its colours
/// follow the style, also when it changes while shown.
pub fn code_block(lang: &str, text: &str) -> gtk::Widget {
    let text = visible(text);
    if text.len() > MAX_BLOCK {
        return code_view(lang, &text);
    }
    highlighted(lang, &text).upcast()
}

/// A text block showing `text` (made visible) as code of `lang`,
/// highlighted; its colours follow the style.
pub fn highlighted(lang: &str, text: &str) -> TextBlock {
    let text = visible(text).into_owned();
    let lang = lang.to_owned();
    let style = adw::StyleManager::default();
    let block = TextBlock::new(&code_markup(&lang, &text, style.is_dark()), Vec::new());
    block.add_css_class("code");
    // A screen reader reads the code, and says what it is.
    crate::ui::a11y::set_description(&block, &gettext("Code"));
    crate::ui::theme::on_dark_change(&block, move |block, dark| {
        block.set_markup(&code_markup(&lang, &text, dark))
    });
    block
}

/// A `GtkSourceView` of long code, whose colours follow the style.
fn code_view(lang: &str, text: &str) -> gtk::Widget {
    let buffer = sourceview5::Buffer::new(None);
    buffer.set_text(text);
    if let Some(l) = sourceview5::LanguageManager::default().language(lang) {
        buffer.set_language(Some(&l));
    }
    follow_style(&buffer, adw::StyleManager::default().is_dark());
    let view = sourceview5::View::with_buffer(&buffer);
    view.set_editable(false);
    view.set_monospace(true);
    view.set_wrap_mode(gtk::WrapMode::WordChar);
    view.add_css_class("code");
    crate::ui::a11y::set_label(&view, &gettext("Code"));
    crate::ui::theme::on_dark_change(&view, move |_, dark| follow_style(&buffer, dark));
    view.upcast()
}

fn follow_style(buffer: &sourceview5::Buffer, dark: bool) {
    if let Some(s) = sourceview5::StyleSchemeManager::default().scheme(scheme_name(dark)) {
        buffer.set_style_scheme(Some(&s));
    }
}

/// libadwaita's style scheme for the style.
fn scheme_name(dark: bool) -> &'static str {
    if dark {
        "Adwaita-dark"
    } else {
        "Adwaita"
    }
}

/// `text` as Pango markup in a monospace font, coloured as GtkSourceView
/// colours the language `lang` in libadwaita's scheme for the style.
pub fn code_markup(lang: &str, text: &str, dark: bool) -> String {
    let mut out = String::with_capacity(text.len() * 2 + 16);
    out.push_str("<tt>");
    let language = sourceview5::LanguageManager::default().language(lang);
    let scheme = sourceview5::StyleSchemeManager::default().scheme(scheme_name(dark));
    match (language, scheme) {
        (Some(language), Some(scheme)) => {
            let buffer = highlighter(&language);
            if buffer.style_scheme().as_ref() != Some(&scheme) {
                buffer.set_style_scheme(Some(&scheme));
            }
            buffer.set_text(text);
            let (start, end) = buffer.bounds();
            buffer.ensure_highlight(&start, &end);
            let mut at = start;
            while !at.is_end() {
                let mut next = at;
                next.forward_to_tag_toggle(None::<&gtk::TextTag>);
                let piece = escape(&buffer.text(&at, &next, true));
                match span(&at.tags()) {
                    Some(open) => {
                        out.push_str(&open);
                        out.push_str(&piece);
                        out.push_str("</span>");
                    }
                    None => out.push_str(&piece),
                }
                at = next;
            }
            // Not kept: a long block would stay in memory.
            buffer.set_text("");
        }
        _ => out.push_str(&escape(text)),
    }
    out.push_str("</tt>");
    out
}

/// A buffer that highlights `language`, one per language for the thread:
/// setting a buffer's language builds its highlighting engine, which took
/// about 17 times as long as highlighting a block of a dozen lines.
fn highlighter(language: &sourceview5::Language) -> sourceview5::Buffer {
    thread_local! {
        static BUFFERS: std::cell::RefCell<Vec<sourceview5::Buffer>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFERS.with_borrow_mut(|buffers| {
        if let Some(b) = buffers.iter().find(|b| b.language().as_ref() == Some(language)) {
            return b.clone();
        }
        let buffer = sourceview5::Buffer::new(None);
        buffer.set_highlight_matching_brackets(false);
        buffer.set_language(Some(language));
        buffers.push(buffer.clone());
        buffer
    })
}

/// The opening `<span>` of what `tags` (lowest priority first) set, if
/// they set anything shown.
fn span(tags: &[gtk::TextTag]) -> Option<String> {
    let (mut fg, mut bg, mut weight, mut style, mut underline, mut strike) =
        (None, None, None, None, None, None);
    // Later tags have the higher priority and win, as in a text view.
    for tag in tags {
        if tag.is_foreground_set() {
            fg = tag.foreground_rgba().or(fg);
        }
        if tag.is_background_set() {
            bg = tag.background_rgba().or(bg);
        }
        if tag.is_weight_set() {
            weight = Some(tag.weight());
        }
        if tag.is_style_set() {
            style = Some(tag.style());
        }
        if tag.is_underline_set() {
            underline = Some(tag.underline() != gtk::pango::Underline::None);
        }
        if tag.is_strikethrough_set() {
            strike = Some(tag.is_strikethrough());
        }
    }
    // A colour, and its opacity when it has one.
    let colour = |attrs: &mut String, name: &str, c: gtk::gdk::RGBA| {
        let byte = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
        let (r, g, b) = (byte(c.red()), byte(c.green()), byte(c.blue()));
        attrs.push_str(&format!(" {name}=\"#{r:02x}{g:02x}{b:02x}\""));
        if c.alpha() < 1.0 {
            let alpha = (c.alpha().clamp(0.0, 1.0) * 100.0).round() as u8;
            let short = if name == "foreground" {
                "fgalpha"
            } else {
                "bgalpha"
            };
            attrs.push_str(&format!(" {short}=\"{alpha}%\""));
        }
    };
    let mut attrs = String::new();
    if let Some(c) = fg {
        colour(&mut attrs, "foreground", c);
    }
    if let Some(c) = bg {
        colour(&mut attrs, "background", c);
    }
    if let Some(w) = weight {
        attrs.push_str(&format!(" weight=\"{w}\""));
    }
    match style {
        Some(gtk::pango::Style::Italic) => attrs.push_str(" style=\"italic\""),
        Some(gtk::pango::Style::Oblique) => attrs.push_str(" style=\"oblique\""),
        _ => {}
    }
    if underline == Some(true) {
        attrs.push_str(" underline=\"single\"");
    }
    if strike == Some(true) {
        attrs.push_str(" strikethrough=\"true\"");
    }
    (!attrs.is_empty()).then(|| format!("<span{attrs}>"))
}

/// The code a block shows, if `widget` is a code block.
pub fn code_of(widget: &gtk::Widget) -> Option<String> {
    if let Some(view) = widget.downcast_ref::<gtk::TextView>() {
        let b = view.buffer();
        return Some(b.text(&b.start_iter(), &b.end_iter(), true).to_string());
    }
    let block = widget.downcast_ref::<TextBlock>()?;
    block.has_css_class("code").then(|| block.text())
}
