//! The agent loop end to end, over a scripted model and mock tools.

use core_models::{AgentService as _, *};
use futures::StreamExt;
use serde_json::json;
use services_ai::{AgentConfig, AgentService, DefaultPermissionManager, InMemoryToolRegistry};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

pub(crate) fn config() -> AgentConfig {
    AgentConfig {
        iteration_delay_ms: 0,
        tool_execution_timeout_ms: 5_000,
        agent_request_timeout_ms: 30_000,
        approval_timeout_ms: 5_000,
        ..AgentConfig::default()
    }
}

pub(crate) struct Harness {
    pub(crate) agent: AgentService,
    pub(crate) llm: Arc<ScriptedLlm>,
}

pub(crate) fn harness(
    responses: Vec<ScriptedResponse>,
    tools: Vec<Arc<dyn Tool>>,
    config: AgentConfig,
) -> Harness {
    harness_with(
        responses,
        tools,
        config,
        Arc::new(DefaultPermissionManager::in_memory()),
    )
}

pub(crate) fn harness_with(
    responses: Vec<ScriptedResponse>,
    tools: Vec<Arc<dyn Tool>>,
    config: AgentConfig,
    permissions: Arc<dyn PermissionManager>,
) -> Harness {
    let llm = Arc::new(ScriptedLlm::new(responses));
    let registry: Arc<dyn ToolRegistry> =
        Arc::new(tools.into_iter().collect::<InMemoryToolRegistry>());
    let agent = AgentService::builder(llm.clone(), registry)
        .config(config)
        .permissions(permissions)
        .build();
    Harness { agent, llm }
}

/// A Hermes tool call.
pub(crate) fn call(tool: &str, params: serde_json::Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": tool, "arguments": params})
    )
}

pub(crate) fn text(s: &str) -> ScriptedResponse {
    ScriptedResponse::chunks([s.to_string()])
}

/// Run to the end, answering approval requests with `answer`.
pub(crate) async fn run_answering(
    agent: &AgentService,
    request: AgentRequest,
    mut answer: impl FnMut(&ApprovalRequestEvent),
) -> Vec<AgentEvent> {
    let mut stream = agent.process_message(request).unwrap();
    let mut events = Vec::new();
    let deadline = tokio::time::sleep(Duration::from_secs(20));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            e = stream.next() => match e {
                Some(e) => {
                    if let AgentEvent::ApprovalRequest(a) = &e {
                        answer(a);
                    }
                    events.push(e);
                }
                None => break,
            },
            _ = &mut deadline => panic!("the request did not end; events: {:?}", kinds(&events)),
        }
    }
    check_run(&events);
    events
}

pub(crate) async fn run(agent: &AgentService, request: AgentRequest) -> Vec<AgentEvent> {
    run_answering(agent, request, |_| {}).await
}

pub(crate) fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.event_type()).collect()
}

pub(crate) fn complete(events: &[AgentEvent]) -> &AgentCompleteEvent {
    match events.last() {
        Some(AgentEvent::AgentComplete(c)) => c,
        other => panic!("last event is not agent_complete: {other:?}"),
    }
}

pub(crate) fn results(events: &[AgentEvent]) -> Vec<&ToolResultEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect()
}

pub(crate) fn turn_states(events: &[AgentEvent]) -> Vec<TurnState> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::StateChanged(s) => s.turn_change().map(|c| c.current_state),
            _ => None,
        })
        .collect()
}

/// Every run ends with exactly one terminal event, the last one, and both machines'
/// changes chain validly.
pub(crate) fn check_run(events: &[AgentEvent]) {
    let last = events.last().expect("events");
    assert!(
        last.is_terminal(),
        "last event {} is not terminal; {:?}",
        last.event_type(),
        kinds(events)
    );
    let terminal = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(
        terminal,
        1,
        "exactly one terminal event; {:?}",
        kinds(events)
    );
    let (mut agent, mut turn) = (None::<AgentState>, None::<TurnState>);
    for e in events {
        let AgentEvent::StateChanged(s) = e else {
            continue;
        };
        if let Some(c) = s.agent_change() {
            if let Some(prev) = agent {
                assert_eq!(prev, c.previous_state, "agent chain broken: {c}");
            }
            assert_eq!(
                AgentMachine::next(c.previous_state, c.transition),
                Some(c.current_state),
                "{c}"
            );
            agent = Some(c.current_state);
        }
        if let Some(c) = s.turn_change() {
            if let Some(prev) = turn {
                assert_eq!(prev, c.previous_state, "turn chain broken: {c}");
            }
            assert!(
                TURN_EDGES.contains(&(c.previous_state, c.current_state)),
                "{c}"
            );
            turn = Some(c.current_state);
        }
    }
    assert!(
        agent.is_some_and(|s| s.is_terminal()),
        "agent machine ends terminal: {agent:?}"
    );
    assert_eq!(
        turn,
        Some(TurnState::WaitingForUserInput),
        "turn machine back to waiting"
    );
}

pub(crate) fn workspace_request(message: &str) -> AgentRequest {
    AgentRequest::new(message)
        .with_tool_context(ToolAvailabilityContext::for_workspace(std::env::temp_dir()))
}

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
    assert!(
        cancelled_at.elapsed() < Duration::from_millis(100),
        "ended {:?} after cancel",
        cancelled_at.elapsed()
    );
    let done = complete(&events);
    assert!(done.was_cancelled);
    assert_eq!(done.reason, CompletionReason::Cancelled);
    assert!(done.stop_message.is_some());
    assert_eq!(h.agent.state(), AgentState::Cancelled);
}

