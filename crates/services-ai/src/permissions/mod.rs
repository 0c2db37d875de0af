//! The permission manager (seed 001 part i, with its TODOs done) and permission stores.
//!
//! Patterns are globs matched against the call's normalized [`PermissionSubjects`]
//! ([`ToolCallRequest::subjects`]: what the tool's assessment says the call touches — a
//! workspace-relative path with `.`, `..` and doubled slashes resolved, each simple command
//! of a command line — never the raw argument), so that `./secret/key`, ` secret/key`,
//! `secret//key` and `a/../secret/key` are all `secret/key` to a pattern. A deny pattern
//! refuses the call when it matches any subject (or deny-only form); allow patterns allow
//! it only when the subjects are complete and every one of them matches an allow pattern.
//! This holds for persistent patterns and for decisions remembered with a pattern for the
//! session alike.
//!
//! Deny patterns fail closed: when the tool has any (persistent, or a session denial
//! remembered with a pattern) and the call's subjects are incomplete or empty — a command
//! whose program is `$(…)`, a shell reading a script from a file, a wrapper whose options
//! are not understood: something the patterns cannot be checked against — the call is
//! refused ("cannot be checked against the deny rules"), never asked about: with every
//! call approved (`--approve all`), asking would approve it.
//!
//! Order of the rules, first match wins:
//! 1. the tool's persistent settings deny (`always_deny`, or a denied pattern matches);
//! 2. a decision remembered for this conversation denies;
//! 3. the tool has deny patterns that cannot be checked against the call: denied;
//! 4. a **critical** call (`RiskLevel::Critical`) goes to a person: no allow rule — an
//!    `always_allow` setting, an allowed pattern, a session decision or the auto-approval
//!    level — ever approves it without asking;
//! 5. the tool's persistent settings allow (`always_allow`, or the allowed patterns cover
//!    every subject);
//! 6. a decision remembered for this conversation allows;
//! 7. calls up to the auto-approval risk level (`Safe` by default) are allowed;
//! 8. everything else needs approval.
//!
//! So deny wins over allow, explicit settings win over risk, and critical calls are always
//! put to a person unless a deny rule refuses them first.
//!
//! Settings are read from the store at every check, so a rule another process added takes
//! effect at the next check of a running manager, and every change goes through
//! [`PermissionStore::update`] (read, change and write as one step), so a change never
//! rewrites the file from a stale copy. Settings that cannot be read, or a stored pattern
//! that is not a valid glob, are an error — never "allow".

mod rules;
mod store;

pub(crate) use rules::why_unverifiable;
pub use store::{FilePermissionStore, MemoryPermissionStore};

use crate::error::Error;
use async_trait::async_trait;
use core_models::{
    ApprovalDecision, PermissionCheckResult, PermissionManager, PermissionMap, PermissionStore,
    PermissionSubjects, RememberScope, RiskLevel, ToolCallRequest, ToolPermissionSettings,
};
use globset::GlobMatcher;
use rules::{allowed_by, allowed_by_matchers, compile, denied_by, unverifiable, DenyPattern};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use uuid::Uuid;

pub(crate) fn core_err(e: Error) -> core_models::Error {
    match e {
        Error::Core(e) => e,
        other => {
            core_models::Error::permission_store(other.to_string(), Some(Box::new(other) as _))
        }
    }
}

/// Whether the allow `patterns` cover the call's `subjects` (complete, not empty, every
/// subject matching one of them), as session allow rules and a request's session
/// permissions use them. An invalid pattern covers nothing.
pub(crate) fn patterns_allow(patterns: &[String], subjects: &PermissionSubjects) -> bool {
    allowed_by(patterns, subjects).unwrap_or(false)
}

/// A decision remembered for one conversation.
#[derive(Debug, Clone)]
enum SessionRule {
    /// Allow every call of the tool, or the calls the pattern covers.
    Allow(Option<GlobMatcher>),
    /// Deny every call of the tool, or the calls with a subject the pattern matches.
    Deny(Option<DenyPattern>),
}

impl SessionRule {
    fn allows(&self, subjects: &PermissionSubjects) -> bool {
        match self {
            SessionRule::Allow(None) => true,
            SessionRule::Allow(Some(m)) => allowed_by_matchers(std::slice::from_ref(m), subjects),
            SessionRule::Deny(_) => false,
        }
    }

    fn denies(&self, subjects: &PermissionSubjects) -> bool {
        match self {
            SessionRule::Deny(None) => true,
            SessionRule::Deny(Some(p)) => p.first_match(subjects).is_some(),
            SessionRule::Allow(_) => false,
        }
    }

    fn has_deny_pattern(&self) -> bool {
        matches!(self, SessionRule::Deny(Some(_)))
    }
}

type Sessions = HashMap<Uuid, HashMap<String, Vec<SessionRule>>>;

