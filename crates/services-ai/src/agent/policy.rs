//! Policy as code in the loop: the rules' verdict on a call, the hooks before and after
//! each call and at the request's start and end. Every decision is reported as a
//! `policy_decision` event.
//!
//! Before a call (see [`super::prepare`] for where this sits in the order): a rule that
//! forbids refuses the call, whoever approved it; then each `before_tool` hook in order —
//! one that denies, fails, times out or would change the call's arguments refuses it (a
//! changed call is never run silently: the change is shown in the refusal); the strictest
//! of the rules' and hooks' ask/allow is passed on to the route. After a call each
//! `after_tool` hook may add context, which is appended to the result the model reads.
//! The hooks see the call exactly as the model made it (after empty optional arguments
//! are dropped, which is how the tool receives it).

use super::run::{Outcome, Run, Stopped};
use core_models::{
    HookCall, HookDecision, HookEvent, HookPoint, HookReply, HookResult, PolicyDecision,
    PolicyDecisionEvent, PolicyOutcome, PolicySource, RuleVerdict, ToolCallRequest, ToolResult,
};
use std::time::Duration;

/// Longest an in-process hook may take (a program hook has its own timeout, shorter).
const HOOK_LIMIT: Duration = Duration::from_secs(120);
/// Most characters of a result or an answer a hook is told of.
const HOOK_TEXT_LIMIT: usize = 16 * 1024;
/// Most characters of context one hook may add to a result.
const CONTEXT_LIMIT: usize = 8 * 1024;

/// What the hooks before a call decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HookVerdict {
    /// No hook decided anything.
    Nothing,
    /// The strictest was allow or ask, with who said so and why.
    Decided(PolicyDecision, String),
    /// A hook refused the call: why.
    Denied(String),
}

/// `text`'s first [`HOOK_TEXT_LIMIT`] characters, and whether it was cut.
fn bounded(text: &str, limit: usize) -> (String, bool) {
    match text.char_indices().nth(limit) {
        Some((at, _)) => (text[..at].to_string(), true),
        None => (text.to_string(), false),
    }
}

impl Run {
    /// The rules' verdict on `call`, if any rule applies.
    pub(super) fn rule_verdict(&self, call: &ToolCallRequest) -> Option<RuleVerdict> {
        let rules = self.shared.ports.rules.as_ref()?;
        rules.decide(call, self.workspace.as_deref())
    }

    /// Report a rule's verdict.
    pub(super) fn report_rule(&self, call: &ToolCallRequest, verdict: &RuleVerdict) {
        let outcome = match verdict.decision {
            PolicyDecision::Allow => PolicyOutcome::Allow,
            PolicyDecision::Ask => PolicyOutcome::Ask,
            PolicyDecision::Forbid => PolicyOutcome::Forbid,
        };
        self.emit(
            PolicyDecisionEvent::create(
                self.request.request_id,
                PolicySource::Rule,
                verdict.rule.clone(),
                outcome,
                self.iteration,
            )
            .about(call.id, call.tool_id.clone())
            .because(Self::rule_reason(verdict)),
        );
    }

    /// Why a rule decided, beside its name: what it matched and its justification.
    fn rule_reason(verdict: &RuleVerdict) -> Option<String> {
        match (&verdict.matched, &verdict.justification) {
            (Some(m), Some(j)) => Some(format!("'{m}': {j}")),
            (Some(m), None) => Some(format!("'{m}'")),
            (None, j) => j.clone(),
        }
    }

    fn hook_event(&self, point: HookPoint) -> HookEvent {
        HookEvent::new(point, self.request.conversation_id, self.request.request_id)
            .with_workspace(self.workspace.as_deref())
    }

    /// The hooks registered at `point`, in order (owned, so no borrow is held across a wait).
    fn hooks_at(&self, point: HookPoint) -> Vec<std::sync::Arc<dyn core_models::Hook>> {
        let mut at = Vec::new();
        for hook in &self.shared.ports.hooks {
            if hook.point() == point {
                at.push(std::sync::Arc::clone(hook));
            }
        }
        at
    }

