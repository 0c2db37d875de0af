//! An answer held to an output schema: the model may call tools as usual, writing
//! freely (told the schema in its system prompt); an answer that does not match is asked
//! again held to the schema (the backend's grammar, a server's structured output), and
//! validated by the agent, its value carried in `agent_complete.output`. A held answer
//! that still misses is sent back once with what is wrong; a second miss ends the request
//! with a fatal error in words. A schema that cannot be used is refused before anything
//! runs.

use super::{check_run, complete, config, harness, kinds, results, run};
use core_models::*;
use futures::StreamExt;
use serde_json::{json, Value};
use services_ai::{AgentConfig, SteeringMode};
use std::sync::Arc;
use test_support::ScriptedResponse;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "day": {"type": "string", "enum": ["Monday", "Friday"]},
            "attendees": {"type": "integer", "minimum": 1}
        },
        "required": ["day", "attendees"],
        "additionalProperties": false
    })
}

fn text(s: &str) -> ScriptedResponse {
    ScriptedResponse::chunks([s.to_string()])
}

fn fence(tool: &str, parameters: Value) -> ScriptedResponse {
    let call = json!({"tool": tool, "parameters": parameters});
    text(&format!("```tool_call\n{call}\n```"))
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "Meeting on Friday, 4 people.\n",
    )
    .unwrap();
    dir
}

fn request(dir: &tempfile::TempDir) -> AgentRequest {
    AgentRequest::new("When is the meeting and how many come? See notes.txt")
        .with_tool_context(ToolAvailabilityContext::for_workspace(dir.path()))
        .with_output_schema(schema())
}

/// The model reads notes.txt, then answers as the schema asks.
fn read_then_answer() -> Vec<ScriptedResponse> {
    vec![
        fence("read_file", json!({"path": "notes.txt"})),
        text("{\"day\": \"Friday\", \"attendees\": 4}"),
    ]
}

fn file_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(tools::ReadFile::default()),
        Arc::new(tools::ListDir::default()),
    ]
}

fn free() -> AgentConfig {
    AgentConfig {
        steering: SteeringMode::Free,
        ..config()
    }
}

fn held_to(request: &LlmRequest) -> Option<&Value> {
    match &request.constraint {
        Some(ReplyConstraint::JsonSchema(schema)) => Some(schema),
        _ => None,
    }
}

fn errors(events: &[AgentEvent]) -> Vec<&AgentErrorEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AgentError(e) => Some(e),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn tools_first_then_an_answer_held_to_the_schema() {
    let dir = workspace();
    let h = harness(read_then_answer(), file_tools(), free());
    let events = run(&h.agent, request(&dir)).await;
    let done = complete(&events);
    assert_eq!(done.reason, CompletionReason::Finished);
    assert_eq!(done.output, Some(json!({"day": "Friday", "attendees": 4})));
    assert_eq!(
        done.final_response,
        "{\"day\": \"Friday\", \"attendees\": 4}"
    );
    assert!(results(&events)[0].success(), "the file was read first");
    let asked = h.llm.requests();
    assert_eq!(asked.len(), 2);
    for request in &asked {
        // While it may call tools the model writes freely, told the schema; its answer
        // matched, so nothing was asked again.
        assert_eq!(held_to(request), None);
        let system = &request.messages[0];
        assert_eq!(system.role, MessageRole::System);
        assert!(
            system.content.contains("\"attendees\""),
            "{}",
            system.content
        );
    }
    // The value goes out with the event.
    let line = serde_json::to_value(AgentEvent::AgentComplete(done.clone())).unwrap();
    assert_eq!(line["output"], json!({"day": "Friday", "attendees": 4}));
}

#[tokio::test]
async fn without_a_schema_there_is_no_output() {
    let dir = workspace();
    let h = harness(vec![text("On Friday.")], file_tools(), free());
    let mut asked = request(&dir);
    asked.output_schema = None;
    let events = run(&h.agent, asked).await;
    let done = complete(&events);
    assert_eq!(done.output, None);
    assert!(held_to(&h.llm.requests()[0]).is_none());
    let line = serde_json::to_value(AgentEvent::AgentComplete(done.clone())).unwrap();
    assert!(line.get("output").is_none(), "{line}");
}

#[tokio::test]
async fn a_forced_call_is_not_held_to_the_answer_schema() {
    let dir = workspace();
    let h = harness(read_then_answer(), file_tools(), free());
    let events = run(
        &h.agent,
        request(&dir).with_tool_choice(ToolChoice::Required),
    )
    .await;
    assert_eq!(
        complete(&events).output,
        Some(json!({"day": "Friday", "attendees": 4}))
    );
    let asked = h.llm.requests();
    assert_eq!(asked[0].tool_choice, ToolChoice::Required);
    assert!(held_to(&asked[0]).is_none());
    assert_eq!(held_to(&asked[1]), Some(&schema()));
}

