//! The two state machines' data: the per-request [`AgentState`] machine (seed 001 part d,
//! seed 000) and the per-conversation [`TurnState`] machine (seed 004).
//!
//! Both are described by a [`StateTable`]: the states, the transitions and the allowed
//! edges, as plain data. The engine that runs a table (thread-safe, timed, with history)
//! lives in `services-ai`.

use crate::serde_util::option_duration_ms;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::hash::Hash;
use std::time::Duration;
use uuid::Uuid;

/// Which of the two state machines a record or event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MachineKind {
    /// The per-request agent machine ([`AgentState`]).
    Agent,
    /// The per-conversation turn machine ([`TurnState`]).
    Turn,
}

/// A state machine described as data: its states, transitions and edges.
///
/// Implemented by [`AgentMachine`] and [`TurnMachine`]; the engine in `services-ai` is
/// generic over it.
pub trait StateTable: Send + Sync + 'static {
    /// The machine's states.
    type State: Copy
        + Eq
        + Hash
        + fmt::Debug
        + fmt::Display
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// What moves the machine from one state to the next.
    type Transition: Copy
        + Eq
        + Hash
        + fmt::Debug
        + fmt::Display
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;

    /// Which machine this is.
    const KIND: MachineKind;
    /// The state a new or reset machine is in.
    const INITIAL: Self::State;
    /// The transition `start(request_id)` performs from [`StateTable::INITIAL`].
    const START: Self::Transition;

    /// Every state, in declaration order.
    fn states() -> &'static [Self::State];
    /// Every transition, in declaration order.
    fn transitions() -> &'static [Self::Transition];
    /// Where `transition` leads from `from`, or `None` when it is not allowed.
    fn next(from: Self::State, transition: Self::Transition) -> Option<Self::State>;
    /// Whether no transition leaves `state` (processing is over).
    fn is_terminal(state: Self::State) -> bool;
    /// Whether `state` is the machine's error state.
    fn is_error(state: Self::State) -> bool;
    /// Whether taking `transition` starts a new iteration (one LLM generation).
    fn starts_iteration(transition: Self::Transition) -> bool;
}

// ---------------------------------------------------------------------------------------
// The agent machine
// ---------------------------------------------------------------------------------------

/// Current state of the agent during request processing (seed 000 §1).
///
/// Categories: ready (`Idle`); active (`Initializing`, `Thinking`, `ParsingToolCall`,
/// `ExecutingTool`, `ProcessingResult`, `Responding`); waiting (`WaitingForApproval`);
/// terminal (`Completed`, `Cancelled`, `Error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// Not processing any request; ready to accept one.
    Idle,
    /// Building prompts, preparing context, loading tools.
    Initializing,
    /// The LLM is generating; streaming tokens appear here.
    Thinking,
    /// A tool call was detected; it is being parsed, validated and permission-checked.
    ParsingToolCall,
    /// Paused until the user answers an approval prompt.
    WaitingForApproval,
    /// A tool is running.
    ExecutingTool,
    /// The tool result is being prepared for the next iteration.
    ProcessingResult,
    /// Final text, no more tool calls.
    Responding,
    /// Cancelled by the user. Terminal.
    Cancelled,
    /// Processing failed. Terminal.
    Error,
    /// Completed successfully. Terminal.
    Completed,
}

/// What moves the agent machine (seed 000 §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStateTransition {
    /// Idle → Initializing.
    Start,
    /// Initializing → Thinking, ProcessingResult → Thinking. Counts an iteration.
    BeginThinking,
    /// Thinking → ParsingToolCall.
    DetectToolCall,
    /// ParsingToolCall → WaitingForApproval.
    RequestApproval,
    /// WaitingForApproval → ExecutingTool, ParsingToolCall → ExecutingTool (auto-approved).
    ApprovalGranted,
    /// WaitingForApproval → Thinking.
    ApprovalDenied,
    /// ExecutingTool → ProcessingResult.
    ToolComplete,
    /// Thinking → Responding.
    NoToolCalls,
    /// Responding → Completed.
    Complete,
    /// Any non-terminal state → Cancelled.
    Cancel,
    /// Any non-terminal state → Error.
    Fail,
}

impl AgentState {
    /// Every state, in the seed's order.
    pub const ALL: [AgentState; 11] = [
        AgentState::Idle,
        AgentState::Initializing,
        AgentState::Thinking,
        AgentState::ParsingToolCall,
        AgentState::WaitingForApproval,
        AgentState::ExecutingTool,
        AgentState::ProcessingResult,
        AgentState::Responding,
        AgentState::Cancelled,
        AgentState::Error,
        AgentState::Completed,
    ];

