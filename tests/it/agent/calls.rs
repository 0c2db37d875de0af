//! Tool calls: unknown tools and invalid parameters, parallelism (only for replies of
//! read-only calls) and call order, the per-tool timeout, progress and retries, repeated
//! calls, huge results.

use super::{call, complete, config, harness, results, run, text, workspace_request};
use core_models::*;
use serde_json::json;
use services_ai::AgentConfig;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::MockTool;

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
        Some("Tool not found: nope. The tools you may call are: read_file.")
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

/// A tool that records when each call starts and ends (by its `n`), and waits at `barrier`
/// (when given) for the calls it must overlap with, at most 2 s.
fn tracked(
    tool: MockTool,
    log: Arc<std::sync::Mutex<Vec<String>>>,
    barrier: Option<Arc<tokio::sync::Barrier>>,
) -> Arc<MockTool> {
    Arc::new(tool.with_execute(move |ctx| {
        let (log, barrier) = (log.clone(), barrier.clone());
        async move {
            let n = ctx.parameters["n"].as_u64().unwrap();
            log.lock().unwrap().push(format!("start {n}"));
            let overlapped = match barrier {
                Some(b) => tokio::time::timeout(Duration::from_secs(2), b.wait())
                    .await
                    .is_ok(),
                None => {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    true
                }
            };
            log.lock().unwrap().push(format!("end {n}"));
            if overlapped {
                ToolResult::success(format!("result {n}"))
            } else {
                ToolResult::failed("ran alone")
            }
        }
    }))
}

#[tokio::test]
async fn a_reply_of_read_only_calls_runs_them_together() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let read = tracked(MockTool::new("read"), log.clone(), Some(barrier));
    let reply: String = (0..3).map(|n| call("read", json!({"n": n}))).collect();
    let h = harness(
        vec![text(&reply), text("done")],
        vec![read],
        AgentConfig {
            max_parallel_tool_calls: 3,
            ..config()
        },
    );
    let events = run(&h.agent, workspace_request("x")).await;
    let r = results(&events);
    assert!(
        r.iter().all(|r| r.success()),
        "every call met the others: {:?}",
        log.lock().unwrap()
    );
    assert_eq!(r.len(), 3);
}

#[tokio::test]
async fn a_reply_with_a_call_that_can_change_something_runs_its_calls_in_order() {
    let changing = [
        ToolDefinition::new("change", "change", "writes")
            .with_risk(RiskLevel::Safe)
            .modifying_files(),
        ToolDefinition::new("change", "change", "a command")
            .with_risk(RiskLevel::Safe)
            .with_category(ToolCategory::Terminal),
        // Not known to be read-only.
        ToolDefinition::new("change", "change", "a custom tool").with_risk(RiskLevel::Low),
    ];
    for definition in changing {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let read = tracked(MockTool::new("read"), log.clone(), None);
        let change = tracked(
            MockTool::new("change").with_definition(definition.clone()),
            log.clone(),
            None,
        );
        let reply = call("read", json!({"n": 0}))
            + &call("change", json!({"n": 1}))
            + &call("read", json!({"n": 2}))
            + &call("read", json!({"n": 3}));
        let h = harness(
            vec![text(&reply), text("done")],
            vec![read, change],
            AgentConfig {
                max_parallel_tool_calls: 4,
                ..config()
            },
        );
        let context = ToolAvailabilityContext::for_workspace(std::env::temp_dir())
            .with_max_auto_approval_risk_level(RiskLevel::Low);
        let events = run(&h.agent, AgentRequest::new("x").with_tool_context(context)).await;
        assert!(results(&events).iter().all(|r| r.success()));
        let expected: Vec<String> = (0..4)
            .flat_map(|n| [format!("start {n}"), format!("end {n}")])
            .collect();
        assert_eq!(
            *log.lock().unwrap(),
            expected,
            "one at a time, in order: {}",
            definition.description
        );
    }
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

/// A call made already in this request, beside a new one: the new one runs, the repeat is
/// answered with the earlier result. (A reply of repeats alone is asked to answer
/// instead: see `tool_trained`.)
#[tokio::test]
async fn a_repeated_call_is_not_run_again() {
    let tool = Arc::new(MockTool::new("read_file"));
    let c = call("read_file", json!({"path": "a"}));
    let both = format!("{c}{}", call("read_file", json!({"path": "b"})));
    let h = harness(
        vec![text(&c), text(&both), text("done")],
        vec![tool.clone()],
        config(),
    );
    let events = run(&h.agent, workspace_request("x")).await;
    assert_eq!(tool.executions(), 2);
    let r = results(&events);
    assert!(
        r[1].result.content.starts_with("Not run again"),
        "{}",
        r[1].result.content
    );
    assert!(r[1].result.content.contains("Mock success"));
    assert_eq!(complete(&events).tool_calls_executed, 2);
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
