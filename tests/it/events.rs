//! Agent events (seed 002's test plan, and more).

use core_models::*;
use serde_json::json;
use std::time::Duration;
use uuid::Uuid;

fn call(tool: &str) -> ToolCallRequest {
    ToolCallRequest {
        tool_name: format!("{tool} tool"),
        ..ToolCallRequest::new(tool, json!({"path": "a.txt"}))
    }
}

#[test]
fn text_generation_token_constructs_correctly() {
    let id = Uuid::new_v4();
    let e = TextGenerationEvent::token(id, "Hello", 3, true, 2);
    assert_eq!(e.header.request_id, id);
    assert_eq!(e.token, "Hello");
    assert_eq!(e.token_count, 3);
    assert!(e.is_thinking && !e.is_complete);
    assert_eq!(e.header.iteration_number, 2);
    assert_eq!(e.summary(), "Token: \"Hello\" (thinking: true)");
    let done = TextGenerationEvent::complete(id, 42, 2);
    assert!(done.is_complete && done.token.is_empty() && !done.is_thinking);
    assert_eq!(done.summary(), "Generation complete (42 tokens)");
    let long = TextGenerationEvent::token(id, "ééééééééééééééééééééééé", 1, false, 1);
    assert_eq!(
        long.summary(),
        "Token: \"éééééééééééééééééééé...\" (thinking: false)"
    );
}

#[tokio::test]
async fn approval_request_approve_completes_the_receiver() {
    let (event, rx) = ApprovalRequestEvent::create(
        Uuid::new_v4(),
        call("write_file"),
        Duration::from_secs(60),
        1,
    );
    assert_eq!(event.summary, "Execute write_file");
    assert_eq!(event.risk_level, RiskLevel::Medium);
    assert!(event.responder.is_waiting());
    event.approve().unwrap();
    match rx.await.unwrap() {
        ApprovalAnswer::Decided(d) => {
            assert!(d.approved);
            assert_eq!(d.remember_scope(), RememberScope::None);
            assert_eq!(d.modified_parameters, None);
        }
        other => panic!("{other:?}"),
    }
    assert!(!event.responder.is_waiting());
}

#[tokio::test]
async fn approval_request_deny_completes_with_false_and_reason() {
    let (event, rx) =
        ApprovalRequestEvent::create(Uuid::new_v4(), call("x"), Duration::from_secs(60), 1);
    event.deny(Some("not now".into())).unwrap();
    let ApprovalAnswer::Decided(d) = rx.await.unwrap() else {
        panic!()
    };
    assert!(!d.approved);
    assert_eq!(d.reason.as_deref(), Some("not now"));
}

#[tokio::test]
async fn approval_request_approve_with_remember_and_modified_parameters() {
    let (event, rx) =
        ApprovalRequestEvent::create(Uuid::new_v4(), call("x"), Duration::from_secs(60), 1);
    // A clone (as a subscriber would hold) answers the same request.
    let clone = AgentEvent::ApprovalRequest(event.clone());
    let AgentEvent::ApprovalRequest(held) = &clone else {
        panic!()
    };
    held.approve_with(RememberScope::Tool, Some(json!({"path": "b.txt"})))
        .unwrap();
    let ApprovalAnswer::Decided(d) = rx.await.unwrap() else {
        panic!()
    };
    assert!(d.approved && d.remember_for_tool && !d.remember_for_session);
    assert_eq!(d.modified_parameters, Some(json!({"path": "b.txt"})));
    // The first answer wins.
    assert!(matches!(
        event.deny(None),
        Err(Error::ApprovalAlreadyAnswered)
    ));
}

