//! One prompt turn: the request runs through the session's agent, its events go to the
//! client as session updates, approvals become permission requests, and the turn ends
//! with the stop reason the protocol names.

use super::convert::{self, Before};
use super::{AcpSession, Conn};
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionNotification, SessionUpdate, StopReason, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use core_models::{
    AgentEvent, AgentService as _, ApprovalDecision, ApprovalRequestEvent, CompletionReason,
    RememberScope, ToolCallRequest, ToolExecutionStatus,
};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What the client answered to a permission request.
enum Answer {
    Once,
    Always,
    Reject,
    RejectAlways,
    /// The client cancelled (after `session/cancel`) or the request failed.
    Cancelled(String),
}

const ALLOW_ONCE: &str = "allow-once";
const ALLOW_ALWAYS: &str = "allow-always";
const REJECT_ONCE: &str = "reject-once";
const REJECT_ALWAYS: &str = "reject-always";

fn options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_ALWAYS,
            "Allow for this session",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        PermissionOption::new(
            REJECT_ALWAYS,
            "Reject for this session",
            PermissionOptionKind::RejectAlways,
        ),
    ]
}

/// Ask the client about `a`.
async fn ask(
    cx: Conn,
    session_id: String,
    a: ApprovalRequestEvent,
    before: Before,
    workspace: std::path::PathBuf,
) -> (ApprovalRequestEvent, Answer) {
    let summary = if a.details.is_empty() {
        a.summary.clone()
    } else {
        format!("{}\n{}", a.summary, a.details.join("\n"))
    };
    let call = convert::asking(&a.request, &workspace, &before, &summary);
    let request = RequestPermissionRequest::new(session_id, call, options());
    let answer = match super::ask_permission(&cx, request).await {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(chosen) => match &*chosen.option_id.0 {
                ALLOW_ONCE => Answer::Once,
                ALLOW_ALWAYS => Answer::Always,
                REJECT_ALWAYS => Answer::RejectAlways,
                _ => Answer::Reject,
            },
            RequestPermissionOutcome::Cancelled => {
                Answer::Cancelled("the client cancelled the question".into())
            }
            _ => Answer::Reject,
        },
        Err(e) => Answer::Cancelled(format!("the client did not answer: {e}")),
    };
    (a, answer)
}

/// New prompt tokens from which reading the prompt is said in words.
const LONG_PROMPT: u64 = 256;

