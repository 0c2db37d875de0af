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
