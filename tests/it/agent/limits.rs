//! Limits, errors and cancellation: the iteration limit, the request timeout, model failures,
//! malformed calls; cancelling while generating, waiting for approval or running tools, and
//! dropping the stream.

use super::{
    call, check_run, complete, config, harness, kinds, results, risky, run, text, turn_states,
    workspace_request, Harness,
};
use core_models::{AgentService as _, *};
use futures::StreamExt;
use serde_json::json;
use services_ai::AgentConfig;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::{MockTool, ScriptedResponse};

#[tokio::test]
async fn max_iterations_request_override() {
    let tool = Arc::new(MockTool::new("t"));
    let responses = (0..5).map(|n| text(&call("t", json!({"n": n})))).collect();
    let h = harness(
        responses,
        vec![tool.clone()],
        AgentConfig {
            max_agent_iterations: 10,
            ..config()
        },
    );
    let events = run(&h.agent, workspace_request("loop").with_max_iterations(2)).await;
    let done = complete(&events);
    assert_eq!(
        (done.reason, done.total_iterations, done.tool_calls_executed),
        (CompletionReason::MaxIterations, 2, 2)
    );
    assert_eq!(
        done.stop_message.as_deref(),
        Some("iteration limit (2) reached")
    );
    assert_eq!(h.llm.calls(), 2);
    assert_eq!(h.agent.state(), AgentState::Error);
}

#[tokio::test]
async fn request_timeout_ends_with_one_agent_complete_saying_why() {
    let cfg = AgentConfig {
        agent_request_timeout_ms: 150,
        tool_execution_timeout_ms: 150,
        ..config()
    };
    let h = harness(
        vec![ScriptedResponse::chunks(vec!["x"; 100]).with_delay(Duration::from_millis(20))],
        vec![],
        cfg,
    );
    let events = run(
        &h.agent,
        AgentRequest::new("slow").with_tools_enabled(false),
    )
    .await;
    assert!(
        !kinds(&events).contains(&"agent_error"),
        "a timeout is a stop, not an error: {:?}",
        kinds(&events)
    );
    let done = complete(&events);
    assert_eq!(done.reason, CompletionReason::Timeout);
    assert!(!done.was_cancelled);
    let why = done.stop_message.as_deref().unwrap_or_default();
    assert!(why.contains("longer than 0.15s"), "{why}");
    assert_eq!(h.agent.state(), AgentState::Error);
}

#[tokio::test]
async fn llm_failure_ends_with_a_fatal_error() {
    let h = harness(
        vec![ScriptedResponse::failure("model crashed")],
        vec![],
        config(),
    );
    let events = run(&h.agent, AgentRequest::new("x")).await;
    let AgentEvent::AgentError(e) = events.last().unwrap() else {
        panic!("{:?}", kinds(&events))
    };
    assert_eq!(
        (e.category, e.is_fatal),
        (AgentErrorCategory::LlmError, true)
    );
    assert!(e.error.contains("model crashed"));
    assert_eq!(h.agent.state(), AgentState::Error);
    assert!(turn_states(&events).contains(&TurnState::Error));
}

