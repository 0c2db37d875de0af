//! Saved sessions: every `run`, `exec` and `chat` as an append-only JSON-lines file under
//! the user's data folder (`$XDG_DATA_HOME/aintern/sessions/ID.jsonl`).
//!
//! A file is a header record, then one record per new message (structured tool calls and
//! results included), per request's usage, and per decision remembered "for this
//! session". Each record is one line written whole with one write, so a process killed at
//! any moment leaves a file that reads up to its last complete record (a cut last line is
//! skipped). Files and folder are private to the user (0600 / 0700; a folder others may
//! enter is made private, one of another user's is refused), only regular files are read
//! or written (never through a symbolic link, never waiting on a FIFO: `files.rs`), and
//! the folder is one of the sandbox's secret locations: commands cannot read past
//! conversations.

use chrono::{DateTime, Utc};
use core_models::{ApprovalDecision, ChatMessage, ToolCallRequest};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use uuid::Uuid;

mod files;
mod read;
mod replay;
mod undone;

pub(crate) use undone::{bounded_note, record_undone};

pub(crate) use read::read;

/// The folder of saved sessions, when there is a home.
pub(crate) fn sessions_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("aintern").join("sessions"))
}

/// One line of a session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Record {
    /// The first line.
    Session(Header),
    /// A message added to the conversation.
    Message {
        at: DateTime<Utc>,
        message: ChatMessage,
    },
    /// One request's token counts.
    Usage {
        at: DateTime<Utc>,
        prompt_tokens: u64,
        completion_tokens: u64,
        cached_prompt_tokens: u64,
    },
    /// The conversation from here on, whole: it was compacted (earlier turns summarized,
    /// old results cut) to fit the model's context window.
    History {
        at: DateTime<Utc>,
        messages: Vec<ChatMessage>,
    },
    /// The person undid requests of the session (`aintern undo`, `/undo`): what was
    /// undone, told to the model with the next request.
    Undone { at: DateTime<Utc>, note: String },
    /// A rule or hook decided about a call, or a hook was told of the request.
    Policy { at: DateTime<Utc>, decision: String },
    /// A decision remembered for the rest of the session.
    Remembered {
        at: DateTime<Utc>,
        request: Box<ToolCallRequest>,
        decision: ApprovalDecision,
    },
}

/// What a session is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Header {
    pub(crate) id: Uuid,
    pub(crate) created: DateTime<Utc>,
    pub(crate) workspace: PathBuf,
    /// The backend as the flags would name it (`embedded`, `llama:FILE`, `openai:URL`).
    pub(crate) backend: String,
    /// The model's name.
    pub(crate) model: String,
    /// The file format's version.
    pub(crate) version: u32,
}

/// A session read back.
#[derive(Debug, Clone)]
pub(crate) struct Saved {
    pub(crate) header: Header,
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) remembered: Vec<(ToolCallRequest, ApprovalDecision)>,
    pub(crate) updated: DateTime<Utc>,
    pub(crate) usage: (u64, u64, u64),
    /// Requests asked in the session (compaction does not make them fewer).
    asked: usize,
    /// The first request asked.
    first_request: String,
    /// What was undone since the last request, still to be told to the model.
    pub(crate) pending_note: Option<String>,
    /// What reading the file skipped, in words (records too long or unreadable, decisions
    /// beyond the limit, the part of the file beyond its limit).
    pub(crate) notes: Vec<String>,
    /// The decisions of rules and hooks, in words (the last so many).
    pub(crate) policy: Vec<String>,
}

impl Saved {
    /// Requests made (user messages).
    pub(crate) fn turns(&self) -> usize {
        self.asked
    }

    /// The first request, shortened: what the session is about.
    pub(crate) fn title(&self) -> String {
        let first = self
            .first_request
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if first.chars().count() > 60 {
            format!("{}…", first.chars().take(59).collect::<String>())
        } else {
            first
        }
    }

