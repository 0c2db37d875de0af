//! `approval_request`: the event a person answers, and its answer handle
//! ([`ApprovalResponder`], shared by clones, never serialized).

use super::EventHeader;
use crate::error::Error;
use crate::serde_util::duration_ms;
use crate::tool::RiskLevel;
use crate::tool_call::{ApprovalDecision, RememberScope, ToolCallRequest};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------
// approval_request
// ---------------------------------------------------------------------------------------

/// What the agent receives for an approval request.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalAnswer {
    /// A person decided.
    Decided(ApprovalDecision),
    /// The approval was cancelled (the request is being cancelled).
    Cancelled,
}

/// The receiving end of an approval request, held by the agent. It resolves to the
/// answer, or to an error when every handle to the request was dropped unanswered.
pub type ApprovalReceiver = oneshot::Receiver<ApprovalAnswer>;

#[derive(Debug, Default)]
enum ResponderSlot {
    /// Not connected to a running agent (for example, deserialized).
    #[default]
    Detached,
    /// Waiting for the answer.
    Waiting(oneshot::Sender<ApprovalAnswer>),
    /// Answered already.
    Answered,
}

/// The answering end of an approval request. Clones share one answer: the first answer
/// wins, later ones get [`Error::ApprovalAlreadyAnswered`]. It is never serialized.
#[derive(Clone, Default)]
pub struct ApprovalResponder {
    slot: Arc<Mutex<ResponderSlot>>,
}

impl fmt::Debug for ApprovalResponder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalResponder")
            .field("waiting", &self.is_waiting())
            .finish()
    }
}