// --- approvals -------------------------------------------------------------------------------

pub(crate) fn risky(id: &str) -> Arc<MockTool> {
    Arc::new(
        MockTool::new(id)
            .with_risk(RiskLevel::High)
            .with_category(ToolCategory::Terminal),
    )
}

#[tokio::test]
async fn approval_granted_through_the_event() {
    let tool = risky("run");
    let h = harness(
        vec![text(&call("run", json!({"command": "ls"}))), text("done")],
        vec![tool.clone()],
        config(),
    );
    let events = run_answering(&h.agent, workspace_request("list"), |a| {
        assert_eq!(a.risk_level, RiskLevel::High);
        assert!(
            a.details.iter().any(|d| d == "Command: ls"),
            "{:?}",
            a.details
        );
        assert!(
            a.warnings.iter().any(|w| w.contains("runs a command")),
            "{:?}",
            a.warnings
        );
        a.approve().unwrap();
    })
    .await;
    assert_eq!(tool.executions(), 1);
    assert!(kinds(&events).contains(&"approval_request"));
    let agent_states: Vec<AgentState> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::StateChanged(s) => s.agent_change().map(|c| c.current_state),
            _ => None,
        })
        .collect();
    assert!(agent_states
        .windows(2)
        .any(|w| w == [AgentState::WaitingForApproval, AgentState::ExecutingTool]));
}

#[tokio::test]
async fn approval_details_show_a_huge_call_cut_and_the_request_whole() {
    let tool = risky("run");
    // The cuts fall inside two-byte characters; the end of the command differs from the
    // rest of it.
    let command = format!("echo {} && rm -rf ~", "é".repeat(100_000));
    let huge = json!({"command": command, "note": "x".repeat(50_000)});
    let h = harness(
        vec![
            text(&call("run", huge.clone())),
            text(&call("run", json!({"command": "ls"}))),
            text("done"),
        ],
        vec![tool.clone()],
        config(),
    );
    /// The start and the end of a value shown cut, checked against the whole of it.
    fn check_cut(shown: &str, whole: &str) {
        let (head, rest) = shown
            .split_once(" … [")
            .unwrap_or_else(|| panic!("not cut: {} bytes", shown.len()));
        let (note, tail) = rest.split_once("] … ").unwrap();
        assert!(head.len() > 3000 && whole.starts_with(head), "{head}");
        assert!(tail.len() > 1000 && whole.ends_with(tail), "{tail}");
        let cut = whole.len() - head.len() - tail.len();
        assert_eq!(
            note,
            format!(
                "{cut} of {} bytes not shown; the full call is in the request",
                whole.len()
            )
        );
    }
    let mut asked = 0;
    run_answering(&h.agent, workspace_request("go"), |a| {
        asked += 1;
        let full = a.request.parameters.to_string();
        let line = |prefix: &str| {
            a.details
                .iter()
                .find_map(|d| d.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no {prefix:?} in {:?}", a.details))
                .to_string()
        };
        let (parameters, shown_command) = (line("Parameters: "), line("Command: "));
        if asked == 1 {
            // The call is whole; what a person reads is a few KiB: its start, its end and
            // how much is not shown.
            assert_eq!(*a.request.parameters, huge);
            assert!(
                a.details.iter().all(|d| d.len() < 5000),
                "{} bytes",
                a.details.iter().map(String::len).max().unwrap_or(0)
            );
            check_cut(&parameters, &full);
            check_cut(&shown_command, &command);
            assert!(shown_command.ends_with("éé && rm -rf ~"));
        } else {
            assert_eq!(parameters, full);
            assert_eq!(shown_command, "ls");
        }
        a.approve().unwrap();
    })
    .await;
    assert_eq!(asked, 2);
    assert_eq!(tool.received_parameters()[0], huge);
}

#[tokio::test]
async fn approval_through_provide_approval_with_modified_parameters() {
    let tool = risky("run");
    let h = harness(
        vec![
            text(&call("run", json!({"command": "rm -rf /"}))),
            text("done"),
        ],
        vec![tool.clone()],
        config(),
    );
    let agent = h.agent.clone();
    let events = run_answering(&h.agent, workspace_request("clean"), move |a| {
        let decision = ApprovalDecision::approve()
            .with_modified_parameters(json!({"command": "rm -rf build"}));
        agent.provide_approval(a.request.id, decision).unwrap();
    })
    .await;
    assert_eq!(
        tool.received_parameters(),
        [json!({"command": "rm -rf build"})]
    );
    assert!(matches!(
        h.agent
            .provide_approval(uuid::Uuid::new_v4(), ApprovalDecision::approve()),
        Err(Error::NoPendingApproval { .. })
    ));
    assert_eq!(complete(&events).tool_calls_executed, 1);
}

#[tokio::test]
async fn approval_denied_is_reported_to_the_model() {
    let tool = risky("run");
    let h = harness(
        vec![
            text(&call("run", json!({"command": "ls"}))),
            text("ok, I won't"),
        ],
        vec![tool.clone()],
        config(),
    );
    let events = run_answering(&h.agent, workspace_request("list"), |a| {
        a.deny(Some("not today".into())).unwrap()
    })
    .await;
    assert_eq!(tool.executions(), 0);
    let r = results(&events);
    assert_eq!(
        r[0].result.error_message.as_deref(),
        Some("Denied by the user: not today")
    );
    assert!(h.llm.requests()[1]
        .messages
        .iter()
        .any(|m| m.content.contains("Denied by the user: not today")));
    let done = complete(&events);
    assert_eq!(
        (done.reason, done.tool_calls_executed),
        (CompletionReason::Finished, 0)
    );
}

#[tokio::test]
async fn approval_timeout_counts_as_denial() {
    let tool = risky("run");
    let cfg = AgentConfig {
        approval_timeout_ms: 100,
        ..config()
    };
    let h = harness(
        vec![text(&call("run", json!({"command": "ls"}))), text("fine")],
        vec![tool.clone()],
        cfg,
    );
    let start = Instant::now();
    let events = run(&h.agent, workspace_request("list")).await;
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert_eq!(tool.executions(), 0);
    assert!(results(&events)[0]
        .result
        .error_message
        .as_deref()
        .unwrap()
        .contains("counts as a denial"));
}

#[tokio::test]
async fn remembered_approvals_are_not_asked_again() {
    let tool = risky("run");
    let store_dir = tempfile::tempdir().unwrap();
    let store = Arc::new(services_ai::FilePermissionStore::new(
        store_dir.path().join("p.json"),
    ));
    let permissions: Arc<dyn PermissionManager> =
        Arc::new(DefaultPermissionManager::new(store.clone()));
    let responses = vec![
        text(&call("run", json!({"command": "a"}))),
        text(&call("run", json!({"command": "b"}))),
        text("done"),
    ];
    let h = harness_with(responses, vec![tool.clone()], config(), permissions.clone());
    let asked = Arc::new(AtomicUsize::new(0));
    let a2 = asked.clone();
    let request = workspace_request("go");
    let conversation = request.conversation_id;
    run_answering(&h.agent, request, move |a| {
        a2.fetch_add(1, Ordering::SeqCst);
        a.approve_with(RememberScope::Session, None).unwrap();
    })
    .await;
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the second call was approved by the session decision"
    );
    assert_eq!(tool.executions(), 2);

    // remember-for-tool is persisted: a new agent over the same store does not ask.
    h.llm.push(text(&call("run", json!({"command": "c"}))));
    h.llm.push(text("done"));
    let events = run_answering(
        &h.agent,
        workspace_request("again").with_conversation(conversation),
        |a| a.approve_with(RememberScope::Tool, None).unwrap(),
    )
    .await;
    assert!(
        !kinds(&events).contains(&"approval_request"),
        "same conversation: still remembered"
    );
    let fresh = DefaultPermissionManager::new(store);
    assert!(
        fresh.get_tool_permissions("run").await.unwrap().is_none(),
        "session decisions are not persisted"
    );
    let h2 = harness_with(
        vec![text(&call("run", json!({"command": "d"}))), text("ok")],
        vec![tool.clone()],
        config(),
        permissions.clone(),
    );
    let events = run_answering(&h2.agent, workspace_request("new conversation"), |a| {
        a.approve_with(RememberScope::Tool, None).unwrap()
    })
    .await;
    assert!(kinds(&events).contains(&"approval_request"));
    let h3 = harness_with(
        vec![text(&call("run", json!({"command": "e"}))), text("ok")],
        vec![tool.clone()],
        config(),
        Arc::new(DefaultPermissionManager::new(Arc::new(
            services_ai::FilePermissionStore::new(store_dir.path().join("p.json")),
        ))),
    );
    let events = run(&h3.agent, workspace_request("yet another")).await;
    assert!(
        !kinds(&events).contains(&"approval_request"),
        "persisted for the tool"
    );
    assert_eq!(tool.executions(), 5);
}

