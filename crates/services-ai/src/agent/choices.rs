//! Path arguments held to what exists: before each reply, tools that name an existing
//! file or folder say which there are ([`core_models::Tool::argument_choices`]), and the
//! request carries them apart from its tools (`LlmRequest::argument_choices`): the call
//! grammar admits no other name, while the tools the model is shown, and the prompt (and
//! the KV cache behind it), stay the same whatever the workspace holds.

use core_models::{ArgumentChoices, Tool};
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
