//! Preparing the calls of one reply: repeats, lookup, validation and the tool's assessment
//! (risk, permission subjects, sandbox, forced question) first, for every call; then, call
//! by call, the permission check and, when needed, a person's approval.
//!
//! Who decides, in order:
//! 1. a rule that forbids the call (`core_models::CallRules`) and the permission manager's
//!    deny rules refuse (they always win, whoever approves), and so is a call that cannot
//!    be checked against the tool's deny patterns (its subjects are incomplete or empty):
//!    deny patterns fail closed; then the `before_tool` hooks, in order: one that denies,
//!    fails or would change the call refuses it (see [`super::policy`]);
//! 2. a critical call, or one the tool says a person must be asked about (`must_ask`: a
//!    command without a sandbox, a request for the network or for full access), goes to a
//!    person, whatever allowed it — remembered decisions included;
//! 3. the strictest of the rules' and the hooks' verdicts: ask goes to a person (whatever
//!    was remembered, whatever the approval level), allow runs without asking;
//! 4. a decision the person asked to have remembered (the manager's `was_cached`) or a
//!    session permission in the request's [`ToolAvailabilityContext`] allows;
//! 5. the manager's risk rule or the request's `max_auto_approval_risk_level` allows;
//! 6. a person is asked.
//!
//! A call that runs after an earlier call of its reply could have changed what it touches
//! goes through these steps again first ([`super::recheck`]).
//!
//! [`ToolAvailabilityContext`]: core_models::ToolAvailabilityContext

use super::guard::{failed_unexpectedly, guarded};
use super::policy::HookVerdict;
use super::run::{Prepared, Run, Stopped};
use crate::permissions::patterns_allow;
use core_models::{
    AgentErrorCategory, AgentErrorEvent, AgentStateTransition as T, CallAssessment,
    PermissionCheckResult, PolicyDecision, RiskLevel, RuleVerdict, Tool, ToolCallRequest,
    ToolResult,
};
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

/// One call after lookup, validation and assessment.
/// Most calls of one reply that may run: a reply with thousands of calls (a model gone
/// astray, or told to by a file it read) settles the rest as not run, at once, without
/// asking anyone or starting anything.
pub(crate) const MAX_CALLS_PER_REPLY: usize = 64;

pub(super) enum Screened {
    /// Goes on to the permission check.
    Ready {
        call: ToolCallRequest,
        tool: Arc<dyn Tool>,
        assessment: CallAssessment,
    },
    /// Settled already (repeated, unknown, invalid, or the tool failed).
    Settled {
        call: ToolCallRequest,
        result: ToolResult,
    },
}

impl Screened {
    pub(super) fn call(&self) -> &ToolCallRequest {
        match self {
            Screened::Ready { call, .. } | Screened::Settled { call, .. } => call,
        }
    }
}

/// What the rules say about one call.
pub(super) enum Route {
    Deny(String),
    Run { approved: bool },
    Ask,
}

impl Run {
    /// Repeats, lookup, validation and assessment of each call, in order.
    pub(super) fn screen(&mut self, calls: Vec<ToolCallRequest>) -> Vec<Screened> {
        // Earlier calls of this reply by a hash of tool and parameters (the parameters are
        // hashed as written out, without building the text: they may be large).
        let state = RandomState::new();
        let mut seen_now: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut screened: Vec<Screened> = Vec::with_capacity(calls.len());
        for call in calls {
            let key = call_hash(&state, &call);
            let earlier = seen_now.get(&key).is_some_and(|indices| {
                indices
                    .iter()
                    .filter_map(|i| screened.get(*i))
                    .any(|s| s.call().is_same_call(&call))
            });
            let s = if screened.len() >= MAX_CALLS_PER_REPLY {
                let result = ToolResult::failed(format!(
                    "Not run: a reply may make at most {MAX_CALLS_PER_REPLY} calls; make the rest in the next reply"
                ));
                Screened::Settled { call, result }
            } else if let Some(result) = self.repeated(&call) {
                Screened::Settled { call, result }
            } else if earlier {
                let result = ToolResult::failed(format!(
                    "Not run: the same call ({} with the same parameters) appears earlier in this reply",
                    call.tool_id
                ));
                Screened::Settled { call, result }
            } else {
                seen_now.entry(key).or_default().push(screened.len());
                self.screen_one(call)
            };
            screened.push(s);
        }
        screened
    }

