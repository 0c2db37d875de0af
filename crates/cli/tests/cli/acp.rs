//! `aintern acp`: raw JSON-RPC lines (bad input survived, stdout protocol-only), and real
//! clients no one here wrote — the official TypeScript SDK's client side and `acpx` —
//! driving it with the scripted backend.

use super::{bin, call, Workspace};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `aintern acp` over `ws` with `script`, for JSON lines written and read by the test.
pub(crate) struct Raw {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Raw {
    fn start(ws: &Workspace, script: &str) -> Raw {
        Raw::with_args(ws, &["--backend", script])
    }

    /// `aintern acp ARGS…` over `ws`.
    pub(crate) fn with_args(ws: &Workspace, args: &[&str]) -> Raw {
        let mut child = bin(ws.home.path())
            .arg("acp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Raw {
            child,
            stdin,
            lines,
        }
    }

    pub(crate) fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line, which must be one JSON-RPC message.
    pub(crate) fn next(&self) -> Value {
        self.next_within(Duration::from_secs(30))
    }

    /// The next line within `wait`.
    pub(crate) fn next_within(&self, wait: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(wait)
            .expect("a message from the agent");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-message ({e}): {line}"))
    }

    /// The response with `id`, skipping notifications.
    pub(crate) fn response(&self, id: u64) -> Value {
        loop {
            let message = self.next();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }
}

impl Raw {
    /// The most memory the agent's process has held so far (VmHWM), in bytes.
    pub(crate) fn peak_memory(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn initialize(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    .to_string()
}

#[test]
fn bad_input_is_answered_and_the_agent_keeps_serving() {
    let ws = Workspace::new();
    let script = ws.script(&["Hello from AIntern."]);
    let mut acp = Raw::start(&ws, &script);
    acp.send(&initialize(1));
    let init = acp.response(1);
    assert_eq!(init["result"]["protocolVersion"], json!(1), "{init}");
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"],
        json!(true)
    );
    assert_eq!(init["result"]["agentInfo"]["name"], json!("aintern"));

    acp.send("{this is not json");
    let parse = acp.next();
    assert_eq!(parse["error"]["code"], json!(-32700), "{parse}");
    acp.send(r#"{"jsonrpc": "2.0", "id": 2, "method": "no/such_method", "params": {}}"#);
    assert_eq!(acp.response(2)["error"]["code"], json!(-32601));
    acp.send(r#"{"jsonrpc": "2.0", "method": "no/such_notification", "params": {}}"#);
    acp.send(r#"{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}"#);
    assert!(acp.response(3)["error"]["code"].is_i64());
    acp.send(r#"{"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": "relative/dir", "mcpServers": []}}"#);
    let refused = acp.response(4);
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
    acp.send(r#"{"jsonrpc": "2.0", "id": 5, "method": "session/new", "params": {"cwd": 7}}"#);
    assert_eq!(acp.response(5)["error"]["code"], json!(-32602));
    // Still serving: a session and a prompt.
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "session/new",
                     "params": {"cwd": ws.path(), "mcpServers": []}})
        .to_string(),
    );
    let session = acp.response(6);
    let id = session["result"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        session["result"]["modes"]["currentModeId"],
        json!("ask"),
        "{session}"
    );
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
                     "params": {"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}})
        .to_string(),
    );
    let mut text = String::new();
    let done = loop {
        let message = acp.next();
        if message["method"] == json!("session/update") {
            let update = &message["params"]["update"];
            if update["sessionUpdate"] == json!("agent_message_chunk") {
                text.push_str(update["content"]["text"].as_str().unwrap());
            }
        } else if message["id"] == json!(7) {
            break message;
        }
    };
    assert_eq!(done["result"]["stopReason"], json!("end_turn"), "{done}");
    assert_eq!(text, "Hello from AIntern.");
}

// --- real clients --------------------------------------------------------------------------

/// The installed clients (scripts/fetch-acp-clients), or `None` when they are missing and
/// not required.
pub(crate) fn clients() -> Option<PathBuf> {
    match std::env::var_os("AINTERN_ACP_CLIENTS") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var_os("AINTERN_REQUIRE_ACP_CLIENTS").is_some() => {
            panic!("AINTERN_ACP_CLIENTS is not set (scripts/fetch-acp-clients)")
        }
        None => {
            eprintln!("skipped: the ACP clients are not installed (scripts/fetch-acp-clients)");
            None
        }
    }
}

/// Run the SDK client over `steps`; one result per step.
fn drive(clients: &Path, ws: &Workspace, script: &str, steps: &Value) -> Vec<Value> {
    drive_with(clients, ws, script, &[], steps)
}

/// [`drive`], with `extra` arguments for `aintern acp`.
pub(crate) fn drive_with(
    clients: &Path,
    ws: &Workspace,
    script: &str,
    extra: &[&str],
    steps: &Value,
) -> Vec<Value> {
    let scenario = ws.home.path().join("scenario.json");
    std::fs::write(&scenario, steps.to_string()).unwrap();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/client.mjs");
    let out = Command::new("node")
        .arg(client)
        .arg(clients)
        .arg(&scenario)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_aintern"))
        .args(["acp", "--backend", script])
        .args(extra)
        .env("XDG_CONFIG_HOME", ws.home.path())
        .env("XDG_DATA_HOME", ws.home.path().join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &results {
        assert_eq!(r["sdkErrors"], json!([]), "the SDK dropped a message: {r}");
    }
    results
}

pub(crate) fn updates<'a>(step: &'a Value, kind: &str) -> Vec<&'a Value> {
    step["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == json!(kind))
        .collect()
}

#[test]
fn the_official_sdk_drives_reads_writes_approvals_and_load() {
    let Some(clients) = clients() else { return };
    let ws = Workspace::new();
    let root = ws.dir.path().canonicalize().unwrap();
    let write = call(
        "write_file",
        json!({"path": "out.txt", "content": "new text\n"}),
    );
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        "The notes say to buy milk.",
        &write,
        "Not written.",
        &write,
        "Written.",
    ]);
    let cwd = root.to_str().unwrap();
    let steps = json!([
        {"op": "initialize", "fs": false},
        {"op": "new", "cwd": cwd},
        {"op": "prompt", "text": "What do the notes say?"},
        {"op": "prompt", "text": "Write out.txt", "permission": "reject_once"},
        {"op": "prompt", "text": "Write out.txt", "permission": "allow_once"},
    ]);
    let r = drive(&clients, &ws, &script, &steps);
    assert_eq!(r[0]["result"]["protocolVersion"], json!(1), "{}", r[0]);
    let id = r[1]["result"]["sessionId"].as_str().unwrap().to_string();