#[tokio::test]
async fn approval_request_cancel_and_closed_cases() {
    let (event, rx) =
        ApprovalRequestEvent::create(Uuid::new_v4(), call("x"), Duration::from_secs(60), 1);
    event.cancel().unwrap();
    assert_eq!(rx.await.unwrap(), ApprovalAnswer::Cancelled);

    let (event, rx) =
        ApprovalRequestEvent::create(Uuid::new_v4(), call("x"), Duration::from_secs(60), 1);
    drop(rx);
    assert!(!event.responder.is_waiting());
    assert!(matches!(event.approve(), Err(Error::ApprovalClosed)));

    // A deserialized event is not connected to any agent.
    let (event, _rx) =
        ApprovalRequestEvent::create(Uuid::new_v4(), call("x"), Duration::from_secs(60), 1);
    let text = serde_json::to_string(&AgentEvent::ApprovalRequest(event)).unwrap();
    let AgentEvent::ApprovalRequest(copy) = serde_json::from_str(&text).unwrap() else {
        panic!()
    };
    assert!(matches!(copy.approve(), Err(Error::ApprovalClosed)));
    assert!(matches!(copy.approve(), Err(Error::ApprovalClosed)));
}

#[test]
fn approval_request_is_expired_after_timeout() {
    let (event, _rx) =
        ApprovalRequestEvent::create(Uuid::new_v4(), call("x"), Duration::from_millis(300), 1);
    assert!(!event.is_expired());
    assert!(event.time_remaining() > Duration::ZERO);
    assert_eq!(
        event.expires_at() - event.header.timestamp,
        chrono::Duration::milliseconds(300)
    );
    std::thread::sleep(Duration::from_millis(350));
    assert!(event.is_expired());
    assert_eq!(event.time_remaining(), Duration::ZERO);
}

#[test]
fn tool_execution_factories_set_the_status() {
    let id = Uuid::new_v4();
    let c = call("grep");
    let elapsed = Duration::from_millis(250);
    let progress = ToolProgress::determinate(1, 4, Some("scanning".into()));
    let cases = [
        (
            ToolExecutionEvent::starting(id, &c, 1),
            ToolExecutionStatus::Starting,
            None,
        ),
        (
            ToolExecutionEvent::in_progress(id, &c, progress.clone(), elapsed, 1),
            ToolExecutionStatus::InProgress,
            Some(elapsed),
        ),
        (
            ToolExecutionEvent::completed(id, &c, elapsed, 1),
            ToolExecutionStatus::Completed,
            Some(elapsed),
        ),
        (
            ToolExecutionEvent::failed(id, &c, "boom", elapsed, 1),
            ToolExecutionStatus::Failed,
            Some(elapsed),
        ),
        (
            ToolExecutionEvent::cancelled(id, &c, elapsed, 1),
            ToolExecutionStatus::Cancelled,
            Some(elapsed),
        ),
        (
            ToolExecutionEvent::timed_out(id, &c, elapsed, 1),
            ToolExecutionStatus::TimedOut,
            Some(elapsed),
        ),
    ];
    for (event, status, want_elapsed) in cases {
        assert_eq!(event.status, status);
        assert_eq!(event.elapsed, want_elapsed);
        assert_eq!(
            (
                event.call_id,
                event.tool_id.as_str(),
                event.tool_name.as_str()
            ),
            (c.id, "grep", "grep tool")
        );
    }
    let e = ToolExecutionEvent::in_progress(id, &c, progress.clone(), elapsed, 1);
    assert_eq!(e.progress, Some(progress));
    assert_eq!(e.summary(), "Tool grep tool: InProgress (25%)");
    assert_eq!(
        ToolExecutionEvent::failed(id, &c, "boom", elapsed, 1)
            .status_message
            .as_deref(),
        Some("boom")
    );
}

#[test]
fn tool_progress_percentage() {
    let cases = [
        (0, 0, 0, true),
        (0, 10, 0, false),
        (5, 10, 50, false),
        (1, 3, 33, false),
        (10, 10, 100, false),
        (20, 10, 100, false),
        (u64::MAX, u64::MAX, 100, false),
    ];
    for (current, total, pct, indeterminate) in cases {
        let p = ToolProgress::determinate(current, total, None);
        assert_eq!(p.percentage(), pct, "{current}/{total}");
        assert_eq!(p.is_indeterminate(), indeterminate);
    }
    let p = ToolProgress::indeterminate(Some("waiting".into()));
    assert!(p.is_indeterminate());
    assert_eq!(p.percentage(), 0);
}