// --- calls --------------------------------------------------------------------------------

#[tokio::test]
async fn unknown_tools_and_invalid_parameters_fail_clearly() {
    let tool = Arc::new(MockTool::new("read_file").with_validate(|p| {
        let mut errors = Vec::new();
        if p.get("path").is_none() {
            errors.push("path is required");
        }
        if p.get("extra").is_some() {
            errors.push("extra is not allowed");
        }
        if errors.is_empty() {
            ToolValidationResult::valid()
        } else {
            ToolValidationResult::invalid(errors)
        }
    }));
    let reply = format!(
        "{}{}",
        call("nope", json!({})),
        call("read_file", json!({"extra": 1}))
    );
    let h = harness(
        vec![text(&reply), text("sorry")],
        vec![tool.clone()],
        config(),
    );
    let events = run(&h.agent, workspace_request("x")).await;
    let r = results(&events);
    assert_eq!(
        r[0].result.error_message.as_deref(),
        Some("Tool not found: nope")
    );
    assert_eq!(
        r[1].result.error_message.as_deref(),
        Some("Validation failed: path is required; extra is not allowed")
    );
    assert_eq!(tool.executions(), 0);
    let requests: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallRequest(r) => Some((r.call_index, r.total_calls)),
            _ => None,
        })
        .collect();
    assert_eq!(requests, [(0, 2), (1, 2)]);
}

