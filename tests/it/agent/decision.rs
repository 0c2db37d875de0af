//! `auto_tool_choice = "constrained"` (a small model's settings): the first reply is
//! routed by the request's words — to a plain answer with no tool allowed, or to a forced
//! call of the best-ranked tool, its path arguments held to what exists and its text
//! arguments to the request's words — and the answer after the results is asked through
//! `answer_template`. `free` leaves every request as the model's.

use super::{complete, config, harness, run, run_answering, Harness};
use core_models::*;
use serde_json::{json, Value};
use services_ai::{AgentConfig, AutoToolChoice};
use std::sync::Arc;
use test_support::{ScriptedLlm, ScriptedResponse};

fn constrained() -> AgentConfig {
    AgentConfig {
        auto_tool_choice: AutoToolChoice::Constrained,
        path_choices_limit: 100,
        argument_span_words: 4,
        answer_template: "Context:\n{results}\nQuestion: {request}\nAnswer.".into(),
        ..config()
    }
}

fn call(tool: &str, parameters: Value) -> ScriptedResponse {
    let call = json!({"tool": tool, "parameters": parameters});
    ScriptedResponse::chunks([format!("```tool_call\n{call}\n```")])
}

fn text(s: &str) -> ScriptedResponse {
    ScriptedResponse::chunks([s.to_string()])
}

/// A workspace with two files, the real file tools over it, and a request there.
fn setup(responses: Vec<ScriptedResponse>, config: AgentConfig) -> (tempfile::TempDir, Harness) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the meeting is on Friday\n").unwrap();
    std::fs::write(dir.path().join("todo.md"), "- call Anna\n").unwrap();
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(tools::ReadFile::default()),
        Arc::new(tools::ListDir::default()),
        Arc::new(tools::WriteFile::default()),
    ];
    (dir, harness(responses, tools, config))
}

fn request(dir: &tempfile::TempDir, message: &str) -> AgentRequest {
    AgentRequest::new(message).with_tool_context(ToolAvailabilityContext::for_workspace(dir.path()))
}

/// The `enum` the request gave a tool's argument, if any.
fn held(request: &LlmRequest, tool: &str, argument: &str) -> Option<Vec<String>> {
    let definition = request.tools.iter().find(|d| d.id == tool)?;
    let values = definition.input_schema["properties"][argument]["enum"].as_array()?;
    Some(
        values
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
    )
}

fn requests(harness: &Harness) -> Vec<LlmRequest> {
    let llm: &ScriptedLlm = &harness.llm;
    llm.requests()
}

#[tokio::test]
async fn a_request_for_a_file_is_a_forced_call_held_to_the_files_that_exist() {
    let (dir, h) = setup(
        vec![
            call("read_file", json!({"path": "notes.txt"})),
            text("On Friday."),
        ],
        constrained(),
    );
    let events = run(
        &h.agent,
        request(&dir, "When is the meeting? Read notes.txt"),
    )
    .await;
    assert_eq!(complete(&events).final_response, "On Friday.");
    let sent = requests(&h);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].tool_choice, ToolChoice::Tool("read_file".into()));
    assert_eq!(
        held(&sent[0], "read_file", "path"),
        Some(vec!["notes.txt".to_string()]),
        "the file the request names, settled"
    );
    assert_eq!(
        held(&sent[0], "list_dir", "path"),
        Some(vec![".".to_string()]),
        "folders only"
    );
    // The answer: one plain question about the result after the system prompt (its KV
    // cache kept), no tool allowed, stopped where the model would start a new question.
    assert_eq!(sent[1].tool_choice, ToolChoice::None);
    assert_eq!(sent[1].messages.len(), 2);
    assert_eq!(sent[1].messages[0].role, MessageRole::System);
    assert_eq!(sent[1].options.stop, ["\nContext:", "\nQuestion:"]);
    let asked = sent[1].messages[1].as_written();
    assert!(
        asked.starts_with("Context:\nthe meeting is on Friday"),
        "{asked}"
    );
    assert!(
        asked.ends_with("Question: When is the meeting? Read notes.txt\nAnswer."),
        "{asked}"
    );
}

