//! Agent events (seed 001 part e, seed 002): what the agent tells the outside world while
//! it works.
//!
//! [`AgentEvent`] is one closed enum, serialized with a `"type"` tag equal to seed 002's
//! event-type string (`"text_generation"`, `"tool_call_request"`, …). Each variant wraps
//! its own struct, and each struct flattens the shared [`EventHeader`].

use crate::error::{BoxError, Error};
use crate::serde_util::{duration_ms, option_duration_ms, truncate_chars};
use crate::state::{
    AgentState, AgentStateChange, AgentStateTransition, MachineKind, TurnState, TurnStateChange,
};
use crate::tool::{RiskLevel, ToolProgress, ToolResult};
use crate::tool_call::{ApprovalDecision, RememberScope, ToolCallRequest};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use uuid::Uuid;

/// The fields every event has (seed 002's `AgentEvent` base class).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventHeader {
    /// Unique id of this event.
    pub event_id: Uuid,
    /// When the event was created.
    pub timestamp: DateTime<Utc>,
    /// The request the event belongs to.
    pub request_id: Uuid,
    /// The loop iteration (1-based; 0 before the first generation).
    pub iteration_number: u32,
}

impl EventHeader {
    /// A header with a fresh id, stamped now.
    pub fn new(request_id: Uuid, iteration_number: u32) -> Self {
        EventHeader {
            event_id: Uuid::new_v4(),
            timestamp: Utc::now(),
            request_id,
            iteration_number,
        }
    }
}

/// Every event the agent emits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A piece of generated text (`"text_generation"`).
    TextGeneration(TextGenerationEvent),
    /// The model asked for a tool (`"tool_call_request"`).
    ToolCallRequest(ToolCallRequestEvent),
    /// A call needs a person's approval (`"approval_request"`).
    ApprovalRequest(ApprovalRequestEvent),
    /// A tool's execution status changed (`"tool_execution"`).
    ToolExecution(ToolExecutionEvent),
    /// A tool finished (`"tool_result"`).
    ToolResult(ToolResultEvent),
    /// A loop iteration starts (`"agent_iteration"`).
    AgentIteration(AgentIterationEvent),
    /// Something went wrong (`"agent_error"`).
    AgentError(AgentErrorEvent),
    /// The request is over (`"agent_complete"`).
    AgentComplete(AgentCompleteEvent),
    /// One of the two state machines changed state (`"state_changed"`).
    StateChanged(StateChangedEvent),
    /// New git commits appeared in the workspace while a tool ran (`"git_commits_detected"`).
    GitCommitsDetected(GitCommitsDetectedEvent),
    /// Autoformatters ran on changed files (`"autoformat"`).
    Autoformat(AutoformatEvent),
}

/// Implemented by each event struct: the link between it and its [`AgentEvent`] variant.
/// Lets a subscriber ask for one kind of event with a handler typed for that kind.
pub trait EventKind: Clone + Send + Sync + 'static {
    /// The `"type"` string of this kind.
    const EVENT_TYPE: &'static str;
    /// The event as this kind, when it is one.
    fn from_event(event: &AgentEvent) -> Option<&Self>;
    /// Wrap in the enum.
    fn into_event(self) -> AgentEvent;
}

macro_rules! event_kinds {
    ($($variant:ident($ty:ident) = $name:literal),* $(,)?) => {
        $(
            impl EventKind for $ty {
                const EVENT_TYPE: &'static str = $name;

                fn from_event(event: &AgentEvent) -> Option<&Self> {
                    match event {
                        AgentEvent::$variant(e) => Some(e),
                        _ => None,
                    }
                }

                fn into_event(self) -> AgentEvent {
                    AgentEvent::$variant(self)
                }
            }

            impl From<$ty> for AgentEvent {
                fn from(e: $ty) -> Self {
                    AgentEvent::$variant(e)
                }
            }
        )*

        impl AgentEvent {
            /// Every `"type"` string, in declaration order.
            pub const EVENT_TYPES: &'static [&'static str] = &[$($name),*];

            /// The `"type"` string (`"tool_result"`).
            pub fn event_type(&self) -> &'static str {
                match self {
                    $(AgentEvent::$variant(_) => $name,)*
                }
            }

            /// The shared header.
            pub fn header(&self) -> &EventHeader {
                match self {
                    $(AgentEvent::$variant(e) => &e.header,)*
                }
            }

            /// A one-line description for logs (seed 002's `GetSummary`).
            pub fn summary(&self) -> String {
                match self {
                    $(AgentEvent::$variant(e) => e.summary(),)*
                }
            }
        }
    };
}