    /// The state's name as the seed writes it (`"WaitingForApproval"`).
    pub fn name(self) -> &'static str {
        match self {
            AgentState::Idle => "Idle",
            AgentState::Initializing => "Initializing",
            AgentState::Thinking => "Thinking",
            AgentState::ParsingToolCall => "ParsingToolCall",
            AgentState::WaitingForApproval => "WaitingForApproval",
            AgentState::ExecutingTool => "ExecutingTool",
            AgentState::ProcessingResult => "ProcessingResult",
            AgentState::Responding => "Responding",
            AgentState::Cancelled => "Cancelled",
            AgentState::Error => "Error",
            AgentState::Completed => "Completed",
        }
    }

    /// Whether processing is over (Completed, Cancelled, Error).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            AgentState::Completed | AgentState::Cancelled | AgentState::Error
        )
    }

    /// Whether the agent is actively processing.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            AgentState::Initializing
                | AgentState::Thinking
                | AgentState::ParsingToolCall
                | AgentState::ExecutingTool
                | AgentState::ProcessingResult
                | AgentState::Responding
        )
    }

    /// Whether the agent waits for external input (Idle, WaitingForApproval).
    pub fn is_waiting(self) -> bool {
        matches!(self, AgentState::Idle | AgentState::WaitingForApproval)
    }

    /// Whether a new request can be accepted (only in Idle).
    pub fn can_accept_request(self) -> bool {
        self == AgentState::Idle
    }

    /// Whether the user is expected to approve or deny something.
    pub fn awaiting_user_input(self) -> bool {
        self == AgentState::WaitingForApproval
    }

    /// Whether cancelling means anything in this state.
    pub fn is_cancellable(self) -> bool {
        self.is_active() || self.awaiting_user_input()
    }
}

impl fmt::Display for AgentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl AgentStateTransition {
    /// Every transition, in the seed's order.
    pub const ALL: [AgentStateTransition; 11] = [
        AgentStateTransition::Start,
        AgentStateTransition::BeginThinking,
        AgentStateTransition::DetectToolCall,
        AgentStateTransition::RequestApproval,
        AgentStateTransition::ApprovalGranted,
        AgentStateTransition::ApprovalDenied,
        AgentStateTransition::ToolComplete,
        AgentStateTransition::NoToolCalls,
        AgentStateTransition::Complete,
        AgentStateTransition::Cancel,
        AgentStateTransition::Fail,
    ];

    /// The transition's name as the seed writes it (`"BeginThinking"`).
    pub fn name(self) -> &'static str {
        match self {
            AgentStateTransition::Start => "Start",
            AgentStateTransition::BeginThinking => "BeginThinking",
            AgentStateTransition::DetectToolCall => "DetectToolCall",
            AgentStateTransition::RequestApproval => "RequestApproval",
            AgentStateTransition::ApprovalGranted => "ApprovalGranted",
            AgentStateTransition::ApprovalDenied => "ApprovalDenied",
            AgentStateTransition::ToolComplete => "ToolComplete",
            AgentStateTransition::NoToolCalls => "NoToolCalls",
            AgentStateTransition::Complete => "Complete",
            AgentStateTransition::Cancel => "Cancel",
            AgentStateTransition::Fail => "Fail",
        }
    }
}

impl fmt::Display for AgentStateTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The agent machine's table of ordinary edges (seed 000 §4). Cancel and Fail are not
/// listed: they lead from every non-terminal state to Cancelled and Error.
pub const AGENT_TRANSITIONS: [(AgentState, AgentStateTransition, AgentState); 11] = {
    use AgentState as S;
    use AgentStateTransition as T;
    [
        (S::Idle, T::Start, S::Initializing),
        (S::Initializing, T::BeginThinking, S::Thinking),
        (S::Thinking, T::DetectToolCall, S::ParsingToolCall),
        (
            S::ParsingToolCall,
            T::RequestApproval,
            S::WaitingForApproval,
        ),
        (S::WaitingForApproval, T::ApprovalGranted, S::ExecutingTool),
        (S::WaitingForApproval, T::ApprovalDenied, S::Thinking),
        (S::ExecutingTool, T::ToolComplete, S::ProcessingResult),
        (S::ProcessingResult, T::BeginThinking, S::Thinking),
        (S::Thinking, T::NoToolCalls, S::Responding),
        (S::Responding, T::Complete, S::Completed),
        (S::ParsingToolCall, T::ApprovalGranted, S::ExecutingTool),
    ]
};

/// The per-request agent machine's table (seed 000).
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentMachine;

impl StateTable for AgentMachine {
    type State = AgentState;
    type Transition = AgentStateTransition;
    const KIND: MachineKind = MachineKind::Agent;
    const INITIAL: AgentState = AgentState::Idle;
    const START: AgentStateTransition = AgentStateTransition::Start;

