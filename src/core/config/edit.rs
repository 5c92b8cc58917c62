//! Small edits to the configuration text that keep everything else (comments,
//! order, formatting) as the user wrote it.

use jsonc_parser::ast;

/// Sets a top-level key to `value`: its value is replaced in place, or the
/// key is added as the object's first member.
pub fn set_top_level(text: &str, key: &str, value: &serde_json::Value) -> Result<String, String> {
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
}