event_kinds! {
    TextGeneration(TextGenerationEvent) = "text_generation",
    ToolCallRequest(ToolCallRequestEvent) = "tool_call_request",
    ApprovalRequest(ApprovalRequestEvent) = "approval_request",
    ToolExecution(ToolExecutionEvent) = "tool_execution",
    ToolResult(ToolResultEvent) = "tool_result",
    AgentIteration(AgentIterationEvent) = "agent_iteration",
    AgentError(AgentErrorEvent) = "agent_error",
    AgentComplete(AgentCompleteEvent) = "agent_complete",
    StateChanged(StateChangedEvent) = "state_changed",
    GitCommitsDetected(GitCommitsDetectedEvent) = "git_commits_detected",
    Autoformat(AutoformatEvent) = "autoformat",
}

impl AgentEvent {
    /// The request the event belongs to.
    pub fn request_id(&self) -> Uuid {
        self.header().request_id
    }

    /// The iteration the event belongs to.
    pub fn iteration_number(&self) -> u32 {
        self.header().iteration_number
    }

    /// Whether the event ends the request: completion, or a fatal error.
    pub fn is_terminal(&self) -> bool {
        match self {
            AgentEvent::AgentComplete(_) => true,
            AgentEvent::AgentError(e) => e.is_fatal,
            _ => false,
        }
    }

    /// Whether a person must answer the event (an approval request).
    pub fn requires_user_input(&self) -> bool {
        matches!(self, AgentEvent::ApprovalRequest(_))
    }

    /// Time since the event was created (zero if its timestamp lies in the future).
    pub fn age(&self) -> Duration {
        (Utc::now() - self.header().timestamp)
            .to_std()
            .unwrap_or(Duration::ZERO)
    }
}

// ---------------------------------------------------------------------------------------
// text_generation
// ---------------------------------------------------------------------------------------

/// A piece of text from the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextGenerationEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The text (empty on the completion event).
    pub token: String,
    /// Whether the generation ended.
    #[serde(default)]
    pub is_complete: bool,
    /// Tokens generated so far in this request.
    #[serde(default)]
    pub token_count: u32,
    /// Whether this is reasoning rather than the answer.
    #[serde(default)]
    pub is_thinking: bool,
    /// The model that produced it.
    #[serde(default)]
    pub source: Option<String>,
    /// Position within the current stream.
    #[serde(default)]
    pub sequence_index: u32,
}

impl TextGenerationEvent {
    /// A piece of text.
    pub fn token(
        request_id: Uuid,
        token: impl Into<String>,
        token_count: u32,
        is_thinking: bool,
        iteration: u32,
    ) -> Self {
        TextGenerationEvent {
            header: EventHeader::new(request_id, iteration),
            token: token.into(),
            is_complete: false,
            token_count,
            is_thinking,
            source: None,
            sequence_index: 0,
        }
    }

    /// The end of a generation.
    pub fn complete(request_id: Uuid, total_tokens: u32, iteration: u32) -> Self {
        TextGenerationEvent {
            is_complete: true,
            ..Self::token(request_id, "", total_tokens, false, iteration)
        }
    }

    /// Set the position within the stream.
    pub fn with_sequence_index(mut self, index: u32) -> Self {
        self.sequence_index = index;
        self
    }

    /// Set the model name.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        if self.is_complete {
            format!("Generation complete ({} tokens)", self.token_count)
        } else {
            format!(
                "Token: \"{}\" (thinking: {})",
                truncate_chars(&self.token, 20),
                self.is_thinking
            )
        }
    }
}

// ---------------------------------------------------------------------------------------
// tool_call_request
// ---------------------------------------------------------------------------------------

/// The model asked for a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequestEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The parsed call.
    pub request: ToolCallRequest,
    /// Position of the call in this iteration (0-based).
    pub call_index: u32,
    /// Calls detected in this iteration.
    pub total_calls: u32,
}

impl ToolCallRequestEvent {
    /// A tool call request event.
    pub fn create(
        request_id: Uuid,
        request: ToolCallRequest,
        call_index: u32,
        total_calls: u32,
        iteration: u32,
    ) -> Self {
        ToolCallRequestEvent {
            header: EventHeader::new(request_id, iteration),
            request,
            call_index,
            total_calls,
        }
    }

    /// Whether this is the only call of the iteration.
    pub fn is_single_call(&self) -> bool {
        self.total_calls == 1
    }

    /// Whether this is the last call of the iteration.
    pub fn is_last_call(&self) -> bool {
        self.call_index + 1 == self.total_calls
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Tool call: {} ({}/{})",
            self.request.tool_name,
            self.call_index + 1,
            self.total_calls
        )
    }
}

// ---------------------------------------------------------------------------------------
// approval_request
// ---------------------------------------------------------------------------------------

/// What the agent receives for an approval request.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalAnswer {
    /// A person decided.
    Decided(ApprovalDecision),
    /// The approval was cancelled (the request is being cancelled).
    Cancelled,
}

/// The receiving end of an approval request, held by the agent. It resolves to the
/// answer, or to an error when every handle to the request was dropped unanswered.
pub type ApprovalReceiver = oneshot::Receiver<ApprovalAnswer>;

