//! The person at a terminal: requests are typed in a line editor (rustyline: arrow keys,
//! history kept across sessions, multi-line input, completion of slash commands), and
//! while a request runs, keys are read one by one without echo — an approval is one key,
//! and a line typed meanwhile is gathered out of sight (the status line shows it) instead
//! of being echoed across the model's output.
//!
//! One thread owns the terminal's input for the whole run, so the editor and the key
//! reader never read at once. Ctrl-C stays a signal while keys are read (it cancels the
//! request); in the editor it is a key (the chat's "press again to leave").

use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices, Termios};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History as _};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Editor, Helper};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// One key typed while a request runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// A printable character.
    Char(char),
    /// Enter.
    Enter,
    /// Backspace.
    Backspace,
    /// Ctrl-D.
    EndOfInput,
    /// Anything else (arrows, function keys, other controls): ignored.
    Other,
}

/// What the editor read.
#[derive(Debug)]
pub(crate) enum Read {
    /// A line (or several, for multi-line input).
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D on an empty line, or the terminal is gone.
    Eof,
}

enum Op {
    ReadLine {
        prompt: String,
        initial: String,
        reply: oneshot::Sender<Read>,
    },
    Keys {
        stop: Arc<AtomicBool>,
        keys: mpsc::UnboundedSender<Key>,
        done: oneshot::Sender<()>,
    },
}

/// The terminal's input, owned by one thread.
pub(crate) struct Console {
    ops: std::sync::mpsc::Sender<Op>,
}

/// Keys being read: they stop (and the terminal is given back) when dropped.
pub(crate) struct Keys {
    stop: Arc<AtomicBool>,
    keys: mpsc::UnboundedReceiver<Key>,
    done: Option<oneshot::Receiver<()>>,
}

impl Keys {
    /// The next key; `None` once the terminal is gone.
    pub(crate) async fn next(&mut self) -> Option<Key> {
        self.keys.recv().await
    }

    /// Stop reading keys and wait until the terminal is back as it was.
    pub(crate) async fn finish(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The terminal's settings before keys were read, put back by [`restore_terminal`] when
/// the program leaves in the middle.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// Put the terminal back as it was if keys were being read (called before leaving).
pub(crate) fn restore_terminal() {
    let saved = SAVED.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(saved) = saved {
        let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &saved);
    }
}

/// The file chat history is kept in, beside the sessions (a secret to commands too).
pub(crate) fn history_file() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("aintern").join("history.txt"))
}

impl Console {
    /// Start the thread; `history` is where lines typed in the editor are kept.
    pub(crate) fn start(history: Option<PathBuf>) -> Result<Self, String> {
        let config = rustyline::Config::builder()
            .max_history_size(1_000)
            .map_err(|e| format!("cannot set up the line editor: {e}"))?
            .auto_add_history(false)
            .build();
        let mut lines = DefaultHistory::with_config(&config);
        if let Some(file) = &history {
            if file.exists() {
                if let Err(e) = lines.load(file) {
                    tracing::debug!(error = %e, "history not loaded");
                }
            }
        }
        let (ops, rx) = std::sync::mpsc::channel::<Op>();
        std::thread::Builder::new()
            .name("console".into())
            .spawn(move || serve(&config, lines, history, &rx))
            .map_err(|e| format!("cannot start the console: {e}"))?;
        Ok(Console { ops })
    }

    /// Read a request in the editor, `initial` already typed.
    pub(crate) async fn read_line(&self, prompt: &str, initial: &str) -> Read {
        let (reply, answer) = oneshot::channel();
        let op = Op::ReadLine {
            prompt: prompt.to_string(),
            initial: initial.to_string(),
            reply,
        };
        if self.ops.send(op).is_err() {
            return Read::Eof;
        }
        answer.await.unwrap_or(Read::Eof)
    }

    /// Read keys one by one, without echo, until the returned reader is finished.
    pub(crate) fn keys(&self) -> Keys {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, keys) = mpsc::unbounded_channel();
        let (done_tx, done) = oneshot::channel();
        let op = Op::Keys {
            stop: Arc::clone(&stop),
            keys: tx,
            done: done_tx,
        };
        let done = self.ops.send(op).is_ok().then_some(done);
        Keys { stop, keys, done }
    }
}