/// A free answer that misses is asked again held to the schema, from the same
/// conversation; a held answer that misses is sent back once with what is wrong.
#[tokio::test]
async fn a_wrong_answer_is_held_then_sent_back_once_with_what_is_wrong() {
    let dir = workspace();
    let h = harness(
        vec![
            text("It is on Friday, with four people."),
            text("```json\n{\"day\": \"Friday\", \"attendees\": \"four\"}\n```"),
            text("{\"day\": \"Friday\", \"attendees\": 4}"),
        ],
        file_tools(),
        free(),
    );
    let events = run(&h.agent, request(&dir)).await;
    let done = complete(&events);
    assert_eq!(done.output, Some(json!({"day": "Friday", "attendees": 4})));
    assert_eq!(done.total_iterations, 2);
    let asked = h.llm.requests();
    assert_eq!(asked.len(), 3);
    assert_eq!(held_to(&asked[0]), None);
    assert_eq!(held_to(&asked[1]), Some(&schema()));
    assert_eq!(asked[1].tool_choice, ToolChoice::None);
    assert!(
        asked[1]
            .messages
            .iter()
            .all(|m| !m.content.contains("four people")),
        "the prose answer is not kept"
    );
    let told = asked[2].messages.last().unwrap();
    assert_eq!(told.role, MessageRole::User);
    assert!(told.content.contains("/attendees"), "{}", told.content);
    assert!(told.content.contains("does not match"), "{}", told.content);
    // The answer that missed stays in the conversation, before what was wrong with it.
    let before = &asked[2].messages[asked[2].messages.len() - 2];
    assert_eq!(before.role, MessageRole::Assistant);
    assert!(before.content.contains("four"));
}

#[tokio::test]
async fn a_second_miss_ends_the_request_with_a_clear_error() {
    let dir = workspace();
    let h = harness(
        vec![
            text("It is on Friday."),
            text("{\"day\": \"Sunday\", \"attendees\": 4}"),
            text("{\"day\": \"Sunday\", \"attendees\": 4}"),
        ],
        file_tools(),
        free(),
    );
    let events = run(&h.agent, request(&dir)).await;
    check_run(&events);
    assert!(
        !kinds(&events).contains(&"agent_complete"),
        "{:?}",
        kinds(&events)
    );
    let fatal = errors(&events);
    assert_eq!(fatal.len(), 1);
    assert!(fatal[0].is_fatal);
    assert_eq!(fatal[0].category, AgentErrorCategory::ParsingError);
    assert!(
        fatal[0].error.contains("output schema"),
        "{}",
        fatal[0].error
    );
    assert!(fatal[0].error.contains("/day"), "{}", fatal[0].error);
    assert_eq!(
        h.llm.requests().len(),
        3,
        "held once, sent back once, no more"
    );
}

#[tokio::test]
async fn no_retry_past_the_iteration_limit() {
    let dir = workspace();
    let h = harness(vec![text("Friday"), text("Friday")], file_tools(), free());
    let events = run(&h.agent, request(&dir).with_max_iterations(1)).await;
    let fatal = errors(&events);
    assert_eq!(fatal.len(), 1, "{:?}", kinds(&events));
    assert!(
        fatal[0].error.contains("not a JSON value"),
        "{}",
        fatal[0].error
    );
    assert_eq!(
        h.llm.requests().len(),
        2,
        "held once, in the same iteration"
    );
}

#[tokio::test]
async fn the_small_model_steering_holds_its_answer_after_the_results() {
    let dir = workspace();
    let h = harness(
        vec![
            text("read_file"),
            fence("read_file", json!({"path": "notes.txt"})),
            text("answer"),
            text("{\"day\": \"Friday\", \"attendees\": 4}"),
        ],
        file_tools(),
        AgentConfig {
            steering: SteeringMode::SmallModel,
            ..config()
        },
    );
    let events = run(&h.agent, request(&dir)).await;
    assert_eq!(
        complete(&events).output,
        Some(json!({"day": "Friday", "attendees": 4}))
    );
    let asked = h.llm.requests();
    assert_eq!(asked.len(), 4);
    // The decisions are choices, the call is forced: neither is held to the answer's
    // schema.
    for (i, request) in asked.iter().take(3).enumerate() {
        assert!(held_to(request).is_none(), "request {i}");
    }
    let answer = &asked[3];
    assert_eq!(held_to(answer), Some(&schema()));
    assert!(answer.tools.is_empty());
    assert!(
        !answer.options.stop.iter().any(|s| s.contains('\n')),
        "no stop cuts the JSON: {:?}",
        answer.options.stop
    );
    assert!(answer.messages[0].content.contains("JSON Schema"));
    assert!(answer
        .messages
        .last()
        .unwrap()
        .content
        .contains("Meeting on Friday"));
}

#[tokio::test]
async fn a_schema_that_cannot_be_used_is_refused_before_anything_runs() {
    let dir = workspace();
    let h = harness(vec![text("{}")], file_tools(), free());
    for bad in [
        json!({"type": "no such type"}),
        json!(3),
        json!({"required": "day"}),
    ] {
        let mut asked = request(&dir);
        asked.output_schema = Some(bad.clone());
        match h.agent.process_message(asked) {
            Err(Error::InvalidRequest(problems)) => {
                assert!(problems[0].contains("output schema"), "{bad}: {problems:?}")
            }
            Err(e) => panic!("{bad}: {e}"),
            Ok(mut stream) => {
                let first = stream.next().await;
                panic!("{bad} was taken: {first:?}")
            }
        }
    }
    assert!(h.llm.requests().is_empty());
}
