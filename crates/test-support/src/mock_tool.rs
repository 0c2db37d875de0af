//! The seed's `MockTool`: a tool whose behaviour a test sets.

use async_trait::async_trait;
use core_models::{
    CallAssessment, PermissionSubjects, RiskLevel, Tool, ToolAvailabilityContext, ToolCategory,
    ToolDefinition, ToolExecutionContext, ToolResult, ToolValidationResult,
};
use futures::future::BoxFuture;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

type ExecuteHandler =
    Arc<dyn Fn(ToolExecutionContext) -> BoxFuture<'static, ToolResult> + Send + Sync>;
type ValidateHandler = Arc<dyn Fn(&Value) -> ToolValidationResult + Send + Sync>;
type AssessHandler = Arc<dyn Fn(&Value, Option<&Path>) -> CallAssessment + Send + Sync>;
type SummaryHandler = Arc<dyn Fn(&Value) -> String + Send + Sync>;
type RiskHandler = Arc<dyn Fn(&Value) -> RiskLevel + Send + Sync>;
type PreflightHandler = Arc<dyn Fn(&Value, Option<&Path>) -> Result<(), String> + Send + Sync>;

/// A tool for tests: id `mock-tool`, name "Mock Tool", `Custom`, `Safe` by default.
/// Execution returns `ToolResult::success("Mock success")` unless a handler is set; the
/// assessment is the trait's default (the tool's risk, the main argument as subject)
/// unless a handler is set.
pub struct MockTool {
    definition: ToolDefinition,
    available: AtomicBool,
    execute_handler: Option<ExecuteHandler>,
    validate_handler: Option<ValidateHandler>,
    assess_handler: Option<AssessHandler>,
    summary_handler: Option<SummaryHandler>,
    risk_handler: Option<RiskHandler>,
    preflight_handler: Option<PreflightHandler>,
    executions: AtomicUsize,
    received: Mutex<Vec<Value>>,
}

impl fmt::Debug for MockTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockTool")
            .field("id", &self.definition.id)
            .field("risk", &self.definition.default_risk_level)
            .field("executions", &self.executions())
            .finish()
    }
}

impl Default for MockTool {
    fn default() -> Self {
        Self::new("mock-tool")
    }
}

impl MockTool {
    /// A mock tool with this id.
    pub fn new(id: &str) -> Self {
        let name = if id == "mock-tool" {
            "Mock Tool".to_string()
        } else {
            id.to_string()
        };
        MockTool {
            definition: ToolDefinition::new(id, name, "A mock tool for testing")
                .with_category(ToolCategory::Custom)
                .with_risk(RiskLevel::Safe)
                .with_schema(serde_json::json!({"type": "object"})),
            available: AtomicBool::new(true),
            execute_handler: None,
            validate_handler: None,
            assess_handler: None,
            summary_handler: None,
            risk_handler: None,
            preflight_handler: None,
            executions: AtomicUsize::new(0),
            received: Mutex::new(Vec::new()),
        }
    }

    /// Set the risk of every call.
    pub fn with_risk(mut self, risk: RiskLevel) -> Self {
        self.definition.default_risk_level = risk;
        self
    }

    /// Set the category.
    pub fn with_category(mut self, category: ToolCategory) -> Self {
        self.definition.category = category;
        self
    }

    /// Replace the whole definition (its id included).
    pub fn with_definition(mut self, definition: ToolDefinition) -> Self {
        self.definition = definition;
        self
    }

    /// Run `handler` on execution.
    pub fn with_execute<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ToolExecutionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        self.execute_handler = Some(Arc::new(move |ctx| Box::pin(handler(ctx))));
        self
    }

    /// Run `handler` on validation.
    pub fn with_validate(
        mut self,
        handler: impl Fn(&Value) -> ToolValidationResult + Send + Sync + 'static,
    ) -> Self {
        self.validate_handler = Some(Arc::new(handler));
        self
    }

    /// Run `handler` to assess each call (see [`Tool::assess`]).
    pub fn with_assess(
        mut self,
        handler: impl Fn(&Value, Option<&Path>) -> CallAssessment + Send + Sync + 'static,
    ) -> Self {
        self.assess_handler = Some(Arc::new(handler));
        self
    }

    /// Run `handler` for each call's preflight (see [`Tool::preflight`]; default: none).
    pub fn with_preflight(
        mut self,
        handler: impl Fn(&Value, Option<&Path>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.preflight_handler = Some(Arc::new(handler));
        self
    }

    /// Run `handler` for each call's summary (default: "Execute mock tool").
    pub fn with_summary(
        mut self,
        handler: impl Fn(&Value) -> String + Send + Sync + 'static,
    ) -> Self {
        self.summary_handler = Some(Arc::new(handler));
        self
    }

    /// Run `handler` for each call's risk (default: the definition's).
    pub fn with_effective_risk(
        mut self,
        handler: impl Fn(&Value) -> RiskLevel + Send + Sync + 'static,
    ) -> Self {
        self.risk_handler = Some(Arc::new(handler));
        self
    }

    /// Set availability (may be changed while shared).
    pub fn set_available(&self, available: bool) {
        self.available.store(available, Ordering::SeqCst);
    }

    /// How many times the tool ran.
    pub fn executions(&self) -> usize {
        self.executions.load(Ordering::SeqCst)
    }

    /// The parameters of every run, in order.
    pub fn received_parameters(&self) -> Vec<Value> {
        self.received.lock().unwrap().clone()
    }
}

#[async_trait]
impl Tool for MockTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn is_available(&self, _context: &ToolAvailabilityContext) -> bool {
        self.available.load(Ordering::SeqCst)
    }

    fn validate(&self, parameters: &Value) -> ToolValidationResult {
        match &self.validate_handler {
            Some(h) => h(parameters),
            None => ToolValidationResult::valid(),
        }
    }

    fn assess(&self, parameters: &Value, workspace: Option<&Path>) -> CallAssessment {
        match &self.assess_handler {
            Some(h) => h(parameters, workspace),
            None => CallAssessment::new(
                self.effective_risk_level(parameters),
                PermissionSubjects::from_parameters(parameters, workspace),
            ),
        }
    }

    fn preflight(&self, parameters: &Value, workspace: Option<&Path>) -> Result<(), String> {
        match &self.preflight_handler {
            Some(h) => h(parameters, workspace),
            None => Ok(()),
        }
    }

    fn execution_summary(&self, parameters: &Value) -> String {
        match &self.summary_handler {
            Some(h) => h(parameters),
            None => "Execute mock tool".to_string(),
        }
    }

    fn effective_risk_level(&self, parameters: &Value) -> RiskLevel {
        match &self.risk_handler {
            Some(h) => h(parameters),
            None => self.definition.default_risk_level,
        }
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        self.executions.fetch_add(1, Ordering::SeqCst);
        self.received
            .lock()
            .unwrap()
            .push(Value::clone(&context.parameters));
        match &self.execute_handler {
            Some(h) => h(context).await,
            None => ToolResult::success("Mock success"),
        }
    }
}
