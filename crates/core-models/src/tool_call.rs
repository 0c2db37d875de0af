//! Tool-call models (seed 001 part f): a parsed call, the user's decision on it and its
//! lifecycle.

use crate::permission::PermissionSubjects;
use crate::serde_util::duration_ms;
use crate::tool::{RiskLevel, ToolResult, ToolValidationResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// Parameter names tried, in order, to find a call's main argument.
pub const MAIN_ARGUMENT_KEYS: [&str; 9] = [
    "path",
    "file_path",
    "file",
    "command",
    "cmd",
    "url",
    "pattern",
    "query",
    "directory",
];

/// A tool call parsed from the model's output.
///
/// Its large parts, the parameters and the text as written, are shared ([`Arc`]): the
/// call is cloned into events, results and the list of calls made, and a clone costs the
/// same whatever their size. Read the parameters through `Deref` (`call.parameters.get(..)`,
/// `&call.parameters` as a `&Value`); replace them with [`ToolCallRequest::set_parameters`].
/// The JSON form is the same as for owned values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// This call's id; approvals and results refer to it.
    pub id: Uuid,
    /// The tool to run (`"read_file"`).
    pub tool_id: String,
    /// The tool's human-readable name (the id when the tool is unknown).
    pub tool_name: String,
    /// The arguments, a JSON object (shared: see the type's documentation).
    pub parameters: Arc<Value>,
    /// Risk of this invocation (may differ from the tool's default).
    pub risk_level: RiskLevel,
    /// What the call will do, in words, for approval prompts.
    pub execution_summary: String,
    /// When the call was parsed.
    pub requested_at: DateTime<Utc>,
    /// The call's text as the model wrote it (shared); not kept for a call longer than
    /// 64 KiB (its parameters hold what it says).
    #[serde(default)]
    pub raw_json: Option<Arc<str>>,
    /// The iteration that produced it.
    #[serde(default)]
    pub iteration_number: u32,
    /// The result of validating the parameters, once done.
    #[serde(default)]
    pub validation_result: Option<ToolValidationResult>,
    /// What permission patterns are matched against, as the tool assessed it (see
    /// [`crate::Tool::assess`]); `None` until assessed, and then the main argument is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_subjects: Option<PermissionSubjects>,
    /// The id the model's server gave the call (OpenAI-compatible `tool_calls`), when it
    /// gave one: the conversation sent back to that server answers the call with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_call_id: Option<String>,
    /// How a grammar narrowed what the model could write for this call, in words (the
    /// tool it chose among the options it was given, arguments held to the workspace's
    /// files…); `None` when the model wrote the call freely. Approval prompts show it:
    /// the call's words are still the model's own, but it could not write anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// How the model wrote this call when it was not in its format's own syntax, in words
    /// ("bare JSON", "a fenced block"…): the parser read it as the call the model wrote, in
    /// another spelling. `None` for a call in the model's own syntax, or when the model's
    /// format is not known. It is the model's own call all the same: judged, approved and
    /// sandboxed like any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<String>,
}

/// The first string among [`MAIN_ARGUMENT_KEYS`] in `parameters`, with its key.
pub fn main_argument_of(parameters: &Value) -> Option<(&'static str, &str)> {
    MAIN_ARGUMENT_KEYS.iter().find_map(|key| {
        parameters
            .get(*key)
            .and_then(Value::as_str)
            .map(|v| (*key, v))
    })
}

impl ToolCallRequest {
    /// A call of an unknown tool: name = id, medium risk, summary "Execute {id}".
    pub fn new(tool_id: impl Into<String>, parameters: Value) -> Self {
        let tool_id = tool_id.into();
        ToolCallRequest {
            id: Uuid::new_v4(),
            tool_name: tool_id.clone(),
            execution_summary: format!("Execute {tool_id}"),
            tool_id,
            parameters: Arc::new(parameters),
            risk_level: RiskLevel::Medium,
            requested_at: Utc::now(),
            raw_json: None,
            iteration_number: 0,
            validation_result: None,
            permission_subjects: None,
            model_call_id: None,
            held: None,
            recovered: None,
        }
    }

