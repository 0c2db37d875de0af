//! Saved sessions end to end: every event stream starts with `session_started`, a session
//! is saved and listed, `--resume ID|--last` continues it in its workspace with the
//! conversation as it was, decisions remembered for the session stay with it, a process
//! killed with SIGKILL leaves a session that reads and resumes, `--no-save` saves nothing,
//! and `sessions show|rm` work.

use super::{aintern_in, bin, call, completed, events, Workspace};
use core_models::AgentEvent;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Output, Stdio};

/// A script file whose responses are these (each one chunk, or `(chunks, delay)`).
fn script(ws: &Workspace, name: &str, responses: &[Value]) -> String {
    let file = ws.dir.path().join(name);
    std::fs::write(&file, json!({"responses": responses}).to_string()).unwrap();
    format!("script:{}", file.display())
}

/// `aintern exec --workspace WS --backend BACKEND EXTRA… MESSAGE` in `ws`'s home.
fn exec_over(ws: &Workspace, backend: &str, extra: &[&str], message: &str) -> Output {
    let mut args = vec!["exec", "--workspace", ws.path(), "--backend", backend];
    args.extend_from_slice(extra);
    args.push(message);
    aintern_in(ws.home.path(), &args, b"")
}

fn text(t: &str) -> Value {
    json!({"chunks": [t]})
}

