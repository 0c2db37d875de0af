//! `session_started`: which saved conversation a stream of events belongs to.

use super::EventHeader;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A session begins or resumes: the first event of an application's event stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStartedEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The session (the conversation's id; `agent_complete` carries it too).
    pub session_id: Uuid,
    /// Whether a saved session was resumed.
    pub resumed: bool,
    /// Messages the conversation already holds.
    pub messages: u32,
}

impl SessionStartedEvent {
    /// A session `session_id` starting (or resuming with `messages` messages) before
    /// request `request_id`.
    pub fn create(request_id: Uuid, session_id: Uuid, resumed: bool, messages: u32) -> Self {
        SessionStartedEvent {
            header: EventHeader::new(request_id, 0),
            session_id,
            resumed,
            messages,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        if self.resumed {
            format!(
                "Session {} resumed ({} messages)",
                self.session_id, self.messages
            )
        } else {
            format!("Session {} started", self.session_id)
        }
    }
}

/// The conversation was shortened to fit the model's context window
/// (`"context_compacted"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextCompactedEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The prompt's tokens before.
    pub tokens_before: u64,
    /// The prompt's tokens after.
    pub tokens_after: u64,
    /// How: `tool_results` (old results cut to stubs) or `summary` (older turns summarized
    /// by the model). Sent only when the step removed something (`tokens_after` is below
    /// `tokens_before`).
    pub strategy: String,
}

impl ContextCompactedEvent {
    /// A compaction of request `request_id` in `iteration`.
    pub fn create(
        request_id: Uuid,
        tokens_before: u64,
        tokens_after: u64,
        strategy: impl Into<String>,
        iteration: u32,
    ) -> Self {
        ContextCompactedEvent {
            header: EventHeader::new(request_id, iteration),
            tokens_before,
            tokens_after,
            strategy: strategy.into(),
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Context compacted ({}): {} → {} tokens",
            self.strategy, self.tokens_before, self.tokens_after
        )
    }
}

/// The model's reply fell into a loop, the same unit of text over and over, and its
/// generation was stopped (`"repetition_detected"`). The reply keeps one copy of the unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepetitionDetectedEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The repeating unit (its first 200 characters).
    pub unit: String,
    /// Whole repeats seen before the generation stopped.
    pub repeats: u32,
    /// Characters cut from the end of the reply (all repeats after the first).
    pub removed_chars: u64,
}

impl RepetitionDetectedEvent {
    /// A loop of `unit`, `repeats` times, in request `request_id`'s `iteration`.
    pub fn create(
        request_id: Uuid,
        unit: &str,
        repeats: u32,
        removed_chars: u64,
        iteration: u32,
    ) -> Self {
        RepetitionDetectedEvent {
            header: EventHeader::new(request_id, iteration),
            unit: unit.chars().take(200).collect(),
            repeats,
            removed_chars,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "The reply looped ({} repeats of {:?}); its generation was stopped",
            self.repeats, self.unit
        )
    }
}

/// Messages sent into a request (`AgentService::send_user_message`) that had not reached
/// the model when the request ended (`"messages_carried"`): cancelled, failed, timed out,
/// or stopped at a limit or the budget. They were added to the conversation the agent
/// keeps, as user messages after the request's own, so the next request that continues
/// it sends them to the model before its own message. Sent just before the terminal
/// event, only when there are some.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesCarriedEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The messages, in the order they were sent.
    pub messages: Vec<String>,
}

impl MessagesCarriedEvent {
    /// `messages` of request `request_id`, carried after `iteration`.
    pub fn create(request_id: Uuid, messages: Vec<String>, iteration: u32) -> Self {
        MessagesCarriedEvent {
            header: EventHeader::new(request_id, iteration),
            messages,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "{} message(s) did not reach the model before the request ended: carried to the next request",
            self.messages.len()
        )
    }
}