    /// The answer to a call made earlier in this request, when this is one.
    fn repeated(&self, call: &ToolCallRequest) -> Option<ToolResult> {
        let (earlier, result) = self.done.iter().find(|(c, _)| c.is_same_call(call))?;
        let note = format!(
            "Not run again: this exact call ({} with the same parameters) was already made in this request (call {}). Its result was:\n{}",
            call.tool_id,
            earlier.id,
            if result.success {
                result.content.clone()
            } else {
                format!("Error: {}", result.error_message.clone().unwrap_or_default())
            }
        );
        Some(ToolResult {
            content: note,
            ..result.clone()
        })
    }

    fn screen_one(&self, mut call: ToolCallRequest) -> Screened {
        let Some(tool) = self.shared.ports.registry.get_tool(&call.tool_id) else {
            let result = ToolResult::failed(self.unknown_tool(&call.tool_id));
            return Screened::Settled { call, result };
        };
        let requires_workspace = match super::guard::definition(tool.as_ref()) {
            Ok(definition) => definition.requires_workspace,
            Err(panic) => {
                let result = self.tool_panicked(&call, "definition", &panic);
                return Screened::Settled { call, result };
            }
        };
        // Refused here, before anyone is asked to approve a call that cannot run.
        if requires_workspace && self.workspace.is_none() {
            let result = ToolResult::failed(format!(
                "{} needs a workspace folder and this request has none: open one with \
                 ToolAvailabilityContext::for_workspace (or the workspace of the application's agent)",
                call.tool_id
            ));
            return Screened::Settled { call, result };
        }
        // A tool the request does not offer (its context leaves it out, it is not
        // available, or it could not say) is not run, whatever the model wrote.
        if !self.offered.contains(&call.tool_id) {
            let result = ToolResult::failed(format!(
                "Tool not available in this request: {}",
                call.tool_id
            ));
            return Screened::Settled { call, result };
        }
        let assessed = self.validate_and_assess(&mut call, tool.as_ref(), "Validation");
        if assessed.is_ok() {
            if let Some(result) = self.unseen_change(&call, tool.as_ref()) {
                return Screened::Settled { call, result };
            }
        }
        match assessed {
            Ok(assessment) => Screened::Ready {
                call,
                tool,
                assessment,
            },
            Err(result) => Screened::Settled { call, result },
        }
    }

    /// What the model is told of a call of a tool that does not exist: the tools it may
    /// call, and when the name is a value one of them takes (a skill's name, which
    /// `load_skill` loads), which tool and argument that is.
    fn unknown_tool(&self, id: &str) -> String {
        let offered: Vec<&str> = self.offered.iter().map(String::as_str).collect();
        let mut message = format!(
            "Tool not found: {id}. The tools you may call are: {}.",
            offered.join(", ")
        );
        for name in &offered {
            let Some(tool) = self.shared.ports.registry.get_tool(name) else {
                continue;
            };
            let Ok(definition) = super::guard::definition(tool.as_ref()) else {
                continue;
            };
            if let Some(argument) = argument_taking(&definition.input_schema, id) {
                message.push_str(&format!(
                    " {id} is a value of {name}'s `{argument}`: call {name} with \
                     {{\"{argument}\": \"{id}\"}}."
                ));
                break;
            }
        }
        message
    }

    /// Validate `call` and let the tool assess and summarize it; the assessment's risk and
    /// subjects, and the summary, are stored in the call. Invalid parameters yield "{what} failed: …", a tool that panics
    /// a failed result.
    // The failed result is rare and handed on as it is; with serde_json's `preserve_order`
    // (enabled in the workspace by chat-template) it passes clippy's size threshold.
    #[allow(clippy::result_large_err)]
    pub(super) fn validate_and_assess(
        &self,
        call: &mut ToolCallRequest,
        tool: &dyn Tool,
        what: &str,
    ) -> Result<CallAssessment, ToolResult> {
        let validation = guarded(|| tool.validate(&call.parameters))
            .map_err(|panic| self.tool_panicked(call, "validate", &panic))?;
        call.validation_result = Some(validation.clone());
        if !validation.is_valid {
            return Err(ToolResult::failed(format!(
                "{what} failed: {}",
                validation.errors.join("; ")
            )));
        }
        let workspace = self.workspace.as_deref();
        match guarded(|| tool.preflight(&call.parameters, workspace)) {
            Ok(Ok(())) => {}
            Ok(Err(problem)) => return Err(ToolResult::failed(format!("Not run: {problem}"))),
            Err(panic) => return Err(self.tool_panicked(call, "preflight", &panic)),
        }
        let assessment = guarded(|| tool.assess(&call.parameters, workspace))
            .map_err(|panic| self.tool_panicked(call, "assess", &panic))?;
        let summary = guarded(|| tool.execution_summary(&call.parameters))
            .map_err(|panic| self.tool_panicked(call, "execution_summary", &panic))?;
        call.risk_level = assessment.risk;
        call.permission_subjects = Some(assessment.subjects.clone());
        call.execution_summary = summary;
        Ok(assessment)
    }

