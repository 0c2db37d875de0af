//! Plain replies and streaming: the seed's own three tests (seed 001 part j), buffered or
//! unbuffered streaming, and events reaching the emitter's subscribers.

use super::{call, complete, config, harness, kinds, results, run, text, workspace_request};
use core_models::{AgentService as _, *};
use futures::StreamExt;
use serde_json::json;
use services_ai::AgentConfig;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::{MockTool, ScriptedResponse};

// --- seed 001 part j -----------------------------------------------------------------------

#[tokio::test]
async fn seed_simple_message_returns_text_events() {
    let h = harness(
        vec![ScriptedResponse::chunks([
            "Here ",
            "is ",
            "a ",
            "response.",
        ])],
        vec![],
        config(),
    );
    let events = run(
        &h.agent,
        AgentRequest::new("Hello, how are you?").with_tools_enabled(false),
    )
    .await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextGeneration(t) if !t.is_complete => Some(t.token.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Here is a response.");
    let done = complete(&events);
    assert_eq!(done.final_response, "Here is a response.");
    assert_eq!(
        (done.reason, done.total_iterations, done.tool_calls_executed),
        (CompletionReason::Finished, 1, 0)
    );
    assert_eq!(done.total_tokens, 4);
    assert_eq!(done.stop_message, None, "finished normally");
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::TextGeneration(t) if t.is_complete)));
    assert_eq!(h.agent.state(), AgentState::Completed);
    assert!(!h.agent.is_processing());
}

#[tokio::test]
async fn seed_tool_call_executes_the_tool() {
    let tool = Arc::new(MockTool::new("read_file"));
    let h = harness(
        vec![
            text(&format!(
                "I'll read it. {}",
                call("read_file", json!({"path": "src/test.txt"}))
            )),
            text("It says hi."),
        ],
        vec![tool.clone()],
        config(),
    );
    let events = run(&h.agent, workspace_request("Read the file src/test.txt")).await;
    let k = kinds(&events);
    let pos = |t: &str| {
        k.iter()
            .position(|x| *x == t)
            .unwrap_or_else(|| panic!("no {t} in {k:?}"))
    };
    assert!(pos("agent_iteration") < pos("tool_call_request"));
    assert!(pos("tool_call_request") < pos("tool_execution"));
    assert!(pos("tool_execution") < pos("tool_result"));
    assert_eq!(
        tool.received_parameters(),
        [json!({"path": "src/test.txt"})]
    );
    let r = results(&events);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].result, ToolResult::success("Mock success"));
    let done = complete(&events);
    assert_eq!((done.tool_calls_executed, done.total_iterations), (1, 2));
    assert_eq!(done.final_response, "It says hi.");
    assert_eq!(done.tool_usage[0].invocation_count, 1);
    // The second LLM call saw the tool result after the assistant's call.
    let second = &h.llm.requests()[1];
    let roles: Vec<MessageRole> = second.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            MessageRole::System,
            MessageRole::User,
            MessageRole::Assistant,
            MessageRole::Tool
        ]
    );
    assert!(second.messages[3].content.contains("Mock success"));
    assert!(
        second.messages[0].content.contains("## read_file"),
        "tool definitions in the system prompt"
    );
}

#[tokio::test]
async fn seed_cancel_stops_processing() {
    let h = harness(
        vec![ScriptedResponse::chunks(vec!["slow "; 200]).with_delay(Duration::from_millis(20))],
        vec![],
        config(),
    );
    let agent = h.agent.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        agent.cancel();
        Instant::now()
    });
    let events = run(
        &h.agent,
        AgentRequest::new("Do something slow").with_tools_enabled(false),
    )
    .await;
    let cancelled_at = canceller.await.unwrap();
    // The scripted reply takes four seconds; ending within one of the cancel is prompt,
    // with room for a loaded machine.
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(1),
        "ended {:?} after cancel",
        cancelled_at.elapsed()
    );
    let done = complete(&events);
    assert!(done.was_cancelled);
    assert_eq!(done.reason, CompletionReason::Cancelled);
    assert!(done.stop_message.is_some());
    assert_eq!(h.agent.state(), AgentState::Cancelled);
}

// --- streaming and subscribers -------------------------------------------------------------

#[tokio::test]
async fn streaming_can_be_buffered_or_switched_off() {
    let chunks = ScriptedResponse::chunks(["a", "b", "c", "d", "e"]);
    let count = |events: &[AgentEvent]| {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::TextGeneration(t) if !t.is_complete => Some(t.token.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let h = harness(
        vec![chunks.clone()],
        vec![],
        AgentConfig {
            streaming_buffer_size: 2,
            ..config()
        },
    );
    assert_eq!(
        count(&run(&h.agent, AgentRequest::new("x")).await),
        ["ab", "cd", "e"]
    );
    let h = harness(
        vec![chunks],
        vec![],
        AgentConfig {
            enable_streaming: false,
            ..config()
        },
    );
    assert_eq!(
        count(&run(&h.agent, AgentRequest::new("x")).await),
        ["abcde"]
    );
}

#[tokio::test]
async fn events_also_reach_emitter_subscribers() {
    let h = harness(vec![text("hi")], vec![], config());
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let _sub = h.agent.events().subscribe::<AgentCompleteEvent>(move |_| {
        s.fetch_add(1, Ordering::SeqCst);
    });
    let mut changes = h.agent.subscribe_state_changes();
    run(&h.agent, AgentRequest::new("x")).await;
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert_eq!(
        changes.next().await.unwrap().current_state,
        AgentState::Initializing
    );
}
