//! An agent loop that a hostile tool or model cannot hang or slip past: a tool that panics
//! anywhere fails its own call only, a panic in the loop still ends the request with one
//! terminal event, a call the tool says must be asked about is asked about, parameters
//! a person edits are put to the deny rules again, and a call of a reply is put to the
//! rules again after an earlier call of the same reply could have changed what it touches.

use crate::agent::{
    call, check_run, complete, config, harness, harness_with, kinds, results, risky, run,
    run_answering, text, workspace_request,
};
use core_models::{AgentService as _, *};
use futures::StreamExt;
use serde_json::{json, Value};
use services_ai::{AgentConfig, AgentEngine, DefaultPermissionManager, InMemoryToolRegistry};
use std::sync::Arc;
use std::time::Duration;
use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

/// Where a tool panics.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Validate,
    Assess,
    Summary,
    Risk,
    Execute,
}

/// A safe tool `boom` that panics in `place`.
fn panicking(place: Place) -> MockTool {
    let tool = MockTool::new("boom");
    match place {
        Place::Validate => tool.with_validate(|_| panic!("boom in validate")),
        Place::Assess => tool.with_assess(|_, _| panic!("boom in assess")),
        Place::Summary => tool.with_summary(|_| panic!("boom in summary")),
        Place::Risk => tool.with_effective_risk(|_| panic!("boom in risk")),
        Place::Execute => tool.with_execute(|_| async { panic!("boom in execute") }),
    }
}

#[tokio::test]
async fn a_tool_that_panics_anywhere_fails_its_call_and_the_request_goes_on() {
    for place in [
        Place::Validate,
        Place::Assess,
        Place::Summary,
        Place::Risk,
        Place::Execute,
    ] {
        let good = Arc::new(MockTool::new("good"));
        let reply = format!(
            "{}{}",
            call("boom", json!({"path": "a"})),
            call("good", json!({}))
        );
        let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(panicking(place)), good.clone()];
        let h = harness(
            vec![
                text(&reply),
                text("the tool broke"),
                text(&call("good", json!({"again": true}))),
                text("second request done"),
            ],
            tools,
            config(),
        );
        let events = run(&h.agent, workspace_request("go")).await;
        let r = results(&events);
        assert_eq!(r.len(), 2, "{place:?}");
        let message = r[0].result.error_message.as_deref().unwrap_or_default();
        assert!(
            message.starts_with("the tool failed unexpectedly: boom in"),
            "{place:?}: {message}"
        );
        assert!(r[1].success(), "the other call of the reply ran: {place:?}");
        let done = complete(&events);
        assert_eq!(
            (done.reason, done.final_response.as_str()),
            (CompletionReason::Finished, "the tool broke"),
            "{place:?}"
        );
        // The next request on the same agent works.
        let events = run(&h.agent, workspace_request("again")).await;
        assert_eq!(complete(&events).final_response, "second request done");
        assert_eq!(good.executions(), 2, "{place:?}");
    }
}

#[tokio::test]
async fn a_panic_inside_the_loop_ends_the_request_with_one_fatal_error() {
    let mut git = test_support::mocks::MockGitInspector::new();
    git.expect_head()
        .returning(|_| panic!("the git inspector exploded"));
    let llm = Arc::new(ScriptedLlm::new(vec![
        text(&call("t", json!({}))),
        text("fine now"),
    ]));
    let registry: Arc<dyn ToolRegistry> = Arc::new(
        [Arc::new(MockTool::new("t")) as Arc<dyn Tool>]
            .into_iter()
            .collect::<InMemoryToolRegistry>(),
    );
    let agent = AgentEngine::builder(llm, registry)
        .config(config())
        .git_inspector(Arc::new(git))
        .build();
    let events = run(&agent, workspace_request("x")).await;
    let AgentEvent::AgentError(e) = events.last().unwrap() else {
        panic!("{:?}", kinds(&events))
    };
    assert!(e.is_fatal);
    assert!(
        e.error.contains("the git inspector exploded"),
        "{}",
        e.error
    );
    assert!(!agent.is_processing());
    assert_eq!(agent.state(), AgentState::Error);
    // The next request (no tools, so no git) works.
    let events = run(&agent, workspace_request("y")).await;
    assert_eq!(complete(&events).final_response, "fine now");
}