    /// Report a tool's panic (not fatal) and turn it into a failed result.
    pub(super) fn tool_panicked(
        &self,
        call: &ToolCallRequest,
        stage: &str,
        panic: &str,
    ) -> ToolResult {
        let message = failed_unexpectedly(panic);
        tracing::error!(tool = %call.tool_id, stage, panic, "a tool panicked");
        self.emit(AgentErrorEvent::tool_error(
            self.request.request_id,
            &call.tool_id,
            &format!("{message} (in {stage})"),
            false,
            self.iteration,
        ));
        ToolResult::failed(message)
    }

    /// Permission and approval for each screened call, in order. Returns the prepared
    /// calls and whether anyone was asked.
    pub(super) async fn decide(
        &mut self,
        screened: Vec<Screened>,
    ) -> Result<(Vec<Prepared>, bool), Stopped> {
        let mut prepared = Vec::with_capacity(screened.len());
        let mut asked = false;
        for s in screened {
            let p = match s {
                Screened::Settled { call, result } => Prepared::Settled { call, result },
                Screened::Ready {
                    call,
                    tool,
                    assessment,
                } => self.decide_one(call, tool, assessment, &mut asked).await?,
            };
            prepared.push(p);
        }
        Ok((prepared, asked))
    }

    async fn decide_one(
        &mut self,
        call: ToolCallRequest,
        tool: Arc<dyn Tool>,
        assessment: CallAssessment,
        asked: &mut bool,
    ) -> Result<Prepared, Stopped> {
        let permission = match self.check_permission(&call).await {
            Ok(p) => p,
            Err(result) => return Ok(Prepared::Settled { call, result }),
        };
        let rule = self.rule_verdict(&call);
        if let Some(verdict) = &rule {
            self.report_rule(&call, verdict);
        }
        let mut assessment = assessment;
        // Which rule or hook asks a person about the call, in words.
        let mut policy_ask = None;
        // Hooks are told only of calls the rules and settings have not refused already.
        let route = match self
            .deny_reason_given(&call, &permission, rule.as_ref())
            .await
        {
            Some(why) => Route::Deny(why),
            None => {
                let hook = match self.before_tool_hooks(&call).await? {
                    HookVerdict::Denied(why) => Err(why),
                    HookVerdict::Decided(decision, why) => {
                        if decision == PolicyDecision::Ask {
                            policy_ask = Some(why);
                        }
                        Ok(Some(decision))
                    }
                    HookVerdict::Nothing => Ok(None),
                };
                match hook {
                    Err(why) => Route::Deny(why),
                    Ok(hook) => {
                        self.route_allowed(&call, &permission, &assessment, rule.as_ref(), hook)
                            .await
                    }
                }
            }
        };
        if let Some(v) = rule.as_ref().filter(|v| v.decision == PolicyDecision::Ask) {
            policy_ask = Some(match policy_ask {
                Some(hook) => format!("{}; {hook}", v.describe()),
                None => v.describe(),
            });
        }
        if matches!(route, Route::Ask) {
            if let Some(why) = &policy_ask {
                assessment.reasons.insert(0, why.clone());
            }
        } else {
            policy_ask = None;
        }
        match route {
            Route::Deny(why) => {
                self.count_denial();
                let result =
                    ToolResult::denied(format!("Denied by the permission settings: {why}"));
                Ok(Prepared::Settled { call, result })
            }
            Route::Run { approved } => Ok(Prepared::Run {
                call,
                tool,
                approved,
                person: None,
            }),
            Route::Ask => {
                if !*asked {
                    self.agent(T::RequestApproval, Some(&call.tool_id));
                    *asked = true;
                }
                self.ask(call, tool, assessment, policy_ask).await
            }
        }
    }

