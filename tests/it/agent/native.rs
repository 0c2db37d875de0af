//! Calls a backend delivers already taken apart (an OpenAI-compatible server's
//! `tool_calls`): looked up, validated, put to the permission rules, asked about and run
//! exactly like parsed calls; answered in the conversation under the server's ids; never
//! run when broken or when no call may happen; call-like text stays text.

use super::{
    check_run, complete, config, harness_over, kinds, results, risky, run, run_answering, Harness,
};
use core_models::*;
use serde_json::json;
use services_ai::DefaultPermissionManager;
use std::sync::Arc;
use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

fn native_call(id: &str, name: &str, arguments: &str) -> LlmChunk {
    LlmChunk::ToolCall(LlmToolCall {
        id: Some(id.into()),
        name: name.into(),
        arguments: arguments.into(),
    })
}

fn usage(prompt: u64, cached: u64) -> LlmChunk {
    LlmChunk::Usage(
        LlmUsage::default()
            .with_prompt_tokens(prompt)
            .with_prompt_tokens_evaluated(prompt - cached)
            .with_cached_prompt_tokens(cached)
            .with_generated_tokens(5),
    )
}

fn native(responses: Vec<ScriptedResponse>, tools: Vec<Arc<dyn Tool>>) -> Harness {
    harness_over(
        ScriptedLlm::new(responses).with_chat_format(ChatFormat::native()),
        tools,
        config(),
        Arc::new(DefaultPermissionManager::in_memory()),
    )
}

fn request(message: &str) -> AgentRequest {
    super::workspace_request(message)
}

#[tokio::test]
async fn a_native_call_runs_through_the_loop_and_is_answered_under_its_id() {
    let tool = Arc::new(MockTool::new("read_file"));
    let n = native(
        vec![
            ScriptedResponse::items([
                LlmChunk::reasoning("The user wants a.txt."),
                LlmChunk::text("Reading it."),
                native_call("call_7", "read_file", r#"{"path": "a.txt"}"#),
                usage(100, 0),
            ]),
            ScriptedResponse::items([LlmChunk::text("It says hello."), usage(140, 100)]),
        ],
        vec![tool.clone()],
    );
    let events = run(&n.agent, request("read a.txt")).await;
    assert_eq!(tool.received_parameters(), [json!({"path": "a.txt"})]);
    let r = results(&events);
    assert_eq!(r.len(), 1);
    assert!(r[0].result.success);
    assert!(kinds(&events).contains(&"tool_call_request"));
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextGeneration(t) if t.is_thinking => Some(t.token.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "The user wants a.txt.");
    let done = complete(&events);
    assert_eq!(done.final_response, "It says hello.");
    assert_eq!(done.cached_prompt_tokens, 100, "summed across iterations");
    let usages: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextGeneration(t) if t.is_complete => t.usage.as_ref(),
            _ => None,
        })
        .map(|u| u.cached_prompt_tokens)
        .collect();
    assert!(
        usages.contains(&100),
        "each generation reports its usage: {usages:?}"
    );

    // The second request answers the call under the server's id, and the system prompt
    // says what the agent is but lists no tools (the server renders them).
    let second = &n.llm.requests()[1];
    let assistant = second
        .messages
        .iter()
        .find(|m| m.role == MessageRole::Assistant)
        .expect("the reply in history");
    assert_eq!(assistant.tool_calls[0].id, "call_7");
    assert_eq!(
        assistant.reasoning.as_deref(),
        Some("The user wants a.txt.")
    );
    let answer = second
        .messages
        .iter()
        .find(|m| m.role == MessageRole::Tool)
        .expect("the result in history");
    assert_eq!(answer.tool_call_id.as_deref(), Some("call_7"));
    let system: Vec<&ChatMessage> = second
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::System)
        .collect();
    assert_eq!(system.len(), 1);
    assert!(
        system[0].content.starts_with("You are AIntern"),
        "{}",
        system[0].content
    );
    assert!(!system[0].content.contains("Available tools"));
    assert_eq!(second.tools.len(), 1, "the tools go to the server");
}

#[tokio::test]
async fn a_native_call_is_asked_about_like_any_other() {
    let tool = risky("run_command");
    let n = native(
        vec![
            ScriptedResponse::items([native_call(
                "c1",
                "run_command",
                r#"{"command": "rm -r x"}"#,
            )]),
            ScriptedResponse::items([LlmChunk::text("I did not.")]),
        ],
        vec![tool.clone()],
    );
    let mut asked = 0;
    let events = run_answering(&n.agent, request("clean up"), |a| {
        asked += 1;
        assert_eq!(a.request.tool_id, "run_command");
        a.deny(Some("no".into())).expect("answer");
    })
    .await;
    assert_eq!(asked, 1);
    assert_eq!(tool.executions(), 0);
    assert!(!results(&events)[0].result.success);
}

