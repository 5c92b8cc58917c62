//! Where an agent's streamed text is cut into rows of the conversation list.
//!
//! A long answer is not one row: the list view lays out and draws only the
//! rows on screen, so a 4 MB answer costs what its visible part costs, and
//! while it streams only its last row (the tail) is rendered again. Without
//! this every frame laid out the whole message (BENCHMARKS.md).
//!
//! Rows end after a blank line, after a closing code fence, or after any
//! line once the row has reached [`MAX_SEGMENT`] bytes; never inside a code
//! fence, and never inside an unfinished line.

/// A row of plain paragraphs is cut at the next line break past this size,
/// so that one row's layout fits in a frame.
pub const MAX_SEGMENT: usize = 1024;

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// Pushes to `out` the boundaries of `text` after `from`, which is itself
/// a boundary (0 or one pushed before), so outside any code fence.
pub fn boundaries(text: &str, from: usize, out: &mut Vec<usize>) {
    let Some(rest) = text.get(from..) else { return };
    let mut last = from;
    let mut pos = from;
    let mut in_fence = false;
    // Whether the row so far has anything but blank lines: a row of blank
    // lines alone would be an empty row.
    let mut content = false;
    for line in rest.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        pos += line.len();
        if is_fence(line) {
            in_fence = !in_fence;
            content = true;
            if in_fence {
                continue;
            }
        } else if in_fence {
            continue;
        } else if line.trim().is_empty() {
            if !content {
                continue;
            }
        } else {
            content = true;
            if pos - last < MAX_SEGMENT {
                continue;
            }
        }
        out.push(pos);
        last = pos;
        content = false;
    }
}

/// Whether a row boundary at `pos` splits a paragraph (a cut for size, at
/// a line break inside it) rather than ending a block: the two rows are
/// then drawn without a gap, as the one paragraph they are.
pub fn splits_paragraph(text: &str, pos: usize) -> bool {
    if pos == 0 || pos >= text.len() {
        return false;
    }
    let Some(before) = text.get(..pos) else {
        return false;
    };
    let last_line = before.trim_end_matches('\n').rsplit('\n').next().unwrap_or("");
    before.ends_with('\n')
        && !before.ends_with("\n\n")
        && !last_line.trim().is_empty()
        && !is_fence(last_line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> Vec<usize> {
        let mut out = Vec::new();
        boundaries(text, 0, &mut out);
        out
    }

    #[test]
    fn cuts_after_blank_lines_and_fences_never_inside_one() {
        let text = "para one\n\npara two\n\n```rust\nfn x() {}\n\nfn y() {}\n";
        assert_eq!(cut(text), vec![10, 20]);
        let closed = format!("{text}```\nafter\n\nmore");
        let fence_end = text.len() + 4;
        assert_eq!(cut(&closed), vec![10, 20, fence_end, fence_end + 7]);
        assert_eq!(cut("no newline yet"), Vec::<usize>::new());
        // Blank lines alone never make a row.
        assert_eq!(cut("\n\n\nx\n\n"), vec![6]);
    }

    #[test]
    fn a_long_paragraph_is_cut_at_line_breaks() {
        let line = "x".repeat(99) + "\n";
        let text = line.repeat(200); // 20 KB, one paragraph
        let cuts = cut(&text);
        assert!(cuts.len() >= 15, "{cuts:?}");
        let mut prev = 0;
        for &c in &cuts {
            assert!(c.is_multiple_of(line.len()), "{c}");
            assert!(c - prev <= MAX_SEGMENT + line.len(), "{prev}..{c}");
            prev = c;
        }
    }

    #[test]
    fn only_cuts_for_size_split_a_paragraph() {
        let line = "x".repeat(99) + "\n";
        let text = line.repeat(20) + "\nnext\n\n```\ncode\n```\nafter\n";
        let cuts = cut(&text);
        assert!(splits_paragraph(&text, cuts[0]), "a cut for size");
        let blank = text.find("\n\nnext").map(|p| p + 2).unwrap_or(0);
        assert!(!splits_paragraph(&text, blank), "after a blank line");
        let fence = text.find("```\nafter").map(|p| p + 4).unwrap_or(0);
        assert!(!splits_paragraph(&text, fence), "after a closing fence");
        assert!(!splits_paragraph(&text, 0));
    }

    #[test]
    fn continuing_from_a_boundary_gives_the_same_cuts() {
        let text = "a\n\nb\nc\n\n```\nx\n\ny\n```\nz\n\n".repeat(50);
        let whole = cut(&text);
        // Streamed: the text arrives in pieces, each call starts at the
        // last boundary found so far.
        let mut streamed = Vec::new();
        for end in (1..=text.len()).step_by(7).chain([text.len()]) {
            let from = streamed.last().copied().unwrap_or(0);
            boundaries(&text[..end], from, &mut streamed);
        }
        assert_eq!(streamed, whole);
    }
}
