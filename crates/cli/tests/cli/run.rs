//! `aintern run`: JSON events, the workspace boundary, approvals and cancellation over stdin,
//! failures and usage errors, the timeout, the tools at work, and a cancelled command's
//! process group.

use super::{
    aintern, aintern_in, call, completed, result_texts, results, run_json, spawn_json, Workspace,
};
use core_models::AgentEvent;
use serde_json::{json, Value};
use std::io::Write;
use test_support::processes::{process_gone, written_pid};

#[test]
fn run_json_prints_every_event_and_reads_files() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        "It says to buy milk.",
    ]);
    let (out, events) = run_json(&ws, &script, &[], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = events.last().unwrap();
    assert_eq!(last.event_type(), "agent_complete");
    let AgentEvent::AgentComplete(done) = last else {
        unreachable!()
    };
    assert_eq!(done.final_response, "It says to buy milk.");
    assert_eq!(results(&events)[0].result.content, "Buy milk. Call Bob.\n");
    // The raw JSON lines have the agreed shape.
    let first: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(first["type"], "agent_complete");
    assert_eq!(first["reason"], "finished");
    assert!(first["total_duration_ms"].is_u64());
}

#[test]
fn run_refuses_paths_outside_the_workspace() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "../../etc/passwd"})),
        "Refused.",
    ]);
    let (out, events) = run_json(&ws, &script, &[], b"");
    assert!(out.status.success());
    let r = &results(&events)[0];
    assert!(!r.result.success);
    assert!(r
        .result
        .error_message
        .as_deref()
        .unwrap()
        .contains("leads outside the workspace"));
}

#[test]
fn run_approvals_over_stdin() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("write_file", json!({"path": "out.txt", "content": "hi"})),
        "Written.",
    ]);
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "write it");
    let mut events = Vec::new();
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if let AgentEvent::ApprovalRequest(a) = &event {
            assert_eq!(a.request.tool_id, "write_file");
            let command = json!({"op": "approve", "call_id": a.request.id, "remember": "none"});
            writeln!(stdin, "not a command").unwrap();
            writeln!(stdin, "{command}").unwrap();
        }
        events.push(event);
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("out.txt")).unwrap(),
        "hi"
    );
    assert!(results(&events)[0].success());
}

#[test]
fn run_deny_over_stdin_and_approve_modes() {
    let ws = Workspace::new();
    let write = call("write_file", json!({"path": "out.txt", "content": "hi"}));
    let script = ws.script(&[&write, "Not written."]);
    let (out, events) = run_json(&ws, &script, &["--approve", "none"], b"");
    assert!(out.status.success());
    assert!(results(&events)[0]
        .result
        .error_message
        .as_deref()
        .unwrap()
        .contains("Denied by the user"));
    assert!(!ws.dir.path().join("out.txt").exists());

    let (_, events) = run_json(&ws, &script, &["--approve", "safe"], b"");
    assert!(
        !results(&events)[0].success(),
        "medium risk is denied by --approve safe"
    );

    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    assert!(out.status.success());
    assert!(results(&events)[0].success());
    assert!(ws.dir.path().join("out.txt").exists());
}

#[test]
fn run_cancel_over_stdin() {
    let ws = Workspace::new();
    let file = ws.dir.path().join("slow.json");
    std::fs::write(
        &file,
        json!({"responses": [{"chunks": (0..300).map(|i| format!("w{i} ")).collect::<Vec<_>>(), "delay_ms": 20}]}).to_string(),
    )
    .unwrap();
    let script = format!("script:{}", file.display());
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "slow");
    let mut last = None;
    let mut sent = false;
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if !sent && matches!(&event, AgentEvent::TextGeneration(_)) {
            writeln!(stdin, "{}", json!({"op": "cancel"})).unwrap();
            sent = true;
        }
        last = Some(event);
    }
    assert!(
        child.wait().unwrap().success(),
        "a cancelled request exits 0"
    );
    let Some(AgentEvent::AgentComplete(done)) = last else {
        panic!("{last:?}")
    };
    assert!(done.was_cancelled);
}

