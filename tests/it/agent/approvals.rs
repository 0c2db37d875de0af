//! Approvals and permissions: asking a person (through the event or the service), denial,
//! the approval timeout, remembered decisions; the tool's assessment and the request's own
//! permission context (auto-approval level, session permissions).

use super::{
    call, complete, config, harness, harness_with, kinds, results, risky, run, run_answering, text,
    workspace_request,
};
use core_models::{AgentService as _, *};
use serde_json::json;
use services_ai::{AgentConfig, DefaultPermissionManager};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use test_support::MockTool;

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
    // Reported as denied, not as a failure of the tool.
    assert!(r[0].result.denied);
    assert_eq!(r[0].summary(), "Tool run denied (0ms)");
    assert!(h.llm.requests()[1]
        .messages
        .iter()
        .any(|m| m.content.contains("Denied by the user: not today")));
    let done = complete(&events);
    assert_eq!(
        (
            done.reason,
            done.tool_calls_executed,
            done.tool_calls_denied
        ),
        (CompletionReason::Finished, 0, 1)
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
        ToolPermissionSettings::default().with_denied_patterns(vec![pattern.to_string()]),
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
    let lenient = context().with_max_auto_approval_risk_level(RiskLevel::High);
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
    assert_eq!(complete(&events).tool_calls_denied, 1);
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
    let all = context().with_max_auto_approval_risk_level(RiskLevel::Critical);
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

#[tokio::test]
async fn a_call_that_needs_a_workspace_is_refused_before_anyone_is_asked() {
    let definition = ToolDefinition::new("edit", "edit", "Change a file")
        .with_risk(RiskLevel::High)
        .requiring_workspace();
    let tool = Arc::new(MockTool::new("edit").with_definition(definition));
    let h = harness(
        vec![text(&call("edit", json!({"path": "a.txt"}))), text("done")],
        vec![tool.clone()],
        config(),
    );
    // No tool context at all: no workspace.
    let events = run(&h.agent, AgentRequest::new("edit a.txt")).await;
    assert!(
        !kinds(&events).contains(&"approval_request"),
        "{:?}",
        kinds(&events)
    );
    assert_eq!(tool.executions(), 0);
    let r = results(&events);
    let message = r[0].result.error_message.as_deref().unwrap_or_default();
    assert!(message.contains("needs a workspace folder"), "{message}");
    assert!(!r[0].result.denied);
}
