//! Tool work that blocks (file system walks and reads) run off the async runtime, on the
//! call's workspace, stopping at the call's cancellation.

use crate::workspace::Workspace;
use core_models::{ToolExecutionContext, ToolResult};
use sandbox::Launcher;
use std::sync::Arc;

/// Run blocking file work on the call's workspace — its secret locations those of
/// `launcher` — off the async runtime, unless cancelled first.
#[allow(clippy::result_large_err)] // the failure is the call's result, made once
pub(crate) async fn blocking<F>(
    context: &ToolExecutionContext,
    launcher: &Arc<Launcher>,
    work: F,
) -> ToolResult
where
    F: FnOnce(&Workspace) -> ToolResult + Send + 'static,
{
    on_workspace(context, launcher, move |w| Ok(work(w)))
        .await
        .unwrap_or_else(|failed| failed)
}

/// [`blocking`] for work with a value of its own, or a failed result.
#[allow(clippy::result_large_err)] // the failure is the call's result, made once
pub(crate) async fn on_workspace<F, T>(
    context: &ToolExecutionContext,
    launcher: &Arc<Launcher>,
    work: F,
) -> Result<T, ToolResult>
where
    F: FnOnce(&Workspace) -> Result<T, ToolResult> + Send + 'static,
    T: Send + 'static,
{
    if context.cancellation.is_cancelled() {
        return Err(ToolResult::failed("Cancelled"));
    }
    let Some(root) = context.workspace_path.clone() else {
        return Err(ToolResult::failed("no workspace is open"));
    };
    let launcher = Arc::clone(launcher);
    let task =
        tokio::task::spawn_blocking(move || match Workspace::with_launcher(&root, &launcher) {
            Ok(workspace) => work(&workspace),
            Err(e) => Err(ToolResult::failed(e.to_string())),
        });
    tokio::select! {
        r = task => r.unwrap_or_else(|e| Err(ToolResult::failed(format!("the tool stopped unexpectedly: {e}")))),
        _ = context.cancellation.cancelled() => Err(ToolResult::failed("Cancelled")),
    }
}
