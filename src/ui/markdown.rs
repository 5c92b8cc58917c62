//! Markdown to escaped Pango markup, with fenced code kept apart for
//! GtkSourceView. Agent text is never interpreted as markup: every piece of
//! it goes through `markup_escape_text`.

use gtk::glib;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Markup(String),
    Code { lang: String, text: String },
}

fn esc(t: &str) -> String {
    glib::markup_escape_text(t).to_string()
}

pub fn render(md: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut out = String::new();
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut code: Option<(String, String)> = None;
    let flush = |out: &mut String, blocks: &mut Vec<Block>| {
        let t = out.trim_end().to_owned();
        if !t.is_empty() {
            blocks.push(Block::Markup(t));
        }
        out.clear();
    };
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(md, opts) {
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
                Tag::Link { dest_url, .. } => out.push_str(&format!("<a href=\"{}\">", esc(&dest_url))),
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
                    flush(&mut out, &mut blocks);
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
                TagEnd::Link => out.push_str("</a>"),
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
    flush(&mut out, &mut blocks);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_is_escaped_never_markup() {
        let b = render("<b>not bold</b> & <span foreground='red'>x</span>");
        assert_eq!(b.len(), 1);
        let Block::Markup(m) = &b[0] else {
            panic!("markup expected")
        };
        assert!(m.contains("&lt;b&gt;not bold&lt;/b&gt; &amp;"), "{m}");
        assert!(gtk::pango::parse_markup(m, '\0').is_ok());
    }

    #[test]
    fn headings_lists_code_and_links() {
        let b = render(
            "# Title\n\n- one *two*\n- `three`\n\n```rust\nfn x() {}\n```\n\n[a](https://e.x/?a=1&b=2)",
        );
        assert_eq!(b.len(), 3, "{b:?}");
        let Block::Markup(first) = &b[0] else { panic!() };
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
        let Block::Markup(link) = &b[2] else { panic!() };
        assert!(link.contains("<a href=\"https://e.x/?a=1&amp;b=2\">a</a>"));
        // GtkLabel handles <a> itself; Pango checks the rest.
        let Block::Markup(first) = &b[0] else { panic!() };
        assert!(gtk::pango::parse_markup(first, '\0').is_ok(), "{first}");
    }
}
