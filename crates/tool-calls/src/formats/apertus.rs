//! Apertus: `<|tools_prefix|>[{"NAME": {…arguments…}}, …]<|tools_suffix|>`, a JSON list of
//! one-key objects that map a tool's name to its arguments.

use super::Found;
use crate::calls::{calls_from_value, Shape, ToolCatalog};
use crate::json;
use serde_json::{Map, Value};

/// The calls between `<|tools_prefix|>` and `<|tools_suffix|>` (or the end of the output).
pub(crate) fn calls(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let text = body.trim();
    if text.is_empty() {
        return Err("nothing follows <|tools_prefix|>".into());
    }
    let value = json::parse(text).map_err(|e| format!("malformed JSON: {e}"))?;
    let items = match value {
        Value::Array(items) if !items.is_empty() => items,
        Value::Array(_) => return Err("the tool-call list is empty".into()),
        object @ Value::Object(_) => vec![object],
        _ => return Err("the tool calls are not a JSON list of objects".into()),
    };
    let mut found = Found::default();
    for item in items {
        let Value::Object(object) = item else {
            return Err("a tool-call list holds something that is not an object".into());
        };
        let raw = serde_json::to_string(&object).unwrap_or_default();
        match name_as_key(object) {
            Ok((name, args)) => found.calls.push(catalog.request(&name, args, &raw)),
            // Not `{"NAME": {…}}`: perhaps the common `{"name": …, "arguments": …}`.
            Err(object) => found.calls.extend(
                calls_from_value(Value::Object(object), Shape::Marked, &raw, catalog)?
                    .ok_or("not a tool call")?,
            ),
        }
    }
    Ok(found)
}

/// `{"NAME": ARGS}` taken apart, ARGS an object (or a string holding one).
fn name_as_key(object: Map<String, Value>) -> Result<(String, Value), Map<String, Value>> {
    let string_object = |s: &str| match json::parse(s) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    };
    let fits = object.len() == 1
        && object.iter().all(|(name, args)| {
            let name = name.trim();
            !name.is_empty()
                && !name.contains(char::is_whitespace)
                && match args {
                    Value::Object(_) => true,
                    Value::String(s) => string_object(s).is_some(),
                    _ => false,
                }
        });
    if !fits {
        return Err(object);
    }
    let Some((name, args)) = object.into_iter().next() else {
        return Err(Map::new());
    };
    let args = match args {
        Value::String(s) => string_object(&s).unwrap_or_default(),
        other => other,
    };
    Ok((name.trim().to_string(), args))
}
