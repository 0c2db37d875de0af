//! The tool framework's data: risk, categories, definitions, results, validation,
//! progress and the execution context handed to a running tool.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How risky one tool invocation is. Ordered: `Safe < Low < Medium < High < Critical`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    /// Reads only; never needs approval.
    Safe,
    /// Minor, easily undone effects.
    Low,
    /// Changes that can be undone with some effort. The default for unknown tools.
    #[default]
    Medium,
    /// Changes that are hard to undo.
    High,
    /// Destructive or security-relevant.
    Critical,
}

impl RiskLevel {
    /// Every level, from safest to riskiest.
    pub const ALL: [RiskLevel; 5] = [
        RiskLevel::Safe,
        RiskLevel::Low,
        RiskLevel::Medium,
        RiskLevel::High,
        RiskLevel::Critical,
    ];

    /// The snake_case name (`"medium"`).
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Safe => "safe",
            RiskLevel::Low => "low",
            RiskLevel::Medium => "medium",
            RiskLevel::High => "high",
            RiskLevel::Critical => "critical",
        }
    }
}

impl fmt::Display for RiskLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RiskLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RiskLevel::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!("unknown risk level '{s}' (expected safe, low, medium, high or critical)")
            })
    }
}

/// What kind of thing a tool does; [`crate::ToolAvailabilityContext`] filters on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCategory {
    /// Reads or writes files.
    FileSystem,
    /// Searches files or text.
    Search,
    /// Runs shell commands (switched off by `allow_terminal_tools = false`).
    Terminal,
    /// Talks to the network (switched off by `allow_network_tools = false`).
    Network,
    /// Inspects or changes version control.
    VersionControl,
    /// Analyses or transforms code.
    Code,
    /// Anything else.
    Custom,
}

/// Describes a tool to the model and to the agent: identity, schema and risk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Stable id the model uses to call the tool (`"read_file"`).
    pub id: String,
    /// Human-readable name (`"Read File"`).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// What kind of tool it is (`custom` when not given).
    #[serde(default = "custom_category")]
    pub category: ToolCategory,
    /// Risk when nothing about the parameters makes it riskier or safer (also read as
    /// `risk_level`).
    #[serde(default, alias = "risk_level")]
    pub default_risk_level: RiskLevel,
    /// JSON Schema of the parameters object (also read as `schema` or `parameters`).
    #[serde(
        default = "empty_object_schema",
        alias = "schema",
        alias = "parameters"
    )]
    pub input_schema: Value,
    /// Free-form tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Whether the tool needs an open workspace.
    #[serde(default)]
    pub requires_workspace: bool,
    /// Whether the tool writes files (switched off by `allow_file_writes = false`).
    #[serde(default)]
    pub modifies_files: bool,
    /// Requests this tool answers, each with the arguments of its call: shown to small
    /// models (the compact tool prompt), which follow an example far better than a
    /// description.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<ToolExample>,
    /// Optional parameters that only tune a call (a line range, a depth, a result limit):
    /// left out of the schema a model is shown under the lean tool prompt, since small
    /// models fill in every parameter they see, with values they make up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detail_parameters: Vec<String>,
}

/// A request and the call that answers it (see [`ToolDefinition::examples`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExample {
    /// What a user might ask.
    pub request: String,
    /// The call's arguments.
    pub arguments: Value,
}

fn custom_category() -> ToolCategory {
    ToolCategory::Custom
}

fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object", "properties": {} })
}

impl ToolDefinition {
    /// A definition with an empty object schema, `Custom` category and `Medium` risk.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        ToolDefinition {
            id: id.into(),
            name: name.into(),
            description: description.into(),
            category: ToolCategory::Custom,
            default_risk_level: RiskLevel::Medium,
            input_schema: empty_object_schema(),
            tags: Vec::new(),
            requires_workspace: false,
            modifies_files: false,
            examples: Vec::new(),
            detail_parameters: Vec::new(),
        }
    }

    /// Mark optional parameters as details (see [`ToolDefinition::detail_parameters`]).
    pub fn with_details<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.detail_parameters
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Add an example: a request this tool answers, and the call's arguments.
    pub fn with_example(mut self, request: impl Into<String>, arguments: Value) -> Self {
        self.examples.push(ToolExample {
            request: request.into(),
            arguments,
        });
        self
    }

    /// Set the category.
    pub fn with_category(mut self, category: ToolCategory) -> Self {
        self.category = category;
        self
    }

    /// Set the default risk.
    pub fn with_risk(mut self, risk: RiskLevel) -> Self {
        self.default_risk_level = risk;
        self
    }

    /// Set the parameters' JSON Schema.
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// Mark the tool as needing a workspace.
    pub fn requiring_workspace(mut self) -> Self {
        self.requires_workspace = true;
        self
    }

    /// Mark the tool as writing files.
    pub fn modifying_files(mut self) -> Self {
        self.modifies_files = true;
        self
    }
}