#[test]
fn agent_error_factories() {
    let id = Uuid::new_v4();
    let source: BoxError = "socket closed".into();
    let e = AgentErrorEvent::llm_error(id, "model failed", Some(source), 3);
    assert!(e.is_fatal);
    assert_eq!(e.category, AgentErrorCategory::LlmError);
    assert_eq!(
        e.recovery_hint.as_deref(),
        Some("Try again or check model connectivity")
    );
    assert_eq!(e.source.as_ref().unwrap().to_string(), "socket closed");
    assert_eq!(e.summary(), "Error (LlmError): model failed [FATAL]");

    let e = AgentErrorEvent::tool_error(id, "grep", "no such file", false, 1);
    assert_eq!(e.error, "Tool 'grep' failed: no such file");
    assert!(!e.is_fatal);
    assert_eq!(e.category, AgentErrorCategory::ToolError);

    let e = AgentErrorEvent::parsing_error(id, "bad JSON", 1);
    assert!(!e.is_fatal);
    assert_eq!(e.category, AgentErrorCategory::ParsingError);
    assert_eq!(
        e.recovery_hint.as_deref(),
        Some("LLM output could not be parsed, continuing without tool call")
    );

    let e = AgentErrorEvent::timeout_error(id, "request exceeded 10s", 1);
    assert!(e.is_fatal);
    assert_eq!(e.error, "Timeout: request exceeded 10s");
    assert_eq!(e.category, AgentErrorCategory::TimeoutError);
}

#[test]
fn error_source_keeps_the_chain() {
    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("cannot load model")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    let e = AgentErrorEvent::new(Uuid::new_v4(), AgentErrorCategory::Unknown, "x", true, 0)
        .with_source(Outer(std::io::Error::other("disk gone")));
    let source = e.source.as_ref().unwrap();
    assert_eq!(source.chain(), "cannot load model: disk gone");
    assert!(source.error().source().is_some());
    let v = serde_json::to_value(AgentEvent::AgentError(e)).unwrap();
    assert_eq!(v["source"], "cannot load model: disk gone");
}

#[test]
fn a_summary_counts_in_words_and_names_denials() {
    let id = Uuid::new_v4();
    let one = AgentCompleteEvent::success(id, "ok", 1, 1, Duration::from_millis(500), 0, vec![])
        .with_denied(1);
    assert_eq!(
        one.summary(),
        "Complete: 1 iteration, 1 tool call run, 1 denied, 0.5s"
    );
    let mut call = ToolCallRequest::new("run_command", json!({"command": "ls"}));
    call.tool_name = "Run Command".into();
    let denied = ToolResultEvent::create(
        id,
        &call,
        ToolResult::denied("Denied by the user: no"),
        Duration::ZERO,
        1,
    );
    assert_eq!(denied.summary(), "Tool Run Command denied (0ms)");
    assert!(!denied.success());
    let failed = ToolResultEvent::create(id, &call, ToolResult::failed("boom"), Duration::ZERO, 1);
    assert_eq!(failed.summary(), "Tool Run Command failed (0ms)");
    // The flag travels in the JSON protocol, and only when set.
    let wire = serde_json::to_value(&denied.result).unwrap();
    assert_eq!(wire["denied"], json!(true));
    assert!(serde_json::to_value(&failed.result)
        .unwrap()
        .get("denied")
        .is_none());
}

