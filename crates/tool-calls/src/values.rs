//! Parameter values of text-based call formats (XML-like and pythonic), typed by the
//! tool's JSON schema: `"5"` becomes `5` for an `integer` parameter, and so on.

use super::json;
use serde_json::Value;

/// The declared type of property `key` in a JSON schema: the first non-null type of a
/// `type` list or of `anyOf`/`oneOf` alternatives, with Python-style aliases (`int`,
/// `float`, `bool`, `dict`, `list`, `str`) mapped to JSON-schema names.
pub(crate) fn property_type(schema: Option<&Value>, key: &str) -> Option<&'static str> {
    let property = schema?.get("properties")?.get(key)?;
    declared_type(property)
}

fn declared_type(property: &Value) -> Option<&'static str> {
    let from_type = match property.get("type") {
        Some(Value::String(t)) => normalize(t),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .filter_map(normalize)
            .find(|t| *t != "null"),
        _ => None,
    };
    from_type.or_else(|| {
        ["anyOf", "oneOf"].iter().find_map(|k| {
            property
                .get(*k)?
                .as_array()?
                .iter()
                .filter_map(declared_type)
                .find(|t| *t != "null")
        })
    })
}

fn normalize(name: &str) -> Option<&'static str> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "string" | "str" | "text" => "string",
        "integer" | "int" | "long" => "integer",
        "number" | "float" | "double" | "decimal" => "number",
        "boolean" | "bool" => "boolean",
        "object" | "dict" | "map" => "object",
        "array" | "list" | "tuple" => "array",
        "null" | "none" => "null",
        _ => return None,
    })
}

/// How an untyped value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Untyped {
    /// It stays a string (Qwen3-Coder, Seed-OSS: the template writes strings raw).
    Text,
    /// JSON when it parses as JSON, else a string (GLM, MiniMax: the template writes
    /// non-string values with `tojson`).
    JsonOrText,
}

/// `text` as a value of JSON-schema type `ty`; untyped values per `untyped`; a string
/// when it cannot be converted. Surrounding whitespace is not part of the value.
pub(crate) fn typed_value(text: &str, ty: Option<&str>, untyped: Untyped) -> Value {
    let trimmed = text.trim();
    let converted = match ty {
        Some("string") => return Value::String(trimmed.to_string()),
        Some("integer") => trimmed
            .parse::<i64>()
            .ok()
            .map(Value::from)
            .or_else(|| number(trimmed)),
        Some("number") => number(trimmed),
        Some("boolean") => match trimmed.to_ascii_lowercase().as_str() {
            "true" | "1" => Some(Value::Bool(true)),
            "false" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        Some("null") => matches!(trimmed, "null" | "None").then_some(Value::Null),
        Some("array") | Some("object") => json::parse(trimmed)
            .ok()
            .or_else(|| super::formats::pythonic::literal(trimmed)),
        _ if untyped == Untyped::JsonOrText => json::parse(trimmed).ok(),
        _ => None,
    };
    converted.unwrap_or_else(|| Value::String(trimmed.to_string()))
}

/// A JSON number: integers stay integers.
fn number(text: &str) -> Option<Value> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::from(i));
    }
    text.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(text: &str, ty: &str, untyped: Untyped, expected: Value) {
        let schema = json!({"properties": {"p": {"type": ty}}});
        let t = property_type(Some(&schema), "p");
        assert_eq!(typed_value(text, t, untyped), expected, "{text:?} as {ty}");
    }

    #[test]
    fn values_follow_the_schema_and_its_aliases() {
        check(" 5 ", "integer", Untyped::Text, json!(5));
        check("5", "int", Untyped::Text, json!(5));
        check("2.5", "float", Untyped::Text, json!(2.5));
        check("7", "number", Untyped::Text, json!(7));
        check("True", "bool", Untyped::Text, json!(true));
        check("{\"a\": 1}", "dict", Untyped::Text, json!({"a": 1}));
        check("[1, 2]", "list", Untyped::Text, json!([1, 2]));
        check("['a', None]", "array", Untyped::Text, json!(["a", null]));
        check("\n  Dallas\n  ", "string", Untyped::Text, json!("Dallas"));
        check("12", "string", Untyped::JsonOrText, json!("12"));
        check("abc", "integer", Untyped::Text, json!("abc"));
        check("12", "weird", Untyped::JsonOrText, json!(12));
        check("12", "weird", Untyped::Text, json!("12"));
        let schema =
            json!({"properties": {"p": {"anyOf": [{"type": "null"}, {"type": "integer"}]}}});
        assert_eq!(property_type(Some(&schema), "p"), Some("integer"));
    }
}
