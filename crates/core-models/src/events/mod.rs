//! Agent events (seed 001 part e, seed 002): what the agent tells the outside world while
//! it works.
//!
//! [`AgentEvent`] is one closed enum, serialized with a `"type"` tag equal to seed 002's
//! event-type string (`"text_generation"`, `"tool_call_request"`, …). Each variant wraps
//! its own struct, and each struct flattens the shared [`EventHeader`].

mod approval;
mod completion;
mod errors;
mod plan;
mod policy;
mod session;
mod state_changed;
mod text;
mod tool_calls;
mod workspace;

pub use approval::{ApprovalAnswer, ApprovalReceiver, ApprovalRequestEvent, ApprovalResponder};
pub use completion::{AgentCompleteEvent, CompletionReason, ToolUsageSummary};
pub use errors::{AgentErrorCategory, AgentErrorEvent, ErrorSource};
pub use plan::{PlanStatus, PlanStep, PlanUpdatedEvent, PLAN_TOOL_ID};
pub use policy::{PolicyDecisionEvent, PolicyOutcome, PolicySource};
pub use session::{
    ContextCompactedEvent, MessagesCarriedEvent, RepetitionDetectedEvent, SessionStartedEvent,
};
pub use state_changed::{MachineTransition, StateChangedEvent, TransitionRecord};
pub use text::{AgentIterationEvent, PromptProgressEvent, TextGenerationEvent};
pub use tool_calls::{
    ToolCallRequestEvent, ToolExecutionEvent, ToolExecutionStatus, ToolResultEvent,
};
pub use workspace::{AutoformatEvent, GitCommit, GitCommitsDetectedEvent};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::time::Duration;
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
    /// A session began or resumed (`"session_started"`): an application's first event.
    SessionStarted(SessionStartedEvent),
    /// The conversation was shortened to fit the context window (`"context_compacted"`).
    ContextCompacted(ContextCompactedEvent),
    /// The reply looped and its generation was stopped (`"repetition_detected"`).
    RepetitionDetected(RepetitionDetectedEvent),
    /// Messages sent into the request that had not reached the model when it ended,
    /// carried to the next request (`"messages_carried"`).
    MessagesCarried(MessagesCarriedEvent),
    /// How far the model has read the prompt (`"prompt_progress"`).
    PromptProgress(PromptProgressEvent),
    /// The agent's plan changed (`"plan_updated"`): every step with its status.
    PlanUpdated(PlanUpdatedEvent),
    /// A rule or a hook decided something.
    PolicyDecision(PolicyDecisionEvent),
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
    SessionStarted(SessionStartedEvent) = "session_started",
    ContextCompacted(ContextCompactedEvent) = "context_compacted",
    RepetitionDetected(RepetitionDetectedEvent) = "repetition_detected",
    MessagesCarried(MessagesCarriedEvent) = "messages_carried",
    PromptProgress(PromptProgressEvent) = "prompt_progress",
    PlanUpdated(PlanUpdatedEvent) = "plan_updated",
    PolicyDecision(PolicyDecisionEvent) = "policy_decision",
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