#[tokio::test]
async fn a_request_no_tool_fits_is_answered_in_plain_text() {
    let (dir, h) = setup(vec![text("Paris.")], constrained());
    let events = run(&h.agent, request(&dir, "What is the capital of France?")).await;
    assert_eq!(complete(&events).final_response, "Paris.");
    let sent = requests(&h);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].tool_choice, ToolChoice::None);
}

#[tokio::test]
async fn text_arguments_of_the_routed_call_are_held_to_the_request_words() {
    let (dir, h) = setup(
        vec![
            call("write_file", json!({"path": "hello.txt", "content": "hi"})),
            text("Done."),
        ],
        constrained(),
    );
    let events = run_answering(&h.agent, request(&dir, "Write hi into hello.txt"), |a| {
        a.approve().unwrap();
    })
    .await;
    assert_eq!(complete(&events).tool_calls_executed, 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hi"
    );
    let sent = requests(&h);
    assert_eq!(sent[0].tool_choice, ToolChoice::Tool("write_file".into()));
    let content = held(&sent[0], "write_file", "content").unwrap();
    assert!(content.contains(&"hi".to_string()), "{content:?}");
    assert!(
        !content.contains(&"hello.txt".to_string()),
        "the file's name is the path, not the content: {content:?}"
    );
    assert!(
        content.iter().all(|s| s.split(' ').count() <= 4),
        "{content:?}"
    );
}

#[tokio::test]
async fn required_is_routed_and_free_auto_is_left_to_the_model() {
    let (dir, h) = setup(
        vec![call("list_dir", json!({})), text("Two files.")],
        AgentConfig { ..constrained() },
    );
    let mut asked = request(&dir, "List the folder");
    asked.tool_choice = ToolChoice::Required;
    run(&h.agent, asked).await;
    assert_eq!(
        requests(&h)[0].tool_choice,
        ToolChoice::Tool("list_dir".into())
    );

    let (dir, h) = setup(vec![text("Hello.")], config());
    run(&h.agent, request(&dir, "Read notes.txt")).await;
    let sent = requests(&h);
    assert_eq!(sent[0].tool_choice, ToolChoice::Auto);
    assert_eq!(
        held(&sent[0], "read_file", "path"),
        None,
        "no choices by default"
    );
}

#[tokio::test]
async fn a_request_without_a_file_name_leaves_the_files_to_the_model() {
    let (dir, h) = setup(
        vec![call("read_file", json!({"path": "todo.md"})), text("Anna.")],
        constrained(),
    );
    run(&h.agent, request(&dir, "Read the todo list file")).await;
    assert_eq!(
        held(&requests(&h)[0], "read_file", "path"),
        Some(vec!["notes.txt".to_string(), "todo.md".to_string()])
    );
}

#[tokio::test]
async fn a_folder_the_request_names_comes_back_as_a_settled_argument() {
    let (dir, h) = setup(
        vec![call("list_dir", json!({"path": "src"})), text("main.rs")],
        constrained(),
    );
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    let events = run(
        &h.agent,
        request(&dir, "What files are inside the src folder?"),
    )
    .await;
    assert_eq!(complete(&events).tool_calls_executed, 1);
    let sent = requests(&h);
    assert_eq!(sent[0].tool_choice, ToolChoice::Tool("list_dir".into()));
    // The compact schema left the optional `path` out; named, it is back and required.
    assert_eq!(
        held(&sent[0], "list_dir", "path"),
        Some(vec!["src".to_string()])
    );
    let schema = &sent[0]
        .tools
        .iter()
        .find(|d| d.id == "list_dir")
        .unwrap()
        .input_schema;
    assert_eq!(schema["required"], json!(["path"]));
}

/// A workspace with `file` holding `content`, and every tool `tools` names.
fn narrowing(
    file: &str,
    content: &str,
    responses: Vec<ScriptedResponse>,
) -> (tempfile::TempDir, Harness) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), content).unwrap();
    std::fs::write(dir.path().join("other.txt"), "nothing to see\n").unwrap();
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(tools::ReadFile::default()),
        Arc::new(tools::EditFile::default()),
        Arc::new(tools::SearchFiles::default()),
    ];
    (dir, harness(responses, tools, constrained()))
}

