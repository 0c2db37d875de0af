//! `state_changed`: a transition of either state machine, tagged with `"machine"`.

use super::EventHeader;
use crate::serde_util::option_duration_ms;
use crate::state::{
    AgentState, AgentStateChange, AgentStateTransition, MachineKind, TurnState, TurnStateChange,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
