//! Small edits to the configuration text that keep everything else (comments,
//! order, formatting) as the user wrote it.

use jsonc_parser::ast;
use jsonc_parser::common::Ranged;

/// A file written with CRLF line ends throughout is edited as LF and
/// written back with CRLF, so the lines an edit adds match the others.
fn keeping_crlf(text: &str, edit: impl FnOnce(&str) -> Result<String, String>) -> Result<String, String> {
    let crlf = text.contains("\r\n") && !text.replace("\r\n", "").contains('\n');
    if !crlf {
        return edit(text);
    }
    edit(&text.replace("\r\n", "\n")).map(|out| out.replace('\n', "\r\n"))
}

/// Sets a top-level key to `value`: its value is replaced in place, or the
/// key is added as the object's first member.
pub fn set_top_level(text: &str, key: &str, value: &serde_json::Value) -> Result<String, String> {
    keeping_crlf(text, |text| set_top_level_lf(text, key, value))
}

fn set_top_level_lf(text: &str, key: &str, value: &serde_json::Value) -> Result<String, String> {
    let parsed = jsonc_parser::parse_to_ast(text, &Default::default(), &Default::default())
        .map_err(|e| e.to_string())?;
    let Some(ast::Value::Object(obj)) = parsed.value else {
        return Err(crate::i18n::gettext("the configuration is not a JSON object"));
    };
    let rendered = value.to_string();
    if let Some(prop) = obj.properties.iter().find(|p| p.name.as_str() == key) {
        let range = match &prop.value {
            ast::Value::StringLit(v) => v.range,
            ast::Value::NumberLit(v) => v.range,
            ast::Value::BooleanLit(v) => v.range,
            ast::Value::Object(v) => v.range,
            ast::Value::Array(v) => v.range,
            ast::Value::NullKeyword(v) => v.range,
        };
        return Ok(format!(
            "{}{}{}",
            &text[..range.start],
            rendered,
            &text[range.end..]
        ));
    }
    let open = obj.range.start + 1;
    let comma = if obj.properties.is_empty() { "" } else { "," };
    Ok(format!(
        "{}\n  \"{key}\": {rendered}{comma}{}",
        &text[..open],
        &text[open..]
    ))
}

/// What comes after `pos` that is not whitespace or a comment.
fn skip_trivia(text: &str, mut pos: usize) -> usize {
    let b = text.as_bytes();
    while pos < b.len() {
        match b[pos] {
            b' ' | b'\t' | b'\r' | b'\n' => pos += 1,
            b'/' if b.get(pos + 1) == Some(&b'/') => {
                pos = text[pos..].find('\n').map_or(b.len(), |n| pos + n);
            }
            b'/' if b.get(pos + 1) == Some(&b'*') => {
                pos = text[pos + 2..].find("*/").map_or(b.len(), |n| pos + 2 + n + 2);
            }
            _ => break,
        }
    }
    pos
}

/// The whitespace at the start of the line `pos` is on, when only
/// whitespace comes before `pos` on it.
fn indent_at(text: &str, pos: usize) -> Option<&str> {
    let line_start = text[..pos].rfind('\n').map_or(0, |n| n + 1);
    let lead = &text[line_start..pos];
    lead.chars().all(|c| c == ' ' || c == '\t').then_some(lead)
}

/// `value` as pretty JSON whose lines after the first are indented by `indent`.
fn render(value: &serde_json::Value, indent: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    pretty.replace('\n', &format!("\n{indent}"))
}

/// An `agents` entry: its members in the order they are written.
pub type Entry = Vec<(String, serde_json::Value)>;

/// `entry` as a pretty object, its lines after the first indented by `indent`.
fn render_entry(entry: &Entry, indent: &str) -> String {
    let inner = format!("{indent}  ");
    let members: Vec<String> = entry
        .iter()
        .map(|(k, v)| {
            format!(
                "{inner}{}: {}",
                serde_json::Value::from(k.as_str()),
                render(v, &inner)
            )
        })
        .collect();
    format!("{{\n{}\n{indent}}}", members.join(",\n"))
}

/// The `agents` entry named `name`, its members in the file's order.
pub fn agent_entry(text: &str, name: &str) -> Option<Entry> {
    let obj = parse_object(text).ok()?;
    let agents = agents_array(&obj).ok()??;
    let (index, _) = agent_range(agents, name)?;
    let ast::Value::Object(o) = agents.elements.get(index)? else {
        return None;
    };
    o.properties
        .iter()
        .map(|p| {
            let r = p.value.range();
            let v = crate::core::config::validate::parse(&text[r.start..r.end]).ok()?;
            Some((p.name.as_str().to_owned(), v))
        })
        .collect()
}