/// Run `text` as the session's next request; the stop reason, or an error in words.
pub(crate) async fn run(
    cx: Conn,
    acp: Arc<AcpSession>,
    text: String,
) -> Result<StopReason, String> {
    let session = acp.session.lock().await;
    let session_id = session.id().to_string();
    let workspace = session.workspace().to_path_buf();
    let mode = acp.mode();
    let mut request = session.request(text);
    let mut context = request.tool_context.take().unwrap_or_default();
    mode.restrict(&mut context);
    request.tool_context = Some(context);
    acp.cancelled.store(false, Ordering::SeqCst);
    let send = |update: SessionUpdate| {
        if let Err(e) = super::notify(&cx, SessionNotification::new(session_id.clone(), update)) {
            tracing::debug!(error = %e, "an update was not sent");
        }
    };
    let mut events = session.start_request(request)?;
    let mut asks = FuturesUnordered::new();
    let mut calls: HashMap<uuid::Uuid, (ToolCallRequest, Before)> = HashMap::new();
    let mut started: HashSet<uuid::Uuid> = HashSet::new();
    let mut hit_limit = false;
    let mut reply_ended = false;
    let mut text_since_call = false;
    let mut reason = None;
    let mut usage = None;
    let mut error = None;
    loop {
        tokio::select! {
            event = events.next() => {
                let Some(event) = event else { break };
                match event {
                    AgentEvent::PromptProgress(p) => {
                        // Reading a long prompt on a CPU takes a while: the editor is told
                        // once, in words, and on every step by an extension notification
                        // when it asked for them.
                        let new = p.tokens_total.saturating_sub(p.tokens_cached);
                        if p.tokens_done == p.tokens_cached && new >= LONG_PROMPT {
                            send(convert::chunk(
                                &format!("(reading the prompt: {new} new tokens of {})\n", p.tokens_total),
                                true,
                            ));
                        }
                        if acp.progress_notices {
                            let params = serde_json::json!({
                                "sessionId": session_id,
                                "done": p.tokens_done,
                                "total": p.tokens_total,
                                "cached": p.tokens_cached,
                                "tokensPerSecond": p.tokens_per_second,
                            });
                            if let Err(e) = super::notify_ext(&cx, "_aintern/prompt_progress", params) {
                                tracing::debug!(error = %e, "a progress report was not sent");
                            }
                        }
                    }
                    AgentEvent::TextGeneration(t) if !t.is_complete && !t.token.is_empty() => {
                        // A reply asked for again after one that said something, with no
                        // call between: its text is a paragraph of its own.
                        if std::mem::take(&mut reply_ended) && text_since_call {
                            send(convert::chunk("\n\n", t.is_thinking));
                        }
                        text_since_call = true;
                        send(convert::chunk(&t.token, t.is_thinking));
                    }
                    AgentEvent::TextGeneration(t) => {
                        hit_limit = t.usage.as_ref().is_some_and(|u| u.hit_token_limit);
                        reply_ended = true;
                    }
                    // The plan tool shows as the plan (a `plan` update), not as a call.
                    AgentEvent::ToolCallRequest(r) if r.request.tool_id == core_models::PLAN_TOOL_ID => {}
                    AgentEvent::ToolExecution(e) if e.tool_id == core_models::PLAN_TOOL_ID => {}
                    AgentEvent::ToolResult(r) if r.tool_id == core_models::PLAN_TOOL_ID && r.result.success => {}
                    AgentEvent::ToolCallRequest(r) => {
                        text_since_call = false;
                        let before = convert::before(&r.request, &workspace);
                        send(SessionUpdate::ToolCall(convert::tool_call(&r.request, &workspace)));
                        calls.insert(r.request.id, (r.request, before));
                    }
                    AgentEvent::ToolExecution(e) if e.status == ToolExecutionStatus::Starting => {
                        send(SessionUpdate::ToolCallUpdate(starting(&mut calls, e.call_id, &workspace)));
                        started.insert(e.call_id);
                    }
                    AgentEvent::ToolResult(r) => {
                        // A call that never started (a repeat, a call refused) changed
                        // nothing: its result comes without a diff.
                        let known = calls.get(&r.call_id).filter(|_| started.contains(&r.call_id));
                        let before = known.map_or(Before::Unknown, |(_, b)| b.clone());
                        send(SessionUpdate::ToolCallUpdate(convert::finished(
                            known.map(|(c, _)| c),
                            &r.call_id.to_string(),
                            &r.result,
                            &workspace,
                            &before,
                            acp.client_writes,
                        )));
                    }
                    AgentEvent::ApprovalRequest(a) => {
                        let settled = session
                            .answers_itself(&a)
                            .or_else(|| mode.settles(&a));
                        match settled {
                            Some(Err(e)) => tracing::debug!(error = %e, "approval already settled"),
                            Some(Ok(())) => {}
                            None => {
                                let before = calls
                                    .get(&a.request.id)
                                    .map_or_else(|| convert::before(&a.request, &workspace), |(_, b)| b.clone());
                                asks.push(ask(cx.clone(), session_id.clone(), a, before, workspace.clone()));
                            }
                        }
                    }
                    AgentEvent::PlanUpdated(p) => send(convert::plan(&p)),
                    AgentEvent::PolicyDecision(p) => session.policy(&p),
                    AgentEvent::AgentError(e) if e.is_fatal => error = Some(e.error),
                    AgentEvent::AgentComplete(done) => {
                        usage = Some((done.prompt_tokens, done.completion_tokens, done.cached_prompt_tokens));
                        reason = Some(done.reason);
                    }
                    _ => {}
                }
            }
            Some((a, answer)) = asks.next(), if !asks.is_empty() => {
                if matches!(answer, Answer::Cancelled(_)) {
                    // The client cancelled the question (it does after session/cancel):
                    // the turn ends, cancelled.
                    acp.cancelled.store(true, Ordering::SeqCst);
                    acp.engine.cancel();
                }
                settle(&session, &a, answer);
            }
        }
    }
    session.finish_request(usage);
    if acp.cancelled.load(Ordering::SeqCst) {
        return Ok(StopReason::Cancelled);
    }
    Ok(match reason {
        Some(CompletionReason::Cancelled) => StopReason::Cancelled,
        Some(CompletionReason::MaxIterations) => StopReason::MaxTurnRequests,
        Some(CompletionReason::BudgetExceeded) => StopReason::MaxTokens,
        Some(CompletionReason::Error | CompletionReason::Timeout) => {
            return Err(error.unwrap_or_else(|| "the request failed".into()));
        }
        _ if hit_limit => StopReason::MaxTokens,
        _ => StopReason::EndTurn,
    })
}

/// The update that says the call `id` started, with the change it makes to its file (the
/// file's text read again now: calls before it in the reply may have changed it; the
/// result's diff is made from it).
fn starting(
    calls: &mut HashMap<uuid::Uuid, (ToolCallRequest, Before)>,
    id: uuid::Uuid,
    workspace: &std::path::Path,
) -> ToolCallUpdate {
    let mut fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
    if let Some((request, before)) = calls.get_mut(&id) {
        *before = convert::before(request, workspace);
        if let Some(change) = convert::change_of(request, workspace, before) {
            fields = fields.content(vec![change]);
        }
    }
    ToolCallUpdate::new(id.to_string(), fields)
}

/// Answer `a` as the client said; "always" is remembered for the session, as at the
/// terminal.
fn settle(session: &crate::session::Session, a: &ApprovalRequestEvent, answer: Answer) {
    let decision = match answer {
        Answer::Once => ApprovalDecision::approve(),
        Answer::Always => ApprovalDecision::approve().remember(RememberScope::Session),
        Answer::Reject => ApprovalDecision::deny(Some("rejected in the editor".into())),
        Answer::RejectAlways => ApprovalDecision::deny(Some("rejected in the editor".into()))
            .remember(RememberScope::Session),
        Answer::Cancelled(why) => {
            if let Err(e) = a.deny(Some(why)) {
                tracing::debug!(error = %e, "approval already settled");
            }
            return;
        }
    };
    let remembered = decision.remember_scope() == RememberScope::Session;
    match a.decide(decision.clone()) {
        Ok(()) if remembered => session.remember(&a.request, &decision),
        Ok(()) => {}
        Err(e) => tracing::debug!(error = %e, "approval already settled"),
    }
}
