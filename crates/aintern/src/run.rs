//! A running request ([`Run`]) and its outcome ([`Reply`]).

use crate::approval::ApprovalPolicy;
use crate::error::{Error, Result};
use core_models::{
    AgentCompleteEvent, AgentEvent, AgentService as _, CompletionReason, EventStream, SandboxMode,
    ToolResultEvent,
};
use futures::{Stream, StreamExt};
use services_ai::AgentEngine;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A running request: a [`Stream`] of its events, also readable with [`Run::next`]
/// (no `StreamExt` needed). Approval requests are answered by the agent's
/// [`ApprovalPolicy`] before they are handed on. Dropping the run cancels the request.
#[must_use = "a request runs only while its events are read"]
pub struct Run {
    events: EventStream,
    engine: AgentEngine,
    policy: ApprovalPolicy,
    sandbox: (SandboxMode, bool),
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Run {
    pub(crate) fn new(
        events: EventStream,
        engine: AgentEngine,
        policy: ApprovalPolicy,
        sandbox: (SandboxMode, bool),
    ) -> Self {
        Run {
            events,
            engine,
            policy,
            sandbox,
        }
    }

    /// The next event; `None` once the request has ended.
    pub async fn next(&mut self) -> Option<AgentEvent> {
        StreamExt::next(self).await
    }

    /// Cancel the request: the run ends with `agent_complete` (reason `cancelled`).
    pub fn cancel(&self) {
        self.engine.cancel();
    }

    /// Read the rest of the request and return its outcome. Approval requests the policy
    /// leaves open ([`ApprovalPolicy::Ask`]) are denied: nobody is reading to answer them.
    ///
    /// # Errors
    /// [`Error::Failed`] when the request ends without an answer (the model failed, the
    /// request timed out or ran out of budget); the reason the agent gave is kept.
    pub async fn reply(mut self) -> Result<Reply> {
        let mut tool_results = Vec::new();
        let mut fatal = None;
        let mut completion = None;
        while let Some(event) = self.next().await {
            match event {
                AgentEvent::ApprovalRequest(a) => {
                    if let Err(e) = a.deny(Some(
                        "nobody answers approvals in Run::reply: choose an ApprovalPolicy, or read the run's events and answer them".into(),
                    )) {
                        tracing::debug!(error = %e, "the approval was already settled");
                    }
                }
                AgentEvent::ToolResult(r) => tool_results.push(r),
                AgentEvent::AgentError(e) if e.is_fatal => fatal = Some(e.error),
                AgentEvent::AgentComplete(c) => completion = Some(c),
                _ => {}
            }
        }
        match completion {
            Some(c) if matches!(c.reason, CompletionReason::Error) => Err(Error::Failed(
                fatal
                    .or(c.stop_message)
                    .unwrap_or_else(|| "the agent failed".into()),
            )),
            Some(completion) => Ok(Reply {
                completion,
                tool_results,
            }),
            None => {
                Err(Error::Failed(fatal.unwrap_or_else(|| {
                    "the request ended without completing".into()
                })))
            }
        }
    }
}

impl Stream for Run {
    type Item = AgentEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = self.get_mut();
        let polled = this.events.poll_next_unpin(cx);
        if let Poll::Ready(Some(AgentEvent::ApprovalRequest(a))) = &polled {
            this.policy.answer(a, this.sandbox);
        }
        polled
    }
}

/// How a request ended: the answer, the calls' results, and the completion's figures.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The `agent_complete` event: the answer, why the request stopped, iterations,
    /// calls run and denied, tokens and time.
    pub completion: AgentCompleteEvent,
    /// Every call's result, in the order they came (denied calls included:
    /// `result.denied`).
    pub tool_results: Vec<ToolResultEvent>,
}

impl Reply {
    /// The model's answer.
    pub fn text(&self) -> &str {
        &self.completion.final_response
    }

    /// Why the request stopped (finished, cancelled, the iteration limit, …).
    pub fn reason(&self) -> CompletionReason {
        self.completion.reason
    }

    /// The calls that were not approved.
    pub fn denied(&self) -> impl Iterator<Item = &ToolResultEvent> {
        self.tool_results.iter().filter(|r| r.result.denied)
    }
}
