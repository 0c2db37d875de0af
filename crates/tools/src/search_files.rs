//! `search_files`: a regular expression across the workspace, with ripgrep's crates.

use crate::fs_tools::{blocking, walker, workspace_of};
use crate::params::{positive, verdict};
use crate::workspace::Workspace;
use async_trait::async_trait;
use core_models::{
    CancellationToken, RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext,
    ToolResult, ToolValidationResult,
};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{sinks::UTF8, BinaryDetection, SearcherBuilder};
use serde_json::{json, Value};

/// Most matching lines returned when the call does not say.
pub const SEARCH_DEFAULT_RESULTS: u64 = 100;
/// Most matching lines a call may ask for.
pub const SEARCH_MAX_RESULTS: u64 = 1_000;
/// Longest matching line shown whole; longer ones are cut.
const LINE_CAP: usize = 300;

/// Searches file contents with a regular expression, honouring `.gitignore` and skipping
/// binary files.
#[derive(Debug)]
pub struct SearchFiles {
    definition: ToolDefinition,
}

impl Default for SearchFiles {
    fn default() -> Self {
        SearchFiles {
            definition: ToolDefinition::new(
                "search_files",
                "Search Files",
                "Search the workspace's files for a regular expression and return the matching lines as path:line: text. Files ignored by .gitignore and binary files are skipped.",
            )
            .with_category(ToolCategory::Search)
            .with_risk(RiskLevel::Safe)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)"},
                    "path": {"type": "string", "description": "Folder or file relative to the workspace (default \".\")"},
                    "glob": {"type": "string", "description": "Only files whose name matches this glob, e.g. *.rs"},
                    "case_insensitive": {"type": "boolean"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_RESULTS}
                },
                "required": ["pattern"]
            }))
            .requiring_workspace(),
        }
    }
}

#[async_trait]
impl Tool for SearchFiles {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, params: &Value) -> ToolValidationResult {
        let mut errors = Vec::new();
        match params.get("pattern").and_then(Value::as_str) {
            Some(p) if !p.is_empty() => {
                if let Err(e) = RegexMatcherBuilder::new().build(p) {
                    errors.push(format!("pattern is not a valid regular expression: {e}"));
                }
            }
            _ => errors.push("pattern is required (a non-empty string)".to_string()),
        }
        for key in ["path", "glob"] {
            if params
                .get(key)
                .is_some_and(|v| !v.is_string() && !v.is_null())
            {
                errors.push(format!("{key} must be a string"));
            }
        }
        if let Some(glob) = params.get("glob").and_then(Value::as_str) {
            if let Err(e) = globset::Glob::new(glob) {
                errors.push(format!("glob is not valid: {e}"));
            }
        }
        if params
            .get("case_insensitive")
            .is_some_and(|v| !v.is_boolean() && !v.is_null())
        {
            errors.push("case_insensitive must be true or false".to_string());
        }
        if let Some(n) = positive(params, "max_results", &mut errors) {
            if n > SEARCH_MAX_RESULTS {
                errors.push(format!("max_results must be at most {SEARCH_MAX_RESULTS}"));
            }
        }
        verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let pattern = params.get("pattern").and_then(Value::as_str).unwrap_or("?");
        let path = params.get("path").and_then(Value::as_str).unwrap_or(".");
        match params.get("glob").and_then(Value::as_str) {
            Some(glob) => format!("Search {path} ({glob}) for /{pattern}/"),
            None => format!("Search {path} for /{pattern}/"),
        }
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let workspace = match workspace_of(&context) {
            Ok(w) => w,
            Err(e) => return ToolResult::failed(e),
        };
        let params = context.parameters.clone();
        let token = context.cancellation.clone();
        blocking(&context, move || search(&workspace, &params, &token)).await
    }
}

fn search(workspace: &Workspace, params: &Value, token: &CancellationToken) -> ToolResult {
    let pattern = params
        .get("pattern")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let path = params.get("path").and_then(Value::as_str).unwrap_or(".");
    let limit = params
        .get("max_results")
        .and_then(Value::as_u64)
        .unwrap_or(SEARCH_DEFAULT_RESULTS)
        .clamp(1, SEARCH_MAX_RESULTS);
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(params.get("case_insensitive") == Some(&Value::Bool(true)))
        .build(pattern)
    {
        Ok(m) => m,
        Err(e) => return ToolResult::failed(format!("invalid pattern: {e}")),
    };
    let glob = match params.get("glob").and_then(Value::as_str) {
        Some(g) => match globset::Glob::new(g) {
            Ok(g) => Some(g.compile_matcher()),
            Err(e) => return ToolResult::failed(format!("invalid glob: {e}")),
        },
        None => None,
    };
    let root = match workspace.resolve_existing(path) {
        Ok(r) => r,
        Err(e) => return ToolResult::failed(e.to_string()),
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut lines: Vec<String> = Vec::new();
    let mut files_with_matches = 0usize;
    let mut truncated = false;
    for entry in walker(&root).build() {
        if token.is_cancelled() {
            return ToolResult::failed("Cancelled");
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Some(glob) = &glob {
            if !glob.is_match(entry.file_name()) {
                continue;
            }
        }
        let rel = workspace.relative(entry.path());
        let before = lines.len();
        let result = searcher.search_path(
            &matcher,
            entry.path(),
            UTF8(|number, line| {
                if lines.len() >= limit {
                    truncated = true;
                    return Ok(false);
                }
                let line = line.trim_end_matches(['\n', '\r']);
                let shown = match line.char_indices().nth(LINE_CAP) {
                    Some((cut, _)) => format!("{}…", &line[..cut]),
                    None => line.to_string(),
                };
                lines.push(format!("{rel}:{number}: {shown}"));
                Ok(true)
            }),
        );
        if let Err(e) = result {
            tracing::debug!(file = %rel, error = %e, "search_files skipped a file");
        }
        if lines.len() > before {
            files_with_matches += 1;
        }
        if truncated {
            break;
        }
    }
    let mut text = if lines.is_empty() {
        format!("no match for /{pattern}/ in {path}")
    } else {
        lines.join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n(only the first {limit} matching lines are shown)"
        ));
    }
    ToolResult::success_with_data(
        text,
        json!({"pattern": pattern, "matches": lines.len(), "files": files_with_matches, "truncated": truncated}),
    )
}