#[tokio::test]
async fn parallel_calls_respect_the_limit_and_keep_call_order() {
    let current = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (c, p) = (current.clone(), peak.clone());
    let tool = Arc::new(MockTool::new("work").with_execute(move |ctx| {
        let (c, p) = (c.clone(), p.clone());
        async move {
            let now = c.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            let n = ctx.parameters["n"].as_u64().unwrap();
            // Later calls finish first.
            tokio::time::sleep(Duration::from_millis(80 - n * 10)).await;
            c.fetch_sub(1, Ordering::SeqCst);
            ToolResult::success(format!("result {n}"))
        }
    }));
    let reply: String = (0..7).map(|n| call("work", json!({"n": n}))).collect();
    let cfg = AgentConfig {
        max_parallel_tool_calls: 3,
        ..config()
    };
    let h = harness(
        vec![text(&reply), text("all done")],
        vec![tool.clone()],
        cfg,
    );
    let start = Instant::now();
    let events = run(&h.agent, workspace_request("work")).await;
    assert_eq!(peak.load(Ordering::SeqCst), 3, "observed concurrency");
    assert!(
        start.elapsed() < Duration::from_millis(7 * 50),
        "ran concurrently: {:?}",
        start.elapsed()
    );
    let tool_messages: Vec<String> = h.llm.requests()[1]
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::Tool)
        .map(|m| m.content.lines().last().unwrap().to_string())
        .collect();
    assert_eq!(
        tool_messages,
        (0..7).map(|n| format!("result {n}")).collect::<Vec<_>>(),
        "history in call order"
    );
    assert_eq!(complete(&events).tool_calls_executed, 7);
}

#[tokio::test]
async fn per_tool_timeout() {
    let tool = Arc::new(MockTool::new("slow").with_execute(|_ctx| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        ToolResult::success("never")
    }));
    let cfg = AgentConfig {
        tool_execution_timeout_ms: 150,
        ..config()
    };
    let h = harness(
        vec![text(&call("slow", json!({}))), text("it timed out")],
        vec![tool],
        cfg,
    );
    let start = Instant::now();
    let events = run(&h.agent, workspace_request("x")).await;
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::ToolExecution(t) if t.status == ToolExecutionStatus::TimedOut)
    ));
    assert!(results(&events)[0]
        .result
        .error_message
        .as_deref()
        .unwrap()
        .starts_with("Timed out after 0.15s"));
    assert_eq!(complete(&events).reason, CompletionReason::Finished);
}

#[tokio::test]
async fn tool_progress_is_forwarded_and_failures_are_retried_once() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let a = attempts.clone();
    let tool = Arc::new(MockTool::new("flaky").with_execute(move |ctx| {
        let a = a.clone();
        async move {
            ctx.progress
                .report(ToolProgress::determinate(1, 2, Some("half".into())));
            tokio::task::yield_now().await;
            if a.fetch_add(1, Ordering::SeqCst) == 0 {
                ToolResult::failed("transient")
            } else {
                ToolResult::success("ok")
            }
        }
    }));
    let cfg = AgentConfig {
        auto_retry_failed_tools: true,
        ..config()
    };
    let h = harness(
        vec![text(&call("flaky", json!({}))), text("done")],
        vec![tool],
        cfg,
    );
    let events = run(&h.agent, workspace_request("x")).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(results(&events)[0].result, ToolResult::success("ok"));
    let statuses: Vec<ToolExecutionStatus> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecution(t) => Some(t.status),
            _ => None,
        })
        .collect();
    assert!(
        statuses.contains(&ToolExecutionStatus::InProgress),
        "{statuses:?}"
    );
    assert_eq!(statuses.first(), Some(&ToolExecutionStatus::Starting));
    assert_eq!(statuses.last(), Some(&ToolExecutionStatus::Completed));
    assert!(statuses.contains(&ToolExecutionStatus::Failed));
}

#[tokio::test]
async fn a_repeated_call_is_not_run_again() {
    let tool = Arc::new(MockTool::new("read_file"));
    let c = call("read_file", json!({"path": "a"}));
    let h = harness(
        vec![text(&c), text(&c), text("done")],
        vec![tool.clone()],
        config(),
    );
    let events = run(&h.agent, workspace_request("x")).await;
    assert_eq!(tool.executions(), 1);
    let r = results(&events);
    assert!(
        r[1].result.content.starts_with("Not run again"),
        "{}",
        r[1].result.content
    );
    assert!(r[1].result.content.contains("Mock success"));
    assert_eq!(complete(&events).tool_calls_executed, 1);
}

#[tokio::test]
async fn huge_results_are_cut_in_the_history_at_character_boundaries() {
    let big = "é".repeat(10_000) + "THE END";
    let b = big.clone();
    let tool = Arc::new(MockTool::new("cat").with_execute(move |_| {
        let b = b.clone();
        async move { ToolResult::success(b) }
    }));
    let cfg = AgentConfig {
        max_tool_result_tokens: 100,
        ..config()
    };
    let h = harness(
        vec![text(&call("cat", json!({}))), text("ok")],
        vec![tool],
        cfg,
    );
    let events = run(&h.agent, workspace_request("x")).await;
    assert_eq!(
        results(&events)[0].result.content,
        big,
        "the event keeps the whole result"
    );
    let message = h.llm.requests()[1]
        .messages
        .iter()
        .find(|m| m.role == MessageRole::Tool)
        .unwrap()
        .content
        .clone();
    assert!(message.len() < 500, "{}", message.len());
    assert!(message.ends_with("THE END"));
    assert!(message.contains("bytes (1 lines) cut"));
}

