//! `aintern acp` reads no message of the client whole before its size is checked: an
//! answer to `fs/read_text_file` or a request larger than the bound fails that one
//! call or request in words, the agent keeps serving, and its memory stays small.

use super::acp::{initialize, Raw};
use super::{call, Workspace};
use serde_json::{json, Value};

/// Larger than the bound (16 MiB) by far.
const HUGE: usize = 64 * 1024 * 1024;
/// What the agent may hold at its peak meanwhile (it would take several times HUGE).
const PEAK_CAP: u64 = 160 * 1024 * 1024;

fn send_huge_line(acp: &mut Raw, head: &str, tail: &str) {
    let mut line = String::with_capacity(HUGE + head.len() + tail.len());
    line.push_str(head);
    line.extend(std::iter::repeat_n('a', HUGE));
    line.push_str(tail);
    acp.send(&line);
}

#[test]
fn a_huge_answer_or_request_fails_alone_and_memory_stays_bounded() {
    let ws = Workspace::new();
    let script = ws.script(&[&call("read_file", json!({"path": "notes.txt"})), "Done."]);
    let mut acp = Raw::with_args(&ws, &["--backend", &script]);
    let mut init: Value = serde_json::from_str(&initialize(1)).unwrap();
    init["params"]["clientCapabilities"]["fs"] = json!({"readTextFile": true});
    acp.send(&init.to_string());
    acp.response(1);
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": ws.path(), "mcpServers": []}})
        .to_string(),
    );
    let session = acp.response(2)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let before = acp.peak_memory();

    // A request too large: answered with an error at once, by id.
    send_huge_line(
        &mut acp,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"x","prompt":[{"type":"text","text":""#,
        r#""}]}}"#,
    );
    let refused = acp.response(3);
    assert_eq!(refused["error"]["code"], json!(-32600), "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("larger than 16 MiB"),
        "{refused}"
    );

    // The editor's answer to a read, too large: that read fails, the turn goes on.
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}})
        .to_string(),
    );
    let mut said = String::new();
    let done = loop {
        let message = acp.next();
        if message["method"] == json!("fs/read_text_file") {
            let id = message["id"].to_string();
            send_huge_line(
                &mut acp,
                &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":""#),
                r#""}}"#,
            );
        } else if message["id"] == json!(4) && message.get("method").is_none() {
            break message;
        } else {
            said.push_str(&message.to_string());
        }
    };
    assert_eq!(done["result"]["stopReason"], json!("end_turn"), "{done}");
    assert!(
        said.contains("larger than 16 MiB"),
        "the failed read does not say why: {said}"
    );
    let peak = acp.peak_memory();
    eprintln!("peak memory: {before} bytes before, {peak} after two lines of {HUGE} bytes");
    assert!(
        peak < PEAK_CAP,
        "the agent held {peak} bytes for lines of {HUGE} bytes"
    );
}