    fn hook_call(call: &ToolCallRequest) -> HookCall {
        HookCall {
            call_id: call.id,
            tool: call.tool_id.clone(),
            arguments: (*call.parameters).clone(),
            risk: call.risk_level,
        }
    }

    /// Run one hook, bounded in time and stopped with the request (except at its end).
    async fn run_hook(
        &self,
        hook: &dyn core_models::Hook,
        event: &HookEvent,
    ) -> Result<Result<HookReply, String>, Stopped> {
        let stop = self.handle.stop.clone();
        if event.event == HookPoint::RequestEnded {
            // The request has ended, maybe by being stopped: the hook is told all the same.
            return Ok(
                match tokio::time::timeout(HOOK_LIMIT, hook.handle(event)).await {
                    Ok(reply) => reply,
                    Err(_) => Err(format!("did not answer within {} s", HOOK_LIMIT.as_secs())),
                },
            );
        }
        tokio::select! {
            reply = tokio::time::timeout(HOOK_LIMIT, hook.handle(event)) => Ok(match reply {
                Ok(reply) => reply,
                Err(_) => Err(format!("did not answer within {} s", HOOK_LIMIT.as_secs())),
            }),
            _ = stop.cancelled() => Err(Stopped),
        }
    }

    fn report_hook(
        &self,
        name: &str,
        point: HookPoint,
        call: Option<&ToolCallRequest>,
        outcome: PolicyOutcome,
        reason: Option<String>,
    ) {
        let mut event = PolicyDecisionEvent::create(
            self.request.request_id,
            PolicySource::Hook,
            name,
            outcome,
            self.iteration,
        )
        .at(point)
        .because(reason);
        if let Some(call) = call {
            event = event.about(call.id, call.tool_id.clone());
        }
        self.emit(event);
    }

    /// The `before_tool` hooks' verdict on `call`, in order; the first that refuses ends
    /// it.
    pub(super) async fn before_tool_hooks(
        &self,
        call: &ToolCallRequest,
    ) -> Result<HookVerdict, Stopped> {
        let point = HookPoint::BeforeTool;
        let event = self.hook_event(point).with_call(Self::hook_call(call));
        let mut verdict = HookVerdict::Nothing;
        for hook in self.hooks_at(point) {
            let name = hook.name();
            let reply = match self.run_hook(hook.as_ref(), &event).await? {
                Ok(reply) => reply,
                Err(why) => {
                    let why = format!("hook {name} failed, so the call is refused: {why}");
                    self.report_hook(
                        &name,
                        point,
                        Some(call),
                        PolicyOutcome::Failed,
                        Some(why.clone()),
                    );
                    return Ok(HookVerdict::Denied(why));
                }
            };
            if let Some(changed) = reply.arguments.as_ref().filter(|a| *a != &*call.parameters) {
                let why = format!(
                    "hook {name} would run the call changed, which is never done without a person: it asked for the arguments {changed} instead of {}",
                    call.parameters
                );
                self.report_hook(
                    &name,
                    point,
                    Some(call),
                    PolicyOutcome::Deny,
                    Some(why.clone()),
                );
                return Ok(HookVerdict::Denied(why));
            }
            let reason = reply.reason.clone();
            let said = |what: &str| match &reason {
                Some(r) => format!("hook {name} {what}: {r}"),
                None => format!("hook {name} {what}"),
            };
            match reply.decision {
                Some(HookDecision::Deny) => {
                    let why = said("denies the call");
                    self.report_hook(&name, point, Some(call), PolicyOutcome::Deny, reason);
                    return Ok(HookVerdict::Denied(why));
                }
                Some(decision) => {
                    let (policy, outcome, what) = match decision {
                        HookDecision::Ask => (PolicyDecision::Ask, PolicyOutcome::Ask, "asks"),
                        _ => (
                            PolicyDecision::Allow,
                            PolicyOutcome::Allow,
                            "allows the call",
                        ),
                    };
                    self.report_hook(&name, point, Some(call), outcome, reason.clone());
                    let stricter = match &verdict {
                        HookVerdict::Decided(d, _) => policy > *d,
                        _ => true,
                    };
                    if stricter {
                        verdict = HookVerdict::Decided(policy, said(what));
                    }
                }
                None => self.report_hook(&name, point, Some(call), PolicyOutcome::Noted, reason),
            }
        }
        Ok(verdict)
    }