/// The default [`PermissionManager`]: session decisions in memory, tool settings through
/// a [`PermissionStore`] (read at every check, changed only through
/// [`PermissionStore::update`]).
pub struct DefaultPermissionManager {
    store: Arc<dyn PermissionStore>,
    auto_approve_up_to: RiskLevel,
    sessions: Mutex<Sessions>,
}

impl std::fmt::Debug for DefaultPermissionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultPermissionManager")
            .field("auto_approve_up_to", &self.auto_approve_up_to)
            .finish_non_exhaustive()
    }
}

impl DefaultPermissionManager {
    /// A manager over `store` that auto-approves only `Safe` calls.
    pub fn new(store: Arc<dyn PermissionStore>) -> Self {
        DefaultPermissionManager {
            store,
            auto_approve_up_to: RiskLevel::Safe,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// A manager with settings kept in memory only.
    pub fn in_memory() -> Self {
        Self::new(Arc::new(MemoryPermissionStore::default()))
    }

    /// Approve without asking every call up to `level` (a request's
    /// `max_auto_approval_risk_level`). Critical calls are asked about whatever the level.
    pub fn with_auto_approve_up_to(mut self, level: RiskLevel) -> Self {
        self.auto_approve_up_to = level;
        self
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Apply `change` to the settings as stored now, as one step of the store (see
    /// [`PermissionStore::update`]); settings left empty are dropped. A failed change or
    /// save changes nothing.
    async fn update_settings(
        &self,
        change: impl FnOnce(&mut PermissionMap) -> Result<(), Error> + Send + 'static,
    ) -> Result<PermissionMap, core_models::Error> {
        self.store
            .update(Box::new(move |all: &mut PermissionMap| {
                change(all).map_err(core_err)?;
                all.retain(|_, s| !s.is_empty());
                Ok(())
            }))
            .await
    }

    /// Change one tool's settings as they are stored now, in one step of the store, so that
    /// concurrent changes (by other processes too) are never lost. Patterns are checked;
    /// an invalid one changes nothing. Returns the tool's settings afterwards (`None` when
    /// they ended up empty and were dropped).
    pub async fn update_tool_permissions(
        &self,
        tool_id: &str,
        change: impl FnOnce(&mut ToolPermissionSettings) + Send + 'static,
    ) -> Result<Option<ToolPermissionSettings>, core_models::Error> {
        let id = tool_id.to_string();
        let key = id.clone();
        let all = self
            .update_settings(move |all| {
                let settings = all
                    .entry(id.clone())
                    .or_insert_with(|| ToolPermissionSettings::new(id.clone()));
                change(settings);
                id.clone_into(&mut settings.tool_id);
                check_patterns(settings)
            })
            .await?;
        Ok(all.get(&key).cloned())
    }

    /// The session rules for `tool_id` in `conversation_id`.
    fn session_rules(&self, conversation_id: Uuid, tool_id: &str) -> Vec<SessionRule> {
        self.sessions()
            .get(&conversation_id)
            .and_then(|tools| tools.get(tool_id))
            .cloned()
            .unwrap_or_default()
    }
}

/// Every pattern of `settings` is a valid glob.
fn check_patterns(settings: &ToolPermissionSettings) -> Result<(), Error> {
    for p in settings
        .allowed_patterns
        .iter()
        .chain(&settings.denied_patterns)
    {
        compile(p)?;
    }
    Ok(())
}

/// The verdict of the deny rules: persistent ones first, then the session's, then deny
/// patterns that cannot be checked against the call (they fail closed).
fn deny_verdict(
    request: &ToolCallRequest,
    persistent: Option<&ToolPermissionSettings>,
    session: &[SessionRule],
    subjects: &PermissionSubjects,
) -> Result<Option<PermissionCheckResult>, Error> {
    if let Some(settings) = persistent {
        if settings.always_deny {
            return Ok(Some(PermissionCheckResult::denied(
                format!("Tool {} is set to always deny", request.tool_id),
                true,
            )));
        }
        if let Some((pattern, subject)) = denied_by(&settings.denied_patterns, subjects)? {
            return Ok(Some(PermissionCheckResult::denied(
                format!("'{subject}' matches denied pattern '{pattern}'"),
                true,
            )));
        }
    }
    if session.iter().any(|r| r.denies(subjects)) {
        return Ok(Some(PermissionCheckResult::denied(
            format!(
                "Tool {} was denied earlier in this session",
                request.tool_id
            ),
            true,
        )));
    }
    let deny_patterns = persistent.is_some_and(|s| !s.denied_patterns.is_empty())
        || session.iter().any(SessionRule::has_deny_pattern);
    if deny_patterns && unverifiable(subjects) {
        return Ok(Some(PermissionCheckResult::denied(
            format!(
                "Tool {}: the call cannot be checked against the deny rules: {}",
                request.tool_id,
                why_unverifiable(subjects)
            ),
            false,
        )));
    }
    Ok(None)
}

#[async_trait]
impl PermissionManager for DefaultPermissionManager {
    async fn check_permission(
        &self,
        conversation_id: Uuid,
        request: &ToolCallRequest,
    ) -> Result<PermissionCheckResult, core_models::Error> {
        let subjects = request.subjects();
        let all = self.store.load().await?;
        let persistent = all.get(&request.tool_id);
        let session = self.session_rules(conversation_id, &request.tool_id);

        if let Some(denied) =
            deny_verdict(request, persistent, &session, &subjects).map_err(core_err)?
        {
            return Ok(denied);
        }
        if request.risk_level == RiskLevel::Critical {
            return Ok(PermissionCheckResult::requires_approval(format!(
                "Tool {} has risk level critical: critical calls are always put to a person",
                request.tool_name
            )));
        }
        if let Some(settings) = persistent {
            if settings.always_allow
                || allowed_by(&settings.allowed_patterns, &subjects).map_err(core_err)?
            {
                return Ok(PermissionCheckResult::allowed_cached());
            }
        }
        if session.iter().any(|r| r.allows(&subjects)) {
            return Ok(PermissionCheckResult::allowed_cached());
        }
        if request.risk_level <= self.auto_approve_up_to {
            return Ok(PermissionCheckResult::allowed());
        }
        Ok(PermissionCheckResult::requires_approval(format!(
            "Tool {} has risk level {}",
            request.tool_name, request.risk_level
        )))
    }

    async fn remember_decision(
        &self,
        conversation_id: Uuid,
        request: &ToolCallRequest,
        decision: &ApprovalDecision,
    ) -> Result<(), core_models::Error> {
        let pattern = decision.remember_pattern.clone();
        match decision.remember_scope() {
            RememberScope::None => Ok(()),
            RememberScope::Session => {
                let rule = match (decision.approved, pattern) {
                    (true, None) => SessionRule::Allow(None),
                    (true, Some(p)) => SessionRule::Allow(Some(compile(&p).map_err(core_err)?)),
                    (false, None) => SessionRule::Deny(None),
                    (false, Some(p)) => {
                        SessionRule::Deny(Some(DenyPattern::new(&p).map_err(core_err)?))
                    }
                };
                self.sessions()
                    .entry(conversation_id)
                    .or_default()
                    .entry(request.tool_id.clone())
                    .or_default()
                    .push(rule);
                Ok(())
            }
            RememberScope::Tool => {
                let approved = decision.approved;
                if let Some(p) = &pattern {
                    compile(p).map_err(core_err)?;
                }
                self.update_tool_permissions(&request.tool_id, move |settings| {
                    remember_in(settings, approved, pattern);
                })
                .await
                .map(|_| ())
            }
        }
    }

    async fn clear_session_permissions(
        &self,
        conversation_id: Uuid,
    ) -> Result<(), core_models::Error> {
        self.sessions().remove(&conversation_id);
        Ok(())
    }

    async fn get_tool_permissions(
        &self,
        tool_id: &str,
    ) -> Result<Option<ToolPermissionSettings>, core_models::Error> {
        Ok(self.store.load().await?.remove(tool_id))
    }

    async fn set_tool_permissions(
        &self,
        tool_id: &str,
        mut settings: ToolPermissionSettings,
    ) -> Result<(), core_models::Error> {
        tool_id.clone_into(&mut settings.tool_id);
        check_patterns(&settings).map_err(core_err)?;
        let tool_id = tool_id.to_string();
        self.update_settings(move |all| {
            all.insert(tool_id, settings);
            Ok(())
        })
        .await
        .map(|_| ())
    }

    async fn all_tool_permissions(
        &self,
    ) -> Result<Vec<ToolPermissionSettings>, core_models::Error> {
        Ok(self.store.load().await?.into_values().collect())
    }

    async fn remove_tool_permissions(&self, tool_id: &str) -> Result<bool, core_models::Error> {
        let existed = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&existed);
        let tool_id = tool_id.to_string();
        self.update_settings(move |all| {
            seen.store(all.remove(&tool_id).is_some(), Ordering::SeqCst);
            Ok(())
        })
        .await?;
        Ok(existed.load(Ordering::SeqCst))
    }
}

/// Record an "always for this tool" decision in the tool's settings.
fn remember_in(settings: &mut ToolPermissionSettings, approved: bool, pattern: Option<String>) {
    match (approved, pattern) {
        (true, Some(p)) => {
            if !settings.allowed_patterns.contains(&p) {
                settings.allowed_patterns.push(p);
            }
        }
        (true, None) => {
            settings.always_allow = true;
            settings.always_deny = false;
        }
        (false, Some(p)) => {
            if !settings.denied_patterns.contains(&p) {
                settings.denied_patterns.push(p);
            }
        }
        (false, None) => {
            settings.always_deny = true;
            settings.always_allow = false;
        }
    }
}