/// The model is shown the tools its request offers; a call of any other — one the
/// request's context disables, or one not available now — is refused, never run.
#[tokio::test]
async fn a_call_of_a_tool_the_request_does_not_offer_is_not_run() {
    let hidden = Arc::new(MockTool::new("hidden"));
    let unavailable = Arc::new(MockTool::new("unavailable"));
    unavailable.set_available(false);
    let good = Arc::new(MockTool::new("good"));
    let reply = format!(
        "{}{}{}",
        call("hidden", json!({})),
        call("unavailable", json!({})),
        call("good", json!({}))
    );
    let tools: Vec<Arc<dyn Tool>> = vec![hidden.clone(), unavailable.clone(), good.clone()];
    let h = harness(vec![text(&reply), text("done")], tools, config());
    let context = ToolAvailabilityContext::for_workspace(std::env::temp_dir())
        .with_disabled_tool_ids(Some(["hidden".to_string()].into()));
    let events = run(&h.agent, AgentRequest::new("x").with_tool_context(context)).await;
    let offered: Vec<String> = h.llm.requests()[0]
        .tools
        .iter()
        .map(|t| t.id.clone())
        .collect();
    assert_eq!(offered, ["good"]);
    let outcomes: Vec<(String, bool, String)> = results(&events)
        .iter()
        .map(|r| {
            let message = r.result.error_message.clone().unwrap_or_default();
            (r.tool_id.clone(), r.success(), message)
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            (
                "hidden".to_string(),
                false,
                "Tool not available in this request: hidden".to_string()
            ),
            (
                "unavailable".to_string(),
                false,
                "Tool not available in this request: unavailable".to_string()
            ),
            ("good".to_string(), true, String::new()),
        ]
    );
    assert_eq!(
        (
            hidden.executions(),
            unavailable.executions(),
            good.executions()
        ),
        (0, 0, 1)
    );
    assert_eq!(complete(&events).final_response, "done");
}

// --- exactly one terminal event ----------------------------------------------------------------

#[tokio::test]
async fn a_timeout_anywhere_ends_with_exactly_one_agent_complete() {
    let short = AgentConfig {
        agent_request_timeout_ms: 200,
        ..config()
    };
    // While a person is asked.
    let h = harness(
        vec![text(&call("run", json!({"command": "ls"})))],
        vec![risky("run")],
        short.clone(),
    );
    let events = run(&h.agent, workspace_request("x")).await;
    assert_eq!(complete(&events).reason, CompletionReason::Timeout);
    assert!(!kinds(&events).contains(&"agent_error"));
    // While a tool runs that ignores its token.
    let stubborn = Arc::new(MockTool::new("stubborn").with_execute(|_| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        ToolResult::success("never")
    }));
    let h = harness(
        vec![text(&call("stubborn", json!({})))],
        vec![stubborn],
        short.clone(),
    );
    let events = run(&h.agent, workspace_request("x")).await;
    let done = complete(&events);
    assert_eq!(done.reason, CompletionReason::Timeout);
    assert!(done.stop_message.is_some());
    // While the model writes.
    let h = harness(
        vec![ScriptedResponse::chunks(vec!["x"; 100]).with_delay(Duration::from_millis(20))],
        vec![],
        short,
    );
    let events = run(&h.agent, AgentRequest::new("x").with_tools_enabled(false)).await;
    assert_eq!(complete(&events).reason, CompletionReason::Timeout);
}

#[tokio::test]
async fn a_model_failure_after_tools_ends_with_exactly_one_fatal_error() {
    let h = harness(
        vec![
            text(&call("t", json!({}))),
            ScriptedResponse::failure("model crashed"),
        ],
        vec![Arc::new(MockTool::new("t"))],
        config(),
    );
    let events = run(&h.agent, workspace_request("x")).await;
    assert!(!kinds(&events).contains(&"agent_complete"));
    let AgentEvent::AgentError(e) = events.last().unwrap() else {
        panic!("{:?}", kinds(&events))
    };
    assert_eq!(e.category, AgentErrorCategory::LlmError);
}