#[tokio::test]
async fn broken_or_unwanted_native_calls_are_reported_and_never_run() {
    let tool = Arc::new(MockTool::new("read_file"));
    let n = native(
        vec![
            // Arguments that are not a JSON object, and a call without a name.
            ScriptedResponse::items([
                native_call("a", "read_file", r#"{"path": "a.txt""#),
                native_call("b", "read_file", "[1, 2]"),
                native_call("c", " ", "{}"),
                LlmChunk::text("Done."),
            ]),
        ],
        vec![tool.clone()],
    );
    let events = run(&n.agent, request("read")).await;
    assert_eq!(tool.executions(), 0);
    let diagnostics: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AgentError(e) if e.category == AgentErrorCategory::ParsingError => {
                Some(e.error.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(diagnostics.len(), 3, "{diagnostics:?}");
    assert!(diagnostics[0].contains("not valid JSON"), "{diagnostics:?}");
    assert!(
        diagnostics[1].contains("not a JSON object"),
        "{diagnostics:?}"
    );
    assert!(
        diagnostics[2].contains("without a tool name"),
        "{diagnostics:?}"
    );
    assert_eq!(complete(&events).final_response, "Done.");

    // After a forced round, the next reply may not call: a native call there is not run.
    let n = native(
        vec![
            ScriptedResponse::items([native_call("a", "read_file", r#"{"path": "a"}"#)]),
            ScriptedResponse::items([
                LlmChunk::text("Again:"),
                native_call("b", "read_file", r#"{"path": "b"}"#),
            ]),
        ],
        vec![tool.clone()],
    );
    let mut forced = request("read a");
    forced.tool_choice = ToolChoice::Required;
    let events = run(&n.agent, forced).await;
    assert_eq!(tool.received_parameters(), [json!({"path": "a"})]);
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::AgentError(e) if e.error.contains("no tool may be called"))));
    assert_eq!(n.llm.requests()[1].tool_choice, ToolChoice::None);
}

#[tokio::test]
async fn with_server_side_calls_call_like_text_is_text() {
    let tool = Arc::new(MockTool::new("read_file"));
    let text = r#"Write <tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call> to call it."#;
    // The reply names a tool and calls none: the model is asked once more, and says the
    // same again.
    let n = native(
        vec![
            ScriptedResponse::items([LlmChunk::text(text)]),
            ScriptedResponse::items([LlmChunk::text(text)]),
        ],
        vec![tool.clone()],
    );
    let events = run(&n.agent, request("how do I call read_file?")).await;
    check_run(&events);
    assert_eq!(tool.executions(), 0);
    assert_eq!(complete(&events).final_response, text);
}

/// A server that takes calls apart but whose template names the model's format (Hermes):
/// what it leaves as text is read in that format, so a call in a fence the server's
/// parser did not take runs (marked recovered, judged like any other); quoted JSON in
/// prose that changes something stays text.
#[tokio::test]
async fn with_server_side_calls_a_fenced_call_the_server_left_is_read() {
    let tool = Arc::new(MockTool::new("read_file").with_risk(RiskLevel::Safe));
    let fenced = "I will read it:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```\n";
    let n = harness_over(
        ScriptedLlm::new(vec![
            ScriptedResponse::items([LlmChunk::text(fenced)]),
            ScriptedResponse::items([LlmChunk::text("It says hello.")]),
        ])
        .with_chat_format(ChatFormat::native().with_text_format(Some("hermes".into()))),
        vec![tool.clone()],
        config(),
        Arc::new(DefaultPermissionManager::in_memory()),
    );
    let events = run(&n.agent, request("what does a say?")).await;
    check_run(&events);
    assert_eq!(tool.executions(), 1);
    let call = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCallRequest(r) => Some(&r.request),
            _ => None,
        })
        .expect("a call");
    assert_eq!(call.recovered.as_deref(), Some("a ```json fence"));
    assert_eq!(complete(&events).final_response, "It says hello.");
}

#[tokio::test]
async fn a_native_call_of_another_tool_than_the_forced_one_is_not_run() {
    let read = Arc::new(MockTool::new("read_file"));
    let delete = risky("delete_file");
    let n = native(
        vec![
            ScriptedResponse::items([native_call("a", "delete_file", r#"{"path": "x"}"#)]),
            ScriptedResponse::items([LlmChunk::text("ok")]),
        ],
        vec![read.clone(), delete.clone()],
    );
    let mut forced = request("read x");
    forced.tool_choice = ToolChoice::Tool("read_file".into());
    let events = run_answering(&n.agent, forced, |a| {
        a.approve().expect("answer");
    })
    .await;
    assert_eq!(delete.executions(), 0);
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::AgentError(e) if e.error.contains("only read_file may be called"))));
}