impl ApprovalResponder {
    /// A responder and the receiver that gets its answer.
    pub fn channel() -> (Self, ApprovalReceiver) {
        let (tx, rx) = oneshot::channel();
        (
            ApprovalResponder {
                slot: Arc::new(Mutex::new(ResponderSlot::Waiting(tx))),
            },
            rx,
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ResponderSlot> {
        // The slot holds no invariant a panicking holder could break half-way.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether an answer is still awaited by a live receiver.
    pub fn is_waiting(&self) -> bool {
        matches!(&*self.lock(), ResponderSlot::Waiting(tx) if !tx.is_closed())
    }

    /// Send the answer.
    ///
    /// # Errors
    /// [`Error::ApprovalAlreadyAnswered`] when answered before; [`Error::ApprovalClosed`]
    /// when nobody waits (detached, or the agent stopped waiting).
    pub fn respond(&self, answer: ApprovalAnswer) -> Result<(), Error> {
        let mut slot = self.lock();
        match std::mem::replace(&mut *slot, ResponderSlot::Answered) {
            ResponderSlot::Waiting(tx) => tx.send(answer).map_err(|_| Error::ApprovalClosed),
            ResponderSlot::Answered => Err(Error::ApprovalAlreadyAnswered),
            ResponderSlot::Detached => {
                *slot = ResponderSlot::Detached;
                Err(Error::ApprovalClosed)
            }
        }
    }
}

/// A tool call needs a person's approval. Answer it with [`ApprovalRequestEvent::approve`],
/// [`ApprovalRequestEvent::approve_with`], [`ApprovalRequestEvent::deny`] or
/// [`ApprovalRequestEvent::cancel`] (or through `AgentService::provide_approval`).
/// A request not answered within [`ApprovalRequestEvent::timeout`] counts as denied.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApprovalRequestEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The call waiting for approval.
    pub request: ToolCallRequest,
    /// What the call will do, in words.
    pub summary: String,
    /// Risk of this invocation.
    pub risk_level: RiskLevel,
    /// Details to review ("File: src/main.rs", "Command: rm -rf build").
    #[serde(default)]
    pub details: Vec<String>,
    /// Warnings ("This will delete files permanently").
    #[serde(default)]
    pub warnings: Vec<String>,
    /// How long the agent waits before treating silence as denial.
    #[serde(rename = "timeout_ms", with = "duration_ms")]
    pub timeout: Duration,
    /// The sandbox the call's process will run under, when it starts one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::SandboxSummary>,
    /// Why the call is put to a person even though its risk alone would not need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must_ask: Option<String>,
    /// The rule or hook that asks a person about this call (policy as code), in words.
    /// Such a call is a person's to answer: a blanket answer (`--approve all`, an
    /// unattended evaluation) refuses it instead of approving it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by_policy: Option<Box<String>>,
    /// The change the call would make to a file (writes and edits): a diff against the
    /// file as it is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Box<crate::FileChange>>,
    /// Where the answer goes; not serialized.
    #[serde(skip)]
    pub responder: ApprovalResponder,
}

impl ApprovalRequestEvent {
    /// An approval request for `call` and the receiver that will get the answer. Summary
    /// and risk come from the call.
    pub fn create(
        request_id: Uuid,
        call: ToolCallRequest,
        timeout: Duration,
        iteration: u32,
    ) -> (Self, ApprovalReceiver) {
        let (responder, receiver) = ApprovalResponder::channel();
        let event = ApprovalRequestEvent {
            header: EventHeader::new(request_id, iteration),
            summary: call.execution_summary.clone(),
            risk_level: call.risk_level,
            request: call,
            details: Vec::new(),
            warnings: Vec::new(),
            timeout,
            sandbox: None,
            must_ask: None,
            asked_by_policy: None,
            change: None,
            responder,
        };
        (event, receiver)
    }

    /// Set the details.
    pub fn with_details(mut self, details: Vec<String>) -> Self {
        self.details = details;
        self
    }

    /// Set the warnings.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }

    /// Set the sandbox the call will run under.
    pub fn with_sandbox(mut self, sandbox: Option<crate::SandboxSummary>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Say why a person is asked whatever the risk.
    pub fn with_must_ask(mut self, reason: Option<String>) -> Self {
        self.must_ask = reason;
        self
    }

    /// Say which rule or hook asks a person about the call.
    pub fn with_asked_by_policy(mut self, reason: Option<String>) -> Self {
        self.asked_by_policy = reason.map(Box::new);
        self
    }

    /// Set the file change the call would make.
    pub fn with_change(mut self, change: Option<crate::FileChange>) -> Self {
        self.change = change.map(Box::new);
        self
    }

    /// When the request expires.
    pub fn expires_at(&self) -> DateTime<Utc> {
        let timeout = chrono::Duration::from_std(self.timeout).unwrap_or(chrono::Duration::MAX);
        self.header
            .timestamp
            .checked_add_signed(timeout)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// Whether the request has expired.
    pub fn is_expired(&self) -> bool {
        Utc::now() > self.expires_at()
    }

    /// Time left before it expires (zero once expired).
    pub fn time_remaining(&self) -> Duration {
        (self.expires_at() - Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO)
    }

    /// Whether approving the call grants more than the configured sandbox (`mode`, with
    /// the network open or not): the network while it is closed, or no sandbox where there
    /// is one. Only a person should grant that, never a blanket policy.
    pub fn escalates(&self, mode: crate::SandboxMode, network: bool) -> bool {
        self.sandbox.as_ref().is_some_and(|s| {
            (s.network && !network)
                || (s.mode == crate::SandboxMode::FullAccess
                    && mode != crate::SandboxMode::FullAccess)
        })
    }

    /// Approve, remembering nothing.
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn approve(&self) -> Result<(), Error> {
        self.approve_with(RememberScope::None, None)
    }

    /// Approve, remembering as far as `remember` says, with parameters the user edited.
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn approve_with(
        &self,
        remember: RememberScope,
        modified_parameters: Option<Value>,
    ) -> Result<(), Error> {
        let mut decision = ApprovalDecision::approve()
            .remember(remember)
            .with_decision_duration(self.elapsed());
        decision.modified_parameters = modified_parameters;
        self.decide(decision)
    }

    /// Deny, with an optional reason.
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn deny(&self, reason: Option<String>) -> Result<(), Error> {
        self.decide(ApprovalDecision::deny(reason).with_decision_duration(self.elapsed()))
    }

    /// Answer with a prepared decision.
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn decide(&self, decision: ApprovalDecision) -> Result<(), Error> {
        self.responder.respond(ApprovalAnswer::Decided(decision))
    }

    /// Withdraw the request (the agent is being cancelled).
    ///
    /// # Errors
    /// See [`ApprovalResponder::respond`].
    pub fn cancel(&self) -> Result<(), Error> {
        self.responder.respond(ApprovalAnswer::Cancelled)
    }

    fn elapsed(&self) -> Duration {
        (Utc::now() - self.header.timestamp)
            .to_std()
            .unwrap_or(Duration::ZERO)
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!(
            "Approval needed: {} ({})",
            self.request.tool_name, self.risk_level
        )
    }
}