fn serve(
    config: &rustyline::Config,
    mut lines: DefaultHistory,
    file: Option<PathBuf>,
    ops: &std::sync::mpsc::Receiver<Op>,
) {
    while let Ok(op) = ops.recv() {
        match op {
            Op::ReadLine {
                prompt,
                initial,
                reply,
            } => {
                // A fresh editor for each line: rustyline takes over SIGINT while an
                // editor lives, and Ctrl-C must reach the agent while a request runs.
                let history = std::mem::replace(&mut lines, DefaultHistory::with_config(config));
                let mut editor: Editor<ChatHelper, DefaultHistory> =
                    match Editor::with_history(config.clone(), history) {
                        Ok(editor) => editor,
                        Err(e) => {
                            tracing::warn!(error = %e, "the line editor failed");
                            let _ = reply.send(Read::Eof);
                            continue;
                        }
                    };
                editor.set_helper(Some(ChatHelper));
                let read = match editor.readline_with_initial(&prompt, (&initial, "")) {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            let history = editor.history_mut();
                            let _ = history.add(&line);
                            if let Some(file) = &file {
                                save_history(history, file);
                            }
                        }
                        Read::Line(line)
                    }
                    Err(ReadlineError::Interrupted) => Read::Interrupted,
                    Err(ReadlineError::Eof) => Read::Eof,
                    Err(e) => {
                        tracing::warn!(error = %e, "the line editor failed");
                        Read::Eof
                    }
                };
                lines =
                    std::mem::replace(editor.history_mut(), DefaultHistory::with_config(config));
                drop(editor);
                let _ = reply.send(read);
            }
            Op::Keys { stop, keys, done } => {
                if let Err(e) = read_keys(&stop, &keys) {
                    tracing::debug!(error = %e, "keys not read");
                }
                restore_terminal();
                let _ = done.send(());
            }
        }
    }
}

/// Add what was typed to the history file, readable by the person alone.
fn save_history(history: &mut DefaultHistory, file: &std::path::Path) {
    if let Some(dir) = file.parent() {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
    }
    if let Err(e) = history.append(file) {
        tracing::debug!(error = %e, "history not saved");
    }
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600));
}

