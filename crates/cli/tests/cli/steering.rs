//! `--steering`: with `small-model` the model chooses each step among answering and the
//! tools; a call it then writes under the chosen tool's grammar says so in its approval
//! request (JSON) and at the terminal's prompt.

use super::*;

#[test]
fn a_call_written_under_a_grammar_says_so_when_it_is_put_to_a_person() {
    let ws = Workspace::new();
    // The step is chosen, then chosen again when asked the other way (it changes
    // something), then written.
    let script = ws.script(&[
        "write_file",
        "write_file",
        &call("write_file", json!({"path": "new.txt", "content": "hi"})),
        "answer",
        "Not written.",
    ]);
    // No --approve: the approval goes to stdin, which denies it.
    let deny = b"";
    let (out, events) = run_json(&ws, &script, &["--steering", "small-model"], deny);
    let (_, done) = completed(&out);
    assert_eq!(done.final_response, "Not written.");
    let asked = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ApprovalRequest(a) => Some(a.clone()),
            _ => None,
        })
        .expect("the write was put to a person");
    let held = asked.request.held.unwrap_or_default();
    assert!(held.contains("chose write_file"), "{held}");
    assert!(held.contains("twice"), "{held}");
    assert!(!ws.dir.path().join("new.txt").exists());
}

#[test]
fn free_steering_marks_nothing_and_an_unknown_steering_is_refused() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("write_file", json!({"path": "new.txt", "content": "hi"})),
        "done",
    ]);
    let (out, events) = run_json(&ws, &script, &["--steering", "free"], b"");
    completed(&out);
    let asked = events.iter().find_map(|e| match e {
        AgentEvent::ApprovalRequest(a) => Some(a.clone()),
        _ => None,
    });
    assert_eq!(asked.expect("asked").request.held, None);
    let (out, _) = run_json(&ws, &script, &["--steering", "loud"], b"");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("unknown steering"), "{said}");
}
