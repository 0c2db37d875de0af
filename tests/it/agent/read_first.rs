//! Read before change (`read_before_change = "always"`): with the real file tools, a
//! whole-file write over an existing file the conversation has not seen is refused before
//! anyone is asked (the file stays as it was, the model is told to read it first); after a
//! read, or over a file the model wrote itself, the same write runs. A new or empty file,
//! and an edit, need no read; a read written in the same reply as the write does not
//! count; `never`, the default, leaves writes alone even for a model of 1.5B parameters.

use super::{call, complete, config, harness_over, results, run_answering, text, Harness};
use core_models::*;
use serde_json::json;
use services_ai::{AgentConfig, DefaultPermissionManager, ReadBeforeChange};
use std::sync::Arc;
use test_support::{ScriptedLlm, ScriptedResponse};

const NOTES: &str = "the meeting is on Friday\nbring cake\n";

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), NOTES).unwrap();
    std::fs::write(dir.path().join("empty.txt"), "").unwrap();
    dir
}

fn file_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(tools::ReadFile::default()),
        Arc::new(tools::WriteFile::default()),
        Arc::new(tools::EditFile::default()),
    ]
}

/// A workspace holding `notes.txt` and `empty.txt`, the real file tools over it, and a
/// model of 1.5B parameters.
fn setup(responses: Vec<ScriptedResponse>, mode: ReadBeforeChange) -> (tempfile::TempDir, Harness) {
    let config = AgentConfig {
        read_before_change: mode,
        ..config()
    };
    let llm = ScriptedLlm::new(responses).with_parameters(1_500_000_000);
    let permissions = Arc::new(DefaultPermissionManager::in_memory());
    (
        workspace(),
        harness_over(llm, file_tools(), config, permissions),
    )
}

async fn go(h: &Harness, dir: &tempfile::TempDir, message: &str) -> Vec<AgentEvent> {
    let request = AgentRequest::new(message)
        .with_tool_context(ToolAvailabilityContext::for_workspace(dir.path()));
    run_answering(&h.agent, request, |a| a.approve().unwrap()).await
}

fn asked(events: &[AgentEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ApprovalRequest(_)))
        .count()
}

fn read(dir: &tempfile::TempDir, name: &str) -> String {
    std::fs::read_to_string(dir.path().join(name)).unwrap()
}

fn write(path: &str, content: &str) -> String {
    call("write_file", json!({"path": path, "content": content}))
}

#[tokio::test]
async fn an_unseen_file_is_read_before_it_is_replaced() {
    let (dir, h) = setup(
        vec![
            text(&write("notes.txt", "Monday\n")),
            text(&call("read_file", json!({"path": "./notes.txt"}))),
            text(&write(
                "notes.txt",
                "the meeting is on Monday\nbring cake\n",
            )),
            text("Moved to Monday."),
        ],
        ReadBeforeChange::Always,
    );
    let events = go(&h, &dir, "Move the meeting to Monday.").await;
    assert_eq!(complete(&events).final_response, "Moved to Monday.");
    let results = results(&events);
    assert_eq!(results.len(), 3);
    let refused = results[0]
        .result
        .error_message
        .as_deref()
        .unwrap_or_default();
    assert!(!results[0].result.success);
    assert!(refused.contains("Read it first"), "{refused}");
    // Refused before anyone was asked: only the write after the read was put to a person.
    assert_eq!(asked(&events), 1);
    assert!(results[2].result.success, "{:?}", results[2].result);
    assert_eq!(
        read(&dir, "notes.txt"),
        "the meeting is on Monday\nbring cake\n"
    );
}

#[tokio::test]
async fn an_unseen_file_written_whole_is_kept() {
    let (dir, h) = setup(
        vec![
            text(&write("notes.txt", "Monday\n")),
            text("It did not run."),
        ],
        ReadBeforeChange::Always,
    );
    let events = go(&h, &dir, "Put Monday in notes.txt.").await;
    assert_eq!(complete(&events).final_response, "It did not run.");
    let result = &results(&events)[0].result;
    assert!(!result.success);
    assert!(
        result
            .error_message
            .as_deref()
            .unwrap_or_default()
            .contains("replace all of it"),
        "{result:?}"
    );
    assert_eq!(asked(&events), 0);
    assert_eq!(read(&dir, "notes.txt"), NOTES);
}

#[tokio::test]
async fn new_empty_self_written_and_edited_files_need_no_read() {
    let (dir, h) = setup(
        vec![
            text(&write("new.txt", "one\n")),
            text(&write("empty.txt", "two\n")),
            text(&write("new.txt", "1\n")),
            text(&call(
                "edit_file",
                json!({"path": "notes.txt", "search": "Friday", "replace": "Monday"}),
            )),
            text("Done."),
        ],
        ReadBeforeChange::Always,
    );
    let events = go(&h, &dir, "Write them.").await;
    assert_eq!(complete(&events).final_response, "Done.");
    assert!(
        results(&events).iter().all(|r| r.result.success),
        "{:?}",
        results(&events)
    );
    assert_eq!(read(&dir, "new.txt"), "1\n");
    assert_eq!(read(&dir, "empty.txt"), "two\n");
    assert_eq!(
        read(&dir, "notes.txt"),
        "the meeting is on Monday\nbring cake\n"
    );
}

#[tokio::test]
async fn a_read_in_the_same_reply_does_not_count() {
    let both = format!(
        "{}\n{}",
        call("read_file", json!({"path": "notes.txt"})),
        write("notes.txt", "Monday\n")
    );
    let (dir, h) = setup(vec![text(&both), text("Done.")], ReadBeforeChange::Always);
    let events = go(&h, &dir, "Move the meeting to Monday.").await;
    assert_eq!(complete(&events).final_response, "Done.");
    let results = results(&events);
    assert_eq!(results.len(), 2);
    let of = |tool: &str| &results.iter().find(|r| r.tool_id == tool).unwrap().result;
    assert!(of("read_file").success);
    assert!(!of("write_file").success);
    assert_eq!(read(&dir, "notes.txt"), NOTES);
}

#[tokio::test]
async fn never_the_default_leaves_writes_alone() {
    assert_eq!(config().read_before_change, ReadBeforeChange::Never);
    let (dir, h) = setup(
        vec![text(&write("notes.txt", "Monday\n")), text("Done.")],
        ReadBeforeChange::Never,
    );
    go(&h, &dir, "Put Monday in notes.txt.").await;
    assert_eq!(read(&dir, "notes.txt"), "Monday\n");
}
