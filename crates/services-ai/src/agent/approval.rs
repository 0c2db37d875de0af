//! Asking a person: the approval request (details, warnings, the sandbox, why it is
//! asked), the answer or its timeout, remembering the decision, and a call the person
//! edited (validated, assessed and put to the deny rules again).

use super::run::{Prepared, Run, Stopped};
use super::{lock, StopReason};
use core_models::{
    AgentErrorCategory, AgentErrorEvent, ApprovalAnswer, ApprovalDecision, ApprovalRequestEvent,
    CallAssessment, RiskLevel, Tool, ToolCallRequest, ToolCategory, ToolResult,
};
use serde_json::Value;
use std::sync::Arc;

impl Run {
    /// Ask for approval of one call and wait for the answer (or its timeout).
    pub(super) async fn ask(
        &mut self,
        call: ToolCallRequest,
        tool: Arc<dyn Tool>,
        assessment: CallAssessment,
    ) -> Result<Prepared, Stopped> {
        let timeout = self.shared.config.approval_timeout();
        let (event, rx) = ApprovalRequestEvent::create(
            self.request.request_id,
            call.clone(),
            timeout,
            self.iteration,
        );
        let event = event
            .with_details(approval_details(&call, tool.as_ref(), &assessment))
            .with_warnings(approval_warnings(&call, tool.as_ref(), &assessment))
            .with_sandbox(assessment.sandbox.clone())
            .with_must_ask(assessment.must_ask.clone());
        lock(&self.handle.approvals).insert(call.id, event.responder.clone());
        self.emit(event);
        let stop = self.handle.stop.clone();
        let answer = tokio::select! {
            answer = rx => answer.ok(),
            _ = tokio::time::sleep(timeout) => None,
            _ = stop.cancelled() => {
                lock(&self.handle.approvals).remove(&call.id);
                return Err(Stopped);
            }
        };
        lock(&self.handle.approvals).remove(&call.id);
        let decision = match answer {
            Some(ApprovalAnswer::Decided(d)) => d,
            Some(ApprovalAnswer::Cancelled) => {
                self.handle.stop(StopReason::Cancelled);
                return Err(Stopped);
            }
            None => {
                let result = ToolResult::failed(format!(
                    "Not approved: nobody answered within {}s, which counts as a denial",
                    timeout.as_secs()
                ));
                return Ok(Prepared::Settled { call, result });
            }
        };
        self.remember(&call, &decision).await;
        if !decision.approved {
            let reason = decision.reason.as_deref().unwrap_or("no reason given");
            let result = ToolResult::failed(format!("Denied by the user: {reason}"));
            return Ok(Prepared::Settled { call, result });
        }
        Ok(match decision.modified_parameters {
            Some(params) => self.edited(call, tool, params).await,
            None => Prepared::Run {
                call,
                tool,
                approved: true,
            },
        })
    }

    /// A call whose parameters the person edited while approving: validated and assessed
    /// again, and still refused by a deny rule that matches it now.
    async fn edited(
        &self,
        mut call: ToolCallRequest,
        tool: Arc<dyn Tool>,
        parameters: Value,
    ) -> Prepared {
        call.parameters = parameters;
        call.permission_subjects = None;
        if let Err(result) = self.validate_and_assess(
            &mut call,
            tool.as_ref(),
            "Validation of the edited parameters",
        ) {
            return Prepared::Settled { call, result };
        }
        match self.check_permission(&call).await {
            Err(result) => Prepared::Settled { call, result },
            Ok(permission) if permission.is_denied() => {
                let why = permission.denial_reason.unwrap_or_else(|| "denied".into());
                let result =
                    ToolResult::failed(format!("Denied by the permission settings: {why}"));
                Prepared::Settled { call, result }
            }
            Ok(_) => Prepared::Run {
                call,
                tool,
                approved: true,
            },
        }
    }

    async fn remember(&self, call: &ToolCallRequest, decision: &ApprovalDecision) {
        if decision.remember_scope() == core_models::RememberScope::None {
            return;
        }
        let conversation = self.request.conversation_id;
        if let Err(e) = self
            .shared
            .ports
            .permissions
            .remember_decision(conversation, call, decision)
            .await
        {
            self.emit(
                AgentErrorEvent::new(
                    self.request.request_id,
                    AgentErrorCategory::PermissionError,
                    format!("Could not remember the decision for {}: {e}", call.tool_id),
                    false,
                    self.iteration,
                )
                .with_source(e),
            );
        }
    }
}

fn approval_details(
    call: &ToolCallRequest,
    tool: &dyn Tool,
    assessment: &CallAssessment,
) -> Vec<String> {
    let mut details = vec![format!(
        "Tool: {} ({})",
        tool.definition().name,
        call.tool_id
    )];
    for key in core_models::MAIN_ARGUMENT_KEYS {
        if let Some(value) = call.parameters.get(key).and_then(|v| v.as_str()) {
            let mut label = key.replace('_', " ");
            if let Some(first) = label.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            details.push(format!("{label}: {value}"));
        }
    }
    details.push(format!("Parameters: {}", call.parameters));
    if let Some(sandbox) = &assessment.sandbox {
        details.push(format!("Sandbox: {}", sandbox.description));
    }
    details
}

fn approval_warnings(
    call: &ToolCallRequest,
    tool: &dyn Tool,
    assessment: &CallAssessment,
) -> Vec<String> {
    let mut warnings = Vec::new();
    let definition = tool.definition();
    if call.risk_level >= RiskLevel::High {
        warnings.push(format!(
            "This call is rated {} risk: review it carefully",
            call.risk_level
        ));
    }
    if definition.modifies_files {
        warnings.push("This changes files in the workspace".to_string());
    }
    if definition.category == ToolCategory::Terminal {
        warnings.push("This runs a command on your machine".to_string());
    }
    if definition.category == ToolCategory::Network {
        warnings.push("This talks to the network".to_string());
    }
    if let Some(sandbox) = assessment.sandbox.as_ref().filter(|s| !s.enforced) {
        warnings.push(format!(
            "No sandbox is enforced ({}): the command may do anything you may do",
            sandbox.mode
        ));
    }
    warnings
}