#[tokio::test]
async fn an_edit_is_held_to_a_search_text_in_the_file_and_a_new_replacement() {
    let (dir, h) = narrowing(
        "config.txt",
        "name = demo\nversion = 1.0\n",
        vec![
            call(
                "edit_file",
                json!({"path": "config.txt", "search": "1.0", "replace": "2.0"}),
            ),
            text("Done."),
        ],
    );
    let asked = request(&dir, "In config.txt, change the version from 1.0 to 2.0.");
    let events = run_answering(&h.agent, asked, |a| {
        a.approve().unwrap();
    })
    .await;
    assert_eq!(complete(&events).tool_calls_executed, 1);
    let sent = requests(&h);
    assert_eq!(sent[0].tool_choice, ToolChoice::Tool("edit_file".into()));
    assert_eq!(
        held(&sent[0], "edit_file", "path"),
        Some(vec!["config.txt".to_string()])
    );
    // "version" is in the file too, but only "1.0" is followed by a replacement.
    assert_eq!(
        held(&sent[0], "edit_file", "search"),
        Some(vec!["1.0".to_string()])
    );
    assert_eq!(
        held(&sent[0], "edit_file", "replace"),
        Some(vec!["2.0".to_string()])
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("config.txt")).unwrap(),
        "name = demo\nversion = 2.0\n"
    );
}

#[tokio::test]
async fn a_search_is_held_to_patterns_that_find_something() {
    let (dir, h) = narrowing(
        "plan.txt",
        "The deadline is in March.\n",
        vec![
            call("search_files", json!({"pattern": "deadline"})),
            text("plan.txt"),
        ],
    );
    run(
        &h.agent,
        request(&dir, "Search the files for deadline or budget"),
    )
    .await;
    let sent = requests(&h);
    assert_eq!(sent[0].tool_choice, ToolChoice::Tool("search_files".into()));
    assert_eq!(
        held(&sent[0], "search_files", "pattern"),
        Some(vec!["deadline".to_string()])
    );

    // When nothing would be found, the request's words stand.
    let (dir, h) = narrowing(
        "plan.txt",
        "The deadline is in March.\n",
        vec![
            call("search_files", json!({"pattern": "budget"})),
            text("None."),
        ],
    );
    run(&h.agent, request(&dir, "Search the files for budget")).await;
    assert_eq!(
        held(&requests(&h)[0], "search_files", "pattern"),
        Some(vec!["budget".to_string()])
    );
}

#[tokio::test]
async fn a_later_step_of_the_request_is_a_second_routed_call_before_the_answer() {
    let (dir, h) = setup(
        vec![
            call("read_file", json!({"path": "notes.txt"})),
            call(
                "write_file",
                json!({"path": "copy.txt", "content": "the meeting is on Friday"}),
            ),
            text("Copied."),
        ],
        constrained(),
    );
    let asked = request(&dir, "Read notes.txt and write the same text into copy.txt");
    let events = run_answering(&h.agent, asked, |a| {
        a.approve().unwrap();
    })
    .await;
    let done = complete(&events);
    assert_eq!(
        (done.tool_calls_executed, done.final_response.as_str()),
        (2, "Copied.")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("copy.txt")).unwrap(),
        "the meeting is on Friday"
    );
    let sent = requests(&h);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[1].tool_choice, ToolChoice::Tool("write_file".into()));
    assert_eq!(
        held(&sent[1], "write_file", "path"),
        Some(vec!["copy.txt".to_string()])
    );
    // The content may be the clause's words or what the first call read.
    let content = held(&sent[1], "write_file", "content").unwrap();
    assert!(
        content.contains(&"the meeting is on Friday".to_string()),
        "{content:?}"
    );
    assert_eq!(sent[2].tool_choice, ToolChoice::None, "then the answer");
}

#[tokio::test]
async fn a_clause_that_only_mentions_a_tool_word_in_passing_is_no_step() {
    let (dir, h) = setup(
        vec![
            call("read_file", json!({"path": "notes.txt"})),
            text("Friday."),
        ],
        constrained(),
    );
    let asked = request(&dir, "Read notes.txt and tell me which day the folder says");
    let events = run(&h.agent, asked).await;
    assert_eq!(complete(&events).tool_calls_executed, 1);
    let sent = requests(&h);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].tool_choice, ToolChoice::None);
}
