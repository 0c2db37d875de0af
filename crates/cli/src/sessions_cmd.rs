//! `aintern sessions list|show|rm|prefixes`: the saved sessions, and the prompt prefixes
//! kept beside them.

use crate::sessions::{Store, StoreError};
use crate::terminal::shown;
use core_models::MessageRole;
use std::io::Write;

/// What to do with the saved sessions.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SessionsAction {
    /// List the saved sessions, newest first.
    List {
        /// Print a JSON array of {id, created, updated, workspace, backend, model, turns,
        /// title}.
        #[arg(long)]
        json: bool,
    },
    /// Show a session's conversation.
    Show {
        /// The session's id (or enough of it to name it alone).
        id: String,
        /// Print the messages as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Delete saved sessions.
    Rm {
        /// The sessions' ids (or enough of each to name it alone).
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Show the prompt prefixes kept beside the sessions (the model's state after the
    /// system prompt and the tools, restored by new processes), or remove them.
    Prefixes {
        /// Remove them all (sessions and their states stay).
        #[arg(long)]
        clear: bool,
        /// Print {prefixes, bytes} as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Run one action.
/// Saved sessions, one line each (newest first, as given).
pub(crate) fn list_text(sessions: &[crate::sessions::Saved]) -> String {
    if sessions.is_empty() {
        return "no saved sessions".to_string();
    }
    sessions
        .iter()
        .map(|s| {
            format!(
                "{}  {}  {:>3} turn{}  {}  {}",
                &s.header.id.to_string()[..8],
                s.updated.format("%Y-%m-%d %H:%M"),
                s.turns(),
                if s.turns() == 1 { " " } else { "s" },
                shown(&s.header.workspace.display().to_string(), false),
                shown(&s.title(), false)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn run(action: SessionsAction) -> Result<(), String> {
    let store = Store::user().map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    let text = match action {
        SessionsAction::List { json } => {
            let sessions = store.list().map_err(|e| e.to_string())?;
            if json {
                let rows: Vec<serde_json::Value> = sessions.iter().map(|s| s.summary()).collect();
                serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
            } else {
                list_text(&sessions)
            }
        }
        SessionsAction::Show { id, json } => {
            let saved = store.find(&id).map_err(|e| e.to_string())?;
            if json {
                serde_json::to_string_pretty(&saved.messages).map_err(|e| e.to_string())?
            } else {
                transcript(&saved)
            }
        }
        SessionsAction::Prefixes { clear, json } => {
            let found = llm_llama::prefix_states(store.dir()).map_err(|e| e.to_string())?;
            let removed = if clear {
                llm_llama::remove_prefix_states(store.dir()).map_err(|e| e.to_string())?
            } else {
                0
            };
            let mb = found.bytes as f64 / 1e6;
            match (json, clear) {
                (true, _) => serde_json::json!({
                    "prefixes": found.prefixes,
                    "bytes": found.bytes,
                    "removed": removed,
                })
                .to_string(),
                (false, true) => format!(
                    "removed {removed} kept prompt prefix{} ({mb:.1} MB)",
                    if removed == 1 { "" } else { "es" }
                ),
                (false, false) => format!(
                    "{} kept prompt prefix{}, {mb:.1} MB",
                    found.prefixes,
                    if found.prefixes == 1 { "" } else { "es" }
                ),
            }
        }
        SessionsAction::Rm { ids } => {
            let (mut removed, mut forgotten) = (Vec::new(), 0);
            for id in ids {
                let found = match store.find(&id) {
                    Ok(saved) => saved.header.id,
                    // A file that does not read as a session (edited, not one, or not a
                    // regular file: a link goes, never what it leads to) can still be
                    // removed by its whole id.
                    Err(
                        e @ (StoreError::Invalid { .. }
                        | StoreError::NotASession(_)
                        | StoreError::NotAFile { .. }),
                    ) => uuid::Uuid::parse_str(id.trim()).map_err(|_| e.to_string())?,
                    Err(e) => return Err(e.to_string()),
                };
                forgotten += store.remove(found).map_err(|e| e.to_string())?;
                removed.push(found.to_string());
            }
            let mut text = format!("removed {}", removed.join(", "));
            if forgotten > 0 {
                text.push_str(&format!(
                    "\nforgot {forgotten} slot state{} saved on llama-servers: the servers keep those files until states of other sessions are saved in them",
                    if forgotten == 1 { "" } else { "s" }
                ));
            }
            text
        }
    };
    writeln!(out, "{text}").map_err(|e| e.to_string())
}

/// A session as text: its details, then each message; each call described by its tool as
/// it was when it ran ("Read notes.txt"), a tool that is not built in by its name.
fn transcript(saved: &crate::sessions::Saved) -> String {
    let registry: services_ai::InMemoryToolRegistry = tools::builtin_tools().into_iter().collect();
    let catalog = services_ai::ToolCatalog::Registry(std::sync::Arc::new(registry));
    let h = &saved.header;
    let (prompt, completion, cached) = saved.usage;
    let mut out = format!(
        "session {}\ncreated {} · updated {}\nworkspace {}\nmodel {} ({})\ntokens: {prompt} prompt ({cached} cached), {completion} generated\n",
        h.id,
        h.created.format("%Y-%m-%d %H:%M:%S"),
        saved.updated.format("%Y-%m-%d %H:%M:%S"),
        shown(&h.workspace.display().to_string(), false),
        shown(&h.model, false),
        shown(&h.backend, false),
    );
    for m in &saved.messages {
        let who = match m.role {
            MessageRole::System => "system".to_string(),
            MessageRole::User => "you".to_string(),
            MessageRole::Assistant => "assistant".to_string(),
            MessageRole::Tool => format!("tool {}", m.name.as_deref().unwrap_or_default()),
        };
        out.push_str(&format!("\n— {who}\n{}\n", shown(m.content.trim(), true)));
        for call in &m.tool_calls {
            let (name, arguments) = (
                shown(&call.name, false),
                shown(&call.arguments.to_string(), false).into_owned(),
            );
            if catalog.knows(&call.name) {
                let request = catalog.request(&call.name, (*call.arguments).clone(), "");
                let summary = shown(&request.execution_summary, false);
                out.push_str(&format!("→ {summary} ({name} {arguments})\n"));
            } else {
                out.push_str(&format!("→ {name} {arguments}\n"));
            }
        }
    }
    if !saved.policy.is_empty() {
        out.push_str("\n— decisions of rules and hooks\n");
        for d in &saved.policy {
            out.push_str(&format!("{}\n", shown(d, false)));
        }
    }
    out.trim_end().to_string()
}