    /// The permission manager's answer; a failure is reported and refuses the call.
    pub(super) async fn check_permission(
        &self,
        call: &ToolCallRequest,
    ) -> Result<PermissionCheckResult, ToolResult> {
        let conversation = self.request.conversation_id;
        match self
            .shared
            .ports
            .permissions
            .check_permission(conversation, call)
            .await
        {
            Ok(p) => Ok(p),
            Err(e) => {
                self.emit(
                    AgentErrorEvent::new(
                        self.request.request_id,
                        AgentErrorCategory::PermissionError,
                        format!("Permission check failed for {}: {e}", call.tool_id),
                        false,
                        self.iteration,
                    )
                    .with_source(e),
                );
                Err(ToolResult::failed(
                    "Not run: the permission settings could not be read",
                ))
            }
        }
    }

    /// Apply the order in the module's documentation, the rules' verdict taken again.
    pub(super) async fn route(
        &self,
        call: &ToolCallRequest,
        permission: &PermissionCheckResult,
        assessment: &CallAssessment,
    ) -> Route {
        let rule = self.rule_verdict(call);
        self.route_with(call, permission, assessment, rule.as_ref())
            .await
    }

    /// [`Run::route`] with the rules' verdict given.
    async fn route_with(
        &self,
        call: &ToolCallRequest,
        permission: &PermissionCheckResult,
        assessment: &CallAssessment,
        rule: Option<&RuleVerdict>,
    ) -> Route {
        if let Some(why) = self.deny_reason_given(call, permission, rule).await {
            return Route::Deny(why);
        }
        self.route_allowed(call, permission, assessment, rule, None)
            .await
    }

    /// The order after the deny rules (step 2 on), with the rules' verdict and the hooks'
    /// (allow or ask) given.
    async fn route_allowed(
        &self,
        call: &ToolCallRequest,
        permission: &PermissionCheckResult,
        assessment: &CallAssessment,
        rule: Option<&RuleVerdict>,
        hook: Option<PolicyDecision>,
    ) -> Route {
        if call.risk_level == RiskLevel::Critical || assessment.must_ask.is_some() {
            return Route::Ask;
        }
        // The strictest of the rules and the hooks: ask goes to a person whatever was
        // remembered or the approval level says; allow runs without asking.
        let policy = rule.map(|v| v.decision).max(hook);
        match policy {
            Some(PolicyDecision::Ask) => return Route::Ask,
            Some(PolicyDecision::Allow) => return Route::Run { approved: false },
            _ => {}
        }
        if permission.is_allowed && permission.was_cached {
            return Route::Run { approved: true };
        }
        if self.session_permission_allows(call).await {
            return Route::Run { approved: true };
        }
        if permission.is_allowed || self.auto_approved_by_request(call).await {
            return Route::Run { approved: false };
        }
        Route::Ask
    }

    /// Why the deny rules refuse the call (the first step of the order in the module's
    /// documentation), when they do: a forbidding rule, or the permission settings.
    pub(super) async fn deny_reason(
        &self,
        call: &ToolCallRequest,
        permission: &PermissionCheckResult,
    ) -> Option<String> {
        let rule = self.rule_verdict(call);
        self.deny_reason_given(call, permission, rule.as_ref())
            .await
    }

    /// [`Run::deny_reason`] with the rules' verdict on the call given (judged once).
    async fn deny_reason_given(
        &self,
        call: &ToolCallRequest,
        permission: &PermissionCheckResult,
        rule: Option<&RuleVerdict>,
    ) -> Option<String> {
        if let Some(v) = rule.filter(|v| v.decision == PolicyDecision::Forbid) {
            return Some(v.describe());
        }
        if permission.is_denied() {
            let why = permission.denial_reason.clone();
            return Some(why.unwrap_or_else(|| "denied".into()));
        }
        self.unverifiable_deny_rules(call).await
    }

