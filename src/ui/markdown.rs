//! Markdown to escaped Pango markup, with fenced code kept apart for
//! GtkSourceView. Agent text is never interpreted as markup: every piece of
//! it goes through [`escape`], and never reaches a widget with characters
//! that hide or disguise it (see [`visible`]).

use std::borrow::Cow;
use std::fmt::Write as _;

use gtk::glib;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Pango markup for a GtkLabel, and the links in it.
    Markup {
        markup: String,
        links: Vec<Link>,
    },
    Code {
        lang: String,
        text: String,
    },
}

/// A link as the reader sees it: its text, and where it really leads.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub label: String,
    pub target: String,
}

/// Whether `c` is drawn as nothing, or changes how the text around it is
/// drawn, and so must be shown by its code point instead: C1 controls,
/// the bidirectional controls that reorder text (a right-to-left override
/// makes "invoice\u{202E}gnp.exe" read "invoiceexe.png"), and characters of
/// zero width that can hide text or make two names look the same (tag
/// characters carry whole invisible sentences). Zero-width joiners and
/// variation selectors stay: emoji and many scripts need them.
fn hidden(c: char) -> bool {
    matches!(c,
        '\u{80}'..='\u{9F}'
        | '\u{061C}'
        | '\u{200B}'
        | '\u{200E}' | '\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{FEFF}'
        | '\u{E0000}'..='\u{E007F}')
}

/// `text` as it may be shown in a widget: every control character but line
/// breaks and tabs, and every character `hidden` would make invisible, is
/// replaced by a visible stand-in: C0 controls by their Unicode control
/// pictures (NUL is "␀" U+2400, ESC "␛"), DEL by "␡", the others by their
/// code point, "⟨U+202E⟩". A CR before a line feed is a line ending and is
/// dropped. GTK takes no NUL (glib-rs panics on one in a string for C), and
/// an escape sequence or a bidirectional override would let an agent show
/// something other than what it sent.
pub fn visible(text: &str) -> Cow<'_, str> {
    let control = |b: u8| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7F;
    if !text.bytes().any(control) && (text.is_ascii() || !text.chars().any(hidden)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\u{0}'..='\u{1F}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{FFFD}')),
            '\u{7F}' => out.push('\u{2421}'),
            c if hidden(c) => {
                let _ = write!(out, "\u{27E8}U+{:04X}\u{27E9}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` made [`visible`] and escaped for Pango markup: the one way agent
/// text goes into markup.
pub fn escape(text: &str) -> String {
    glib::markup_escape_text(&visible(text)).to_string()
}

fn esc(t: &str) -> String {
    escape(t)
}

/// The host a URL leads to, lower-case, without "www.", a port or user
/// information; for `mailto:`, the address's domain. None for a relative
/// link or a scheme without a host.
fn host(url: &str) -> Option<String> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let authority = if let Some(address) = lower.strip_prefix("mailto:") {
        address
            .rsplit('@')
            .next()
            .unwrap_or("")
            .split(['?', '#'])
            .next()
            .unwrap_or("")
    } else {
        let rest = match lower.find("://") {
            Some(i) if i > 0 && is_scheme(&lower[..i]) => &lower[i + 3..],
            _ => lower.strip_prefix("//")?,
        };
        // Browsers end the authority at a backslash too.
        let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or("");
        // "https://github.com@evil.example" leads to evil.example.
        authority.rsplit('@').next().unwrap_or("")
    };
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    let host = host.trim_end_matches('.');
    let host = host.strip_prefix("www.").unwrap_or(host);
    (!host.is_empty()).then(|| host.to_owned())
}

fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The host a link's text names, when the text reads as an address: a URL
/// ("https://github.com/x"), or a domain name with or without a path
/// ("github.com", "www.github.com/login").
fn named_host(label: &str) -> Option<String> {
    let label = label.trim().trim_start_matches('<').trim_end_matches('>');
    if label.is_empty() || label.chars().any(char::is_whitespace) {
        return None;
    }
    let lower = label.to_lowercase();
    if lower.find("://").is_some_and(|i| i > 0 && is_scheme(&lower[..i])) {
        return host(&lower).or(Some(String::new()));
    }
    let name = lower.split(['/', '?', '#']).next().unwrap_or("");
    let name = name.split(':').next().unwrap_or("").trim_end_matches('.');
    let parts: Vec<&str> = name.split('.').collect();
    let tld = parts.last().copied().unwrap_or("");
    let domain = parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && tld.chars().count() >= 2
        && tld.chars().all(char::is_alphabetic);
    domain.then(|| name.strip_prefix("www.").unwrap_or(name).to_owned())
}

/// Whether a link's text reads as an address other than the one the link
/// leads to, as in `[https://github.com](https://evil.example)`. Only the
/// exact host counts as the same: a subdomain may have another owner
/// (anyone's "x.github.io"), and asking once too often costs a click. A
/// file name that merely looks like a domain ("main.rs") is not misleading
/// when the link leads to that file.
pub fn link_is_misleading(label: &str, target: &str) -> bool {
    let Some(named) = named_host(label) else {
        return false;
    };
    let label = label.trim();
    let bare = !label.contains("://") && !label.to_ascii_lowercase().starts_with("www.");
    if bare {
        let path = target.split(['?', '#']).next().unwrap_or("").to_lowercase();
        let label = label.to_lowercase();
        if path == label || path.ends_with(&format!("/{label}")) {
            return false;
        }
    }
    host(target).is_none_or(|real| real != named)
}

/// Whether opening the link should wait for the reader to confirm it:
/// its text names another address, or it leads elsewhere than the web or
/// mail (a `file:` link or an application's own scheme starts programs).
pub fn link_needs_confirmation(label: &str, target: &str) -> bool {
    let lower = target.trim().to_ascii_lowercase();
    let web = ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s));
    !web || link_is_misleading(label, target)
}

