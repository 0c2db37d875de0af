//! `update_plan`: the model keeps a short plan of the task's steps, each pending, in
//! progress or done, and the person follows it (the agent turns each successful call into
//! a `plan_updated` event: a list at the terminal, a `plan` update over ACP). Safe: it
//! changes and reads nothing.

use async_trait::async_trait;
use core_models::{
    PlanStatus, PlanStep, RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext,
    ToolResult, ToolValidationResult, PLAN_TOOL_ID,
};
use serde_json::{json, Value};

/// The most steps a plan holds.
pub const PLAN_MAX_STEPS: usize = 20;
/// The longest a step's words may be, in characters.
const STEP_CHARS: usize = 200;

/// The plan tool.
#[derive(Debug)]
pub struct UpdatePlan {
    definition: ToolDefinition,
}

impl Default for UpdatePlan {
    fn default() -> Self {
        Self::new()
    }
}

impl UpdatePlan {
    /// `update_plan`.
    pub fn new() -> Self {
        let definition = ToolDefinition::new(
            PLAN_TOOL_ID,
            "Update Plan",
            "Keep a short plan of a task of several steps, shown to the person: send every step each time, in order, each with its status (at most one in_progress).",
        )
        .with_category(ToolCategory::Custom)
        .with_risk(RiskLevel::Safe)
        .with_schema(json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "maxItems": PLAN_MAX_STEPS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string", "description": "The step, in a few words"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
                        },
                        "required": ["step", "status"]
                    }
                },
                "explanation": {"type": "string", "description": "What changed, briefly"}
            },
            "required": ["steps"]
        }));
        UpdatePlan { definition }
    }

    /// The plan in `params`, or what is wrong with it.
    pub fn read(params: &Value) -> Result<(Vec<PlanStep>, Option<String>), String> {
        let steps = params
            .get("steps")
            .and_then(Value::as_array)
            .ok_or("'steps' is required: a list of {step, status}")?;
        if steps.is_empty() {
            return Err("'steps' is empty: a plan has at least one step".into());
        }
        if steps.len() > PLAN_MAX_STEPS {
            return Err(format!("a plan has at most {PLAN_MAX_STEPS} steps"));
        }
        let mut out = Vec::with_capacity(steps.len());
        for (i, s) in steps.iter().enumerate() {
            let step = s
                .get("step")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .ok_or(format!("step {}: 'step' is required (its words)", i + 1))?;
            let status = match s.get("status").and_then(Value::as_str) {
                Some("pending") => PlanStatus::Pending,
                Some("in_progress") => PlanStatus::InProgress,
                Some("done" | "completed") => PlanStatus::Done,
                _ => {
                    return Err(format!(
                        "step {}: 'status' is one of pending, in_progress, done",
                        i + 1
                    ))
                }
            };
            out.push(PlanStep {
                step: step.chars().take(STEP_CHARS).collect(),
                status,
            });
        }
        if out
            .iter()
            .filter(|s| s.status == PlanStatus::InProgress)
            .count()
            > 1
        {
            return Err("at most one step is in_progress".into());
        }
        let explanation = params
            .get("explanation")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| t.chars().take(STEP_CHARS).collect());
        Ok((out, explanation))
    }
}

#[async_trait]
impl Tool for UpdatePlan {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, params: &Value) -> ToolValidationResult {
        match Self::read(params) {
            Ok(_) => ToolValidationResult::valid(),
            Err(why) => ToolValidationResult::invalid([why]),
        }
    }

    fn execution_summary(&self, _params: &Value) -> String {
        "Update the plan".into()
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        match Self::read(&context.parameters) {
            Ok((steps, _)) => {
                let done = steps
                    .iter()
                    .filter(|s| s.status == PlanStatus::Done)
                    .count();
                ToolResult::success(format!(
                    "Plan updated: {done} of {} steps done. Go on with the work.",
                    steps.len()
                ))
            }
            Err(why) => ToolResult::failed(why),
        }
    }
}
