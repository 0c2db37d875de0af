//! Asking a person: the approval request (details, warnings, the sandbox, why it is
//! asked), the answer or its timeout, remembering the decision, and a call the person
//! edited (validated, assessed and put to the deny rules again).

use super::guard::guarded;
use super::run::{Prepared, Run, Stopped};
use super::{lock, StopReason};
use core_models::{
    AgentErrorCategory, AgentErrorEvent, ApprovalAnswer, ApprovalDecision, ApprovalRequestEvent,
    CallAssessment, RiskLevel, Tool, ToolCallRequest, ToolCategory, ToolDefinition, ToolResult,
};
use serde_json::Value;
use std::fmt::Write as _;
use std::sync::Arc;

impl Run {
    /// Ask for approval of one call and wait for the answer (or its timeout).
    pub(super) async fn ask(
        &mut self,
        call: ToolCallRequest,
        tool: Arc<dyn Tool>,
        assessment: CallAssessment,
        policy: Option<String>,
    ) -> Result<Prepared, Stopped> {
        let timeout = self.shared.config.approval_timeout();
        // The tool's code, before anyone is asked: a panic fails this call only.
        let definition = match super::guard::definition(tool.as_ref()) {
            Ok(definition) => definition,
            Err(panic) => {
                let result = self.tool_panicked(&call, "definition", &panic);
                return Ok(Prepared::Settled { call, result });
            }
        };
        let workspace = self.workspace.as_deref();
        let change = match guarded(|| tool.preview_change(&call.parameters, workspace)) {
            Ok(change) => change,
            Err(panic) => {
                let result = self.tool_panicked(&call, "preview_change", &panic);
                return Ok(Prepared::Settled { call, result });
            }
        };
        let (event, rx) = ApprovalRequestEvent::create(
            self.request.request_id,
            call.clone(),
            timeout,
            self.iteration,
        );
        let event = event
            .with_details(approval_details(&call, definition, &assessment))
            .with_warnings(approval_warnings(&call, definition, &assessment))
            .with_sandbox(assessment.sandbox.clone())
            .with_must_ask(assessment.must_ask.clone().or_else(|| policy.clone()))
            .with_asked_by_policy(policy)
            .with_change(change);
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
                self.count_denial();
                let result = ToolResult::denied(format!(
                    "Not approved: nobody answered within {}s, which counts as a denial",
                    timeout.as_secs()
                ));
                return Ok(Prepared::Settled { call, result });
            }
        };
        self.remember(&call, &decision).await;
        if !decision.approved {
            self.count_denial();
            let reason = decision.reason.as_deref().unwrap_or("no reason given");
            let result = ToolResult::denied(format!("Denied by the user: {reason}"));
            return Ok(Prepared::Settled { call, result });
        }
        Ok(match decision.modified_parameters {
            Some(params) => self.edited(call, tool, params).await,
            None => Prepared::Run {
                person: Some(call.risk_level),
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
        call.set_parameters(parameters);
        call.permission_subjects = None;
        if let Err(result) = self.validate_and_assess(
            &mut call,
            tool.as_ref(),
            "Validation of the edited parameters",
        ) {
            return Prepared::Settled { call, result };
        }
        let permission = match self.check_permission(&call).await {
            Ok(permission) => permission,
            Err(result) => return Prepared::Settled { call, result },
        };
        match self.deny_reason(&call, &permission).await {
            Some(why) => {
                self.count_denial();
                let result =
                    ToolResult::denied(format!("Denied by the permission settings: {why}"));
                Prepared::Settled { call, result }
            }
            None => Prepared::Run {
                person: Some(call.risk_level),
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
    definition: &ToolDefinition,
    assessment: &CallAssessment,
) -> Vec<String> {
    let mut details = vec![format!("Tool: {} ({})", definition.name, call.tool_id)];
    for key in core_models::MAIN_ARGUMENT_KEYS {
        if let Some(value) = call.parameters.get(key).and_then(|v| v.as_str()) {
            let mut label = key.replace('_', " ");
            if let Some(first) = label.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            details.push(format!("{label}: {}", shown(value)));
        }
    }
    details.push(format!("Parameters: {}", shown_json(&call.parameters)));
    // The rating once, with each of its reasons once.
    let mut reasons: Vec<&str> = Vec::new();
    for reason in &assessment.reasons {
        if !reasons.contains(&reason.as_str()) {
            reasons.push(reason);
        }
    }
    if !reasons.is_empty() {
        details.push(format!("Rated {}: {}", call.risk_level, reasons.join("; ")));
    }
    if let Some(sandbox) = &assessment.sandbox {
        details.push(format!("Sandbox: {}", sandbox.description));
    }
    details
}

/// How much of one value the approval details show, at its start and at its end: they
/// are read by a person (the end of a long command matters as much as its start), and the
/// whole call is in the event's `request`.
const SHOWN_HEAD: usize = 3072;
const SHOWN_TAIL: usize = 1024;

/// `text` for the approval details: whole when short, else its start and its end around a
/// note of what was cut.
fn shown(text: &str) -> String {
    let mut excerpt = Excerpt::default();
    excerpt.push(text);
    excerpt.finish()
}

/// `value` as compact JSON, shown like [`shown`], written out piece by piece: no copy of
/// the whole text is made.
fn shown_json(value: &Value) -> String {
    let mut excerpt = Excerpt::default();
    if write!(excerpt, "{value}").is_err() {
        return "(not shown: the parameters could not be written as JSON)".to_string();
    }
    excerpt.finish()
}

/// The start and the end of a text written to it piece by piece, and its size.
#[derive(Default)]
struct Excerpt {
    head: String,
    /// The head is complete: what follows goes to the tail.
    head_full: bool,
    /// The latest text after the head: at least its last [`SHOWN_TAIL`] bytes (whole
    /// characters), at most about twice as much.
    tail: String,
    total: usize,
}

impl Excerpt {
    fn push(&mut self, mut s: &str) {
        self.total = self.total.saturating_add(s.len());
        if !self.head_full {
            let end = floor_boundary(s, SHOWN_HEAD.saturating_sub(self.head.len()));
            self.head.push_str(&s[..end]);
            s = &s[end..];
            // A piece that did not fit whole ends the head, so nothing is skipped.
            self.head_full = !s.is_empty();
        }
        if s.len() >= SHOWN_TAIL {
            // Only the end of a long piece can be part of the tail.
            self.tail.clear();
            s = &s[floor_boundary(s, s.len() - SHOWN_TAIL)..];
        }
        self.tail.push_str(s);
        if self.tail.len() > 2 * SHOWN_TAIL {
            let keep_from = floor_boundary(&self.tail, self.tail.len() - SHOWN_TAIL);
            self.tail.drain(..keep_from);
        }
    }

    fn finish(mut self) -> String {
        if self.total <= SHOWN_HEAD + SHOWN_TAIL {
            self.head.push_str(&self.tail);
            return self.head;
        }
        let from = ceil_boundary(&self.tail, self.tail.len().saturating_sub(SHOWN_TAIL));
        let tail = &self.tail[from..];
        let cut = self.total - self.head.len() - tail.len();
        format!(
            "{} … [{cut} of {} bytes not shown; the full call is in the request] … {tail}",
            self.head, self.total
        )
    }
}

impl std::fmt::Write for Excerpt {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push(s);
        Ok(())
    }
}

/// The largest character boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary of `s` at or above `at`.
fn ceil_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

fn approval_warnings(
    call: &ToolCallRequest,
    definition: &ToolDefinition,
    assessment: &CallAssessment,
) -> Vec<String> {
    let mut warnings = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `text` written to an [`Excerpt`] in uneven pieces.
    fn piecewise(text: &str) -> String {
        let mut excerpt = Excerpt::default();
        let (mut rest, mut size) = (text, 1);
        while !rest.is_empty() {
            let end = ceil_boundary(rest, size);
            excerpt.push(&rest[..end]);
            rest = &rest[end..];
            size = size * 7 % 1500 + 1;
        }
        excerpt.finish()
    }

    #[test]
    fn the_rating_is_given_once_with_all_its_reasons() {
        let call = ToolCallRequest::new("run_command", json!({"command": "python3 x.py > o"}));
        let definition = ToolDefinition::new("run_command", "Run Command", "Run a command");
        let assessment =
            CallAssessment::new(RiskLevel::Medium, Default::default()).with_reasons(vec![
                "writes to a file".into(),
                "'python3' runs code".into(),
                "writes to a file".into(),
            ]);
        let details = approval_details(&call, &definition, &assessment);
        let rated: Vec<&String> = details.iter().filter(|d| d.starts_with("Rated")).collect();
        assert_eq!(
            rated,
            ["Rated medium: writes to a file; 'python3' runs code"],
            "{details:?}"
        );
        let none = CallAssessment::new(RiskLevel::Medium, Default::default());
        let details = approval_details(&call, &definition, &none);
        assert!(
            !details.iter().any(|d| d.starts_with("Rated")),
            "{details:?}"
        );
    }

    #[test]
    fn short_values_are_shown_whole() {
        for n in [0, 1, 3072, 4095, 4096] {
            let text = "é".repeat(n / 2) + &"a".repeat(n % 2);
            assert_eq!(shown(&text), text);
            assert_eq!(piecewise(&text), text);
        }
        let value = json!({"a": "x\n\"y\"", "b": [1, 2.5, null]});
        assert_eq!(shown_json(&value), value.to_string());
    }

    #[test]
    fn long_values_show_their_start_and_end_and_what_was_cut() {
        for len in [4097, 5000, 20_000, 300_000] {
            let text: String = (0..len)
                .map(|i| match i % 5 {
                    0 => 'é',
                    1 => '🎉',
                    n => char::from(b'a' + n as u8),
                })
                .collect();
            let whole = shown(&text);
            assert_eq!(piecewise(&text), whole, "pieces change nothing");
            let (head, rest) = whole.split_once(" … [").unwrap();
            let (note, tail) = rest.split_once("] … ").unwrap();
            assert!(text.starts_with(head) && text.ends_with(tail));
            assert!(head.len() > SHOWN_HEAD - 4 && head.len() <= SHOWN_HEAD);
            assert!(tail.len() > SHOWN_TAIL - 4 && tail.len() <= SHOWN_TAIL);
            let cut = text.len() - head.len() - tail.len();
            assert_eq!(
                note,
                format!(
                    "{cut} of {} bytes not shown; the full call is in the request",
                    text.len()
                )
            );
        }
        let value = json!({"command": "echo ".to_string() + &"x".repeat(10_000) + " && rm -rf ~"});
        let json = shown_json(&value);
        assert!(json.len() < SHOWN_HEAD + SHOWN_TAIL + 100, "{}", json.len());
        assert!(json.starts_with("{\"command\":\"echo xxx"));
        assert!(
            json.ends_with("xxx && rm -rf ~\"}"),
            "the end of a long call is shown"
        );
    }
}
