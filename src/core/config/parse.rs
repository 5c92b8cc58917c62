//! Reading the configuration's JSON with comments: every value's line and
//! column (for problems), duplicate keys, and text that is not UTF-8.

use std::collections::HashMap;

use jsonc_parser::ast;
use serde_json::{Map, Value};

use crate::core::types::problem::Problem;
use crate::i18n::gettext_f;

/// Byte offset → 1-based line and column (in characters).
pub(super) struct LineIndex<'a> {
    pub(super) text: &'a str,
    pub(super) starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }
    pub(super) fn at(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, column + 1)
    }
}

/// Where a JSON pointer's key and value start in the text.
#[derive(Clone, Copy)]
pub(super) struct Span {
    pub(super) key: Option<usize>,
    pub(super) value: usize,
}

#[derive(Default)]
pub(super) struct Converter {
    pub(super) spans: HashMap<String, Span>,
    /// (pointer of the object, key, key offset) for every key.
    pub(super) keys: Vec<(String, String, usize)>,
    /// Keys given twice in one object, at any depth. serde_json (and the
    /// map below) keeps the last one, so the first would be dropped without
    /// a word: each is an error instead.
    pub(super) duplicates: Vec<Duplicate>,
}

pub(super) struct Duplicate {
    /// The pointer of the key given again.
    pub(super) pointer: String,
    pub(super) key: String,
    /// Offsets of the second occurrence and of the first.
    pub(super) at: usize,
    pub(super) first: usize,
}

impl Duplicate {
    pub(super) fn problem(&self, index: &LineIndex<'_>) -> Problem {
        let (line, column) = index.at(self.at);
        let (first_line, _) = index.at(self.first);
        Problem {
            line,
            column,
            message: gettext_f(
                "{path}: duplicate key \"{key}\" (first at line {line})",
                &[
                    ("path", &key_path(&self.pointer)),
                    ("key", &self.key),
                    ("line", &first_line.to_string()),
                ],
            ),
            warning: false,
        }
    }
}

impl Converter {
    pub(super) fn value(&mut self, v: &ast::Value<'_>, pointer: &str, key: Option<usize>) -> Value {
        let start = match v {
            ast::Value::StringLit(s) => s.range.start,
            ast::Value::NumberLit(n) => n.range.start,
            ast::Value::BooleanLit(b) => b.range.start,
            ast::Value::Object(o) => o.range.start,
            ast::Value::Array(a) => a.range.start,
            ast::Value::NullKeyword(n) => n.range.start,
        };
        self.spans.insert(pointer.to_owned(), Span { key, value: start });
        match v {
            ast::Value::StringLit(s) => Value::String(s.value.to_string()),
            ast::Value::NumberLit(n) => serde_json::from_str(n.value).unwrap_or(Value::Null),
            ast::Value::BooleanLit(b) => Value::Bool(b.value),
            ast::Value::NullKeyword(_) => Value::Null,
            ast::Value::Array(a) => Value::Array(
                a.elements
                    .iter()
                    .enumerate()
                    .map(|(i, e)| self.value(e, &format!("{pointer}/{i}"), None))
                    .collect(),
            ),
            ast::Value::Object(o) => {
                let mut map = Map::new();
                let mut first_at: HashMap<&str, usize> = HashMap::new();
                for prop in &o.properties {
                    let name = prop.name.as_str();
                    let key_start = match &prop.name {
                        ast::ObjectPropName::String(s) => s.range.start,
                        ast::ObjectPropName::Word(w) => w.range.start,
                    };
                    self.keys.push((pointer.to_owned(), name.to_owned(), key_start));
                    let child = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                    if let Some(&first) = first_at.get(name) {
                        self.duplicates.push(Duplicate {
                            pointer: child.clone(),
                            key: name.to_owned(),
                            at: key_start,
                            first,
                        });
                    } else {
                        first_at.insert(name, key_start);
                    }
                    let value = self.value(&prop.value, &child, Some(key_start));
                    map.insert(name.to_owned(), value);
                }
                Value::Object(map)
            }
        }
    }
}

/// `/agents/0/name` → `agents[0].name`, as people read a key path.
pub fn key_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    if out.is_empty() {
        "(top level)".into()
    } else {
        out
    }
}

pub(super) fn parse_options() -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Turns the text into a plain JSON value (comments and trailing commas
/// accepted), or the first syntax error or duplicate key, with its position
/// and message.
pub fn parse(text: &str) -> Result<Value, Problem> {
    let mut conv = Converter::default();
    let value = parse_with(text, &mut conv)?;
    match conv.duplicates.first() {
        Some(d) => Err(d.problem(&LineIndex::new(text))),
        None => Ok(value),
    }
}

/// The file's bytes as text, or where they stop being UTF-8.
pub fn decode(bytes: &[u8]) -> Result<&str, Problem> {
    std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let before = &bytes[..offset];
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        Problem {
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            // Unlike every other problem's, this column counts bytes, not
            // characters: what follows the bad byte is not text to count in.
            column: offset - line_start + 1,
            message: gettext_f(
                "the file is not valid UTF-8 at byte {offset}",
                &[("offset", &offset.to_string())],
            ),
            warning: false,
        }
    })
}

pub(super) fn parse_with(text: &str, conv: &mut Converter) -> Result<Value, Problem> {
    let index = LineIndex::new(text);
    match jsonc_parser::parse_to_ast(text, &Default::default(), &parse_options()) {
        Err(e) => {
            let (line, column) = index.at(e.range().start);
            Err(Problem {
                line,
                column,
                message: gettext_f("syntax error: {error}", &[("error", &e.kind().to_string())]),
                warning: false,
            })
        }
        Ok(result) => match result.value {
            None => Err(Problem {
                line: 1,
                column: 1,
                message: crate::i18n::gettext("the file is empty: a JSON object was expected"),
                warning: false,
            }),
            Some(v) => Ok(conv.value(&v, "", None)),
        },
    }
}
