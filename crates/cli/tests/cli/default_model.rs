//! The real-model tier: what a person gets with no model named, the default model
//! (Qwen2.5-Coder-1.5B-Instruct) choosing its own calls, through `exec --approve all` and
//! over ACP. Each test is skipped with a notice when the model is not fetched
//! (`scripts/setup` fetches it). The tasks are a few plain ones the model does at greedy
//! decoding; the eval suites measure the rest (README, "Evaluating a model").

use super::acp::Raw;
use super::model::default_model;
use super::{aintern_in, completed, results, Workspace};
use core_models::AgentEvent;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn exec(ws: &Workspace, request: &str) -> (Vec<AgentEvent>, core_models::AgentCompleteEvent) {
    let out = aintern_in(
        ws.home.path(),
        &[
            "exec",
            "--approve",
            "all",
            "--workspace",
            ws.path(),
            request,
        ],
        b"",
    );
    let (events, done) = completed(&out);
    (events, done.clone())
}

/// A snapshot of the workspace's files and their contents.
fn files(ws: &Workspace) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(ws.dir.path()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            out.push((
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

/// A request that needs no tool, under `--approve all`: answered in words, and the
/// workspace is left exactly as it was.
#[test]
fn a_request_that_needs_no_tool_leaves_the_workspace_untouched() {
    if default_model().is_none() {
        return;
    }
    let ws = Workspace::new();
    let before = files(&ws);
    let (events, done) = exec(&ws, "Write a four-line poem about the sea.");
    assert_eq!(files(&ws), before, "the workspace changed: {events:?}");
    assert!(
        results(&events)
            .iter()
            .all(|r| r.tool_id == "read_file" || r.tool_id == "list_dir"),
        "{:?}",
        results(&events)
    );
    assert!(
        done.final_response.lines().count() >= 2,
        "{}",
        done.final_response
    );
}

/// An edit the model makes with its own call, and a script it runs and reports on.
#[test]
fn the_default_model_edits_a_file_and_reports_a_script_s_output() {
    if default_model().is_none() {
        return;
    }
    let ws = Workspace::new();
    std::fs::write(
        ws.dir.path().join("config.ini"),
        "[server]\nport = 8080\nhost = localhost\n",
    )
    .unwrap();
    let (events, _) = exec(
        &ws,
        "In config.ini, change the line `port = 8080` to `port = 9090`.",
    );
    let config = std::fs::read_to_string(ws.dir.path().join("config.ini")).unwrap();
    assert!(
        config.contains("9090") && !config.contains("8080") && config.contains("host = localhost"),
        "{config}\n{:?}",
        results(&events)
    );

    std::fs::write(ws.dir.path().join("count.py"), "print(sum(range(1, 11)))\n").unwrap();
    let (events, done) = exec(&ws, "Run count.py with python3 and tell me what it prints.");
    assert!(
        results(&events)
            .iter()
            .any(|r| r.tool_id == "run_command" && r.result.success),
        "{:?}",
        results(&events)
    );
    assert!(
        done.final_response.contains("55"),
        "{}",
        done.final_response
    );
}

/// One ACP turn: the editor sees how far the prompt is read, the model's own call of
/// read_file, and an answer from the file.
#[test]
fn one_acp_turn_with_the_default_model() {
    if default_model().is_none() {
        return;
    }
    let ws = Workspace::new();
    std::fs::write(ws.dir.path().join("notes.txt"), super::model::DEMO_NOTES).unwrap();
    let mut acp = Raw::with_args(&ws, &[]);
    acp.send(&super::model::initialize_asking_for_progress(1));
    acp.response(1);
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": ws.path(), "mcpServers": []}})
        .to_string(),
    );
    let id = acp.response(2)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": id, "prompt": [{"type": "text",
                           "text": "Read the file notes.txt and tell me what it says."}]}})
        .to_string(),
    );
    let (mut progress, mut calls, mut text) = (Vec::new(), Vec::new(), String::new());
    let started = Instant::now();
    let done: Value = loop {
        assert!(started.elapsed() < Duration::from_secs(600), "no end");
        let message = acp.next_within(Duration::from_secs(300));
        match message["method"].as_str() {
            Some("_aintern/prompt_progress") => progress.push(message["params"].clone()),
            Some("session/update") => {
                let update = &message["params"]["update"];
                match update["sessionUpdate"].as_str() {
                    Some("tool_call") => calls.push(update["title"].clone()),
                    Some("agent_message_chunk") => {
                        text.push_str(update["content"]["text"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            _ if message["id"] == json!(3) => break message,
            _ => {}
        }
    };
    assert_eq!(done["result"]["stopReason"], json!("end_turn"), "{done}");
    let last = progress.last().unwrap_or_else(|| panic!("no progress"));
    assert_eq!(last["done"], last["total"], "{progress:?}");
    assert!(!calls.is_empty(), "the model called a tool: {text}");
    let lower = text.to_lowercase();
    assert!(
        ["thursday", "installer", "maria", "budget", "retrospective"]
            .iter()
            .any(|w| lower.contains(w)),
        "{text}"
    );
}
