//! Where an agent's streamed text is cut into rows of the conversation list.
//!
//! A long answer is not one row: the list view lays out and draws only the
//! rows on screen, so a 4 MB answer costs what its visible part costs, and
//! while it streams only its last row (the tail) is rendered again. Without
//! this every frame laid out the whole message (docs/benchmarks-history.md).
//!
//! Rows end after a blank line, after a closing code fence, or after any
//! line once the row has reached [`MAX_SEGMENT`] bytes; never inside a code
//! fence, and never inside an unfinished line.
//!
//! Each row is rendered as Markdown on its own, so a fence must be found
//! here exactly where the Markdown parser finds it (CommonMark's rules,
//! [`Fences`]): a row cut after a line that only looks like a fence ends
//! with an opening fence, which draws as an empty code block, and the next
//! row starts inside the code.

/// A row of plain paragraphs is cut at the next line break past this size,
/// so that one row's layout fits in a frame.
pub const MAX_SEGMENT: usize = 1024;

/// A run of three or more backticks or tildes opening `line` (after its
/// indentation): the character, the run's length and what follows it.
fn fence_run(line: &str) -> Option<(char, usize, &str)> {
    let t = line.trim_start();
    let c = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let n = t.len() - t.trim_start_matches(c).len();
    (n >= 3).then(|| (c, n, &t[n..]))
}

/// Where a text is with respect to code fences, line by line, as
/// CommonMark reads them: a fence opens with three or more backticks or
/// tildes (a backtick fence's info string holds no backtick: "```x```"
/// is inline code), and only a run of the same character at least as long,
/// with nothing after it, closes it. Anything else inside is code:
/// "```sh" inside a "````markdown" block, "```" inside a "~~~" block.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fences {
    open: Option<(char, usize)>,
}

impl Fences {
    /// Takes the next whole line; true when it opens or closes a fence.
    pub fn line(&mut self, line: &str) -> bool {
        let Some((c, n, rest)) = fence_run(line) else {
            return false;
        };
        match self.open {
            Some((open, len)) => {
                let closes = c == open && n >= len && rest.trim().is_empty();
                if closes {
                    self.open = None;
                }
                closes
            }
            None => {
                let opens = c == '~' || !rest.contains('`');
                if opens {
                    self.open = Some((c, n));
                }
                opens
            }
        }
    }

    /// Whether the lines so far end inside a code block.
    pub fn inside(&self) -> bool {
        self.open.is_some()
    }
}

/// Whether `line` could be a closing fence (a lone run of fence
/// characters), whatever came before it.
fn is_closing_fence(line: &str) -> bool {
    fence_run(line).is_some_and(|(_, _, rest)| rest.trim().is_empty())
}

/// Pushes to `out` the boundaries of `text` after `from`, which is itself
/// a boundary (0 or one pushed before), so outside any code fence.
pub fn boundaries(text: &str, from: usize, out: &mut Vec<usize>) {
    let Some(rest) = text.get(from..) else { return };
    let mut last = from;
    let mut pos = from;
    let mut fences = Fences::default();
    // Whether the row so far has anything but blank lines: a row of blank
    // lines alone would be an empty row.
    let mut content = false;
    for line in rest.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        pos += line.len();
        if fences.line(line) {
            content = true;
            if fences.inside() {
                continue;
            }
        } else if fences.inside() {
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
        && !is_closing_fence(last_line)
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

    /// The code blocks Markdown finds in `text`.
    fn code_blocks(text: &str) -> Vec<String> {
        crate::ui::markdown::render(text)
            .into_iter()
            .filter_map(|b| match b {
                crate::ui::markdown::Block::Code { text, .. } => Some(text),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn rows_hold_the_code_blocks_markdown_finds_in_the_whole() {
        // Fences that only look like fences: a nested fence in a longer
        // one, backticks in a tilde block, a closing-looking fence with an
        // info string, backticks that are inline code, an indented fence in
        // a list, a longer closing fence.
        let text = "Intro with ```inline``` code.\n\n\
            ````markdown\n# Readme\n```sh\nmake\n```\n````\n\n\
            ~~~\n```\nnot a fence here\n~~~\n\n\
            ```rust\nfn a() {}\n```rust\nfn b() {}\n```\n\n\
            1. Step:\n\n   ```sh\n   cargo test\n   ```\n\n\
            ```\nshort open, long close\n`````\nafter\n";
        let whole = code_blocks(text);
        assert_eq!(whole.len(), 5, "{whole:?}");
        let cuts = cut(text);
        let mut start = 0;
        let mut rows = Vec::new();
        for end in cuts.iter().copied().chain([text.len()]) {
            rows.extend(code_blocks(&text[start..end]));
            start = end;
        }
        assert_eq!(rows, whole, "cuts {cuts:?}");
        assert!(rows.iter().all(|c| !c.is_empty()), "{rows:?}");
    }

    #[test]
    fn fences_follow_commonmark() {
        let mut f = Fences::default();
        assert!(!f.line("```x``` inline\n") && !f.inside());
        assert!(f.line("````md\n") && f.inside());
        assert!(!f.line("```\n") && f.inside(), "shorter run");
        assert!(!f.line("~~~~\n") && f.inside(), "other character");
        assert!(!f.line("````rust\n") && f.inside(), "info string");
        assert!(f.line("`````  \n") && !f.inside(), "longer run closes");
        assert!(f.line("~~~ info with ` backtick\n") && f.inside());
        assert!(f.line("  ~~~\n") && !f.inside());
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
