//! What a real tool-trained model (Qwen2.5-Coder-1.5B through its Hermes template) does,
//! scripted: calls in other spellings run like native ones (judged and approved alike,
//! marked as recovered), a repeated call is answered instead of shown again, empty
//! optional arguments count as absent, an unknown tool or a skill's name gets a hint, an
//! edit that cannot apply is refused before anyone is asked, a described call is asked
//! again, an answer held to a schema
//! still lets the model look first, and a reply cut short keeps what it said.

use super::{complete, config, harness_over, kinds, results, run, run_answering, text};
use core_models::*;
use serde_json::json;
use services_ai::{AgentConfig, DefaultPermissionManager};
use std::sync::Arc;
use std::time::Duration;
use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

/// A scripted model whose template renders tools in the Hermes format.
fn hermes(responses: Vec<ScriptedResponse>) -> ScriptedLlm {
    ScriptedLlm::new(responses).with_chat_format(
        ChatFormat::default()
            .with_call_format("hermes".to_string())
            .with_renders_tools(true),
    )
}

fn agent(
    responses: Vec<ScriptedResponse>,
    tools: Vec<Arc<dyn Tool>>,
    config: AgentConfig,
) -> super::Harness {
    harness_over(
        hermes(responses),
        tools,
        config,
        Arc::new(DefaultPermissionManager::in_memory()),
    )
}

fn request(message: &str) -> AgentRequest {
    super::workspace_request(message)
}

fn reader() -> Arc<MockTool> {
    Arc::new(
        MockTool::new("read_file")
            .with_risk(RiskLevel::Safe)
            .with_execute(|_| async { ToolResult::success("milk, eggs") }),
    )
}

