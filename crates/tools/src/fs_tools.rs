//! `read_file` and `list_dir`: safe, read-only, confined to the workspace.

use crate::editor::{asking, existing_file, text, EditorFiles, EDITOR_TEXT_CAP};
use crate::lines::{CappedLines, LINE_CAP};
use crate::offload::blocking;
use crate::params::{assess_path, positive, require_path, verdict};
use crate::walk::{secrets_note, walker};
use crate::workspace::{Opened, Workspace};
use async_trait::async_trait;
use core_models::{
    CallAssessment, RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext,
    ToolResult, ToolValidationResult,
};
use sandbox::Launcher;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Largest file `read_file` returns whole, and the most text one call returns (a line
/// range may start past it). A line longer than 64 KiB is cut, with a note.
pub const READ_FILE_CAP: u64 = 256 * 1024;
/// Most entries `list_dir` lists.
pub const LIST_DIR_CAP: usize = 2_000;
/// Deepest `list_dir` recursion.
pub const LIST_DIR_MAX_DEPTH: u64 = 10;

/// The call's workspace, with the secret locations of the default sandbox settings (for
/// tools that read and write no file in this process: their commands are sandboxed).
pub(crate) fn workspace_of(context: &ToolExecutionContext) -> Result<Workspace, String> {
    let root = context
        .workspace_path
        .as_ref()
        .ok_or("no workspace is open")?;
    Workspace::new(root).map_err(|e| e.to_string())
}

/// The call's workspace with `launcher`'s secret locations, made off the async runtime
/// (finding them reads the folders on the way to each).
pub(crate) async fn confined(
    context: &ToolExecutionContext,
    launcher: &Arc<Launcher>,
) -> Result<Workspace, String> {
    let root = context
        .workspace_path
        .clone()
        .ok_or("no workspace is open")?;
    let launcher = Arc::clone(launcher);
    tokio::task::spawn_blocking(move || {
        Workspace::with_launcher(&root, &launcher).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("the tool stopped unexpectedly: {e}"))?
}

/// Reads a text file, whole or a range of lines. Secret locations (those of its
/// launcher's sandbox settings) are refused.
#[derive(Debug)]
pub struct ReadFile {
    definition: ToolDefinition,
    editor: Option<Arc<dyn crate::EditorFiles>>,
    launcher: Arc<Launcher>,
}

impl Default for ReadFile {
    fn default() -> Self {
        Self::new(Arc::new(Launcher::default()))
    }
}

impl ReadFile {
    /// `read_file`, keeping from the model the secret locations `launcher`'s settings
    /// keep from commands.
    pub fn new(launcher: Arc<Launcher>) -> Self {
        ReadFile {
            launcher,
            editor: None,
            definition: ToolDefinition::new(
                "read_file",
                "Read File",
                "Read a text file and return its content. Optionally only lines start_line..end_line (1-based, inclusive).",
            )
            .with_example("What does plan.md say?", json!({"path": "plan.md"}))
            .with_example("Show me what is written in report.txt", json!({"path": "report.txt"}))
            .with_category(ToolCategory::FileSystem)
            .with_risk(RiskLevel::Safe)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1}
                },
                "required": ["path"]
            }))
            .with_details(["start_line", "end_line"])
            .requiring_workspace(),
        }
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    crate::choices::path_argument_choices!(Files);

    fn file_seen(&self, params: &Value) -> Option<String> {
        crate::params::path_of(params)
    }

    fn validate(&self, params: &Value) -> ToolValidationResult {
        let mut errors = Vec::new();
        require_path(params, &mut errors);
        let start = positive(params, "start_line", &mut errors);
        let end = positive(params, "end_line", &mut errors);
        if let (Some(s), Some(e)) = (start, end) {
            if e < s {
                errors.push(format!("end_line ({e}) is before start_line ({s})"));
            }
        }
        verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let path = params.get("path").and_then(Value::as_str).unwrap_or("?");
        // As `read_lines` reads: without a start, from the first line to the end line.
        match (
            params.get("start_line").and_then(Value::as_u64),
            params.get("end_line").and_then(Value::as_u64),
        ) {
            (s, Some(e)) if s.unwrap_or(1) == e => format!("Read line {e} of {path}"),
            (s, Some(e)) => format!("Read lines {}-{e} of {path}", s.unwrap_or(1)),
            (Some(s), None) => format!("Read {path} from line {s}"),
            (None, None) => format!("Read {path}"),
        }
    }

    fn assess(&self, params: &Value, workspace: Option<&Path>) -> CallAssessment {
        assess_path(params, workspace, |_| self.effective_risk_level(params))
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        if let Some(editor) = self.editor.as_ref().filter(|e| e.reads()) {
            return read_through(editor.as_ref(), &context, &self.launcher).await;
        }
        let params = context.parameters.clone();
        blocking(&context, &self.launcher, move |workspace| {
            read(workspace, &params)
        })
        .await
    }
}