    /// The row `sessions list --json` prints.
    pub(crate) fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.header.id,
            "created": self.header.created,
            "updated": self.updated,
            "workspace": self.header.workspace,
            "backend": self.header.backend,
            "model": self.header.model,
            "turns": self.turns(),
            "title": self.title(),
        })
    }
}

/// Why a session could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// No home folder to keep sessions in.
    #[error("cannot find the user's data folder (is HOME set?)")]
    NoHome,
    /// The file system refused.
    #[error("session file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// No session has this id (or prefix).
    #[error("no saved session {0} (aintern sessions list shows them)")]
    NotFound(String),
    /// A prefix names several sessions.
    #[error("{0} names more than one session: give more of its id")]
    Ambiguous(String),
    /// The file holds no session header.
    #[error("{} is not a session file", .0.display())]
    NotASession(PathBuf),
    /// The session file is not a regular file (a symbolic link, a FIFO, …).
    #[error("session file {} is {kind}, not a regular file: it is not read or written", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What it is, in words (`a symbolic link`).
        kind: &'static str,
    },
    /// The sessions folder cannot be trusted.
    #[error("sessions folder {}: {why}; it is not used", path.display())]
    Refused {
        /// The folder.
        path: PathBuf,
        /// What is wrong, in words.
        why: String,
    },
    /// The file's header does not describe it.
    #[error("session file {}: {why}; it is not read", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, in words.
        why: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The sessions folder.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    dir: PathBuf,
}

impl Store {
    /// The user's sessions folder, checked (`files::secure_dir`): one that exists must be
    /// the user's, and is made private if others may enter it.
    pub(crate) fn user() -> Result<Self, StoreError> {
        let dir = sessions_dir().ok_or(StoreError::NoHome)?;
        files::secure_dir(&dir)?;
        Ok(Store { dir })
    }

    /// The folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: Uuid) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// Start a session file with `header`.
    pub(crate) fn create(&self, header: &Header) -> Result<Writer, StoreError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(io(&self.dir))?;
        // There already, it could have been opened to others since it was checked.
        files::secure_dir(&self.dir)?;
        let path = self.path(header.id);
        let file = files::open(
            &path,
            std::fs::OpenOptions::new()
                .create_new(true)
                .append(true)
                .mode(0o600),
        )?;
        let mut writer = Writer { file, path };
        writer.append(&Record::Session(header.clone()))?;
        Ok(writer)
    }

    /// Append to the session file of `id`.
    pub(crate) fn open(&self, id: Uuid) -> Result<Writer, StoreError> {
        let path = self.path(id);
        let file = files::open(&path, std::fs::OpenOptions::new().append(true))?;
        Ok(Writer { file, path })
    }

    /// Every session, newest first (files that are not sessions are left out, and so is
    /// anything that is not a regular file, unopened).
    pub(crate) fn list(&self) -> Result<Vec<Saved>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&self.dir)(e)),
        };
        let mut sessions: Vec<Saved> = entries
            .filter_map(Result::ok)
            // The entry's own type: a link is not followed.
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .filter_map(|p| {
                read(&p)
                    .map_err(|e| tracing::warn!("left out of the sessions: {e}"))
                    .ok()
            })
            .collect();
        sessions.sort_by_key(|s| std::cmp::Reverse(s.updated));
        Ok(sessions)
    }

    /// The session `id` names: a whole id, or a prefix of one that names it alone.
    pub(crate) fn find(&self, id: &str) -> Result<Saved, StoreError> {
        let id = id.trim();
        if let Ok(exact) = Uuid::parse_str(id) {
            let path = self.path(exact);
            // Anything there is read or refused in words (`read` opens regular files only).
            if std::fs::symlink_metadata(&path).is_ok() {
                return read(&path);
            }
            return Err(StoreError::NotFound(id.to_string()));
        }
        if id.len() < 4 || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(StoreError::NotFound(id.to_string()));
        }
        let mut matching: Vec<Saved> = self
            .list()?
            .into_iter()
            .filter(|s| {
                s.header
                    .id
                    .to_string()
                    .starts_with(&id.to_ascii_lowercase())
            })
            .collect();
        match matching.len() {
            0 => Err(StoreError::NotFound(id.to_string())),
            1 => Ok(matching.remove(0)),
            _ => Err(StoreError::Ambiguous(id.to_string())),
        }
    }

    /// The most recently updated session.
    pub(crate) fn last(&self) -> Result<Saved, StoreError> {
        self.list()?
            .into_iter()
            .next()
            .ok_or_else(|| StoreError::NotFound("(none saved yet)".into()))
    }

    /// Delete the model state saved for a session and forget the slots saved for it on
    /// llama-servers (whose files are then reused first), then the session's file: a
    /// failure leaves the session there to remove again. How many saved slots were
    /// forgotten.
    pub(crate) fn remove(&self, id: Uuid) -> Result<usize, StoreError> {
        let path = self.path(id);
        llm_llama::remove_session_state(&self.dir, &id.into()).map_err(io(&self.dir))?;
        let forgotten = llm_openai::forget_saved_slots(&id.into(), None);
        tracing::debug!(forgotten, "the session's saved slots were forgotten");
        std::fs::remove_file(&path).map_err(io(&path))?;
        Ok(forgotten)
    }
}

