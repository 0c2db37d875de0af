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
