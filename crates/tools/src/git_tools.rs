//! `git_status` and `git_diff`: read-only views of the workspace's git repository.
//!
//! Only the workspace's: when it is a folder of a larger repository both show its files
//! only, named relative to it; when its repository is outside it (a `.git` file or link
//! leading out, a linked work tree, a submodule…) they say it is not a git repository
//! (see [`crate::git_config`]).

use crate::fs_tools::{confined, workspace_of};
use crate::git::{git as run_git, repository};
use crate::git_config::NOT_A_REPOSITORY;
use crate::lines::whole_chars;
use crate::params::assess_path;
use crate::program::{git_sandbox, Limits, Overflow};
use crate::workspace::Workspace;
use async_trait::async_trait;
use core_models::{
    CallAssessment, RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext,
    ToolResult, ToolValidationResult,
};
use sandbox::Launcher;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// Largest diff returned; a longer one is cut with a note. Git's output is read only up
/// to it: git is ended then, so a diff of any size costs no more.
pub const GIT_DIFF_CAP: usize = 64 * 1024;
/// Largest status returned, likewise.
const GIT_STATUS_CAP: usize = 64 * 1024;

/// What a git tool got: the kept start of git's output, and whether there was more.
struct Shown {
    text: String,
    cut: bool,
}

/// Run `git ARGS` in `workspace` (hardened: see `git_config`) on its repository, keeping
/// `cap` bytes of its output, stopping at the call's cancellation; its output, or a failed
/// result in words. When the workspace is a folder of a larger repository, `limit` is
/// added to `args` and the pathspec is `path` or `.` (the workspace); else it is `path`
/// when given.
async fn git(
    launcher: &Launcher,
    workspace: &Workspace,
    context: &ToolExecutionContext,
    call: Call<'_>,
    cap: usize,
) -> Result<Shown, ToolResult> {
    let limits = Limits {
        stdout: cap,
        overflow: Overflow::Stop,
    };
    let repo = tokio::select! {
        repo = repository(workspace.root()) => repo.map_err(ToolResult::failed)?,
        () = context.cancellation.cancelled() => return Err(ToolResult::failed("Cancelled")),
    };
    let mut args: Vec<&str> = call.args.to_vec();
    let pathspec = if repo.is_subfolder() {
        args.extend_from_slice(call.limit);
        Some(call.path.unwrap_or("."))
    } else {
        call.path
    };
    if let Some(path) = pathspec {
        args.extend(["--", path]);
    }
    let sandbox = git_sandbox(launcher, workspace.root());
    let run = run_git(&repo, &args, limits, &sandbox);
    let out = tokio::select! {
        out = run => out.map_err(|e| ToolResult::failed(e.to_string()))?,
        () = context.cancellation.cancelled() => return Err(ToolResult::failed("Cancelled")),
    };
    if out.status.success() || out.stdout_cut {
        let kept = if out.stdout_cut {
            &out.stdout[..whole_chars(&out.stdout)]
        } else {
            &out.stdout[..]
        };
        return Ok(Shown {
            text: String::from_utf8_lossy(kept).into_owned(),
            cut: out.stdout_cut,
        });
    }
    let stderr = out.stderr_text();
    Err(ToolResult::failed(
        if stderr.contains("not a git repository") {
            NOT_A_REPOSITORY.to_string()
        } else {
            format!("git {} failed: {stderr}", args.join(" "))
        },
    ))
}

/// A git command for [`git`].
struct Call<'a> {
    /// Its arguments.
    args: &'a [&'a str],
    /// The options that limit its output to the workspace in a larger repository.
    limit: &'a [&'a str],
    /// The path asked for, relative to the workspace.
    path: Option<&'a str>,
}

/// Whether the context's workspace is a git repository the git tools would use (a tool
/// that could only fail is not offered); without a workspace, offered (it says why it
/// cannot run).
fn in_a_repository(context: &core_models::ToolAvailabilityContext) -> bool {
    context
        .workspace_path
        .as_deref()
        .is_none_or(|dir| crate::git_config::Repository::of_workspace(dir).is_ok())
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
    launcher: Arc<Launcher>,
}