/// Appends records to one session file.
#[derive(Debug)]
pub(crate) struct Writer {
    file: std::fs::File,
    path: PathBuf,
}

impl Writer {
    /// Append one record as one line, in one write.
    pub(crate) fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        let mut line = serde_json::to_vec(record).map_err(|e| StoreError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(io(&self.path))
    }

    /// Append messages added to the conversation.
    pub(crate) fn messages(&mut self, messages: &[ChatMessage]) -> Result<(), StoreError> {
        for message in messages {
            self.append(&Record::Message {
                at: Utc::now(),
                message: message.clone(),
            })?;
        }
        Ok(())
    }

    /// The file.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// The saved side of a running session: its id, the conversation so far, and the file new
/// records go to (none with `--no-save`, or when it cannot be written).
pub(crate) struct Persisted {
    /// The session's (and the conversation's) id.
    pub(crate) id: Uuid,
    /// Whether it was resumed.
    pub(crate) resumed: bool,
    history: std::sync::Mutex<Vec<ChatMessage>>,
    writer: std::sync::Mutex<Option<Writer>>,
    announced: std::sync::atomic::AtomicBool,
    /// What was undone since the last request, for the model (see [`Record::Undone`]).
    pending_note: std::sync::Mutex<Option<String>>,
}

/// How a session is started: resumed from `saved`, or new with `header`'s details.
pub(crate) struct Start {
    pub(crate) saved: Option<Saved>,
    pub(crate) header: Header,
    pub(crate) save: bool,
}

impl Persisted {
    /// Open (or create) the session's file and restore what it remembered: the history,
    /// and the decisions remembered for the session, replayed into `permissions` — only
    /// session-scoped ones, for tools `known` says the session has, checked first
    /// (`replay.rs`): anything else is ignored with a note. Problems with the file are
    /// notes in `notes`, never failures.
    pub(crate) async fn start(
        start: Start,
        permissions: &dyn core_models::PermissionManager,
        known: &(dyn Fn(&str) -> bool + Sync),
        notes: &mut Vec<String>,
    ) -> Persisted {
        let id = start.header.id;
        let store = Store::user();
        let writer = match (&store, start.save, &start.saved) {
            (_, false, _) => None,
            (Ok(store), true, Some(_)) => store
                .open(id)
                .map_err(|e| notes.push(format!("this session will not be saved: {e}")))
                .ok(),
            (Ok(store), true, None) => store
                .create(&start.header)
                .map_err(|e| notes.push(format!("this session will not be saved: {e}")))
                .ok(),
            (Err(e), true, _) => {
                notes.push(format!("this session will not be saved: {e}"));
                None
            }
        };
        let pending_note = start.saved.as_ref().and_then(|s| s.pending_note.clone());
        let (resumed, history) = match start.saved {
            Some(saved) => {
                notes.extend(saved.notes.iter().cloned());
                let mut ignored = Vec::new();
                for (request, decision) in &saved.remembered {
                    let decision = match replay::replayable(request, decision, known) {
                        Ok(decision) => decision,
                        Err(why) => {
                            ignored.push(why);
                            continue;
                        }
                    };
                    if let Err(e) = permissions.remember_decision(id, request, &decision).await {
                        notes.push(format!(
                            "a decision remembered for this session is lost: {e}"
                        ));
                    }
                }
                notes.extend(replay::ignored_notes(&ignored));
                (true, saved.messages)
            }
            None => (false, Vec::new()),
        };
        Persisted {
            id,
            resumed,
            history: std::sync::Mutex::new(history),
            writer: std::sync::Mutex::new(writer),
            announced: std::sync::atomic::AtomicBool::new(false),
            pending_note: std::sync::Mutex::new(pending_note),
        }
    }

