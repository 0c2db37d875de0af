//! Path arguments held to what exists: before each reply, tools that name an existing
//! file or folder say which there are ([`core_models::Tool::argument_choices`]), and the
//! definitions the model is given list them as the argument's `enum`, so the call
//! grammar admits no other name. Only the request's tools change; the system prompt (and
//! the KV cache behind it) stays as it was.

use core_models::{ArgumentChoices, Tool, ToolDefinition};
use std::path::PathBuf;
use std::sync::Arc;

/// The argument choices of each of `tools` that has some now; none when `limit` is 0 or
/// without a workspace.
pub(super) async fn gather(
    tools: &[Arc<dyn Tool>],
    workspace: Option<PathBuf>,
    limit: u32,
) -> Vec<(String, ArgumentChoices)> {
    let Some(workspace) = workspace.filter(|_| limit > 0) else {
        return Vec::new();
    };
    let tools: Vec<Arc<dyn Tool>> = tools.to_vec();
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    // The tools read the workspace: off the async runtime, and a panic is no choice.
    tokio::task::spawn_blocking(move || {
        tools
            .iter()
            .filter_map(|tool| {
                let asked = super::guard::guarded(|| {
                    let choices = tool.argument_choices(Some(&workspace), limit)?;
                    Some((tool.definition().id.clone(), choices))
                });
                asked
                    .map_err(|panic| {
                        tracing::error!(%panic, "a tool panicked listing its argument choices: its arguments are not held");
                    })
                    .ok()
                    .flatten()
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default()
}

/// Hold each argument of `definitions` that `found` has choices for to them.
pub(super) fn apply(definitions: &mut [ToolDefinition], found: &[(String, ArgumentChoices)]) {
    for (id, choices) in found {
        if let Some(definition) = definitions.iter_mut().find(|d| d.id == *id) {
            hold(&mut definition.input_schema, choices);
        }
    }
}

/// The runs of up to `max_words` words of `request` as written (quotes, brackets and
/// punctuation that enclose or end a run taken off its ends: `"hi there"`, `notes.txt.`,
/// but `print('hi')` and `eggs, milk` whole), in order, without repeats: what a small
/// model's arguments are held to under a constrained decision — it copies the user's
/// words well, and writes its own badly.
pub(super) fn request_spans(request: &str, max_words: usize) -> Vec<String> {
    let words: Vec<&str> = request.split_whitespace().collect();
    let mut spans: Vec<String> = Vec::new();
    for start in 0..words.len() {
        for end in start + 1..=words.len().min(start + max_words) {
            let span = words[start..end].join(" ");
            let span = trim_span(&span);
            // A run that starts or ends inside a quotation or brackets is none.
            let count = |c: char| span.chars().filter(|&x| x == c).count();
            let broken = count('"') % 2 == 1 || count('`') % 2 == 1 || count('(') != count(')');
            if !span.is_empty() && !broken && !spans.iter().any(|s| s == span) {
                spans.push(span.to_string());
            }
        }
    }
    spans
}

/// `span` without what encloses or ends it: a trailing `,` `;` `:` `?` `!` or `.`, and
/// a quote or bracket at an end whose partner is not inside (`"hi"` → `hi`, `(a` → `a`,
/// `f(x)` stays).
fn trim_span(span: &str) -> &str {
    let mut span = span.trim();
    loop {
        let before = span;
        span = span.trim_end_matches([',', ';', ':', '?', '!', '.']);
        for (open, close) in [
            ('"', '"'),
            ('\'', '\''),
            ('`', '`'),
            ('(', ')'),
            ('[', ']'),
            ('{', '}'),
        ] {
            let inner = |s: &str, c: char| s.chars().filter(|&x| x == c).count();
            if span.len() >= 2 && span.starts_with(open) && span.ends_with(close) {
                span = &span[1..span.len() - 1];
            } else if span.starts_with(open) && inner(&span[1..], close) == 0 {
                span = &span[1..];
            } else if span.ends_with(close) && inner(&span[..span.len() - 1], open) == 0 {
                span = &span[..span.len() - 1];
            }
        }
        span = span.trim();
        if span == before {
            return span;
        }
    }
}

/// Hold each required string argument of `definition` that has no choices yet to the
/// values `spans` gives for its name (none: left free).
pub(super) fn hold_to_spans(
    definition: &mut ToolDefinition,
    spans: impl Fn(&ToolDefinition, &str) -> Vec<String>,
) {
    let choices: ArgumentChoices = super::prompt::required_names(&definition.input_schema)
        .into_iter()
        .filter(|name| {
            definition
                .input_schema
                .pointer(&format!("/properties/{name}"))
                .is_some_and(|p| p.get("enum").is_none())
        })
        .map(|name| {
            let values = spans(definition, &name);
            (name, values)
        })
        .filter(|(_, values)| !values.is_empty())
        .collect();
    hold(&mut definition.input_schema, &choices);
}

/// Settle each argument of the routed tool `definition` that the request names one of
/// its `choices` for ("what is in the src folder" → `path: "src"`): held to that value
/// alone and required — an optional argument a compact schema left out comes back from
/// the tool's `full` definition. A name is matched as written, or by its last part when
/// that is unambiguous. What was settled, argument → value.
pub(super) fn settle_named(
    definition: &mut ToolDefinition,
    full: &ToolDefinition,
    choices: &ArgumentChoices,
    request: &str,
) -> serde_json::Map<String, serde_json::Value> {
    let mentions = super::route::mentioned(request);
    let mut settled = serde_json::Map::new();
    for (name, values) in choices {
        let named = |key: fn(&str) -> &str| -> Vec<&String> {
            values
                .iter()
                .filter(|v| *v != "." && mentions.contains(&key(v).to_lowercase()))
                .collect()
        };
        let mut found = named(|v| v);
        if found.is_empty() {
            found = named(|v| v.rsplit('/').next().unwrap_or(v));
        }
        let [value] = found.as_slice() else { continue };
        let pointer = format!("/properties/{name}");
        let Some(mut property) = definition
            .input_schema
            .pointer(&pointer)
            .or_else(|| full.input_schema.pointer(&pointer))
            .cloned()
        else {
            continue;
        };
        if property.get("type").and_then(|t| t.as_str()) != Some("string") {
            continue;
        }
        property["enum"] = serde_json::json!([value]);
        let schema = &mut definition.input_schema;
        if !schema
            .get("properties")
            .is_some_and(serde_json::Value::is_object)
        {
            schema["properties"] = serde_json::json!({});
        }
        schema["properties"][name] = property;
        if !super::prompt::required_names(schema).contains(name) {
            match schema.get_mut("required").and_then(|r| r.as_array_mut()) {
                Some(required) => required.push(name.clone().into()),
                None => schema["required"] = serde_json::json!([name]),
            }
        }
        settled.insert(name.clone(), serde_json::Value::String((*value).clone()));
    }
    settled
}

/// Narrow the held text arguments of `definition` by what `tool` knows once `settled`
/// is fixed ([`Tool::narrow_choices`]): each keeps the values the tool keeps among its
/// own, never one it did not have.
pub(super) async fn narrow(
    request: &str,
    definition: &mut ToolDefinition,
    tool: Arc<dyn Tool>,
    settled: serde_json::Map<String, serde_json::Value>,
    workspace: Option<PathBuf>,
    limit: usize,
) {
    let candidates: ArgumentChoices = definition
        .input_schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(name, _)| !settled.contains_key(*name))
        .filter_map(|(name, property)| {
            let values = property.get("enum")?.as_array()?;
            let values: Vec<String> = values
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect();
            Some((name.clone(), values))
        })
        .collect();
    if candidates.is_empty() || limit == 0 {
        return;
    }
    let asked = candidates.clone();
    let settled = serde_json::Value::Object(settled);
    let request = request.to_string();
    // The tool reads the workspace: off the async runtime, and a panic narrows nothing.
    let narrowed = tokio::task::spawn_blocking(move || {
        super::guard::guarded(|| {
            tool.narrow_choices(&request, &settled, &asked, workspace.as_deref(), limit)
        })
        .map_err(|panic| {
            tracing::error!(%panic, "a tool panicked narrowing its argument choices: nothing is narrowed");
        })
        .ok()
        .flatten()
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_default();
    let kept: ArgumentChoices = narrowed
        .into_iter()
        .filter_map(|(name, values)| {
            let had = candidates.get(&name)?;
            let values: Vec<String> = values.into_iter().filter(|v| had.contains(v)).collect();
            Some((name, values))
        })
        .collect();
    tracing::debug!(tool = %definition.id, ?candidates, ?kept, "argument choices narrowed");
    hold(&mut definition.input_schema, &kept);
}

/// Give each property of `schema` that `choices` names an `enum` of its values (only
/// string properties the schema has: no argument is added).
fn hold(schema: &mut serde_json::Value, choices: &ArgumentChoices) {
    let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    else {
        return;
    };
    for (name, values) in choices {
        let Some(property) = properties.get_mut(name).and_then(|p| p.as_object_mut()) else {
            continue;
        };
        if property.get("type").and_then(|t| t.as_str()) != Some("string") || values.is_empty() {
            continue;
        }
        property.insert(
            "enum".into(),
            serde_json::Value::Array(
                values
                    .iter()
                    .cloned()
                    .map(serde_json::Value::String)
                    .collect(),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spans_of_the_request() {
        assert_eq!(
            request_spans("Save \"hi there\" to a.txt.", 2),
            ["Save", "hi", "hi there", "there", "to", "to a.txt", "a.txt"]
        );
        assert_eq!(
            request_spans("create a.py with print('hi'), then stop.", 3)[..6],
            [
                "create",
                "create a.py",
                "create a.py with",
                "a.py",
                "a.py with",
                "a.py with print('hi')"
            ]
        );
        assert_eq!(
            request_spans("buy eggs, milk", 3),
            [
                "buy",
                "buy eggs",
                "buy eggs, milk",
                "eggs",
                "eggs, milk",
                "milk"
            ]
        );
        let mut definition = ToolDefinition::new("w", "W", "Write.").with_schema(json!({
            "type": "object",
            "properties": {"path": {"type": "string", "enum": ["x"]}, "content": {"type": "string"},
                           "mode": {"type": "string"}},
            "required": ["path", "content"]}));
        hold_to_spans(&mut definition, |_, _| vec!["hi".to_string()]);
        assert_eq!(
            definition.input_schema["properties"]["path"]["enum"],
            json!(["x"])
        );
        assert_eq!(
            definition.input_schema["properties"]["content"]["enum"],
            json!(["hi"])
        );
        assert!(
            definition.input_schema["properties"]["mode"]
                .get("enum")
                .is_none(),
            "optional"
        );
    }

    #[test]
    fn only_string_properties_the_schema_has_are_held() {
        let mut schema = json!({"type": "object", "properties": {
            "path": {"type": "string"}, "depth": {"type": "integer"}}});
        let choices: ArgumentChoices = [
            ("path".to_string(), vec!["a.txt".to_string()]),
            ("depth".to_string(), vec!["1".to_string()]),
            ("other".to_string(), vec!["x".to_string()]),
        ]
        .into();
        hold(&mut schema, &choices);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {
                "path": {"type": "string", "enum": ["a.txt"]}, "depth": {"type": "integer"}}})
        );
    }
}
