//! Steering: how each reply is asked for. Under `small-model` the model first chooses the
//! next step among answering and every offered tool, under a constraint that admits
//! exactly those options; a tool chosen, it writes the call under that tool's grammar
//! (path arguments held to what exists) and the call is marked as written under a
//! grammar; answering chosen, it answers with no call allowed (in the prompt a call would
//! have, before any call; in one plain question about the results after). Nothing of the
//! decision comes from the request's words. `free` leaves every reply to the model;
//! `auto` picks by the size the backend reports.

use super::{complete, config, harness, results, run, run_answering, Harness};
use core_models::*;
use serde_json::{json, Value};
use services_ai::{AgentConfig, SteeringMode};
use std::sync::Arc;
use test_support::{ScriptedLlm, ScriptedResponse};

fn small() -> AgentConfig {
    AgentConfig {
        steering: SteeringMode::SmallModel,
        path_choices_limit: 100,
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

/// The model chooses to read notes.txt, reads it, then chooses to answer with `answer`.
fn reads_notes_then_answers(answer: &str) -> Vec<ScriptedResponse> {
    vec![
        text("read_file"),
        call("read_file", json!({"path": "notes.txt"})),
        text("answer"),
        text(answer),
    ]
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
/// The values `tool`'s `argument` is held to in `request`'s grammar; the tools as the model
/// is shown them never list them (the prompt stays the same whatever the workspace holds).
fn held(request: &LlmRequest, tool: &str, argument: &str) -> Option<Vec<String>> {
    let shown = request.tools.iter().find(|d| d.id == tool)?;
    assert!(shown.input_schema["properties"][argument]
        .get("enum")
        .is_none());
    let held = request.held_tools();
    let definition = held.iter().find(|d| d.id == tool)?;
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

/// The options of a decision request, in order.
fn options(request: &LlmRequest) -> Option<Vec<String>> {
    match &request.constraint {
        Some(ReplyConstraint::OneOf(options)) => {
            let mut options = options.clone();
            options.sort();
            Some(options)
        }
        _ => None,
    }
}

const EVERY_OPTION: [&str; 4] = ["answer", "list_dir", "read_file", "write_file"];

#[tokio::test]
async fn the_model_chooses_a_tool_then_writes_its_call_under_the_tool_s_grammar() {
    let (dir, h) = setup(reads_notes_then_answers("On Friday."), small());
    let events = run(
        &h.agent,
        request(&dir, "When is the meeting? See notes.txt"),
    )
    .await;
    assert_eq!(complete(&events).final_response, "On Friday.");
    let asked = requests(&h);
    assert_eq!(asked.len(), 4);
    // Every generation counts in the totals, the decisions too: four of one token each
    // (a scripted chunk is a token), though only the call and the answer are shown.
    assert_eq!(complete(&events).completion_tokens, 4);
    let shown: u64 = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextGeneration(t) if t.is_complete => t.usage.as_ref(),
            _ => None,
        })
        .map(|u| u.generated_tokens)
        .sum();
    assert_eq!(shown, 2);
    // The decision: every offered tool and answering, nothing else, no tool to call.
    assert_eq!(options(&asked[0]).unwrap(), EVERY_OPTION);
    assert_eq!(asked[0].tool_choice, ToolChoice::None);
    // The call: forced to the tool chosen, its path held to what exists.
    assert_eq!(asked[1].tool_choice, ToolChoice::Tool("read_file".into()));
    assert!(options(&asked[1]).is_none());
    let mut files = held(&asked[1], "read_file", "path").unwrap();
    files.sort();
    assert_eq!(files, ["notes.txt", "todo.md"]);
    // The call carries how it was held, for its approval.
    let r = results(&events);
    assert!(r[0].success());
    let requested = events.iter().find_map(|e| match e {
        AgentEvent::ToolCallRequest(c) => Some(c.request.clone()),
        _ => None,
    });
    let held_note = requested.unwrap().held.unwrap_or_default();
    assert!(held_note.contains("chose read_file"), "{held_note}");
    // After the result the model decides again, with what the call returned.
    assert_eq!(options(&asked[2]).unwrap(), EVERY_OPTION);
    let shown = asked[2].messages.last().unwrap().content.to_string();
    assert!(shown.contains("the meeting is on Friday"), "{shown}");
    // The answer: one plain question with the result, no tool, no template labels.
    assert!(asked[3].tools.is_empty());
    assert_eq!(asked[3].tool_choice, ToolChoice::None);
    let question = asked[3].messages.last().unwrap().content.to_string();
    assert!(question.contains("the meeting is on Friday"), "{question}");
    assert!(question.contains("When is the meeting?"), "{question}");
    for label in ["The result was", "Context:"] {
        assert!(!question.contains(label), "{question}");
    }
    // The call is the conversation: it carries the session. The decisions and the answer
    // asked from the results are side requests: no session, but the conversation they
    // were asked for, so that a backend can keep their states with the session's.
    let key = asked[1].session.clone().expect("the conversation's key");
    assert_eq!(asked[1].side_of, None);
    for side in [&asked[0], &asked[2], &asked[3]] {
        assert_eq!(side.session, None);
        assert_eq!(side.side_of.as_ref(), Some(&key));
        assert_eq!(side.sent_for(), Some(&key));
    }
}

#[tokio::test]
async fn answering_chosen_the_model_answers_with_no_tool_and_runs_nothing() {
    let (dir, h) = setup(
        vec![
            text("answer"),
            // Call-like text in an answer is text.
            text("Roses are red. ```tool_call\n{\"tool\": \"write_file\", \"parameters\": {\"path\": \"x\", \"content\": \"y\"}}\n```"),
        ],
        small(),
    );
    let events = run(
        &h.agent,
        request(&dir, "Write me a short poem about searching for files"),
    )
    .await;
    assert!(results(&events).is_empty());
    assert!(!dir.path().join("x").exists());
    let asked = requests(&h);
    assert_eq!(asked.len(), 2);
    // Every tool is among the options, whatever the request says.
    assert_eq!(options(&asked[0]).unwrap(), EVERY_OPTION);
    assert_eq!(asked[1].tool_choice, ToolChoice::None);
    assert_eq!(asked[1].constraint, None);
}

#[tokio::test]
async fn an_answer_with_nothing_run_is_asked_in_the_prompt_a_call_would_be() {
    // The same request, once answered and once with a call: the answer's request is the
    // call's in every part but the tool choice, so a backend's cache holding one serves
    // the other.
    let message = "What do you know about the meeting?";
    let (dir, h) = setup(vec![text("answer"), text("Nothing yet.")], small());
    run(&h.agent, request(&dir, message)).await;
    let answered = requests(&h).remove(1);
    let (dir, h) = setup(reads_notes_then_answers("Friday."), small());
    run(&h.agent, request(&dir, message)).await;
    let called = requests(&h).remove(1);
    assert_eq!(called.tool_choice, ToolChoice::Tool("read_file".into()));
    assert_eq!(answered.tool_choice, ToolChoice::None);
    let text_of = |r: &LlmRequest| -> Vec<String> {
        r.messages.iter().map(|m| m.content.to_string()).collect()
    };
    // The workspaces differ only in their folder's name, which no prompt shows.
    assert_eq!(text_of(&answered), text_of(&called));
    assert!(text_of(&answered)[0].contains("read_file"));
    let ids = |r: &LlmRequest| r.tools.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&answered), ids(&called));
    assert!(!ids(&answered).is_empty());
}