    fn states() -> &'static [AgentState] {
        &AgentState::ALL
    }

    fn transitions() -> &'static [AgentStateTransition] {
        &AgentStateTransition::ALL
    }

    fn next(from: AgentState, transition: AgentStateTransition) -> Option<AgentState> {
        match transition {
            AgentStateTransition::Cancel if !from.is_terminal() => Some(AgentState::Cancelled),
            AgentStateTransition::Fail if !from.is_terminal() => Some(AgentState::Error),
            AgentStateTransition::Cancel | AgentStateTransition::Fail => None,
            _ => AGENT_TRANSITIONS
                .iter()
                .find(|(s, t, _)| *s == from && *t == transition)
                .map(|(_, _, to)| *to),
        }
    }

    fn is_terminal(state: AgentState) -> bool {
        state.is_terminal()
    }

    fn is_error(state: AgentState) -> bool {
        state == AgentState::Error
    }

    fn starts_iteration(transition: AgentStateTransition) -> bool {
        transition == AgentStateTransition::BeginThinking
    }
}

// ---------------------------------------------------------------------------------------
// The turn machine (seed 004)
// ---------------------------------------------------------------------------------------

/// The 16 states of seed 004's turn machine, which follows a conversation turn by turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    /// Initial state when the agent is initialized and ready to operate.
    Ready,
    /// Waiting for a user message to start a turn.
    WaitingForUserInput,
    /// Sending message(s) to the LLM.
    SendingToLlm,
    /// Processing a response from the LLM.
    ProcessingLlmResponse,
    /// Processing completed without tool use; the turn ends.
    EndOfTurn,
    /// The LLM has requested to use a tool.
    ToolUseRequested,
    /// Checking whether the user requested cancellation.
    CheckingForCancellation,
    /// Executing the requested tool.
    RunningTool,
    /// Checking for new git commits after tool execution.
    CheckingGitCommits,
    /// Running code formatters on new commits.
    RunningAutoformatters,
    /// Verifying whether budget limits are exceeded.
    CheckingBudget,
    /// Collecting user messages that arrived during tool execution.
    GatheringAdditionalMessages,
    /// Sending tool results back to the LLM.
    SendingToolResults,
    /// The operation was cancelled by the user.
    Cancelled,
    /// A budget limit was reached.
    BudgetExceeded,
    /// An error occurred during processing.
    Error,
}

impl TurnState {
    /// Every state, in seed 004's order.
    pub const ALL: [TurnState; 16] = [
        TurnState::Ready,
        TurnState::WaitingForUserInput,
        TurnState::SendingToLlm,
        TurnState::ProcessingLlmResponse,
        TurnState::EndOfTurn,
        TurnState::ToolUseRequested,
        TurnState::CheckingForCancellation,
        TurnState::RunningTool,
        TurnState::CheckingGitCommits,
        TurnState::RunningAutoformatters,
        TurnState::CheckingBudget,
        TurnState::GatheringAdditionalMessages,
        TurnState::SendingToolResults,
        TurnState::Cancelled,
        TurnState::BudgetExceeded,
        TurnState::Error,
    ];

    /// The state's name (`"SendingToLlm"`).
    pub fn name(self) -> &'static str {
        match self {
            TurnState::Ready => "Ready",
            TurnState::WaitingForUserInput => "WaitingForUserInput",
            TurnState::SendingToLlm => "SendingToLlm",
            TurnState::ProcessingLlmResponse => "ProcessingLlmResponse",
            TurnState::EndOfTurn => "EndOfTurn",
            TurnState::ToolUseRequested => "ToolUseRequested",
            TurnState::CheckingForCancellation => "CheckingForCancellation",
            TurnState::RunningTool => "RunningTool",
            TurnState::CheckingGitCommits => "CheckingGitCommits",
            TurnState::RunningAutoformatters => "RunningAutoformatters",
            TurnState::CheckingBudget => "CheckingBudget",
            TurnState::GatheringAdditionalMessages => "GatheringAdditionalMessages",
            TurnState::SendingToolResults => "SendingToolResults",
            TurnState::Cancelled => "Cancelled",
            TurnState::BudgetExceeded => "BudgetExceeded",
            TurnState::Error => "Error",
        }
    }

    /// Whether the state ends a turn (EndOfTurn, Cancelled, BudgetExceeded, Error); each
    /// of them leads back to WaitingForUserInput.
    pub fn is_turn_end(self) -> bool {
        matches!(
            self,
            TurnState::EndOfTurn
                | TurnState::Cancelled
                | TurnState::BudgetExceeded
                | TurnState::Error
        )
    }

    /// The states this one may move to, per seed 004's diagram.
    pub fn successors(self) -> impl Iterator<Item = TurnState> {
        TURN_EDGES
            .iter()
            .filter(move |(from, _)| *from == self)
            .map(|(_, to)| *to)
    }
}

