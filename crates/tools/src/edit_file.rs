//! `edit_file`: replace one exact piece of a file, atomically.

use crate::atomic::{replace_atomically, write_all};
use crate::editor::{asking, existing_file, text, EditorFiles};
use crate::params::{assess_path, require_path, verdict};
use crate::text_file::read_text;
use crate::workspace::Workspace;
use crate::write_file::{run_to_end, write_risk};
use async_trait::async_trait;
use core_models::{
    CallAssessment, FileChange, RiskLevel, Tool, ToolCategory, ToolDefinition,
    ToolExecutionContext, ToolResult, ToolValidationResult,
};
use sandbox::Launcher;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// Most places of a repeated search text the error names.
const SHOWN_PLACES: usize = 20;

/// Replaces exactly one occurrence of a search text in an existing file. A search text
/// that is absent, or found more than once, is an error that says so (the model must give
/// more context), and the file is left as it was. The new content is written as
/// `write_file` writes: a temporary file renamed over the old one. Secret locations
/// (those of its launcher's sandbox settings) are refused.
#[derive(Debug)]
pub struct EditFile {
    definition: ToolDefinition,
    launcher: Arc<Launcher>,
    editor: Option<Arc<dyn crate::EditorFiles>>,
}

impl Default for EditFile {
    fn default() -> Self {
        Self::new(Arc::new(Launcher::default()))
    }
}