impl ReadFile {
    /// Read through `editor` when it reads files (an ACP client: unsaved buffers are
    /// seen), after the path is checked here as always.
    #[must_use]
    pub fn through(mut self, editor: Arc<dyn crate::EditorFiles>) -> Self {
        self.editor = Some(editor);
        self
    }
}

fn read(workspace: &Workspace, params: &Value) -> ToolResult {
    let path = params
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let file = match workspace.open_existing(path) {
        Ok(Opened::File(f)) => f,
        Ok(Opened::Folder) => {
            return ToolResult::failed(format!("'{path}' is a folder; use list_dir"))
        }
        Err(e) => return ToolResult::failed(e.to_string()),
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    read_lines(std::io::BufReader::new(file), size, path, params)
}

/// The result of `read_file` over `reader`, `size` bytes long: the whole text or the
/// range of lines `params` asks for, with the caps.
pub(crate) fn read_lines<R: std::io::BufRead>(
    reader: R,
    size: u64,
    path: &str,
    params: &Value,
) -> ToolResult {
    let start = params.get("start_line").and_then(Value::as_u64);
    let end = params.get("end_line").and_then(Value::as_u64);
    let lines = CappedLines::new(reader, LINE_CAP);
    if start.is_none() && end.is_none() {
        if size > READ_FILE_CAP {
            return ToolResult::failed(format!(
                "'{path}' is {size} bytes, more than the {} KiB cap; read a range of lines with start_line and end_line",
                READ_FILE_CAP / 1024
            ));
        }
        return read_whole(lines, path, size);
    }
    read_range(lines, path, start.unwrap_or(1), end.unwrap_or(u64::MAX))
}

/// The note that ends a line cut at the cap.
fn cut_note(number: u64, len: u64) -> String {
    format!("… (line {number} cut: {len} bytes)")
}

/// A whole (small) file, exactly as it is but for lines longer than the line cap.
fn read_whole<R: std::io::BufRead>(mut lines: CappedLines<R>, path: &str, size: u64) -> ToolResult {
    let mut out = String::new();
    let mut count = 0u64;
    let mut cut = Vec::new();
    loop {
        let line = match lines.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => return ToolResult::failed(format!("cannot read '{path}': {e}")),
        };
        if line.nul {
            return ToolResult::failed(format!("'{path}' is a binary file"));
        }
        if out.len() as u64 + line.kept.len() as u64 > READ_FILE_CAP {
            // The file grew past the cap while it was read.
            out.push_str(&format!(
                "(only the first {count} lines are shown: the {} KiB cap)\n",
                READ_FILE_CAP / 1024
            ));
            break;
        }
        count = line.number;
        out.push_str(&line.text(false));
        if line.is_cut() {
            out.push_str(&cut_note(line.number, line.len));
            cut.push(line.number);
        }
        if line.terminated {
            out.push('\n');
        }
    }
    ToolResult::success_with_data(
        out,
        json!({"path": path, "bytes": size, "lines": count, "cut_lines": cut}),
    )
}