/// Read keys from the terminal, without echo and without waiting for Enter (signals
/// still come from Ctrl-C), until `stop`.
fn read_keys(stop: &AtomicBool, keys: &mpsc::UnboundedSender<Key>) -> nix::Result<()> {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let original = termios::tcgetattr(fd)?;
    let mut raw = original.clone();
    raw.local_flags
        .remove(LocalFlags::ICANON | LocalFlags::ECHO);
    raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(original);
    termios::tcsetattr(fd, SetArg::TCSANOW, &raw)?;
    let mut decoder = KeyDecoder::default();
    let mut buf = [0u8; 256];
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(50u8)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
        let n = match nix::unistd::read(fd, &mut buf) {
            Ok(0) => {
                let _ = keys.send(Key::EndOfInput);
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => continue,
            Err(e) => return Err(e),
        };
        for key in decoder.push(&buf[..n]) {
            if keys.send(key).is_err() {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Bytes from a terminal to keys: UTF-8 characters, and escape sequences (arrows,
/// function keys) swallowed whole.
#[derive(Debug, Default)]
pub(crate) struct KeyDecoder {
    pending: Vec<u8>,
    /// Inside an escape sequence: 1 after ESC, 2 inside a CSI or SS3 sequence.
    escape: u8,
}

impl KeyDecoder {
    /// The keys `bytes` complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<Key> {
        let mut out = Vec::new();
        for &b in bytes {
            match self.escape {
                1 => {
                    self.escape = if b == b'[' || b == b'O' { 2 } else { 0 };
                    if self.escape == 0 {
                        out.push(Key::Other);
                    }
                    continue;
                }
                2 => {
                    if (0x40..=0x7e).contains(&b) {
                        self.escape = 0;
                        out.push(Key::Other);
                    }
                    continue;
                }
                _ => {}
            }
            match b {
                0x1b => {
                    self.pending.clear();
                    self.escape = 1;
                }
                b'\r' | b'\n' => out.push(Key::Enter),
                0x7f | 0x08 => out.push(Key::Backspace),
                0x04 => out.push(Key::EndOfInput),
                b if b < 0x20 => out.push(Key::Other),
                b => {
                    self.pending.push(b);
                    match std::str::from_utf8(&self.pending) {
                        Ok(s) => {
                            out.extend(s.chars().map(Key::Char));
                            self.pending.clear();
                        }
                        Err(e) if e.error_len().is_some() || self.pending.len() >= 4 => {
                            self.pending.clear();
                            out.push(Key::Other);
                        }
                        Err(_) => {}
                    }
                }
            }
        }
        out
    }
}

/// The slash commands of the chat, for completion and `/help`.
pub(crate) const COMMANDS: [(&str, &str); 15] = [
    ("/help", "this list"),
    ("/exit", "leave (also Ctrl-D, or Ctrl-C twice)"),
    (
        "/clear",
        "start a new conversation (the current one stays saved)",
    ),
    ("/sessions", "the saved sessions, newest first"),
    ("/resume", "/resume ID: continue a saved session"),
    (
        "/model",
        "the model, its backend and context window; /model NAME|llama:FILE|openai:URL: go on with another",
    ),
    ("/tools", "the tools the model may call, with their risk"),
    ("/context", "where the context window's tokens go"),
    (
        "/approve",
        "/approve ask|all|safe|none: how calls are approved",
    ),
    ("/output", "the last tool's whole output"),
    ("/files", "the files changed since the chat began"),
    (
        "/diff",
        "what this conversation changed in the workspace, as a diff",
    ),
    (
        "/compact",
        "replace the conversation so far with the model's summary of it",
    ),
    (
        "/undo",
        "restore the workspace to before the last request (asks first)",
    ),
    (
        "/rewind",
        "this session's requests and what each changed; /rewind N: restore to before N",
    ),
];

/// Completion of slash commands, and multi-line input: a line ending in `\` goes on.
struct ChatHelper;

impl Helper for ChatHelper {}
impl Hinter for ChatHelper {
    type Hint = String;
}
impl Highlighter for ChatHelper {}

impl Validator for ChatHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        // An unclosed ``` block, or a trailing backslash, continues on the next line.
        if input.ends_with('\\') || input.matches("```").count() % 2 == 1 {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

impl Completer for ChatHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let typed = &line[..pos];
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Ok((pos, Vec::new()));
        }
        let found = COMMANDS
            .iter()
            .filter(|(name, _)| name.starts_with(typed))
            .map(|(name, _)| Pair {
                display: (*name).to_string(),
                replacement: format!("{name} "),
            })
            .collect();
        Ok((0, found))
    }
}

/// A line typed in the editor, as sent: the backslashes that continued it removed.
pub(crate) fn joined(line: &str) -> String {
    line.replace("\\\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bytes: &[&[u8]], expected: &[Key]) {
        let mut d = KeyDecoder::default();
        let keys: Vec<Key> = bytes.iter().flat_map(|b| d.push(b)).collect();
        assert_eq!(keys, expected, "{bytes:?}");
    }

    #[test]
    fn bytes_become_keys_and_escape_sequences_are_swallowed() {
        check(&[b"y"], &[Key::Char('y')]);
        check(&[b"hi\r"], &[Key::Char('h'), Key::Char('i'), Key::Enter]);
        // Arrows and function keys are one ignored key each, even split across reads.
        check(&[b"\x1b[A", b"\x1b[1;5", b"C", b"\x1bOP"], &[Key::Other; 3]);
        check(
            &[b"a\x7fb"],
            &[Key::Char('a'), Key::Backspace, Key::Char('b')],
        );
        // UTF-8 split across reads, and invalid bytes.
        check(
            &["é".as_bytes()[..1].as_ref(), &"é".as_bytes()[1..]],
            &[Key::Char('é')],
        );
        check(&[b"\xff", b"x"], &[Key::Other, Key::Char('x')]);
        check(&[b"\x04\x01"], &[Key::EndOfInput, Key::Other]);
    }

    #[test]
    fn continued_lines_are_joined() {
        assert_eq!(joined("one\\\ntwo"), "one\ntwo");
        assert_eq!(joined("plain"), "plain");
    }
}