// --- limits and errors -----------------------------------------------------------------------

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
async fn budget_exceeded_stops_after_tools() {
    let tool = Arc::new(MockTool::new("t"));
    let mut cfg = config();
    cfg.budget.max_total_tokens = Some(3);
    let responses = vec![
        ScriptedResponse::chunks(["a", "b", "c", "d", &call("t", json!({}))]),
        text("never"),
    ];
    let h = harness(responses, vec![tool.clone()], cfg);
    let events = run(&h.agent, workspace_request("x")).await;
    assert_eq!(tool.executions(), 1, "tools of the iteration still ran");
    let done = complete(&events);
    assert_eq!(done.reason, CompletionReason::BudgetExceeded);
    let why = done.stop_message.as_deref().unwrap_or_default();
    assert!(why.contains("token budget exceeded"), "{why}");
    assert!(turn_states(&events).contains(&TurnState::BudgetExceeded));
    assert_eq!(h.llm.calls(), 1);
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
    while h.agent.is_processing() {
        assert!(
            start.elapsed() < Duration::from_millis(100),
            "still running"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(h.agent.state(), AgentState::Cancelled);
}

// --- prompt, tools offered, tool choice, history ----------------------------------------------

#[tokio::test]
async fn tools_offered_follow_the_context_and_tool_choice_applies_to_the_first_iteration() {
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(MockTool::new("read_file")),
        Arc::new(MockTool::new("run").with_category(ToolCategory::Terminal)),
        Arc::new(MockTool::new("secret")),
    ];
    let h = harness(
        vec![text(&call("read_file", json!({}))), text("done")],
        tools,
        config(),
    );
    let context = ToolAvailabilityContext {
        allow_terminal_tools: false,
        disabled_tool_ids: Some(["secret".to_string()].into()),
        ..ToolAvailabilityContext::for_workspace(std::env::temp_dir())
    };
    let request = AgentRequest::new("x")
        .with_tool_context(context)
        .with_tool_choice(ToolChoice::Required)
        .with_system_prompt("Be brief.");
    run(&h.agent, request).await;
    let requests = h.llm.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(offered, ["read_file"]);
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
    // The forced round is over: the reply after the results is the answer.
    assert_eq!(requests[1].tool_choice, ToolChoice::None);
    assert!(requests[0].messages[0]
        .content
        .starts_with("Be brief.\n\nYou are an AI assistant"));
    assert!(!requests[0].messages[0].content.contains("## run"));
}

/// Required and named choices force one round of tool use: a call written after the
/// results is text, not run, and the request completes instead of looping.
#[tokio::test]
async fn after_a_forced_call_the_model_answers_and_calls_are_not_run() {
    let tool = Arc::new(MockTool::new("t"));
    for choice in [ToolChoice::Required, ToolChoice::Tool("t".into())] {
        let h = harness(
            vec![
                text(&call("t", json!({}))),
                text(&format!("again {}", call("t", json!({})))),
            ],
            vec![tool.clone()],
            config(),
        );
        let before = tool.executions();
        let events = run(
            &h.agent,
            workspace_request("x").with_tool_choice(choice.clone()),
        )
        .await;
        assert_eq!(tool.executions() - before, 1, "{choice}");
        let requests = h.llm.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].tool_choice, ToolChoice::None);
        // The tools are still described (the prompt's prefix, and the KV cache, stay).
        assert_eq!(requests[1].tools.len(), 1);
        assert_eq!(requests[0].messages[0], requests[1].messages[0]);
        let AgentEvent::AgentComplete(done) = events.last().unwrap() else {
            panic!("{:?}", events.last())
        };
        assert_eq!(done.total_iterations, 2, "{done:?}");
        assert!(!done.was_cancelled);
        assert!(done.final_response.contains("again"), "{done:?}");
    }
}

#[tokio::test]
async fn tool_choice_none_offers_nothing_and_runs_nothing() {
    let tool = Arc::new(MockTool::new("t"));
    let h = harness(
        vec![text(&call("t", json!({})))],
        vec![tool.clone()],
        config(),
    );
    let events = run(
        &h.agent,
        workspace_request("x").with_tool_choice(ToolChoice::None),
    )
    .await;
    assert_eq!(tool.executions(), 0);
    assert!(h.llm.requests()[0].tools.is_empty());
    assert!(
        complete(&events).final_response.contains("<tool_call>"),
        "the call stays text"
    );
}

#[tokio::test]
async fn the_conversation_continues_across_requests() {
    let h = harness(
        vec![
            text(&call("t", json!({}))),
            text("first answer"),
            text("second answer"),
        ],
        vec![Arc::new(MockTool::new("t"))],
        config(),
    );
    let first = workspace_request("one");
    run(&h.agent, first.clone()).await;
    let history = h.agent.conversation();
    assert_eq!(
        history.len(),
        4,
        "user, assistant call, tool result, assistant answer"
    );
    let second = workspace_request("two")
        .with_conversation(first.conversation_id)
        .with_history(history);
    let events = run(&h.agent, second).await;
    assert_eq!(complete(&events).final_response, "second answer");
    let last = h.llm.requests().last().unwrap().clone();
    let contents: Vec<&str> = last.messages.iter().map(|m| &*m.content).collect();
    assert!(
        contents.contains(&"one")
            && contents.contains(&"first answer")
            && contents.contains(&"two")
    );
    // The turn machine followed the conversation: no new Ready -> WaitingForUserInput.
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::StateChanged(s) if s.turn_change().is_some_and(|c| c.previous_state == TurnState::Ready))));
}