/// Lines `first..=last` of a file, each cut at the line cap, all within the read cap.
fn read_range<R: std::io::BufRead>(
    mut lines: CappedLines<R>,
    path: &str,
    first: u64,
    last: u64,
) -> ToolResult {
    let mut out = String::new();
    let mut total = 0u64;
    let mut shown_last = 0u64;
    let mut full = false;
    let mut cut = Vec::new();
    loop {
        let line = match lines.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => return ToolResult::failed(format!("cannot read '{path}': {e}")),
        };
        total = line.number;
        if total < first || total > last || full {
            continue;
        }
        if line.nul {
            return ToolResult::failed(format!("'{path}' is a binary file"));
        }
        let mut text = line.text(true);
        if line.is_cut() {
            text.push_str(&cut_note(line.number, line.len));
            cut.push(line.number);
        }
        if shown_last >= first && (out.len() + text.len() + 1) as u64 > READ_FILE_CAP {
            full = true;
            continue;
        }
        out.push_str(&text);
        out.push('\n');
        shown_last = total;
    }
    if first > total {
        return ToolResult::failed(format!(
            "'{path}' has only {total} lines; start_line {first} is past its end"
        ));
    }
    if full {
        out.push_str(&format!(
            "(only lines {first}-{shown_last} are shown: the {} KiB cap; read on from line {})\n",
            READ_FILE_CAP / 1024,
            shown_last + 1
        ));
    }
    ToolResult::success_with_data(
        out,
        json!({"path": path, "start_line": first, "end_line": shown_last, "total_lines": total, "cut_lines": cut, "truncated": full}),
    )
}

/// Lists a folder, recursively to a depth, honouring `.gitignore`. Secret locations
/// (those of its launcher's sandbox settings) are refused, and left out of the listing.
#[derive(Debug)]
pub struct ListDir {
    definition: ToolDefinition,
    launcher: Arc<Launcher>,
}

impl Default for ListDir {
    fn default() -> Self {
        Self::new(Arc::new(Launcher::default()))
    }
}

impl ListDir {
    /// `list_dir`, keeping from the model the secret locations `launcher`'s settings keep
    /// from commands.
    pub fn new(launcher: Arc<Launcher>) -> Self {
        ListDir {
            launcher,
            definition: ToolDefinition::new(
                "list_dir",
                "List Directory",
                "List the files and folders in a folder. The default folder is the workspace itself and the default depth 1; files ignored by .gitignore are left out.",
            )
            .with_example("Which files are in this folder?", json!({}))
            .with_example("Are there any images here?", json!({}))
            .with_example("Show all the files.", json!({}))
            .with_category(ToolCategory::FileSystem)
            .with_risk(RiskLevel::Safe)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Folder relative to the workspace (default \".\")"},
                    "depth": {"type": "integer", "minimum": 1, "maximum": LIST_DIR_MAX_DEPTH}
                }
            }))
            .with_details(["depth"])
            .requiring_workspace(),
        }
    }
}

#[async_trait]
impl Tool for ListDir {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    crate::choices::path_argument_choices!(Folders);

    fn validate(&self, params: &Value) -> ToolValidationResult {
        let mut errors = Vec::new();
        if let Some(p) = params.get("path") {
            if !p.is_string() && !p.is_null() {
                errors.push("path must be a string".to_string());
            }
        }
        if let Some(d) = positive(params, "depth", &mut errors) {
            if d > LIST_DIR_MAX_DEPTH {
                errors.push(format!("depth must be at most {LIST_DIR_MAX_DEPTH}"));
            }
        }
        verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let path = params.get("path").and_then(Value::as_str).unwrap_or(".");
        match params.get("depth").and_then(Value::as_u64) {
            Some(d) if d > 1 => format!("List {path} (depth {d})"),
            _ => format!("List {path}"),
        }
    }

    fn assess(&self, params: &Value, workspace: Option<&Path>) -> CallAssessment {
        assess_path(params, workspace, |_| self.effective_risk_level(params))
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let params = context.parameters.clone();
        blocking(&context, &self.launcher, move |workspace| {
            list(workspace, &params)
        })
        .await
    }
}

