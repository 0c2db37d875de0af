//! Path arguments held to what exists: before each reply, tools that name an existing
//! file or folder say which there are ([`core_models::Tool::argument_choices`]), and the
//! request carries them apart from its tools (`LlmRequest::argument_choices`): the call
//! grammar admits no other name, while the tools the model is shown, and the prompt (and
//! the KV cache behind it), stay the same whatever the workspace holds.

use core_models::{ArgumentChoices, Tool};
use std::path::PathBuf;
use std::sync::Arc;

/// What the model is told of the workspace: the names of `found` that are not folders of
/// others (the files, and empty folders), sorted; empty when there are none.
pub(super) fn listing(found: &[(String, ArgumentChoices)]) -> String {
    let mut names: Vec<&str> = found
        .iter()
        .flat_map(|(_, choices)| choices.values().flatten())
        .map(|name| name.trim_end_matches('/'))
        .filter(|name| !name.is_empty() && *name != ".")
        .collect();
    names.sort_unstable();
    names.dedup();
    let folder_of =
        |a: &str, b: &str| b.len() > a.len() && b.starts_with(a) && b[a.len()..].starts_with('/');
    let leaves: Vec<&str> = names
        .iter()
        .copied()
        .filter(|a| !names.iter().any(|b| folder_of(a, b)))
        .collect();
    if leaves.is_empty() {
        return String::new();
    }
    format!("The workspace holds: {}.", leaves.join(", "))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_names_the_files_once_and_their_folders_through_them() {
        let choice = |names: &[&str]| -> ArgumentChoices {
            [(
                "path".to_string(),
                names.iter().map(|n| (*n).to_string()).collect(),
            )]
            .into()
        };
        let found = vec![
            (
                "read_file".to_string(),
                choice(&["notes.txt", "docs/guide.txt"]),
            ),
            ("list_dir".to_string(), choice(&[".", "docs", "empty"])),
        ];
        assert_eq!(
            listing(&found),
            "The workspace holds: docs/guide.txt, empty, notes.txt."
        );
        assert_eq!(listing(&[]), "");
    }
}