#[tokio::test]
async fn cancelling_before_the_tools_run_ends_with_exactly_one_agent_complete() {
    // Cancelled as the approval is answered: the calls are prepared, none runs.
    let tool = risky("run");
    let h = harness(
        vec![text(&call("run", json!({"command": "ls"})))],
        vec![tool.clone()],
        config(),
    );
    let agent = h.agent.clone();
    let events = run_answering(&h.agent, workspace_request("x"), move |a| {
        agent.cancel();
        let _ = a.approve();
    })
    .await;
    assert_eq!(tool.executions(), 0);
    assert!(complete(&events).was_cancelled);
}

// --- the tool's assessment: must_ask and the sandbox -------------------------------------------

fn unsandboxed() -> SandboxSummary {
    SandboxSummary {
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        enforced: false,
        writable: vec!["the workspace".into()],
        description: "none: the kernel cannot sandbox commands here".into(),
    }
}

/// A safe tool that says it must be asked about (no sandbox).
fn asking_tool() -> Arc<MockTool> {
    Arc::new(MockTool::new("cmd").with_assess(|params, workspace| {
        CallAssessment::new(
            RiskLevel::Safe,
            PermissionSubjects::from_parameters(params, workspace),
        )
        .with_sandbox(unsandboxed())
        .asking("commands cannot be sandboxed here")
    }))
}

#[tokio::test]
async fn must_ask_puts_a_safe_call_to_a_person_with_the_sandbox_shown() {
    let tool = asking_tool();
    let h = harness(
        vec![
            text(&call("cmd", json!({"command": "ls"}))),
            text(&call("cmd", json!({"command": "ls -la"}))),
            text("done"),
        ],
        vec![tool.clone()],
        config(),
    );
    let request = workspace_request("x");
    let conversation = request.conversation_id;
    let mut asked = Vec::new();
    let events = run_answering(&h.agent, request, |a| {
        asked.push(a.clone());
        a.approve_with(RememberScope::Session, None).unwrap();
    })
    .await;
    assert_eq!(
        asked.len(),
        2,
        "a remembered decision does not answer a call that must be asked about"
    );
    let a = &asked[0];
    assert_eq!(
        a.must_ask.as_deref(),
        Some("commands cannot be sandboxed here")
    );
    assert_eq!(a.sandbox, Some(unsandboxed()));
    assert!(
        a.details
            .iter()
            .any(|d| d == "Sandbox: none: the kernel cannot sandbox commands here"),
        "{:?}",
        a.details
    );
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("No sandbox is enforced")),
        "{:?}",
        a.warnings
    );
    assert_eq!(tool.executions(), 2);
    assert_eq!(complete(&events).final_response, "done");

    // The request's auto-approval level does not bypass it either.
    let h = harness(
        vec![text(&call("cmd", json!({"command": "ls"}))), text("ok")],
        vec![tool.clone()],
        config(),
    );
    let context = ToolAvailabilityContext::for_workspace(std::env::temp_dir())
        .with_max_auto_approval_risk_level(RiskLevel::High);
    let mut asked = 0;
    run_answering(
        &h.agent,
        AgentRequest::new("x")
            .with_tool_context(context)
            .with_conversation(conversation),
        |a| {
            asked += 1;
            a.deny(None).unwrap();
        },
    )
    .await;
    assert_eq!(asked, 1);
    assert_eq!(tool.executions(), 2);
}

#[tokio::test]
async fn an_enforced_sandbox_without_must_ask_is_not_asked_about() {
    let tool = Arc::new(MockTool::new("cmd").with_assess(|params, workspace| {
        CallAssessment::new(
            RiskLevel::Safe,
            PermissionSubjects::from_parameters(params, workspace),
        )
        .with_sandbox(SandboxSummary {
            enforced: true,
            ..unsandboxed()
        })
    }));
    let h = harness(
        vec![text(&call("cmd", json!({"command": "ls"}))), text("ok")],
        vec![tool.clone()],
        config(),
    );
    let events = run(&h.agent, workspace_request("x")).await;
    assert!(!kinds(&events).contains(&"approval_request"));
    assert_eq!(tool.executions(), 1);
}

