//! `write_file`: create or replace a file, atomically.

use crate::atomic::{replace_atomically, write_all, Replaced};
use crate::editor::{asking, text, EditorFiles};
use crate::offload::on_workspace;
use crate::params::{assess_path, require_path, verdict};
use crate::workspace::Workspace;
use async_trait::async_trait;
use core_models::{
    CallAssessment, FileChange, RiskLevel, Tool, ToolCategory, ToolDefinition,
    ToolExecutionContext, ToolResult, ToolValidationResult,
};
use sandbox::Launcher;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// Paths whose change is riskier than ordinary source files.
const SENSITIVE: [&str; 6] = [
    ".git/",
    ".github/",
    ".env",
    ".ssh/",
    "Cargo.lock",
    ".gitignore",
];

/// Writes a whole file. The new content goes to a temporary file in the same folder,
/// which is flushed and then renamed over the old file: a failed or cancelled write never
/// leaves half a file. Missing folders are created, only beneath the workspace. A
/// replaced file keeps its mode (and, for root, its owner); a file the user could not
/// write is refused; a new file gets 0666 less the umask. FIFOs, sockets and devices are
/// refused, and so are secret locations (those of its launcher's sandbox settings), also
/// ones that do not exist yet.
#[derive(Debug)]
pub struct WriteFile {
    definition: ToolDefinition,
    launcher: Arc<Launcher>,
    editor: Option<Arc<dyn crate::EditorFiles>>,
}

impl Default for WriteFile {
    fn default() -> Self {
        Self::new(Arc::new(Launcher::default()))
    }
}

impl WriteFile {
    /// `write_file`, keeping from the model the secret locations `launcher`'s settings
    /// keep from commands.
    pub fn new(launcher: Arc<Launcher>) -> Self {
        WriteFile {
            launcher,
            editor: None,
            definition: ToolDefinition::new(
                "write_file",
                "Write File",
                "Create a file, or replace a file's whole content. Missing folders are created.",
            )
            .with_example("Put the text see you soon in memo.txt", json!({"path": "memo.txt", "content": "see you soon"}))
            .with_example("Make a new file plan.md saying start on Monday", json!({"path": "plan.md", "content": "start on Monday"}))
            .with_category(ToolCategory::FileSystem)
            .with_risk(RiskLevel::Medium)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace"},
                    "content": {"type": "string", "description": "The complete new content"}
                },
                "required": ["path", "content"]
            }))
            .requiring_workspace()
            .modifying_files(),
        }
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, params: &Value) -> ToolValidationResult {
        let mut errors = Vec::new();
        require_path(params, &mut errors);
        if !params.get("content").is_some_and(Value::is_string) {
            errors.push("content is required (a string)".to_string());
        }
        verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let path = params.get("path").and_then(Value::as_str).unwrap_or("?");
        let bytes = params
            .get("content")
            .and_then(Value::as_str)
            .map_or(0, str::len);
        format!("Write {bytes} bytes to {path}")
    }

    fn effective_risk_level(&self, params: &Value) -> RiskLevel {
        write_risk(params.get("path").and_then(Value::as_str).unwrap_or(""))
    }

    fn assess(&self, params: &Value, workspace: Option<&Path>) -> CallAssessment {
        assess_path(params, workspace, write_risk)
    }

    fn file_seen(&self, params: &Value) -> Option<String> {
        crate::params::path_of(params)
    }

    /// A file that exists and holds something: replacing it whole unseen loses what the
    /// model never read.
    fn file_to_see_first(&self, params: &Value, workspace: Option<&Path>) -> Option<String> {
        crate::params::nonempty_file(params, workspace, &self.launcher)
    }

    fn preview_change(&self, params: &Value, workspace: Option<&Path>) -> Option<FileChange> {
        let path = params.get("path")?.as_str()?;
        let content = params.get("content")?.as_str()?;
        crate::preview::file_change(workspace, &self.launcher, path, |_| {
            Some(content.to_string())
        })
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        if let Some(editor) = self.editor.as_ref().filter(|e| e.writes()) {
            return write_through(editor.as_ref(), &context, &self.launcher).await;
        }
        run_to_end(context, &self.launcher, write).await
    }
}