#[derive(Debug, Default)]
enum ResponderSlot {
    /// Not connected to a running agent (for example, deserialized).
    #[default]
    Detached,
    /// Waiting for the answer.
    Waiting(oneshot::Sender<ApprovalAnswer>),
    /// Answered already.
    Answered,
}

/// The answering end of an approval request. Clones share one answer: the first answer
/// wins, later ones get [`Error::ApprovalAlreadyAnswered`]. It is never serialized.
#[derive(Clone, Default)]
pub struct ApprovalResponder {
    slot: Arc<Mutex<ResponderSlot>>,
}

impl fmt::Debug for ApprovalResponder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalResponder")
            .field("waiting", &self.is_waiting())
            .finish()
    }
}

impl ApprovalResponder {
    /// A responder and the receiver that gets its answer.
    pub fn channel() -> (Self, ApprovalReceiver) {
        let (tx, rx) = oneshot::channel();
        (
            ApprovalResponder {
                slot: Arc::new(Mutex::new(ResponderSlot::Waiting(tx))),
            },
            rx,
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ResponderSlot> {
        // The slot holds no invariant a panicking holder could break half-way.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether an answer is still awaited by a live receiver.
    pub fn is_waiting(&self) -> bool {
        matches!(&*self.lock(), ResponderSlot::Waiting(tx) if !tx.is_closed())
    }

    /// Send the answer.
    ///
    /// # Errors
    /// [`Error::ApprovalAlreadyAnswered`] when answered before; [`Error::ApprovalClosed`]
    /// when nobody waits (detached, or the agent stopped waiting).
    pub fn respond(&self, answer: ApprovalAnswer) -> Result<(), Error> {
        let mut slot = self.lock();
        match std::mem::replace(&mut *slot, ResponderSlot::Answered) {
            ResponderSlot::Waiting(tx) => tx.send(answer).map_err(|_| Error::ApprovalClosed),
            ResponderSlot::Answered => Err(Error::ApprovalAlreadyAnswered),
            ResponderSlot::Detached => {
                *slot = ResponderSlot::Detached;
                Err(Error::ApprovalClosed)
            }
        }
    }
}

/// A tool call needs a person's approval. Answer it with [`ApprovalRequestEvent::approve`],
/// [`ApprovalRequestEvent::approve_with`], [`ApprovalRequestEvent::deny`] or
/// [`ApprovalRequestEvent::cancel`] (or through `AgentService::provide_approval`).
/// A request not answered within [`ApprovalRequestEvent::timeout`] counts as denied.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalRequestEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The call waiting for approval.
    pub request: ToolCallRequest,
    /// What the call will do, in words.
    pub summary: String,
    /// Risk of this invocation.
    pub risk_level: RiskLevel,
    /// Details to review ("File: src/main.rs", "Command: rm -rf build").
    #[serde(default)]
    pub details: Vec<String>,
    /// Warnings ("This will delete files permanently").
    #[serde(default)]
    pub warnings: Vec<String>,
    /// How long the agent waits before treating silence as denial.
    #[serde(rename = "timeout_ms", with = "duration_ms")]
    pub timeout: Duration,
    /// The sandbox the call's process will run under, when it starts one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::SandboxSummary>,
    /// Why the call is put to a person even though its risk alone would not need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_ask: Option<String>,
    /// Where the answer goes; not serialized.
    #[serde(skip)]
    pub responder: ApprovalResponder,
}

impl ApprovalRequestEvent {
    /// An approval request for `call` and the receiver that will get the answer. Summary
    /// and risk come from the call.
    pub fn create(
        request_id: Uuid,
        call: ToolCallRequest,
        timeout: Duration,
        iteration: u32,
    ) -> (Self, ApprovalReceiver) {
        let (responder, receiver) = ApprovalResponder::channel();
        let event = ApprovalRequestEvent {
            header: EventHeader::new(request_id, iteration),
            summary: call.execution_summary.clone(),
            risk_level: call.risk_level,
            request: call,
            details: Vec::new(),
            warnings: Vec::new(),
            timeout,
            sandbox: None,
            must_ask: None,
            responder,
        };
        (event, receiver)
    }

    /// Set the details.
    pub fn with_details(mut self, details: Vec<String>) -> Self {
        self.details = details;
        self
    }

    /// Set the warnings.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }

    /// Set the sandbox the call will run under.
    pub fn with_sandbox(mut self, sandbox: Option<crate::SandboxSummary>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Say why a person is asked whatever the risk.
    pub fn with_must_ask(mut self, reason: Option<String>) -> Self {
        self.must_ask = reason;
        self
    }

    /// When the request expires.
    pub fn expires_at(&self) -> DateTime<Utc> {
        let timeout = chrono::Duration::from_std(self.timeout).unwrap_or(chrono::Duration::MAX);
        self.header
            .timestamp
            .checked_add_signed(timeout)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// Whether the request has expired.
    pub fn is_expired(&self) -> bool {
        Utc::now() > self.expires_at()
    }

    /// Time left before it expires (zero once expired).
    pub fn time_remaining(&self) -> Duration {
        (self.expires_at() - Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO)
    }

    /// Approve, remembering nothing.
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn approve(&self) -> Result<(), Error> {
        self.approve_with(RememberScope::None, None)
    }

    /// Approve, remembering as far as `remember` says, with parameters the user edited.
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn approve_with(
        &self,
        remember: RememberScope,
        modified_parameters: Option<Value>,
    ) -> Result<(), Error> {
        let mut decision = ApprovalDecision::approve()
            .remember(remember)
            .with_decision_duration(self.elapsed());
        decision.modified_parameters = modified_parameters;
        self.decide(decision)
    }

    /// Deny, with an optional reason.
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn deny(&self, reason: Option<String>) -> Result<(), Error> {
        self.decide(ApprovalDecision::deny(reason).with_decision_duration(self.elapsed()))
    }

    /// Answer with a prepared decision.
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn decide(&self, decision: ApprovalDecision) -> Result<(), Error> {
        self.responder.respond(ApprovalAnswer::Decided(decision))
    }

    /// Withdraw the request (the agent is being cancelled).
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn cancel(&self) -> Result<(), Error> {
        self.responder.respond(ApprovalAnswer::Cancelled)
    }

    fn elapsed(&self) -> Duration {
        (Utc::now() - self.header.timestamp)
            .to_std()
            .unwrap_or(Duration::ZERO)
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Approval needed: {} ({})",
            self.request.tool_name, self.risk_level
        )
    }
}

// ---------------------------------------------------------------------------------------
// tool_execution
// ---------------------------------------------------------------------------------------

/// Where a tool's execution stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolExecutionStatus {
    /// About to run.
    Starting,
    /// Running (with progress).
    InProgress,
    /// Finished successfully.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Cancelled.
    Cancelled,
    /// Ran out of time.
    TimedOut,
}

impl fmt::Display for ToolExecutionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolExecutionStatus::Starting => "Starting",
            ToolExecutionStatus::InProgress => "InProgress",
            ToolExecutionStatus::Completed => "Completed",
            ToolExecutionStatus::Failed => "Failed",
            ToolExecutionStatus::Cancelled => "Cancelled",
            ToolExecutionStatus::TimedOut => "TimedOut",
        })
    }
}