/// A `user_message` sent over stdin while the model writes its final answer is not lost:
/// the model is asked again with it, in the same request.
#[test]
fn run_user_message_over_stdin_while_the_model_answers() {
    let ws = Workspace::new();
    let file = ws.dir.path().join("answers.json");
    std::fs::write(
        &file,
        json!({"responses": [
            {"chunks": ["The ", "answer ", "is ", "42."], "delay_ms": 400},
            {"chunks": ["Forty-two."], "delay_ms": 0}
        ]})
        .to_string(),
    )
    .unwrap();
    let script = format!("script:{}", file.display());
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "what is it?");
    let mut events: Vec<AgentEvent> = Vec::new();
    let mut sent = false;
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if !sent && matches!(&event, AgentEvent::TextGeneration(_)) {
            let command = json!({"op": "user_message", "text": "in words, please"});
            writeln!(stdin, "{command}").unwrap();
            sent = true;
        }
        events.push(event);
    }
    assert!(child.wait().unwrap().success());
    let Some(AgentEvent::AgentComplete(done)) = events.last() else {
        panic!("{:?}", events.last())
    };
    assert_eq!(done.final_response, "Forty-two.");
    assert_eq!(done.total_iterations, 2, "the model was asked again");
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::MessagesCarried(_))));
}

#[test]
fn run_reports_model_failures_and_usage_errors() {
    let ws = Workspace::new();
    let script = ws.script(&[&call("read_file", json!({"path": "notes.txt"}))]);
    let (out, events) = run_json(&ws, &script, &[], b"");
    assert!(
        !out.status.success(),
        "the script ran out: the request failed"
    );
    let Some(AgentEvent::AgentError(e)) = events.last() else {
        panic!()
    };
    assert!(e.error.contains("no response left"), "{}", e.error);

    let cases: [(&[&str], &str); 5] = [
        (
            &["run", "--backend", "script:/nonexistent.json", "x"],
            "cannot read the script",
        ),
        (&["run", "--backend", "gpt:4", "x"], "unknown backend"),
        (
            &["run", "--backend", "llama:model.gguf", "x"],
            "does not exist",
        ),
        (
            &["run", "--timeout", "1", "--backend", "script:x", "x"],
            "--timeout",
        ),
        (&["run", "--tool-choice", "", "x"], "tool choice"),
    ];
    for (args, message) in cases {
        let out = aintern(args, b"");
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
    }
    let bad = ws.dir.path().join("bad.json");
    std::fs::write(&bad, "{\"responses\": 3}").unwrap();
    let out = aintern(
        &[
            "run",
            "--workspace",
            ws.path(),
            "--backend",
            &format!("script:{}", bad.display()),
            "x",
        ],
        b"",
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not valid"));
}

#[test]
fn run_timeout_lowers_the_tool_timeout() {
    let ws = Workspace::new();
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "tool_execution_timeout_ms = 60000\n",
    )
    .unwrap();
    let script = ws.script(&["fine"]);
    let (out, events) = run_json(&ws, &script, &["--timeout", "5"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(events.last().unwrap().event_type(), "agent_complete");
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "max_agent_iterations = 0\n",
    )
    .unwrap();
    let out = aintern(
        &["run", "--workspace", ws.path(), "--backend", &script, "x"],
        b"",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_agent_iterations"));
}

#[test]
fn run_reads_edits_and_runs_a_command() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        &call(
            "edit_file",
            json!({"path": "notes.txt", "search": "milk", "replace": "oat milk"}),
        ),
        &call(
            "run_command",
            json!({"command": "cat notes.txt && echo done"}),
        ),
        "Done.",
    ]);
    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    let (_, done) = completed(&out);
    assert_eq!((done.tool_calls_executed, done.total_iterations), (3, 4));
    let texts = result_texts(&events);
    assert_eq!(texts[0], "Buy milk. Call Bob.\n");
    assert!(
        texts[2].contains("Buy oat milk. Call Bob.\ndone\n"),
        "{texts:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("notes.txt")).unwrap(),
        "Buy oat milk. Call Bob.\n"
    );

    // The same for a person: each call with its summary and risk, then the statistics.
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        &call("run_command", json!({"command": "rm -r gone"})),
        "Done.",
    ]);
    let out = aintern_in(
        ws.home.path(),
        &[
            "run",
            "--approve",
            "all",
            "--workspace",
            ws.path(),
            "--backend",
            &script,
            "go",
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("→ Read notes.txt (safe risk)\n✓ Read File ("),
        "{text}"
    );
    assert!(
        text.contains(
            "→ Run `rm -r gone` (high risk)\n✗ Run Command: the command exited with code 1\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("Done.\n— 3 iterations · 2 tool calls · "),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no colour when stdout is not a terminal: {text:?}"
    );
}

#[test]
fn cancelling_a_running_command_kills_its_process_group() {
    let ws = Workspace::new();
    let script = ws.script(&[&call(
        "run_command",
        json!({"command": "sleep 300 & echo $! > bg.pid; sleep 300"}),
    )]);
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "sleep");
    let pid_file = ws.dir.path().join("bg.pid");
    let mut last = None;
    let mut background = None;
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        match &event {
            AgentEvent::ApprovalRequest(a) => {
                let command = json!({"op": "approve", "call_id": a.request.id});
                writeln!(stdin, "{command}").unwrap();
            }
            AgentEvent::ToolExecution(_) if background.is_none() => {
                for _ in 0..200 {
                    background = written_pid(&pid_file);
                    if background.is_some() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                assert!(!process_gone(background.unwrap()));
                writeln!(stdin, "{}", json!({"op": "cancel"})).unwrap();
            }
            _ => {}
        }
        last = Some(event);
    }
    assert!(child.wait().unwrap().success());
    let Some(AgentEvent::AgentComplete(done)) = last else {
        panic!("{last:?}")
    };
    assert!(done.was_cancelled);
    let pid = background.expect("the command started");
    assert!(
        process_gone(pid),
        "the background sleep {pid} outlived the cancel"
    );
}