impl Default for GitStatus {
    fn default() -> Self {
        Self::new(Arc::new(Launcher::default()))
    }
}

impl GitStatus {
    /// `git_status`, its git started through `launcher` (read-only).
    pub fn new(launcher: Arc<Launcher>) -> Self {
        GitStatus {
            launcher,
            definition: definition(
                "git_status",
                "Git Status",
                "Show the current branch and which files are modified, staged or untracked.",
                json!({"type": "object", "properties": {}}),
            )
            .with_example(
                "Which files have I changed since the last commit?",
                json!({}),
            ),
        }
    }
}

#[async_trait]
impl Tool for GitStatus {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn is_available(&self, context: &core_models::ToolAvailabilityContext) -> bool {
        in_a_repository(context)
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
        let args = [
            "status",
            "--short",
            "--branch",
            "--no-renames",
            "--ignore-submodules=all",
        ];
        // In a folder of a larger repository: `-- .`, paths relative to the folder.
        let call = Call {
            args: &args,
            limit: &[],
            path: None,
        };
        match git(&self.launcher, &workspace, &context, call, GIT_STATUS_CAP).await {
            Ok(Shown { text, cut }) => {
                let changed = text.lines().filter(|l| !l.starts_with("##")).count();
                let text = if cut {
                    format!(
                        "{text}\n(the status is longer than {GIT_STATUS_CAP} bytes; only its start is shown)"
                    )
                } else if changed == 0 {
                    format!("{text}nothing changed")
                } else {
                    text
                };
                ToolResult::success_with_data(
                    text,
                    json!({"changed_files": changed, "truncated": cut}),
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
    launcher: Arc<Launcher>,
}

impl Default for GitDiff {
    fn default() -> Self {
        Self::new(Arc::new(Launcher::default()))
    }
}

impl GitDiff {
    /// `git_diff`, its git started through `launcher` (read-only).
    pub fn new(launcher: Arc<Launcher>) -> Self {
        GitDiff {
            launcher,
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
            )
            .with_example("Show me my uncommitted changes.", json!({})),
        }
    }
}

#[async_trait]
impl Tool for GitDiff {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn is_available(&self, context: &core_models::ToolAvailabilityContext) -> bool {
        in_a_repository(context)
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

    fn assess(&self, params: &Value, workspace: Option<&Path>) -> CallAssessment {
        assess_path(params, workspace, |_| self.effective_risk_level(params))
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let mut args = vec![
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=all",
        ];
        if context.parameters.get("staged") == Some(&Value::Bool(true)) {
            args.push("--staged");
        }
        // Its secret locations those of the launcher: a path into one is refused.
        let workspace = match confined(&context, &self.launcher).await {
            Ok(w) => w,
            Err(e) => return ToolResult::failed(e),
        };
        let mut relative = None;
        if let Some(path) = context.parameters.get("path").and_then(Value::as_str) {
            // Confined like every other path: resolved inside the workspace first.
            relative = match workspace.resolve_existing(path) {
                Ok(p) => Some(workspace.relative(&p)),
                Err(e) => return ToolResult::failed(e.to_string()),
            };
        }
        let path = relative.as_deref();
        // In a folder of a larger repository: only its changes, paths relative to it.
        let call = Call {
            args: &args,
            limit: &["--relative"],
            path,
        };
        match git(&self.launcher, &workspace, &context, call, GIT_DIFF_CAP).await {
            Ok(Shown { text, .. }) if text.is_empty() => {
                ToolResult::success_with_data("no changes", json!({"bytes": 0, "truncated": false}))
            }
            Ok(Shown { mut text, cut }) => {
                let bytes = text.len();
                if cut {
                    text.push_str(&format!(
                        "\n(the diff is longer than {GIT_DIFF_CAP} bytes; only the first {bytes} are shown — pass a path to see less)"
                    ));
                }
                ToolResult::success_with_data(text, json!({"bytes": bytes, "truncated": cut}))
            }
            Err(failed) => failed,
        }
    }
}
