//! Files through an editor: when an application (an ACP client) opens files for the
//! agent, `read_file` reads and `write_file` / `edit_file` write through it, so unsaved
//! buffers are seen and changes land in the editor.
//!
//! The editor is asked only after the tool's own checks: the path must resolve beneath
//! the workspace, through no link leading out, to no secret location — a path outside is
//! refused here and the editor never hears of it. Approvals come before a tool runs at
//! all. The editor gets the absolute path. Each tool's path through the editor sits beside
//! the tool (`read_through`, `write_through`, `edit_through`); this file holds the trait
//! and what they share.

use crate::offload::on_workspace;
use crate::workspace::Opened;
use async_trait::async_trait;
use core_models::{ToolExecutionContext, ToolResult};
use sandbox::Launcher;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest text read through an editor (as from disk: `read_file` caps what it returns).
pub(crate) const EDITOR_TEXT_CAP: usize = 16 * 1024 * 1024;

/// An editor that reads and writes the workspace's files for the tools.
#[async_trait]
pub trait EditorFiles: Send + Sync + std::fmt::Debug {
    /// Whether files are read through it.
    fn reads(&self) -> bool;
    /// Whether files are written through it.
    fn writes(&self) -> bool;
    /// The text of the file at the absolute `path`, as the editor has it.
    ///
    /// # Errors
    /// The editor's reason, in words.
    async fn read_text(&self, path: &Path) -> Result<String, String>;
    /// Make `text` the file's at the absolute `path`.
    ///
    /// # Errors
    /// The editor's reason, in words.
    async fn write_text(&self, path: &Path, text: &str) -> Result<(), String>;
}

pub(crate) fn text<'a>(params: &'a Value, key: &str) -> &'a str {
    params.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Ask the editor, stopping at the call's cancellation.
#[allow(clippy::result_large_err)] // the failure is the call's result, made once
pub(crate) async fn asking<T>(
    context: &ToolExecutionContext,
    work: impl std::future::Future<Output = Result<T, String>>,
    what: &str,
) -> Result<T, ToolResult> {
    tokio::select! {
        r = work => r.map_err(|e| ToolResult::failed(format!("the editor could not {what}: {e}"))),
        () = context.cancellation.cancelled() => Err(ToolResult::failed("Cancelled")),
    }
}

/// The absolute path of the existing regular file `path` names, checked beneath the
/// workspace.
#[allow(clippy::result_large_err)] // the failure is the call's result, made once
pub(crate) async fn existing_file(
    context: &ToolExecutionContext,
    launcher: &Arc<Launcher>,
    path: &str,
) -> Result<PathBuf, ToolResult> {
    let path = path.to_string();
    on_workspace(context, launcher, move |w| match w.open_existing(&path) {
        Ok(Opened::File(_)) => w
            .resolve_existing(&path)
            .map_err(|e| ToolResult::failed(e.to_string())),
        Ok(Opened::Folder) => Err(ToolResult::failed(format!(
            "'{path}' is a folder; use list_dir"
        ))),
        Err(e) => Err(ToolResult::failed(e.to_string())),
    })
    .await
}
