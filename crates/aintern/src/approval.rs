//! How an agent answers the calls that need a person's approval.

use core_models::{ApprovalRequestEvent, RiskLevel, SandboxMode};

/// Who answers an approval request. Calls the configuration already allows (safe reads;
/// whatever an "always" answer covers) run without one; calls the permission settings
/// deny never run, whatever the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ApprovalPolicy {
    /// The application answers each [`ApprovalRequestEvent`] it reads from the
    /// [`Run`](crate::Run) (`approve()`, `deny(reason)`, …); the call waits for it, up to
    /// the configured approval timeout, after which it counts as denied.
    #[default]
    Ask,
    /// Approve calls rated safe, deny the rest.
    ApproveSafe,
    /// Approve every call — except one that asks for more than the configured sandbox
    /// (the network while it is closed, no sandbox where there is one): only the
    /// application, answering itself, may grant that.
    ApproveAll,
    /// Deny every call that needs approval.
    DenyAll,
}

impl ApprovalPolicy {
    /// Answer `request` as the policy says; under [`ApprovalPolicy::Ask`], leave it open.
    /// `sandbox` is the configured sandbox (its mode, and whether the network is open).
    pub(crate) fn answer(self, request: &ApprovalRequestEvent, sandbox: (SandboxMode, bool)) {
        let answered = match self {
            ApprovalPolicy::Ask => return,
            ApprovalPolicy::ApproveAll if request.escalates(sandbox.0, sandbox.1) => request
                .deny(Some(
                    "ApprovalPolicy::ApproveAll does not lift the sandbox: the application must approve this call itself".into(),
                )),
            ApprovalPolicy::ApproveAll => request.approve(),
            ApprovalPolicy::ApproveSafe if request.risk_level == RiskLevel::Safe => {
                request.approve()
            }
            ApprovalPolicy::ApproveSafe => request.deny(Some(format!(
                "ApprovalPolicy::ApproveSafe: the call is rated {}",
                request.risk_level
            ))),
            ApprovalPolicy::DenyAll => request.deny(Some("ApprovalPolicy::DenyAll".into())),
        };
        if let Err(e) = answered {
            tracing::debug!(error = %e, "the approval was already settled");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core_models::{ApprovalAnswer, SandboxSummary, ToolCallRequest};
    use serde_json::json;
    use std::time::Duration;

    /// The decision `policy` makes for a call of `risk` whose process would run under
    /// `wants`, with the sandbox configured as `configured`: `Some(approved)`, or `None`
    /// when it is left open.
    fn check(
        policy: ApprovalPolicy,
        risk: RiskLevel,
        wants: Option<(SandboxMode, bool)>,
        configured: (SandboxMode, bool),
    ) -> Option<bool> {
        let mut call = ToolCallRequest::new("run_command", json!({"command": "x"}));
        call.risk_level = risk;
        let (event, mut answer) =
            ApprovalRequestEvent::create(uuid::Uuid::new_v4(), call, Duration::from_secs(1), 1);
        let event = event.with_sandbox(wants.map(|(mode, network)| SandboxSummary {
            mode,
            network,
            enforced: true,
            writable: Vec::new(),
            description: String::new(),
        }));
        policy.answer(&event, configured);
        match answer.try_recv() {
            Ok(ApprovalAnswer::Decided(d)) => Some(d.approved),
            _ => None,
        }
    }

    #[test]
    fn each_policy_decides_as_documented() {
        use ApprovalPolicy::*;
        use RiskLevel::*;
        let sandboxed = (SandboxMode::WorkspaceWrite, false);
        let configured = (SandboxMode::WorkspaceWrite, false);
        for (policy, risk, wants, expected) in [
            (Ask, High, Some(sandboxed), None),
            (DenyAll, Safe, None, Some(false)),
            (ApproveSafe, Safe, None, Some(true)),
            (ApproveSafe, Medium, None, Some(false)),
            (ApproveAll, Critical, Some(sandboxed), Some(true)),
            // A blanket approval never lifts the sandbox: not the network...
            (
                ApproveAll,
                Medium,
                Some((SandboxMode::WorkspaceWrite, true)),
                Some(false),
            ),
            // ...and not the sandbox itself.
            (
                ApproveAll,
                Medium,
                Some((SandboxMode::FullAccess, false)),
                Some(false),
            ),
        ] {
            assert_eq!(
                check(policy, risk, wants, configured),
                expected,
                "{policy:?} {risk:?} {wants:?}"
            );
        }
        // Where the sandbox is configured open, approving what it allows is no lift.
        let open = (SandboxMode::FullAccess, true);
        assert_eq!(
            check(
                ApproveAll,
                Medium,
                Some((SandboxMode::FullAccess, true)),
                open
            ),
            Some(true)
        );
    }
}