// --- parameters edited while approving -----------------------------------------------------------

#[tokio::test]
async fn edited_parameters_are_validated_assessed_and_denied_again() {
    let tool = Arc::new(
        MockTool::new("write")
            .with_risk(RiskLevel::High)
            .with_validate(|p| {
                if p.get("path").and_then(Value::as_str).is_some() {
                    ToolValidationResult::valid()
                } else {
                    ToolValidationResult::invalid(["path is required"])
                }
            }),
    );
    let pm = DefaultPermissionManager::in_memory();
    pm.set_tool_permissions(
        "write",
        ToolPermissionSettings::default().with_denied_patterns(vec!["secret/*".into()]),
    )
    .await
    .unwrap();
    let pm: Arc<dyn PermissionManager> = Arc::new(pm);
    let edits = [
        json!({"path": "./secret//key"}),
        json!({"path": format!("{}/secret/key", std::env::temp_dir().display())}),
        json!({"where": "x"}),
    ];
    for edit in edits {
        let h = harness_with(
            vec![
                text(&call("write", json!({"path": "notes.txt"}))),
                text("ok"),
            ],
            vec![tool.clone()],
            config(),
            pm.clone(),
        );
        let agent = h.agent.clone();
        let e = edit.clone();
        let events = run_answering(&h.agent, workspace_request("x"), move |a| {
            agent
                .provide_approval(
                    a.request.id,
                    ApprovalDecision::approve().with_modified_parameters(e.clone()),
                )
                .unwrap();
        })
        .await;
        assert_eq!(tool.executions(), 0, "{edit}");
        let message = results(&events)[0]
            .result
            .error_message
            .clone()
            .unwrap_or_default();
        assert!(
            message.starts_with("Denied by the permission settings")
                || message.starts_with("Validation of the edited parameters failed"),
            "{edit}: {message}"
        );
    }
}

/// A request's events, read to the end with `check_run`, answering nothing.
#[tokio::test]
async fn dropping_the_stream_while_asked_still_releases_the_agent() {
    let h = harness(
        vec![text(&call("run", json!({"command": "ls"}))), text("next")],
        vec![risky("run")],
        config(),
    );
    let mut stream = h.agent.process_message(workspace_request("x")).unwrap();
    while let Some(e) = stream.next().await {
        if e.requires_user_input() {
            break;
        }
    }
    drop(stream);
    let start = std::time::Instant::now();
    while h.agent.is_processing() {
        assert!(start.elapsed() < Duration::from_secs(2), "still running");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let events = run(&h.agent, workspace_request("y")).await;
    check_run(&events);
    assert_eq!(complete(&events).final_response, "next");
}

#[tokio::test]
async fn sampling_options_that_are_not_numbers_are_refused_before_anything_runs() {
    let h = harness(vec![text("never asked")], Vec::new(), config());
    for options in [
        InferenceOptions::default().with_temperature(f32::NAN),
        InferenceOptions::default().with_temperature(f32::INFINITY),
        InferenceOptions::default().with_top_p(2.0),
        InferenceOptions::default().with_max_tokens(0),
    ] {
        let request = AgentRequest::new("hi").with_inference_options(options.clone());
        match h.agent.process_message(request) {
            Err(Error::InvalidRequest(problems)) => assert!(!problems.is_empty()),
            Err(e) => panic!("{options:?}: {e}"),
            Ok(_) => panic!("{options:?} was accepted"),
        }
    }
    assert!(!h.agent.is_processing(), "nothing started");
}

// --- an earlier call of the same reply changes what a later one touches -------------------------

/// A workspace with `secret/key` and `docs/`, the real tools, and `pm`.
fn real_tools(
    responses: Vec<ScriptedResponse>,
    pm: DefaultPermissionManager,
) -> (tempfile::TempDir, crate::agent::Harness) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("secret")).unwrap();
    std::fs::write(ws.path().join("secret/key"), "TOP-SECRET-42").unwrap();
    std::fs::create_dir(ws.path().join("docs")).unwrap();
    let h = harness_with(
        responses,
        tools::builtin_tools(),
        AgentConfig {
            max_parallel_tool_calls: 10,
            ..config()
        },
        Arc::new(pm),
    );
    (ws, h)
}

