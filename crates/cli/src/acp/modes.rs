//! The session modes an ACP client can switch between: who answers approvals, and which
//! tools are offered.

use agent_client_protocol::v1::schema::{SessionMode, SessionModeState};
use core_models::{ApprovalRequestEvent, RiskLevel, ToolAvailabilityContext};
use std::collections::BTreeSet;

/// A session's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    /// Every approval goes to the client.
    #[default]
    Ask,
    /// Safe-risk calls run unasked; the rest go to the client.
    Safe,
    /// Nothing that changes files or runs commands: only the read-only tools are offered,
    /// and any approval is refused.
    ReadOnly,
}

/// The tools offered in read-only mode: they read the workspace and change nothing.
const READ_ONLY_TOOLS: [&str; 6] = [
    "read_file",
    "list_dir",
    "search_files",
    "git_status",
    "git_diff",
    "load_skill",
];

impl Mode {
    const ALL: [Mode; 3] = [Mode::Ask, Mode::Safe, Mode::ReadOnly];

    /// Its id on the wire.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::Safe => "safe",
            Mode::ReadOnly => "read-only",
        }
    }

    /// The mode with this id.
    pub(crate) fn from_id(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Ask => "Ask",
            Mode::Safe => "Safe",
            Mode::ReadOnly => "Read-only",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::Ask => "Ask before every call that needs approval",
            Mode::Safe => "Run safe-risk calls without asking; ask for the rest",
            Mode::ReadOnly => {
                "Read the workspace only: nothing that changes files or runs commands"
            }
        }
    }

    /// The modes, with `current` chosen, as `session/new` reports them.
    pub(crate) fn state(current: Mode) -> SessionModeState {
        SessionModeState::new(
            current.id(),
            Mode::ALL
                .into_iter()
                .map(|m| SessionMode::new(m.id(), m.name()).description(m.description()))
                .collect::<Vec<_>>(),
        )
    }

    /// Narrow the tools offered in `context` to what the mode allows.
    pub(crate) fn restrict(self, context: &mut ToolAvailabilityContext) {
        if self == Mode::ReadOnly {
            context.allow_file_writes = false;
            context.allow_terminal_tools = false;
            context.allow_network_tools = false;
            context.enabled_tool_ids = Some(
                READ_ONLY_TOOLS
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<BTreeSet<_>>(),
            );
        }
    }

    /// How `a` is answered without asking the client, if it is.
    pub(crate) fn settles(
        self,
        a: &ApprovalRequestEvent,
    ) -> Option<Result<(), core_models::Error>> {
        match self {
            Mode::ReadOnly => Some(a.deny(Some("the session is read-only".into()))),
            // Not one a person must be asked about (a call asking for more than the
            // sandbox, or one its tool flags): those still go to the client.
            Mode::Safe
                if a.risk_level == RiskLevel::Safe
                    && a.must_ask.is_none()
                    && !a.escalates(core_models::SandboxMode::WorkspaceWrite, false) =>
            {
                Some(a.approve())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_read_only_offers_only_readers() {
        for m in Mode::ALL {
            assert_eq!(Mode::from_id(m.id()), Some(m));
        }
        assert_eq!(Mode::from_id("yolo"), None);
        let mut context = ToolAvailabilityContext::default();
        Mode::ReadOnly.restrict(&mut context);
        let enabled = context.enabled_tool_ids.unwrap_or_default();
        assert!(enabled.contains("read_file") && !enabled.contains("run_command"));
        assert!(!context.allow_file_writes && !context.allow_terminal_tools);
    }

    /// An approval request of `risk`, with its answer's receiver (kept open, so that an
    /// answer can be given).
    fn asking(risk: RiskLevel) -> (ApprovalRequestEvent, core_models::ApprovalReceiver) {
        let mut call =
            core_models::ToolCallRequest::new("read_file", serde_json::json!({"path": "a"}));
        call.risk_level = risk;
        let timeout = std::time::Duration::from_secs(60);
        ApprovalRequestEvent::create(uuid::Uuid::new_v4(), call, timeout, 1)
    }

    #[test]
    fn safe_mode_answers_plain_safe_calls_only_and_read_only_refuses_all() {
        let (safe, _answer) = asking(RiskLevel::Safe);
        assert!(matches!(Mode::Safe.settles(&safe), Some(Ok(()))));
        let (safe, _answer) = asking(RiskLevel::Safe);
        assert!(Mode::Ask.settles(&safe).is_none());
        let (low, _answer) = asking(RiskLevel::Low);
        assert!(Mode::Safe.settles(&low).is_none());
        let (flagged, _answer) = asking(RiskLevel::Safe);
        let flagged = flagged.with_must_ask(Some("a person must see this".into()));
        assert!(Mode::Safe.settles(&flagged).is_none());
        let (medium, _answer) = asking(RiskLevel::Medium);
        assert!(matches!(Mode::ReadOnly.settles(&medium), Some(Ok(()))));
    }
}
