//! Policy as code through the binary: rule files (the user's, a workspace's) decide calls
//! whatever `--approve` says, a broken example refuses to start, `aintern rules check` and
//! `explain`; hooks of the user's configuration deny, ask, add context, are stopped when
//! they hang, see the call as the model wrote it, and a workspace's `[hooks]` are ignored.

use super::{aintern_in, call, result_texts, run_json, spawn_json, Workspace};
use core_models::{AgentEvent, PolicyOutcome};
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Write a rule file of the user's own.
fn user_rules(ws: &Workspace, name: &str, text: &str) -> PathBuf {
    let dir = ws.home.path().join("aintern/rules");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

/// Write a rule file of the workspace's own.
fn workspace_rules(ws: &Workspace, name: &str, text: &str) {
    let dir = ws.dir.path().join(".aintern/rules");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

/// Write the user's `aintern.toml`.
fn user_config(ws: &Workspace, text: &str) {
    let dir = ws.home.path().join("aintern");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("aintern.toml"), text).unwrap();
}

/// An executable shell script `name` in the user's home folder (outside the workspace).
fn hook_script(ws: &Workspace, name: &str, body: &str) -> String {
    let file = ws.home.path().join(name);
    std::fs::write(&file, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    file.to_str().unwrap().to_string()
}

fn decisions(events: &[AgentEvent]) -> Vec<core_models::PolicyDecisionEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::PolicyDecision(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

fn asked(events: &[AgentEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ApprovalRequest(_)))
        .count()
}

fn exists(ws: &Workspace, name: &str) -> bool {
    ws.dir.path().join(name).exists()
}

const NO_TOUCH: &str = "[[rule]]\nname = \"no-touch\"\ncommand = [\"touch\"]\ndecision = \"forbid\"\njustification = \"files are made with write_file\"\nmatch = [\"touch a\"]\nnot_match = [\"ls\"]\n";

#[test]
fn a_forbidding_rule_refuses_every_spelling_even_under_approve_all() {
    let ws = Workspace::new();
    user_rules(&ws, "files.toml", NO_TOUCH);
    let lines = [
        "touch p1",
        "'touch' p2",
        "sh -c 'touch p3'",
        "env X=1 touch p4",
        "/usr/bin/touch p5",
        "command touch p6",
        "$(echo touch) p7",
        "eval 'touch p8'",
        "echo ok > made.txt",
    ];
    let mut replies: Vec<String> = lines
        .iter()
        .map(|l| call("run_command", json!({ "command": l })))
        .collect();
    replies.push("Done.".into());
    let replies: Vec<&str> = replies.iter().map(String::as_str).collect();
    let script = ws.script(&replies);
    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for n in 1..=8 {
        assert!(
            !exists(&ws, &format!("p{n}")),
            "p{n} was made: {:?}",
            result_texts(&events)
        );
    }
    // The line no rule matches ran.
    assert!(exists(&ws, "made.txt"), "{:?}", result_texts(&events));
    let texts = result_texts(&events);
    assert!(
        texts[0].contains("no-touch") && texts[0].contains("write_file"),
        "{texts:?}"
    );
    let forbids = decisions(&events)
        .iter()
        .filter(|d| d.outcome == PolicyOutcome::Forbid)
        .count();
    assert_eq!(forbids, 8, "{:?}", decisions(&events));
}

#[test]
fn a_workspace_rule_may_tighten_but_never_loosen() {
    let ws = Workspace::new();
    user_rules(
        &ws,
        "ask.toml",
        "[[rule]]\ncommand = [\"touch\"]\ndecision = \"ask\"\n",
    );
    // The workspace would allow touch and forbid mkdir.
    workspace_rules(
        &ws,
        "project.toml",
        "[[rule]]\ncommand = [\"touch\"]\ndecision = \"allow\"\n[[rule]]\ncommand = [\"mkdir\"]\ndecision = \"forbid\"\n",
    );
    let script = ws.script(&[
        &call("run_command", json!({"command": "touch t"})),
        &call("run_command", json!({"command": "mkdir d"})),
        "Done.",
    ]);
    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The user's ask stands (no one answers: not run); the workspace's forbid holds.
    assert_eq!(asked(&events), 1, "{:?}", result_texts(&events));
    assert!(!exists(&ws, "t") && !exists(&ws, "d"));
    let said = String::from_utf8_lossy(&out.stderr);
    let check = aintern_in(
        ws.home.path(),
        &["rules", "check", "--workspace", ws.path()],
        b"",
    );
    assert!(check.status.success());
    let warned = String::from_utf8_lossy(&check.stderr);
    assert!(
        warned.contains("project.toml:1") && warned.contains("only ask or forbid"),
        "{warned} / {said}"
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("2 rules"));
}

#[test]
fn a_rule_whose_example_fails_stops_the_start_naming_file_and_line() {
    let ws = Workspace::new();
    let broken = NO_TOUCH.replace("not_match = [\"ls\"]", "not_match = [\"ls\", \"touch b\"]");
    let file = user_rules(&ws, "files.toml", &broken);
    let script = ws.script(&["Hello."]);
    let (out, _) = run_json(&ws, &script, &[], b"");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    let at = format!("{}:7", file.display());
    assert!(said.contains(&at) && said.contains("no-touch"), "{said}");
    let check = aintern_in(
        ws.home.path(),
        &["rules", "check", "--workspace", ws.path()],
        b"",
    );
    assert!(!check.status.success());
    assert!(String::from_utf8_lossy(&check.stderr).contains(&at));
    let one = aintern_in(
        ws.home.path(),
        &["rules", "check", file.to_str().unwrap()],
        b"",
    );
    assert!(!one.status.success());
}

#[test]
fn explain_shows_the_commands_the_rule_and_the_outcome() {
    let ws = Workspace::new();
    user_rules(&ws, "files.toml", NO_TOUCH);
    let explain = |line: &str| -> Value {
        let out = aintern_in(
            ws.home.path(),
            &["rules", "explain", line, "--workspace", ws.path(), "--json"],
            b"",
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let e = explain("sh -c 'cd src && touch x'");
    assert_eq!(e["decision"], "forbid", "{e}");
    assert!(
        e["rule"]["rule"].as_str().unwrap().contains("no-touch"),
        "{e}"
    );
    assert!(
        e["commands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "touch x"),
        "{e}"
    );
    assert!(
        e["explanation"].as_str().unwrap().contains("--approve all"),
        "{e}"
    );
    let e = explain("ls -la");
    assert_eq!(e["decision"], "approval", "{e}");
    assert!(e["rule"].is_null());
    let e = explain("rm -rf /");
    assert_eq!(e["risk"], "critical", "{e}");
    assert_eq!(e["decision"], "ask", "{e}");
    let text = aintern_in(
        ws.home.path(),
        &["rules", "explain", "env touch x", "--workspace", ws.path()],
        b"",
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("rule: rule no-touch") && text.contains("decision: refused"),
        "{text}"
    );
}

/// The config of one `before_tool` hook running `script`.
fn before_tool(script: &str, timeout_ms: u64) -> String {
    format!(
        "[[hooks.before_tool]]\nname = \"guard\"\ncommand = [\"{script}\"]\ntimeout_ms = {timeout_ms}\n"
    )
}

fn write_call() -> String {
    call("write_file", json!({"path": "w.txt", "content": "hi"}))
}

/// A `run --json --approve all` whose model writes `w.txt`, with one `before_tool` hook
/// (script `name`, `body`) of the user's configuration.
fn hooked_write(
    ws: &Workspace,
    name: &str,
    body: &str,
    timeout_ms: u64,
) -> (std::process::Output, Vec<AgentEvent>) {
    let script = hook_script(ws, name, body);
    user_config(ws, &before_tool(&script, timeout_ms));
    let backend = ws.script(&[&write_call(), "Done."]);
    let (out, events) = run_json(ws, &backend, &["--approve", "all"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, events)
}

#[test]
fn a_before_tool_hook_denies_and_sees_the_call_as_the_model_wrote_it() {
    let ws = Workspace::new();
    let seen = ws.dir.path().join("seen.json");
    let body = format!(
        "cat > '{}'\necho '{{\"decision\":\"deny\",\"reason\":\"not on Fridays\"}}'",
        seen.display()
    );
    let (_, events) = hooked_write(&ws, "deny.sh", &body, 10_000);
    assert!(!exists(&ws, "w.txt"));
    let texts = result_texts(&events);
    assert!(texts[0].contains("not on Fridays"), "{texts:?}");
    let d = decisions(&events);
    assert!(
        d.iter()
            .any(|d| d.outcome == PolicyOutcome::Deny && d.name == "guard"),
        "{d:?}"
    );
    // The decision is kept with the saved session.
    let id = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::SessionStarted(s) => Some(s.session_id.to_string()),
            _ => None,
        })
        .expect("a session");
    let shown = aintern_in(ws.home.path(), &["sessions", "show", &id], b"");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("hook guard: deny (not on Fridays)"),
        "{shown}"
    );
    let told: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(told["event"], "before_tool", "{told}");
    assert_eq!(told["call"]["tool"], "write_file", "{told}");
    assert_eq!(
        told["call"]["arguments"],
        json!({"path": "w.txt", "content": "hi"}),
        "{told}"
    );
}

#[test]
fn a_hook_that_asks_puts_the_call_to_a_person_under_approve_all() {
    let ws = Workspace::new();
    let body = "cat >/dev/null\necho '{\"decision\":\"ask\",\"reason\":\"a new file\"}'";
    let (_, events) = hooked_write(&ws, "ask.sh", body, 10_000);
    assert_eq!(asked(&events), 1);
    assert!(!exists(&ws, "w.txt"));
}

#[test]
fn a_hook_that_hangs_is_stopped_and_its_call_refused() {
    let ws = Workspace::new();
    let started = std::time::Instant::now();
    let (_, events) = hooked_write(&ws, "hang.sh", "sleep 60", 300);
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    assert!(!exists(&ws, "w.txt"));
    let d = decisions(&events);
    assert!(
        d.iter().any(|d| d.outcome == PolicyOutcome::Failed),
        "{d:?}"
    );
}

#[test]
fn an_after_tool_hook_adds_context_for_the_model() {
    let ws = Workspace::new();
    let script = hook_script(
        &ws,
        "lint.sh",
        "cat >/dev/null\necho '{\"context\":\"lint: 2 warnings in w.txt\"}'",
    );
    user_config(
        &ws,
        &format!("[[hooks.after_tool]]\nname = \"lint\"\ncommand = [\"{script}\"]\n"),
    );
    let backend = ws.script(&[&write_call(), "Done."]);
    let (out, events) = run_json(&ws, &backend, &["--approve", "all"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(exists(&ws, "w.txt"));
    let texts = result_texts(&events);
    assert!(
        texts[0].contains("[hook lint] lint: 2 warnings in w.txt"),
        "{texts:?}"
    );
}

#[test]
fn a_workspace_cannot_configure_hooks() {
    let ws = Workspace::new();
    let marker = ws.dir.path().join("ran");
    let script = hook_script(
        &ws,
        "mark.sh",
        &format!("touch '{}'\necho '{{}}'", marker.display()),
    );
    std::fs::write(
        Path::new(ws.path()).join("aintern.toml"),
        format!("[[hooks.request_submitted]]\ncommand = [\"{script}\"]\n"),
    )
    .unwrap();
    let backend = ws.script(&["Hello."]);
    let (out, _) = run_json(&ws, &backend, &[], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!marker.exists(), "a workspace's hook ran");
    assert!(String::from_utf8_lossy(&out.stderr).contains("hooks"));
}

#[test]
fn a_call_a_hook_asks_about_runs_when_a_person_approves_it() {
    let ws = Workspace::new();
    let script = hook_script(
        &ws,
        "ask.sh",
        "cat >/dev/null\necho '{\"decision\":\"ask\",\"reason\":\"a new file\"}'",
    );
    user_config(&ws, &before_tool(&script, 10_000));
    let backend = ws.script(&[&write_call(), "Done."]);
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &backend, "write it");
    let mut asked = Vec::new();
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if let AgentEvent::ApprovalRequest(a) = &event {
            asked.push(a.asked_by_policy.clone());
            writeln!(
                stdin,
                "{}",
                json!({"op": "approve", "call_id": a.request.id})
            )
            .unwrap();
        }
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0]
            .as_deref()
            .is_some_and(|w| w.contains("a new file")),
        "{asked:?}"
    );
    assert!(exists(&ws, "w.txt"));
}

#[test]
fn a_tool_rule_forbids_by_argument_whatever_the_path_spelling() {
    let ws = Workspace::new();
    user_rules(
        &ws,
        "secrets.toml",
        "[[rule]]\ntool = \"write_file\"\narguments = { path = \"secrets/**\" }\ndecision = \"forbid\"\nmatch = [{ path = \"secrets/key\" }]\n",
    );
    std::fs::create_dir(ws.dir.path().join("secrets")).unwrap();
    let write = |path: &str| call("write_file", json!({"path": path, "content": "x"}));
    let backend = ws.script(&[
        &write("secrets/a"),
        &write("./secrets/b"),
        &write("src/../secrets/c"),
        &write("open.txt"),
        "Done.",
    ]);
    let (out, events) = run_json(&ws, &backend, &["--approve", "all"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in ["a", "b", "c"] {
        assert!(
            !ws.dir.path().join("secrets").join(f).exists(),
            "{f}: {:?}",
            result_texts(&events)
        );
    }
    assert!(exists(&ws, "open.txt"));
}
