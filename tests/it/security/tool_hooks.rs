//! A tool that panics in any of its hooks cannot take the request down, nor another call:
//! every call the engine makes into a tool's code is guarded. A hook about one call
//! (`definition` when the call is screened, `validate`, `effective_risk_level`, `assess`
//! — at screening and at the re-check before a later call of a reply —,
//! `execution_summary`, `preview_change`, `execute`) fails that call; a tool whose
//! `definition` or `is_available` panics as the request's tools are chosen is not offered,
//! and a call of it is refused; a panic in `argument_choices` holds nothing, and the
//! tool's calls go on as any.

use crate::agent::{call, check_run, complete, config, kinds, results, text, workspace_request};
use core_models::{AgentService as _, *};
use futures::StreamExt;
use serde_json::{json, Value};
use services_ai::{AgentConfig, AgentEngine};
use std::collections::BTreeMap;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

/// A hook of [`Tool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolHook {
    Definition,
    IsAvailable,
    Validate,
    Risk,
    Assess,
    Summary,
    Preview,
    ArgumentChoices,
    Execute,
}

/// Tool `boom`: panics in `hook` from its `after`-th call of that hook on (0: always).
struct Panicky {
    definition: ToolDefinition,
    hook: ToolHook,
    after: usize,
    calls: AtomicUsize,
    executions: AtomicUsize,
}

impl Panicky {
    fn new(hook: ToolHook, after: usize) -> Arc<Self> {
        // Rated high when the preview is what panics: only a call a person is asked about
        // is previewed.
        let risk = if hook == ToolHook::Preview {
            RiskLevel::High
        } else {
            RiskLevel::Safe
        };
        let definition = ToolDefinition::new("boom", "boom", "Explodes the barrel named as target")
            .with_category(ToolCategory::Custom)
            .with_risk(risk)
            .with_schema(json!({
                "type": "object",
                "properties": {"target": {"type": "string"}},
                "required": ["target"]
            }));
        Arc::new(Panicky {
            definition,
            hook,
            after,
            calls: AtomicUsize::new(0),
            executions: AtomicUsize::new(0),
        })
    }

    fn boom(&self, hook: ToolHook) {
        if self.hook == hook && self.calls.fetch_add(1, Ordering::SeqCst) >= self.after {
            panic!("boom in {hook:?}");
        }
    }

    /// How often the panicking hook was called.
    fn hook_calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

// Written out as `async_trait` expands it (the test binary does not depend on it).
impl Tool for Panicky {
    fn definition(&self) -> &ToolDefinition {
        self.boom(ToolHook::Definition);
        &self.definition
    }

    fn is_available(&self, _context: &ToolAvailabilityContext) -> bool {
        self.boom(ToolHook::IsAvailable);
        true
    }

    fn validate(&self, _parameters: &Value) -> ToolValidationResult {
        self.boom(ToolHook::Validate);
        ToolValidationResult::valid()
    }

    fn execution_summary(&self, _parameters: &Value) -> String {
        self.boom(ToolHook::Summary);
        "Explode".to_string()
    }

    fn effective_risk_level(&self, _parameters: &Value) -> RiskLevel {
        self.boom(ToolHook::Risk);
        self.definition.default_risk_level
    }

    fn assess(&self, parameters: &Value, workspace: Option<&Path>) -> CallAssessment {
        self.boom(ToolHook::Assess);
        CallAssessment::new(
            self.effective_risk_level(parameters),
            PermissionSubjects::from_parameters(parameters, workspace),
        )
    }

    fn preview_change(&self, _parameters: &Value, _workspace: Option<&Path>) -> Option<FileChange> {
        self.boom(ToolHook::Preview);
        None
    }

    fn argument_choices(
        &self,
        _workspace: Option<&Path>,
        _limit: usize,
    ) -> Option<ArgumentChoices> {
        self.boom(ToolHook::ArgumentChoices);
        None
    }