    /// The id the conversation answers this call with: the server's own
    /// ([`Self::model_call_id`]) when it gave one, else [`Self::id`].
    pub fn history_id(&self) -> String {
        self.model_call_id
            .clone()
            .unwrap_or_else(|| self.id.to_string())
    }

    /// Replace the parameters (for example with those a person edited).
    pub fn set_parameters(&mut self, parameters: Value) {
        self.parameters = Arc::new(parameters);
    }

    /// Whether the call passed validation (true until validated).
    pub fn is_valid(&self) -> bool {
        self.validation_result.as_ref().is_none_or(|v| v.is_valid)
    }

    /// The argument permission patterns are matched against: the first string among
    /// [`MAIN_ARGUMENT_KEYS`].
    pub fn main_argument(&self) -> Option<&str> {
        main_argument_of(&self.parameters).map(|(_, value)| value)
    }

    /// The subjects permission patterns are matched against: the tool's assessment, or
    /// else the main argument, normalized ([`PermissionSubjects::from_parameters`]).
    pub fn subjects(&self) -> PermissionSubjects {
        self.permission_subjects
            .clone()
            .unwrap_or_else(|| PermissionSubjects::from_parameters(&self.parameters, None))
    }

    /// Whether `other` calls the same tool with the same parameters.
    pub fn is_same_call(&self, other: &ToolCallRequest) -> bool {
        self.tool_id == other.tool_id && self.parameters == other.parameters
    }
}

/// How far to remember an approval decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RememberScope {
    /// Ask again next time.
    #[default]
    None,
    /// Remember for this conversation.
    Session,
    /// Remember for this tool, across sessions (persisted).
    Tool,
}

impl FromStr for RememberScope {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "none" => Ok(RememberScope::None),
            "session" => Ok(RememberScope::Session),
            "tool" => Ok(RememberScope::Tool),
            other => Err(format!(
                "unknown remember scope '{other}' (expected none, session or tool)"
            )),
        }
    }
}

impl fmt::Display for RememberScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RememberScope::None => "none",
            RememberScope::Session => "session",
            RememberScope::Tool => "tool",
        })
    }
}

/// The user's answer to an approval request (both seeds' fields, merged: `reason` serves
/// as the denial reason, `remember_for_session` as "remember choice").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    /// Whether the call may run.
    pub approved: bool,
    /// Why it was denied.
    #[serde(default)]
    pub reason: Option<String>,
    /// Parameters the user edited; they replace the model's.
    #[serde(default)]
    pub modified_parameters: Option<Value>,
    /// Remember for this conversation.
    #[serde(default)]
    pub remember_for_session: bool,
    /// Remember for this tool, persistently.
    #[serde(default)]
    pub remember_for_tool: bool,
    /// Remember only for main arguments matching this glob.
    #[serde(default)]
    pub remember_pattern: Option<String>,
    /// When the decision was made.
    pub decided_at: DateTime<Utc>,
    /// How long the user took.
    #[serde(rename = "decision_duration_ms", with = "duration_ms", default)]
    pub decision_duration: Duration,
}

impl ApprovalDecision {
    /// Approve, remembering nothing.
    pub fn approve() -> Self {
        ApprovalDecision {
            approved: true,
            reason: None,
            modified_parameters: None,
            remember_for_session: false,
            remember_for_tool: false,
            remember_pattern: None,
            decided_at: Utc::now(),
            decision_duration: Duration::ZERO,
        }
    }

    /// Deny, with an optional reason.
    pub fn deny(reason: Option<String>) -> Self {
        ApprovalDecision {
            approved: false,
            reason,
            ..Self::approve()
        }
    }

