//! `aintern chat`'s commands about the session as a whole, over piped lines: `/compact`,
//! `/model SPEC` and `/diff`.

use super::{aintern_in, call, Workspace};
use serde_json::json;

/// A second script in the workspace, for `/model script:FILE`.
fn second_script(ws: &Workspace, responses: &[&str]) -> String {
    let file = ws.dir.path().join("second.json");
    let responses: Vec<serde_json::Value> = responses
        .iter()
        .map(|r| json!({"chunks": [r], "delay_ms": 0}))
        .collect();
    std::fs::write(&file, json!({"responses": responses}).to_string()).unwrap();
    format!("script:{}", file.display())
}

#[test]
fn chat_compacts_on_request_and_goes_on_with_another_model() {
    let ws = Workspace::new();
    let script = ws.script(&["Milk is on the list.", "They talked about buying milk."]);
    let second = second_script(&ws, &["From the second model."]);
    let input = format!(
        "what is on the list\n/compact\n/model script:{}\nand now\n/model no-such-model\n/model\n",
        &second["script:".len()..]
    );
    let out = aintern_in(
        ws.home.path(),
        &["chat", "--workspace", ws.path(), "--backend", &script],
        input.as_bytes(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}{err}");
    let all = format!("{text}{err}");
    // /compact: the model's summary replaces the two messages.
    assert!(all.contains("compacted: 2 messages"), "{all}");
    assert!(all.contains("They talked about buying milk."), "{all}");
    // /model SPEC: the next request is answered by the second model, in the same session.
    assert!(all.contains("From the second model."), "{all}");
    assert!(all.contains("the conversation goes on with it"), "{all}");
    // A model that cannot be loaded leaves the current one, and says so.
    assert!(all.contains("the model is not changed"), "{all}");
    // The session file keeps the summary in place of the conversation, then the new turn.
    let sessions = ws.home.path().join("data").join("aintern").join("sessions");
    let files: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let jsonl: Vec<_> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(jsonl.len(), 1, "one session: {files:?}");
    let saved = std::fs::read_to_string(jsonl[0]).unwrap();
    let history = saved
        .lines()
        .position(|l| l.contains("\"history\"") && l.contains("They talked about buying milk."))
        .expect(&saved);
    let next = saved
        .lines()
        .position(|l| l.contains("From the second model."))
        .expect(&saved);
    assert!(history < next, "{saved}");
}

#[test]
fn chat_diff_shows_what_the_conversation_changed() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &format!(
            "{}{}",
            call("write_file", json!({"path": "a.txt", "content": "hello\n"})),
            call("edit_file", json!({"path": "notes.txt", "search": "Buy milk. Call Bob.", "replace": "Buy milk. Call Ann."}))
        ),
        "Written and edited.",
    ]);
    // Each step its own run of the same session (lines piped while a request runs would
    // reach it as messages).
    let chat = |input: &[u8], last: bool| {
        let mut args = vec![
            "chat",
            "--workspace",
            ws.path(),
            "--backend",
            &script,
            "--approve",
            "all",
        ];
        if last {
            args.push("--last");
        }
        let out = aintern_in(ws.home.path(), &args, input);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{text}{err}");
        format!("{text}{err}")
    };
    let mut all = chat(b"/diff\nwrite it, then edit it\n", false);
    all.push_str(&chat(b"/diff\n", true));
    assert!(
        all.contains("no request of this conversation has changed the workspace"),
        "{all}"
    );
    let at = all
        .find("since before this conversation's first change")
        .expect(&all);
    let shown = &all[at..];
    assert!(
        shown.contains("created") && shown.contains("a.txt"),
        "{shown}"
    );
    assert!(
        shown.contains("changed") && shown.contains("notes.txt"),
        "{shown}"
    );
    assert!(shown.contains("+hello"), "{shown}");
    assert!(
        shown.contains("-Buy milk. Call Bob.") && shown.contains("+Buy milk. Call Ann."),
        "{shown}"
    );
}