/// `md` as plain text, the way a screen reader should say it: Markdown's
/// marks gone, blocks joined by spaces.
pub fn plain_text(md: &str) -> String {
    let mut out = Vec::new();
    for block in render(md) {
        match block {
            Block::Markup { markup, .. } => {
                let text = gtk::pango::parse_markup(&markup, '\0')
                    .map(|(_, text, _)| text.to_string())
                    .unwrap_or(markup);
                out.push(text);
            }
            Block::Code { text, .. } => out.push(text),
        }
    }
    out.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A thought as Markdown to render: gemini-cli sends each thought as
/// `**{subject}**` and a line of description, so a thought without a
/// subject begins with an empty bold, `****`, which Markdown would draw as
/// literal asterisks (or, alone on its line, a rule). Those are dropped.
pub fn thought(md: &str) -> Cow<'_, str> {
    if !md.contains("****") {
        return Cow::Borrowed(md);
    }
    let mut out = String::with_capacity(md.len());
    for line in md.split_inclusive('\n') {
        match line.strip_prefix("****") {
            // `*****x` is not an empty bold before text: kept as it is.
            Some(rest) if !rest.starts_with('*') => {
                // A line that was only the empty bold goes with its end.
                if !rest.trim().is_empty() {
                    out.push_str(rest);
                }
            }
            _ => out.push_str(line),
        }
    }
    Cow::Owned(out)
}

