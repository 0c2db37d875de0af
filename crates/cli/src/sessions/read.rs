//! Reading a session file back, as a file anyone could have edited deserves: every line
//! is read with a cap (a longer one is skipped, never held whole), the file is read up to
//! a cap, at most so many remembered decisions are kept, and the header must be the
//! file's first record and describe this file (its id is the file's name, its workspace
//! an absolute path). What is skipped is said in the session's notes; nothing in a file
//! makes reading fail but a file that is not this session at all (or not a regular file:
//! a link or a FIFO is refused unread).

use super::{io, Header, Record, Saved, StoreError};
use chrono::{DateTime, Utc};
use core_models::{ApprovalDecision, ChatMessage, MessageRole, ToolCallRequest};
use std::io::{BufRead, Read};
use std::path::Path;

/// How much of a session file is read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Bytes in one record (one line).
    pub(crate) line: usize,
    /// Bytes of the whole file.
    pub(crate) file: u64,
    /// Remembered decisions kept.
    pub(crate) remembered: usize,
}

/// The limits a session file is read with: 16 MiB a record (a compacted conversation is
/// one record), 128 MiB a file, 256 remembered decisions.
pub(crate) const LIMITS: Limits = Limits {
    line: 16 * 1024 * 1024,
    file: 128 * 1024 * 1024,
    remembered: 256,
};

/// The file format's version this program writes and reads.
pub(crate) const VERSION: u32 = 1;

/// Longest backend or model name in a header.
const MAX_NAME: usize = 4096;

/// `bytes` in words, for notes (`16 MiB`, `400 bytes`).
fn size_text(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// One line of the file, as read.
enum Line {
    /// A whole line (with its newline) is in the buffer.
    Whole,
    /// A line longer than the cap: skipped up to its newline, none of it kept.
    TooLong,
    /// The file ends in the middle of a line (a crash while writing, or the file cap).
    Cut,
    /// The file ends.
    End,
}

/// Read the next line into `line` (cleared first), holding at most `cap` bytes of it.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>, cap: usize) -> std::io::Result<Line> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(if too_long || !line.is_empty() {
                Line::Cut
            } else {
                Line::End
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if !too_long {
            if line.len().saturating_add(take) > cap {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(&available[..take]);
            }
        }
        reader.consume(take);
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Whole });
        }
    }
}

/// Read a session file up to its last complete record, with [`LIMITS`].
pub(crate) fn read(path: &Path) -> Result<Saved, StoreError> {
    read_with(path, &LIMITS)
}

/// What is gathered while the records are read.
#[derive(Default)]
struct Gathered {
    reading: Option<Reading>,
    unreadable: usize,
    too_long: usize,
    extra_remembered: usize,
}

/// Read a session file up to its last complete record, within `limits`.
pub(crate) fn read_with(path: &Path, limits: &Limits) -> Result<Saved, StoreError> {
    let file = super::files::open(path, std::fs::OpenOptions::new().read(true))?;
    let metadata = file.metadata().map_err(io(path))?;
    let mut reader = std::io::BufReader::new(file.take(limits.file));
    let mut line = Vec::new();
    let mut g = Gathered::default();
    loop {
        let record = match next_line(&mut reader, &mut line, limits.line).map_err(io(path))? {
            Line::Whole => match serde_json::from_slice::<Record>(&line) {
                Ok(record) => Some(record),
                Err(_) => {
                    g.unreadable += 1;
                    None
                }
            },
            Line::TooLong => {
                g.too_long += 1;
                None
            }
            // A line without its end was cut by a crash: it and nothing after it counts.
            Line::Cut | Line::End => break,
        };
        let Some(reading) = g.reading.as_mut() else {
            // The header is the first record, or this is no session file.
            let Some(Record::Session(header)) = record else {
                return Err(StoreError::NotASession(path.to_path_buf()));
            };
            check_header(path, &header)?;
            g.reading = Some(Reading::new(header));
            continue;
        };
        match record {
            None => {}
            Some(Record::Remembered { .. }) if reading.remembered.len() >= limits.remembered => {
                g.extra_remembered += 1;
            }
            // A second header is not this program's writing.
            Some(Record::Session(_)) => g.unreadable += 1,
            Some(record) => reading.add(record),
        }
    }
    let notes = notes(&g, limits, metadata.len());
    let reading = g
        .reading
        .ok_or_else(|| StoreError::NotASession(path.to_path_buf()))?;
    Ok(reading.into_saved(notes))
}

/// What the reading skipped, in words.
fn notes(g: &Gathered, limits: &Limits, size: u64) -> Vec<String> {
    let mut notes = Vec::new();
    let count = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    if g.too_long > 0 {
        notes.push(format!(
            "the session file has {} longer than {}: skipped",
            count(g.too_long, "record", "records"),
            size_text(limits.line as u64)
        ));
    }
    if g.unreadable > 0 {
        notes.push(format!(
            "the session file has {} that could not be read: skipped",
            count(g.unreadable, "record", "records")
        ));
    }
    if g.extra_remembered > 0 {
        notes.push(format!(
            "the session file remembers more than {} decisions: {} ignored",
            limits.remembered,
            count(g.extra_remembered, "more was", "more were")
        ));
    }
    if size > limits.file {
        notes.push(format!(
            "the session file is larger than {}: only that much of it was read",
            size_text(limits.file)
        ));
    }
    notes
}