#[test]
fn the_statistics_give_the_generation_speed() {
    let ws = Workspace::new();
    let file = ws.dir.path().join("timed.json");
    let usage = json!({"type": "usage", "prompt_tokens": 20, "prompt_tokens_evaluated": 20,
        "generated_tokens": 25, "time_to_first_token_ms": 100, "prompt_time_ms": 100,
        "generation_time_ms": 500});
    std::fs::write(
        &file,
        json!({"responses": [{"items": [{"type": "text", "text": "Hello."}, usage]}]}).to_string(),
    )
    .unwrap();
    let script = format!("script:{}", file.display());
    let args = ["--workspace", ws.path(), "--backend", &script, "hi"];
    let out = aintern_in(ws.home.path(), &[&["run"], &args[..]].concat(), b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("— 1 iteration · 0 tool calls · 25 tokens · 50.0 tok/s · "),
        "{text}"
    );
    let out = aintern_in(ws.home.path(), &[&["exec"], &args[..]].concat(), b"");
    let (_, done) = completed(&out);
    assert_eq!(done.tokens_per_second, Some(50.0));
    let last = String::from_utf8_lossy(&out.stdout);
    let last: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(last["tokens_per_second"], json!(50.0), "{last}");
}

#[test]
fn a_reply_asked_for_again_starts_on_a_line_of_its_own() {
    let ws = Workspace::new();
    std::fs::write(ws.dir.path().join("notes.txt"), "hi").unwrap();
    // The first reply names a tool and calls none: free steering asks once more.
    let script = ws.script(&["I would use `read_file` on notes.txt.", "The notes say hi."]);
    let out = aintern(
        &[
            "run",
            "--workspace",
            ws.path(),
            "--backend",
            &script,
            "--steering",
            "free",
            "What do the notes say?",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("on notes.txt.\nThe notes say hi."),
        "the two replies are glued: {shown}"
    );
}