fn list(workspace: &Workspace, params: &Value) -> ToolResult {
    let path = params.get("path").and_then(Value::as_str).unwrap_or(".");
    let depth = params
        .get("depth")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .clamp(1, LIST_DIR_MAX_DEPTH);
    let dir = match workspace.resolve_existing(path) {
        Ok(d) => d,
        Err(e) => return ToolResult::failed(e.to_string()),
    };
    if !dir.is_dir() {
        return ToolResult::failed(format!("'{path}' is a file; use read_file"));
    }
    let secrets = Arc::new(AtomicUsize::new(0));
    let walker = walker(workspace, &dir, &secrets)
        .max_depth(usize::try_from(depth).ok())
        .build();
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(error = %e, "list_dir skipped an entry");
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= LIST_DIR_CAP {
            truncated = true;
            break;
        }
        let rel = workspace.relative(entry.path());
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            entries.push(format!("{rel}/"));
        } else {
            entries.push(rel);
        }
    }
    let mut text = entries.join("\n");
    if entries.is_empty() {
        text = format!("'{path}' is empty");
    }
    if truncated {
        text.push_str(&format!(
            "\n(only the first {LIST_DIR_CAP} entries are shown)"
        ));
    }
    let secrets = secrets.load(Ordering::Relaxed);
    text.push_str(&secrets_note(secrets));
    ToolResult::success_with_data(
        text,
        json!({"path": path, "entries": entries.len(), "truncated": truncated, "secret_locations_left_out": secrets}),
    )
}

/// `read_file` through `editor`.
#[allow(clippy::result_large_err)] // the failure is the call's result, made once
pub(crate) async fn read_through(
    editor: &dyn EditorFiles,
    context: &ToolExecutionContext,
    launcher: &Arc<Launcher>,
) -> ToolResult {
    let params = context.parameters.clone();
    let path = text(&params, "path");
    let run = async {
        let file = existing_file(context, launcher, path).await?;
        let body = asking(context, editor.read_text(&file), &format!("read '{path}'")).await?;
        if body.len() > EDITOR_TEXT_CAP {
            return Err(ToolResult::failed(format!(
                "'{path}' is larger than {} MiB",
                EDITOR_TEXT_CAP / (1024 * 1024)
            )));
        }
        let size = body.len() as u64;
        Ok(read_lines(
            std::io::Cursor::new(body.into_bytes()),
            size,
            path,
            &params,
        ))
    };
    run.await.unwrap_or_else(|failed| failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `read_file` gives for `params` over a file of four lines.
    fn read_four(params: &Value) -> (String, Value) {
        let text = "one\ntwo\nthree\nfour\n";
        let r = read_lines(
            std::io::Cursor::new(text.as_bytes()),
            text.len() as u64,
            "notes.txt",
            params,
        );
        assert!(r.success, "{:?}", r.error_message);
        (r.content, r.data.unwrap_or_default())
    }

    #[test]
    fn the_description_names_the_lines_the_call_reads() {
        let tool = ReadFile::default();
        for (params, summary, content) in [
            (
                json!({"path": "notes.txt"}),
                "Read notes.txt",
                "one\ntwo\nthree\nfour\n",
            ),
            (
                json!({"path": "notes.txt", "start_line": 1, "end_line": 1}),
                "Read line 1 of notes.txt",
                "one\n",
            ),
            (
                json!({"path": "notes.txt", "start_line": 2, "end_line": 3}),
                "Read lines 2-3 of notes.txt",
                "two\nthree\n",
            ),
            (
                json!({"path": "notes.txt", "start_line": 3}),
                "Read notes.txt from line 3",
                "three\nfour\n",
            ),
            // Without a start, the call reads from the first line to its end line: not
            // the whole file.
            (
                json!({"path": "notes.txt", "end_line": 2}),
                "Read lines 1-2 of notes.txt",
                "one\ntwo\n",
            ),
            (
                json!({"path": "notes.txt", "end_line": 1}),
                "Read line 1 of notes.txt",
                "one\n",
            ),
        ] {
            assert_eq!(tool.execution_summary(&params), summary, "{params}");
            assert_eq!(read_four(&params).0, content, "{params}");
        }
        let (_, data) = read_four(&json!({"path": "notes.txt", "start_line": 1, "end_line": 1}));
        assert_eq!(
            (&data["start_line"], &data["end_line"], &data["total_lines"]),
            (&json!(1), &json!(1), &json!(4))
        );
    }
}
