//! Read before change: a call that would replace an existing file the conversation has not
//! seen (a whole-file write over a file the model never read, which loses what the model
//! did not know was there) is refused before anyone is asked, with a note that says to
//! read the file first ([`crate::AgentConfig::read_before_change`]). An edit needs no read:
//! it replaces only text that occurs in the file, and one whose text does not occur is
//! refused anyway.
//!
//! What the conversation has seen is read from the history as the model is shown it: a
//! call whose tool says it shows a file ([`core_models::Tool::file_seen`]: a read, or a
//! write or edit the model made) and whose result there is not a failure. A call of the
//! same reply has not run yet, so a read and an edit written together do not count as
//! seen; a result that compaction summarized away is no longer seen either.

use super::guard::guarded;
use super::run::Run;
use crate::ReadBeforeChange;
use core_models::{MessageRole, Tool, ToolCallRequest, ToolResult};
use std::collections::{HashMap, HashSet};
use std::path::{Component, Path};

impl Run {
    /// The refusal of `call` when it would change an existing file the conversation has
    /// not seen and the agent is set to wait for a read; `None` otherwise.
    pub(super) fn unseen_change(
        &self,
        call: &ToolCallRequest,
        tool: &dyn Tool,
    ) -> Option<ToolResult> {
        let config = &self.shared.config;
        if !config.include_tool_results_in_history
            || config.read_before_change != ReadBeforeChange::Always
        {
            return None;
        }
        let workspace = self.workspace.as_deref();
        let path = guarded(|| tool.file_to_see_first(&call.parameters, workspace))
            .ok()
            .flatten()?;
        if self.seen_files().contains(&plain(&path, workspace)) {
            return None;
        }
        Some(ToolResult::failed(format!(
            "Not run: '{path}' exists and its text is not in this conversation, and {} would \
             replace all of it. Read it first, then write all of it from what you read (or \
             change only a part with edit_file).",
            call.tool_id
        )))
    }

    /// The files the conversation has seen, as [`plain`] paths.
    fn seen_files(&self) -> HashSet<String> {
        let workspace = self.workspace.as_deref();
        let mut calls = HashMap::new();
        let mut seen = HashSet::new();
        for message in &self.history {
            match message.role {
                MessageRole::Assistant => {
                    for call in &message.tool_calls {
                        calls.insert(call.id.as_str(), call);
                    }
                }
                MessageRole::Tool => {
                    let Some(call) = message.tool_call_id.as_deref().and_then(|id| calls.get(id))
                    else {
                        continue;
                    };
                    if message.content.starts_with("Error:") {
                        continue;
                    }
                    let Some(tool) = self.shared.ports.registry.get_tool(&call.name) else {
                        continue;
                    };
                    if let Ok(Some(path)) = guarded(|| tool.file_seen(&call.arguments)) {
                        seen.insert(plain(&path, workspace));
                    }
                }
                _ => {}
            }
        }
        seen
    }
}

/// A path as the workspace knows it, for comparing: relative to the workspace when it is
/// written absolute inside it, `.` components and repeated separators dropped, `..`
/// taken back lexically.
pub(super) fn plain(path: &str, workspace: Option<&Path>) -> String {
    let path = Path::new(path.trim());
    let path = workspace
        .and_then(|w| path.strip_prefix(w).ok())
        .unwrap_or(path);
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    parts.push("..".into());
                }
            }
            Component::RootDir => parts.push(String::new()),
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::Prefix(prefix) => {
                parts.push(prefix.as_os_str().to_string_lossy().into_owned());
            }
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::plain;
    use std::path::Path;

    #[test]
    fn paths_are_compared_plain() {
        let ws = Some(Path::new("/home/ann/project"));
        for (written, expected) in [
            ("notes.txt", "notes.txt"),
            ("./notes.txt", "notes.txt"),
            ("src//a.rs", "src/a.rs"),
            ("src/./b/../a.rs", "src/a.rs"),
            ("/home/ann/project/src/a.rs", "src/a.rs"),
            (" notes.txt ", "notes.txt"),
            ("../up.txt", "../up.txt"),
        ] {
            assert_eq!(plain(written, ws), expected, "{written}");
        }
        assert_ne!(plain("/elsewhere/a.rs", ws), plain("a.rs", ws));
    }
}
