//! Heights of rows before they are drawn, from their text and the font:
//! what the height index (`heights`) holds for a row until the row is on
//! the page and measured.

use crate::core::types::message::Part;
use crate::ui::models::{segments, RowKind, RowObject};

/// Pixels of a row outside its text: its padding, and the role's line on a
/// message's first row and the footer's on its last (style.css).
const ROW_PADDING: i32 = 8;
const ROLE_LINE: i32 = 22;
/// A part that is not text (a tool card, a plan, a thought): most are
/// drawn folded to about this height.
pub const PART_ESTIMATE: i32 = 90;

/// What the list needs of the font to estimate a row's height.
#[derive(Clone, Copy)]
pub struct Metrics {
    char_width: f64,
    line_height: f64,
}

impl Metrics {
    /// The font's character width and line height in `context`.
    pub fn of(context: &gtk::pango::Context) -> Self {
        let metrics = context.metrics(None, None);
        let scale = f64::from(gtk::pango::SCALE);
        Metrics {
            char_width: (f64::from(metrics.approximate_char_width()) / scale).max(1.0),
            line_height: (f64::from(metrics.ascent() + metrics.descent()) / scale).max(1.0),
        }
    }
}

/// About the height of `row` at `width`, before it is drawn.
pub fn estimate(row: &RowObject, width: i32, m: Metrics) -> i32 {
    let stamp = row.stamp();
    let mut h = ROW_PADDING;
    if stamp.first {
        h += ROLE_LINE;
    }
    if stamp.last {
        h += ROW_PADDING;
    }
    let width = if width > 0 { width } else { 600 };
    // The row's padding and the bubble's (style.css) are outside the text.
    let per_line = ((f64::from(width) - 36.0) / m.char_width).max(20.0);
    let body = row
        .message()
        .and_then(|message| {
            message.with(|msg| match row.kind() {
                RowKind::Empty => 0,
                RowKind::Text { part, start, end } => match msg.parts.get(part) {
                    Some(Part::Text { text }) => {
                        let slice = match end {
                            Some(end) => text.get(start..end),
                            None => text.get(start..),
                        };
                        estimate_lines(slice.unwrap_or_default(), per_line, m.line_height)
                    }
                    _ => 0,
                },
                RowKind::Part(i) => match msg.parts.get(i) {
                    Some(Part::Text { text }) => estimate_lines(text, per_line, m.line_height) + 16,
                    _ => PART_ESTIMATE,
                },
                RowKind::Attachments { .. } => PART_ESTIMATE,
            })
        })
        .unwrap_or(0);
    h + body
}

/// About the height of Markdown `md` rendered by `append_markdown` (in
/// `message_parts`): its paragraphs flow (soft breaks are spaces) and wrap
/// at `per_line` characters; list items, headings, quotes, table and code
/// lines stand alone; blocks are 8 px apart, as in the parts box.
fn estimate_lines(md: &str, per_line: f64, line_h: f64) -> i32 {
    let mut lines = 0.0;
    let mut blocks = 0u32;
    let mut para = 0usize;
    let mut fences = segments::Fences::default();
    let wrapped = |chars: usize| (chars as f64 / per_line).ceil().max(1.0);
    let flush = |para: &mut usize, lines: &mut f64, blocks: &mut u32| {
        if *para > 0 {
            *lines += wrapped(*para);
            *blocks += 1;
            *para = 0;
        }
    };
    for line in md.lines() {
        let t = line.trim_start();
        if fences.line(line) {
            flush(&mut para, &mut lines, &mut blocks);
            blocks += u32::from(fences.inside());
            continue;
        }
        if fences.inside() {
            lines += wrapped(line.chars().count());
            continue;
        }
        if t.is_empty() {
            flush(&mut para, &mut lines, &mut blocks);
            continue;
        }
        // "12. item": digits, then ". " (not a search through the line).
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        let numbered = digits > 0 && t.as_bytes()[digits..].starts_with(b". ");
        let alone = numbered || ["#", "- ", "* ", "+ ", ">", "|"].iter().any(|p| t.starts_with(p));
        if alone && para > 0 {
            // A list's items share one block, without the 8 px between.
            lines += wrapped(para);
            para = 0;
        }
        para += line.chars().count() + usize::from(para > 0);
    }
    flush(&mut para, &mut lines, &mut blocks);
    (lines * line_h) as i32 + 8 * blocks.saturating_sub(1) as i32
}
