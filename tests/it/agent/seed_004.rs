//! Seed 004's checks after the tools: messages gathered mid-turn, new git commits and
//! autoformatters, and the token and cost budgets.

use super::{
    call, check_run, complete, config, harness, run, text, turn_states, workspace_request,
};
use core_models::{AgentService as _, *};
use futures::StreamExt;
use serde_json::json;
use services_ai::{AgentEngine, InMemoryToolRegistry};
use std::sync::{Arc, Mutex};
use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

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
    let agent = AgentEngine::builder(llm.clone(), registry)
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

// --- the budget -------------------------------------------------------------------------------

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
