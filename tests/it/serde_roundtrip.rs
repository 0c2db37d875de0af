//! Every event and model survives serde, with the agreed JSON shape: `"type"` tags,
//! snake_case names and values, durations as integer milliseconds.

use core_models::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::time::Duration;
use uuid::Uuid;

/// Serialize, deserialize, serialize again: both JSON forms must be equal.
fn roundtrip<T: Serialize + DeserializeOwned>(value: &T) -> Value {
    let first = serde_json::to_value(value).unwrap();
    let back: T = serde_json::from_value(first.clone()).unwrap();
    let second = serde_json::to_value(&back).unwrap();
    assert_eq!(first, second);
    first
}

fn sample_call() -> ToolCallRequest {
    ToolCallRequest {
        raw_json: Some("{\"tool\":\"read_file\"}".into()),
        iteration_number: 2,
        validation_result: Some(
            ToolValidationResult::invalid(["path is required"]).with_warning("w"),
        ),
        ..ToolCallRequest::new("read_file", json!({"path": "src/main.rs"}))
    }
}

fn all_events() -> Vec<AgentEvent> {
    let id = Uuid::new_v4();
    let c = sample_call();
    let (approval, _rx) = ApprovalRequestEvent::create(id, c.clone(), Duration::from_secs(300), 1);
    let approval = approval
        .with_details(vec!["File: a".into()])
        .with_warnings(vec!["careful".into()]);
    let m = services_ai::AgentStateMachine::new();
    m.start(id).unwrap();
    let agent_change = m
        .transition(AgentStateTransition::BeginThinking, Some("ctx"))
        .unwrap();
    let t = services_ai::TurnStateMachine::new();
    let turn_change = t.transition(TurnState::WaitingForUserInput, None).unwrap();
    let mut usage = ToolUsageSummary::new("read_file", "Read File");
    usage.record(true, Duration::from_millis(1500));
    vec![
        TextGenerationEvent::token(id, "héllo", 1, true, 1)
            .with_source("m")
            .with_sequence_index(4)
            .into(),
        ToolCallRequestEvent::create(id, c.clone(), 0, 1, 1).into(),
        approval.into(),
        ToolExecutionEvent::in_progress(
            id,
            &c,
            ToolProgress::determinate(1, 2, None),
            Duration::from_millis(1500),
            1,
        )
        .into(),
        ToolResultEvent::create(
            id,
            &c,
            ToolResult::success_with_data("ok", json!({"lines": 3})),
            Duration::from_millis(1500),
            1,
        )
        .into(),
        AgentIterationEvent::create(id, 1, 10, 0, 0, Duration::from_millis(1500)).into(),
        AgentErrorEvent::timeout_error(id, "too slow", 1)
            .with_error_code("E1")
            .into(),
        AgentCompleteEvent::success(
            id,
            "done",
            1,
            1,
            Duration::from_millis(1500),
            7,
            vec![usage],
        )
        .with_reason(CompletionReason::MaxIterations)
        .into(),
        StateChangedEvent::agent(&agent_change).into(),
        StateChangedEvent::turn(&turn_change).into(),
        GitCommitsDetectedEvent::create(
            id,
            vec![GitCommit {
                hash: "abc".into(),
                subject: "fix".into(),
                files: vec!["a.rs".into()],
            }],
            1,
        )
        .into(),
        AutoformatEvent::create(id, "rustfmt", vec!["a.rs".into()], vec![], 1).into(),
        SessionStartedEvent::create(id, Uuid::new_v4(), true, 6).into(),
        ContextCompactedEvent::create(id, 2100, 900, "summary", 3).into(),
        RepetitionDetectedEvent::create(id, "again ", 40, 234, 1).into(),
        MessagesCarriedEvent::create(id, vec!["and then?".into()], 2).into(),
        PromptProgressEvent::create(
            id,
            &PromptProgress {
                done: 512,
                total: 1187,
                cached: 0,
                elapsed_ms: 7200,
            },
            1,
        )
        .into(),
        PlanUpdatedEvent::create(
            id,
            vec![PlanStep {
                step: "Read the notes".into(),
                status: PlanStatus::InProgress,
            }],
            Some("started".into()),
            2,
        )
        .into(),
        PolicyDecisionEvent::create(
            id,
            PolicySource::Rule,
            "no-push (rules/git.toml:1)",
            PolicyOutcome::Forbid,
            1,
        )
        .about(Uuid::new_v4(), "run_command")
        .because(Some("CI publishes".into()))
        .into(),
    ]
}