    // The read: a tool call of kind read at the file's absolute path, then its result.
    let read = &r[2];
    assert_eq!(read["result"]["stopReason"], json!("end_turn"), "{read}");
    let call = updates(read, "tool_call")[0];
    assert_eq!(call["kind"], json!("read"), "{call}");
    assert_eq!(call["status"], json!("pending"), "{call}");
    assert_eq!(
        call["locations"][0]["path"],
        json!(root.join("notes.txt")),
        "{call}"
    );
    assert_eq!(call["rawInput"]["path"], json!("notes.txt"));
    let done = updates(read, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == json!("completed"))
        .unwrap_or_else(|| panic!("{read}"));
    assert_eq!(done["toolCallId"], call["toolCallId"]);
    assert!(
        done["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Buy milk."),
        "{done}"
    );
    assert!(!updates(read, "agent_message_chunk").is_empty());

    // The write, refused: asked with the four options and the diff, failed, not written.
    let refused = &r[3];
    let asked = &refused["permissions"][0];
    let kinds: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    let diff = asked["toolCall"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == json!("diff"))
        .unwrap_or_else(|| panic!("{asked}"));
    assert_eq!(diff["path"], json!(root.join("out.txt")));
    assert!(diff.as_object().unwrap().contains_key("oldText") && diff["oldText"].is_null());
    assert_eq!(diff["newText"], json!("new text\n"));
    let failed = updates(refused, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == json!("failed"))
        .unwrap_or_else(|| panic!("{refused}"));
    let why = failed["content"][0]["content"]["text"].as_str().unwrap();
    assert!(why.contains("rejected in the editor"), "{failed}");

