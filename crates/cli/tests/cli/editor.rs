//! The chat at a terminal, under a pseudo-terminal: the line editor (arrow keys, history
//! across sessions, multi-line input), slash commands that never reach the model,
//! single-key approvals with a diff that ask again on a typo, tool output previews, the
//! summary of files changed, keys typed during generation kept off the output, and the
//! statistics line.

use super::chat::pty;
use super::{aintern_in, call, Workspace};
use serde_json::{json, Value};

/// A script file with these responses (each `chunks`, optionally slow).
fn script(ws: &Workspace, responses: &[Value]) -> String {
    let file = ws.dir.path().join("script.json");
    std::fs::write(&file, json!({"responses": responses}).to_string()).unwrap();
    format!("script:{}", file.display())
}

/// The user messages of the most recent saved session, in order.
fn asked(ws: &Workspace) -> Vec<String> {
    let out = aintern_in(ws.home.path(), &["sessions", "list", "--json"], b"");
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();
    let out = aintern_in(ws.home.path(), &["sessions", "show", &id, "--json"], b"");
    let messages: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

const UP: &str = "\x1b[A";
const LEFT: &str = "\x1b[D";

#[test]
fn the_editor_edits_with_arrows_and_keeps_history_across_sessions() {
    let ws = Workspace::new();
    let backend = script(
        &ws,
        &[
            json!({"chunks": ["One."]}),
            json!({"chunks": ["Two."]}),
            json!({"chunks": ["Three."]}),
        ],
    );
    let args = ["chat", "--workspace", ws.path(), "--backend", &backend];
    let mut p = pty(&ws, &args);
    p.expect("› ").unwrap();
    // A trailing backslash goes on on the next line: one request of two lines.
    p.send("first line\\\rsecond line\r").unwrap();
    p.expect("One.").unwrap();
    p.expect("› ").unwrap();
    // Left arrow moves the cursor: the "X" lands before the last letter.
    p.send(format!("helo{LEFT}X\r")).unwrap();
    p.expect("Two.").unwrap();
    p.expect("› ").unwrap();
    // Up brings the last line back.
    p.send(format!("{UP}\r")).unwrap();
    p.expect("Three.").unwrap();
    p.expect("› ").unwrap();
    p.send("/exit\r").unwrap();
    p.expect(expectrl::Eof).unwrap();
    assert_eq!(
        asked(&ws),
        ["first line\nsecond line", "helXo", "helXo"],
        "no escape codes reach the model"
    );

    // The next chat remembers what was typed before ("/exit", then "helXo").
    let backend = script(&ws, &[json!({"chunks": ["Again."]})]);
    let args = ["chat", "--workspace", ws.path(), "--backend", &backend];
    let mut p = pty(&ws, &args);
    p.expect("› ").unwrap();
    p.send(format!("{UP}{UP}\r")).unwrap();
    p.expect("Again.").unwrap();
    p.expect("› ").unwrap();
    p.send("\x04").unwrap();
    p.expect(expectrl::Eof).unwrap();
    assert_eq!(asked(&ws), ["helXo"]);
}

#[test]
fn slash_commands_answer_at_once_and_never_reach_the_model() {
    let ws = Workspace::new();
    let backend = script(
        &ws,
        &[
            json!({"chunks": [call("write_file", json!({"path": "b.txt", "content": "b\n"}))]}),
            json!({"chunks": ["Written."]}),
        ],
    );
    let args = ["chat", "--workspace", ws.path(), "--backend", &backend];
    let mut p = pty(&ws, &args);
    p.expect("› ").unwrap();
    p.send("/help\r").unwrap();
    p.expect("/approve").unwrap();
    p.expect("› ").unwrap();
    p.send("/tools\r").unwrap();
    p.expect("run_command").unwrap();
    p.expect("› ").unwrap();
    p.send("/model\r").unwrap();
    p.expect("scripted via script:").unwrap();
    p.expect("› ").unwrap();
    p.send("/context\r").unwrap();
    p.expect("system prompt").unwrap();
    p.expect("› ").unwrap();
    p.send("/frobnicate\r").unwrap();
    p.expect("unknown command /frobnicate").unwrap();
    p.expect("› ").unwrap();
    p.send("/sessions\r").unwrap();
    p.expect("› ").unwrap();
    // From now on writes are approved without asking.
    p.send("/approve all\r").unwrap();
    p.expect("approvals from now on: all").unwrap();
    p.expect("› ").unwrap();
    p.send("write b\r").unwrap();
    let done = p.expect("Written.").unwrap();
    assert!(!String::from_utf8_lossy(done.before()).contains("Approve?"));
    p.expect("files changed: b.txt (created)").unwrap();
    p.expect("› ").unwrap();
    p.send("/files\r").unwrap();
    p.expect("b.txt (created)").unwrap();
    p.expect("› ").unwrap();
    // /clear starts a new conversation; the old one stays saved.
    p.send("/clear\r").unwrap();
    p.expect("a new conversation").unwrap();
    p.expect("› ").unwrap();
    p.send("/exit\r").unwrap();
    p.expect(expectrl::Eof).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("b.txt")).unwrap(),
        "b\n"
    );
    // Only the one request reached the model (the script had nothing else to give).
    let out = aintern_in(ws.home.path(), &["sessions", "list", "--json"], b"");
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let turns: Vec<u64> = list.iter().map(|s| s["turns"].as_u64().unwrap()).collect();
    assert!(
        turns.contains(&1) && turns.iter().sum::<u64>() == 1,
        "{list:?}"
    );
}