/// A tool's execution status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExecutionEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The call being executed.
    pub call_id: Uuid,
    /// The tool's id.
    pub tool_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The new status.
    pub status: ToolExecutionStatus,
    /// Progress, when the tool reports it.
    #[serde(default)]
    pub progress: Option<ToolProgress>,
    /// A message for display (the error when failed).
    #[serde(default)]
    pub status_message: Option<String>,
    /// Time since execution started.
    #[serde(rename = "elapsed_ms", with = "option_duration_ms", default)]
    pub elapsed: Option<Duration>,
}

impl ToolExecutionEvent {
    fn with_status(
        request_id: Uuid,
        call: &ToolCallRequest,
        status: ToolExecutionStatus,
        elapsed: Option<Duration>,
        iteration: u32,
    ) -> Self {
        ToolExecutionEvent {
            header: EventHeader::new(request_id, iteration),
            call_id: call.id,
            tool_id: call.tool_id.clone(),
            tool_name: call.tool_name.clone(),
            status,
            progress: None,
            status_message: None,
            elapsed,
        }
    }

    /// The tool is about to run.
    pub fn starting(request_id: Uuid, call: &ToolCallRequest, iteration: u32) -> Self {
        Self::with_status(
            request_id,
            call,
            ToolExecutionStatus::Starting,
            None,
            iteration,
        )
    }

    /// The tool reported progress.
    pub fn in_progress(
        request_id: Uuid,
        call: &ToolCallRequest,
        progress: ToolProgress,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        ToolExecutionEvent {
            progress: Some(progress),
            ..Self::with_status(
                request_id,
                call,
                ToolExecutionStatus::InProgress,
                Some(elapsed),
                iteration,
            )
        }
    }

    /// The tool finished successfully.
    pub fn completed(
        request_id: Uuid,
        call: &ToolCallRequest,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        Self::with_status(
            request_id,
            call,
            ToolExecutionStatus::Completed,
            Some(elapsed),
            iteration,
        )
    }

    /// The tool failed.
    pub fn failed(
        request_id: Uuid,
        call: &ToolCallRequest,
        error_message: impl Into<String>,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        ToolExecutionEvent {
            status_message: Some(error_message.into()),
            ..Self::with_status(
                request_id,
                call,
                ToolExecutionStatus::Failed,
                Some(elapsed),
                iteration,
            )
        }
    }

    /// The tool was cancelled.
    pub fn cancelled(
        request_id: Uuid,
        call: &ToolCallRequest,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        Self::with_status(
            request_id,
            call,
            ToolExecutionStatus::Cancelled,
            Some(elapsed),
            iteration,
        )
    }