    // Allowed: completed, with the diff, written.
    let allowed = &r[4];
    let done = updates(allowed, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == json!("completed"))
        .unwrap_or_else(|| panic!("{allowed}"));
    let diff = done["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == json!("diff"))
        .unwrap_or_else(|| panic!("{done}"));
    assert_eq!(diff["newText"], json!("new text\n"), "{done}");
    // A new file: the old text is there, and null.
    let fields = diff.as_object().unwrap();
    assert!(
        fields.contains_key("oldText") && diff["oldText"].is_null(),
        "{done}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("out.txt")).unwrap(),
        "new text\n"
    );

    // A new process loads the session by id: the conversation is replayed first.
    let again = ws.script(&["Continued."]);
    let steps = json!([
        {"op": "initialize"},
        {"op": "load", "session": id, "cwd": cwd},
        {"op": "prompt", "text": "And now?"},
    ]);
    let r = drive(&clients, &ws, &again, &steps);
    assert!(r[1]["error"].is_null(), "{}", r[1]);
    let users: Vec<&str> = updates(&r[1], "user_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        users,
        ["What do the notes say?", "Write out.txt", "Write out.txt"],
        "{}",
        r[1]
    );
    assert!(!updates(&r[1], "tool_call").is_empty());
    assert_eq!(r[2]["result"]["stopReason"], json!("end_turn"), "{}", r[2]);
}

#[test]
fn cancel_ends_the_prompt_promptly_and_read_only_mode_refuses_changes() {
    let Some(clients) = clients() else { return };
    let ws = Workspace::new();
    let root = ws.dir.path().canonicalize().unwrap();
    let slow = ws.dir.path().join("slow.json");
    let words: Vec<String> = (0..400).map(|i| format!("w{i} ")).collect();
    std::fs::write(
        &slow,
        json!({"responses": [
            {"chunks": words, "delay_ms": 25},
            {"chunks": [call("write_file", json!({"path": "x.txt", "content": "x"}))], "delay_ms": 0},
            {"chunks": ["No."], "delay_ms": 0},
            {"chunks": [call("run_command", json!({"command": "touch ran.txt"}))], "delay_ms": 0},
            {"chunks": ["No."], "delay_ms": 0},
            {"chunks": [call("write_file", json!({"path": "y.txt", "content": "y"}))], "delay_ms": 0},
            {"chunks": ["Should not be asked."], "delay_ms": 0}
        ]})
        .to_string(),
    )
    .unwrap();
    let script = format!("script:{}", slow.display());
    let steps = json!([
        {"op": "initialize"},
        {"op": "new", "cwd": root},
        {"op": "prompt", "text": "Talk a lot", "cancelAfterMs": 400},
        {"op": "mode", "mode": "read-only"},
        {"op": "prompt", "text": "Write x.txt", "permission": "allow_once"},
        {"op": "prompt", "text": "Run it", "permission": "allow_once"},
        {"op": "mode", "mode": "yolo"},
        {"op": "mode", "mode": "ask"},
        {"op": "prompt", "text": "Write y.txt", "permission": "cancelled"},
    ]);
    let started = Instant::now();
    let r = drive(&clients, &ws, &script, &steps);
    let cancelled = &r[2];
    assert_eq!(
        cancelled["result"]["stopReason"],
        json!("cancelled"),
        "{cancelled}"
    );
    assert!(
        cancelled["cancelToStopMs"].as_u64().unwrap() < 2000,
        "{cancelled}"
    );
    assert!(r[3]["error"].is_null(), "{}", r[3]);
    for step in [&r[4], &r[5]] {
        assert_eq!(
            step["permissions"],
            json!([]),
            "read-only asks nothing: {step}"
        );
        assert_eq!(step["result"]["stopReason"], json!("end_turn"), "{step}");
    }
    assert!(!root.join("x.txt").exists() && !root.join("ran.txt").exists());
    assert_eq!(r[6]["error"]["code"], json!(-32602), "{}", r[6]);
    // A permission question the client answers "cancelled" ends the turn, cancelled.
    assert_eq!(r[8]["permissions"].as_array().unwrap().len(), 1, "{}", r[8]);
    assert_eq!(r[8]["result"]["stopReason"], json!("cancelled"), "{}", r[8]);
    assert!(!root.join("y.txt").exists());
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn acpx_runs_a_one_shot_prompt() {
    let Some(clients) = clients() else { return };
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        "The notes mention milk.",
    ]);
    let agent = format!("{} acp --backend {script}", env!("CARGO_BIN_EXE_aintern"));
    let out = Command::new("node")
        .arg(clients.join("node_modules/acpx/dist/cli.js"))
        .args([
            "--format",
            "quiet",
            "--cwd",
            ws.path(),
            "--agent",
            &agent,
            "exec",
            "What do the notes say?",
        ])
        .current_dir(ws.dir.path())
        .env("XDG_CONFIG_HOME", ws.home.path())
        .env("XDG_DATA_HOME", ws.home.path().join("data"))
        .env("HOME", ws.home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("The notes mention milk."), "{stdout}");
}

#[test]
fn files_go_through_the_client_and_a_path_outside_is_refused_first() {
    let Some(clients) = clients() else { return };
    let ws = Workspace::new();
    let root = ws.dir.path().canonicalize().unwrap();
    std::fs::write(root.join("list.txt"), "cats and birds\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET").unwrap();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        "Read.",
        &call(
            "edit_file",
            json!({"path": "list.txt", "search": "cats", "replace": "dogs"}),
        ),
        "Edited.",
        &call("read_file", json!({"path": secret.to_str().unwrap()})),
        "Refused.",
        &call("read_file", json!({"path": "../secret.txt"})),
        "Refused again.",
    ]);
    let notes = root.join("notes.txt");
    let list = root.join("list.txt");
    let steps = json!([
        {"op": "initialize", "fs": true},
        {"op": "new", "cwd": root},
        {"op": "prompt", "text": "Read the notes", "buffers": {notes.to_str().unwrap(): "UNSAVED buffer text"}},
        {"op": "prompt", "text": "Edit the list", "permission": "allow_once",
         "buffers": {list.to_str().unwrap(): "cats in the buffer\n"}},
        {"op": "prompt", "text": "Read the secret"},
        {"op": "prompt", "text": "Read it another way"},
    ]);
    let r = drive(&clients, &ws, &script, &steps);
    // The read went through the client and saw its buffer.
    let read = &r[2];
    assert_eq!(read["reads"][0]["path"], json!(notes), "{read}");
    let done = updates(read, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == json!("completed"))
        .unwrap_or_else(|| panic!("{read}"));
    assert!(
        done["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("UNSAVED buffer text"),
        "{done}"
    );
    // The edit read the buffer and wrote through the client; the disk is untouched.
    let edit = &r[3];
    assert_eq!(edit["writes"][0]["path"], json!(list), "{edit}");
    assert_eq!(
        edit["writes"][0]["content"],
        json!("dogs in the buffer\n"),
        "{edit}"
    );
    assert_eq!(std::fs::read_to_string(&list).unwrap(), "cats and birds\n");
    // Paths outside: refused before the client is asked.
    for step in [&r[4], &r[5]] {
        assert_eq!(step["reads"], json!([]), "{step}");
        assert!(
            updates(step, "tool_call_update")
                .iter()
                .any(|u| u["status"] == json!("failed")),
            "{step}"
        );
        assert!(!step.to_string().contains("TOP SECRET"), "{step}");
    }
}

#[test]
fn an_mcp_server_the_client_passes_runs_under_the_same_approvals() {
    let Some(clients) = clients() else { return };
    let Some(servers) = test_support::mcp_servers::dir() else {
        return;
    };
    let ws = Workspace::new();
    let root = ws.dir.path().canonicalize().unwrap();
    let everything = test_support::mcp_servers::node_bin(&servers, "mcp-server-everything");
    let script = ws.script(&[
        &call("everything__echo", json!({"message": "hello from MCP"})),
        "Echoed.",
    ]);
    let steps = json!([
        {"op": "initialize"},
        {"op": "new", "cwd": root, "mcpServers": [
            {"name": "everything", "command": everything, "args": ["stdio"], "env": []}
        ]},
        {"op": "prompt", "text": "Echo it", "permission": "allow_once"},
    ]);
    let r = drive(&clients, &ws, &script, &steps);
    assert!(r[1]["error"].is_null(), "{}", r[1]);
    let step = &r[2];
    // Asked like any MCP tool (medium risk by default), then run.
    assert_eq!(step["permissions"].as_array().unwrap().len(), 1, "{step}");
    let done = updates(step, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == json!("completed"))
        .unwrap_or_else(|| panic!("{step}"));
    assert!(done.to_string().contains("hello from MCP"), "{done}");
}

// --- raw sessions: replay and diffs ---------------------------------------------------------

impl Raw {
    /// A new session over `ws` (after `initialize`), by request `id`: its id.
    fn new_session(&mut self, ws: &Workspace, id: u64) -> String {
        self.send(&initialize(id));
        self.response(id);
        self.send(
            &json!({"jsonrpc": "2.0", "id": id + 1, "method": "session/new",
                    "params": {"cwd": ws.path(), "mcpServers": []}})
            .to_string(),
        );
        self.response(id + 1)["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Every message up to the response to request `id`, which is left out; permission
    /// requests are answered with "allow-once".
    fn until_response(&mut self, id: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.next();
            if message["id"] == json!(id) && message.get("method").is_none() {
                return seen;
            }
            if message["method"] == json!("session/request_permission") {
                let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}});
                self.send(&answer.to_string());
            }
            seen.push(message);
        }
    }

    /// Prompt `session` with `text` as request `id`: the messages it brought.
    fn prompt(&mut self, session: &str, id: u64, text: &str) -> Vec<Value> {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
                    "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
            .to_string(),
        );
        self.until_response(id)
    }
}

