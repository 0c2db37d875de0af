//! Call bodies between special tokens: DeepSeek R1/V3/V3.1, Kimi-K2, Command-R7B,
//! JSON lists (Nemotron, Granite, LFM2, Functionary v3.1), Llama 3.1's `<|python_tag|>`,
//! Functionary v3.2's `>>>NAME` sections and gpt-oss harmony headers.

use super::{first_of, pythonic, Found};
use crate::calls::{calls_from_value, Shape, ToolCatalog};
use crate::json;
use core_models::ToolCallRequest;
use serde_json::Value;

/// A JSON call object or list of them.
pub(crate) fn json_calls(
    text: &str,
    catalog: &ToolCatalog,
) -> Result<Vec<ToolCallRequest>, String> {
    let text = text.trim();
    let value = json::parse(text).map_err(|e| format!("malformed JSON: {e}"))?;
    calls_from_value(value, Shape::Marked, text, catalog)?.ok_or_else(|| "not a tool call".into())
}

/// JSON calls (one value, or several separated by `;` or whitespace).
pub(crate) fn json_list(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let mut found = Found::default();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                let raw = &rest[..stream.byte_offset()];
                found.calls.extend(
                    calls_from_value(value, Shape::Marked, raw.trim(), catalog)?
                        .ok_or("not a tool call")?,
                );
                rest = rest[stream.byte_offset()..].trim_start();
                rest = rest.strip_prefix(';').unwrap_or(rest).trim_start();
            }
            _ => {
                // One value, with raw control characters in strings: the repairing parse.
                if found.calls.is_empty() {
                    found.calls = json_calls(rest, catalog)?;
                    return Ok(found);
                }
                return Err("unexpected text after the JSON tool calls".into());
            }
        }
    }
    if found.calls.is_empty() {
        return Err("no tool call".into());
    }
    Ok(found)
}

/// A JSON list or a pythonic list (LFM2 writes either).
pub(crate) fn json_or_pythonic(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let t = body.trim();
    if t.starts_with('{') || t.starts_with("[{") || t.starts_with("[ {") || t.starts_with("[\n") {
        if let Ok(found) = json_list(t, catalog) {
            return Ok(found);
        }
    }
    if t.starts_with('{') {
        return json_list(t, catalog);
    }
    Ok(Found {
        calls: pythonic::calls(t, catalog)?,
        ..Found::default()
    })
}

/// `<|python_tag|>`: JSON calls, a built-in `NAME.call(…)`, or code for the `python` tool.
pub(crate) fn python_tag(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let t = body.trim();
    if t.is_empty() {
        return Err("nothing follows <|python_tag|>".into());
    }
    if t.starts_with('{') || t.starts_with('[') {
        return json_list(t, catalog);
    }
    if let Some(call) = pythonic::builtin_call(t, catalog) {
        return Ok(Found {
            calls: vec![call],
            ..Found::default()
        });
    }
    let call = catalog.request("python", serde_json::json!({ "code": t }), t);
    Ok(Found {
        calls: vec![call],
        ..Found::default()
    })
}

/// Pieces of `body` separated by `marker`, the first (before any marker) left out.
fn after_each<'a>(body: &'a str, markers: &[&str]) -> Vec<&'a str> {
    let mut pieces = Vec::new();
    let mut rest = body;
    let find = |s: &str| first_of(s, markers).map(|(i, m)| (i, m.len()));
    let Some((i, len)) = find(rest) else {
        return pieces;
    };
    rest = &rest[i + len..];
    loop {
        match find(rest) {
            Some((i, len)) => {
                pieces.push(&rest[..i]);
                rest = &rest[i + len..];
            }
            None => {
                pieces.push(rest);
                return pieces;
            }
        }
    }
}

/// Cut `piece` at the first of `ends`.
fn until<'a>(piece: &'a str, ends: &[&str]) -> &'a str {
    let end = first_of(piece, ends).map_or(piece.len(), |(i, _)| i);
    &piece[..end]
}

