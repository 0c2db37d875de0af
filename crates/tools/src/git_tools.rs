//! `git_status` and `git_diff`: read-only views of the workspace's git repository.

use crate::fs_tools::workspace_of;
use crate::git::output;
use crate::workspace::Workspace;
use async_trait::async_trait;
use core_models::{
    RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext, ToolResult,
    ToolValidationResult,
};
use serde_json::{json, Value};

/// Largest diff returned; a longer one is cut with a note.
pub const GIT_DIFF_CAP: usize = 64 * 1024;

/// Run `git ARGS` in `workspace`, stopping at the call's cancellation; its stdout, or a
/// failed result in words.
async fn git(
    workspace: &Workspace,
    context: &ToolExecutionContext,
    args: &[&str],
) -> Result<String, ToolResult> {
    let run = output("git", args, workspace.root());
    let out = tokio::select! {
        out = run => out.map_err(|e| ToolResult::failed(e.to_string()))?,
        () = context.cancellation.cancelled() => return Err(ToolResult::failed("Cancelled")),
    };
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(ToolResult::failed(
        if stderr.contains("not a git repository") {
            "the workspace is not a git repository".to_string()
        } else {
            format!("git {} failed: {}", args.join(" "), stderr.trim())
        },
    ))
}

fn definition(id: &str, name: &str, description: &str, schema: Value) -> ToolDefinition {
    ToolDefinition::new(id, name, description)
        .with_category(ToolCategory::VersionControl)
        .with_risk(RiskLevel::Safe)
        .with_schema(schema)
        .requiring_workspace()
}

/// Shows the branch and the changed, staged and untracked files.
#[derive(Debug)]
pub struct GitStatus {
    definition: ToolDefinition,
}

impl Default for GitStatus {
    fn default() -> Self {
        GitStatus {
            definition: definition(
                "git_status",
                "Git Status",
                "Show the current branch and which files are modified, staged or untracked.",
                json!({"type": "object", "properties": {}}),
            ),
        }
    }
}

#[async_trait]
impl Tool for GitStatus {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, _params: &Value) -> ToolValidationResult {
        ToolValidationResult::valid()
    }

    fn execution_summary(&self, _params: &Value) -> String {
        "Show git status".to_string()
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let workspace = match workspace_of(&context) {
            Ok(w) => w,
            Err(e) => return ToolResult::failed(e),
        };
        let args = ["status", "--short", "--branch", "--no-renames"];
        match git(&workspace, &context, &args).await {
            Ok(text) => {
                let changed = text.lines().filter(|l| !l.starts_with("##")).count();
                ToolResult::success_with_data(
                    if changed == 0 {
                        format!("{}nothing changed", text)
                    } else {
                        text
                    },
                    json!({"changed_files": changed}),
                )
            }
            Err(failed) => failed,
        }
    }
}

/// Shows unstaged (or staged) changes as a unified diff.
#[derive(Debug)]
pub struct GitDiff {
    definition: ToolDefinition,
}

impl Default for GitDiff {
    fn default() -> Self {
        GitDiff {
            definition: definition(
                "git_diff",
                "Git Diff",
                "Show the changes not yet staged as a unified diff, or the staged ones with staged=true. Optionally only for one path.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File or folder relative to the workspace"},
                        "staged": {"type": "boolean", "description": "Show staged changes instead"}
                    }
                }),
            ),
        }
    }
}

#[async_trait]
impl Tool for GitDiff {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, params: &Value) -> ToolValidationResult {
        let mut errors = Vec::new();
        if params
            .get("path")
            .is_some_and(|v| !v.is_string() && !v.is_null())
        {
            errors.push("path must be a string".to_string());
        }
        if params
            .get("staged")
            .is_some_and(|v| !v.is_boolean() && !v.is_null())
        {
            errors.push("staged must be true or false".to_string());
        }
        crate::params::verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let staged = params.get("staged") == Some(&Value::Bool(true));
        let what = if staged { "staged changes" } else { "changes" };
        match params.get("path").and_then(Value::as_str) {
            Some(path) => format!("Show git {what} in {path}"),
            None => format!("Show git {what}"),
        }
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let mut args = vec!["diff", "--no-color", "--no-ext-diff"];
        if context.parameters.get("staged") == Some(&Value::Bool(true)) {
            args.push("--staged");
        }
        let workspace = match workspace_of(&context) {
            Ok(w) => w,
            Err(e) => return ToolResult::failed(e),
        };
        let relative;
        if let Some(path) = context.parameters.get("path").and_then(Value::as_str) {
            // Confined like every other path: resolved inside the workspace first.
            relative = match workspace.resolve_existing(path) {
                Ok(p) => workspace.relative(&p),
                Err(e) => return ToolResult::failed(e.to_string()),
            };
            args.extend(["--", relative.as_str()]);
        }
        match git(&workspace, &context, &args).await {
            Ok(text) if text.is_empty() => {
                ToolResult::success_with_data("no changes", json!({"bytes": 0, "truncated": false}))
            }
            Ok(mut text) => {
                let bytes = text.len();
                let truncated = bytes > GIT_DIFF_CAP;
                if truncated {
                    let mut cut = GIT_DIFF_CAP;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                    text.push_str(&format!(
                        "\n(the diff has {bytes} bytes; only the first {GIT_DIFF_CAP} are shown — pass a path to see less)"
                    ));
                }
                ToolResult::success_with_data(text, json!({"bytes": bytes, "truncated": truncated}))
            }
            Err(failed) => failed,
        }
    }
}