    fn execute<'life0, 'async_trait>(
        &'life0 self,
        _context: ToolExecutionContext,
    ) -> Pin<Box<dyn std::future::Future<Output = ToolResult> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            self.boom(ToolHook::Execute);
            self.executions.fetch_add(1, Ordering::SeqCst);
            ToolResult::success("exploded")
        })
    }
}

/// A registry that never calls a tool's code itself (an in-memory registry asks each
/// tool for its id as it is registered).
struct Listed(BTreeMap<String, Arc<dyn Tool>>);

impl Listed {
    fn of(tools: Vec<(&str, Arc<dyn Tool>)>) -> Arc<Self> {
        Arc::new(Listed(
            tools
                .into_iter()
                .map(|(id, tool)| (id.to_string(), tool))
                .collect(),
        ))
    }
}

impl ToolRegistry for Listed {
    fn get_tool(&self, id: &str) -> Option<Arc<dyn Tool>> {
        self.0.get(id).cloned()
    }

    fn all_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.0.values().cloned().collect()
    }
}

/// Run `request` on `agent` to its end, approving every call a person is asked about.
async fn run_approving(agent: &AgentEngine, request: AgentRequest) -> Vec<AgentEvent> {
    let mut stream = agent.process_message(request).unwrap();
    let mut events = Vec::new();
    let deadline = tokio::time::sleep(Duration::from_secs(20));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            e = stream.next() => match e {
                Some(e) => {
                    if let AgentEvent::ApprovalRequest(a) = &e {
                        a.approve().unwrap();
                    }
                    events.push(e);
                }
                None => break,
            },
            _ = &mut deadline => panic!("the request did not end: {:?}", kinds(&events)),
        }
    }
    check_run(&events);
    events
}

fn hook_config() -> AgentConfig {
    AgentConfig {
        // Argument choices are gathered before each reply that may call a tool.
        path_choices_limit: 100,
        ..config()
    }
}

#[tokio::test]
async fn a_panic_in_any_tool_hook_fails_that_call_only() {
    use ToolHook::*;
    for hook in [
        Definition,
        IsAvailable,
        Validate,
        Risk,
        Assess,
        Summary,
        Preview,
        ArgumentChoices,
        Execute,
    ] {
        let boom = Panicky::new(hook, 0);
        let good = Arc::new(MockTool::new("good"));
        let registry = Listed::of(vec![
            ("boom", boom.clone() as Arc<dyn Tool>),
            ("good", good.clone()),
        ]);
        let reply = format!(
            "{}{}",
            call("boom", json!({"target": "red shed"})),
            call("good", json!({}))
        );
        let llm = Arc::new(ScriptedLlm::new([
            text(&reply),
            text("one call failed"),
            text("second request done"),
        ]));
        let agent = AgentEngine::builder(llm, registry)
            .config(hook_config())
            .build();
        let events =
            run_approving(&agent, workspace_request("Explode the red shed with boom")).await;
        assert!(boom.hook_calls() > 0, "{hook:?}: the hook was called");
        let r = results(&events);
        assert_eq!(r.len(), 2, "{hook:?}: {:?}", kinds(&events));
        assert!(r[1].success(), "{hook:?}: the other call of the reply ran");
        let message = r[0].result.error_message.as_deref().unwrap_or_default();
        match hook {
            IsAvailable => assert_eq!(
                (r[0].success(), message),
                (false, "Tool not available in this request: boom"),
                "{hook:?}"
            ),
            // Choices only hold a small model's arguments: a panic holds nothing.
            ArgumentChoices => {
                assert!(r[0].success(), "{hook:?}: {message}");
                assert_eq!(boom.executions.load(Ordering::SeqCst), 1, "{hook:?}");
            }
            _ => {
                assert!(!r[0].success(), "{hook:?}");
                assert!(
                    message.starts_with(&format!("the tool failed unexpectedly: boom in {hook:?}")),
                    "{hook:?}: {message}"
                );
                assert_eq!(boom.executions.load(Ordering::SeqCst), 0, "{hook:?}");
            }
        }
        let done = complete(&events);
        assert_eq!(
            (done.reason, done.final_response.as_str()),
            (CompletionReason::Finished, "one call failed"),
            "{hook:?}"
        );
        // The agent goes on: the next request works.
        let events = run_approving(&agent, workspace_request("again")).await;
        assert_eq!(
            complete(&events).final_response,
            "second request done",
            "{hook:?}"
        );
        assert_eq!(good.executions(), 1, "{hook:?}");
    }
}

