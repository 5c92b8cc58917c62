//! A giant answer keeps only its end, as a terminal keeps its last lines.
//! An agent may stream a gigabyte of text into one message: kept whole,
//! it took 6 GB of memory (the conversation, the window's copy, the
//! history's) and could not be stored (SQLite's "string or blob too big").
//! Past [`KEPT`] bytes a text part drops its beginning, down to three
//! quarters of that, and starts with a line that says how much was cut.
//!
//! The conversation (core) and the window each apply the same function to
//! the same deltas, so they hold the same text without sending it again;
//! the history stores what the conversation holds.

use crate::i18n::gettext_f;

/// The most a text part keeps, in bytes: far above any answer a person
/// reads (a 1 MB formatted reply is the window's own benchmark).
pub const KEPT: usize = 8 << 20;

/// What was cut from a part so far: bytes of the agent's text, and the
/// length of the line that says so at the text's start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cut {
    pub bytes: u64,
    pub marker: usize,
}

/// Drops the beginning of `text` once it is longer than [`KEPT`], keeping
/// the last three quarters of it from a line's start where one is near.
/// Answers whether it cut.
pub fn cap(text: &mut String, cut: &mut Cut) -> bool {
    if text.len() <= KEPT {
        return false;
    }
    let body_start = cut.marker.min(text.len());
    let keep = KEPT / 4 * 3;
    let mut from = text.len() - keep;
    // From the next line, if it starts within 4 KiB; else the next char.
    if let Some(nl) = text[..]
        .as_bytes()
        .get(from..(from + 4096).min(text.len()))
        .and_then(|b| b.iter().position(|&c| c == b'\n'))
    {
        from += nl + 1;
    }
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let dropped = from.saturating_sub(body_start) as u64;
    cut.bytes += dropped;
    let marker = marker(cut.bytes);
    let mut kept = String::with_capacity(marker.len() + text.len() - from + KEPT / 4);
    kept.push_str(&marker);
    kept.push_str(&text[from..]);
    *text = kept;
    cut.marker = marker.len();
    true
}

/// The line a cut text starts with.
fn marker(bytes: u64) -> String {
    let size = size_text(bytes);
    format!(
        "{}\n\n",
        gettext_f(
            "[{size} of this message were cut from its start; the rest follows]",
            &[("size", &size)]
        )
    )
}

/// `2.0 MB`, `1.1 GB`: decimal units, one decimal.
fn size_text(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.1} kB", b / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_keeps_its_end_and_says_how_much_was_cut() {
        let mut text = String::new();
        let mut cut = Cut::default();
        let line = "é".repeat(50) + "\n";
        let mut appended = 0u64;
        for _ in 0..200_000 {
            text.push_str(&line);
            appended += line.len() as u64;
            cap(&mut text, &mut cut);
            assert!(text.len() <= KEPT + line.len() + 200, "{}", text.len());
        }
        // Everything appended is either cut or kept, to the byte.
        assert_eq!(cut.bytes + (text.len() - cut.marker) as u64, appended);
        assert!(text.starts_with("[") && text.contains("were cut from its start"));
        // It cut at a line's start: what follows the marker is whole lines.
        assert!(text[cut.marker..].starts_with('é'));
        assert!(text.ends_with("é\n"));
    }

    #[test]
    fn a_short_text_is_left_alone() {
        let mut text = "hello".to_owned();
        let mut cut = Cut::default();
        assert!(!cap(&mut text, &mut cut));
        assert_eq!(text, "hello");
        assert_eq!(cut, Cut::default());
    }

    #[test]
    fn the_same_deltas_give_the_same_text() {
        let (mut a, mut b) = (String::new(), String::new());
        let (mut ca, mut cb) = (Cut::default(), Cut::default());
        for i in 0..3000 {
            let delta = format!("{i} {}", "x".repeat(i % 4000));
            a.push_str(&delta);
            cap(&mut a, &mut ca);
            b.push_str(&delta);
            cap(&mut b, &mut cb);
        }
        assert_eq!(a, b);
    }
}