impl WriteFile {
    /// Change files through `editor` when it writes them (an ACP client: the change lands
    /// in the editor's buffer), after the path is checked here as always.
    #[must_use]
    pub fn through(mut self, editor: Arc<dyn crate::EditorFiles>) -> Self {
        self.editor = Some(editor);
        self
    }
}

fn write(
    workspace: &Workspace,
    params: &Value,
    token: &core_models::CancellationToken,
) -> ToolResult {
    let path = params
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let content = params
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let target = match workspace.new_target(path, true) {
        Ok(t) => t,
        Err(e) => return ToolResult::failed(e.to_string()),
    };
    let done = match replace_atomically(
        &target,
        path,
        |file| write_all(file, &[content.as_bytes()]),
        token,
    ) {
        Ok(done) => done,
        Err(message) => return ToolResult::failed(message),
    };
    let created = done == Replaced::Created;
    let verb = if created { "Created" } else { "Replaced" };
    ToolResult::success_with_data(
        format!("{verb} {path} ({} bytes)", content.len()),
        json!({"path": path, "bytes": content.len(), "created": created}),
    )
}

/// Run a blocking file change on the call's workspace — its secret locations those of
/// `launcher` — off the async runtime and wait for it to end, even when cancelled: the
/// change itself checks the token before its rename, so a reported cancellation always
/// means the file was left as it was.
pub(crate) async fn run_to_end(
    context: ToolExecutionContext,
    launcher: &Arc<Launcher>,
    change: fn(&Workspace, &Value, &core_models::CancellationToken) -> ToolResult,
) -> ToolResult {
    let Some(root) = context.workspace_path.clone() else {
        return ToolResult::failed("no workspace is open");
    };
    let params = context.parameters;
    let token = context.cancellation;
    let launcher = Arc::clone(launcher);
    tokio::task::spawn_blocking(move || match Workspace::with_launcher(&root, &launcher) {
        Ok(workspace) => change(&workspace, &params, &token),
        Err(e) => ToolResult::failed(e.to_string()),
    })
    .await
    .unwrap_or_else(|e| ToolResult::failed(format!("the tool stopped unexpectedly: {e}")))
}

/// Whether changing `path` deserves more care than an ordinary source file.
pub(crate) fn write_risk(path: &str) -> RiskLevel {
    let normalized = path.trim().trim_start_matches("./");
    if SENSITIVE
        .iter()
        .any(|s| normalized.starts_with(s) || normalized.contains(&format!("/{s}")))
    {
        RiskLevel::High
    } else {
        RiskLevel::Medium
    }
}

/// `write_file` through `editor`.
#[allow(clippy::result_large_err)] // the failure is the call's result, made once
pub(crate) async fn write_through(
    editor: &dyn EditorFiles,
    context: &ToolExecutionContext,
    launcher: &Arc<Launcher>,
) -> ToolResult {
    let params = context.parameters.clone();
    let (path, content) = (text(&params, "path"), text(&params, "content"));
    let run = async {
        let owned = path.to_string();
        let (file, created) = on_workspace(context, launcher, move |w| {
            let file = w
                .resolve_new_creating(&owned)
                .map_err(|e| ToolResult::failed(e.to_string()))?;
            if file.is_dir() {
                return Err(ToolResult::failed(format!("'{owned}' is a folder")));
            }
            let created = std::fs::symlink_metadata(&file).is_err();
            Ok((file, created))
        })
        .await?;
        asking(
            context,
            editor.write_text(&file, content),
            &format!("write '{path}'"),
        )
        .await?;
        let verb = if created { "Created" } else { "Replaced" };
        Ok(ToolResult::success_with_data(
            format!("{verb} {path} ({} bytes)", content.len()),
            json!({"path": path, "bytes": content.len(), "created": created}),
        ))
    };
    run.await.unwrap_or_else(|failed| failed)
}
