//! # core-models
//!
//! The public contract of AIntern: every type that crosses a crate boundary, and the
//! service traits ("ports") that the agent is built from.
//!
//! Every item has one path, at the crate root (the modules are private; their files group
//! the items by subject):
//!
//! * states — the per-request [`AgentState`] machine and the per-conversation
//!   [`TurnState`] machine, as data ([`StateTable`]), with the display helpers a UI needs;
//! * events — [`AgentEvent`], one closed enum serialized with a `"type"` tag;
//! * the models of requests, tools, tool calls, permissions and the LLM port;
//! * the ports — [`Tool`], [`ToolRegistry`], [`ToolExecutionService`], [`LlmService`],
//!   [`PermissionManager`], [`PermissionStore`], [`AgentService`], [`GitInspector`], [`Checkpointer`] and
//!   [`Formatter`].
//!
//! ## Why a separate crate
//! Downstream applications (a terminal UI, an editor plugin, a server) link against these
//! types and nothing else. Keeping them apart from the engine lets an application depend
//! on the contract without compiling the agent, and lets backends (a llama.cpp backend, a
//! scripted test model) implement a port without depending on each other.
//!
//! ## Invariant
//! This crate performs no I/O and pulls in no async runtime, filesystem or network crate.
//! Its only tokio dependency is the `sync` feature (channels and the cancellation token);
//! `scripts/test` checks that no other tokio feature creeps in.
//!
//! ## Example: answering an approval request
//!
//! The agent sends an [`ApprovalRequestEvent`] and waits on the receiver; whoever holds the
//! event (or a clone of it) answers.
//!
//! ```
//! use core_models::{ApprovalAnswer, ApprovalRequestEvent, RememberScope, ToolCallRequest};
//! use serde_json::json;
//! use std::time::Duration;
//! use uuid::Uuid;
//!
//! let call = ToolCallRequest::new("write_file", json!({"path": "notes.txt"}));
//! let (event, mut answer) =
//!     ApprovalRequestEvent::create(Uuid::new_v4(), call, Duration::from_secs(300), 1);
//! // A UI shows `event.summary` and `event.risk_level`, then answers:
//! event.approve_with(RememberScope::Session, None)?;
//! match answer.try_recv() {
//!     Ok(ApprovalAnswer::Decided(d)) => assert!(d.approved && d.remember_for_session),
//!     other => panic!("unexpected {other:?}"),
//! }
//! // Events serialize with a "type" tag; the answer handle is not serialized.
//! let json = serde_json::to_value(core_models::AgentEvent::ApprovalRequest(event))?;
//! assert_eq!(json["type"], "approval_request");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Conventions
//! Everything serializes with snake_case field names and enum values; durations are
//! integer milliseconds in fields ending in `_ms`; ids are UUIDs; times are UTC.

#[macro_use]
mod setters;

mod config;
mod error;
mod events;
mod llm;
mod permission;
mod policy;
mod ports;
mod request;
mod sandbox;
mod serde_util;
mod state;
mod tool;
mod tool_call;

pub use config::{
    mcp_validation_errors, valid_server_name, BackendConfig, BackendKind, HookConfig, HooksConfig,
    McpServerConfig, ToolMode, ValidationError,
};
pub use error::{BoxError, Error, Result};
pub use events::{
    AgentCompleteEvent, AgentErrorCategory, AgentErrorEvent, AgentEvent, AgentIterationEvent,
    ApprovalAnswer, ApprovalReceiver, ApprovalRequestEvent, ApprovalResponder, AutoformatEvent,
    CompletionReason, ContextCompactedEvent, ErrorSource, EventHeader, EventKind, GitCommit,
    GitCommitsDetectedEvent, MachineTransition, MessagesCarriedEvent, PlanStatus, PlanStep,
    PlanUpdatedEvent, PolicyDecisionEvent, PolicyOutcome, PolicySource, PromptProgressEvent,
    RepetitionDetectedEvent, SessionStartedEvent, StateChangedEvent, TextGenerationEvent,
    ToolCallRequestEvent, ToolExecutionEvent, ToolExecutionStatus, ToolResultEvent,
    ToolUsageSummary, TransitionRecord, PLAN_TOOL_ID,
};
pub use llm::{
    LlmChunk, LlmRequest, LlmStream, LlmToolCall, LlmUsage, ModelDetails, PromptProgress,
    ReplyConstraint, SessionKey,
};
pub use permission::{
    collapse_whitespace, normalize_path, PermissionCheckResult, PermissionSubjects,
    ToolPermissionSettings,
};
pub use policy::{
    CallRules, Hook, HookCall, HookDecision, HookEvent, HookPoint, HookReply, HookResult,
    PolicyDecision, RuleVerdict,
};
pub use ports::{
    AgentService, ChatFormat, CheckpointMoment, Checkpointer, EventStream, Formatter, GitInspector,
    LlmService, PermissionChange, PermissionManager, PermissionMap, PermissionStore, Tool,
    ToolExecutionService, ToolRegistry,
};
pub use request::{
    AgentRequest, ChatMessage, FileContext, InferenceOptions, MessageRole, MessageToolCall,
    TextSelection, ToolAvailabilityContext, ToolChoice, ToolPermission,
};
pub use sandbox::{SandboxFallback, SandboxMode, SandboxSummary};
pub use state::{
    AgentMachine, AgentState, AgentStateChange, AgentStateTransition, MachineKind, StateChange,
    StateTable, StateTransitionError, TurnMachine, TurnState, TurnStateChange, AGENT_TRANSITIONS,
    TURN_EDGES,
};
pub use tool::{
    ArgumentChoices, CallAssessment, FileChange, ProgressReporter, RiskLevel, ToolCategory,
    ToolDefinition, ToolExample, ToolExecutionContext, ToolProgress, ToolResult,
    ToolValidationResult,
};
pub use tool_call::{
    main_argument_of, ApprovalDecision, RememberScope, ToolCallLifecycle, ToolCallRequest,
    ToolCallStatus, MAIN_ARGUMENT_KEYS,
};

/// Re-exported so implementers of the ports need not add the crate themselves.
pub use async_trait::async_trait;
/// Re-exported: the token tools watch to stop.
pub use tokio_util::sync::CancellationToken;