#[tokio::test]
async fn mid_turn_messages_reach_the_model_with_the_tool_results() {
    let release = Arc::new(tokio::sync::Notify::new());
    let r = release.clone();
    let tool = Arc::new(MockTool::new("wait").with_execute(move |_| {
        let r = r.clone();
        async move {
            r.notified().await;
            ToolResult::success("waited")
        }
    }));
    let h = harness(
        vec![text(&call("wait", json!({}))), text("thanks")],
        vec![tool],
        config(),
    );
    assert!(matches!(
        h.agent.send_user_message("too early".into()),
        Err(Error::NotProcessing)
    ));
    let agent = h.agent.clone();
    let events = {
        let mut stream = h.agent.process_message(workspace_request("x")).unwrap();
        let mut events = Vec::new();
        while let Some(e) = stream.next().await {
            if matches!(&e, AgentEvent::ToolExecution(t) if t.status == ToolExecutionStatus::Starting)
            {
                agent.send_user_message("also check b.txt".into()).unwrap();
                release.notify_one();
            }
            events.push(e);
        }
        events
    };
    check_run(&events);
    let second = &h.llm.requests()[1];
    let last_two: Vec<(MessageRole, &str)> = second
        .messages
        .iter()
        .rev()
        .take(2)
        .map(|m| (m.role, &*m.content))
        .collect();
    assert_eq!(last_two[0], (MessageRole::User, "also check b.txt"));
    assert_eq!(last_two[1].0, MessageRole::Tool);
    let turn = turn_states(&events);
    let at = turn
        .iter()
        .position(|s| *s == TurnState::GatheringAdditionalMessages)
        .unwrap();
    assert_eq!(turn[at + 1], TurnState::SendingToolResults);
}

#[tokio::test]
async fn new_commits_are_detected_formatted_and_told_to_the_model() {
    let mut git = test_support::mocks::MockGitInspector::new();
    let heads = Arc::new(Mutex::new(vec![
        Some("bbbbbbbbbb".to_string()),
        Some("aaaaaaaaaa".to_string()),
    ]));
    git.expect_head()
        .returning(move |_| Ok(heads.lock().unwrap().pop().unwrap_or(None)));
    git.expect_commits_since().returning(|_, since| {
        assert_eq!(since, "aaaaaaaaaa");
        Ok(vec![GitCommit {
            hash: "bbbbbbbbbb".into(),
            subject: "Add lib".into(),
            files: vec!["src/lib.rs".into(), "README.md".into()],
        }])
    });
    let mut formatter = test_support::mocks::MockFormatter::new();
    formatter.expect_name().return_const("rustfmt".to_string());
    formatter.expect_handles().returning(|p| p.ends_with(".rs"));
    formatter.expect_format().returning(|_, files| {
        assert_eq!(files, ["src/lib.rs"]);
        Ok(files.to_vec())
    });
    let llm = Arc::new(ScriptedLlm::new([
        text(&call("t", json!({}))),
        text("done"),
    ]));
    let registry: Arc<dyn ToolRegistry> = Arc::new(
        [Arc::new(MockTool::new("t")) as Arc<dyn Tool>]
            .into_iter()
            .collect::<InMemoryToolRegistry>(),
    );
    let agent = AgentService::builder(llm.clone(), registry)
        .config(config())
        .git_inspector(Arc::new(git))
        .formatter(Arc::new(formatter))
        .build();
    let events = run(&agent, workspace_request("commit")).await;
    let commits = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::GitCommitsDetected(g) => Some(g),
            _ => None,
        })
        .expect("commits event");
    assert_eq!(commits.commits[0].subject, "Add lib");
    let format = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Autoformat(a) => Some(a),
            _ => None,
        })
        .expect("autoformat event");
    assert_eq!(format.changed_files, ["src/lib.rs"]);
    let turn = turn_states(&events);
    let at = turn
        .iter()
        .position(|s| *s == TurnState::CheckingGitCommits)
        .unwrap();
    assert_eq!(
        &turn[at..at + 3],
        [
            TurnState::CheckingGitCommits,
            TurnState::RunningAutoformatters,
            TurnState::CheckingBudget
        ]
    );
    let note = llm.requests()[1].messages.last().unwrap().content.clone();
    assert!(
        note.contains("1 new git commit(s)")
            && note.contains("bbbbbbb Add lib")
            && note.contains("rustfmt reformatted: src/lib.rs"),
        "{note}"
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

// --- configuration switches ----------------------------------------------------------------

#[tokio::test]
async fn iteration_delay_and_results_kept_out_of_history() {
    let cfg = AgentConfig {
        iteration_delay_ms: 120,
        include_tool_results_in_history: false,
        ..config()
    };
    let h = harness(
        vec![text(&call("t", json!({}))), text("done")],
        vec![Arc::new(MockTool::new("t"))],
        cfg,
    );
    let start = Instant::now();
    run(&h.agent, workspace_request("x")).await;
    assert!(
        start.elapsed() >= Duration::from_millis(120),
        "waited between iterations"
    );
    let second = &h.llm.requests()[1];
    assert!(second.messages.iter().all(|m| m.role != MessageRole::Tool));
    assert!(second
        .messages
        .last()
        .unwrap()
        .content
        .contains("not kept in this conversation"));
}

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

#[test]
fn plain_rendering_for_backends_without_templates() {
    use services_ai::agent::prompt::render_plain;
    let messages = [
        ChatMessage::system("Be brief."),
        ChatMessage::user("Hi"),
        ChatMessage::assistant("Hello"),
        ChatMessage::tool("read_file", "c1", "[Read File]\ntext"),
    ];
    assert_eq!(
        render_plain(&messages),
        "Be brief.\n\nUser: Hi\n\nAssistant: Hello\n\nTool Result: [Read File]\ntext\n\nAssistant:"
    );
}

#[tokio::test]
async fn cost_budget() {
    let mut cfg = config();
    cfg.budget.max_cost = Some(0.001);
    cfg.budget.completion_cost_per_1k_tokens = 1.0;
    let h = harness(
        vec![
            ScriptedResponse::chunks(["a", "b", &call("t", json!({}))]),
            text("never"),
        ],
        vec![Arc::new(MockTool::new("t"))],
        cfg,
    );
    let events = run(&h.agent, workspace_request("x")).await;
    let done = complete(&events);
    assert_eq!(done.reason, CompletionReason::BudgetExceeded);
    let why = done.stop_message.as_deref().unwrap_or_default();
    assert!(why.contains("cost budget exceeded"), "{why}");
}

/// The compact tool prompt: one line per tool with its required parameters only.
#[test]
fn the_compact_tool_prompt_lists_each_tool_on_one_line() {
    use services_ai::agent::prompt::{compact_signature, system_prompt};
    let check = |schema: serde_json::Value, expected: &str| {
        assert_eq!(compact_signature(&schema), expected, "{schema}");
    };
    check(
        json!({"type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}}, "required": ["path"]}),
        r#"{"path": string}"#,
    );
    // Required order, not the properties' order; type lists and enums.
    check(
        json!({"properties": {"b": {"type": ["string", "null"]}, "a": {"enum": [1, 2]}}, "required": ["b", "a"]}),
        r#"{"b": string | null, "a": enum}"#,
    );
    check(json!({"type": "object"}), "{}");
    check(
        json!({"properties": {"x": {}}, "required": ["x", "missing"]}),
        r#"{"x": any}"#,
    );

    let config = services_ai::AgentConfig {
        tool_prompt_style: services_ai::ToolPromptStyle::Compact,
        ..services_ai::AgentConfig::default()
    };
    let read = core_models::ToolDefinition::new(
        "read_file",
        "Read File",
        "Read a file. Lines too.",
    )
    .with_schema(
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    );
    let prompt = system_prompt(&config, Some("Be brief."), &[read]).unwrap();
    assert_eq!(
        prompt,
        "Be brief.\n\nYou are a helpful assistant with tools.\n\nTools:\n\
         - read_file: Read a file. Parameters: {\"path\": string}\n\n\
         To call a tool, reply with:\n```tool_call\n{\"tool\": \"<tool>\", \"parameters\": {<arguments>}}\n```\n\
         Use the exact names the user gives."
    );
    // What the compact prompt asks for is what the parser reads.
    let parsed = services_ai::FunctionCallParser::default().parse_all(
        "```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"a\"}}\n```",
    );
    assert_eq!(parsed.tool_calls.len(), 1);
}

/// With the compact prompt the model is given the tools with only their required
/// parameters, as the prompt shows them; with the full prompt, whole.
#[tokio::test]
async fn compact_style_offers_only_required_parameters() {
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}},
        "required": ["path"]
    });
    let tool = || -> Arc<dyn Tool> {
        Arc::new(
            MockTool::new("read_file").with_definition(
                core_models::ToolDefinition::new("read_file", "Read File", "Read a file.")
                    .with_schema(schema.clone()),
            ),
        )
    };
    for (style, expected) in [
        (services_ai::ToolPromptStyle::Full, schema.clone()),
        (
            services_ai::ToolPromptStyle::Compact,
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
    ] {
        let h = harness(
            vec![text("ok")],
            vec![tool()],
            AgentConfig {
                tool_prompt_style: style,
                ..config()
            },
        );
        run(&h.agent, AgentRequest::new("hi")).await;
        let sent = h.llm.requests();
        assert_eq!(sent[0].tools[0].input_schema, expected, "{style:?}");
    }
}