#[test]
fn every_event_roundtrips_with_its_type_tag() {
    let events = all_events();
    let mut seen = std::collections::BTreeSet::new();
    for event in &events {
        let v = roundtrip(event);
        assert_eq!(v["type"], event.event_type());
        seen.insert(event.event_type());
        // The shared header is flattened into every event.
        for key in ["event_id", "timestamp", "request_id", "iteration_number"] {
            assert!(v.get(key).is_some(), "{} lacks {key}", event.event_type());
        }
    }
    assert_eq!(
        seen.len(),
        AgentEvent::EVENT_TYPES.len(),
        "every kind covered"
    );
}

#[test]
fn event_json_uses_the_agreed_names_and_units() {
    let events: Vec<Value> = all_events()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let by_type = |t: &str| events.iter().find(|v| v["type"] == t).unwrap().clone();

    let r = by_type("tool_result");
    assert_eq!(r["duration_ms"], 1500);
    assert_eq!(r["result"]["success"], true);
    assert_eq!(r["result"]["content"], "ok");
    assert_eq!(r["result"]["error_message"], Value::Null);
    assert_eq!(r["result"]["data"]["lines"], 3);

    assert_eq!(
        by_type("messages_carried")["messages"],
        json!(["and then?"])
    );
    assert_eq!(by_type("tool_execution")["elapsed_ms"], 1500);
    assert_eq!(by_type("tool_execution")["status"], "in_progress");
    assert_eq!(by_type("agent_iteration")["elapsed_ms"], 1500);
    assert_eq!(by_type("agent_error")["category"], "timeout_error");
    assert_eq!(by_type("agent_error")["is_fatal"], true);

    let c = by_type("agent_complete");
    assert_eq!(c["reason"], "max_iterations");
    assert_eq!(c["total_duration_ms"], 1500);
    assert_eq!(c["tool_usage"][0]["total_duration_ms"], 1500);

    let a = by_type("approval_request");
    assert_eq!(a["timeout_ms"], 300_000);
    assert_eq!(a["risk_level"], "medium");
    assert_eq!(a["request"]["tool_id"], "read_file");
    assert!(
        a.get("responder").is_none(),
        "the answer handle is not serialized"
    );

    let states: Vec<&Value> = events
        .iter()
        .filter(|v| v["type"] == "state_changed")
        .collect();
    assert_eq!(states[0]["machine"], "agent");
    assert_eq!(states[0]["previous_state"], "initializing");
    assert_eq!(states[0]["current_state"], "thinking");
    assert_eq!(states[0]["transition"], "begin_thinking");
    assert_eq!(states[0]["context"], "ctx");
    assert!(states[0]["duration_ms"].is_u64());
    assert_eq!(states[1]["machine"], "turn");
    assert_eq!(states[1]["current_state"], "waiting_for_user_input");
    assert_eq!(
        states[1]["duration_ms"],
        Value::Null,
        "leaving the initial state"
    );
}

#[test]
fn events_parse_from_hand_written_json() {
    let json = json!({
        "type": "text_generation",
        "event_id": Uuid::nil(),
        "timestamp": "2026-01-01T00:00:00Z",
        "request_id": Uuid::nil(),
        "iteration_number": 1,
        "token": "hi"
    });
    let event: AgentEvent = serde_json::from_value(json).unwrap();
    let AgentEvent::TextGeneration(t) = event else {
        panic!()
    };
    assert_eq!(t.token, "hi");
    assert!(!t.is_complete);
    let bad = json!({"type": "no_such_event"});
    assert!(serde_json::from_value::<AgentEvent>(bad).is_err());
}