/// What a tool run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Whether the tool did what was asked.
    pub success: bool,
    /// Text output for the model and the user.
    #[serde(default)]
    pub content: String,
    /// Why it failed, when it failed.
    #[serde(default)]
    pub error_message: Option<String>,
    /// Structured output, when the tool has any.
    #[serde(default)]
    pub data: Option<Value>,
    /// The call never ran because it was not approved: a person said no, nobody answered
    /// in time, or the permission settings refuse it. Always with `success == false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
}

impl ToolResult {
    /// A successful result with text output.
    pub fn success(content: impl Into<String>) -> Self {
        ToolResult {
            success: true,
            content: content.into(),
            error_message: None,
            data: None,
            denied: false,
        }
    }

    /// A successful result with text output and structured data.
    pub fn success_with_data(content: impl Into<String>, data: Value) -> Self {
        ToolResult {
            data: Some(data),
            ..ToolResult::success(content)
        }
    }

    /// A failed result.
    pub fn failed(error_message: impl Into<String>) -> Self {
        ToolResult {
            success: false,
            content: String::new(),
            error_message: Some(error_message.into()),
            data: None,
            denied: false,
        }
    }

    /// A call that was not approved, and so never ran: `why` says who refused it.
    pub fn denied(why: impl Into<String>) -> Self {
        ToolResult {
            denied: true,
            ..ToolResult::failed(why)
        }
    }

    /// How the call ended, in one word: "succeeded", "denied" or "failed".
    pub fn outcome(&self) -> &'static str {
        if self.success {
            "succeeded"
        } else if self.denied {
            "denied"
        } else {
            "failed"
        }
    }

    /// The structured data as JSON text when there is any, else the text content; `None`
    /// when both are empty.
    pub fn serialized_data(&self) -> Option<String> {
        match &self.data {
            Some(data) => Some(data.to_string()),
            None if !self.content.is_empty() => Some(self.content.clone()),
            None => self.error_message.clone(),
        }
    }
}

/// The outcome of checking a call's parameters before it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolValidationResult {
    /// Whether the parameters are acceptable.
    pub is_valid: bool,
    /// Every problem found.
    #[serde(default)]
    pub errors: Vec<String>,
    /// Problems that do not stop the call.
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl ToolValidationResult {
    /// Parameters are fine.
    pub fn valid() -> Self {
        ToolValidationResult {
            is_valid: true,
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Parameters are not acceptable, for these reasons.
    pub fn invalid<I, S>(errors: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ToolValidationResult {
            is_valid: false,
            errors: errors.into_iter().map(Into::into).collect(),
            warnings: Vec::new(),
        }
    }

    /// Add a warning.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
}

/// Progress of a long-running tool (seed 002 §5).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolProgress {
    /// Work done so far.
    pub current: u64,
    /// Work expected in all; 0 when unknown.
    pub total: u64,
    /// What the tool is doing now.
    #[serde(default)]
    pub message: Option<String>,
}

impl ToolProgress {
    /// Progress with a known total.
    pub fn determinate(current: u64, total: u64, message: Option<String>) -> Self {
        ToolProgress {
            current,
            total,
            message,
        }
    }

    /// Progress with no known total.
    pub fn indeterminate(message: Option<String>) -> Self {
        ToolProgress {
            current: 0,
            total: 0,
            message,
        }
    }

    /// Percentage done, 0–100 (0 when the total is unknown). Overshoot is capped at 100.
    pub fn percentage(&self) -> u8 {
        if self.total == 0 {
            return 0;
        }
        let pct = u128::from(self.current) * 100 / u128::from(self.total);
        u8::try_from(pct.min(100)).unwrap_or(100)
    }

    /// Whether the total is unknown.
    pub fn is_indeterminate(&self) -> bool {
        self.total == 0
    }
}

/// Where a running tool reports its progress. Cloning gives another handle to the same
/// listener; a detached reporter drops reports.
#[derive(Debug, Clone, Default)]
pub struct ProgressReporter {
    sender: Option<mpsc::UnboundedSender<ToolProgress>>,
}

impl ProgressReporter {
    /// A reporter and the receiving end that sees its reports.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<ToolProgress>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ProgressReporter { sender: Some(tx) }, rx)
    }

    /// A reporter nobody listens to.
    pub fn detached() -> Self {
        ProgressReporter { sender: None }
    }

    /// Report progress. Never blocks; reports are dropped when nobody listens.
    pub fn report(&self, progress: ToolProgress) {
        if let Some(tx) = &self.sender {
            // A closed receiver only means nobody is interested any more.
            let _ = tx.send(progress);
        }
    }
}