/// A header describes the file it heads: its id is the file's name, it is of a version
/// this program knows, its workspace is an absolute path and its names are short.
fn check_header(path: &Path, header: &Header) -> Result<(), StoreError> {
    let invalid = |why: String| StoreError::Invalid {
        path: path.to_path_buf(),
        why,
    };
    let named = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| uuid::Uuid::parse_str(s).ok());
    if named != Some(header.id) {
        return Err(invalid(format!(
            "it says it is session {}, but its name says otherwise",
            header.id
        )));
    }
    if header.version != VERSION {
        return Err(invalid(format!(
            "it is of version {} (this aintern reads version {VERSION})",
            header.version
        )));
    }
    if !header.workspace.is_absolute() {
        return Err(invalid("its workspace is not an absolute path".into()));
    }
    if header.backend.len() > MAX_NAME || header.model.len() > MAX_NAME {
        return Err(invalid("its backend or model name is too long".into()));
    }
    Ok(())
}

/// A session as its records are read.
struct Reading {
    header: Header,
    messages: Vec<ChatMessage>,
    remembered: Vec<(ToolCallRequest, ApprovalDecision)>,
    usage: (u64, u64, u64),
    asked: usize,
    first_request: Option<String>,
    updated: DateTime<Utc>,
    /// What was undone since the last user message.
    pending_note: Option<String>,
    /// The decisions of rules and hooks, the last [`POLICY_KEPT`].
    policy: std::collections::VecDeque<String>,
}

/// Decisions of rules and hooks kept when a session is read (the latest).
const POLICY_KEPT: usize = 256;

impl Reading {
    /// A session with `header` and nothing else yet.
    fn new(header: Header) -> Reading {
        Reading {
            updated: header.created,
            header,
            messages: Vec::new(),
            remembered: Vec::new(),
            usage: (0, 0, 0),
            asked: 0,
            first_request: None,
            pending_note: None,
            policy: std::collections::VecDeque::new(),
        }
    }

    /// Take in one record after the header.
    fn add(&mut self, record: Record) {
        match record {
            Record::Session(_) => {}
            Record::Undone { at, note } => {
                self.updated = at;
                self.pending_note = Some(match self.pending_note.take() {
                    Some(earlier) => crate::sessions::bounded_note(&format!("{earlier}\n{note}")),
                    None => crate::sessions::bounded_note(&note),
                });
            }
            Record::Message { at, message } => {
                self.updated = at;
                if message.role == MessageRole::User {
                    // A request after an undo carried its note.
                    self.pending_note = None;
                    self.asked += 1;
                    self.first_request
                        .get_or_insert_with(|| message.content.to_string());
                }
                self.messages.push(message);
            }
            Record::History { at, messages } => {
                self.updated = at;
                self.messages = messages;
            }
            Record::Usage {
                at,
                prompt_tokens,
                completion_tokens,
                cached_prompt_tokens,
            } => {
                self.updated = at;
                self.usage.0 = self.usage.0.saturating_add(prompt_tokens);
                self.usage.1 = self.usage.1.saturating_add(completion_tokens);
                self.usage.2 = self.usage.2.saturating_add(cached_prompt_tokens);
            }
            Record::Remembered {
                at,
                request,
                decision,
            } => {
                self.updated = at;
                self.remembered.push((*request, decision));
            }
            Record::Policy { at, decision } => {
                self.updated = at;
                if self.policy.len() == POLICY_KEPT {
                    self.policy.pop_front();
                }
                self.policy
                    .push_back(crate::sessions::bounded_note(&decision));
            }
        }
    }

    /// The session read, with what was skipped as `notes`.
    fn into_saved(self, notes: Vec<String>) -> Saved {
        Saved {
            header: self.header,
            messages: self.messages,
            remembered: self.remembered,
            updated: self.updated,
            usage: self.usage,
            asked: self.asked,
            first_request: self.first_request.unwrap_or_default(),
            pending_note: self.pending_note,
            notes,
            policy: self.policy.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Writer;
    use super::*;
    use std::io::Write as _;
    use std::path::PathBuf;
    use uuid::Uuid;

    fn header(id: Uuid) -> Header {
        Header {
            id,
            created: Utc::now(),
            workspace: PathBuf::from("/w"),
            backend: "embedded".into(),
            model: "m".into(),
            version: VERSION,
        }
    }

    /// A session file in `dir` whose first line is `header`'s.
    fn file(dir: &Path, header: &Header) -> (PathBuf, Writer) {
        let store = super::super::Store {
            dir: dir.join("sessions"),
        };
        let writer = store.create(header).unwrap();
        (writer.path().to_path_buf(), writer)
    }

    fn raw(path: &Path, bytes: &[u8]) {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
    }

    const SMALL: Limits = Limits {
        line: 2000,
        file: 1 << 20,
        remembered: 2,
    };

    #[test]
    fn a_record_over_the_line_limit_is_skipped_and_the_rest_reads() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut w) = file(dir.path(), &header(Uuid::new_v4()));
        w.messages(&[ChatMessage::user("first")]).unwrap();
        // One record far over the limit, as one line.
        w.messages(&[ChatMessage::assistant("x".repeat(5_000))])
            .unwrap();
        // Not JSON at all.
        raw(&path, b"\x00\xffnot a record\n");
        w.messages(&[ChatMessage::assistant("second")]).unwrap();
        let saved = read_with(&path, &SMALL).unwrap();
        let texts: Vec<&str> = saved.messages.iter().map(|m| &*m.content).collect();
        assert_eq!(texts, ["first", "second"]);
        assert_eq!(
            saved.notes,
            [
                "the session file has 1 record longer than 2000 bytes: skipped",
                "the session file has 1 record that could not be read: skipped",
            ]
        );
        // With the real limits, the same file reads whole.
        assert_eq!(read(&path).unwrap().messages.len(), 3);
    }