impl fmt::Display for TurnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Exactly the edges of seed 004's diagram, `(from, to)`.
pub const TURN_EDGES: [(TurnState, TurnState); 26] = {
    use TurnState as S;
    [
        (S::Ready, S::WaitingForUserInput),
        (S::WaitingForUserInput, S::SendingToLlm),
        (S::WaitingForUserInput, S::Error),
        (S::SendingToLlm, S::ProcessingLlmResponse),
        (S::SendingToLlm, S::Error),
        (S::ProcessingLlmResponse, S::EndOfTurn),
        (S::ProcessingLlmResponse, S::ToolUseRequested),
        (S::ProcessingLlmResponse, S::Error),
        (S::EndOfTurn, S::WaitingForUserInput),
        (S::ToolUseRequested, S::CheckingForCancellation),
        (S::CheckingForCancellation, S::RunningTool),
        (S::CheckingForCancellation, S::Cancelled),
        (S::RunningTool, S::CheckingGitCommits),
        (S::RunningTool, S::Error),
        (S::CheckingGitCommits, S::RunningAutoformatters),
        (S::CheckingGitCommits, S::CheckingBudget),
        (S::RunningAutoformatters, S::CheckingBudget),
        (S::CheckingBudget, S::GatheringAdditionalMessages),
        (S::CheckingBudget, S::BudgetExceeded),
        (S::GatheringAdditionalMessages, S::SendingToolResults),
        (S::GatheringAdditionalMessages, S::Error),
        (S::SendingToolResults, S::ProcessingLlmResponse),
        (S::SendingToolResults, S::Error),
        (S::Error, S::WaitingForUserInput),
        (S::Cancelled, S::WaitingForUserInput),
        (S::BudgetExceeded, S::WaitingForUserInput),
    ]
};

/// The per-conversation turn machine's table (seed 004). A transition is named by the
/// state it leads to; the machine is cyclic, so no state is terminal.
#[derive(Debug, Clone, Copy, Default)]
pub struct TurnMachine;

impl StateTable for TurnMachine {
    type State = TurnState;
    type Transition = TurnState;
    const KIND: MachineKind = MachineKind::Turn;
    const INITIAL: TurnState = TurnState::Ready;
    const START: TurnState = TurnState::WaitingForUserInput;

    fn states() -> &'static [TurnState] {
        &TurnState::ALL
    }

    fn transitions() -> &'static [TurnState] {
        &TurnState::ALL
    }

    fn next(from: TurnState, to: TurnState) -> Option<TurnState> {
        TURN_EDGES.contains(&(from, to)).then_some(to)
    }

    fn is_terminal(_state: TurnState) -> bool {
        false
    }

    fn is_error(state: TurnState) -> bool {
        state == TurnState::Error
    }

    fn starts_iteration(to: TurnState) -> bool {
        matches!(to, TurnState::SendingToLlm | TurnState::SendingToolResults)
    }
}

// ---------------------------------------------------------------------------------------
// Records and errors
// ---------------------------------------------------------------------------------------

/// One change of state (seed 000 §2, `AgentStateChangedEventArgs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateChange<S, T> {
    /// The state before the transition.
    pub previous_state: S,
    /// The state after it.
    pub current_state: S,
    /// The transition taken.
    pub transition: T,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// Extra information (tool name, error message, denial reason…).
    pub context: Option<String>,
    /// The loop iteration after the transition (first generation is 1).
    pub iteration_number: u32,
    /// Time spent in the previous state; `None` when leaving the initial state.
    #[serde(rename = "duration_ms", with = "option_duration_ms")]
    pub duration: Option<Duration>,
    /// The request this change belongs to (nil when none).
    pub request_id: Uuid,
}

/// A change of the agent machine.
pub type AgentStateChange = StateChange<AgentState, AgentStateTransition>;
/// A change of the turn machine (the transition is the target state).
pub type TurnStateChange = StateChange<TurnState, TurnState>;

impl<S: fmt::Display, T: fmt::Display> fmt::Display for StateChange<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "StateChange: {} -> {} via {} [Iter: {}, Duration: {}ms]",
            self.previous_state,
            self.current_state,
            self.transition,
            self.iteration_number,
            self.duration.map(|d| d.as_millis()).unwrap_or(0)
        )
    }
}

/// An attempted transition that the table does not allow (seed 000's
/// `StateTransitionException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Invalid transition '{transition}' from state '{from_state}'{}",
    context.as_deref().map(|c| format!(": {c}")).unwrap_or_default()
)]
pub struct StateTransitionError<S: fmt::Display + fmt::Debug, T: fmt::Display + fmt::Debug> {
    /// The state the machine was in.
    pub from_state: S,
    /// The transition attempted.
    pub transition: T,
    /// The context given with the attempt.
    pub context: Option<String>,
}