fn agents_array<'a>(parsed: &'a jsonc_parser::ast::Object<'a>) -> Result<Option<&'a ast::Array<'a>>, String> {
    top_level_array(parsed, "agents")
}

fn top_level_array<'a>(
    parsed: &'a jsonc_parser::ast::Object<'a>,
    key: &str,
) -> Result<Option<&'a ast::Array<'a>>, String> {
    match parsed.properties.iter().find(|p| p.name.as_str() == key) {
        None => Ok(None),
        Some(p) => match &p.value {
            ast::Value::Array(a) => Ok(Some(a)),
            _ => Err(crate::i18n::gettext_f("\"{key}\" is not a list", &[("key", key)])),
        },
    }
}

/// Appends `value` (an object) to the top-level list `key` (`permissions`),
/// as `append_agent` does to `agents`.
pub fn append_item(text: &str, key: &str, value: &serde_json::Value) -> Result<String, String> {
    keeping_crlf(text, |text| append_item_lf(text, key, value))
}

fn append_item_lf(text: &str, key: &str, value: &serde_json::Value) -> Result<String, String> {
    let entry: Entry = value
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    append_to(text, key, &entry)
}

fn parse_object(text: &str) -> Result<jsonc_parser::ast::Object<'_>, String> {
    let parsed = jsonc_parser::parse_to_ast(text, &Default::default(), &Default::default())
        .map_err(|e| e.to_string())?;
    match parsed.value {
        Some(ast::Value::Object(obj)) => Ok(obj),
        _ => Err(crate::i18n::gettext("the configuration is not a JSON object")),
    }
}

/// The `agents` entry named `name`, as a range of `text`.
fn agent_range(agents: &ast::Array<'_>, name: &str) -> Option<(usize, jsonc_parser::common::Range)> {
    agents.elements.iter().enumerate().find_map(|(i, v)| match v {
        ast::Value::Object(o)
            if o.properties.iter().any(|p| {
                p.name.as_str() == "name" && matches!(&p.value, ast::Value::StringLit(s) if s.value == name)
            }) =>
        {
            Some((i, o.range))
        }
        _ => None,
    })
}

/// Appends `entry` to the `agents` list, after its last entry, in the style
/// around it (indentation, a trailing comma); the rest of the text, comments
/// included, is kept byte for byte.
pub fn append_agent(text: &str, entry: &Entry) -> Result<String, String> {
    keeping_crlf(text, |text| append_agent_lf(text, entry))
}

fn append_agent_lf(text: &str, entry: &Entry) -> Result<String, String> {
    append_to(text, "agents", entry)
}

