//! What a front-end that drives a request's events itself (`aintern acp`) uses of a
//! session: starting and finishing a request, `--approve`, remembered answers, the
//! conversation.

use super::Session;
use crate::approve::answer_by_mode;
use core_models::{AgentRequest, AgentService as _, ApprovalRequestEvent};

impl Session {
    /// Start `request` (a front-end of its own drives its events: `aintern acp`), the
    /// session's record of it begun.
    pub(crate) fn start_request(
        &self,
        request: AgentRequest,
    ) -> Result<core_models::EventStream, String> {
        let _ = self.saved.announce(request.request_id);
        self.saved
            .asked(&core_models::ChatMessage::user(request.message.clone()));
        self.agent
            .engine()
            .process_message(request)
            .map_err(|e| e.to_string())
    }

    /// The session's tools as a catalog: what describes a call from its arguments.
    pub(crate) fn catalog(&self) -> services_ai::ToolCatalog {
        services_ai::ToolCatalog::Registry(std::sync::Arc::clone(&self.registry))
    }

    /// Save what a request started with [`Session::start_request`] left, with its token
    /// counts (prompt, completion, cached).
    pub(crate) fn finish_request(&self, usage: Option<(u64, u64, u64)>) {
        if let Err(e) = self.saved.ended(self.agent.engine().conversation(), usage) {
            tracing::warn!("the session was not saved: {e}");
        }
    }

    /// Answer `a` by `--approve`, when it was given.
    pub(crate) fn answers_itself(
        &self,
        a: &ApprovalRequestEvent,
    ) -> Option<Result<(), core_models::Error>> {
        let mode = self.approve?;
        answer_by_mode(a, mode, self.launcher.settings());
        Some(Ok(()))
    }

    /// Keep `decision` about `request` with the saved session (an "always for this
    /// session" answer).
    pub(crate) fn remember(
        &self,
        request: &core_models::ToolCallRequest,
        decision: &core_models::ApprovalDecision,
    ) {
        self.saved.remembered(request, decision);
    }

    /// Keep a decision of a rule or hook with the saved session.
    pub(crate) fn policy(&self, decision: &core_models::PolicyDecisionEvent) {
        self.saved.policy(decision);
    }

    /// The conversation so far, as saved.
    pub(crate) fn history(&self) -> Vec<core_models::ChatMessage> {
        self.saved.history()
    }
}