#[test]
fn every_model_roundtrips() {
    let id = Uuid::new_v4();
    let request = AgentRequest::new("Read notes.txt")
        .with_history(vec![
            ChatMessage::user("hi"),
            ChatMessage::tool("read_file", "c1", "text"),
        ])
        .with_system_prompt("be brief")
        .with_tool_context(
            (ToolAvailabilityContext::for_workspace("/tmp/ws"))
                .with_enabled_categories(Some([ToolCategory::FileSystem].into()))
                .with_disabled_tool_ids(Some(["run_command".to_string()].into()))
                .with_active_selection(Some(
                    TextSelection::default()
                        .with_start_line(1)
                        .with_start_column(1)
                        .with_end_line(2)
                        .with_end_column(3)
                        .with_text("x".into()),
                ))
                .with_session_permissions(
                    [(
                        "read_file".to_string(),
                        ToolPermission {
                            tool_id: "read_file".into(),
                            auto_approved: true,
                            approval_pattern: Some("src/**".into()),
                            granted_at: chrono::Utc::now(),
                            is_persistent: false,
                        },
                    )]
                    .into(),
                ),
        )
        .with_inference_options(
            InferenceOptions::default()
                .with_seed(Some(7))
                .with_stop(vec!["</s>".into()]),
        )
        .with_max_iterations(4)
        .with_tool_choice(ToolChoice::Tool("read_file".into()))
        .with_attached_file(FileContext {
            path: "a.rs".into(),
            content: "fn main(){}".into(),
            language: Some("rust".into()),
            ..Default::default()
        });
    let v = roundtrip(&request);
    assert_eq!(v["history"][1]["role"], "tool");
    assert_eq!(v["tool_choice"], json!({"tool": "read_file"}));
    assert_eq!(
        v["tool_context"]["enabled_categories"],
        json!(["file_system"])
    );
    assert_eq!(v["tool_context"]["max_auto_approval_risk_level"], "safe");

    for choice in [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None] {
        roundtrip(&choice);
    }
    assert_eq!(
        serde_json::to_value(ToolChoice::Required).unwrap(),
        "required"
    );

    let decision = ApprovalDecision::approve()
        .remember(RememberScope::Session)
        .with_pattern("src/**")
        .with_modified_parameters(json!({"path": "b"}))
        .with_decision_duration(Duration::from_millis(2500));
    assert_eq!(roundtrip(&decision)["decision_duration_ms"], 2500);

    let mut lifecycle = ToolCallLifecycle::new(sample_call());
    lifecycle.status = ToolCallStatus::TimedOut;
    lifecycle.approval_decision = Some(ApprovalDecision::deny(Some("no".into())));
    lifecycle.result = Some(ToolResult::failed("late"));
    assert_eq!(roundtrip(&lifecycle)["status"], "timed_out");

    roundtrip(&PermissionCheckResult::requires_approval("risky"));
    roundtrip(&PermissionCheckResult::denied("never", true));
    let settings = (ToolPermissionSettings::new("read_file"))
        .with_always_allow(true)
        .with_allowed_patterns(vec!["*.md".into()]);
    roundtrip(&settings);
    roundtrip(&test_support::fixtures::read_file_definition());
    assert_eq!(roundtrip(&RiskLevel::Critical), "critical");

    let llm = (LlmRequest::new(vec![ChatMessage::system("s"), ChatMessage::user("u")]))
        .with_tools(vec![test_support::fixtures::run_command_definition()])
        .with_tool_choice(ToolChoice::Required);
    roundtrip(&llm);
    let usage = LlmUsage::default()
        .with_prompt_tokens(10)
        .with_prompt_tokens_evaluated(4)
        .with_cached_prompt_tokens(6)
        .with_generated_tokens(3)
        .with_time_to_first_token(Duration::from_millis(20))
        .with_prompt_time(Duration::from_millis(15))
        .with_generation_time(Duration::from_millis(40))
        .with_hit_token_limit(true);
    let u = roundtrip(&LlmChunk::Usage(usage));
    assert_eq!(u["type"], "usage");
    assert_eq!(u["time_to_first_token_ms"], 20);
    assert_eq!(u["cached_prompt_tokens"], 6);
    assert_eq!(roundtrip(&LlmChunk::text("x"))["text"], "x");
    assert_eq!(roundtrip(&LlmChunk::reasoning("r"))["type"], "reasoning");
    let call = roundtrip(&LlmChunk::ToolCall(core_models::LlmToolCall {
        id: Some("call_1".into()),
        name: "read_file".into(),
        arguments: "{\"path\":\"a\"}".into(),
    }));
    assert_eq!(
        (&call["type"], &call["id"], &call["name"]),
        (&"tool_call".into(), &"call_1".into(), &"read_file".into())
    );

    let m = services_ai::AgentStateMachine::new();
    m.start(id).unwrap();
    let change = m.transition(AgentStateTransition::Fail, Some("x")).unwrap();
    assert_eq!(roundtrip(&change)["transition"], "fail");
    for s in AgentState::ALL {
        roundtrip(&s);
    }
    for s in TurnState::ALL {
        roundtrip(&s);
    }
    assert_eq!(
        serde_json::to_value(TurnState::SendingToLlm).unwrap(),
        "sending_to_llm"
    );
}

/// `value` serializes to `expected` and back.
fn check_str<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(
    value: T,
    expected: &str,
) {
    assert_eq!(serde_json::to_value(&value).unwrap(), expected, "{value:?}");
    assert_eq!(serde_json::from_value::<T>(json!(expected)).unwrap(), value);
}

