//! A rule or a hook decided something (`"policy_decision"`): which one, about which call,
//! and why — the record of policy as code in the event stream.

use super::EventHeader;
use crate::HookPoint;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySource {
    /// A rule (see [`crate::CallRules`]).
    Rule,
    /// A hook (see [`crate::Hook`]).
    Hook,
}

/// What was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyOutcome {
    /// The call may run without asking.
    Allow,
    /// The call goes to a person.
    Ask,
    /// A rule forbids the call.
    Forbid,
    /// A hook denies the call.
    Deny,
    /// A hook added context for the model.
    Context,
    /// A hook was told and decided nothing.
    Noted,
    /// A hook failed (it did not start, timed out or answered something else): before a
    /// tool this denies the call.
    Failed,
}

/// A rule or a hook decided (`"policy_decision"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyDecisionEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// A rule or a hook.
    pub source: PolicySource,
    /// The rule (`rules/git.toml:3`) or the hook's name.
    pub name: String,
    /// The hook's moment (hooks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<HookPoint>,
    /// The call decided about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<Uuid>,
    /// Its tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    /// What was decided.
    pub outcome: PolicyOutcome,
    /// Why (a rule's justification, a hook's reason or failure, the context added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl PolicyDecisionEvent {
    /// A decision of `source` `name` in request `request_id` at `iteration`.
    pub fn create(
        request_id: Uuid,
        source: PolicySource,
        name: impl Into<String>,
        outcome: PolicyOutcome,
        iteration: u32,
    ) -> Self {
        PolicyDecisionEvent {
            header: EventHeader::new(request_id, iteration),
            source,
            name: name.into(),
            point: None,
            call_id: None,
            tool_id: None,
            outcome,
            reason: None,
        }
    }

    /// Set the hook's moment.
    pub fn at(mut self, point: HookPoint) -> Self {
        self.point = Some(point);
        self
    }

    /// Set the call.
    pub fn about(mut self, call_id: Uuid, tool_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id);
        self.tool_id = Some(tool_id.into());
        self
    }

    /// Set the reason.
    pub fn because(mut self, reason: Option<String>) -> Self {
        self.reason = reason;
        self
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        let who = match self.source {
            PolicySource::Rule => "rule",
            PolicySource::Hook => "hook",
        };
        let outcome = serde_json::to_value(self.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        match &self.reason {
            Some(r) => format!("{who} {}: {outcome} ({r})", self.name),
            None => format!("{who} {}: {outcome}", self.name),
        }
    }
}