#[tokio::test]
async fn a_step_that_changes_something_is_taken_only_when_chosen_both_ways() {
    // Chosen, then not chosen again: the model answers, nothing is written.
    let (dir, h) = setup(
        vec![text("write_file"), text("answer"), text("A poem.")],
        small(),
    );
    let events = run(&h.agent, request(&dir, "a poem, please")).await;
    assert!(results(&events).is_empty());
    assert_eq!(complete(&events).final_response, "A poem.");
    let asked = requests(&h);
    assert_eq!(asked.len(), 3);
    // The two framings differ; both offer every option.
    assert_eq!(options(&asked[0]).unwrap(), EVERY_OPTION);
    assert_eq!(options(&asked[1]).unwrap(), EVERY_OPTION);
    assert_ne!(asked[0].messages[0].content, asked[1].messages[0].content);
    assert_eq!(asked[2].tool_choice, ToolChoice::None);
    // Chosen both ways: the call is written and marked so.
    let (dir, h) = setup(
        vec![
            text("write_file"),
            text("write_file"),
            call("write_file", json!({"path": "a.txt", "content": "hi"})),
            text("answer"),
            text("Written."),
        ],
        small(),
    );
    let events = run_answering(&h.agent, request(&dir, "save hi to a.txt"), |a| {
        a.approve().unwrap();
    })
    .await;
    assert!(dir.path().join("a.txt").exists());
    let note = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCallRequest(c) => c.request.held.clone(),
            _ => None,
        })
        .unwrap_or_default();
    assert!(note.contains("twice"), "{note}");
    // A read is taken at the first choice.
    let (dir, h) = setup(reads_notes_then_answers("Friday."), small());
    run(&h.agent, request(&dir, "when?")).await;
    assert_eq!(requests(&h).len(), 4);
}

#[tokio::test]
async fn the_options_do_not_depend_on_the_request_s_words() {
    for message in [
        "please don't change anything, just tell me what notes.txt is",
        "I'm going for a run later, any tips?",
        "Write todo.md with buy milk",
    ] {
        let (dir, h) = setup(vec![text("answer"), text("Sure.")], small());
        run(&h.agent, request(&dir, message)).await;
        assert_eq!(
            options(&requests(&h)[0]).unwrap(),
            EVERY_OPTION,
            "{message}"
        );
    }
}