/// The session updates of `kind` among `messages`.
fn updates_of<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| m["method"] == json!("session/update"))
        .map(|m| &m["params"]["update"])
        .filter(|u| u["sessionUpdate"] == json!(kind))
        .collect()
}

#[test]
fn a_loaded_session_titles_its_calls_as_they_were_titled_live() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        "The notes say to buy milk.",
    ]);
    let mut acp = Raw::start(&ws, &script);
    let session = acp.new_session(&ws, 1);
    let live = acp.prompt(&session, 3, "What do the notes say?");
    let live = updates_of(&live, "tool_call");
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["title"], json!("Read notes.txt"), "{}", live[0]);
    drop(acp);

    // Another agent process loads the session: the call is replayed, titled the same.
    let mut acp = Raw::start(&ws, &ws.script(&[]));
    acp.send(&initialize(1));
    acp.response(1);
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/load",
                "params": {"sessionId": session, "cwd": ws.path(), "mcpServers": []}})
        .to_string(),
    );
    let replayed = acp.until_response(2);
    let calls = updates_of(&replayed, "tool_call");
    assert_eq!(calls.len(), 1, "{replayed:?}");
    assert_eq!(calls[0]["title"], json!("Read notes.txt"), "{}", calls[0]);
    assert_eq!(calls[0]["kind"], json!("read"), "{}", calls[0]);
}