fn calls(events: &[AgentEvent]) -> Vec<&ToolCallRequest> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallRequest(r) => Some(&r.request),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_bare_json_call_runs_and_is_marked_recovered() {
    let h = agent(
        vec![
            text(r#"{"name": "read_file", "arguments": {"path": "list.txt"}}"#),
            text("You need milk and eggs."),
        ],
        vec![reader()],
        config(),
    );
    let events = run(&h.agent, request("What is on list.txt?")).await;
    let made = calls(&events);
    assert_eq!(made.len(), 1, "{:?}", kinds(&events));
    assert_eq!(made[0].recovered.as_deref(), Some("bare JSON"));
    assert!(results(&events)[0].result.success);
    let done = complete(&events);
    assert_eq!(done.final_response, "You need milk and eggs.");
    // The conversation shows the call in the model's own syntax, as a call.
    let history = h.agent.conversation();
    let assistant = history
        .iter()
        .find(|m| m.role == MessageRole::Assistant && !m.tool_calls.is_empty())
        .unwrap();
    assert_eq!(assistant.tool_calls[0].name, "read_file");
    assert!(assistant.content.is_empty(), "{:?}", assistant.content);
}

/// A recovered call is the model's own call: a risky one is put to a person like any
/// other, and the approval says how it was written.
#[tokio::test]
async fn a_recovered_call_is_judged_and_approved_like_any_other() {
    let h = agent(
        vec![
            text("```json\n{\"name\": \"deploy\", \"arguments\": {\"target\": \"prod\"}}\n```"),
            text("Not deployed."),
        ],
        vec![super::risky("deploy")],
        config(),
    );
    let mut asked = Vec::new();
    let events = run_answering(&h.agent, request("deploy it"), |a| {
        asked.push(a.request.recovered.clone());
        a.deny(Some("no".into())).unwrap();
    })
    .await;
    assert_eq!(asked, [Some("a ```json fence".to_string())]);
    assert!(results(&events)[0].result.denied);
    assert_eq!(complete(&events).tool_calls_executed, 0);
}

/// A reply that only repeats a call made already: the model is asked for its answer (no
/// tool allowed), not shown the same result again.
#[tokio::test]
async fn a_repeated_call_is_answered_not_run_again() {
    let read = text(r#"<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>"#);
    let h = agent(
        vec![read.clone(), read, text("It says milk and eggs.")],
        vec![reader()],
        config(),
    );
    let events = run(&h.agent, request("Read a")).await;
    assert_eq!(results(&events).len(), 1, "{:?}", kinds(&events));
    assert_eq!(complete(&events).final_response, "It says milk and eggs.");
    let asked = h.llm.requests();
    let last = asked.last().unwrap();
    assert_eq!(last.tool_choice, ToolChoice::None);
    assert!(last
        .messages
        .last()
        .is_some_and(|m| m.content.contains("Answer my request now")));
    assert!(!results(&events)
        .iter()
        .any(|r| r.result.content.contains("Not run again")));
}

/// A first reply that names a tool and calls none (the model describes the call and
/// imagines the file) is asked once more, with a note that nothing ran; the model's call
/// then runs. An answer naming no tool, or one after calls ran, is the answer.
#[tokio::test]
async fn a_described_call_is_asked_again_once() {
    let h = agent(
        vec![
            text("I will use the `read_file` function on list.txt. It says bread."),
            text(
                r#"<tool_call>{"name": "read_file", "arguments": {"path": "list.txt"}}</tool_call>"#,
            ),
            text("I used read_file: it says milk and eggs."),
        ],
        vec![reader()],
        config(),
    );
    let events = run(&h.agent, request("What is on list.txt?")).await;
    assert_eq!(results(&events).len(), 1, "{:?}", kinds(&events));
    assert_eq!(
        complete(&events).final_response,
        "I used read_file: it says milk and eggs."
    );
    let asked = h.llm.requests();
    assert_eq!(asked.len(), 3);
    let again = &asked[1];
    assert_eq!(again.tool_choice, ToolChoice::Auto);
    assert!(!again.tools.is_empty());
    let note = again.messages.last().unwrap();
    assert_eq!(note.role, MessageRole::User);
    assert!(note.content.contains("read_file") && note.content.contains("nothing ran"));
    // The model may still just answer: its second reply is the answer.
    let h = agent(
        vec![
            text("Use `read_file` for that."),
            text("Use read_file for that."),
        ],
        vec![reader()],
        config(),
    );
    let events = run(&h.agent, request("Which tool reads a file?")).await;
    assert!(results(&events).is_empty());
    assert_eq!(complete(&events).final_response, "Use read_file for that.");
    assert_eq!(h.llm.requests().len(), 2);
    // Naming no tool: answered at once.
    let h = agent(vec![text("Roses are red.")], vec![reader()], config());
    run(&h.agent, request("A poem, please.")).await;
    assert_eq!(h.llm.requests().len(), 1);
}

/// A model of a billion parameters or more, as the default is.
fn large(responses: Vec<ScriptedResponse>, tools: Vec<Arc<dyn Tool>>) -> super::Harness {
    harness_over(
        hermes(responses).with_parameters(1_500_000_000),
        tools,
        config(),
        Arc::new(DefaultPermissionManager::in_memory()),
    )
}

fn read_call(path: &str) -> ScriptedResponse {
    text(&format!(
        r#"<tool_call>{{"name": "read_file", "arguments": {{"path": "{path}"}}}}</tool_call>"#
    ))
}

/// A large model's reply with nothing in it (it ends its turn right after a result) is
/// asked once more, every tool still offered, with a note that says so; its next reply (a
/// call, then its answer) goes on as usual. A second empty reply is not asked again, and a
/// model of unknown size is not asked at all.
#[tokio::test]
async fn an_empty_reply_is_asked_again_once() {
    let h = large(
        vec![
            read_call("list.txt"),
            text(""),
            read_call("more.txt"),
            text("Milk and eggs."),
        ],
        vec![reader()],
    );
    let events = run(&h.agent, request("What is on list.txt and more.txt?")).await;
    assert_eq!(results(&events).len(), 2, "{:?}", kinds(&events));
    assert_eq!(complete(&events).final_response, "Milk and eggs.");
    let asked = h.llm.requests();
    assert_eq!(asked.len(), 4);
    let again = &asked[2];
    assert!(!again.tools.is_empty());
    let note = again.messages.last().unwrap();
    assert_eq!(note.role, MessageRole::User);
    assert!(note.content.contains("empty"), "{}", note.content);
    // The note is not kept in the conversation the next request is built from.
    assert!(!asked[3]
        .messages
        .iter()
        .any(|m| m.content.contains("was empty")));
    // Empty twice: the second empty reply ends the request.
    let h = large(vec![text(""), text("")], vec![reader()]);
    run(&h.agent, request("What is on list.txt?")).await;
    assert_eq!(h.llm.requests().len(), 2);
    // A model of unknown size: the empty reply is the answer.
    let h = agent(vec![text("")], vec![reader()], config());
    run(&h.agent, request("What is on list.txt?")).await;
    assert_eq!(h.llm.requests().len(), 1);
}

/// `"glob": ""` is no glob: an optional argument given empty is left out before the tool
/// sees it; a required one is kept as written.
#[tokio::test]
async fn an_empty_optional_argument_counts_as_absent() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let search = MockTool::new("search_files")
        .with_risk(RiskLevel::Safe)
        .with_definition(
            ToolDefinition::new("search_files", "Search", "Search the files.")
                .with_risk(RiskLevel::Safe)
                .with_schema(json!({"type": "object",
                    "properties": {"pattern": {"type": "string"}, "glob": {"type": "string"},
                                   "path": {"type": ["string", "null"]}},
                    "required": ["pattern"]})),
        )
        .with_execute(move |ctx| {
            let kept = Arc::clone(&kept);
            async move {
                kept.lock().unwrap().push((*ctx.parameters).clone());
                ToolResult::success("a.txt:1: hit")
            }
        });
    let h = agent(
        vec![
            text(
                r#"<tool_call>{"name": "search_files", "arguments": {"pattern": "", "glob": "", "path": null}}</tool_call>"#,
            ),
            text(
                r#"<tool_call>{"name": "search_files", "arguments": {"pattern": "hit", "glob": ""}}</tool_call>"#,
            ),
            text("Found it in a.txt."),
        ],
        vec![Arc::new(search)],
        config(),
    );
    run(&h.agent, request("find hit")).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, [json!({"pattern": ""}), json!({"pattern": "hit"})]);
}

