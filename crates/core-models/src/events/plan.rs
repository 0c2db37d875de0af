//! The agent's plan, as the person follows it: the steps the model keeps with the
//! `update_plan` tool, each with its status, sent whole every time it changes.

use super::EventHeader;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The id of the built-in tool whose successful calls update the plan.
pub const PLAN_TOOL_ID: &str = "update_plan";

/// Where a step of the plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not begun.
    Pending,
    /// Being done now (at most one step).
    InProgress,
    /// Done.
    #[serde(alias = "completed")]
    Done,
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// What the step is, in a few words.
    pub step: String,
    /// Where it stands.
    pub status: PlanStatus,
}

/// The plan changed (`"plan_updated"`): every step, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanUpdatedEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The steps, in order.
    pub steps: Vec<PlanStep>,
    /// What changed and why, when the model said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

impl PlanUpdatedEvent {
    /// The plan `steps` of request `request_id` at `iteration`.
    pub fn create(
        request_id: Uuid,
        steps: Vec<PlanStep>,
        explanation: Option<String>,
        iteration: u32,
    ) -> Self {
        PlanUpdatedEvent {
            header: EventHeader::new(request_id, iteration),
            steps,
            explanation,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        let done = self
            .steps
            .iter()
            .filter(|s| s.status == PlanStatus::Done)
            .count();
        format!("plan: {done} of {} steps done", self.steps.len())
    }
}