impl EditFile {
    /// `edit_file`, keeping from the model the secret locations `launcher`'s settings keep
    /// from commands.
    pub fn new(launcher: Arc<Launcher>) -> Self {
        EditFile {
            launcher,
            editor: None,
            definition: ToolDefinition::new(
                "edit_file",
                "Edit File",
                "Change part of an existing file: `search` is an exact piece of its current text, copied from the file (whole lines; it must occur exactly once), and `replace` is the new text that takes its place. To change one value on a line, give the whole line, as it is and as it becomes.",
            )
            .with_example("In list.txt, change cats to dogs.", json!({"path": "list.txt", "search": "cats", "replace": "dogs"}))
            .with_example("Replace red with blue in colors.txt", json!({"path": "colors.txt", "search": "red", "replace": "blue"}))
            .with_category(ToolCategory::FileSystem)
            .with_risk(RiskLevel::Medium)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace"},
                    "search": {"type": "string", "description": "The exact current text to change, copied from the file (whole lines, occurring once)"},
                    "replace": {"type": "string", "description": "The new text that takes its place"}
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

    crate::choices::path_argument_choices!(Files);

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

    fn assess(&self, params: &Value, workspace: Option<&Path>) -> CallAssessment {
        assess_path(params, workspace, write_risk)
    }

    /// The search text must occur in the file exactly once, as the edit itself checks:
    /// an edit that cannot apply fails before anyone is asked to approve it. (Through an
    /// editor that writes the files, its buffer is the truth: the edit checks it then.)
    fn preflight(&self, params: &Value, workspace: Option<&Path>) -> Result<(), String> {
        let text = |key: &str| params.get(key).and_then(Value::as_str);
        let (Some(path), Some(search), Some(root)) = (text("path"), text("search"), workspace)
        else {
            return Ok(());
        };
        if self.editor.as_ref().is_some_and(|e| e.writes()) {
            return Ok(());
        }
        let Ok(workspace) = Workspace::with_launcher(root, &self.launcher) else {
            return Ok(());
        };
        let target = workspace.existing_target(path).map_err(|e| e.to_string())?;
        let original = read_text(&target, path)?;
        locate(&original, search, path)
            .map(|_| ())
            .map_err(|failed| failed.error_message.unwrap_or_default())
    }

    fn file_seen(&self, params: &Value) -> Option<String> {
        crate::params::path_of(params)
    }

    fn preview_change(&self, params: &Value, workspace: Option<&Path>) -> Option<FileChange> {
        let text = |key: &str| params.get(key).and_then(Value::as_str);
        let (path, search, replace) = (text("path")?, text("search")?, text("replace")?);
        crate::preview::file_change(workspace, &self.launcher, path, |before| {
            // As the edit itself: the search text must be there exactly once.
            let before = before?;
            let mut places = before.match_indices(search);
            let (at, _) = places.next()?;
            if search.is_empty() || places.next().is_some() {
                return None;
            }
            Some(format!(
                "{}{replace}{}",
                &before[..at],
                &before[at + search.len()..]
            ))
        })
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        if let Some(editor) = self.editor.as_ref().filter(|e| e.writes()) {
            return edit_through(editor.as_ref(), &context, &self.launcher).await;
        }
        run_to_end(context, &self.launcher, edit).await
    }
}

impl EditFile {
    /// Change files through `editor` when it writes them (an ACP client: the change lands
    /// in the editor's buffer), after the path is checked here as always.
    #[must_use]
    pub fn through(mut self, editor: Arc<dyn crate::EditorFiles>) -> Self {
        self.editor = Some(editor);
        self
    }
}

fn edit(
    workspace: &Workspace,
    params: &Value,
    token: &core_models::CancellationToken,
) -> ToolResult {
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
    let (path, search, replace) = (text("path"), text("search"), text("replace"));
    if search.is_empty() {
        return ToolResult::failed("search is empty");
    }
    let target = match workspace.existing_target(path) {
        Ok(t) => t,
        Err(e) => return ToolResult::failed(e.to_string()),
    };
    let original = match read_text(&target, path) {
        Ok(s) => s,
        Err(message) => return ToolResult::failed(message),
    };
    let at = match locate(&original, search, path) {
        Ok(at) => at,
        Err(failed) => return failed,
    };
    let (before, after) = (&original[..at], &original[at + search.len()..]);
    let written = replace_atomically(
        &target,
        path,
        |file| {
            write_all(
                file,
                &[before.as_bytes(), replace.as_bytes(), after.as_bytes()],
            )
        },
        token,
    );
    if let Err(message) = written {
        return ToolResult::failed(message);
    }
    let line = before.matches('\n').count() + 1;
    let bytes = before.len() + replace.len() + after.len();
    ToolResult::success_with_data(
        format!("Edited {path} at line {line}"),
        json!({"path": path, "line": line, "bytes": bytes}),
    )
}

/// Where `search` occurs in `original`, when it occurs exactly once; else the failure
/// that says how often (and on which lines) it does.
#[allow(clippy::result_large_err)] // the failure is the call's result, made once
pub(crate) fn locate(original: &str, search: &str, path: &str) -> Result<usize, ToolResult> {
    // Where it occurs: the first few places kept (for the message), all counted.
    let (mut count, mut found) = (0usize, Vec::new());
    for (i, _) in original.match_indices(search) {
        count += 1;
        if found.len() < SHOWN_PLACES {
            found.push(i);
        }
    }
    match (count, found.first()) {
        (1, Some(one)) => Ok(*one),
        (0, _) | (_, None) => Err(ToolResult::failed(absent(path))),
        (many, Some(_)) => {
            let mut lines: Vec<String> = found
                .iter()
                .map(|i| (original[..*i].matches('\n').count() + 1).to_string())
                .collect();
            if many > found.len() {
                lines.push("…".into());
            }
            Err(ToolResult::failed(format!(
                "the search text occurs {many} times in '{path}' (lines {}); include more surrounding text so it occurs once",
                lines.join(", ")
            )))
        }
    }
}

fn absent(path: &str) -> String {
    format!("the search text does not occur in '{path}'; read the file and copy the text exactly")
}

/// `edit_file` through `editor`.
#[allow(clippy::result_large_err)] // the failure is the call's result, made once
pub(crate) async fn edit_through(
    editor: &dyn EditorFiles,
    context: &ToolExecutionContext,
    launcher: &Arc<Launcher>,
) -> ToolResult {
    let params = context.parameters.clone();
    let (path, search, replace) = (
        text(&params, "path"),
        text(&params, "search"),
        text(&params, "replace"),
    );
    if search.is_empty() {
        return ToolResult::failed("search is empty");
    }
    let run = async {
        let file = existing_file(context, launcher, path).await?;
        let original = asking(context, editor.read_text(&file), &format!("read '{path}'")).await?;
        if original.len() > crate::EDIT_FILE_CAP as usize {
            return Err(ToolResult::failed(format!(
                "'{path}' is larger than the {} KiB edit_file handles",
                crate::EDIT_FILE_CAP / 1024
            )));
        }
        let at = locate(&original, search, path)?;
        let (before, after) = (&original[..at], &original[at + search.len()..]);
        let changed = format!("{before}{replace}{after}");
        asking(
            context,
            editor.write_text(&file, &changed),
            &format!("write '{path}'"),
        )
        .await?;
        let line = before.matches('\n').count() + 1;
        Ok(ToolResult::success_with_data(
            format!("Edited {path} at line {line}"),
            json!({"path": path, "line": line, "bytes": changed.len()}),
        ))
    };
    run.await.unwrap_or_else(|failed| failed)
}