/// Everything a tool gets when it runs.
#[derive(Debug, Clone)]
pub struct ToolExecutionContext {
    /// The id of the call (`ToolCallRequest::id`).
    pub call_id: Uuid,
    /// The request the call belongs to.
    pub request_id: Uuid,
    /// The conversation (session) the call belongs to.
    pub session_id: Uuid,
    /// The workspace the tool works in, when there is one.
    pub workspace_path: Option<PathBuf>,
    /// The call's parameters (after any change the user made when approving), shared with
    /// the call ([`crate::ToolCallRequest::parameters`]); read them through `Deref`.
    pub parameters: Arc<Value>,
    /// Cancelled when the request is cancelled or the tool's time is up. Tools must stop
    /// promptly (and kill what they started) once it fires.
    pub cancellation: CancellationToken,
    /// Whether a person (or a remembered decision) approved this call.
    pub is_approved: bool,
    /// Where to report progress.
    pub progress: ProgressReporter,
}

impl ToolExecutionContext {
    /// A context for `parameters` with fresh ids, no workspace, a fresh token and no
    /// progress listener.
    pub fn new(parameters: Value) -> Self {
        ToolExecutionContext {
            call_id: Uuid::new_v4(),
            request_id: Uuid::nil(),
            session_id: Uuid::nil(),
            workspace_path: None,
            parameters: Arc::new(parameters),
            cancellation: CancellationToken::new(),
            is_approved: false,
            progress: ProgressReporter::detached(),
        }
    }
}

/// What the agent must know about one call before it may run, as the tool judges it with
/// the workspace at hand (see [`crate::Tool::assess`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallAssessment {
    /// The call's risk.
    pub risk: RiskLevel,
    /// What permission patterns are matched against.
    pub subjects: crate::PermissionSubjects,
    /// The sandbox the call's process would run under, for the approval prompt; `None`
    /// when the tool starts no process.
    pub sandbox: Option<crate::SandboxSummary>,
    /// Why a person must be asked about this very call, whatever its risk and whatever was
    /// remembered or saved (for example: the kernel cannot sandbox commands here, or the call
    /// asks for the network). Deny rules still refuse it first.
    pub must_ask: Option<String>,
    /// Why the call is rated as it is, in words ("writes to a file (redirection)",
    /// "unknown program 'python3'"), shown with the approval request.
    pub reasons: Vec<String>,
}

impl CallAssessment {
    /// An assessment with `risk` and `subjects`, no sandbox and no forced question.
    pub fn new(risk: RiskLevel, subjects: crate::PermissionSubjects) -> Self {
        CallAssessment {
            risk,
            subjects,
            sandbox: None,
            must_ask: None,
            reasons: Vec::new(),
        }
    }

    /// Set the reasons for the rating.
    pub fn with_reasons(mut self, reasons: Vec<String>) -> Self {
        self.reasons = reasons;
        self
    }

    /// Set the sandbox.
    pub fn with_sandbox(mut self, sandbox: crate::SandboxSummary) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Ask a person, for this reason, whatever the risk.
    pub fn asking(mut self, reason: impl Into<String>) -> Self {
        self.must_ask = Some(reason.into());
        self
    }
}

/// The values a tool's arguments may take, argument name → values
/// (see [`crate::Tool::argument_choices`]).
pub type ArgumentChoices = std::collections::BTreeMap<String, Vec<String>>;

/// What a call that changes a file would change, judged before it runs so that a person
/// approves a diff, not a blob of JSON (see [`crate::Tool::preview_change`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The file, as the call names it (relative to the workspace).
    pub path: String,
    /// Whether the file exists now: the call replaces or edits it rather than creating it.
    pub exists: bool,
    /// A unified diff from the file as it is to the file as the call leaves it; empty when
    /// no diff could be made (see `note`).
    pub diff: String,
    /// Lines the call adds.
    pub lines_added: u32,
    /// Lines the call removes.
    pub lines_removed: u32,
    /// Why the diff is missing or partial ("binary file", "cut at 2000 lines"), if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
