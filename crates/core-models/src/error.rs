//! The crate's error type.

use crate::state::{AgentState, AgentStateTransition, StateTransitionError, TurnState};
use uuid::Uuid;

/// A boxed error that can cross threads: the source of an [`Error`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Errors of the AIntern contract: what a port implementation or a model operation reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An agent-state transition that the table does not allow.
    #[error(transparent)]
    InvalidTransition(#[from] StateTransitionError<AgentState, AgentStateTransition>),

    /// A turn-state transition that seed 004's diagram does not allow.
    #[error(transparent)]
    InvalidTurnTransition(#[from] StateTransitionError<TurnState, TurnState>),

    /// The agent is already processing a request.
    #[error("the agent is busy: it is in state {state}")]
    Busy {
        /// The state the agent was in.
        state: AgentState,
    },

    /// No request is running, so there is nothing to send to.
    #[error("no request is running")]
    NotProcessing,

    /// The running request takes no more messages: the model has given its final answer
    /// and the request is ending. The message was not delivered (send it as the next
    /// request).
    #[error("the request is ending and takes no more messages: this one was not delivered")]
    RequestEnding,

    /// The request cannot be processed as it is (every problem, in words).
    #[error("invalid request: {}", .0.join("; "))]
    InvalidRequest(Vec<String>),

    /// The call needs a Tokio runtime and none is running on this thread.
    #[error("no async runtime: call this from within a Tokio runtime")]
    NoRuntime,

    /// A port failed (git, a formatter, a tool host…).
    #[error("{message}")]
    Port {
        /// What went wrong, in words.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// The language model failed.
    #[error("LLM error: {message}")]
    Llm {
        /// What went wrong, in words.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// The backend cannot do what the request asks (a [`crate::ReplyConstraint`] a
    /// server cannot hold, say); the caller may go another way.
    #[error("not supported by this backend: {0}")]
    Unsupported(String),

    /// Permission settings could not be loaded or saved.
    #[error("permission store error: {message}")]
    PermissionStore {
        /// What went wrong, in words (names the file where there is one).
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// `provide_approval` named a call that is not waiting for approval.
    #[error("no approval is pending for tool call {call_id}")]
    NoPendingApproval {
        /// The call id that was given.
        call_id: Uuid,
    },

    /// The approval request was answered already.
    #[error("this approval request was already answered")]
    ApprovalAlreadyAnswered,

    /// Nobody is waiting for the answer any more (the request ended, or the event was
    /// deserialized and so is not connected to a running agent).
    #[error("the agent is no longer waiting for this approval")]
    ApprovalClosed,
}

impl Error {
    /// An LLM error with a message and no source.
    pub fn llm(message: impl Into<String>) -> Self {
        Error::Llm {
            message: message.into(),
            source: None,
        }
    }

    /// A port error with a message and no source.
    pub fn port(message: impl Into<String>) -> Self {
        Error::Port {
            message: message.into(),
            source: None,
        }
    }

    /// A permission-store error with a message and a source.
    pub fn permission_store(
        message: impl Into<String>,
        source: impl Into<Option<BoxError>>,
    ) -> Self {
        Error::PermissionStore {
            message: message.into(),
            source: source.into(),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
