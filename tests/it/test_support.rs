//! The test doubles themselves behave as documented.

use core_models::*;
use futures::StreamExt;
use serde_json::json;
use std::time::{Duration, Instant};
use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

async fn collect(
    llm: &ScriptedLlm,
    prompt: &str,
) -> Result<(Vec<String>, Option<LlmUsage>), Error> {
    let mut stream = llm
        .generate(LlmRequest::new(vec![ChatMessage::user(prompt)]))
        .await?;
    let mut texts = Vec::new();
    let mut usage = None;
    while let Some(item) = stream.next().await {
        match item? {
            LlmChunk::Text { text } => texts.push(text),
            LlmChunk::Usage(u) => usage = Some(u),
            other => panic!("a scripted text response streamed {other:?}"),
        }
    }
    Ok((texts, usage))
}

#[tokio::test]
async fn scripted_llm_streams_records_and_runs_out() {
    let llm = ScriptedLlm::new([
        ScriptedResponse::chunks(["Hel", "lo"]),
        ScriptedResponse::split("abcdef", 4),
    ]);
    let (texts, usage) = collect(&llm, "first prompt").await.unwrap();
    assert_eq!(texts, ["Hel", "lo"]);
    let usage = usage.unwrap();
    assert_eq!(usage.generated_tokens, 2);
    assert_eq!(usage.prompt_tokens, 3, "12 characters ≈ 3 tokens");
    assert_eq!(collect(&llm, "second").await.unwrap().0, ["abcd", "ef"]);
    let err = collect(&llm, "third").await.unwrap_err();
    assert!(
        err.to_string().contains("no response left for LLM call 3"),
        "{err}"
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(&*requests[0].messages[0].content, "first prompt");
}

#[tokio::test]
async fn scripted_llm_fails_on_demand_and_waits_between_chunks() {
    let llm = ScriptedLlm::from_texts(["ok"]);
    llm.fail_next("model crashed");
    assert!(collect(&llm, "a")
        .await
        .unwrap_err()
        .to_string()
        .contains("model crashed"));
    assert_eq!(collect(&llm, "b").await.unwrap().0, ["ok"]);

    llm.push(ScriptedResponse::chunks(["x"]).then_fail("cut off"));
    assert!(collect(&llm, "c")
        .await
        .unwrap_err()
        .to_string()
        .contains("cut off"));

    llm.push(ScriptedResponse::chunks(["a", "b", "c"]).with_delay(Duration::from_millis(30)));
    let start = Instant::now();
    let (_, usage) = collect(&llm, "d").await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(90));
    assert!(usage.unwrap().time_to_first_token >= Duration::from_millis(30));
}

#[tokio::test]
async fn scripted_llm_reads_the_script_format() {
    let llm = ScriptedLlm::from_json(
        r#"{"responses": [{"chunks": ["a", "b"], "delay_ms": 0}, {"chunks": ["c"]}]}"#,
    )
    .unwrap();
    assert_eq!(llm.remaining(), 2);
    assert_eq!(collect(&llm, "x").await.unwrap().0, ["a", "b"]);
    assert!(ScriptedLlm::from_json(r#"{"responses": 3}"#).is_err());
}

#[tokio::test]
async fn mock_tool_defaults_and_handlers() {
    let tool = MockTool::default();
    assert_eq!(tool.definition().id, "mock-tool");
    assert_eq!(tool.definition().name, "Mock Tool");
    assert_eq!(tool.definition().category, ToolCategory::Custom);
    assert_eq!(tool.effective_risk_level(&json!({})), RiskLevel::Safe);
    assert_eq!(tool.execution_summary(&json!({})), "Execute mock tool");
    assert!(tool.validate(&json!({})).is_valid);
    let result = tool
        .execute(ToolExecutionContext::new(json!({"n": 1})))
        .await;
    assert_eq!(result, ToolResult::success("Mock success"));
    assert_eq!(tool.executions(), 1);
    assert_eq!(tool.received_parameters(), [json!({"n": 1})]);

    let tool = MockTool::new("slow")
        .with_risk(RiskLevel::High)
        .with_validate(|p| {
            if p.get("x").is_some() {
                ToolValidationResult::valid()
            } else {
                ToolValidationResult::invalid(["x is required"])
            }
        })
        .with_execute(|ctx| async move {
            tokio::select! {
                _ = ctx.cancellation.cancelled() => ToolResult::failed("cancelled"),
                _ = tokio::time::sleep(Duration::from_secs(10)) => ToolResult::success("slept"),
            }
        });
    assert_eq!(tool.effective_risk_level(&json!({})), RiskLevel::High);
    assert_eq!(tool.validate(&json!({})).errors, ["x is required"]);
    let ctx = ToolExecutionContext::new(json!({"x": 1}));
    let token = ctx.cancellation.clone();
    let run = tokio::spawn(async move { tool.execute(ctx).await });
    token.cancel();
    assert_eq!(run.await.unwrap(), ToolResult::failed("cancelled"));
    let hidden = MockTool::default();
    hidden.set_available(false);
    assert!(!hidden.is_available(&ToolAvailabilityContext::default()));
}

#[tokio::test]
async fn mockall_mocks_are_usable_as_ports() {
    let mut llm = test_support::mocks::MockLlmService::new();
    llm.expect_model_name().return_const("mocked".to_string());
    llm.expect_generate()
        .times(1)
        .returning(|_| Ok(Box::pin(futures::stream::iter([Ok(LlmChunk::text("hi"))]))));
    let llm: std::sync::Arc<dyn LlmService> = std::sync::Arc::new(llm);
    assert_eq!(llm.model_name(), "mocked");
    let mut s = llm.generate(LlmRequest::new(vec![])).await.unwrap();
    assert_eq!(s.next().await.unwrap().unwrap(), LlmChunk::text("hi"));

    let mut pm = test_support::mocks::MockPermissionManager::new();
    pm.expect_check_permission()
        .returning(|_, _| Ok(PermissionCheckResult::allowed()));
    let r = pm
        .check_permission(uuid::Uuid::nil(), &ToolCallRequest::new("t", json!({})))
        .await
        .unwrap();
    assert!(r.is_allowed);

    let mut agent = test_support::mocks::MockAgentService::new();
    agent.expect_state().return_const(AgentState::Idle);
    agent
        .expect_send_user_message()
        .returning(|_| Err(Error::NotProcessing));
    let agent: &dyn AgentService = &agent;
    assert_eq!(agent.state(), AgentState::Idle);
    assert!(matches!(
        agent.send_user_message("x".into()),
        Err(Error::NotProcessing)
    ));
}