#[tokio::test]
async fn malformed_calls_are_non_fatal_parsing_errors() {
    let h = harness(
        vec![
            text("<tool_call>{\"name\": 5}</tool_call>I could not."),
            text("unused"),
        ],
        vec![Arc::new(MockTool::new("t"))],
        config(),
    );
    let events = run(&h.agent, workspace_request("x")).await;
    let parsing: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AgentError(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(parsing.len(), 1);
    assert_eq!(
        (parsing[0].category, parsing[0].is_fatal),
        (AgentErrorCategory::ParsingError, false)
    );
    assert_eq!(complete(&events).final_response, "I could not.");
}

// --- cancellation -------------------------------------------------------------------------------

/// Cancel when `trigger` sees an event, and measure how long the request takes to end.
async fn cancel_when(
    h: &Harness,
    request: AgentRequest,
    trigger: impl Fn(&AgentEvent) -> bool,
) -> (Vec<AgentEvent>, Duration) {
    let mut stream = h.agent.process_message(request).unwrap();
    let mut events = Vec::new();
    let mut cancelled_at = None;
    while let Some(e) = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("ended")
    {
        if cancelled_at.is_none() && trigger(&e) {
            cancelled_at = Some(Instant::now());
            h.agent.cancel();
        }
        events.push(e);
    }
    check_run(&events);
    (events, cancelled_at.expect("triggered").elapsed())
}

#[tokio::test]
async fn cancel_while_generating() {
    let h = harness(
        vec![ScriptedResponse::chunks(vec!["tok "; 500]).with_delay(Duration::from_millis(10))],
        vec![],
        config(),
    );
    let (events, took) = cancel_when(
        &h,
        AgentRequest::new("x"),
        |e| matches!(e, AgentEvent::TextGeneration(t) if t.token_count >= 3),
    )
    .await;
    assert!(took < Duration::from_millis(100), "{took:?}");
    assert!(complete(&events).was_cancelled);
}

#[tokio::test]
async fn cancel_while_waiting_for_approval() {
    let h = harness(
        vec![text(&call("run", json!({"command": "ls"})))],
        vec![risky("run")],
        config(),
    );
    let (events, took) = cancel_when(&h, workspace_request("x"), |e| e.requires_user_input()).await;
    assert!(took < Duration::from_millis(100), "{took:?}");
    assert!(complete(&events).was_cancelled);
}

#[tokio::test]
async fn cancel_while_tools_run_reaches_the_tools() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let s = saw_cancel.clone();
    let polite = Arc::new(MockTool::new("polite").with_execute(move |ctx| {
        let s = s.clone();
        async move {
            ctx.cancellation.cancelled().await;
            s.fetch_add(1, Ordering::SeqCst);
            ToolResult::failed("stopped")
        }
    }));
    let stubborn = Arc::new(MockTool::new("stubborn").with_execute(|_| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        ToolResult::success("never")
    }));
    let reply = format!(
        "{}{}",
        call("polite", json!({})),
        call("stubborn", json!({}))
    );
    let h = harness(vec![text(&reply)], vec![polite, stubborn], config());
    let (events, took) = cancel_when(&h, workspace_request("x"), |e| matches!(e, AgentEvent::ToolExecution(t) if t.status == ToolExecutionStatus::Starting && t.tool_id == "stubborn")).await;
    assert!(took < Duration::from_millis(100), "{took:?}");
    assert_eq!(
        saw_cancel.load(Ordering::SeqCst),
        1,
        "the running tool saw its token"
    );
    let r = results(&events);
    assert_eq!(r.len(), 2, "every started call has a result");
    assert!(r.iter().all(|r| !r.success()));
    let cancelled = events.iter().filter(|e| matches!(e, AgentEvent::ToolExecution(t) if t.status == ToolExecutionStatus::Cancelled)).count();
    assert_eq!(cancelled, 2);
    assert!(complete(&events).was_cancelled);
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_request() {
    let h = harness(
        vec![ScriptedResponse::chunks(vec!["tok "; 500]).with_delay(Duration::from_millis(10))],
        vec![],
        config(),
    );
    let mut stream = h.agent.process_message(AgentRequest::new("x")).unwrap();
    stream.next().await;
    assert!(h.agent.is_processing());
    assert!(matches!(
        h.agent.process_message(AgentRequest::new("y")),
        Err(Error::Busy { .. })
    ));
    drop(stream);
    let start = Instant::now();
    // The scripted reply takes five seconds; ending within one of the drop is prompt.
    while h.agent.is_processing() {
        assert!(start.elapsed() < Duration::from_secs(1), "still running");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(h.agent.state(), AgentState::Cancelled);
}

// --- stalls, loops and the token limit ------------------------------------------------------------

#[tokio::test]
async fn tokens_streamed_before_a_cancel_are_counted() {
    let h = harness(
        vec![ScriptedResponse::chunks((0..200).map(|i| format!("w{i} ")))
            .with_delay(Duration::from_millis(10))],
        vec![],
        config(),
    );
    let (events, _) = cancel_when(
        &h,
        AgentRequest::new("x"),
        |e| matches!(e, AgentEvent::TextGeneration(t) if t.token_count >= 5),
    )
    .await;
    let done = complete(&events);
    assert!(done.was_cancelled);
    assert!(
        (5..200).contains(&done.completion_tokens) && done.total_tokens >= 5,
        "{done:?}"
    );
}

#[tokio::test]
async fn a_stream_that_stalls_mid_reply_ends_with_a_clear_error() {
    let config = AgentConfig {
        stream_idle_timeout_ms: 1_000,
        ..config()
    };
    // The first piece may take as long as it takes; the second one never comes in time.
    let slow =
        ScriptedResponse::chunks(["Hello", " world"]).with_delay(Duration::from_millis(1_600));
    let h = harness(vec![slow], vec![], config);
    let started = Instant::now();
    let events = run(&h.agent, AgentRequest::new("x")).await;
    let took = started.elapsed();
    let error = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::AgentError(e) => Some(e),
            _ => None,
        })
        .expect("an error");
    assert!(
        error.is_fatal && error.error.contains("sent nothing for 1s"),
        "{error:?}"
    );
    // Ended by the idle limit (1.6 s + 1 s), not by the second piece (3.2 s).
    assert!(took < Duration::from_millis(3_000), "{took:?}");
}

