//! Policy as code: rules and hooks that decide calls beside the built-in judge.
//!
//! A [`CallRules`] gives a [`RuleVerdict`] for a call (allow, ask or forbid, and which rule
//! said so); a [`Hook`] is told of four moments ([`HookPoint`]) and may answer before a
//! tool runs (allow, deny or ask) or after it (context for the model). The agent applies
//! them (see `services-ai`'s `prepare`): the strictest of the rules, the hooks and the
//! judge's own floor wins; nothing here can lift the sandbox. Every decision is reported
//! as a [`crate::PolicyDecisionEvent`].

use crate::{RiskLevel, ToolCallRequest};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt::Debug;
use std::path::Path;
use uuid::Uuid;

/// What a rule says about a call, from the loosest to the strictest (the order is the
/// strictness: the greatest of several wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyDecision {
    /// Run without asking (within the sandbox, and never past the judge's floor: a
    /// critical call or one a person must see is still put to a person).
    Allow,
    /// Put the call to a person, whatever was remembered or the approval level says.
    Ask,
    /// Refuse the call, whatever anyone approved (`--approve all` included).
    Forbid,
}

impl std::fmt::Display for PolicyDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PolicyDecision::Allow => "allow",
            PolicyDecision::Ask => "ask",
            PolicyDecision::Forbid => "forbid",
        })
    }
}

/// The rules' verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuleVerdict {
    /// What the deciding rule says.
    pub decision: PolicyDecision,
    /// The deciding rule, as a person finds it (`rules/git.toml:3`).
    pub rule: String,
    /// The rule's justification, shown to the person and the model.
    pub justification: Option<String>,
    /// The part of the call it matched (a command of the line, an argument).
    pub matched: Option<String>,
}

impl RuleVerdict {
    /// A verdict of `rule`.
    pub fn new(decision: PolicyDecision, rule: impl Into<String>) -> Self {
        RuleVerdict {
            decision,
            rule: rule.into(),
            justification: None,
            matched: None,
        }
    }

    /// Set the justification.
    pub fn with_justification(mut self, justification: Option<String>) -> Self {
        self.justification = justification;
        self
    }

    /// Set what was matched.
    pub fn with_matched(mut self, matched: Option<String>) -> Self {
        self.matched = matched;
        self
    }

    /// The verdict in words: `rule rules/git.toml:3 forbids 'git push': why`.
    pub fn describe(&self) -> String {
        let verb = match self.decision {
            PolicyDecision::Allow => "allows",
            PolicyDecision::Ask => "asks about",
            PolicyDecision::Forbid => "forbids",
        };
        let mut out = format!("rule {} {verb}", self.rule);
        match &self.matched {
            Some(m) => out.push_str(&format!(" '{m}'")),
            None => out.push_str(" this call"),
        }
        if let Some(j) = &self.justification {
            out.push_str(": ");
            out.push_str(j);
        }
        out
    }
}

/// Rules over calls: which rule, if any, decides a call.
pub trait CallRules: Send + Sync + Debug {
    /// The verdict on `call` (its tool id and arguments exactly as the model wrote them),
    /// made in `workspace`; `None` when no rule applies.
    fn decide(&self, call: &ToolCallRequest, workspace: Option<&Path>) -> Option<RuleVerdict>;
}

/// The moments a hook is told of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookPoint {
    /// A call is about to be decided (after the rules and deny settings, before anyone is
    /// asked): the hook may allow, deny or ask.
    BeforeTool,
    /// A call has run: the hook may add context for the model.
    AfterTool,
    /// A request was submitted.
    RequestSubmitted,
    /// A request ended.
    RequestEnded,
}

impl HookPoint {
    /// Every point, in the order a request meets them.
    pub const ALL: [HookPoint; 4] = [
        HookPoint::RequestSubmitted,
        HookPoint::BeforeTool,
        HookPoint::AfterTool,
        HookPoint::RequestEnded,
    ];

    /// Its name in configuration and JSON (`before_tool`).
    pub fn name(self) -> &'static str {
        match self {
            HookPoint::BeforeTool => "before_tool",
            HookPoint::AfterTool => "after_tool",
            HookPoint::RequestSubmitted => "request_submitted",
            HookPoint::RequestEnded => "request_ended",
        }
    }
}

