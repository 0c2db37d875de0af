//! `aintern permissions`: decisions saved across runs, listed, denied, reset, and a corrupt
//! permission file.

use super::{aintern_in, call, result_texts, run_json, spawn_json, Workspace};
use core_models::AgentEvent;
use serde_json::json;
use std::io::Write;

#[test]
fn permissions_persist_across_runs() {
    let ws = Workspace::new();
    let home = ws.home.path();
    let write = |name: &str| call("write_file", json!({"path": name, "content": "hi"}));
    let approvals = |events: &[AgentEvent]| {
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::ApprovalRequest(_)))
            .count()
    };

    // "Always for this tool" at the first approval …
    let script = ws.script(&[&write("a.txt"), "ok"]);
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "write a");
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if let AgentEvent::ApprovalRequest(a) = &event {
            let command = json!({"op": "approve", "call_id": a.request.id, "remember": "tool"});
            writeln!(stdin, "{command}").unwrap();
        }
    }
    assert!(child.wait().unwrap().success());
    let saved = std::fs::read_to_string(home.join("aintern/permissions.json")).unwrap();
    assert!(saved.contains("\"always_allow\": true"), "{saved}");

    // … is remembered by the next run, which asks nothing.
    let script = ws.script(&[&write("b.txt"), "ok"]);
    let (out, events) = run_json(&ws, &script, &[], b"");
    assert!(out.status.success());
    assert_eq!(approvals(&events), 0);
    assert!(ws.dir.path().join("b.txt").exists());

    let list = aintern_in(home, &["permissions", "list"], b"");
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("write_file     always allow"), "{text}");
    let deny = aintern_in(
        home,
        &["permissions", "deny", "run_command", "--pattern", "rm *"],
        b"",
    );
    assert!(deny.status.success());
    let text = String::from_utf8_lossy(&aintern_in(home, &["permissions", "list"], b"").stdout)
        .into_owned();
    assert!(text.contains("run_command    deny rm *"), "{text}");

    // A saved deny refuses without asking, even with --approve all.
    let script = ws.script(&[
        &call("run_command", json!({"command": "rm notes.txt"})),
        "ok",
    ]);
    let (_, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    assert_eq!(approvals(&events), 0);
    assert!(
        result_texts(&events)[0].contains("denied"),
        "{:?}",
        result_texts(&events)
    );
    assert!(ws.dir.path().join("notes.txt").exists());

    // Reset: write_file is asked about again (and denied: stdin ended, nobody answers).
    let reset = aintern_in(home, &["permissions", "reset", "write_file"], b"");
    assert!(
        String::from_utf8_lossy(&reset.stdout).contains("write_file: saved permissions forgotten")
    );
    let script = ws.script(&[&write("c.txt"), "ok"]);
    let (_, events) = run_json(&ws, &script, &[], b"");
    assert_eq!(approvals(&events), 1);
    assert!(
        result_texts(&events)[0].contains("stdin ended"),
        "{:?}",
        result_texts(&events)
    );
    assert!(!ws.dir.path().join("c.txt").exists());

    let reset = aintern_in(home, &["permissions", "reset"], b"");
    assert!(String::from_utf8_lossy(&reset.stdout)
        .contains("forgot the saved permissions of 1 tool(s)"));
    let unknown = aintern_in(home, &["permissions", "allow", "nosuch"], b"");
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr)
        .contains("unknown tool 'nosuch' (tools: read_file"));

    // A corrupt file is an error in words, never "allow".
    std::fs::write(home.join("aintern/permissions.json"), "garbage").unwrap();
    let list = aintern_in(home, &["permissions", "list"], b"");
    assert!(!list.status.success());
    assert!(String::from_utf8_lossy(&list.stderr).contains("is corrupt"));
}