#[test]
fn every_enum_value_is_snake_case() {
    use AgentStateTransition as T;
    let transitions = [
        (T::Start, "start"),
        (T::BeginThinking, "begin_thinking"),
        (T::DetectToolCall, "detect_tool_call"),
        (T::RequestApproval, "request_approval"),
        (T::ApprovalGranted, "approval_granted"),
        (T::ApprovalDenied, "approval_denied"),
        (T::ToolComplete, "tool_complete"),
        (T::NoToolCalls, "no_tool_calls"),
        (T::Complete, "complete"),
        (T::Cancel, "cancel"),
        (T::Fail, "fail"),
    ];
    for (v, s) in transitions {
        check_str(v, s);
    }
    let states = [
        "idle",
        "initializing",
        "thinking",
        "parsing_tool_call",
        "waiting_for_approval",
        "executing_tool",
        "processing_result",
        "responding",
        "cancelled",
        "error",
        "completed",
    ];
    for (v, s) in AgentState::ALL.into_iter().zip(states) {
        check_str(v, s);
    }
    let turn = [
        "ready",
        "waiting_for_user_input",
        "sending_to_llm",
        "processing_llm_response",
        "end_of_turn",
        "tool_use_requested",
        "checking_for_cancellation",
        "running_tool",
        "checking_git_commits",
        "running_autoformatters",
        "checking_budget",
        "gathering_additional_messages",
        "sending_tool_results",
        "cancelled",
        "budget_exceeded",
        "error",
    ];
    for (v, s) in TurnState::ALL.into_iter().zip(turn) {
        check_str(v, s);
    }
    let statuses = [
        "parsed",
        "validating",
        "validation_failed",
        "awaiting_approval",
        "approved",
        "denied",
        "executing",
        "completed",
        "failed",
        "cancelled",
        "timed_out",
    ];
    for (v, s) in ToolCallStatus::ALL.into_iter().zip(statuses) {
        check_str(v, s);
    }
    for (v, s) in RiskLevel::ALL
        .into_iter()
        .zip(["safe", "low", "medium", "high", "critical"])
    {
        check_str(v, s);
    }
    for (v, s) in [
        (ToolExecutionStatus::Starting, "starting"),
        (ToolExecutionStatus::InProgress, "in_progress"),
        (ToolExecutionStatus::Completed, "completed"),
        (ToolExecutionStatus::Failed, "failed"),
        (ToolExecutionStatus::Cancelled, "cancelled"),
        (ToolExecutionStatus::TimedOut, "timed_out"),
    ] {
        check_str(v, s);
    }
    for (v, s) in [
        (AgentErrorCategory::LlmError, "llm_error"),
        (AgentErrorCategory::ToolError, "tool_error"),
        (AgentErrorCategory::ParsingError, "parsing_error"),
        (AgentErrorCategory::PermissionError, "permission_error"),
        (AgentErrorCategory::TimeoutError, "timeout_error"),
        (AgentErrorCategory::CancellationError, "cancellation_error"),
        (AgentErrorCategory::Unknown, "unknown"),
    ] {
        check_str(v, s);
    }
    for (v, s) in [
        (CompletionReason::Finished, "finished"),
        (CompletionReason::MaxIterations, "max_iterations"),
        (CompletionReason::Cancelled, "cancelled"),
        (CompletionReason::Error, "error"),
        (CompletionReason::Timeout, "timeout"),
        (CompletionReason::BudgetExceeded, "budget_exceeded"),
    ] {
        check_str(v, s);
    }
    for (v, s) in [
        (ToolCategory::FileSystem, "file_system"),
        (ToolCategory::Search, "search"),
        (ToolCategory::Terminal, "terminal"),
        (ToolCategory::Network, "network"),
        (ToolCategory::VersionControl, "version_control"),
        (ToolCategory::Code, "code"),
        (ToolCategory::Custom, "custom"),
    ] {
        check_str(v, s);
    }
    for (v, s) in [
        (MessageRole::System, "system"),
        (MessageRole::User, "user"),
        (MessageRole::Assistant, "assistant"),
        (MessageRole::Tool, "tool"),
    ] {
        check_str(v, s);
    }
    for (v, s) in [
        (RememberScope::None, "none"),
        (RememberScope::Session, "session"),
        (RememberScope::Tool, "tool"),
    ] {
        check_str(v, s);
    }
    check_str(MachineKind::Agent, "agent");
    check_str(MachineKind::Turn, "turn");
}