    /// The person undid requests: `note` says what, saved at once and told to the model
    /// with the next request.
    pub(crate) fn undone(&self, note: &str) {
        let note = bounded_note(note);
        let mut pending = self.pending_note.lock().unwrap_or_else(|e| e.into_inner());
        *pending = Some(match pending.take() {
            Some(earlier) => bounded_note(&format!("{earlier}\n{note}")),
            None => note.clone(),
        });
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(writer) = writer.as_mut() {
            if let Err(e) = writer.append(&Record::Undone {
                at: Utc::now(),
                note,
            }) {
                tracing::warn!(error = %e, "the undo was not saved with the session");
            }
        }
    }

    /// What was undone since the last request, taken to be told (once).
    pub(crate) fn take_note(&self) -> Option<String> {
        self.pending_note
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The conversation so far.
    pub(crate) fn history(&self) -> Vec<ChatMessage> {
        self.history
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The `session_started` event, the first time it is asked for.
    pub(crate) fn announce(&self, request_id: Uuid) -> Option<core_models::AgentEvent> {
        if self
            .announced
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return None;
        }
        let messages = u32::try_from(self.history.lock().unwrap_or_else(|e| e.into_inner()).len())
            .unwrap_or(u32::MAX);
        Some(
            core_models::SessionStartedEvent::create(request_id, self.id, self.resumed, messages)
                .into(),
        )
    }

    /// A request starts with the user's `message`: saved at once, so that a crash in the
    /// middle of the request keeps the question.
    pub(crate) fn asked(&self, message: &ChatMessage) {
        self.history
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(message.clone());
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(writer) = writer.as_mut() {
            if let Err(e) = writer.messages(std::slice::from_ref(message)) {
                tracing::warn!(error = %e, "the request was not saved");
            }
        }
    }

    /// A request ended with the conversation `now` and `usage` (prompt, completion,
    /// cached tokens): the new messages and the usage are saved.
    pub(crate) fn ended(
        &self,
        now: Vec<ChatMessage>,
        usage: Option<(u64, u64, u64)>,
    ) -> Result<(), StoreError> {
        let mut history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        // The conversation grows by appending; anything else (a shorter one) is saved whole
        // from where it differs.
        let same = history.iter().zip(&now).take_while(|(a, b)| a == b).count();
        let extended = same == history.len();
        let added = now[same..].to_vec();
        *history = now.clone();
        drop(history);
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let Some(writer) = writer.as_mut() else {
            return Ok(());
        };
        if extended {
            writer.messages(&added)?;
        } else {
            // Compacted: the conversation is saved whole from here on.
            writer.append(&Record::History {
                at: Utc::now(),
                messages: now,
            })?;
        }
        if let Some((prompt_tokens, completion_tokens, cached_prompt_tokens)) = usage {
            writer.append(&Record::Usage {
                at: Utc::now(),
                prompt_tokens,
                completion_tokens,
                cached_prompt_tokens,
            })?;
        }
        Ok(())
    }

    /// A decision of a rule or hook: saved with the session, in words.
    pub(crate) fn policy(&self, decision: &core_models::PolicyDecisionEvent) {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(writer) = writer.as_mut() {
            let record = Record::Policy {
                at: Utc::now(),
                decision: bounded_note(&decision.summary()),
            };
            if let Err(e) = writer.append(&record) {
                tracing::warn!(error = %e, "a decision of a rule or hook was not saved");
            }
        }
    }

    /// A decision on `request` remembered for the rest of the session: saved with it.
    pub(crate) fn remembered(&self, request: &ToolCallRequest, decision: &ApprovalDecision) {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(writer) = writer.as_mut() {
            let record = Record::Remembered {
                at: Utc::now(),
                request: Box::new(request.clone()),
                decision: decision.clone(),
            };
            if let Err(e) = writer.append(&record) {
                tracing::warn!(error = %e, "a remembered decision was not saved");
            }
        }
    }
}

/// The saved session `--resume [ID]` / `--last` name, if any.
pub(crate) fn resume_target(
    resume: Option<&Option<String>>,
    last: bool,
) -> Result<Option<Saved>, String> {
    let store = || Store::user().map_err(|e| e.to_string());
    match (resume, last) {
        (Some(Some(id)), _) => store()?.find(id).map(Some).map_err(|e| e.to_string()),
        (Some(None), _) | (None, true) => store()?.last().map(Some).map_err(|e| e.to_string()),
        (None, false) => Ok(None),
    }
}

/// The workspace a resumed session continues in when no `--workspace` is given: the one
/// its header names, which must be an existing folder, and the same folder once resolved
/// as when it was saved (saved workspaces are canonical, so a path that now leads
/// elsewhere through a link is refused).
pub(crate) fn resumed_workspace(header: &Header) -> Result<PathBuf, String> {
    let written = &header.workspace;
    let shown = crate::terminal::shown(&written.display().to_string(), false).into_owned();
    let id = &header.id.to_string()[..8];
    let canonical = crate::session::workspace(Some(written.clone())).map_err(|e| {
        format!("session {id} works in {shown}, which cannot be used ({e}): give --workspace DIR")
    })?;
    if !written.is_absolute() || &canonical != written {
        return Err(format!(
            "session {id} works in {shown}, which now leads to another folder: give --workspace DIR"
        ));
    }
    Ok(canonical)
}

/// What a resumed session uses, said when it starts: the workspace (and whether it comes
/// from the session file) and the backend.
pub(crate) fn resuming_note(
    header: &Header,
    workspace: &std::path::Path,
    backend: &str,
    from_session: bool,
) -> String {
    format!(
        "resuming session {} in {}{} with {}",
        &header.id.to_string()[..8],
        crate::terminal::shown(&workspace.display().to_string(), false),
        if from_session {
            " (the session's workspace; --workspace DIR for another)"
        } else {
            ""
        },
        crate::terminal::shown(backend, false),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(id: Uuid) -> Header {
        Header {
            id,
            created: Utc::now(),
            workspace: PathBuf::from("/w"),
            backend: "embedded".into(),
            model: "m".into(),
            version: 1,
        }
    }

    #[test]
    fn a_session_reads_back_up_to_its_last_whole_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store {
            dir: dir.path().join("sessions"),
        };
        let id = Uuid::new_v4();
        let mut w = store.create(&header(id)).unwrap();
        w.messages(&[
            ChatMessage::user("hello there"),
            ChatMessage::assistant("hi"),
        ])
        .unwrap();
        // A crash in the middle of a record.
        std::fs::OpenOptions::new()
            .append(true)
            .open(w.path())
            .unwrap()
            .write_all(b"{\"type\":\"message\",\"at\":\"2026")
            .unwrap();
        let saved = store.find(&id.to_string()[..8]).unwrap();
        assert_eq!(saved.messages.len(), 2);
        assert_eq!(saved.turns(), 1);
        assert_eq!(saved.title(), "hello there");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(w.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(matches!(store.find("zzzz"), Err(StoreError::NotFound(_))));
        assert!(matches!(store.find("ab"), Err(StoreError::NotFound(_))));
        store.remove(id).unwrap();
        assert!(store.list().unwrap().is_empty());
    }

    /// A remembered record of `decision` on a call of `tool`.
    fn remembered(tool: &str, decision: ApprovalDecision) -> Record {
        Record::Remembered {
            at: Utc::now(),
            request: Box::new(ToolCallRequest::new(
                tool,
                serde_json::json!({"command": "ls"}),
            )),
            decision,
        }
    }

    #[tokio::test]
    async fn replay_restores_session_rules_only_and_never_writes_permissions() {
        use core_models::{PermissionManager as _, RememberScope};
        let dir = tempfile::tempdir().unwrap();
        let store = Store {
            dir: dir.path().join("sessions"),
        };
        let id = Uuid::new_v4();
        let mut w = store.create(&header(id)).unwrap();
        let session = || ApprovalDecision::approve().remember(RememberScope::Session);
        for record in [
            // Edited to "remember for this tool": it would be an always-allow everywhere.
            remembered(
                "run_command",
                ApprovalDecision::approve().remember(RememberScope::Tool),
            ),
            remembered("bad tool\u{1b}[2J", session()),
            remembered("no_such_tool", session()),
            remembered("search_files", session().with_pattern("*".repeat(5000))),
            remembered("read_file", session()),
        ] {
            w.append(&record).unwrap();
        }
        let saved = store.find(&id.to_string()).unwrap();
        let file = dir.path().join("permissions.json");
        let permissions = services_ai::DefaultPermissionManager::new(std::sync::Arc::new(
            services_ai::FilePermissionStore::new(file.clone()),
        ));
        let known = |t: &str| matches!(t, "run_command" | "read_file" | "search_files");
        let mut notes = Vec::new();
        let start = Start {
            saved: Some(saved),
            header: header(id),
            save: false,
        };
        let persisted = Persisted::start(start, &permissions, &known, &mut notes).await;
        assert!(persisted.resumed);
        assert!(
            !file.exists(),
            "permissions.json is never written by a replay"
        );
        assert!(permissions.all_tool_permissions().await.unwrap().is_empty());
        assert_eq!(notes.len(), 4, "{notes:?}");
        for (note, says) in notes.iter().zip([
            "remember for this tool",
            "not a well-formed tool id",
            "no tool no_such_tool",
            "longer than 1024 characters",
        ]) {
            assert!(note.contains(says), "{note}");
            assert!(!note.contains('\u{1b}'), "{note}");
        }
        let call = |tool: &str| ToolCallRequest::new(tool, serde_json::json!({"path": "x"}));
        let check = |conversation, tool| {
            let call = call(tool);
            let permissions = &permissions;
            async move {
                permissions
                    .check_permission(conversation, &call)
                    .await
                    .unwrap()
            }
        };
        // The session-scoped record is restored for this session alone.
        assert!(check(id, "read_file").await.is_allowed);
        assert!(!check(Uuid::new_v4(), "read_file").await.is_allowed);
        // The others restore nothing, here or anywhere.
        for tool in ["run_command", "search_files"] {
            assert!(!check(id, tool).await.is_allowed, "{tool}");
            assert!(!check(Uuid::new_v4(), tool).await.is_allowed, "{tool}");
        }
    }
}