const DS_CALL_BEGIN: [&str; 3] = [
    "<｜tool▁call▁begin｜>",
    "<｜tool_call_begin｜>",
    "<｜tool call begin｜>",
];
const DS_CALL_END: [&str; 3] = [
    "<｜tool▁call▁end｜>",
    "<｜tool_call_end｜>",
    "<｜tool call end｜>",
];
const DS_SEP: [&str; 3] = ["<｜tool▁sep｜>", "<｜tool_sep｜>", "<｜tool sep｜>"];

/// DeepSeek: R1/V3 `function<｜tool▁sep｜>NAME\n```json\n{…}\n```` and V3.1
/// `NAME<｜tool▁sep｜>{…}`, each between call begin/end tokens. The first call's begin
/// token may be missing (`<｜tool▁calls｜>function<｜tool▁sep｜>…`).
pub(crate) fn deepseek(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let mut found = Found::default();
    let first = first_of(body, &DS_CALL_BEGIN).map_or(body.len(), |(i, _)| i);
    let head = until(&body[..first], &DS_CALL_END);
    if !head.trim().is_empty() {
        found.calls.push(deepseek_one(head, catalog)?);
    }
    for piece in after_each(body, &DS_CALL_BEGIN) {
        found
            .calls
            .push(deepseek_one(until(piece, &DS_CALL_END), catalog)?);
    }
    if found.calls.is_empty() {
        return Err("the DeepSeek tool-call section holds no call".into());
    }
    Ok(found)
}

/// One DeepSeek call after `<｜tool▁call▁begin｜>` without the section's begin token
/// before it (DeepSeek V3.1 often leaves it out).
pub(crate) fn deepseek_call(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    Ok(Found {
        calls: vec![deepseek_one(body, catalog)?],
        ..Found::default()
    })
}

/// The inside of one DeepSeek call, between its begin and end tokens.
fn deepseek_one(piece: &str, catalog: &ToolCatalog) -> Result<ToolCallRequest, String> {
    let Some((left, right)) = DS_SEP.iter().find_map(|s| piece.split_once(s)) else {
        return Err("a DeepSeek tool call has no <｜tool▁sep｜>".into());
    };
    let (name, args) = if right.contains("```") || left.trim() == "function" {
        // R1 / V3: the type on the left, then NAME, then a fenced JSON block.
        let right = right.trim_start();
        let (name, rest) = right.split_once('\n').unwrap_or((right, ""));
        let rest = rest.trim();
        let rest = rest
            .strip_prefix("```json")
            .or_else(|| rest.strip_prefix("```"))
            .unwrap_or(rest);
        let rest = rest.trim_end();
        let rest = rest.strip_suffix("```").unwrap_or(rest);
        (name.trim(), rest.trim())
    } else {
        (left.trim(), right.trim())
    };
    named_json_call(name, args, catalog)
}

/// A call of `name` with JSON-object arguments `args` (empty means none).
fn named_json_call(
    name: &str,
    args: &str,
    catalog: &ToolCatalog,
) -> Result<ToolCallRequest, String> {
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("{name:?} is not a tool name"));
    }
    let value = if args.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        json::parse(args).map_err(|e| format!("the arguments of {name} are not valid JSON: {e}"))?
    };
    let value = match value {
        Value::String(s) => json::parse(&s).unwrap_or(Value::String(s)),
        other => other,
    };
    if !value.is_object() {
        return Err(format!("the arguments of {name} are not a JSON object"));
    }
    Ok(catalog.request(name, value, args.trim()))
}

/// Kimi-K2: `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>`.
pub(crate) fn kimi(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let mut found = Found::default();
    for piece in after_each(body, &["<|tool_call_begin|>"]) {
        let piece = until(piece, &["<|tool_call_end|>"]);
        let (id, args) = piece
            .split_once("<|tool_call_argument_begin|>")
            .ok_or("a Kimi tool call has no <|tool_call_argument_begin|>")?;
        let id = id.trim();
        let id = id.strip_prefix("functions.").unwrap_or(id);
        let name = match id.rsplit_once(':') {
            Some((name, index)) if index.chars().all(|c| c.is_ascii_digit()) => name,
            _ => id,
        };
        found.calls.push(named_json_call(name, args, catalog)?);
    }
    if found.calls.is_empty() {
        return Err("the Kimi tool-call section holds no call".into());
    }
    Ok(found)
}