    /// The request's `session_permissions` allow the call: an auto-approved permission for
    /// the tool whose pattern (if any) covers every subject of the call.
    async fn session_permission_allows(&self, call: &ToolCallRequest) -> bool {
        let Some(context) = &self.request.tool_context else {
            return false;
        };
        let Some(permission) = context.session_permissions.get(&call.tool_id) else {
            return false;
        };
        if !permission.auto_approved
            || !(permission.tool_id.is_empty() || permission.tool_id == call.tool_id)
        {
            return false;
        }
        let covered = match &permission.approval_pattern {
            None => true,
            Some(pattern) => patterns_allow(std::slice::from_ref(pattern), &call.subjects()),
        };
        covered
    }

    /// The request's `max_auto_approval_risk_level` covers the call's risk.
    async fn auto_approved_by_request(&self, call: &ToolCallRequest) -> bool {
        let Some(context) = &self.request.tool_context else {
            return false;
        };
        call.risk_level <= context.max_auto_approval_risk_level
    }

    /// Why the call is refused when the tool has stored deny patterns that cannot be
    /// checked against it (its subjects are incomplete or empty): deny patterns fail
    /// closed, whatever the permission manager said. Settings that cannot be read refuse
    /// it too. `None` when the patterns can be checked, or there are none.
    async fn unverifiable_deny_rules(&self, call: &ToolCallRequest) -> Option<String> {
        let subjects = call.subjects();
        if subjects.complete && !subjects.is_empty() {
            return None;
        }
        let settings = self
            .shared
            .ports
            .permissions
            .get_tool_permissions(&call.tool_id)
            .await;
        match settings {
            Ok(settings) if settings.as_ref().is_none_or(|s| s.denied_patterns.is_empty()) => None,
            Ok(_) => Some(format!(
                "the call cannot be checked against the deny rules of {}: {}",
                call.tool_id,
                crate::permissions::why_unverifiable(&subjects)
            )),
            Err(e) => Some(format!(
                "the call cannot be checked against the deny rules of {}: the settings could not be read ({e})",
                call.tool_id
            )),
        }
    }
}

/// A hash of the call's tool and parameters; equal calls hash alike.
fn call_hash(state: &RandomState, call: &ToolCallRequest) -> u64 {
    /// Feeds what is written to a hasher.
    struct HashWriter<H: Hasher>(H);
    impl<H: Hasher> std::fmt::Write for HashWriter<H> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let mut writer = HashWriter(state.build_hasher());
    call.tool_id.hash(&mut writer.0);
    // The parameters as compact JSON, written piece by piece into the hasher. Writing to
    // a hasher cannot fail.
    let _ = write!(writer, "{}", call.parameters);
    writer.0.finish()
}

/// The top-level argument of `schema` whose `enum` lists `value`, if any.
fn argument_taking(schema: &serde_json::Value, value: &str) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    properties.iter().find_map(|(name, property)| {
        property
            .get("enum")?
            .as_array()?
            .iter()
            .any(|v| v.as_str() == Some(value))
            .then(|| name.clone())
    })
}

impl Run {
    /// The calls of a reply as the tools take them: optional arguments the model gave as
    /// an empty string or `null` are left out (models write `"glob": ""` for "no glob"
    /// often, and a tool would take it for a value: a glob that matches no file). Done
    /// before anything compares calls, so that a repeat is seen as one.
    pub(super) fn normalize(&self, calls: &mut [ToolCallRequest]) {
        for call in calls {
            let Some(tool) = self.shared.ports.registry.get_tool(&call.tool_id) else {
                continue;
            };
            if let Ok(definition) = super::guard::definition(tool.as_ref()) {
                drop_empty_optionals(call, &definition.input_schema);
            }
        }
    }
}

/// Optional arguments given as an empty string or `null` left out; required ones kept.
fn drop_empty_optionals(call: &mut ToolCallRequest, schema: &serde_json::Value) {
    let required = super::prompt::required_names(schema);
    let empty = |v: &serde_json::Value| v.is_null() || v.as_str() == Some("");
    let Some(object) = call.parameters.as_object() else {
        return;
    };
    if !object
        .iter()
        .any(|(k, v)| empty(v) && !required.contains(k))
    {
        return;
    }
    let mut kept = object.clone();
    kept.retain(|k, v| !empty(v) || required.contains(k));
    call.set_parameters(serde_json::Value::Object(kept));
}