/// The first loop reported.
fn repetition(events: &[AgentEvent]) -> Option<&RepetitionDetectedEvent> {
    events.iter().find_map(|e| match e {
        AgentEvent::RepetitionDetected(r) => Some(r),
        _ => None,
    })
}

/// The usage on the first reply's completion event.
fn reply_usage(events: &[AgentEvent]) -> core_models::LlmUsage {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::TextGeneration(t) if t.is_complete => t.usage.clone(),
            _ => None,
        })
        .expect("the reply's usage")
}

#[tokio::test]
async fn a_looping_reply_is_stopped_cut_to_one_copy_and_reported() {
    let unit = "I will read the file now. ";
    let chunks =
        std::iter::once("Sure. ".to_string()).chain(std::iter::repeat_n(unit.to_string(), 200));
    let h = harness(vec![ScriptedResponse::chunks(chunks)], vec![], config());
    let events = run(&h.agent, AgentRequest::new("x")).await;
    let looped = repetition(&events).expect("repetition_detected");
    // The unit is the sentence, from wherever the loop was caught in it.
    assert!(
        looped.unit.len() == unit.len() && unit.repeat(2).contains(&looped.unit),
        "{looped:?}"
    );
    assert!(looped.repeats >= 4, "{looped:?}");
    let done = complete(&events);
    assert_eq!(done.reason, CompletionReason::Finished);
    // The reply keeps one copy of the loop.
    assert!(
        done.final_response
            .starts_with("Sure. I will read the file now")
            && done.final_response.len() < 6 + 2 * unit.len(),
        "{:?}",
        done.final_response
    );
    // Stopped early: far fewer than the 201 pieces were read.
    assert!(done.completion_tokens < 40, "{done:?}");
    assert_eq!(h.llm.calls(), 1);
    // The backend's last report (the prompt's counts, sent before the reply) is the
    // generation's usage, counted once; the pieces read are its generated tokens.
    let reported = reply_usage(&events);
    assert!(reported.prompt_tokens > 0, "{reported:?}");
    assert_eq!(done.prompt_tokens, reported.prompt_tokens, "{done:?}");
    assert_eq!(
        reported.generated_tokens, done.completion_tokens,
        "{reported:?} {done:?}"
    );
    assert!(reported.generated_tokens >= 5, "{reported:?}");

    // A reply that repeats a little (a list, a table) is left alone.
    let list: Vec<String> = (1..=60).map(|i| format!("- item {i}\n")).collect();
    let h = harness(
        vec![ScriptedResponse::chunks(list.clone())],
        vec![],
        config(),
    );
    let events = run(&h.agent, AgentRequest::new("x")).await;
    assert!(!kinds(&events).contains(&"repetition_detected"));
    let done = complete(&events);
    assert_eq!(done.final_response, list.concat().trim_end());
    // Two reports (the prompt's, then the whole usage): the last one, counted once.
    let reported = reply_usage(&events);
    assert_eq!(reported.generated_tokens, 60, "{reported:?}");
    assert_eq!(
        (done.prompt_tokens, done.completion_tokens),
        (reported.prompt_tokens, 60),
        "{done:?}"
    );
}

#[tokio::test]
async fn a_reply_cut_by_the_token_limit_says_so() {
    let h = harness(
        vec![ScriptedResponse::chunks((0..20).map(|i| format!("w{i} ")))],
        vec![],
        config(),
    );
    let mut request = AgentRequest::new("x");
    request.inference_options = Some(InferenceOptions::default().with_max_tokens(6));
    let events = run(&h.agent, request).await;
    let usage = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::TextGeneration(t) if t.is_complete => t.usage.clone(),
            _ => None,
        })
        .expect("usage");
    assert!(
        usage.hit_token_limit && usage.generated_tokens == 6,
        "{usage:?}"
    );

    // Within the allowance: not cut.
    let h = harness(vec![text("short")], vec![], config());
    let events = run(&h.agent, AgentRequest::new("x")).await;
    assert!(events.iter().all(|e| !matches!(e,
        AgentEvent::TextGeneration(t) if t.usage.as_ref().is_some_and(|u| u.hit_token_limit))));
}