fn sessions(ws: &Workspace) -> Vec<Value> {
    let out = aintern_in(ws.home.path(), &["sessions", "list", "--json"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn started(events: &[AgentEvent]) -> &core_models::SessionStartedEvent {
    match events.first() {
        Some(AgentEvent::SessionStarted(s)) => s,
        other => panic!("the stream starts with {other:?}"),
    }
}

#[test]
fn a_session_is_saved_listed_and_resumed_as_it_was() {
    let ws = Workspace::new();
    let first = script(&ws, "one.json", &[text("Hello, Ann.")]);
    let out = exec_over(&ws, &first, &[], "My name is Ann.");
    let (evs, done) = completed(&out);
    let s = started(&evs);
    assert!(!s.resumed);
    assert_eq!(s.messages, 0);
    assert_eq!(done.session_id, Some(s.session_id));
    let id = s.session_id.to_string();

    let list = sessions(&ws);
    assert_eq!(list.len(), 1);
    let row = &list[0];
    assert_eq!(row["id"], id.as_str());
    assert_eq!(row["turns"], 1);
    assert_eq!(row["title"], "My name is Ann.");
    assert_eq!(row["model"], "scripted");
    assert!(row["backend"]
        .as_str()
        .is_some_and(|b| b.starts_with("script:")));
    for key in ["created", "updated", "workspace"] {
        assert!(row[key].is_string(), "{key}: {row}");
    }

    // Resumed by a prefix of its id, from another folder, without naming the workspace.
    let second = script(
        &ws,
        "two.json",
        &[
            json!({"chunks": [call("read_file", json!({"path": "notes.txt"}))]}),
            text("Your name is Ann."),
        ],
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let out = bin(ws.home.path())
        .current_dir(elsewhere.path())
        .args([
            "exec",
            "--resume",
            &id[..8],
            "--backend",
            &second,
            "What is my name?",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (evs, done) = completed(&out);
    let s = started(&evs);
    assert!(s.resumed);
    assert_eq!(s.messages, 2);
    assert_eq!(done.session_id.map(|i| i.to_string()), Some(id.clone()));
    let read = super::results(&evs);
    assert!(
        read[0].result.content.contains("Buy milk"),
        "the session's workspace: {:?}",
        read[0].result
    );

    let shown = aintern_in(ws.home.path(), &["sessions", "show", &id, "--json"], b"");
    let messages: Vec<Value> = serde_json::from_slice(&shown.stdout).unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(messages[1]["content"], "Hello, Ann.");
    assert_eq!(messages[3]["tool_calls"][0]["name"], "read_file");
    assert_eq!(sessions(&ws)[0]["turns"], 2);
}

#[test]
fn a_resumed_conversation_reaches_the_model_as_it_was() {
    use test_support::stub_server::{StubReply, StubServer};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Each run asks first whether the server takes tools.
    let probe = || StubReply::status(200, r#"{"choices":[]}"#);
    let server = runtime.block_on(StubServer::start([
        probe(),
        StubReply::text_stream(&["Paris", " is the capital."]),
        probe(),
        StubReply::text_stream(&["About 2 million."]),
    ]));
    let backend = format!("openai:{}", server.url());
    let ws = Workspace::new();
    let common = [
        "--backend",
        backend.as_str(),
        "--model",
        "stub-model",
        "--tool-choice",
        "none",
    ];
    let mut args = vec!["exec", "--workspace", ws.path()];
    args.extend(common);
    args.push("What is the capital of France?");
    completed(&aintern_in(ws.home.path(), &args, b""));
    // `--resume REQUEST`: the last word is the request, never a session id; the most
    // recent session continues.
    let mut args = vec!["exec"];
    args.extend(common);
    args.extend(["--resume", "How many people live there?"]);
    completed(&aintern_in(ws.home.path(), &args, b""));
    let sent = server.chat_requests();
    let second: Vec<(String, String)> = sent[3].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .filter(|(role, _)| role != "system")
        .collect();
    assert_eq!(
        second,
        [
            (
                "user".to_string(),
                "What is the capital of France?".to_string()
            ),
            ("assistant".to_string(), "Paris is the capital.".to_string()),
            (
                "user".to_string(),
                "How many people live there?".to_string()
            ),
        ]
    );
}

#[test]
fn decisions_remembered_for_the_session_stay_with_it() {
    let ws = Workspace::new();
    let command = call("run_command", json!({"command": "touch made-by-the-tool"}));
    let first = script(
        &ws,
        "one.json",
        &[json!({"chunks": [command.clone()]}), text("done")],
    );
    let mut child = bin(ws.home.path())
        .args([
            "exec",
            "--workspace",
            ws.path(),
            "--backend",
            &first,
            "make it",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut asked = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if let AgentEvent::ApprovalRequest(a) = &event {
            asked += 1;
            writeln!(
                stdin,
                "{}",
                json!({"op": "approve", "call_id": a.request.id, "remember": "session"})
            )
            .unwrap();
        }
        if matches!(event, AgentEvent::AgentComplete(_)) {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(asked, 1);

    // The same call in the resumed session runs without asking; a new session asks.
    let again = script(
        &ws,
        "two.json",
        &[json!({"chunks": [command.clone()]}), text("done")],
    );
    let out = aintern_in(
        ws.home.path(),
        &["exec", "--resume", "--last", "--backend", &again, "again"],
        b"",
    );
    let (evs, _) = completed(&out);
    assert!(
        !evs.iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequest(_))),
        "not asked again"
    );
    assert!(super::results(&evs)[0].result.success);
    let fresh = script(
        &ws,
        "three.json",
        &[json!({"chunks": [command]}), text("done")],
    );
    let out = exec_over(&ws, &fresh, &["--approve", "none"], "new");
    let (evs, _) = completed(&out);
    assert!(
        evs.iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequest(_))),
        "another session asks"
    );
}

#[test]
fn a_session_killed_in_the_middle_reads_back_and_resumes() {
    let ws = Workspace::new();
    let first = script(&ws, "one.json", &[text("First answer.")]);
    completed(&exec_over(&ws, &first, &[], "first question"));
    let slow = script(
        &ws,
        "slow.json",
        &[json!({"chunks": vec!["word "; 200], "delay_ms": 20})],
    );
    let mut child = bin(ws.home.path())
        .args([
            "exec",
            "--resume",
            "--last",
            "--backend",
            &slow,
            "second question",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pieces = 0;
    while pieces < 5 {
        let event: AgentEvent = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if matches!(&event, AgentEvent::TextGeneration(t) if !t.is_complete) {
            pieces += 1;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // A record cut in the middle, as a crash while writing would leave it.
    let dir = ws.home.path().join("data/aintern/sessions");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(br#"{"type":"message","at":"2026-11-25T00:00:00Z","message":{"role":"assi"#)
        .unwrap();

    let list = sessions(&ws);
    assert_eq!(
        list[0]["turns"], 2,
        "the question asked before the kill is kept"
    );
    let last = script(&ws, "last.json", &[text("Third answer.")]);
    let out = aintern_in(
        ws.home.path(),
        &["exec", "--resume", "--last", "--backend", &last, "third"],
        b"",
    );
    let (evs, done) = completed(&out);
    assert_eq!(
        started(&evs).messages,
        3,
        "question, answer, the interrupted question"
    );
    assert_eq!(done.final_response, "Third answer.");
}

#[test]
fn no_save_saves_nothing_and_sessions_can_be_removed() {
    let ws = Workspace::new();
    let s = script(&ws, "one.json", &[text("a"), text("b")]);
    let out = exec_over(&ws, &s, &["--no-save"], "x");
    let (evs, _) = completed(&out);
    assert!(matches!(evs.first(), Some(AgentEvent::SessionStarted(_))));
    assert!(sessions(&ws).is_empty());
    completed(&exec_over(&ws, &s, &[], "y"));
    let id = sessions(&ws)[0]["id"].as_str().unwrap().to_string();
    let out = aintern_in(ws.home.path(), &["sessions", "rm", &id], b"");
    assert!(out.status.success());
    assert!(sessions(&ws).is_empty());
    let out = aintern_in(
        ws.home.path(),
        &["exec", "--resume", &id, "--backend", &s, "z"],
        b"",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no saved session"));
    assert!(events(&out.stdout).is_empty());
}

#[test]
fn removing_a_session_forgets_the_slots_saved_for_it_on_servers() {
    use std::os::unix::fs::DirBuilderExt;
    let ws = Workspace::new();
    let s = script(&ws, "one.json", &[text("a")]);
    completed(&exec_over(&ws, &s, &[], "y"));
    let id = sessions(&ws)[0]["id"].as_str().unwrap().to_string();
    // What a client that saved this session's slots, and another session's, left in the
    // user's claims folder: which state each of a server's slot files holds.
    let run = ws.home.path().join("run");
    let claims = run.join("aintern-slots");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&claims)
        .unwrap();
    let record = |n: u32, state: &str| {
        let path = claims.join(format!("00000000000000aa-{n}.holds"));
        std::fs::write(&path, state).unwrap();
        path
    };
    let mine = record(0, &format!("{id}-00000000000000ab"));
    let other = record(1, "another-session-00000000000000ab");
    let out = bin(ws.home.path())
        .env("XDG_RUNTIME_DIR", &run)
        .args(["sessions", "rm", &id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!mine.exists(), "the removed session's file is free again");
    assert!(other.exists(), "another session's stays");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("removed {id}")) && said.contains("forgot 1 slot state saved"),
        "{said}"
    );
    assert!(sessions(&ws).is_empty());
}

#[test]
fn a_session_whose_saved_state_cannot_be_removed_stays_to_remove_again() {
    let ws = Workspace::new();
    let s = script(&ws, "one.json", &[text("a")]);
    completed(&exec_over(&ws, &s, &[], "y"));
    let id = sessions(&ws)[0]["id"].as_str().unwrap().to_string();
    // Something of the session's state that cannot be removed as a file: a folder.
    let dir = ws.home.path().join("data/aintern/sessions");
    let stuck = dir.join(format!("{id}.kv0"));
    std::fs::create_dir(&stuck).unwrap();
    std::fs::write(stuck.join("inside"), "x").unwrap();
    let rm = || {
        bin(ws.home.path())
            .args(["sessions", "rm", &id])
            .output()
            .unwrap()
    };
    let out = rm();
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(sessions(&ws).len(), 1, "the session is still there");
    std::fs::remove_dir_all(&stuck).unwrap();
    let out = rm();
    assert!(out.status.success(), "{out:?}");
    assert!(sessions(&ws).is_empty());
}

#[test]
fn commands_cannot_read_saved_sessions_or_the_chat_history() {
    let ws = Workspace::new();
    let s = script(&ws, "one.json", &[text("the secret word is plover")]);
    completed(&exec_over(&ws, &s, &[], "remember"));
    let dir = ws.home.path().join("data/aintern/sessions");
    // The chat's history is the user's too.
    let history = ws.home.path().join("data/aintern/history.txt");
    std::fs::write(&history, "#V2\nthe secret word is plover\n").unwrap();
    let peek = call(
        "run_command",
        json!({"command": format!("cat {}/*.jsonl; cat {}", dir.display(), history.display())}),
    );
    let s = script(&ws, "two.json", &[json!({"chunks": [peek]}), text("done")]);
    let out = exec_over(&ws, &s, &["--approve", "all", "--no-save"], "peek");
    let (evs, _) = completed(&out);
    let result = &super::results(&evs)[0].result;
    let seen = format!(
        "{} {}",
        result.content,
        result.error_message.clone().unwrap_or_default()
    );
    assert!(
        !seen.contains("plover"),
        "a command read a saved session: {seen}"
    );
}

#[test]
fn a_shown_session_describes_its_calls_as_they_were_described_live() {
    let ws = Workspace::new();
    let backend = script(
        &ws,
        "read.json",
        &[
            json!({"chunks": [call("read_file", json!({"path": "notes.txt", "start_line": 1, "end_line": 1}))]}),
            text("It says to buy milk."),
        ],
    );
    let out = exec_over(&ws, &backend, &[], "What do the notes say?");
    let (evs, _) = completed(&out);
    let live = evs
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCallRequest(c) => Some(c.request.execution_summary.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(live, "Read line 1 of notes.txt");
    let id = started(&evs).session_id.to_string();
    let shown = aintern_in(ws.home.path(), &["sessions", "show", &id], b"");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{text}");
    assert!(
        text.contains(&format!("→ {live} (read_file ")),
        "the call as described live: {text}"
    );
}
