//! Where a person's input comes from: piped lines (or JSON commands with `--json`), a
//! person at a terminal (the line editor and single keys, see [`crate::console`]), or
//! nobody (approvals come from `--approve` alone).

use crate::console::{Console, Key, Keys};
use std::io::IsTerminal;
use tokio::io::{AsyncBufReadExt, AsyncReadExt};
use tokio::sync::mpsc::UnboundedReceiver;

/// The person's side of a session.
pub(crate) enum Input {
    /// Lines from stdin as they come (`None` once stdin ended): requests, answers to
    /// approvals, or JSON commands.
    Lines(Option<UnboundedReceiver<String>>),
    /// A person at a terminal.
    Console(Console),
    /// Nobody: stdin is not read.
    Nobody,
}

impl Input {
    /// A person at a terminal when stdin and stdout are terminals (and no JSON is
    /// printed), else the lines of stdin.
    pub(crate) fn person(json: bool) -> Result<Self, String> {
        if !json && std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
            Ok(Input::Console(Console::start(
                crate::console::history_file(),
            )?))
        } else {
            Ok(Input::Lines(Some(stdin_lines())))
        }
    }

    /// Whether someone can still answer an approval.
    pub(crate) fn can_answer(&self) -> bool {
        matches!(self, Input::Console(_) | Input::Lines(Some(_)))
    }

    /// Start reading single keys, for a person at a terminal.
    pub(crate) fn keys(&self) -> Option<Keys> {
        match self {
            Input::Console(console) => Some(console.keys()),
            _ => None,
        }
    }

    /// The next line of stdin; never resolves without one.
    pub(crate) async fn next_line(&mut self) -> Option<String> {
        match self {
            Input::Lines(Some(rx)) => rx.recv().await,
            _ => std::future::pending().await,
        }
    }

    /// Stdin ended.
    pub(crate) fn ended(&mut self) {
        if let Input::Lines(lines) = self {
            *lines = None;
        }
    }
}

/// The next key; never resolves without a reader.
pub(crate) async fn next_key(keys: &mut Option<Keys>) -> Option<Key> {
    match keys {
        Some(k) => k.next().await,
        None => std::future::pending().await,
    }
}

/// Longest stdin line taken (a longer one is reported and skipped).
const STDIN_LINE_CAP: usize = 16 * 1024 * 1024;

/// Lines read from stdin, as they come; `None` once stdin ends. A line that is not UTF-8,
/// or longer than [`STDIN_LINE_CAP`], is reported on stderr and skipped; the lines after it
/// still come.
fn stdin_lines() -> UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut input = tokio::io::BufReader::new(tokio::io::stdin());
        let mut number = 0u64;
        loop {
            let mut bytes = Vec::new();
            let read = (&mut input)
                .take(STDIN_LINE_CAP as u64 + 1)
                .read_until(b'\n', &mut bytes)
                .await;
            match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            number += 1;
            if bytes.len() > STDIN_LINE_CAP && !bytes.ends_with(b"\n") {
                // Skip the rest of the over-long line.
                let mut rest = Vec::new();
                while !rest.ends_with(b"\n") {
                    rest.clear();
                    match (&mut input)
                        .take(64 * 1024)
                        .read_until(b'\n', &mut rest)
                        .await
                    {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                eprintln!(
                    "aintern: stdin line {number} is longer than {STDIN_LINE_CAP} bytes; ignored"
                );
                continue;
            }
            while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                bytes.pop();
            }
            match String::from_utf8(bytes) {
                Ok(line) => {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
                Err(_) => eprintln!("aintern: stdin line {number} is not UTF-8 text; ignored"),
            }
        }
    });
    rx
}
