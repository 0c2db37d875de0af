//! The agent loop end to end, over a scripted model and mock tools.
//!
//! This module holds the harness and the helpers every theme uses (and the security
//! suite's `agent` module too); the tests are in one module per theme.

mod approvals;
mod calls;
mod context;
mod conversation;
mod decision;
mod limits;
mod messages;
mod native;
mod output;
mod prompt;
mod read_first;
mod replies;
mod seed_004;
mod tool_trained;

use core_models::{AgentService as _, *};
use futures::StreamExt;
use serde_json::json;
use services_ai::{AgentConfig, AgentEngine, DefaultPermissionManager, InMemoryToolRegistry};
use std::sync::Arc;
use std::time::Duration;
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
    pub(crate) agent: AgentEngine,
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
    harness_over(ScriptedLlm::new(responses), tools, config, permissions)
}

/// The harness over a scripted model set up by the caller.
pub(crate) fn harness_over(
    llm: ScriptedLlm,
    tools: Vec<Arc<dyn Tool>>,
    config: AgentConfig,
    permissions: Arc<dyn PermissionManager>,
) -> Harness {
    let llm = Arc::new(llm);
    let registry: Arc<dyn ToolRegistry> =
        Arc::new(tools.into_iter().collect::<InMemoryToolRegistry>());
    let agent = AgentEngine::builder(llm.clone(), registry)
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
    agent: &AgentEngine,
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

pub(crate) async fn run(agent: &AgentEngine, request: AgentRequest) -> Vec<AgentEvent> {
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

/// A mock terminal tool of high risk (so its calls are asked about).
pub(crate) fn risky(id: &str) -> Arc<MockTool> {
    Arc::new(
        MockTool::new(id)
            .with_risk(RiskLevel::High)
            .with_category(ToolCategory::Terminal),
    )
}