// --- assessment and the request's permission context ------------------------------------------

fn approvals(events: &[AgentEvent]) -> Vec<&ApprovalRequestEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalRequest(a) => Some(a),
            _ => None,
        })
        .collect()
}

fn request_with(context: ToolAvailabilityContext) -> AgentRequest {
    AgentRequest::new("go").with_tool_context(context)
}

fn context() -> ToolAvailabilityContext {
    ToolAvailabilityContext::for_workspace(std::env::temp_dir())
}

/// A manager whose `run` tool refuses commands matching `pattern`.
async fn denying(pattern: &str) -> Arc<dyn PermissionManager> {
    let pm = DefaultPermissionManager::in_memory();
    pm.set_tool_permissions(
        "run",
        ToolPermissionSettings {
            denied_patterns: vec![pattern.to_string()],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    Arc::new(pm)
}

#[tokio::test]
async fn the_assessment_sets_risk_and_subjects_before_the_permission_check() {
    let seen_workspace = Arc::new(Mutex::new(None));
    let seen = seen_workspace.clone();
    let tool = Arc::new(MockTool::new("probe").with_assess(move |_, workspace| {
        *seen.lock().unwrap() = workspace.map(|w| w.to_path_buf());
        CallAssessment::new(
            RiskLevel::High,
            PermissionSubjects::of(["the subject".to_string()]),
        )
    }));
    let h = harness(
        vec![text(&call("probe", json!({"path": "a"}))), text("done")],
        vec![tool.clone()],
        config(),
    );
    let events = run_answering(&h.agent, workspace_request("x"), |a| a.approve().unwrap()).await;
    assert_eq!(
        seen_workspace.lock().unwrap().as_deref(),
        Some(std::env::temp_dir().as_path()),
        "assessed with the request's workspace"
    );
    let subjects = Some(PermissionSubjects::of(["the subject".to_string()]));
    let requested = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolCallRequest(r) => Some(r),
            _ => None,
        })
        .unwrap();
    assert_eq!(requested.request.risk_level, RiskLevel::High);
    assert_eq!(requested.request.permission_subjects, subjects);
    let asked = approvals(&events);
    assert_eq!(asked.len(), 1, "a safe tool assessed high is asked about");
    assert_eq!(asked[0].risk_level, RiskLevel::High);
    assert_eq!(asked[0].request.permission_subjects, subjects);
    assert_eq!(tool.executions(), 1);
}

