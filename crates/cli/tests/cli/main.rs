//! End-to-end tests of the `aintern` binary.
//!
//! This file holds the helpers (a workspace with its own config folder, running the binary,
//! reading its JSON events); the tests are in one module per theme.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod acp;
mod acp_bounds;
mod catalog;
mod chat;
mod chat_session;
mod configuration;
mod default_model;
mod docs;
mod editor;
mod eval;
mod hostile_git;
mod mcp;
mod model;
mod output;
mod parse;
mod permissions;
mod policy;
mod project;
mod run;
mod secrets;
mod security;
mod server;
mod sessions;
mod sessions_files;
mod steering;
mod template;
mod undo;

use core_models::AgentEvent;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};

/// The binary, with the user's config and data folders in `home` (never the real ones).
fn bin(home: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aintern"));
    command
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_DATA_HOME", home.join("data"));
    command
}

/// A config home shared by the tests that save nothing in it.
fn shared_home() -> &'static std::path::Path {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn aintern(args: &[&str], stdin: &[u8]) -> Output {
    aintern_in(shared_home(), args, stdin)
}

fn aintern_in(home: &std::path::Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = bin(home)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // aintern may refuse bad usage and exit before reading its input.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

struct Workspace {
    dir: tempfile::TempDir,
    /// The user's config folder for the runs over this workspace.
    home: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "Buy milk. Call Bob.\n").unwrap();
        Workspace {
            dir,
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    /// Write a script whose responses are these texts (each one chunk).
    fn script(&self, responses: &[&str]) -> String {
        let file = self.dir.path().join("script.json");
        let responses: Vec<Value> = responses
            .iter()
            .map(|r| json!({"chunks": [r], "delay_ms": 0}))
            .collect();
        std::fs::write(&file, json!({"responses": responses}).to_string()).unwrap();
        format!("script:{}", file.display())
    }
}

fn call(tool: &str, args: Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": tool, "arguments": args})
    )
}

fn events(stdout: &[u8]) -> Vec<AgentEvent> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not an event ({e}): {l}")))
        .collect()
}

/// A successful `run --json`: its events and the final `agent_complete`.
fn completed(out: &Output) -> (Vec<AgentEvent>, core_models::AgentCompleteEvent) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = events(&out.stdout);
    let Some(AgentEvent::AgentComplete(done)) = events.last().cloned() else {
        panic!("{:?}", events.last())
    };
    (events, done)
}

fn results(events: &[AgentEvent]) -> Vec<core_models::ToolResultEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// Start `aintern run --json` over `ws` with `script`; hand back the child, its stdin and
/// its stdout lines.
fn spawn_json(
    ws: &Workspace,
    script: &str,
    message: &str,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let mut child = bin(ws.home.path())
        .args([
            "run",
            "--json",
            "--workspace",
            ws.path(),
            "--backend",
            script,
            message,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, stdout)
}

fn run_json(
    ws: &Workspace,
    script: &str,
    extra: &[&str],
    stdin: &[u8],
) -> (Output, Vec<AgentEvent>) {
    let mut args = vec![
        "run",
        "--json",
        "--workspace",
        ws.path(),
        "--backend",
        script,
    ];
    args.extend_from_slice(extra);
    args.push("do it");
    let out = aintern_in(ws.home.path(), &args, stdin);
    let ev = events(&out.stdout);
    (out, ev)
}

/// The text of each tool result, in order.
fn result_texts(events: &[AgentEvent]) -> Vec<String> {
    results(events)
        .iter()
        .map(|r| match &r.result.error_message {
            Some(e) => format!("error: {e}"),
            None => r.result.content.clone(),
        })
        .collect()
}