/// A call of a tool that does not exist is told which tools exist; a skill's name called
/// as a tool is told which tool loads it.
#[tokio::test]
async fn an_unknown_tool_is_told_the_tools_and_a_skill_its_loader() {
    let loader = MockTool::new("load_skill").with_definition(
        ToolDefinition::new("load_skill", "Load Skill", "Load a skill.").with_schema(json!({
            "type": "object",
            "properties": {"name": {"type": "string", "enum": ["release-notes"]}},
            "required": ["name"]})),
    );
    let h = agent(
        vec![
            text(r#"{"name": "update_file", "arguments": {"path": "a"}}"#),
            text(r#"{"name": "release-notes", "arguments": {}}"#),
            text("I cannot."),
        ],
        vec![reader(), Arc::new(loader)],
        config(),
    );
    let events = run(&h.agent, request("do it")).await;
    let said: Vec<String> = results(&events)
        .iter()
        .map(|r| r.result.error_message.clone().unwrap_or_default())
        .collect();
    assert!(said[0].contains("Tool not found: update_file"), "{said:?}");
    assert!(
        said[0].contains("read_file") && said[0].contains("load_skill"),
        "{said:?}"
    );
    assert!(
        said[1].contains(r#"call load_skill with {"name": "release-notes"}"#),
        "{said:?}"
    );
}

/// A tool's preflight finds what only the workspace shows (an edit whose text is not in
/// the file): the call fails with the tool's words and nobody is asked to approve it.
#[tokio::test]
async fn a_call_that_cannot_apply_is_refused_before_approval() {
    let editor = MockTool::new("edit_file")
        .with_risk(RiskLevel::High)
        .with_preflight(|params, _| {
            if params["search"] == "absent" {
                Err("the search text does not occur in 'a.txt'".to_string())
            } else {
                Ok(())
            }
        });
    let h = agent(
        vec![
            text(
                r#"<tool_call>{"name": "edit_file", "arguments": {"path": "a.txt", "search": "absent", "replace": "x"}}</tool_call>"#,
            ),
            text("It could not be edited."),
        ],
        vec![Arc::new(editor)],
        config(),
    );
    let events = run_answering(&h.agent, request("edit a.txt"), |_| {
        panic!("nobody is asked about an edit that cannot apply")
    })
    .await;
    let result = &results(&events)[0].result;
    assert!(!result.success);
    assert!(
        result
            .error_message
            .as_deref()
            .is_some_and(|e| e.contains("does not occur")),
        "{result:?}"
    );
    assert!(!kinds(&events).contains(&"approval_request"));
}

/// With an output schema the model may still call tools first: nothing holds its first
/// reply to the schema; its answer in prose is asked again, held to it.
#[tokio::test]
async fn an_answer_held_to_a_schema_may_follow_tool_calls() {
    let h = agent(
        vec![
            text(
                r#"<tool_call>{"name": "read_file", "arguments": {"path": "list.txt"}}</tool_call>"#,
            ),
            text("The list has two items."),
            text(r#"{"items": 2}"#),
        ],
        vec![reader()],
        config(),
    );
    let mut r = request("How many items are on list.txt?");
    r.output_schema = Some(
        json!({"type": "object", "properties": {"items": {"type": "integer"}}, "required": ["items"]}),
    );
    let events = run(&h.agent, r).await;
    assert_eq!(results(&events).len(), 1, "{:?}", kinds(&events));
    let asked = h.llm.requests();
    assert!(
        asked[0].answer_schema().is_none(),
        "the first reply is free"
    );
    assert_eq!(asked[0].tool_choice, ToolChoice::Auto);
    assert!(asked[2].answer_schema().is_some(), "the answer is held");
    assert_eq!(complete(&events).output, Some(json!({"items": 2})));
}

/// A reply the model stops sending in its middle (the stream falls silent) keeps what
/// it wrote: shown, and kept in the conversation as cut short.
#[tokio::test]
async fn a_reply_cut_short_keeps_what_was_written() {
    let h = agent(
        vec![
            ScriptedResponse::chunks(["The first item is milk. ", "```json\n{\"total\""])
                .with_delay(Duration::from_millis(10))
                .then_stall(),
        ],
        vec![reader()],
        AgentConfig {
            stream_idle_timeout_ms: 1_000,
            ..config()
        },
    );
    let events = run(&h.agent, request("What is first?")).await;
    let shown: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextGeneration(t) if !t.is_complete => Some(t.token.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(shown, "The first item is milk. ```json\n{\"total\"");
    let history = h.agent.conversation();
    assert!(history
        .iter()
        .any(|m| m.role == MessageRole::Assistant && m.content.contains("cut short")));
}