/// The diff content blocks among `messages` (tool calls, their updates, permission
/// requests), each with its call's id.
fn diffs(messages: &[Value]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for m in messages {
        let call = if m["method"] == json!("session/request_permission") {
            &m["params"]["toolCall"]
        } else {
            &m["params"]["update"]
        };
        for c in call["content"].as_array().into_iter().flatten() {
            if c["type"] == json!("diff") {
                let id = call["toolCallId"].as_str().unwrap_or_default();
                out.push((id.to_string(), c.clone()));
            }
        }
    }
    out
}

/// The ids of the calls among `messages` that ran (went in progress).
fn ran(messages: &[Value]) -> Vec<String> {
    updates_of(messages, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == json!("in_progress"))
        .filter_map(|u| u["toolCallId"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_call_that_changes_nothing_sends_no_diff() {
    let ws = Workspace::new();
    let same = call(
        "write_file",
        json!({"path": "notes.txt", "content": "Buy milk. Call Bob.\n"}),
    );
    let edit = call(
        "edit_file",
        json!({"path": "notes.txt", "search": "milk", "replace": "bread"}),
    );
    let read = call("read_file", json!({"path": "notes.txt"}));
    let write = call("write_file", json!({"path": "out.txt", "content": "new\n"}));
    let script = ws.script(&[
        &same,
        "Unchanged.",
        &edit,
        &format!("{edit}{read}"),
        "Edited once.",
        &format!("{write}{write}"),
        "Written once.",
    ]);
    let mut acp = Raw::start(&ws, &script);
    let session = acp.new_session(&ws, 1);

    // A write of the text the file holds: it runs and changes nothing.
    let seen = acp.prompt(&session, 3, "write the notes as they are");
    assert_eq!(ran(&seen).len(), 1, "{seen:?}");
    assert!(diffs(&seen).is_empty(), "{:?}", diffs(&seen));

    // An edit, then the same edit again (not run: it repeats the first), then the same
    // write twice in one reply (the second not run). Only the calls that ran show a
    // change, and every change shown changes something.
    for (id, calls, done) in [(4, 3, "Edited once."), (5, 2, "Written once.")] {
        let seen = acp.prompt(&session, id, "change it");
        assert_eq!(updates_of(&seen, "tool_call").len(), calls, "{seen:?}");
        let ran = ran(&seen);
        assert_eq!(ran.len(), calls - 1, "{seen:?}");
        let found = diffs(&seen);
        assert!(
            !found.is_empty(),
            "the call that ran shows its change: {seen:?}"
        );
        for (call, diff) in &found {
            assert!(
                ran.contains(call),
                "a diff for a call that did not run: {diff}"
            );
            assert_eq!(call, &found[0].0, "one call changes the file: {diff}");
            assert_ne!(diff["oldText"], diff["newText"], "{diff}");
        }
        let said: String = updates_of(&seen, "agent_message_chunk")
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect();
        assert_eq!(said, done);
    }
    let notes = std::fs::read_to_string(ws.dir.path().join("notes.txt")).unwrap();
    assert_eq!(notes, "Buy bread. Call Bob.\n");
    let out = std::fs::read_to_string(ws.dir.path().join("out.txt")).unwrap();
    assert_eq!(out, "new\n");
}