#[test]
fn agent_complete_success_has_the_stats() {
    let id = Uuid::new_v4();
    let mut usage = ToolUsageSummary::new("read_file", "Read File");
    usage.record(true, Duration::from_millis(100));
    usage.record(false, Duration::from_millis(300));
    let e = AgentCompleteEvent::success(
        id,
        "done",
        2,
        3,
        Duration::from_millis(3200),
        120,
        vec![usage.clone()],
    );
    assert_eq!(e.final_response, "done");
    assert_eq!(
        (e.tool_calls_executed, e.total_iterations, e.total_tokens),
        (2, 3, 120)
    );
    assert_eq!(e.reason, CompletionReason::Finished);
    assert!(!e.was_cancelled);
    assert_eq!(
        e.summary(),
        "Complete: 3 iterations, 2 tool calls run, 3.2s"
    );
    assert_eq!(
        e.tool_usage[0].average_duration(),
        Duration::from_millis(200)
    );
    assert_eq!(
        (
            usage.invocation_count,
            usage.success_count,
            usage.failure_count
        ),
        (2, 1, 1)
    );
    let c = AgentCompleteEvent::cancelled(id, 1, 2, Duration::from_secs(1));
    assert!(c.was_cancelled);
    assert_eq!(c.reason, CompletionReason::Cancelled);
    let m = e
        .with_reason(CompletionReason::MaxIterations)
        .with_token_counts(900, 120);
    assert!(!m.was_cancelled);
    assert_eq!(
        (m.prompt_tokens, m.completion_tokens, m.total_tokens),
        (900, 120, 120)
    );
    assert_eq!(
        ToolUsageSummary::default().average_duration(),
        Duration::ZERO
    );
}

#[test]
fn agent_event_is_terminal_and_requires_user_input() {
    let id = Uuid::new_v4();
    let (approval, _rx) = ApprovalRequestEvent::create(id, call("x"), Duration::from_secs(1), 1);
    let cases: Vec<(AgentEvent, bool, bool)> = vec![
        (
            TextGenerationEvent::token(id, "a", 1, false, 1).into(),
            false,
            false,
        ),
        (
            AgentCompleteEvent::success(id, "", 0, 1, Duration::ZERO, 0, vec![]).into(),
            true,
            false,
        ),
        (
            AgentErrorEvent::llm_error(id, "x", None, 1).into(),
            true,
            false,
        ),
        (
            AgentErrorEvent::parsing_error(id, "x", 1).into(),
            false,
            false,
        ),
        (approval.into(), false, true),
        (
            AgentIterationEvent::create(id, 1, 10, 0, 0, Duration::ZERO).into(),
            false,
            false,
        ),
    ];
    for (event, terminal, input) in cases {
        assert_eq!(event.is_terminal(), terminal, "{}", event.event_type());
        assert_eq!(event.requires_user_input(), input, "{}", event.event_type());
        assert_eq!(event.request_id(), id);
        assert!(event.age() < Duration::from_secs(5));
    }
}

#[test]
fn tool_call_request_event_position_helpers() {
    let id = Uuid::new_v4();
    let cases = [
        (0, 1, true, true),
        (0, 3, false, false),
        (2, 3, false, true),
    ];
    for (index, total, single, last) in cases {
        let e = ToolCallRequestEvent::create(id, call("x"), index, total, 1);
        assert_eq!(e.is_single_call(), single);
        assert_eq!(e.is_last_call(), last);
    }
    assert_eq!(
        ToolCallRequestEvent::create(id, call("x"), 1, 3, 1).summary(),
        "Tool call: x tool (2/3)"
    );
}

#[test]
fn iteration_event_helpers() {
    let id = Uuid::new_v4();
    let cases = [(1, 10, false, 9), (10, 10, true, 0), (12, 10, true, 0)];
    for (iteration, max, last, remaining) in cases {
        let e = AgentIterationEvent::create(id, iteration, max, 2, 5, Duration::from_secs(1));
        assert_eq!(e.is_final_iteration(), last);
        assert_eq!(e.remaining_iterations(), remaining);
        assert_eq!(e.iteration_number(), iteration);
    }
    assert_eq!(
        AgentIterationEvent::create(id, 2, 10, 2, 5, Duration::ZERO).summary(),
        "Iteration 2/10 (prev tools: 2)"
    );
    assert_eq!(
        AgentIterationEvent::create(id, 1, 10, 0, 0, Duration::ZERO).summary(),
        "Iteration 1/10"
    );
}