    /// The `after_tool` hooks for `call`: context they add is appended to `result`. A hook
    /// that fails is reported and adds nothing.
    pub(super) async fn after_tool_hooks(&self, call: &ToolCallRequest, result: &mut ToolResult) {
        let point = HookPoint::AfterTool;
        let hooks = self.hooks_at(point);
        if hooks.is_empty() {
            return;
        }
        let text = if result.success {
            result.content.clone()
        } else {
            result
                .error_message
                .clone()
                .unwrap_or_else(|| result.content.clone())
        };
        let (output, truncated) = bounded(&text, HOOK_TEXT_LIMIT);
        let event = self
            .hook_event(point)
            .with_call(Self::hook_call(call))
            .with_result(HookResult {
                success: result.success,
                output,
                truncated,
            });
        for hook in hooks {
            let name = hook.name();
            let reply = match self.run_hook(hook.as_ref(), &event).await {
                Ok(Ok(reply)) => reply,
                Ok(Err(why)) => {
                    self.report_hook(&name, point, Some(call), PolicyOutcome::Failed, Some(why));
                    continue;
                }
                Err(Stopped) => return,
            };
            match reply.context.filter(|c| !c.trim().is_empty()) {
                Some(context) => {
                    let (context, cut) = bounded(context.trim(), CONTEXT_LIMIT);
                    let note =
                        format!("\n\n[hook {name}] {context}{}", if cut { " …" } else { "" });
                    if result.success {
                        result.content.push_str(&note);
                    } else {
                        let message = result.error_message.get_or_insert_with(String::new);
                        message.push_str(&note);
                    }
                    self.report_hook(
                        &name,
                        point,
                        Some(call),
                        PolicyOutcome::Context,
                        Some(context),
                    );
                }
                None => {
                    self.report_hook(&name, point, Some(call), PolicyOutcome::Noted, reply.reason)
                }
            }
        }
    }

    /// Tell the hooks that the request was submitted.
    pub(super) async fn request_submitted_hooks(&self) {
        let event = self
            .hook_event(HookPoint::RequestSubmitted)
            .with_message(bounded(&self.request.message, HOOK_TEXT_LIMIT).0);
        self.notify(event).await;
    }

    /// Tell the hooks that the request ended, and how.
    pub(super) async fn request_ended_hooks(&self, outcome: &Outcome) {
        let name = match outcome {
            Outcome::Finished => "completed",
            Outcome::MaxIterations(_) => "max_iterations",
            Outcome::Budget(_) => "budget",
            Outcome::Cancelled => "cancelled",
            Outcome::Timeout => "timeout",
            Outcome::LlmFailed(_) | Outcome::Panicked(_) => "error",
            Outcome::InvalidOutput(_) => "invalid_output",
        };
        let answer = (!self.final_response.is_empty())
            .then(|| bounded(&self.final_response, HOOK_TEXT_LIMIT).0);
        let event = self
            .hook_event(HookPoint::RequestEnded)
            .with_outcome(name, answer);
        self.notify(event).await;
    }

    /// Tell every hook of `event`'s point; what they answer is reported, not acted on.
    async fn notify(&self, event: HookEvent) {
        let point = event.event;
        for hook in self.hooks_at(point) {
            let name = hook.name();
            let (outcome, reason) = match self.run_hook(hook.as_ref(), &event).await {
                Ok(Ok(reply)) => (PolicyOutcome::Noted, reply.reason),
                Ok(Err(why)) => (PolicyOutcome::Failed, Some(why)),
                Err(Stopped) => return,
            };
            self.report_hook(&name, point, None, outcome, reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::bounded;

    #[test]
    fn bounded_cuts_at_characters() {
        assert_eq!(bounded("héllo", 2), ("hé".to_string(), true));
        assert_eq!(bounded("hé", 2), ("hé".to_string(), false));
    }
}