fn append_to(text: &str, key: &str, entry: &Entry) -> Result<String, String> {
    let obj = parse_object(text)?;
    let Some(agents) = top_level_array(&obj, key)? else {
        let object = serde_json::Value::Object(entry.iter().cloned().collect());
        return set_top_level(text, key, &serde_json::Value::Array(vec![object]));
    };
    // The indentation of the line that holds `"agents": [`.
    let line_start = text[..agents.range.start].rfind('\n').map_or(0, |n| n + 1);
    let outer: String = text[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let Some(last) = agents.elements.last() else {
        let inner = format!("{outer}  ");
        let at = agents.range.start + 1;
        return Ok(format!(
            "{}\n{inner}{}\n{outer}{}",
            &text[..at],
            render_entry(entry, &inner),
            &text[at..]
        ));
    };
    let range = last.range();
    let inner = indent_at(text, range.start)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{outer}  "));
    let rendered = render_entry(entry, &inner);
    let next = skip_trivia(text, range.end);
    if text.as_bytes().get(next) == Some(&b',') {
        // A trailing comma: the new entry goes after it, and gets one too.
        let at = next + 1;
        Ok(format!("{}\n{inner}{rendered},{}", &text[..at], &text[at..]))
    } else {
        Ok(format!(
            "{},\n{inner}{rendered}{}",
            &text[..range.end],
            &text[range.end..]
        ))
    }
}

/// Sets members of the `agents` entry named `name`: a member it has gets
/// the new value in place (the rest of its line, comments included, stays);
/// one it lacks is added after its last member, in the style around it.
/// Nothing else in the file changes.
pub fn set_agent_members(text: &str, name: &str, members: &Entry) -> Result<String, String> {
    keeping_crlf(text, |text| set_agent_members_lf(text, name, members))
}

fn set_agent_members_lf(text: &str, name: &str, members: &Entry) -> Result<String, String> {
    let obj = parse_object(text)?;
    let Some((index, _)) = agents_array(&obj)?.and_then(|a| agent_range(a, name)) else {
        return Err(crate::i18n::gettext_f(
            "there is no agent named {name}",
            &[("name", name)],
        ));
    };
    set_members_at(text, "agents", index, members)
}

/// Sets members of item `index` of the top-level list `key`, as
/// [`set_agent_members`] does.
pub fn set_members_at(text: &str, key: &str, index: usize, members: &Entry) -> Result<String, String> {
    keeping_crlf(text, |text| set_members_at_lf(text, key, index, members))
}

fn set_members_at_lf(text: &str, key: &str, index: usize, members: &Entry) -> Result<String, String> {
    let obj = parse_object(text)?;
    let Some(ast::Value::Object(entry)) = top_level_array(&obj, key)?.and_then(|a| a.elements.get(index))
    else {
        return Err(crate::i18n::gettext_f(
            "{key} has no item {index}",
            &[("key", key), ("index", &index.to_string())],
        ));
    };
    // Splices as (start, end, replacement), applied from the end.
    let mut splices: Vec<(usize, usize, String)> = Vec::new();
    let last = entry.properties.last();
    let (inner, multiline) = match last {
        Some(p) => match indent_at(text, p.range.start) {
            Some(i) => (i.to_owned(), true),
            None => (String::new(), false),
        },
        None => (String::new(), false),
    };
    let mut added = String::new();
    for (key, value) in members {
        match entry.properties.iter().find(|p| p.name.as_str() == key) {
            Some(p) => {
                let r = p.value.range();
                if crate::core::config::validate::parse(&text[r.start..r.end])
                    .ok()
                    .as_ref()
                    == Some(value)
                {
                    continue; // as it was: written as the user wrote it
                }
                let indent = indent_at(text, p.range.start).unwrap_or("");
                let rendered = if multiline {
                    render(value, indent)
                } else {
                    value.to_string()
                };
                splices.push((r.start, r.end, rendered));
            }
            None if multiline => {
                added.push_str(&format!(
                    ",\n{inner}{}: {}",
                    serde_json::Value::from(key.as_str()),
                    render(value, &inner)
                ));
            }
            None => added.push_str(&format!(", {}: {value}", serde_json::Value::from(key.as_str()))),
        }
    }
    if !added.is_empty() {
        match last {
            Some(p) => {
                let end = p.value.range().end;
                let next = skip_trivia(text, end);
                if text.as_bytes().get(next) == Some(&b',') {
                    // A trailing comma after the last member: the added ones go after it.
                    let tail = added.trim_start_matches(',').to_owned();
                    splices.push((next + 1, next + 1, format!("{tail},")));
                } else {
                    splices.push((end, end, added));
                }
            }
            None => {
                let at = entry.range.start + 1;
                splices.push((at, at, added.trim_start_matches(',').to_owned() + " "));
            }
        }
    }
    splices.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_owned();
    for (start, end, with) in splices {
        out.replace_range(start..end, &with);
    }
    Ok(out)
}

/// Removes the `agents` entry named `name` and its comma; its line goes
/// when it held nothing else. Comments elsewhere stay byte for byte.
pub fn remove_agent(text: &str, name: &str) -> Result<String, String> {
    keeping_crlf(text, |text| remove_agent_lf(text, name))
}

fn remove_agent_lf(text: &str, name: &str) -> Result<String, String> {
    let obj = parse_object(text)?;
    let Some((index, _)) = agents_array(&obj)?.and_then(|a| agent_range(a, name)) else {
        return Err(crate::i18n::gettext_f(
            "there is no agent named {name}",
            &[("name", name)],
        ));
    };
    remove_at(text, "agents", index)
}

/// Removes item `index` of the top-level list `key`, as [`remove_agent`] does.
pub fn remove_at(text: &str, key: &str, index: usize) -> Result<String, String> {
    keeping_crlf(text, |text| remove_at_lf(text, key, index))
}

fn remove_at_lf(text: &str, key: &str, index: usize) -> Result<String, String> {
    let obj = parse_object(text)?;
    let agents = top_level_array(&obj, key)?;
    let Some(range) = agents.and_then(|a| a.elements.get(index)).map(|v| v.range()) else {
        return Err(crate::i18n::gettext_f(
            "{key} has no item {index}",
            &[("key", key), ("index", &index.to_string())],
        ));
    };
    let b = text.as_bytes();
    let line_start = |pos: usize| text[..pos].rfind('\n').map_or(0, |n| n + 1);
    let mut start = range.start;
    if indent_at(text, start).is_some() {
        start = line_start(start);
    }
    let mut end = range.end;
    let next = skip_trivia(text, end);
    // The comma that goes with the entry: its own, or else (the last entry)
    // the one before it. Taken with the entry when only blanks part them.
    let mut comma = None;
    if b.get(next) == Some(&b',') {
        if text[end..next].trim().is_empty() {
            end = next + 1;
        } else {
            comma = Some(next);
        }
    } else if index > 0 {
        if let Some(prev) = agents.and_then(|a| a.elements.get(index - 1)) {
            let prev_end = prev.range().end;
            let between = &text[prev_end..range.start];
            if !between.contains("//") && !between.contains("/*") {
                // `…prev,\n  {this}`: all from the end of the one before
                // goes, which undoes an append exactly.
                return Ok(format!("{}{}", &text[..prev_end], &text[range.end..]));
            }
            let at = skip_trivia(text, prev_end);
            if b.get(at) == Some(&b',') && at < start {
                comma = Some(at);
            }
        }
    }
    // The rest of the line, if only blanks: the line goes whole.
    let line_end = text[end..].find('\n').map_or(text.len(), |n| end + n);
    if start == line_start(range.start) && text[end..line_end].trim().is_empty() {
        end = (line_end + 1).min(text.len());
    }
    let mut out = String::with_capacity(text.len());
    for (i, ch) in text.char_indices() {
        if (start..end).contains(&i) || Some(i) == comma {
            continue;
        }
        out.push(ch);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replaces_in_place_and_keeps_comments() {
        let text = "// mine\n{\n  \"theme\": \"light\", // keep\n  \"agents\": []\n}\n";
        let out = set_top_level(text, "theme", &json!("dark")).expect("edit");
        assert_eq!(
            out,
            "// mine\n{\n  \"theme\": \"dark\", // keep\n  \"agents\": []\n}\n"
        );
    }

    #[test]
    fn adds_a_missing_key() {
        let out = set_top_level("{\"agents\": []}", "language", &json!("de_DE")).expect("edit");
        assert!(crate::core::config::validate::validate(&out).valid(), "{out}");
        assert!(out.contains("\"language\": \"de_DE\","));
        let out = set_top_level("{}", "theme", &json!("dark")).expect("edit");
        assert_eq!(out, "{\n  \"theme\": \"dark\"}");
    }

    const COMMENTED: &str = r#"/* Mine. Keep every byte. */
{
  // theme first
  "theme": "dark" ,   /* odd spacing */
  "agents": [
      {
        "name": "a", // the first
        "command": "x"
      } /* between */ ,
      // a comment line in the list
      {"name": "b", "command": "y"}   // last, no trailing comma
  ],
  "channels": [], // trailing
}
"#;

    fn pairs(p: &[(&str, serde_json::Value)]) -> Entry {
        p.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn names(text: &str) -> Vec<String> {
        let v = crate::core::config::validate::validate(text);
        assert!(v.valid(), "{text}\n{:?}", v.problems);
        v.config
            .expect("config")
            .agents
            .into_iter()
            .map(|a| a.name)
            .collect()
    }

    #[test]
    fn an_appended_agent_keeps_every_other_byte_and_goes_back_out() {
        let entry = pairs(&[
            ("name", json!("new")),
            ("command", json!("z")),
            ("args", json!(["acp"])),
        ]);
        for text in [COMMENTED, crate::core::config::store::DEFAULT_TEXT] {
            let out = append_agent(text, &entry).expect("append");
            let mut want = names(text);
            want.push("new".into());
            assert_eq!(names(&out), want, "{out}");
            // Only an insertion: the original is the output minus one run of bytes.
            let prefix = text.bytes().zip(out.bytes()).take_while(|(a, b)| a == b).count();
            let suffix = text.len() - prefix;
            assert_eq!(&out[out.len() - suffix..], &text[prefix..], "{out}");
            assert_eq!(remove_agent(&out, "new").expect("remove"), text, "{out}");
        }
        // The default file's trailing-comma style: the new entry gets a comma too.
        let out = append_agent(crate::core::config::store::DEFAULT_TEXT, &entry).expect("append");
        assert!(out.contains("    },\n    {\n      \"name\": \"new\",\n      \"command\": \"z\",\n      \"args\": [\n        \"acp\"\n      ]\n    },\n    // Remove"), "{out}");
    }

    #[test]
    fn appending_to_an_empty_or_missing_list() {
        let entry = pairs(&[("name", json!("new")), ("command", json!("z"))]);
        let out = append_agent("{\n  \"agents\": [] // none\n}\n", &entry).expect("append");
        assert_eq!(out, "{\n  \"agents\": [\n    {\n      \"name\": \"new\",\n      \"command\": \"z\"\n    }\n  ] // none\n}\n");
        let out = append_agent("{\"theme\": \"dark\"}", &entry).expect("append");
        assert_eq!(names(&out), ["new"]);
        assert!(append_agent("{\"agents\": 3}", &entry).is_err());
        assert!(append_agent("{\"agents\": [", &entry).is_err());
    }

    #[test]
    fn removing_and_changing_one_entry() {
        let out = remove_agent(COMMENTED, "a").expect("remove");
        assert_eq!(names(&out), ["b"]);
        assert!(out.starts_with("/* Mine. Keep every byte. */\n{\n  // theme first\n  \"theme\": \"dark\" ,   /* odd spacing */\n  \"agents\": [\n /* between */ \n      // a comment line in the list\n      {\"name\": \"b\""), "{out}");
        let out = remove_agent(COMMENTED, "b").expect("remove");
        assert_eq!(names(&out), ["a"]);
        assert!(
            out.contains("// a comment line in the list\n   // last, no trailing comma\n  ],"),
            "{out}"
        );
        assert!(
            out.contains("/* Mine. Keep every byte. */") && out.contains("\"channels\": [], // trailing")
        );
        assert!(remove_agent(COMMENTED, "nobody").is_err());

        let mut b = agent_entry(COMMENTED, "b").expect("entry b");
        assert_eq!(b, pairs(&[("name", json!("b")), ("command", json!("y"))]));
        b[1].1 = json!("w");
        let out = set_agent_members(COMMENTED, "b", &b).expect("set");
        assert_eq!(names(&out), ["a", "b"]);
        assert_eq!(
            out,
            COMMENTED.replace(
                "{\"name\": \"b\", \"command\": \"y\"}",
                "{\"name\": \"b\", \"command\": \"w\"}"
            )
        );
    }

    #[test]
    fn members_are_set_in_place_and_added_in_style() {
        let text = "{\"agents\": [\n  {\n    \"name\": \"g\", // my work account\n    \"command\": \"old\", /* path */\n    \"cwd\": \"~/src\"\n  },\n  {\"name\": \"one\", \"command\": \"x\"}\n]}\n";
        let out = set_agent_members(
            text,
            "g",
            &pairs(&[("command", json!("new")), ("env", json!({"A": "1"}))]),
        )
        .expect("set");
        assert_eq!(
            out,
            "{\"agents\": [\n  {\n    \"name\": \"g\", // my work account\n    \"command\": \"new\", /* path */\n    \"cwd\": \"~/src\",\n    \"env\": {\n      \"A\": \"1\"\n    }\n  },\n  {\"name\": \"one\", \"command\": \"x\"}\n]}\n"
        );
        let out = set_agent_members(
            text,
            "one",
            &pairs(&[("command", json!("y")), ("args", json!(["a"]))]),
        )
        .expect("set");
        assert!(
            out.ends_with("  {\"name\": \"one\", \"command\": \"y\", \"args\": [\"a\"]}\n]}\n"),
            "{out}"
        );
        // A trailing comma after the last member.
        let out = set_agent_members(
            "{\"agents\": [{\n  \"name\": \"t\",\n  \"command\": \"c\",\n}]}",
            "t",
            &pairs(&[("env", json!({}))]),
        )
        .expect("set");
        assert_eq!(
            out,
            "{\"agents\": [{\n  \"name\": \"t\",\n  \"command\": \"c\",\n  \"env\": {},\n}]}"
        );
        assert!(set_agent_members(text, "nobody", &pairs(&[])).is_err());
    }

    #[test]
    fn a_crlf_file_stays_crlf() {
        let text =
            "// mine\r\n{\r\n  \"agents\": [\r\n    {\"name\": \"a\", \"command\": \"x\"}\r\n  ]\r\n}\r\n";
        let entry = pairs(&[("name", json!("b")), ("command", json!("y"))]);
        let out = append_agent(text, &entry).expect("append");
        assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");
        assert_eq!(names(&out), ["a", "b"]);
        assert_eq!(remove_agent(&out, "b").expect("remove"), text);
    }
}
