//! `aintern exec` and `aintern chat` over piped lines, and the tests under a pseudo-terminal
//! (expectrl): `run`'s approval prompt (colours, `NO_COLOR`) and Ctrl-C in `chat`.

use super::{aintern_in, bin, call, completed, Workspace};
use serde_json::json;

#[test]
fn exec_is_run_json_and_chat_carries_on_over_piped_lines() {
    let ws = Workspace::new();
    let script = ws.script(&["First answer.", "Second answer."]);
    let out = aintern_in(
        ws.home.path(),
        &["exec", "--workspace", ws.path(), "--backend", &script, "hi"],
        b"",
    );
    let (_, done) = completed(&out);
    assert_eq!(done.final_response, "First answer.");

    let out = aintern_in(
        ws.home.path(),
        &["chat", "--workspace", ws.path(), "--backend", &script],
        b"hello\n\nand again\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // The second line arrives while the model writes the first reply: it is the next
    // request, never lost.
    let first = text.find("First answer.").expect("first answer");
    let second = text.find("Second answer.").expect("second answer");
    assert!(first < second, "{text}");
    assert!(text[second..].contains("\n— 1 iteration · "), "{text}");
}

// --- under a pseudo-terminal ----------------------------------------------------------------

pub(super) fn pty(ws: &Workspace, args: &[&str]) -> expectrl::Session {
    let mut command = bin(ws.home.path());
    command.args(args);
    let mut session = expectrl::Session::spawn(command).unwrap();
    session.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
    session
}

#[test]
fn the_approval_prompt_under_a_terminal() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("write_file", json!({"path": "a.txt", "content": "hi"})),
        &call("write_file", json!({"path": "b.txt", "content": "hi"})),
        "Both written.",
    ]);
    let mut p = pty(
        &ws,
        &[
            "run",
            "--workspace",
            ws.path(),
            "--backend",
            &script,
            "write",
        ],
    );
    p.expect("Write 2 bytes to a.txt").unwrap();
    p.expect("Approve? [y]es / [n]o / always this [s]ession / always for this [t]ool, in every workspace / whole [d]iff: ")
        .unwrap();
    p.send_line("t").unwrap();
    // The second write is not asked about: the first answer was "always for this tool".
    let rest = p.expect("Both written.").unwrap();
    let before = String::from_utf8_lossy(rest.before()).into_owned();
    assert!(!before.contains("Approve?"), "{before}");
    assert!(
        before.contains('\u{1b}'),
        "colour on a terminal: {before:?}"
    );
    p.expect(expectrl::Eof).unwrap();
    assert!(ws.dir.path().join("a.txt").exists() && ws.dir.path().join("b.txt").exists());
    let saved = std::fs::read_to_string(ws.home.path().join("aintern/permissions.json")).unwrap();
    assert!(saved.contains("write_file"), "{saved}");

    // NO_COLOR: the same terminal, no colour; "n" denies.
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("write_file", json!({"path": "a.txt", "content": "hi"})),
        "Fine.",
    ]);
    let mut command = bin(ws.home.path());
    command.env("NO_COLOR", "1").args([
        "run",
        "--workspace",
        ws.path(),
        "--backend",
        &script,
        "write",
    ]);
    let mut p = expectrl::Session::spawn(command).unwrap();
    p.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
    p.expect("whole [d]iff: ").unwrap();
    p.send_line("n").unwrap();
    let rest = p.expect("Fine.").unwrap();
    let before = String::from_utf8_lossy(rest.before()).into_owned();
    assert!(
        before.contains("⊘ Write File: Denied by the user"),
        "{before}"
    );
    assert!(
        !before.contains("\u{1b}[3"),
        "no colour with NO_COLOR: {before:?}"
    );
    assert!(!ws.dir.path().join("a.txt").exists());
}

#[test]
fn ctrl_c_in_chat_cancels_the_request_not_the_chat() {
    let ws = Workspace::new();
    let file = ws.dir.path().join("slow.json");
    std::fs::write(
        &file,
        json!({"responses": [
            {"chunks": (0..500).map(|i| format!("w{i} ")).collect::<Vec<_>>(), "delay_ms": 20},
            {"chunks": ["Still here."], "delay_ms": 0}
        ]})
        .to_string(),
    )
    .unwrap();
    let script = format!("script:{}", file.display());
    let mut p = pty(
        &ws,
        &["chat", "--workspace", ws.path(), "--backend", &script],
    );
    p.expect("› ").unwrap();
    p.send_line("talk slowly").unwrap();
    p.expect("w1 w2 w3").unwrap();
    p.send(expectrl::ControlCode::EndOfText).unwrap();
    p.expect("cancelled").unwrap();
    p.expect("› ").unwrap();
    p.send_line("are you there?").unwrap();
    p.expect("Still here.").unwrap();
    p.expect("› ").unwrap();
    p.send_line("/exit").unwrap();
    p.expect(expectrl::Eof).unwrap();
}

#[test]
fn the_approval_prompt_is_compact() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call(
            "run_command",
            json!({"command": "python3 make.py > out.txt"}),
        ),
        "Not run.",
    ]);
    let mut command = bin(ws.home.path());
    command.env("NO_COLOR", "1").args([
        "run",
        "--workspace",
        ws.path(),
        "--backend",
        &script,
        "build it",
    ]);
    let mut p = expectrl::Session::spawn(command).unwrap();
    p.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
    let asked = p.expect("Approve? ").unwrap();
    let prompt = String::from_utf8_lossy(asked.before()).into_owned();
    p.send_line("n").unwrap();
    p.expect("Not run.").unwrap();
    let prompt = &prompt[prompt.find("? Run").expect("the question")..];
    let lines: Vec<&str> = prompt.lines().filter(|l| !l.trim().is_empty()).collect();
    // The question, the command, why it is rated so, the sandbox and the warnings.
    assert!(lines.len() <= 5, "{} lines:\n{prompt}", lines.len());
    // The rating once, in the question; why, on one line.
    assert_eq!(prompt.matches("medium").count(), 1, "{prompt}");
    assert!(prompt.contains("(run_command, medium risk)"), "{prompt}");
    assert_eq!(prompt.matches("Why: ").count(), 1, "{prompt}");
    assert_eq!(
        prompt.matches("python3 make.py > out.txt").count(),
        2,
        "the summary and the command, once each: {prompt}"
    );
    assert!(prompt.contains("writes to a file"), "{prompt}");
    assert!(prompt.contains("runs code"), "{prompt}");
    assert!(
        prompt.contains("This runs a command on your machine"),
        "{prompt}"
    );
}
