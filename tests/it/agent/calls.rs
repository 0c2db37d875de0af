//! Tool calls: unknown tools and invalid parameters, parallelism and call order, the per-tool
//! timeout, progress and retries, repeated calls, huge results.

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