    #[test]
    fn a_line_is_never_held_past_its_limit() {
        let mut reader = std::io::BufReader::with_capacity(8, &b"0123456789abcdef\nok\n"[..]);
        let mut line = Vec::new();
        assert!(matches!(
            next_line(&mut reader, &mut line, 10).unwrap(),
            Line::TooLong
        ));
        assert!(line.is_empty());
        assert!(matches!(
            next_line(&mut reader, &mut line, 10).unwrap(),
            Line::Whole
        ));
        assert_eq!(line, b"ok\n");
        assert!(matches!(
            next_line(&mut reader, &mut line, 10).unwrap(),
            Line::End
        ));
        let mut cut = std::io::BufReader::new(&b"no end"[..]);
        assert!(matches!(
            next_line(&mut cut, &mut line, 10).unwrap(),
            Line::Cut
        ));
    }

    #[test]
    fn a_file_over_its_limit_is_read_up_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut w) = file(dir.path(), &header(Uuid::new_v4()));
        for i in 0..50 {
            w.messages(&[ChatMessage::user(format!("question {i}"))])
                .unwrap();
        }
        let limits = Limits {
            file: 2048,
            ..LIMITS
        };
        let saved = read_with(&path, &limits).unwrap();
        assert!(
            !saved.messages.is_empty() && saved.messages.len() < 50,
            "{}",
            saved.messages.len()
        );
        assert_eq!(
            saved.notes,
            ["the session file is larger than 2048 bytes: only that much of it was read"]
        );
    }

    #[test]
    fn remembered_decisions_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut w) = file(dir.path(), &header(Uuid::new_v4()));
        for _ in 0..5 {
            w.append(&Record::Remembered {
                at: Utc::now(),
                request: Box::new(ToolCallRequest::new("read_file", serde_json::json!({}))),
                decision: ApprovalDecision::approve(),
            })
            .unwrap();
        }
        let saved = read_with(&path, &SMALL).unwrap();
        assert_eq!(saved.remembered.len(), 2, "{:?}", saved.notes);
        assert_eq!(
            saved.notes,
            ["the session file remembers more than 2 decisions: 3 more were ignored"]
        );
    }

    #[test]
    fn the_header_comes_first_and_describes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let invalid = |h: &Header| {
            let (path, _) = file(dir.path(), h);
            match read(&path) {
                Err(StoreError::Invalid { why, .. }) => why,
                other => panic!("{other:?}"),
            }
        };
        // Its id is another session's: the file at this name is not that session.
        let (path, _) = file(dir.path(), &header(Uuid::new_v4()));
        let other = dir
            .path()
            .join(format!("sessions/{}.jsonl", Uuid::new_v4()));
        std::fs::rename(&path, &other).unwrap();
        match read(&other) {
            Err(e @ StoreError::Invalid { .. }) => {
                assert!(e.to_string().contains("its name says otherwise"), "{e}")
            }
            r => panic!("{r:?}"),
        }
        let newer = Header {
            version: 2,
            ..header(Uuid::new_v4())
        };
        assert!(invalid(&newer).contains("version 2"));
        let relative = Header {
            workspace: PathBuf::from("somewhere/else"),
            ..header(Uuid::new_v4())
        };
        assert!(invalid(&relative).contains("not an absolute path"));
        let long = Header {
            model: "m".repeat(MAX_NAME + 1),
            ..header(Uuid::new_v4())
        };
        assert!(invalid(&long).contains("too long"));

        // A record before the header: not a session file.
        let id = Uuid::new_v4();
        let path = dir.path().join(format!("sessions/{id}.jsonl"));
        let mut text = serde_json::to_vec(&Record::Message {
            at: Utc::now(),
            message: ChatMessage::user("hi"),
        })
        .unwrap();
        text.push(b'\n');
        text.extend(serde_json::to_vec(&Record::Session(header(id))).unwrap());
        text.push(b'\n');
        std::fs::write(&path, text).unwrap();
        assert!(matches!(read(&path), Err(StoreError::NotASession(_))));
    }
}