/// The call a hook is told of: exactly as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookCall {
    /// The call's id.
    pub call_id: Uuid,
    /// The tool's id.
    pub tool: String,
    /// The arguments as the model wrote them.
    pub arguments: Value,
    /// The judge's rating.
    pub risk: RiskLevel,
}

/// A call's result, as an `after_tool` hook is told of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookResult {
    /// Whether the call succeeded.
    pub success: bool,
    /// Its output (or error), the first part when long.
    pub output: String,
    /// Whether `output` was cut.
    pub truncated: bool,
}

/// What a hook is given (as one JSON object on its stdin, for a program).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HookEvent {
    /// The moment.
    pub event: HookPoint,
    /// The conversation.
    pub conversation_id: Uuid,
    /// The request.
    pub request_id: Uuid,
    /// The workspace, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The user's message (`request_submitted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The call (`before_tool`, `after_tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<HookCall>,
    /// The call's result (`after_tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<HookResult>,
    /// How the request ended (`request_ended`): `completed`, `cancelled`, `error`…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The request's answer, the first part when long (`request_ended`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

impl HookEvent {
    /// An event at `point` of `request_id` in `conversation_id`; the rest is set by the
    /// `with_*` methods.
    pub fn new(point: HookPoint, conversation_id: Uuid, request_id: Uuid) -> Self {
        HookEvent {
            event: point,
            conversation_id,
            request_id,
            workspace: None,
            message: None,
            call: None,
            result: None,
            outcome: None,
            answer: None,
        }
    }

    /// Set the workspace.
    pub fn with_workspace(mut self, workspace: Option<&Path>) -> Self {
        self.workspace = workspace.map(|w| w.display().to_string());
        self
    }

    /// Set the user's message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Set the call.
    pub fn with_call(mut self, call: HookCall) -> Self {
        self.call = Some(call);
        self
    }

    /// Set the call's result.
    pub fn with_result(mut self, result: HookResult) -> Self {
        self.result = Some(result);
        self
    }

    /// Set how the request ended and its answer.
    pub fn with_outcome(mut self, outcome: impl Into<String>, answer: Option<String>) -> Self {
        self.outcome = Some(outcome.into());
        self.answer = answer;
        self
    }
}

/// A hook's decision about a call (`before_tool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// Run without asking (like an allowing rule: never past the judge's floor).
    Allow,
    /// Refuse the call.
    Deny,
    /// Put the call to a person.
    Ask,
}

/// A hook's answer (one JSON object on its stdout, for a program). Every field may be left
/// out: an empty answer decides nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HookReply {
    /// The decision (`before_tool` only).
    #[serde(default)]
    pub decision: Option<HookDecision>,
    /// Why, shown to the person and the model.
    #[serde(default)]
    pub reason: Option<String>,
    /// Context for the model (`after_tool`): added to the call's result.
    #[serde(default)]
    pub context: Option<String>,
    /// Arguments the hook would have the call run with instead (`before_tool`). A call is
    /// never run changed without a person's say: a changed call is refused, the change
    /// shown.
    #[serde(default)]
    pub arguments: Option<Value>,
}

impl HookReply {
    /// A reply deciding `decision` for `reason`.
    pub fn decide(decision: HookDecision, reason: impl Into<String>) -> Self {
        HookReply {
            decision: Some(decision),
            reason: Some(reason.into()),
            ..Default::default()
        }
    }

    /// A reply adding `context` for the model.
    pub fn context(context: impl Into<String>) -> Self {
        HookReply {
            context: Some(context.into()),
            ..Default::default()
        }
    }
}

/// A hook: a program of the user's configuration, or code an application registers.
#[async_trait]
pub trait Hook: Send + Sync + Debug {
    /// Its name, as decisions name it.
    fn name(&self) -> String;

    /// The moment it is told of.
    fn point(&self) -> HookPoint;

    /// Handle `event`. An error (the program failed, timed out or answered something that
    /// is not a reply) before a tool call denies the call, with the error shown.
    async fn handle(&self, event: &HookEvent) -> Result<HookReply, String>;
}
