//! How the terminal shows the agent's state: a short text and an icon for the status line.
//! Presentation is the front-end's: the contract (`core-models`) says what the states
//! mean, this says how they look here.

use core_models::AgentState;

/// The status line's view of a state.
pub(crate) trait StateView {
    /// A short text for the status line.
    fn label(self) -> &'static str;
    /// An icon shown before it.
    fn icon(self) -> &'static str;
}

impl StateView for AgentState {
    fn label(self) -> &'static str {
        match self {
            AgentState::Idle => "Ready",
            AgentState::Initializing => "Preparing...",
            AgentState::Thinking => "Thinking...",
            AgentState::ParsingToolCall => "Parsing tool call...",
            AgentState::WaitingForApproval => "Waiting for approval",
            AgentState::ExecutingTool => "Running tool...",
            AgentState::ProcessingResult => "Processing result...",
            AgentState::Responding => "Responding...",
            AgentState::Cancelled => "Cancelled",
            AgentState::Error => "Error",
            AgentState::Completed => "Complete",
        }
    }

    fn icon(self) -> &'static str {
        match self {
            AgentState::Idle => "⏸️",
            AgentState::Initializing => "🔄",
            AgentState::Thinking => "🤔",
            AgentState::ParsingToolCall => "🔍",
            AgentState::WaitingForApproval => "❓",
            AgentState::ExecutingTool => "⚙️",
            AgentState::ProcessingResult => "📊",
            AgentState::Responding => "✏️",
            AgentState::Cancelled => "⛔",
            AgentState::Error => "❌",
            AgentState::Completed => "✅",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_has_its_own_label_and_icon() {
        let labels: std::collections::BTreeSet<_> =
            AgentState::ALL.iter().map(|s| s.label()).collect();
        let icons: std::collections::BTreeSet<_> =
            AgentState::ALL.iter().map(|s| s.icon()).collect();
        assert_eq!(labels.len(), AgentState::ALL.len());
        assert_eq!(icons.len(), AgentState::ALL.len());
        assert_eq!(
            AgentState::WaitingForApproval.label(),
            "Waiting for approval"
        );
        assert_eq!(AgentState::Completed.icon(), "✅");
    }
}
