//! Mending lines that are JSON but for a few bad characters. serde_json
//! rightly refuses a lone UTF-16 surrogate escape (`"\uD83D"`: half of a
//! pair, which an agent that cuts its text into chunks by UTF-16 units
//! sends), bytes that are not UTF-8, and a byte-order mark before the value.
//! Dropping the line would drop the whole chunk; mending it keeps the text,
//! with U+FFFD where a character could not be read. Lines taken by the two
//! fast paths (text chunks, session updates) never come here; the others
//! (requests, answers, updates the fast paths refuse) pay one scan without
//! allocation (`suspect`), and a copy only when there may be something to
//! mend (valid escaped pairs included, which are rare).

/// The line with each lone surrogate escape written as `\uFFFD`, invalid
/// UTF-8 replaced by U+FFFD and a leading byte-order mark dropped; `None`
/// when there is nothing of the kind to mend.
pub fn repaired(line: &[u8]) -> Option<Vec<u8>> {
    if !suspect(line) {
        return None;
    }
    let mut changed = false;
    let line = match line.strip_prefix("\u{FEFF}".as_bytes()) {
        Some(rest) => {
            changed = true;
            rest
        }
        None => line,
    };
    let text = String::from_utf8_lossy(line);
    if matches!(text, std::borrow::Cow::Owned(_)) {
        changed = true;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        // An escape: `\uXXXX` is looked at, any other is copied whole (so
        // `\\uD83D`, an escaped backslash, is left alone).
        let Some(code) = (bytes.get(i + 1) == Some(&b'u'))
            .then(|| hex4(bytes, i + 2))
            .flatten()
        else {
            out.extend_from_slice(&bytes[i..(i + 2).min(bytes.len())]);
            i += 2;
            continue;
        };
        let lone = match code {
            0xD800..=0xDBFF => {
                let low = (bytes.get(i + 6) == Some(&b'\\') && bytes.get(i + 7) == Some(&b'u'))
                    .then(|| hex4(bytes, i + 8))
                    .flatten();
                if low.is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) {
                    // A whole pair: copied as it is.
                    out.extend_from_slice(&bytes[i..i + 12]);
                    i += 12;
                    continue;
                }
                true
            }
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            out.extend_from_slice(br"\uFFFD");
            changed = true;
        } else {
            out.extend_from_slice(&bytes[i..i + 6]);
        }
        i += 6;
    }
    changed.then_some(out)
}

/// Whether `line` might hold something to mend, found without allocating:
/// a byte-order mark, invalid UTF-8, or an escape of a surrogate
/// (`\uD800` to `\uDFFF`, whole pairs included).
fn suspect(line: &[u8]) -> bool {
    line.starts_with("\u{FEFF}".as_bytes())
        || std::str::from_utf8(line).is_err()
        || line.windows(4).any(|w| {
            w[0] == b'\\'
                && w[1] == b'u'
                && matches!(w[2], b'd' | b'D')
                && matches!(w[3], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
        })
}

/// The four hex digits at `at`, as a number.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(line: &[u8]) -> String {
        let fixed = repaired(line).expect("something to mend");
        let v: serde_json::Value = serde_json::from_slice(&fixed).expect("JSON after mending");
        v["t"].as_str().expect("text").to_owned()
    }

    #[test]
    fn lone_halves_become_replacement_characters_and_pairs_stay() {
        assert_eq!(text_of(br#"{"t":"a\uD83Db"}"#), "a\u{FFFD}b");
        assert_eq!(text_of(br#"{"t":"\uDE00"}"#), "\u{FFFD}");
        assert_eq!(text_of(br#"{"t":"\uD83D\uD83D\uDE00"}"#), "\u{FFFD}😀");
        assert_eq!(text_of(br#"{"t":"\uD83D\n"}"#), "\u{FFFD}\n");
        // An escaped backslash followed by "uD83D" is plain text.
        assert_eq!(repaired(br#"{"t":"\\uD83D"}"#), None);
        assert_eq!(repaired(br#"{"t":"\uD83D\uDE00 ok"}"#), None);
    }

    #[test]
    fn invalid_utf8_and_a_byte_order_mark_are_mended() {
        assert_eq!(text_of(b"{\"t\":\"bad:[\xff\xfe]\"}"), "bad:[\u{FFFD}\u{FFFD}]");
        assert_eq!(text_of(b"\xef\xbb\xbf{\"t\":\"bom\"}"), "bom");
    }

    #[test]
    fn cut_escapes_at_the_end_do_not_panic() {
        for line in [&b"\\"[..], b"\\u", b"\\uD8", b"\\uD83D\\", b"\\uD83D\\uDE"] {
            let _ = repaired(line);
        }
    }
}
