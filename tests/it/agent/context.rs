//! The context window: a request that fits is sent as it is, its reply allowed at most a
//! quarter of the window; one that does not is compacted — old tool results to stubs,
//! then earlier turns summarized by the model, then a shorter reply — with a
//! `context_compacted` event for each step that removed something; the system prompt and
//! the current request are never dropped, and a request that cannot fit is a clear error.

use super::{call, complete, config, harness_over, kinds, run, text, workspace_request, Harness};
use core_models::*;
use serde_json::json;
use services_ai::DefaultPermissionManager;
use std::sync::Arc;
use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

fn windowed(window: u32, responses: Vec<ScriptedResponse>, tools: Vec<Arc<dyn Tool>>) -> Harness {
    harness_over(
        ScriptedLlm::new(responses).with_context_window(window),
        tools,
        config(),
        Arc::new(DefaultPermissionManager::in_memory()),
    )
}

fn compactions(events: &[AgentEvent]) -> Vec<(String, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ContextCompacted(c) => {
                Some((c.strategy.clone(), c.tokens_before, c.tokens_after))
            }
            _ => None,
        })
        .collect()
}

fn request(message: &str, max_tokens: u32) -> AgentRequest {
    let mut r = workspace_request(message);
    r.inference_options = Some(InferenceOptions::default().with_max_tokens(max_tokens));
    r
}

fn big_reader(bytes: usize) -> Arc<MockTool> {
    Arc::new(
        MockTool::new("read_file").with_execute(move |ctx| async move {
            let n = ctx.parameters["n"].as_u64().unwrap_or_default();
            ToolResult::success(format!("file {n}\n{}", "x".repeat(bytes)))
        }),
    )
}

#[tokio::test]
async fn a_request_that_fits_is_sent_as_it_is() {
    let w = windowed(100_000, vec![text("hi")], vec![]);
    let events = run(&w.agent, request("hello", 256)).await;
    assert!(compactions(&events).is_empty());
    assert_eq!(w.llm.requests()[0].options.max_tokens, 256);
}

#[tokio::test]
async fn old_tool_results_are_cut_first_and_the_latest_kept_whole() {
    let reads: Vec<ScriptedResponse> = (0..4)
        .map(|n| text(&call("read_file", json!({"n": n}))))
        .chain([text("done")])
        .collect();
    let w = windowed(3_000, reads, vec![big_reader(3_000)]);
    let events = run(&w.agent, request("read them", 256)).await;
    let steps = compactions(&events);
    assert!(!steps.is_empty(), "{:?}", kinds(&events));
    assert!(
        steps
            .iter()
            .all(|(s, before, after)| s == "tool_results" && after < before),
        "{steps:?}"
    );
    assert_eq!(complete(&events).final_response, "done");
    // The last request: earlier results are stubs, the latest whole, the request kept.
    let last = w.llm.requests().pop().unwrap();
    let results: Vec<&ChatMessage> = last
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::Tool)
        .collect();
    let (older, latest) = results.split_at(results.len() - 1);
    assert!(
        older
            .iter()
            .all(|m| m.content.contains("cut to save context")),
        "{older:?}"
    );
    assert!(latest[0].content.len() > 3_000);
    assert!(last
        .messages
        .iter()
        .any(|m| m.role == MessageRole::User && &*m.content == "read them"));
    let estimate = services_ai::estimate_tokens(&last);
    assert!(estimate + 256 <= 3_000, "{estimate}");
}

#[tokio::test]
async fn earlier_turns_are_summarized_by_the_model() {
    let mut r = request("And what about the third one?", 128);
    for i in 0..12 {
        r.history.push(ChatMessage::user(format!(
            "Question {i}: {}",
            "tell me more ".repeat(30)
        )));
        r.history.push(ChatMessage::assistant(format!(
            "Answer {i}: {}",
            "some facts ".repeat(30)
        )));
    }
    r.system_prompt = Some("You are terse.".into());
    let w = windowed(
        1_200,
        vec![
            text("The user asked twelve questions about facts."),
            text("The third one is fine."),
        ],
        vec![],
    );
    let events = run(&w.agent, r).await;
    let steps = compactions(&events);
    assert_eq!(steps.len(), 1, "{steps:?}");
    let (strategy, before, after) = &steps[0];
    assert_eq!(strategy, "summary");
    assert!(after < before);
    let requests = w.llm.requests();
    // First the summary's own request, which fits, then the question with the summary.
    assert!(requests[0].messages[0]
        .content
        .contains("Summarize the conversation"));
    assert!(services_ai::estimate_tokens(&requests[0]) + 256 <= 1_200);
    let sent = &requests[1].messages;
    assert_eq!(sent[0].role, MessageRole::System);
    assert_eq!(&*sent[0].content, "You are terse.");
    assert!(sent[1].content.contains("The user asked twelve questions"));
    assert_eq!(&*sent[2].content, "And what about the third one?");
    assert_eq!(sent.len(), 3);
    assert_eq!(complete(&events).final_response, "The third one is fine.");
    // The next request continues from the compacted conversation.
    assert_eq!(w.agent.conversation().len(), 3);
}

#[tokio::test]
async fn the_reply_allowance_shrinks_when_nothing_else_helps() {
    let w = windowed(1_000, vec![text("ok")], vec![]);
    let events = run(&w.agent, request(&"word ".repeat(700), 4_096)).await;
    // A shorter reply removes nothing from the conversation: no compaction is reported.
    assert!(
        compactions(&events).is_empty(),
        "{:?}",
        compactions(&events)
    );
    let sent = &w.llm.requests()[0];
    let room = 1_000 - services_ai::estimate_tokens(sent);
    assert!(room < 250, "{room}");
    assert_eq!(u64::from(sent.options.max_tokens), room);
}

/// A reply allowance as large as the window (4,096 tokens in a 4,096-token window, as a
/// model of a billion parameters got) is cut to a quarter of it, and a request that then
/// fits is sent whole, with nothing reported as compacted.
#[tokio::test]
async fn a_reply_never_takes_more_than_a_quarter_of_the_window() {
    assert_eq!(services_ai::reply_allowance(4_096, 4_096), 1_024);
    assert_eq!(services_ai::reply_allowance(512, 32_768), 512);
    // A tiny window keeps a floor of 64 tokens for the reply.
    assert_eq!(services_ai::reply_allowance(4_096, 100), 64);
    let w = windowed(4_096, vec![text("ok"), text("again")], vec![]);
    let events = run(&w.agent, request("Summarize the plan in two lines.", 4_096)).await;
    assert!(compactions(&events).is_empty());
    assert_eq!(w.llm.requests()[0].options.max_tokens, 1_024);
    // The next request of the conversation too: its facts are kept, not summarized.
    let mut next = request("And the budget?", 4_096);
    next.history = w.agent.conversation();
    let events = run(&w.agent, next).await;
    assert!(compactions(&events).is_empty());
    let sent = &w.llm.requests()[1];
    assert!(sent.messages.iter().any(|m| &*m.content == "ok"));
}

#[tokio::test]
async fn a_request_that_cannot_fit_is_a_clear_error() {
    let w = windowed(500, vec![text("never")], vec![]);
    let events = run(&w.agent, request(&"word ".repeat(600), 256)).await;
    let Some(AgentEvent::AgentError(e)) = events.last() else {
        panic!("{:?}", kinds(&events))
    };
    assert!(e.is_fatal);
    assert!(
        e.error.contains("does not fit") && e.error.contains("--context-size"),
        "{}",
        e.error
    );
    assert_eq!(w.llm.calls(), 0, "nothing was sent");
}