/// Run `request` in `ws`, answering yes to every question; the tools asked about.
async fn approving_all(
    h: &crate::agent::Harness,
    ws: &std::path::Path,
    auto_up_to: RiskLevel,
) -> (Vec<AgentEvent>, Vec<String>) {
    let context =
        ToolAvailabilityContext::for_workspace(ws).with_max_auto_approval_risk_level(auto_up_to);
    let mut asked = Vec::new();
    let events = run_answering(
        &h.agent,
        AgentRequest::new("go").with_tool_context(context),
        |a| {
            asked.push(a.request.tool_id.clone());
            a.approve().unwrap();
        },
    )
    .await;
    (events, asked)
}

fn error_of(r: &ToolResultEvent) -> &str {
    r.result.error_message.as_deref().unwrap_or_default()
}

#[tokio::test]
async fn a_link_made_earlier_in_the_reply_does_not_slip_past_a_deny_rule() {
    for auto_up_to in [RiskLevel::Safe, RiskLevel::Critical] {
        let pm = DefaultPermissionManager::in_memory();
        pm.set_tool_permissions(
            "read_file",
            ToolPermissionSettings::default().with_denied_patterns(vec!["secret/**".into()]),
        )
        .await
        .unwrap();
        let reply = call("run_command", json!({"command": "ln -s secret lnk"}))
            + &call("read_file", json!({"path": "lnk/key"}));
        let (ws, h) = real_tools(
            vec![
                text(&reply),
                // The model tries again in the next iteration.
                text(&call("read_file", json!({"path": "lnk/key"}))),
                text("done"),
            ],
            pm,
        );
        let (events, _) = approving_all(&h, ws.path(), auto_up_to).await;
        assert!(
            ws.path().join("lnk").is_symlink(),
            "the first call made its link: {:?}",
            results(&events)
        );
        let r = results(&events);
        assert_eq!(r.len(), 3, "one result per call");
        assert!(r[0].success(), "{}", error_of(r[0]));
        assert!(
            error_of(r[1]).starts_with(
                "Denied by the permission settings (after an earlier call of this reply)"
            ),
            "{auto_up_to}: {}",
            error_of(r[1])
        );
        assert!(
            error_of(r[2]).starts_with("Denied by the permission settings"),
            "the retry is denied too: {}",
            error_of(r[2])
        );
        let seen = format!("{events:?}{:?}", h.llm.requests());
        assert!(
            !seen.contains("TOP-SECRET-42"),
            "{auto_up_to}: the secret leaked"
        );
        assert_eq!(complete(&events).final_response, "done");
    }
}

#[tokio::test]
async fn a_folder_swapped_earlier_in_the_reply_does_not_widen_an_allow_rule() {
    let pm = DefaultPermissionManager::in_memory();
    pm.set_tool_permissions(
        "write_file",
        ToolPermissionSettings::default().with_allowed_patterns(vec!["docs/**".into()]),
    )
    .await
    .unwrap();
    let write = call(
        "write_file",
        json!({"path": "docs/note.md", "content": "planted"}),
    );
    let reply = call(
        "run_command",
        json!({"command": "rmdir docs && ln -s secret docs"}),
    ) + &write;
    let (ws, h) = real_tools(vec![text(&reply), text(&write), text("done")], pm);
    let planted = ws.path().join("secret/note.md");
    // Before: the allow rule lets a write into docs/ run without asking.
    let (events, asked) = approving_all(&h, ws.path(), RiskLevel::Safe).await;
    let r = results(&events);
    assert_eq!(r.len(), 3, "one result per call");
    assert!(r[0].success(), "{}", error_of(r[0]));
    assert!(ws.path().join("docs").is_symlink());
    assert!(
        error_of(r[1]).starts_with(
            "Not run: what this call touches changed after an earlier call of this reply"
        ) && error_of(r[1]).ends_with("call it again to have it approved"),
        "{}",
        error_of(r[1])
    );
    // Only a person lets the write through the link, when the model calls it again.
    assert_eq!(asked, ["run_command", "write_file"]);
    assert!(r[2].success(), "{}", error_of(r[2]));
    assert_eq!(std::fs::read_to_string(&planted).unwrap(), "planted");
    assert_eq!(complete(&events).tool_calls_executed, 2);
}