    /// The tool ran out of time.
    pub fn timed_out(
        request_id: Uuid,
        call: &ToolCallRequest,
        elapsed: Duration,
        iteration: u32,
    ) -> Self {
        Self::with_status(
            request_id,
            call,
            ToolExecutionStatus::TimedOut,
            Some(elapsed),
            iteration,
        )
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        match &self.progress {
            Some(p) => format!(
                "Tool {}: {} ({}%)",
                self.tool_name,
                self.status,
                p.percentage()
            ),
            None => format!("Tool {}: {}", self.tool_name, self.status),
        }
    }
}

// ---------------------------------------------------------------------------------------
// tool_result
// ---------------------------------------------------------------------------------------

/// A tool finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The call that finished.
    pub call_id: Uuid,
    /// The tool's id.
    pub tool_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What it produced.
    pub result: ToolResult,
    /// How long it took.
    #[serde(rename = "duration_ms", with = "duration_ms")]
    pub duration: Duration,
}

impl ToolResultEvent {
    /// A result event for `call`.
    pub fn create(
        request_id: Uuid,
        call: &ToolCallRequest,
        result: ToolResult,
        duration: Duration,
        iteration: u32,
    ) -> Self {
        ToolResultEvent {
            header: EventHeader::new(request_id, iteration),
            call_id: call.id,
            tool_id: call.tool_id.clone(),
            tool_name: call.tool_name.clone(),
            result,
            duration,
        }
    }

    /// Whether the tool succeeded.
    pub fn success(&self) -> bool {
        self.result.success
    }

    /// The result cut to 500 characters for display, or "(no data)".
    pub fn display_result(&self) -> String {
        self.result
            .serialized_data()
            .map(|s| truncate_chars(&s, 500))
            .unwrap_or_else(|| "(no data)".to_string())
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Tool {} {} ({}ms)",
            self.tool_name,
            if self.success() {
                "succeeded"
            } else {
                "failed"
            },
            self.duration.as_millis()
        )
    }
}

// ---------------------------------------------------------------------------------------
// agent_iteration
// ---------------------------------------------------------------------------------------

/// A loop iteration starts. Its number is the header's `iteration_number` (1-based).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentIterationEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// Most iterations allowed.
    pub max_iterations: u32,
    /// Tool calls executed in the previous iteration.
    pub tool_calls_in_previous_iteration: u32,
    /// Tool calls executed so far.
    pub total_tool_calls_executed: u32,
    /// Time since the request started.
    #[serde(rename = "elapsed_ms", with = "duration_ms")]
    pub elapsed_time: Duration,
}

impl AgentIterationEvent {
    /// An iteration event.
    pub fn create(
        request_id: Uuid,
        iteration: u32,
        max_iterations: u32,
        prev_tool_calls: u32,
        total_tool_calls: u32,
        elapsed: Duration,
    ) -> Self {
        AgentIterationEvent {
            header: EventHeader::new(request_id, iteration),
            max_iterations,
            tool_calls_in_previous_iteration: prev_tool_calls,
            total_tool_calls_executed: total_tool_calls,
            elapsed_time: elapsed,
        }
    }

    /// The iteration's number.
    pub fn iteration_number(&self) -> u32 {
        self.header.iteration_number
    }

    /// Whether this is the last iteration allowed.
    pub fn is_final_iteration(&self) -> bool {
        self.header.iteration_number >= self.max_iterations
    }

    /// Iterations left after this one.
    pub fn remaining_iterations(&self) -> u32 {
        self.max_iterations
            .saturating_sub(self.header.iteration_number)
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "Iteration {}/{}",
            self.header.iteration_number, self.max_iterations
        );
        if self.tool_calls_in_previous_iteration > 0 {
            s.push_str(&format!(
                " (prev tools: {})",
                self.tool_calls_in_previous_iteration
            ));
        }
        s
    }
}

// ---------------------------------------------------------------------------------------
// agent_error
// ---------------------------------------------------------------------------------------

/// What kind of error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentErrorCategory {
    /// The model failed.
    LlmError,
    /// A tool failed.
    ToolError,
    /// The model's output could not be parsed.
    ParsingError,
    /// Permission was refused.
    PermissionError,
    /// Something took too long.
    TimeoutError,
    /// Something was cancelled.
    CancellationError,
    /// Anything else.
    Unknown,
}

impl fmt::Display for AgentErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AgentErrorCategory::LlmError => "LlmError",
            AgentErrorCategory::ToolError => "ToolError",
            AgentErrorCategory::ParsingError => "ParsingError",
            AgentErrorCategory::PermissionError => "PermissionError",
            AgentErrorCategory::TimeoutError => "TimeoutError",
            AgentErrorCategory::CancellationError => "CancellationError",
            AgentErrorCategory::Unknown => "Unknown",
        })
    }
}