/// Functionary v3.1: `NAME>{…}` (after `<function=`, before `</function>`).
pub(crate) fn function_tag(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let (name, args) = body
        .split_once('>')
        .ok_or("unterminated <function=NAME> tag")?;
    if args.trim_start().starts_with("<parameter=") {
        return super::xml::qwen(&format!("<function={body}</function>"), catalog);
    }
    Ok(Found {
        calls: vec![named_json_call(name.trim(), args, catalog)?],
        ..Found::default()
    })
}

/// Hermes's alternative `<function name="NAME">{…}</function>` (after `<function name=`).
pub(crate) fn function_named(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let body = body.trim_start();
    let quote = body.chars().next().filter(|c| *c == '"' || *c == '\'');
    let Some(quote) = quote else {
        return Err("expected a quoted name in <function name=…>".into());
    };
    let rest = &body[1..];
    let (name, rest) = rest.split_once(quote).ok_or("unterminated function name")?;
    let args = rest
        .trim_start()
        .strip_prefix('>')
        .ok_or("unterminated <function> tag")?;
    Ok(Found {
        calls: vec![named_json_call(name.trim(), args, catalog)?],
        ..Found::default()
    })
}

/// Phi-4-mini / FireFunction v2: the rest of `functools[…]`.
pub(crate) fn functools(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    json_list(&format!("[{body}"), catalog)
}

/// Functionary v3.2: one `NAME\ncontent` section; `all` is text for the user.
pub(crate) fn functionary_section(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let (name, content) = match body.split_once('\n') {
        Some((n, c)) if !n.contains('{') => (n.trim(), c),
        _ => match body.find('{') {
            Some(i) => (body[..i].trim(), &body[i..]),
            None => (body.trim(), ""),
        },
    };
    if body.trim().is_empty() {
        // `>>>` right at the start of the output: nothing before it.
        return Ok(Found::default());
    }
    if name == "all" {
        return Ok(Found {
            text: content.to_string(),
            ..Found::default()
        });
    }
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(format!("{name:?} is not a tool name"));
    }
    if name == "python" && !content.trim_start().starts_with('{') {
        let code = content.trim();
        let call = catalog.request("python", serde_json::json!({ "code": code }), code);
        return Ok(Found {
            calls: vec![call],
            ..Found::default()
        });
    }
    Ok(Found {
        calls: vec![named_json_call(name, content, catalog)?],
        ..Found::default()
    })
}

/// What a harmony message header (`assistant<|channel|>commentary to=functions.f …`) opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Harmony {
    /// The analysis channel: reasoning.
    Thinking,
    /// The final channel, or commentary for the user: visible text.
    Text,
    /// A message to a tool: its arguments follow.
    Call(String),
}

/// Read a harmony header.
pub(crate) fn harmony_header(header: &str) -> Harmony {
    let recipient = header.find("to=").map(|i| {
        header[i + 3..]
            .split(|c: char| c.is_whitespace() || c == '<')
            .next()
            .unwrap_or("")
    });
    if let Some(to) = recipient.filter(|t| !t.is_empty()) {
        let name = to.strip_prefix("functions.").unwrap_or(to);
        return Harmony::Call(name.to_string());
    }
    let channel = header
        .split("<|channel|>")
        .nth(1)
        .and_then(|c| c.split(|ch: char| ch.is_whitespace() || ch == '<').next())
        .unwrap_or("");
    if channel == "analysis" {
        Harmony::Thinking
    } else {
        Harmony::Text
    }
}

/// The arguments of a harmony call to `name`.
pub(crate) fn harmony_call(name: &str, body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    Ok(Found {
        calls: vec![named_json_call(name, body, catalog)?],
        ..Found::default()
    })
}