#[test]
fn an_approval_is_one_key_shows_a_diff_and_asks_again_on_a_typo() {
    let ws = Workspace::new();
    std::fs::write(ws.dir.path().join("a.txt"), "old line\nsecond\n").unwrap();
    let backend = script(
        &ws,
        &[
            json!({"chunks": [call("write_file", json!({"path": "a.txt", "content": "new line\nsecond\n"}))]}),
            json!({"chunks": ["Done."]}),
        ],
    );
    let args = ["chat", "--workspace", ws.path(), "--backend", &backend];
    let mut p = pty(&ws, &args);
    p.expect("› ").unwrap();
    p.send("change a\r").unwrap();
    let asked = p.expect("whole [d]iff: ").unwrap();
    let prompt = String::from_utf8_lossy(asked.before()).into_owned();
    assert!(
        prompt.contains("overwrites a.txt, an existing file (+1 −1)"),
        "{prompt}"
    );
    assert!(
        prompt.contains("-old line") && prompt.contains("+new line"),
        "{prompt}"
    );
    assert!(
        prompt.contains("\u{1b}[31m-old line"),
        "a red removal: {prompt:?}"
    );
    assert!(!prompt.contains("\"content\""), "no JSON blob: {prompt}");
    // A typo asks again, and changes nothing.
    p.send("x").unwrap();
    p.expect("press y (yes)").unwrap();
    p.expect("whole [d]iff: ").unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("a.txt")).unwrap(),
        "old line\nsecond\n"
    );
    // d shows the whole diff, then asks again; one key (no Enter) answers.
    p.send("d").unwrap();
    p.expect(" second").unwrap();
    p.expect("whole [d]iff: ").unwrap();
    p.send("y").unwrap();
    p.expect("yes").unwrap();
    p.expect("Done.").unwrap();
    p.expect("files changed: a.txt (overwritten)").unwrap();
    p.expect("› ").unwrap();
    p.send("/exit\r").unwrap();
    p.expect(expectrl::Eof).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("a.txt")).unwrap(),
        "new line\nsecond\n"
    );
}