#[tokio::test]
async fn an_allow_rule_still_lets_a_write_run_when_nothing_changed_it() {
    let pm = DefaultPermissionManager::in_memory();
    pm.set_tool_permissions(
        "write_file",
        ToolPermissionSettings::default().with_allowed_patterns(vec!["docs/**".into()]),
    )
    .await
    .unwrap();
    let reply = call("run_command", json!({"command": "mkdir docs/sub"}))
        + &call(
            "write_file",
            json!({"path": "docs/sub/note.md", "content": "fine"}),
        );
    let (ws, h) = real_tools(vec![text(&reply), text("done")], pm);
    let (events, asked) = approving_all(&h, ws.path(), RiskLevel::Safe).await;
    assert_eq!(asked, ["run_command"], "the write is allowed by the rule");
    assert!(results(&events).iter().all(|r| r.success()));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("docs/sub/note.md")).unwrap(),
        "fine"
    );
}

#[tokio::test]
async fn a_persons_approval_holds_only_at_the_risk_it_was_given() {
    // `flip` changes what `write` is rated from then on; `write` is asked about (medium).
    for (after, runs) in [
        (RiskLevel::Low, true),
        (RiskLevel::Medium, true),
        (RiskLevel::High, false),
        (RiskLevel::Critical, false),
    ] {
        let rated = Arc::new(std::sync::Mutex::new(RiskLevel::Medium));
        let r = rated.clone();
        let flip = Arc::new(
            MockTool::new("flip")
                .with_category(ToolCategory::Terminal)
                .with_execute(move |_| {
                    *r.lock().unwrap() = after;
                    async { ToolResult::success("flipped") }
                }),
        );
        let r = rated.clone();
        let write =
            Arc::new(MockTool::new("write").with_effective_risk(move |_| *r.lock().unwrap()));
        let reply = call("flip", json!({})) + &call("write", json!({"path": "a"}));
        let h = harness(
            vec![text(&reply), text("done")],
            vec![flip.clone(), write.clone()],
            config(),
        );
        let mut asked = Vec::new();
        let events = run_answering(&h.agent, workspace_request("x"), |a| {
            asked.push(a.request.tool_id.clone());
            a.approve().unwrap();
        })
        .await;
        assert_eq!(asked, ["write"], "{after}");
        assert_eq!(flip.executions(), 1);
        assert_eq!(write.executions(), usize::from(runs), "{after}");
        let r = results(&events);
        assert_eq!(r.len(), 2);
        if !runs {
            assert!(
                error_of(r[1]).starts_with("Not run: what this call touches changed"),
                "{after}: {}",
                error_of(r[1])
            );
        }
    }
}

/// A reply with hundreds of calls (a model gone astray, or told to by a file it read)
/// runs only the first 64: the rest settle at once as not run, with the reason.
#[tokio::test]
async fn a_reply_with_hundreds_of_calls_runs_a_bounded_number() {
    let tool = Arc::new(MockTool::new("good"));
    let reply: String = (0..300).map(|i| call("good", json!({ "n": i }))).collect();
    let h = harness(
        vec![text(&reply), text("done")],
        vec![tool.clone()],
        config(),
    );
    let events = run(&h.agent, workspace_request("go")).await;
    let r = results(&events);
    assert_eq!(r.len(), 300);
    assert_eq!(r.iter().filter(|r| r.success()).count(), 64);
    assert_eq!(tool.executions(), 64);
    let refused = r[64].result.error_message.as_deref().unwrap_or_default();
    assert!(refused.contains("at most 64 calls"), "{refused}");
    assert_eq!(complete(&events).final_response, "done");
}