#[tokio::test]
async fn the_requests_auto_approval_level_approves_without_asking_but_never_past_deny_or_critical()
{
    let lenient = ToolAvailabilityContext {
        max_auto_approval_risk_level: RiskLevel::High,
        ..context()
    };
    // Within the level: no question.
    let tool = risky("run");
    let h = harness(
        vec![text(&call("run", json!({"command": "make"}))), text("ok")],
        vec![tool.clone()],
        config(),
    );
    let events = run(&h.agent, request_with(lenient.clone())).await;
    assert!(approvals(&events).is_empty(), "{:?}", kinds(&events));
    assert_eq!(tool.executions(), 1);

    // Without it: asked.
    let h = harness(
        vec![text(&call("run", json!({"command": "make"}))), text("ok")],
        vec![tool.clone()],
        config(),
    );
    let events = run_answering(&h.agent, request_with(context()), |a| a.deny(None).unwrap()).await;
    assert_eq!(approvals(&events).len(), 1);
    assert_eq!(tool.executions(), 1);

    // A deny rule still wins.
    let h = harness_with(
        vec![
            text(&call("run", json!({"command": "rm -rf x"}))),
            text("ok"),
        ],
        vec![tool.clone()],
        config(),
        denying("rm *").await,
    );
    let events = run(&h.agent, request_with(lenient.clone())).await;
    assert_eq!(tool.executions(), 1, "denied");
    assert!(results(&events)[0]
        .result
        .error_message
        .as_deref()
        .unwrap()
        .starts_with("Denied by the permission settings"));

    // Critical calls are asked about whatever the level.
    let critical = Arc::new(MockTool::new("sudo").with_risk(RiskLevel::Critical));
    let h = harness(
        vec![text(&call("sudo", json!({"command": "x"}))), text("ok")],
        vec![critical.clone()],
        config(),
    );
    let all = ToolAvailabilityContext {
        max_auto_approval_risk_level: RiskLevel::Critical,
        ..context()
    };
    let events = run_answering(&h.agent, request_with(all), |a| a.deny(None).unwrap()).await;
    assert_eq!(approvals(&events).len(), 1);
    assert_eq!(critical.executions(), 0);
}

fn session_permission(pattern: Option<&str>, auto_approved: bool) -> ToolPermission {
    ToolPermission {
        tool_id: "run".into(),
        auto_approved,
        approval_pattern: pattern.map(str::to_string),
        granted_at: chrono::Utc::now(),
        is_persistent: false,
    }
}

fn with_session_permission(permission: ToolPermission) -> ToolAvailabilityContext {
    let mut context = context();
    context
        .session_permissions
        .insert(permission.tool_id.clone(), permission);
    context
}

#[tokio::test]
async fn the_requests_session_permissions_allow_like_a_session_rule() {
    let tool = risky("run");
    let reply = format!(
        "{}{}",
        call("run", json!({"command": "ls  -la"})),
        call("run", json!({"command": "rm x"}))
    );
    let h = harness(vec![text(&reply), text("ok")], vec![tool.clone()], config());
    let context = with_session_permission(session_permission(Some("ls *"), true));
    let events = run_answering(&h.agent, request_with(context), |a| {
        assert_eq!(a.request.parameters["command"], "rm x");
        a.deny(None).unwrap()
    })
    .await;
    assert_eq!(
        approvals(&events).len(),
        1,
        "only the call the pattern does not cover"
    );
    assert_eq!(tool.received_parameters(), [json!({"command": "ls  -la"})]);

    // Without a pattern: every call of the tool; not when it is not auto-approved.
    let h = harness(vec![text(&reply), text("ok")], vec![tool.clone()], config());
    let events = run(
        &h.agent,
        request_with(with_session_permission(session_permission(None, true))),
    )
    .await;
    assert!(approvals(&events).is_empty());
    assert_eq!(tool.executions(), 3);
    let h = harness(vec![text(&reply), text("ok")], vec![tool.clone()], config());
    let events = run_answering(
        &h.agent,
        request_with(with_session_permission(session_permission(None, false))),
        |a| a.deny(None).unwrap(),
    )
    .await;
    assert_eq!(approvals(&events).len(), 2);
    assert_eq!(tool.executions(), 3);

    // Deny rules win over it.
    let h = harness_with(
        vec![text(&reply), text("ok")],
        vec![tool.clone()],
        config(),
        denying("rm *").await,
    );
    let events = run(
        &h.agent,
        request_with(with_session_permission(session_permission(None, true))),
    )
    .await;
    assert!(approvals(&events).is_empty());
    assert_eq!(tool.executions(), 4, "ls ran, rm was refused");
    assert!(results(&events)[1]
        .result
        .error_message
        .as_deref()
        .unwrap()
        .contains("matches denied pattern 'rm *'"));

    // Never for a critical call.
    let critical = Arc::new(MockTool::new("run").with_risk(RiskLevel::Critical));
    let h = harness(
        vec![text(&call("run", json!({"command": "ls"}))), text("ok")],
        vec![critical.clone()],
        config(),
    );
    let events = run_answering(
        &h.agent,
        request_with(with_session_permission(session_permission(None, true))),
        |a| a.deny(None).unwrap(),
    )
    .await;
    assert_eq!(approvals(&events).len(), 1);
    assert_eq!(critical.executions(), 0);
}