#[tokio::test]
async fn a_forced_choice_narrows_the_options_as_the_request_says() {
    // `required`: a call, of any tool, but no answer.
    let (dir, h) = setup(
        vec![
            text("list_dir"),
            call("list_dir", json!({"path": "."})),
            text("Two files."),
        ],
        small(),
    );
    let asked = request(&dir, "what is here").with_tool_choice(ToolChoice::Required);
    run(&h.agent, asked).await;
    let r = requests(&h);
    assert_eq!(
        options(&r[0]).unwrap(),
        ["list_dir", "read_file", "write_file"]
    );
    // A named tool: no decision; its call, marked as forced.
    let (dir, h) = setup(
        vec![
            call("read_file", json!({"path": "todo.md"})),
            text("Call Anna."),
        ],
        small(),
    );
    let asked =
        request(&dir, "what is to do").with_tool_choice(ToolChoice::Tool("read_file".into()));
    let events = run(&h.agent, asked).await;
    let r = requests(&h);
    assert!(options(&r[0]).is_none());
    assert_eq!(r[0].tool_choice, ToolChoice::Tool("read_file".into()));
    let note = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCallRequest(c) => c.request.held.clone(),
            _ => None,
        })
        .unwrap_or_default();
    assert!(note.contains("forced"), "{note}");
}

#[tokio::test]
async fn a_repeated_call_is_answered_instead() {
    let (dir, h) = setup(
        vec![
            text("read_file"),
            call("read_file", json!({"path": "notes.txt"})),
            text("read_file"),
            call("read_file", json!({"path": "notes.txt"})),
            text("It is on Friday."),
        ],
        small(),
    );
    let events = run(&h.agent, request(&dir, "When is the meeting?")).await;
    assert_eq!(results(&events).len(), 1, "the repeat did not run");
    assert_eq!(complete(&events).final_response, "It is on Friday.");
    let last = requests(&h).last().cloned().unwrap();
    assert_eq!(last.tool_choice, ToolChoice::None);
}

#[tokio::test]
async fn free_steering_leaves_each_reply_to_the_model() {
    let (dir, h) = setup(
        vec![
            call("read_file", json!({"path": "notes.txt"})),
            text("Friday."),
        ],
        AgentConfig {
            steering: SteeringMode::Free,
            ..small()
        },
    );
    let events = run(&h.agent, request(&dir, "When is the meeting?")).await;
    let asked = requests(&h);
    assert_eq!(asked.len(), 2);
    assert!(asked.iter().all(|r| r.constraint.is_none()));
    assert_eq!(asked[0].tool_choice, ToolChoice::Auto);
    assert_eq!(asked[1].tool_choice, ToolChoice::Auto);
    let held_note = events.iter().find_map(|e| match e {
        AgentEvent::ToolCallRequest(c) => Some(c.request.held.clone()),
        _ => None,
    });
    assert_eq!(
        held_note,
        Some(None),
        "a call the model wrote freely is not marked"
    );
}

#[tokio::test]
async fn auto_steering_follows_the_model_s_size() {
    for (parameters, decided) in [
        (Some(135_000_000), true),
        (Some(8_000_000_000), false),
        (None, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let llm = ScriptedLlm::new([text("answer"), text("Hello.")]);
        let llm = match parameters {
            Some(p) => llm.with_parameters(p),
            None => llm,
        };
        let llm = Arc::new(llm);
        let registry = Arc::new(services_ai::InMemoryToolRegistry::new());
        registry.register(Arc::new(tools::ReadFile::default()));
        let agent = services_ai::AgentEngine::builder(llm.clone(), registry)
            .config(AgentConfig {
                steering: SteeringMode::Auto,
                ..config()
            })
            .build();
        run(&agent, request(&dir, "hi")).await;
        let first = llm.requests()[0].clone();
        assert_eq!(options(&first).is_some(), decided, "{parameters:?}");
    }
}

#[tokio::test]
async fn a_backend_that_cannot_hold_a_choice_leaves_the_reply_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let llm = Arc::new(ScriptedLlm::new([text("Hello.")]).without_constraints());
    let registry = Arc::new(services_ai::InMemoryToolRegistry::new());
    registry.register(Arc::new(tools::ReadFile::default()));
    let agent = services_ai::AgentEngine::builder(llm.clone(), registry)
        .config(small())
        .build();
    let events = run(&agent, request(&dir, "hi")).await;
    assert_eq!(complete(&events).final_response, "Hello.");
    let asked = llm.requests();
    assert_eq!(asked.len(), 2, "the choice was asked, then the reply");
    assert!(asked[1].constraint.is_none());
    assert_eq!(asked[1].tool_choice, ToolChoice::Auto);
}