#[test]
fn tool_result_event_helpers() {
    let id = Uuid::new_v4();
    let c = call("read_file");
    let ok = ToolResultEvent::create(
        id,
        &c,
        ToolResult::success("x".repeat(600)),
        Duration::from_millis(12),
        1,
    );
    assert!(ok.success());
    assert_eq!(ok.display_result().chars().count(), 503);
    assert_eq!(ok.summary(), "Tool read_file tool succeeded (12ms)");
    let data = ToolResultEvent::create(
        id,
        &c,
        ToolResult::success_with_data("", json!({"n": 1})),
        Duration::ZERO,
        1,
    );
    assert_eq!(data.display_result(), "{\"n\":1}");
    let failed = ToolResultEvent::create(id, &c, ToolResult::failed("nope"), Duration::ZERO, 1);
    assert!(!failed.success());
    assert_eq!(failed.display_result(), "nope");
    let empty = ToolResultEvent::create(id, &c, ToolResult::success(""), Duration::ZERO, 1);
    assert_eq!(empty.display_result(), "(no data)");
}

#[test]
fn event_kind_links_structs_and_variants() {
    let id = Uuid::new_v4();
    let e: AgentEvent = TextGenerationEvent::token(id, "a", 1, false, 1).into();
    assert!(TextGenerationEvent::from_event(&e).is_some());
    assert!(ToolResultEvent::from_event(&e).is_none());
    assert_eq!(
        <TextGenerationEvent as EventKind>::EVENT_TYPE,
        e.event_type()
    );
    assert_eq!(
        AgentEvent::EVENT_TYPES,
        &[
            "text_generation",
            "tool_call_request",
            "approval_request",
            "tool_execution",
            "tool_result",
            "agent_iteration",
            "agent_error",
            "agent_complete",
            "state_changed",
            "git_commits_detected",
            "autoformat",
            "session_started",
            "context_compacted",
            "repetition_detected",
            "messages_carried",
            "prompt_progress",
            "plan_updated",
            "policy_decision",
        ]
    );
    let decided =
        PolicyDecisionEvent::create(id, PolicySource::Hook, "guard", PolicyOutcome::Deny, 1)
            .at(HookPoint::BeforeTool)
            .because(Some("not on Fridays".into()));
    assert_eq!(decided.summary(), "hook guard: deny (not on Fridays)");
    let carried = MessagesCarriedEvent::create(id, vec!["a".into(), "b".into()], 2);
    assert_eq!(
        carried.summary(),
        "2 message(s) did not reach the model before the request ended: carried to the next request"
    );
    assert_eq!(AgentEvent::from(carried).event_type(), "messages_carried");
}

#[test]
fn state_changed_event_carries_the_record() {
    let m = services_ai::AgentStateMachine::new();
    let id = Uuid::new_v4();
    m.start(id).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let change = m
        .transition(AgentStateTransition::BeginThinking, Some("go"))
        .unwrap();
    let event = StateChangedEvent::agent(&change);
    assert_eq!(event.machine(), MachineKind::Agent);
    assert_eq!(event.agent_change().unwrap(), change);
    assert!(event.turn_change().is_none());
    assert_eq!(event.header.timestamp, change.timestamp);
    assert_eq!(
        event.summary(),
        "Agent: Initializing -> Thinking via BeginThinking"
    );

    let t = services_ai::TurnStateMachine::new();
    let change = t.transition(TurnState::WaitingForUserInput, None).unwrap();
    let event = StateChangedEvent::turn(&change);
    assert_eq!(event.machine(), MachineKind::Turn);
    assert_eq!(event.turn_change().unwrap(), change);
}
