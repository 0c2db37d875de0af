//! What AIntern's events and messages look like as ACP session updates, and what a
//! prompt's content blocks say to the model.
//!
//! Paths go to the client absolute (the protocol's rule), and only paths beneath the
//! workspace: a path a call names that would lead out is not shown as a location.

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, EmbeddedResourceResource, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};
use core_models::{ChatMessage, MessageRole, ToolCallRequest, ToolResult};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// Largest file whose text is shown before and after a write or an edit.
const DIFF_FILE_CAP: u64 = 512 * 1024;

/// The request a prompt's blocks make: text as it is, a linked resource named, an
/// embedded resource's text quoted under its URI. Blocks of other kinds (not advertised)
/// are named so that nothing is dropped in silence.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[file: {}]", link_path(&link.uri)));
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(r) => parts.push(format!(
                    "Contents of {}:\n```\n{}\n```",
                    link_path(&r.uri),
                    r.text.trim_end()
                )),
                _ => parts.push("[a binary resource, not shown]".to_string()),
            },
            _ => parts.push("[an image or audio clip, not supported]".to_string()),
        }
    }
    parts.join("\n\n")
}

/// A `file://` URI as its path; anything else as it is.
fn link_path(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

/// Text as a chunk of the agent's message (or of its reasoning).
pub(crate) fn chunk(text: &str, thinking: bool) -> SessionUpdate {
    let chunk = ContentChunk::new(ContentBlock::from(text.to_string()));
    if thinking {
        SessionUpdate::AgentThoughtChunk(chunk)
    } else {
        SessionUpdate::AgentMessageChunk(chunk)
    }
}

/// The agent's plan as a `plan` update: every step, with its status.
pub(crate) fn plan(plan: &core_models::PlanUpdatedEvent) -> SessionUpdate {
    use agent_client_protocol::v1::schema::{Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus};
    use core_models::PlanStatus;
    let entries = plan
        .steps
        .iter()
        .map(|s| {
            let status = match s.status {
                PlanStatus::Pending => PlanEntryStatus::Pending,
                PlanStatus::InProgress => PlanEntryStatus::InProgress,
                PlanStatus::Done => PlanEntryStatus::Completed,
            };
            PlanEntry::new(s.step.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// The schema's kind of a call to `tool_id`.
pub(crate) fn kind(tool_id: &str) -> ToolKind {
    match tool_id {
        "read_file" | "list_dir" | "git_status" | "git_diff" | "load_skill" => ToolKind::Read,
        "search_files" => ToolKind::Search,
        "write_file" | "edit_file" => ToolKind::Edit,
        "run_command" => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// Whether a call changes a file's text (and gets a diff).
pub(crate) fn edits_text(tool_id: &str) -> bool {
    matches!(tool_id, "write_file" | "edit_file")
}

/// The absolute path beneath `workspace` a call names, if it names one that stays there.
pub(crate) fn call_path(request: &ToolCallRequest, workspace: &Path) -> Option<PathBuf> {
    let path = ["path", "file_path", "file", "directory"]
        .iter()
        .find_map(|key| request.parameters.get(key).and_then(Value::as_str))?;
    beneath(workspace, path)
}

/// `path` (relative to `workspace`, or absolute) when it stays beneath the workspace,
/// by its words alone (`..` that climbs out, or an absolute path elsewhere: `None`).
pub(crate) fn beneath(workspace: &Path, path: &str) -> Option<PathBuf> {
    let given = Path::new(path);
    let relative = given.strip_prefix(workspace).unwrap_or(given);
    let mut out = workspace.to_path_buf();
    for part in relative.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if out == workspace || !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The `tool_call` update that announces `request`: what it does, its kind, its input
/// and the file it names. The change it would make to a file is not in it: the engine may
/// not run the call (a repeat of an earlier one, a call refused); an editor sees the
/// change when a person is asked ([`asking`]), when the call starts ([`change_of`]) and
/// with its result ([`finished`]).
pub(crate) fn tool_call(request: &ToolCallRequest, workspace: &Path) -> ToolCall {
    let mut call = ToolCall::new(request.id.to_string(), title(request))
        .kind(kind(&request.tool_id))
        .status(ToolCallStatus::Pending)
        .raw_input((*request.parameters).clone());
    if let Some(path) = call_path(request, workspace) {
        call = call.locations(vec![ToolCallLocation::new(path)]);
    }
    call
}

/// The change `request` would make to the file it names (`before`: the file's text
/// before it runs), when that is known and changes something.
pub(crate) fn change_of(
    request: &ToolCallRequest,
    workspace: &Path,
    before: &Before,
) -> Option<ToolCallContent> {
    change(request, call_path(request, workspace)?, before)
}

/// The diff of the change `request` would make to the file at `path`: the whole file
/// before and after when its text before is known, else (an edit) the text it replaces
/// and its replacement; none when nothing would change.
fn change(request: &ToolCallRequest, path: PathBuf, before: &Before) -> Option<ToolCallContent> {
    let old = match before {
        Before::Missing => Some(None),
        Before::Text(text) => Some(text.clone()),
        Before::Unknown => None,
    };
    if let Some(old) = old {
        if let Some(new) = proposed(request, old.as_deref()) {
            return (old.as_deref() != Some(new.as_str())).then(|| diff(path, old, new));
        }
    }
    fragment(request, path)
}

/// An edit as the text it replaces and its replacement.
fn fragment(request: &ToolCallRequest, path: PathBuf) -> Option<ToolCallContent> {
    if request.tool_id != "edit_file" {
        return None;
    }
    let text = |key: &str| request.parameters.get(key).and_then(Value::as_str);
    let (search, replace) = (text("search")?, text("replace")?);
    (search != replace).then(|| diff(path, Some(search.to_string()), replace.to_string()))
}

/// What the call does, in words.
pub(crate) fn title(request: &ToolCallRequest) -> String {
    if request.execution_summary.trim().is_empty() {
        request.tool_name.clone()
    } else {
        request.execution_summary.clone()
    }
}

/// The fields of a permission request's tool call: as announced, plus the change it
/// would make when it is known.
pub(crate) fn asking(
    request: &ToolCallRequest,
    workspace: &Path,
    before: &Before,
    summary: &str,
) -> ToolCallUpdate {
    let call = tool_call(request, workspace);
    let mut content = vec![ToolCallContent::from(summary.to_string())];
    content.extend(change_of(request, workspace, before));
    ToolCallUpdate::new(
        call.tool_call_id.clone(),
        ToolCallUpdateFields::new()
            .title(call.title)
            .kind(call.kind)
            .status(ToolCallStatus::Pending)
            .raw_input(call.raw_input)
            .locations(call.locations)
            .content(content),
    )
}

/// A file's text before a call changes it.
#[derive(Debug, Clone)]
pub(crate) enum Before {
    /// Not a call that changes a file's text, or the text could not be read.
    Unknown,
    /// The file did not exist.
    Missing,
    /// Its text.
    Text(Option<String>),
}

/// The text of the file `request` names, before it runs.
pub(crate) fn before(request: &ToolCallRequest, workspace: &Path) -> Before {
    if !edits_text(&request.tool_id) {
        return Before::Unknown;
    }
    let Some(path) = call_path(request, workspace) else {
        return Before::Unknown;
    };
    match read_text(&path, workspace) {
        Read::Missing => Before::Missing,
        Read::Text(text) => Before::Text(Some(text)),
        Read::Unreadable => Before::Unknown,
    }
}

enum Read {
    Missing,
    Text(String),
    Unreadable,
}

/// A file's text, read only when it is a regular file beneath the workspace (no link
/// leading out) and small enough.
fn read_text(path: &Path, workspace: &Path) -> Read {
    let Ok(relative) = path.strip_prefix(workspace) else {
        return Read::Unreadable;
    };
    let Ok(ws) = tools::Workspace::new(workspace) else {
        return Read::Unreadable;
    };
    let Some(relative) = relative.to_str() else {
        return Read::Unreadable;
    };
    match ws.resolve_existing(relative) {
        Ok(resolved) => match std::fs::metadata(&resolved) {
            Ok(m) if m.is_file() && m.len() <= DIFF_FILE_CAP => std::fs::read(&resolved)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .map_or(Read::Unreadable, Read::Text),
            _ => Read::Unreadable,
        },
        Err(_) if !path.exists() && path.symlink_metadata().is_err() => Read::Missing,
        Err(_) => Read::Unreadable,
    }
}

/// The text `request` would leave in its file, from the file's text before.
fn proposed(request: &ToolCallRequest, old: Option<&str>) -> Option<String> {
    let p = &request.parameters;
    match request.tool_id.as_str() {
        "write_file" => p.get("content").and_then(Value::as_str).map(str::to_string),
        "edit_file" => {
            let old = old?;
            let find = p.get("search").and_then(Value::as_str)?;
            let replace = p.get("replace").and_then(Value::as_str)?;
            // The tool replaces text that occurs exactly once.
            if find.is_empty() || old.matches(find).count() != 1 {
                return None;
            }
            Some(old.replacen(find, replace, 1))
        }
        _ => None,
    }
}

fn diff(path: PathBuf, old: Option<String>, new: String) -> ToolCallContent {
    ToolCallContent::from(Diff::new(path, new).old_text(old))
}

/// The update that reports `result` of `request`: completed or failed, its text, and for
/// a write or an edit the file's text before and after. `through_client`: the change went
/// to the client's buffer, so the disk does not show it: the text after is the one the
/// call asked for, or no diff is shown.
pub(crate) fn finished(
    request: Option<&ToolCallRequest>,
    call_id: &str,
    result: &ToolResult,
    workspace: &Path,
    before: &Before,
    through_client: bool,
) -> ToolCallUpdate {
    let text = match (&result.error_message, result.success) {
        (Some(e), false) => e.clone(),
        _ => result.content.clone(),
    };
    let mut content = vec![ToolCallContent::from(text)];
    if let (true, Some(request)) = (result.success, request) {
        if let Some(path) = call_path(request, workspace) {
            let old = match before {
                Before::Missing => Some(None),
                Before::Text(t) => Some(t.clone()),
                Before::Unknown => None,
            };
            // Through the client, an edit changed a buffer whose text before is not known
            // here: the edit is shown as the text it replaced and its replacement.
            let known = old.filter(|_| !(through_client && request.tool_id == "edit_file"));
            let whole = known.and_then(|old| {
                let new = proposed(request, old.as_deref()).or_else(|| {
                    match read_text(&path, workspace) {
                        Read::Text(new) if !through_client => Some(new),
                        _ => None,
                    }
                })?;
                Some((old, new))
            });
            match whole {
                // A call that changed nothing (a repeat) shows no diff.
                Some((old, new)) if old.as_deref() == Some(new.as_str()) => {}
                Some((old, new)) => content.push(diff(path, old, new)),
                None => content.extend(fragment(request, path)),
            }
        }
    }
    let status = if result.success {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new().status(status).content(content),
    )
}

/// The conversation `history` as the updates that replay it: user and agent messages,
/// and each tool call with its result. Each call is described by its tool in `catalog`
/// (titled as it was when it ran: "Read notes.txt"), by its name when the tool is gone.
pub(crate) fn replay(
    history: &[ChatMessage],
    workspace: &Path,
    catalog: &services_ai::ToolCatalog,
) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    for message in history {
        match message.role {
            MessageRole::User if !message.content.trim().is_empty() => {
                out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                    ContentBlock::from(message.content.to_string()),
                )));
            }
            MessageRole::Assistant => {
                if !message.content.trim().is_empty() {
                    out.push(chunk(&message.content, false));
                }
                for call in &message.tool_calls {
                    let request = catalog.request(&call.name, (*call.arguments).clone(), "");
                    let mut announced = tool_call(&request, workspace);
                    if let Some(change) = change_of(&request, workspace, &Before::Unknown) {
                        announced = announced.content(vec![change]);
                    }
                    announced.tool_call_id = call.id.clone().into();
                    out.push(SessionUpdate::ToolCall(
                        announced.status(ToolCallStatus::Completed),
                    ));
                }
            }
            MessageRole::Tool => {
                if let Some(id) = &message.tool_call_id {
                    out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        id.clone(),
                        ToolCallUpdateFields::new()
                            .status(ToolCallStatus::Completed)
                            .content(vec![ToolCallContent::from(message.content.to_string())]),
                    )));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_beneath_the_workspace_are_shown() {
        let ws = Path::new("/w/s");
        assert_eq!(beneath(ws, "a/b.txt"), Some(PathBuf::from("/w/s/a/b.txt")));
        assert_eq!(beneath(ws, "./a/../b"), Some(PathBuf::from("/w/s/b")));
        assert_eq!(beneath(ws, "/w/s/c"), Some(PathBuf::from("/w/s/c")));
        assert_eq!(beneath(ws, "../x"), None);
        assert_eq!(beneath(ws, "a/../../x"), None);
        assert_eq!(beneath(ws, "/etc/passwd"), None);
    }

    #[test]
    fn prompts_keep_every_block() {
        use agent_client_protocol::v1::schema::{
            EmbeddedResource, ResourceLink, TextResourceContents,
        };
        let blocks = vec![
            ContentBlock::from("Fix this".to_string()),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/lib.rs",
                )),
            )),
        ];
        let text = prompt_text(&blocks);
        assert!(text.starts_with("Fix this"), "{text}");
        assert!(text.contains("[file: /w/main.rs]"), "{text}");
        assert!(
            text.contains("Contents of /w/lib.rs:\n```\nfn main() {}\n```"),
            "{text}"
        );
    }

    #[test]
    fn an_edit_proposes_the_replaced_text() {
        let edit = ToolCallRequest::new(
            "edit_file",
            serde_json::json!({"path": "a", "search": "x", "replace": "y"}),
        );
        assert_eq!(proposed(&edit, Some("axb")).as_deref(), Some("ayb"));
        assert_eq!(proposed(&edit, Some("axbx")), None);
        assert_eq!(proposed(&edit, Some("abc")), None);
        let write = ToolCallRequest::new(
            "write_file",
            serde_json::json!({"path": "a", "content": "new"}),
        );
        assert_eq!(proposed(&write, None).as_deref(), Some("new"));
    }
}
