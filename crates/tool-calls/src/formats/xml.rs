//! XML-like call bodies: Qwen3-Coder and Seed-OSS (`<function=NAME><parameter=KEY>…`),
//! GLM-4.5/4.6/4.7 (`NAME<arg_key>K</arg_key><arg_value>V</arg_value>`) and MiniMax-M2
//! (`<invoke name="NAME"><parameter name="K">V</parameter></invoke>`), and DeepSeek V3.2's
//! DSML (the same invoke tags after `｜DSML｜`, with a `string` attribute). Values are typed
//! by the tool's schema (or DSML's attribute); surrounding whitespace is not part of a
//! value, except in a DSML `string="true"` value.

use super::{first_of, Found};
use crate::calls::ToolCatalog;
use crate::json;
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

/// The tag names of an `<invoke>` dialect: MiniMax-M2's plain XML, or DeepSeek V3.2's
/// DSML (the same tags after a `｜DSML｜` prefix, values typed by a `string` attribute).
struct Invoke {
    /// What comes between `<` (or `</`) and the tag name.
    ns: &'static str,
    /// Whose calls these are, for messages.
    who: &'static str,
}

/// MiniMax-M2: `<invoke name="NAME"><parameter name="K">V</parameter>…</invoke>`, repeated.
pub(crate) fn minimax(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    invokes(
        body,
        catalog,
        &Invoke {
            ns: "",
            who: "MiniMax",
        },
    )
}

/// DeepSeek V3.2 DSML: `<｜DSML｜invoke name="NAME">` holding
/// `<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>`, repeated.
/// `string="true"`: the value is the text as written; `string="false"`: JSON.
pub(crate) fn dsml(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    invokes(
        body,
        catalog,
        &Invoke {
            ns: "｜DSML｜",
            who: "DSML",
        },
    )
}

/// The value of one `<parameter …>` whose opening tag's inside is `tag`.
fn invoke_value(tag: &str, value: &str, ty: Option<&str>) -> Value {
    match attribute(tag, "string").map(str::trim) {
        Some(s) if s.eq_ignore_ascii_case("true") => Value::String(value.to_string()),
        Some(s) if s.eq_ignore_ascii_case("false") => match json::parse(value.trim()) {
            Ok(v) => v,
            Err(_) => typed_value(value, ty, Untyped::JsonOrText),
        },
        _ => typed_value(value, ty, Untyped::JsonOrText),
    }
}

fn invokes(body: &str, catalog: &ToolCatalog, d: &Invoke) -> Result<Found, String> {
    let open_invoke = format!("<{}invoke", d.ns);
    let close_invoke = format!("</{}invoke>", d.ns);
    let open_param = format!("<{}parameter", d.ns);
    let close_param = format!("</{}parameter>", d.ns);
    let who = d.who;
    let mut found = Found::default();
    let mut rest = body.trim();
    if !rest.starts_with(open_invoke.as_str()) {
        return Err(format!(
            "expected {open_invoke} name=\"…\"> in the {who} tool call"
        ));
    }
    while let Some(after) = rest.strip_prefix(open_invoke.as_str()) {
        let (tag, mut inner) = after
            .split_once('>')
            .ok_or_else(|| format!("unterminated {open_invoke}> tag"))?;
        let name = attribute(tag, "name")
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| format!("an {open_invoke}> names no tool"))?;
        let schema = catalog.schema(name);
        let mut params = Map::new();
        let start = body.len() - rest.len();
        loop {
            inner = inner.trim_start();
            if let Some(after) = inner.strip_prefix(close_invoke.as_str()) {
                inner = after;
                break;
            }
            if inner.is_empty() {
                found.warnings.push(format!(
                    "the call of {name} is not closed with {close_invoke}"
                ));
                break;
            }
            let Some(after) = inner.strip_prefix(open_param.as_str()) else {
                return Err(format!(
                    "unexpected text in the {who} call of {name}: expected {open_param} name=\"…\">"
                ));
            };
            let (tag, after) = after
                .split_once('>')
                .ok_or_else(|| format!("unterminated {open_param}> tag"))?;
            let key = attribute(tag, "name")
                .ok_or_else(|| format!("a parameter of {name} has no name"))?
                .trim()
                .to_string();
            let (value, after, missing) = value_until(
                after,
                &close_param,
                &[open_param.as_str(), close_invoke.as_str()],
            );
            if missing {
                found.warnings.push(format!(
                    "parameter {key} of {name} is not closed with {close_param}"
                ));
            }
            let ty = property_type(schema.as_ref(), &key);
            params.insert(key, invoke_value(tag, value, ty));
            inner = after;
        }
        let raw = &body[start..body.len() - inner.len()];
        found
            .calls
            .push(catalog.request(name, Value::Object(params), raw.trim()));
        rest = inner.trim_start();
    }
    if !rest.is_empty() {
        return Err(format!(
            "unexpected text after {close_invoke} in the {who} tool call"
        ));
    }
    Ok(found)
}