/// The error behind an [`AgentErrorEvent`] (seed 002's `Exception`). Serialized as its
/// message chain; a deserialized one carries that text as a plain error.
#[derive(Clone)]
pub struct ErrorSource(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl ErrorSource {
    /// Wrap an error.
    pub fn new(error: impl Into<BoxError>) -> Self {
        ErrorSource(Arc::from(error.into()))
    }

    /// The wrapped error.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The message and every cause, joined with ": ".
    pub fn chain(&self) -> String {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

impl fmt::Debug for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ErrorSource").field(&self.chain()).finish()
    }
}

impl fmt::Display for ErrorSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.chain())
    }
}

impl PartialEq for ErrorSource {
    fn eq(&self, other: &Self) -> bool {
        self.chain() == other.chain()
    }
}

#[derive(Debug)]
struct DeserializedError(String);

impl fmt::Display for DeserializedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeserializedError {}

impl Serialize for ErrorSource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.chain())
    }
}

impl<'de> Deserialize<'de> for ErrorSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ErrorSource(Arc::new(DeserializedError(
            String::deserialize(d)?,
        ))))
    }
}

/// Something went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentErrorEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// What went wrong.
    pub error: String,
    /// Whether the request stops because of it.
    pub is_fatal: bool,
    /// What kind of error.
    pub category: AgentErrorCategory,
    /// The underlying error, when there is one.
    #[serde(default)]
    pub source: Option<ErrorSource>,
    /// What the user might do about it.
    #[serde(default)]
    pub recovery_hint: Option<String>,
    /// A code for programs.
    #[serde(default)]
    pub error_code: Option<String>,
}

impl AgentErrorEvent {
    /// An error of any category.
    pub fn new(
        request_id: Uuid,
        category: AgentErrorCategory,
        error: impl Into<String>,
        is_fatal: bool,
        iteration: u32,
    ) -> Self {
        AgentErrorEvent {
            header: EventHeader::new(request_id, iteration),
            error: error.into(),
            is_fatal,
            category,
            source: None,
            recovery_hint: None,
            error_code: None,
        }
    }

    /// The model failed (fatal).
    pub fn llm_error(
        request_id: Uuid,
        error: impl Into<String>,
        source: Option<BoxError>,
        iteration: u32,
    ) -> Self {
        AgentErrorEvent {
            source: source.map(ErrorSource::new),
            ..Self::new(
                request_id,
                AgentErrorCategory::LlmError,
                error,
                true,
                iteration,
            )
        }
        .with_recovery_hint("Try again or check model connectivity")
    }

    /// A tool failed.
    pub fn tool_error(
        request_id: Uuid,
        tool_name: &str,
        error: &str,
        is_fatal: bool,
        iteration: u32,
    ) -> Self {
        Self::new(
            request_id,
            AgentErrorCategory::ToolError,
            format!("Tool '{tool_name}' failed: {error}"),
            is_fatal,
            iteration,
        )
        .with_recovery_hint("The agent will inform you of the failure and may try alternatives")
    }

    /// The model's output could not be parsed (not fatal).
    pub fn parsing_error(request_id: Uuid, error: impl Into<String>, iteration: u32) -> Self {
        Self::new(
            request_id,
            AgentErrorCategory::ParsingError,
            error,
            false,
            iteration,
        )
        .with_recovery_hint("LLM output could not be parsed, continuing without tool call")
    }

    /// Something took too long (fatal).
    pub fn timeout_error(request_id: Uuid, context: &str, iteration: u32) -> Self {
        Self::new(
            request_id,
            AgentErrorCategory::TimeoutError,
            format!("Timeout: {context}"),
            true,
            iteration,
        )
        .with_recovery_hint("Request took too long, try a simpler task")
    }

    /// Attach the underlying error.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(ErrorSource::new(source));
        self
    }

    /// Set the recovery hint.
    pub fn with_recovery_hint(mut self, hint: impl Into<String>) -> Self {
        self.recovery_hint = Some(hint.into());
        self
    }

    /// Set the error code.
    pub fn with_error_code(mut self, code: impl Into<String>) -> Self {
        self.error_code = Some(code.into());
        self
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Error ({}): {}{}",
            self.category,
            truncate_chars(&self.error, 50),
            if self.is_fatal { " [FATAL]" } else { "" }
        )
    }
}

// ---------------------------------------------------------------------------------------
// agent_complete
// ---------------------------------------------------------------------------------------

/// Why the request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionReason {
    /// The model answered without asking for more tools.
    #[default]
    Finished,
    /// The iteration limit was reached.
    MaxIterations,
    /// The user cancelled.
    Cancelled,
    /// An error stopped it.
    Error,
    /// The request timed out.
    Timeout,
    /// A budget limit (tokens, time, cost) was reached.
    BudgetExceeded,
}