pub fn render(md: &str) -> Vec<Block> {
    // Made visible before parsing: then no text, code, link or language
    // name that comes out of it can hold a hidden character.
    let md = visible(md);
    let mut blocks = Vec::new();
    let mut out = String::new();
    let mut links: Vec<Link> = Vec::new();
    // The link being read: its target and its text so far.
    let mut link: Option<(String, String)> = None;
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut code: Option<(String, String)> = None;
    let flush = |out: &mut String, links: &mut Vec<Link>, blocks: &mut Vec<Block>| {
        let t = out.trim_end().to_owned();
        if !t.is_empty() {
            blocks.push(Block::Markup {
                markup: t,
                links: std::mem::take(links),
            });
        }
        out.clear();
    };
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(&md, opts) {
        if let (Some((_, text)), Event::Text(t) | Event::Code(t)) = (link.as_mut(), &event) {
            text.push_str(t);
        }
        if let Some((_, text)) = code.as_mut() {
            match event {
                Event::Text(t) => text.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((lang, text)) = code.take() {
                        blocks.push(Block::Code {
                            lang,
                            text: text.trim_end_matches('\n').to_owned(),
                        });
                    }
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(tag) => match tag {
                Tag::Heading { level, .. } => out.push_str(match level {
                    HeadingLevel::H1 => "<span size=\"x-large\" weight=\"bold\">",
                    HeadingLevel::H2 => "<span size=\"large\" weight=\"bold\">",
                    _ => "<span weight=\"bold\">",
                }),
                Tag::Emphasis => out.push_str("<i>"),
                Tag::Strong => out.push_str("<b>"),
                Tag::Strikethrough => out.push_str("<s>"),
                Tag::Link { dest_url, .. } => {
                    // The title is GtkLabel's tooltip for the link, and is
                    // itself markup: the real target shows on hover
                    // whatever the link's text says.
                    let href = esc(&dest_url);
                    let title = esc(&href);
                    out.push_str(&format!("<a href=\"{href}\" title=\"{title}\">"));
                    link = Some((dest_url.to_string(), String::new()));
                }
                Tag::List(start) => {
                    if !lists.is_empty() && !out.ends_with('\n') {
                        out.push('\n');
                    }
                    lists.push(start)
                }
                Tag::Item => {
                    let depth = lists.len().saturating_sub(1);
                    out.push_str(&"    ".repeat(depth));
                    match lists.last_mut() {
                        Some(Some(n)) => {
                            out.push_str(&format!("{n}. "));
                            *n += 1;
                        }
                        _ => out.push_str("• "),
                    }
                }
                Tag::CodeBlock(kind) => {
                    flush(&mut out, &mut links, &mut blocks);
                    let lang = match kind {
                        CodeBlockKind::Fenced(l) => l.split_whitespace().next().unwrap_or("").to_owned(),
                        CodeBlockKind::Indented => String::new(),
                    };
                    code = Some((lang, String::new()));
                }
                Tag::BlockQuote(_) => out.push_str("<i>"),
                Tag::TableCell => out.push_str("<tt>"),
                Tag::TableHead => out.push_str("<b>"),
                _ => {}
            },
            Event::End(tag) => match tag {
                TagEnd::Heading(_) => out.push_str("</span>\n\n"),
                TagEnd::Paragraph => out.push_str(if lists.is_empty() { "\n\n" } else { "\n" }),
                TagEnd::Emphasis => out.push_str("</i>"),
                TagEnd::Strong => out.push_str("</b>"),
                TagEnd::Strikethrough => out.push_str("</s>"),
                TagEnd::Link => {
                    out.push_str("</a>");
                    if let Some((target, label)) = link.take() {
                        links.push(Link { label, target });
                    }
                }
                TagEnd::List(_) => {
                    lists.pop();
                    if lists.is_empty() {
                        out.push('\n');
                    }
                }
                TagEnd::Item if !out.ends_with('\n') => out.push('\n'),
                TagEnd::BlockQuote(_) => out.push_str("</i>\n"),
                TagEnd::TableCell => out.push_str("</tt>  │  "),
                TagEnd::TableHead => out.push_str("</b>\n"),
                TagEnd::TableRow => out.push('\n'),
                TagEnd::Table => out.push('\n'),
                _ => {}
            },
            Event::Text(t) => out.push_str(&esc(&t)),
            Event::Code(t) => out.push_str(&format!("<tt>{}</tt>", esc(&t))),
            Event::SoftBreak => out.push(' '),
            Event::HardBreak => out.push('\n'),
            Event::Rule => out.push_str("――――――\n\n"),
            Event::Html(t) | Event::InlineHtml(t) => out.push_str(&esc(&t)),
            _ => {}
        }
    }
    if let Some((lang, text)) = code.take() {
        // Still streaming: show what came so far.
        blocks.push(Block::Code { lang, text });
    }
    flush(&mut out, &mut links, &mut blocks);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_is_escaped_never_markup() {
        let b = render("<b>not bold</b> & <span foreground='red'>x</span>");
        assert_eq!(b.len(), 1);
        let Block::Markup { markup: m, .. } = &b[0] else {
            panic!("markup expected")
        };
        assert!(m.contains("&lt;b&gt;not bold&lt;/b&gt; &amp;"), "{m}");
        assert!(gtk::pango::parse_markup(m, '\0').is_ok());
    }

    #[test]
    fn a_thought_without_a_subject_loses_its_empty_bold() {
        // gemini-cli: `**{subject}**\n{description}`, the subject empty.
        assert_eq!(thought("****\nReading the file."), "Reading the file.");
        assert_eq!(thought("****Reading"), "Reading");
        assert_eq!(thought("**Plan**\nRead it."), "**Plan**\nRead it.");
        assert_eq!(thought("a ****\n*****b"), "a ****\n*****b");
        // Rendered, no asterisk is left.
        let shown = plain_text(&thought("**Reading**\nThe file.\n****\nThen edit."));
        assert_eq!(shown, "Reading The file. Then edit.");
    }

    #[test]
    fn headings_lists_code_and_links() {
        let b = render(
            "# Title\n\n- one *two*\n- `three`\n\n```rust\nfn x() {}\n```\n\n[a](https://e.x/?a=1&b=2)",
        );
        assert_eq!(b.len(), 3, "{b:?}");
        let Block::Markup { markup: first, .. } = &b[0] else {
            panic!()
        };
        assert!(first.contains("<span size=\"x-large\" weight=\"bold\">Title</span>"));
        assert!(first.contains("• one <i>two</i>"));
        assert!(first.contains("• <tt>three</tt>"));
        assert_eq!(
            b[1],
            Block::Code {
                lang: "rust".into(),
                text: "fn x() {}".into()
            }
        );
        let Block::Markup { markup: link, links } = &b[2] else {
            panic!()
        };
        assert!(
            link.contains(
                "<a href=\"https://e.x/?a=1&amp;b=2\" title=\"https://e.x/?a=1&amp;amp;b=2\">a</a>"
            ),
            "{link}"
        );
        assert_eq!(
            links,
            &[Link {
                label: "a".into(),
                target: "https://e.x/?a=1&b=2".into()
            }]
        );
        // GtkLabel handles <a> itself; Pango checks the rest.
        let Block::Markup { markup: first, .. } = &b[0] else {
            panic!()
        };
        assert!(gtk::pango::parse_markup(first, '\0').is_ok(), "{first}");
    }

    /// Every character that must not reach a widget raw.
    fn raw(c: char) -> bool {
        (c.is_control() && c != '\n' && c != '\t') || hidden(c)
    }

    #[test]
    fn controls_and_hidden_characters_are_shown_by_stand_ins() {
        assert_eq!(
            visible("plain ünïcödé\n\tok 👨‍👩‍👧"),
            Cow::Borrowed("plain ünïcödé\n\tok 👨‍👩‍👧")
        );
        assert_eq!(
            visible("a\u{0}b\u{7}\u{1b}[31m\u{7f}"),
            "a\u{2400}b\u{2407}\u{241B}[31m\u{2421}"
        );
        assert_eq!(visible("line\r\nnext\rover"), "line\nnext\u{240D}over");
        assert_eq!(visible("nel\u{85}"), "nel\u{27E8}U+0085\u{27E9}");
        assert_eq!(visible("invoice\u{202E}gnp.exe"), "invoice⟨U+202E⟩gnp.exe");
        for c in [
            '\u{202A}',
            '\u{2066}',
            '\u{2069}',
            '\u{200E}',
            '\u{200F}',
            '\u{061C}',
            '\u{FEFF}',
            '\u{E0041}',
        ] {
            let shown = visible(&format!("x{c}y")).into_owned();
            assert!(shown.contains(&format!("U+{:04X}", c as u32)), "{shown}");
        }
        // Every code point: what comes out holds nothing raw.
        for n in 0..=0x10FFFFu32 {
            let Some(c) = char::from_u32(n) else { continue };
            if c == '\n' || c == '\t' || c == '\r' {
                continue;
            }
            let shown = visible(c.encode_utf8(&mut [0; 4])).into_owned();
            assert!(!shown.chars().any(raw), "U+{n:04X} shown as {shown:?}");
            assert!(!shown.is_empty(), "U+{n:04X} vanished");
        }
    }

    #[test]
    fn no_markdown_path_lets_a_control_character_through() {
        let md = "t\u{0}x *e\u{1b}m* `c\u{0}d` [l\u{202E}k](https://h\u{0}.x \"t\u{0}\")\n\n\
                  | a\u{0} | b |\n|---|---|\n| c\u{7f} | d |\n\n<b\u{0}>\n\n\
                  ```ru\u{0}st x\n c\u{0}o\u{85}de\n```\n\n    ind\u{0}ented\n";
        let blocks = render(md);
        assert!(blocks.len() >= 3, "{blocks:?}");
        for b in &blocks {
            let texts: Vec<&str> = match b {
                Block::Markup { markup, links } => {
                    let mut t = vec![markup.as_str()];
                    t.extend(links.iter().flat_map(|l| [l.label.as_str(), l.target.as_str()]));
                    t
                }
                Block::Code { lang, text } => vec![lang.as_str(), text.as_str()],
            };
            for t in texts {
                assert!(!t.chars().any(raw), "{t:?} in {b:?}");
            }
        }
        assert!(blocks
            .iter()
            .any(|b| matches!(b, Block::Code { text, .. } if text == " c\u{2400}o⟨U+0085⟩de")));
    }

    #[test]
    fn a_link_is_misleading_when_its_text_names_another_address() {
        for (label, target) in [
            ("https://github.com", "https://evil.example"),
            (
                "https://github.com/login",
                "https://evil.example/github.com/login",
            ),
            ("github.com", "https://evil.example"),
            ("www.github.com", "http://evil.example"),
            ("GitHub.com/settings", "https://evil.example/settings"),
            ("https://github.com", "https://github.com@evil.example/"),
            ("https://github.com", "https://github.com.evil.example/"),
            ("https://github.com", "https://evil.example\\@github.com"),
            ("docs.github.com", "https://github.com"),
            ("github.com", "javascript:alert(1)"),
            ("github.com", "relative/page"),
            ("<https://github.com>", "https://evil.example"),
        ] {
            assert!(link_is_misleading(label, target), "{label} -> {target}");
            assert!(link_needs_confirmation(label, target), "{label} -> {target}");
        }
        for (label, target) in [
            ("https://github.com", "https://github.com/"),
            ("https://github.com", "https://www.GitHub.com:443/x?y#z"),
            ("github.com", "https://github.com/login"),
            ("www.github.com", "https://github.com"),
            ("the docs", "https://evil.example"),
            ("click here", "https://docs.rs"),
            ("main.rs", "https://github.com/o/r/blob/main/src/main.rs"),
            ("config.json", "config.json"),
            ("user@example.com", "mailto:user@example.com"),
            ("example.com", "mailto:someone@example.com"),
            ("`Vec::new`", "https://doc.rust-lang.org/std/vec/struct.Vec.html"),
            ("1.5", "https://example.com"),
        ] {
            assert!(!link_is_misleading(label, target), "{label} -> {target}");
        }
        // Not misleading, but leaving the web: asked all the same.
        assert!(link_needs_confirmation("notes", "file:///etc/passwd"));
        assert!(!link_needs_confirmation("the docs", "https://docs.rs"));
    }
}
