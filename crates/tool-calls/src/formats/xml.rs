//! XML-like call bodies: Qwen3-Coder and Seed-OSS (`<function=NAME><parameter=KEY>…`),
//! GLM-4.5/4.6/4.7 (`NAME<arg_key>K</arg_key><arg_value>V</arg_value>`) and MiniMax-M2
//! (`<invoke name="NAME"><parameter name="K">V</parameter></invoke>`). Values are typed
//! by the tool's schema; surrounding whitespace is not part of a value.

use super::{first_of, Found};
use crate::calls::ToolCatalog;
use crate::values::{property_type, typed_value, Untyped};
use serde_json::{Map, Value};

/// Where the value of an XML parameter ends: its closing tag, or (when the model forgot
/// it) the next parameter or the end of the function. Returns the value, the rest after
/// it, and whether the closing tag was missing.
fn value_until<'a>(s: &'a str, close: &str, stops: &[&str]) -> (&'a str, &'a str, bool) {
    let mut markers = vec![close];
    markers.extend_from_slice(stops);
    match first_of(s, &markers) {
        Some((at, m)) if m == close => (&s[..at], &s[at + close.len()..], false),
        Some((at, _)) => (&s[..at], &s[at..], true),
        None => (s, "", true),
    }
}

/// Qwen3-Coder / Seed-OSS: one or more `<function=NAME>…</function>`.
pub(crate) fn qwen(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let mut found = Found::default();
    let mut rest = body.trim();
    if !rest.starts_with("<function=") {
        return Err("expected <function=NAME> in the XML tool call".into());
    }
    while let Some(after) = rest.strip_prefix("<function=") {
        let (name, mut inner) = after
            .split_once('>')
            .ok_or("unterminated <function=NAME> tag")?;
        let name = name.trim();
        if name.is_empty() {
            return Err("the XML tool call names no function".into());
        }
        let schema = catalog.schema(name);
        let mut params = Map::new();
        loop {
            inner = inner.trim_start();
            if let Some(after) = inner.strip_prefix("</function>") {
                inner = after;
                break;
            }
            if inner.is_empty() {
                found.warnings.push(format!(
                    "the XML call of {name} is not closed with </function>"
                ));
                break;
            }
            let Some(after) = inner.strip_prefix("<parameter=") else {
                return Err(format!(
                    "unexpected text in the XML call of {name}: expected <parameter=KEY> or </function>"
                ));
            };
            let (key, after) = after
                .split_once('>')
                .ok_or("unterminated <parameter=KEY> tag")?;
            let key = key.trim().to_string();
            let (value, after, missing) =
                value_until(after, "</parameter>", &["<parameter=", "</function>"]);
            if missing {
                found.warnings.push(format!(
                    "parameter {key} of {name} is not closed with </parameter>; its value ends at the next tag"
                ));
            }
            let ty = property_type(schema.as_ref(), &key);
            params.insert(key, typed_value(value, ty, Untyped::Text));
            inner = after;
        }
        found
            .calls
            .push(catalog.request(name, Value::Object(params), body.trim()));
        rest = inner.trim_start();
    }
    if !rest.is_empty() {
        return Err("unexpected text after </function> in the XML tool call".into());
    }
    Ok(found)
}

/// GLM-4.5/4.6/4.7: `NAME` then `<arg_key>K</arg_key><arg_value>V</arg_value>` pairs.
pub(crate) fn glm(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let body = body.trim();
    let (name, mut rest) = match body.find("<arg_key>") {
        Some(i) => (body[..i].trim(), &body[i..]),
        None => (body, ""),
    };
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || "<>{}[]()\"'".contains(c)) {
        return Err("the GLM tool call does not start with a tool name".into());
    }
    let schema = catalog.schema(name);
    let mut found = Found::default();
    let mut params = Map::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let after = rest.strip_prefix("<arg_key>").ok_or_else(|| {
            format!("unexpected text in the GLM call of {name}: expected <arg_key>")
        })?;
        let (key, after) = after
            .split_once("</arg_key>")
            .ok_or_else(|| format!("an <arg_key> of {name} is not closed"))?;
        let key = key.trim().to_string();
        let after = after.trim_start();
        let after = after
            .strip_prefix("<arg_value>")
            .ok_or_else(|| format!("argument {key} of {name} has no <arg_value>"))?;
        let (value, after, missing) = value_until(after, "</arg_value>", &["<arg_key>"]);
        if missing {
            found.warnings.push(format!(
                "argument {key} of {name} is not closed with </arg_value>"
            ));
        }
        let ty = property_type(schema.as_ref(), &key);
        params.insert(key, typed_value(value, ty, Untyped::JsonOrText));
        rest = after;
    }
    found
        .calls
        .push(catalog.request(name, Value::Object(params), body));
    Ok(found)
}

/// The value of attribute `name="…"` at the start of a tag's inside.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let i = tag.find(&format!("{name}="))?;
    let rest = &tag[i + name.len() + 1..];
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &rest[1..];
    rest.find(quote).map(|end| &rest[..end])
}

/// MiniMax-M2: `<invoke name="NAME"><parameter name="K">V</parameter>…</invoke>`, repeated.
pub(crate) fn minimax(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let mut found = Found::default();
    let mut rest = body.trim();
    if !rest.starts_with("<invoke") {
        return Err("expected <invoke name=\"…\"> in the MiniMax tool call".into());
    }
    while let Some(after) = rest.strip_prefix("<invoke") {
        let (tag, mut inner) = after.split_once('>').ok_or("unterminated <invoke> tag")?;
        let name = attribute(tag, "name")
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or("an <invoke> names no tool")?;
        let schema = catalog.schema(name);
        let mut params = Map::new();
        let start = body.len() - rest.len();
        loop {
            inner = inner.trim_start();
            if let Some(after) = inner.strip_prefix("</invoke>") {
                inner = after;
                break;
            }
            if inner.is_empty() {
                found
                    .warnings
                    .push(format!("the call of {name} is not closed with </invoke>"));
                break;
            }
            let Some(after) = inner.strip_prefix("<parameter") else {
                return Err(format!(
                    "unexpected text in the MiniMax call of {name}: expected <parameter name=\"…\">"
                ));
            };
            let (tag, after) = after
                .split_once('>')
                .ok_or("unterminated <parameter> tag")?;
            let key = attribute(tag, "name")
                .ok_or_else(|| format!("a parameter of {name} has no name"))?
                .trim()
                .to_string();
            let (value, after, missing) =
                value_until(after, "</parameter>", &["<parameter", "</invoke>"]);
            if missing {
                found.warnings.push(format!(
                    "parameter {key} of {name} is not closed with </parameter>"
                ));
            }
            let ty = property_type(schema.as_ref(), &key);
            params.insert(key, typed_value(value, ty, Untyped::JsonOrText));
            inner = after;
        }
        let raw = &body[start..body.len() - inner.len()];
        found
            .calls
            .push(catalog.request(name, Value::Object(params), raw.trim()));
        rest = inner.trim_start();
    }
    if !rest.is_empty() {
        return Err("unexpected text after </invoke> in the MiniMax tool call".into());
    }
    Ok(found)
}