#[test]
fn keys_typed_while_the_model_writes_stay_off_its_output_and_come_next() {
    let ws = Workspace::new();
    let words: Vec<String> = (0..60).map(|i| format!("w{i} ")).collect();
    let backend = script(
        &ws,
        &[
            json!({"chunks": words, "delay_ms": 30}),
            json!({"chunks": ["Next answer."]}),
        ],
    );
    let args = ["chat", "--workspace", ws.path(), "--backend", &backend];
    let mut p = pty(&ws, &args);
    p.expect("› ").unwrap();
    p.send("talk\r").unwrap();
    p.expect("w3 ").unwrap();
    // Typed while the model writes: no echo into its words.
    p.send("later").unwrap();
    let done = p.expect("— 1 iteration").unwrap();
    let text = String::from_utf8_lossy(done.before()).into_owned();
    assert!(text.contains("w59"), "{text}");
    let words_line = text
        .lines()
        .find(|l| l.contains("w10 "))
        .expect("the reply's line");
    assert!(!words_line.contains("later"), "{words_line:?}");
    // What was typed is waiting at the prompt; Enter sends it.
    p.expect("› later").unwrap();
    p.send("\r").unwrap();
    p.expect("Next answer.").unwrap();
    p.expect("› ").unwrap();
    p.send("/exit\r").unwrap();
    p.expect(expectrl::Eof).unwrap();
    assert_eq!(asked(&ws), ["talk", "later"]);
}

#[test]
fn tool_output_is_previewed_and_statistics_are_right() {
    let ws = Workspace::new();
    // Writes a file, so it is asked about.
    let lines = "seq -f line%g 30 | tee out.txt";
    let backend = script(
        &ws,
        &[
            json!({"chunks": [call("write_file", json!({"path": "no.txt", "content": "x"}))]}),
            json!({"chunks": [call("run_command", json!({"command": lines}))]}),
            json!({"chunks": ["Done."]}),
        ],
    );
    let args = ["chat", "--workspace", ws.path(), "--backend", &backend];
    let mut p = pty(&ws, &args);
    p.expect("› ").unwrap();
    p.send("go\r").unwrap();
    p.expect("whole [d]iff: ").unwrap();
    p.send("n").unwrap();
    let asked = p.expect("in every workspace: ").unwrap();
    // A command is shown as the command.
    let asked = String::from_utf8_lossy(asked.before()).into_owned();
    assert!(
        asked.contains("$ seq -f line%g 30 | tee out.txt"),
        "{asked}"
    );
    p.send("y").unwrap();
    let ran = p.expect("Done.").unwrap();
    let text = String::from_utf8_lossy(ran.before()).into_owned();
    // Head and tail of the output, not all of it.
    for shown in [
        "stdout:",
        "line1",
        "line4",
        "… 24 more lines",
        "line29",
        "line30",
    ] {
        assert!(text.contains(shown), "{shown}: {text}");
    }
    assert!(!text.contains("line15"), "{text}");
    let stats = p.expect("› ").unwrap();
    let stats = String::from_utf8_lossy(stats.before()).into_owned();
    assert!(
        stats.contains("— 3 iterations · 1 tool call · 1 denied · 3 tokens"),
        "{stats}"
    );
    // The whole output on request.
    p.send("/output\r").unwrap();
    p.expect("line15").unwrap();
    p.expect("› ").unwrap();
    p.send("/exit\r").unwrap();
    p.expect(expectrl::Eof).unwrap();
    assert!(!ws.dir.path().join("no.txt").exists());
}

#[test]
fn a_reply_cut_by_the_token_limit_says_so_and_plurals_are_right() {
    let ws = Workspace::new();
    let words: Vec<String> = (0..10).map(|i| format!("w{i} ")).collect();
    let backend = script(&ws, &[json!({"chunks": words})]);
    let out = aintern_in(
        ws.home.path(),
        &[
            "run",
            "--workspace",
            ws.path(),
            "--backend",
            &backend,
            "--max-tokens",
            "3",
            "talk",
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("w0 w1 w2") && !text.contains("w3"), "{text}");
    assert!(
        text.contains("the reply was cut at its token limit, 3 tokens"),
        "{text}"
    );
    assert!(
        text.contains("— 1 iteration · 0 tool calls · 3 tokens"),
        "{text}"
    );

    let backend = script(&ws, &[json!({"chunks": ["Hi."]})]);
    let out = aintern_in(
        ws.home.path(),
        &["run", "--workspace", ws.path(), "--backend", &backend, "hi"],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("— 1 iteration · 0 tool calls · 1 token · "),
        "{text}"
    );
    assert!(!text.contains("token limit"), "{text}");
}
