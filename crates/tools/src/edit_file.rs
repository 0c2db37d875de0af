//! `edit_file`: replace one exact piece of a file, atomically.

use crate::params::{require_path, verdict};
use crate::workspace::Workspace;
use crate::write_file::{replace_atomically, run_to_end, write_risk};
use async_trait::async_trait;
use core_models::{
    RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext, ToolResult,
    ToolValidationResult,
};
use serde_json::{json, Value};
use std::path::Path;

/// Replaces exactly one occurrence of a search text in an existing file. A search text
/// that is absent, or found more than once, is an error that says so (the model must give
/// more context), and the file is left as it was. The new content is written as
/// `write_file` writes: a temporary file renamed over the old one.
#[derive(Debug)]
pub struct EditFile {
    definition: ToolDefinition,
}

impl Default for EditFile {
    fn default() -> Self {
        EditFile {
            definition: ToolDefinition::new(
                "edit_file",
                "Edit File",
                "Replace one exact piece of text in a file. The search text must occur exactly once; include enough surrounding lines to make it unique.",
            )
            .with_category(ToolCategory::FileSystem)
            .with_risk(RiskLevel::Medium)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace"},
                    "search": {"type": "string", "description": "The exact text to replace (must occur once)"},
                    "replace": {"type": "string", "description": "The text to put in its place"}
                },
                "required": ["path", "search", "replace"]
            }))
            .requiring_workspace()
            .modifying_files(),
        }
    }
}

#[async_trait]
impl Tool for EditFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, params: &Value) -> ToolValidationResult {
        let mut errors = Vec::new();
        require_path(params, &mut errors);
        match params.get("search").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => {}
            _ => errors.push("search is required (a non-empty string)".to_string()),
        }
        if !params.get("replace").is_some_and(Value::is_string) {
            errors.push("replace is required (a string)".to_string());
        }
        verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let path = params.get("path").and_then(Value::as_str).unwrap_or("?");
        let lines = |key: &str| {
            params
                .get(key)
                .and_then(Value::as_str)
                .map_or(0, |s| s.lines().count().max(1))
        };
        format!(
            "Edit {path}: replace {} line(s) with {}",
            lines("search"),
            lines("replace")
        )
    }

    fn effective_risk_level(&self, params: &Value) -> RiskLevel {
        write_risk(params.get("path").and_then(Value::as_str).unwrap_or(""))
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        run_to_end(context, edit).await
    }
}

fn edit(root: &Path, params: &Value, token: &core_models::CancellationToken) -> ToolResult {
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
    let (path, search, replace) = (text("path"), text("search"), text("replace"));
    if search.is_empty() {
        return ToolResult::failed("search is empty");
    }
    let target = match Workspace::new(root).and_then(|w| w.resolve_existing(path)) {
        Ok(t) => t,
        Err(e) => return ToolResult::failed(e.to_string()),
    };
    if target.is_dir() {
        return ToolResult::failed(format!("'{path}' is a folder"));
    }
    let original = match std::fs::read_to_string(&target) {
        Ok(s) => s,
        Err(e) => return ToolResult::failed(format!("cannot read '{path}' as text: {e}")),
    };
    let found: Vec<usize> = original.match_indices(search).map(|(i, _)| i).collect();
    let at = match found.as_slice() {
        [] => return ToolResult::failed(absent(path)),
        [one] => *one,
        many => {
            let lines: Vec<String> = many
                .iter()
                .map(|i| (original[..*i].matches('\n').count() + 1).to_string())
                .collect();
            return ToolResult::failed(format!(
                "the search text occurs {} times in '{path}' (lines {}); include more surrounding text so it occurs once",
                many.len(),
                lines.join(", ")
            ));
        }
    };
    let mut updated = String::with_capacity(original.len() + replace.len());
    updated.push_str(&original[..at]);
    updated.push_str(replace);
    updated.push_str(&original[at + search.len()..]);
    if let Err(message) = replace_atomically(&target, path, updated.as_bytes(), token) {
        return ToolResult::failed(message);
    }
    let line = original[..at].matches('\n').count() + 1;
    ToolResult::success_with_data(
        format!("Edited {path} at line {line}"),
        json!({"path": path, "line": line, "bytes": updated.len()}),
    )
}

fn absent(path: &str) -> String {
    format!("the search text does not occur in '{path}'; read the file and copy the text exactly")
}