/// How one tool was used during a request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolUsageSummary {
    /// The tool's id.
    pub tool_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Calls made.
    pub invocation_count: u32,
    /// Calls that succeeded.
    pub success_count: u32,
    /// Calls that failed.
    pub failure_count: u32,
    /// Time spent in all calls.
    #[serde(rename = "total_duration_ms", with = "duration_ms")]
    pub total_duration: Duration,
}

impl ToolUsageSummary {
    /// An empty summary for a tool.
    pub fn new(tool_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        ToolUsageSummary {
            tool_id: tool_id.into(),
            tool_name: tool_name.into(),
            ..Default::default()
        }
    }

    /// Count one call.
    pub fn record(&mut self, success: bool, duration: Duration) {
        self.invocation_count += 1;
        if success {
            self.success_count += 1;
        } else {
            self.failure_count += 1;
        }
        self.total_duration += duration;
    }

    /// Mean time per call (zero when never called).
    pub fn average_duration(&self) -> Duration {
        if self.invocation_count == 0 {
            Duration::ZERO
        } else {
            self.total_duration / self.invocation_count
        }
    }
}

/// The request is over, with its statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCompleteEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The answer's text.
    pub final_response: String,
    /// Tool calls executed.
    pub tool_calls_executed: u32,
    /// Iterations used.
    pub total_iterations: u32,
    /// Time the request took.
    #[serde(rename = "total_duration_ms", with = "duration_ms")]
    pub total_duration: Duration,
    /// Whether it was cancelled.
    pub was_cancelled: bool,
    /// Why it ended.
    pub reason: CompletionReason,
    /// Tokens generated.
    pub total_tokens: u64,
    /// Prompt tokens across all generations.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens across all generations.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Per-tool statistics.
    #[serde(default)]
    pub tool_usage: Vec<ToolUsageSummary>,
    /// Why the request stopped early, in words (the timeout, the iteration limit, the
    /// budget); `None` when it finished normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_message: Option<String>,
}

impl AgentCompleteEvent {
    /// A normal completion.
    pub fn success(
        request_id: Uuid,
        response: impl Into<String>,
        tool_calls: u32,
        iterations: u32,
        duration: Duration,
        tokens: u64,
        usage: Vec<ToolUsageSummary>,
    ) -> Self {
        AgentCompleteEvent {
            header: EventHeader::new(request_id, iterations),
            final_response: response.into(),
            tool_calls_executed: tool_calls,
            total_iterations: iterations,
            total_duration: duration,
            was_cancelled: false,
            reason: CompletionReason::Finished,
            total_tokens: tokens,
            prompt_tokens: 0,
            completion_tokens: tokens,
            tool_usage: usage,
            stop_message: None,
        }
    }

    /// A cancelled request.
    pub fn cancelled(
        request_id: Uuid,
        tool_calls: u32,
        iterations: u32,
        duration: Duration,
    ) -> Self {
        AgentCompleteEvent {
            was_cancelled: true,
            reason: CompletionReason::Cancelled,
            ..Self::success(
                request_id,
                "",
                tool_calls,
                iterations,
                duration,
                0,
                Vec::new(),
            )
        }
    }

    /// Set the reason (and `was_cancelled` accordingly).
    pub fn with_reason(mut self, reason: CompletionReason) -> Self {
        self.reason = reason;
        self.was_cancelled = reason == CompletionReason::Cancelled;
        self
    }

    /// Set the final response.
    pub fn with_final_response(mut self, response: impl Into<String>) -> Self {
        self.final_response = response.into();
        self
    }

    /// Set the token counts (total = completion tokens).
    pub fn with_token_counts(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.prompt_tokens = prompt_tokens;
        self.completion_tokens = completion_tokens;
        self.total_tokens = completion_tokens;
        self
    }

    /// Set the per-tool statistics.
    pub fn with_tool_usage(mut self, usage: Vec<ToolUsageSummary>) -> Self {
        self.tool_usage = usage;
        self
    }

    /// Say why the request stopped early.
    pub fn with_stop_message(mut self, message: impl Into<String>) -> Self {
        self.stop_message = Some(message.into());
        self
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Complete: {} iterations, {} tools, {:.1}s",
            self.total_iterations,
            self.tool_calls_executed,
            self.total_duration.as_secs_f64()
        )
    }
}

// ---------------------------------------------------------------------------------------
// state_changed
// ---------------------------------------------------------------------------------------

/// The part of a state change that the event's header does not already carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransitionRecord<S, T> {
    /// The state before.
    pub previous_state: S,
    /// The state after.
    pub current_state: S,
    /// The transition taken.
    pub transition: T,
    /// Extra information.
    #[serde(default)]
    pub context: Option<String>,
    /// Time spent in the previous state.
    #[serde(rename = "duration_ms", with = "option_duration_ms", default)]
    pub duration: Option<Duration>,
}