/// A usage report: `generated` tokens in `generation_ms` milliseconds.
fn generated(generated: u64, generation_ms: u64) -> LlmChunk {
    LlmChunk::Usage(
        LlmUsage::default()
            .with_prompt_tokens(20)
            .with_prompt_tokens_evaluated(20)
            .with_generated_tokens(generated)
            .with_generation_time(Duration::from_millis(generation_ms)),
    )
}

#[tokio::test]
async fn the_generation_speed_is_the_tokens_generated_over_the_time_generating() {
    let tool = Arc::new(MockTool::new("t"));
    let h = harness(
        vec![
            ScriptedResponse::items([LlmChunk::text(call("t", json!({}))), generated(30, 1_000)]),
            ScriptedResponse::items([LlmChunk::text("Done."), generated(10, 1_000)]),
        ],
        vec![tool],
        config(),
    );
    let events = run(&h.agent, workspace_request("go")).await;
    let done = complete(&events);
    assert_eq!(done.completion_tokens, 40);
    assert_eq!(done.tokens_per_second, Some(20.0), "40 tokens in 2 s");
    let line = serde_json::to_value(done).unwrap();
    assert_eq!(line["tokens_per_second"], json!(20.0));

    // No time measured (a server that says nothing of it): no speed, rather than a
    // made-up one; and the field is left out of the JSON.
    let h = harness(
        vec![ScriptedResponse::items([
            LlmChunk::text("Hi."),
            generated(10, 0),
        ])],
        Vec::new(),
        config(),
    );
    let events = run(&h.agent, workspace_request("hi")).await;
    let done = complete(&events);
    assert_eq!(done.tokens_per_second, None);
    let line = serde_json::to_value(done).unwrap();
    assert!(line.get("tokens_per_second").is_none(), "{line}");
}

/// A call of `tool` in a ```json fence, as the default model writes its calls.
fn fenced(tool: &str, params: serde_json::Value) -> String {
    let call = json!({"name": tool, "arguments": params});
    format!("```json\n{call}\n```\n")
}

#[tokio::test]
async fn a_reply_that_writes_the_same_calls_over_and_over_is_stopped() {
    for spelling in [call, fenced] {
        same_calls_over_and_over(spelling).await;
    }
}

async fn same_calls_over_and_over(spelling: fn(&str, serde_json::Value) -> String) {
    // Two calls written in turn, again and again, as a looping model writes them.
    let read = spelling("a", json!({"path": "dialogue.txt"}));
    let search = spelling("b", json!({"pattern": "Person 2"}));
    let chunks = std::iter::once("Let me look.\n".to_string())
        .chain(std::iter::repeat_n([read.clone(), search.clone()], 100).flatten());
    let (a, b) = (Arc::new(MockTool::new("a")), Arc::new(MockTool::new("b")));
    let h = harness(
        vec![ScriptedResponse::chunks(chunks), text("Done.")],
        vec![a.clone(), b.clone()],
        config(),
    );
    let events = run(&h.agent, workspace_request("Who speaks second?")).await;
    let looped = repetition(&events).expect("repetition_detected");
    assert!(looped.unit.starts_with("a "), "{looped:?}");
    assert_eq!(looped.repeats, 3, "{looped:?}");
    // Stopped at the third copy: each call runs once, and nothing else is screened.
    assert_eq!((a.executions(), b.executions()), (1, 1));
    assert_eq!(results(&events).len(), 2);
    let done = complete(&events);
    assert_eq!(done.final_response, "Done.");
    assert!(done.completion_tokens < 12, "{done:?}");
    // The next prompt holds the two calls once each, not the loop.
    let requests = h.llm.requests();
    assert_eq!(requests.len(), 2);
    let calls: usize = requests[1]
        .messages
        .iter()
        .map(|m| m.tool_calls.len())
        .sum();
    assert_eq!(calls, 2, "{:?}", requests[1].messages);

    // Off with the text's guard; a call written twice is no loop.
    for (chunks, min_chars) in [
        (vec![read.clone(), search.clone(), read.clone()], 400),
        (vec![read.clone(); 5], 0),
    ] {
        let h = harness(
            vec![ScriptedResponse::chunks(chunks), text("Done.")],
            vec![Arc::new(MockTool::new("a")), Arc::new(MockTool::new("b"))],
            AgentConfig {
                repetition_min_chars: min_chars,
                ..config()
            },
        );
        let events = run(&h.agent, workspace_request("Who speaks second?")).await;
        assert!(repetition(&events).is_none());
    }
}