    /// Remember the decision as far as `scope` says.
    pub fn remember(mut self, scope: RememberScope) -> Self {
        self.remember_for_session = scope == RememberScope::Session;
        self.remember_for_tool = scope == RememberScope::Tool;
        self
    }

    /// Use these parameters instead of the model's.
    pub fn with_modified_parameters(mut self, parameters: Value) -> Self {
        self.modified_parameters = Some(parameters);
        self
    }

    /// Remember only for main arguments matching `pattern`.
    pub fn with_pattern(mut self, pattern: impl Into<String>) -> Self {
        self.remember_pattern = Some(pattern.into());
        self
    }

    /// Record how long the user took.
    pub fn with_decision_duration(mut self, duration: Duration) -> Self {
        self.decision_duration = duration;
        self
    }

    /// How far the decision is to be remembered (tool wins over session).
    pub fn remember_scope(&self) -> RememberScope {
        if self.remember_for_tool {
            RememberScope::Tool
        } else if self.remember_for_session {
            RememberScope::Session
        } else {
            RememberScope::None
        }
    }
}

/// Where a tool call is in its life (seed 001 part f, 11 statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Parsed from the output.
    Parsed,
    /// Parameters being validated.
    Validating,
    /// Parameters rejected.
    ValidationFailed,
    /// Waiting for the user.
    AwaitingApproval,
    /// Approved.
    Approved,
    /// Denied.
    Denied,
    /// Running.
    Executing,
    /// Ran and succeeded.
    Completed,
    /// Ran and failed.
    Failed,
    /// Cancelled before or while running.
    Cancelled,
    /// Ran out of time.
    TimedOut,
}

impl ToolCallStatus {
    /// Every status, in the seed's order.
    pub const ALL: [ToolCallStatus; 11] = [
        ToolCallStatus::Parsed,
        ToolCallStatus::Validating,
        ToolCallStatus::ValidationFailed,
        ToolCallStatus::AwaitingApproval,
        ToolCallStatus::Approved,
        ToolCallStatus::Denied,
        ToolCallStatus::Executing,
        ToolCallStatus::Completed,
        ToolCallStatus::Failed,
        ToolCallStatus::Cancelled,
        ToolCallStatus::TimedOut,
    ];

    /// Whether nothing more will happen to the call.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ToolCallStatus::ValidationFailed
                | ToolCallStatus::Denied
                | ToolCallStatus::Completed
                | ToolCallStatus::Failed
                | ToolCallStatus::Cancelled
                | ToolCallStatus::TimedOut
        )
    }
}

/// A tool call from request to result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallLifecycle {
    /// The call.
    pub request: ToolCallRequest,
    /// Where it is now.
    pub status: ToolCallStatus,
    /// The user's decision, when one was needed.
    #[serde(default)]
    pub approval_decision: Option<ApprovalDecision>,
    /// The result, once run.
    #[serde(default)]
    pub result: Option<ToolResult>,
    /// When it started running.
    #[serde(default)]
    pub execution_started: Option<DateTime<Utc>>,
    /// When it stopped running.
    #[serde(default)]
    pub execution_completed: Option<DateTime<Utc>>,
    /// Why it failed.
    #[serde(default)]
    pub error_message: Option<String>,
}

impl ToolCallLifecycle {
    /// A freshly parsed call.
    pub fn new(request: ToolCallRequest) -> Self {
        ToolCallLifecycle {
            request,
            status: ToolCallStatus::Parsed,
            approval_decision: None,
            result: None,
            execution_started: None,
            execution_completed: None,
            error_message: None,
        }
    }

    /// Running time, once both ends are known.
    pub fn duration(&self) -> Option<Duration> {
        match (self.execution_started, self.execution_completed) {
            (Some(start), Some(end)) => Some((end - start).to_std().unwrap_or(Duration::ZERO)),
            _ => None,
        }
    }
}