/// A transition of one of the two machines, tagged with `"machine"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "machine", rename_all = "snake_case")]
pub enum MachineTransition {
    /// The per-request agent machine.
    Agent(TransitionRecord<AgentState, AgentStateTransition>),
    /// The per-conversation turn machine.
    Turn(TransitionRecord<TurnState, TurnState>),
}

/// One of the two state machines changed state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateChangedEvent {
    /// Shared fields (timestamp, request and iteration of the change).
    #[serde(flatten)]
    pub header: EventHeader,
    /// The change.
    #[serde(flatten)]
    pub change: MachineTransition,
}

impl StateChangedEvent {
    /// The event for a change of the agent machine.
    pub fn agent(change: &AgentStateChange) -> Self {
        StateChangedEvent {
            header: EventHeader {
                timestamp: change.timestamp,
                ..EventHeader::new(change.request_id, change.iteration_number)
            },
            change: MachineTransition::Agent(TransitionRecord {
                previous_state: change.previous_state,
                current_state: change.current_state,
                transition: change.transition,
                context: change.context.clone(),
                duration: change.duration,
            }),
        }
    }

    /// The event for a change of the turn machine.
    pub fn turn(change: &TurnStateChange) -> Self {
        StateChangedEvent {
            header: EventHeader {
                timestamp: change.timestamp,
                ..EventHeader::new(change.request_id, change.iteration_number)
            },
            change: MachineTransition::Turn(TransitionRecord {
                previous_state: change.previous_state,
                current_state: change.current_state,
                transition: change.transition,
                context: change.context.clone(),
                duration: change.duration,
            }),
        }
    }

    /// Which machine changed.
    pub fn machine(&self) -> MachineKind {
        match self.change {
            MachineTransition::Agent(_) => MachineKind::Agent,
            MachineTransition::Turn(_) => MachineKind::Turn,
        }
    }

    /// The agent machine's change, when it is one.
    pub fn agent_change(&self) -> Option<AgentStateChange> {
        match &self.change {
            MachineTransition::Agent(r) => Some(self.record(r)),
            MachineTransition::Turn(_) => None,
        }
    }

    /// The turn machine's change, when it is one.
    pub fn turn_change(&self) -> Option<TurnStateChange> {
        match &self.change {
            MachineTransition::Turn(r) => Some(self.record(r)),
            MachineTransition::Agent(_) => None,
        }
    }

    fn record<S: Copy, T: Copy>(
        &self,
        r: &TransitionRecord<S, T>,
    ) -> crate::state::StateChange<S, T> {
        crate::state::StateChange {
            previous_state: r.previous_state,
            current_state: r.current_state,
            transition: r.transition,
            timestamp: self.header.timestamp,
            context: r.context.clone(),
            iteration_number: self.header.iteration_number,
            duration: r.duration,
            request_id: self.header.request_id,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        match &self.change {
            MachineTransition::Agent(r) => format!(
                "Agent: {} -> {} via {}",
                r.previous_state, r.current_state, r.transition
            ),
            MachineTransition::Turn(r) => {
                format!("Turn: {} -> {}", r.previous_state, r.current_state)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// git_commits_detected and autoformat (seed 004)
// ---------------------------------------------------------------------------------------

/// A commit found in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitCommit {
    /// The commit hash.
    pub hash: String,
    /// The first line of its message.
    pub subject: String,
    /// Files it touched, relative to the workspace.
    #[serde(default)]
    pub files: Vec<String>,
}

/// New commits appeared in the workspace while a tool ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitCommitsDetectedEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The new commits, oldest first.
    pub commits: Vec<GitCommit>,
}

impl GitCommitsDetectedEvent {
    /// An event for these commits.
    pub fn create(request_id: Uuid, commits: Vec<GitCommit>, iteration: u32) -> Self {
        GitCommitsDetectedEvent {
            header: EventHeader::new(request_id, iteration),
            commits,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!("{} new git commit(s)", self.commits.len())
    }
}

/// Autoformatters ran on files that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoformatEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The formatter's name (`"rustfmt"`).
    pub formatter: String,
    /// Files it ran on.
    pub files: Vec<String>,
    /// Files it changed.
    pub changed_files: Vec<String>,
    /// Why it failed, when it did.
    #[serde(default)]
    pub error: Option<String>,
}

impl AutoformatEvent {
    /// An event for one formatter run.
    pub fn create(
        request_id: Uuid,
        formatter: impl Into<String>,
        files: Vec<String>,
        changed_files: Vec<String>,
        iteration: u32,
    ) -> Self {
        AutoformatEvent {
            header: EventHeader::new(request_id, iteration),
            formatter: formatter.into(),
            files,
            changed_files,
            error: None,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        match &self.error {
            Some(e) => format!("{} failed: {}", self.formatter, truncate_chars(e, 50)),
            None => format!(
                "{} changed {} of {} file(s)",
                self.formatter,
                self.changed_files.len(),
                self.files.len()
            ),
        }
    }
}
