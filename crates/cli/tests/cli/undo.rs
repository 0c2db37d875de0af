//! `aintern undo` after scripted runs: a write, an edit and a command that changes files
//! are undone byte for byte (modes, deleted files back, created files gone), a git
//! workspace's `.git` is untouched, a person's later change is reported and kept, the
//! session is told; the plan tool's calls arrive as `plan_updated` events; and an ACP
//! client sees `plan` updates and drives a rewind.

use super::acp::{clients, drive_with, updates};
use super::{aintern_in, call, completed, events, Workspace};
use core_models::AgentEvent;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every path beneath `root` but `skip` (not following links) with its mode and bytes.
fn tree(root: &Path, skip: &[&str]) -> Vec<(String, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if skip
                .iter()
                .any(|s| rel == *s || rel.starts_with(&format!("{s}/")))
            {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let bytes = if meta.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            if meta.is_dir() {
                stack.push(p);
            }
            out.push((rel, meta.permissions().mode(), bytes));
        }
    }
    out.sort();
    out
}

fn project(ws: &Workspace) {
    let p = ws.dir.path();
    std::fs::write(p.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(p.join("old.txt"), "an old file\n").unwrap();
}

/// A run that writes a file, edits one and runs a command that changes modes, deletes a
/// file and makes a folder.
fn changing_run(ws: &Workspace) -> Vec<AgentEvent> {
    let script = ws.script(&[
        &call("write_file", json!({"path": "new.txt", "content": "made by the agent\n"})),
        &call(
            "edit_file",
            json!({"path": "notes.txt", "search": "Buy milk. Call Bob.", "replace": "Buy bread."}),
        ),
        &call(
            "run_command",
            json!({"command": "chmod 600 run.sh && rm old.txt && mkdir -p made/deep && echo x > made/deep/f.txt"}),
        ),
        "Done.",
    ]);
    let out = aintern_in(
        ws.home.path(),
        &[
            "exec",
            "--approve",
            "all",
            "--workspace",
            ws.path(),
            "--backend",
            &script,
            "change things",
        ],
        b"",
    );
    let (events, _) = completed(&out);
    assert!(
        ws.dir.path().join("made/deep/f.txt").exists(),
        "the command ran"
    );
    assert!(!ws.dir.path().join("old.txt").exists());
    events
}

fn undo(ws: &Workspace, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["undo", "--workspace", ws.path()];
    args.extend_from_slice(extra);
    aintern_in(ws.home.path(), &args, b"")
}

#[test]
fn a_write_an_edit_and_a_command_are_undone_byte_for_byte() {
    let ws = Workspace::new();
    project(&ws);
    let before = tree(ws.dir.path(), &["script.json"]);
    changing_run(&ws);

    let listed = undo(&ws, &["--list", "--json"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let requests = listed["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 1, "{listed}");
    assert_eq!(requests[0]["label"], json!("change things"));
    let changed: Vec<&str> = requests[0]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for path in [
        "new.txt",
        "notes.txt",
        "run.sh",
        "old.txt",
        "made/deep/f.txt",
    ] {
        assert!(changed.contains(&path), "{path} in {changed:?}");
    }

    // Without --yes and without a terminal to ask at, nothing is restored.
    let refused = undo(&ws, &[]);
    assert!(!refused.status.success());
    assert!(ws.dir.path().join("new.txt").exists());
    let shown = String::from_utf8_lossy(&refused.stdout);
    assert!(
        shown.contains("-Buy bread.") && shown.contains("+Buy milk. Call Bob."),
        "{shown}"
    );

    let done = undo(&ws, &["--yes"]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(tree(ws.dir.path(), &["script.json"]), before);
    // Nothing is left to undo but the undo itself.
    let again = undo(&ws, &["--yes"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("already as it was"));
}

#[test]
fn in_a_git_workspace_the_git_folder_is_untouched() {
    let ws = Workspace::new();
    project(&ws);
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(ws.dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@e")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@e")
            .output()
    };
    if !git(&["init", "-q"]).is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: git is not installed");
        return;
    }
    git(&["add", "-A"]).unwrap();
    git(&["commit", "-qm", "start"]).unwrap();
    let before = tree(ws.dir.path(), &[".git", "script.json"]);
    changing_run(&ws);
    let git_before = tree(&ws.dir.path().join(".git"), &[]);
    let done = undo(&ws, &["--yes"]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(tree(ws.dir.path(), &[".git", "script.json"]), before);
    assert_eq!(tree(&ws.dir.path().join(".git"), &[]), git_before);
}

#[test]
fn a_persons_later_change_is_reported_and_kept_and_the_session_is_told() {
    let ws = Workspace::new();
    project(&ws);
    let events = changing_run(&ws);
    let Some(AgentEvent::SessionStarted(started)) = events.first() else {
        panic!("{:?}", events.first())
    };
    let session = started.session_id.to_string();
    // The person edits a file the agent changed.
    std::fs::write(ws.dir.path().join("new.txt"), "the person's words\n").unwrap();

    let done = undo(&ws, &["--yes", "--json"]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let report: Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(
        report["plan"]["conflicts"][0]["step"]["path"],
        json!("new.txt"),
        "{report}"
    );
    assert_eq!(report["restored"]["kept"], json!(["new.txt"]));
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("new.txt")).unwrap(),
        "the person's words\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("notes.txt")).unwrap(),
        "Buy milk. Call Bob.\n"
    );

    // The next request of the session carries what was undone, once.
    let script = ws.script(&["Noted.", "Again."]);
    for message in ["what now?", "and now?"] {
        let out = aintern_in(
            ws.home.path(),
            &[
                "exec",
                "--workspace",
                ws.path(),
                "--backend",
                &script,
                "--resume",
                &session,
                message,
            ],
            b"",
        );
        completed(&out);
    }
    let shown = aintern_in(
        ws.home.path(),
        &["sessions", "show", &session, "--json"],
        b"",
    );
    let messages: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let users: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == json!("user"))
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(
        users[1].starts_with("[The person undid") && users[1].ends_with("what now?"),
        "{users:?}"
    );
    assert!(users[1].contains("notes.txt"), "{users:?}");
    assert_eq!(users[2], "and now?");
}

fn plan_call(steps: &[(&str, &str)]) -> String {
    let steps: Vec<Value> = steps
        .iter()
        .map(|(s, st)| json!({"step": s, "status": st}))
        .collect();
    call("update_plan", json!({ "steps": steps }))
}

#[test]
fn the_plan_tool_is_offered_on_request_and_its_calls_are_plan_events() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &plan_call(&[("Read the notes", "in_progress"), ("Answer", "pending")]),
        &plan_call(&[("Read the notes", "done"), ("Answer", "in_progress")]),
        "They say to buy milk.",
    ]);
    let run = |extra: &[&str]| {
        let mut args = vec!["exec", "--workspace", ws.path(), "--backend", &script];
        args.extend_from_slice(extra);
        args.push("what do the notes say?");
        events(&aintern_in(ws.home.path(), &args, b"").stdout)
    };
    let plans: Vec<Vec<(String, String)>> = run(&["--plan"])
        .iter()
        .filter_map(|e| match e {
            AgentEvent::PlanUpdated(p) => Some(
                p.steps
                    .iter()
                    .map(|s| {
                        (
                            s.step.clone(),
                            serde_json::to_value(s.status)
                                .unwrap()
                                .as_str()
                                .unwrap()
                                .to_string(),
                        )
                    })
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(plans.len(), 2, "{plans:?}");
    assert_eq!(plans[1][0], ("Read the notes".into(), "done".into()));
    assert_eq!(plans[1][1], ("Answer".into(), "in_progress".into()));
    // Not offered by default: the call is refused and no plan is shown.
    let without = run(&[]);
    assert!(!without
        .iter()
        .any(|e| matches!(e, AgentEvent::PlanUpdated(_))));
}

#[test]
fn an_acp_client_sees_plan_updates_and_drives_a_rewind() {
    let Some(clients) = clients() else { return };
    let ws = Workspace::new();
    let root = ws.dir.path().canonicalize().unwrap();
    let script = ws.script(&[
        &plan_call(&[("Write out.txt", "in_progress")]),
        &call(
            "write_file",
            json!({"path": "out.txt", "content": "new text\n"}),
        ),
        &plan_call(&[("Write out.txt", "done")]),
        "Written.",
        "Noted.",
    ]);
    let cwd = root.to_str().unwrap();
    let steps = json!([
        {"op": "initialize", "fs": false},
        {"op": "new", "cwd": cwd},
        {"op": "prompt", "text": "Write out.txt", "permission": "allow_once"},
        {"op": "prompt", "text": "/rewind"},
        {"op": "prompt", "text": "/undo", "permission": "allow_once"},
        {"op": "prompt", "text": "and now?"},
    ]);
    let r = drive_with(&clients, &ws, &script, &["--plan"], &steps);
    let commands = updates(&r[1], "available_commands_update");
    let names: Vec<&str> = commands
        .iter()
        .flat_map(|u| u["availableCommands"].as_array().unwrap())
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"undo") && names.contains(&"rewind"),
        "{}",
        r[1]
    );

    let plans = updates(&r[2], "plan");
    assert_eq!(plans.len(), 2, "{}", r[2]);
    assert_eq!(plans[1]["entries"][0]["status"], json!("completed"));
    assert_eq!(plans[1]["entries"][0]["content"], json!("Write out.txt"));
    let written = updates(&r[2], "tool_call_update");
    assert!(
        written.iter().any(|u| u["status"] == json!("completed")),
        "{}",
        r[2]
    );

    let listing: String = updates(&r[3], "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect();
    assert!(
        listing.contains("Write out.txt") && listing.contains("out.txt"),
        "{listing}"
    );
    assert!(
        r[3]["permissions"].as_array().unwrap().is_empty(),
        "a listing asks nothing"
    );

    let rewind = &r[4];
    assert_eq!(
        rewind["result"]["stopReason"],
        json!("end_turn"),
        "{rewind}"
    );
    let asked = &rewind["permissions"][0];
    assert!(
        asked["toolCall"]["title"]
            .as_str()
            .unwrap()
            .starts_with("Restore the workspace"),
        "{asked}"
    );
    let shown = asked["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        shown.contains("removed") && shown.contains("out.txt"),
        "{shown}"
    );
    assert!(
        !root.join("out.txt").exists(),
        "the rewind removed what the agent made"
    );
    let told: String = updates(rewind, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect();
    assert!(told.contains("restored 1 path"), "{told}");
    assert_eq!(r[5]["result"]["stopReason"], json!("end_turn"), "{}", r[5]);
}