/// The assessment is made again before a call that follows one that could have changed
/// something: a panic there fails that call, and the calls after it still run.
#[tokio::test]
async fn a_panic_in_the_assessment_made_again_before_a_later_call_fails_that_call_only() {
    let writer = Arc::new(MockTool::new("writer").with_category(ToolCategory::Terminal));
    // Screening assesses first (fine); the re-check after `writer` ran panics.
    let boom = Panicky::new(ToolHook::Assess, 1);
    let good = Arc::new(MockTool::new("good"));
    let registry = Listed::of(vec![
        ("writer", writer.clone() as Arc<dyn Tool>),
        ("boom", boom.clone()),
        ("good", good.clone()),
    ]);
    let reply = format!(
        "{}{}{}",
        call("writer", json!({})),
        call("boom", json!({"target": "barrel"})),
        call("good", json!({}))
    );
    let llm = Arc::new(ScriptedLlm::new([text(&reply), text("one call failed")]));
    let agent = AgentEngine::builder(llm, registry).config(config()).build();
    let events = run_approving(&agent, workspace_request("go")).await;
    assert_eq!(boom.hook_calls(), 2, "assessed at screening, then again");
    let r = results(&events);
    let by_tool: Vec<(&str, bool)> = r
        .iter()
        .map(|r| (r.tool_id.as_str(), r.success()))
        .collect();
    assert_eq!(
        by_tool,
        [("writer", true), ("boom", false), ("good", true)],
        "{:?}",
        kinds(&events)
    );
    let message = r[1].result.error_message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("the tool failed unexpectedly: boom in Assess"),
        "{message}"
    );
    assert_eq!(boom.executions.load(Ordering::SeqCst), 0);
    assert_eq!(complete(&events).final_response, "one call failed");
}

/// An executor that panics before it hands back its future.
struct PanickingExecutor;

impl ToolExecutionService for PanickingExecutor {
    fn execute<'life0, 'async_trait>(
        &'life0 self,
        tool: Arc<dyn Tool>,
        context: ToolExecutionContext,
    ) -> Pin<Box<dyn std::future::Future<Output = ToolResult> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        if context.parameters.get("explode").is_some() {
            panic!("the executor exploded");
        }
        Box::pin(async move { tool.execute(context).await })
    }
}

#[tokio::test]
async fn an_executor_that_panics_before_its_future_fails_that_call_only() {
    let good = Arc::new(MockTool::new("good"));
    let registry = Listed::of(vec![("good", good.clone() as Arc<dyn Tool>)]);
    let reply = format!(
        "{}{}",
        call("good", json!({"explode": true})),
        call("good", json!({}))
    );
    let llm = Arc::new(ScriptedLlm::new([
        text(&reply),
        ScriptedResponse::chunks(["one call failed"]),
    ]));
    let agent = AgentEngine::builder(llm, registry)
        .config(config())
        .executor(Arc::new(PanickingExecutor))
        .build();
    let events = run_approving(&agent, workspace_request("go")).await;
    let r = results(&events);
    assert_eq!(r.len(), 2);
    let message = r[0].result.error_message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("the tool failed unexpectedly: the executor exploded"),
        "{message}"
    );
    assert!(r[1].success());
    assert_eq!(good.executions(), 1);
    assert_eq!(complete(&events).final_response, "one call failed");
}
