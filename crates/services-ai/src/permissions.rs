//! The permission manager (seed 001 part i, with its TODOs done) and permission stores.
//!
//! Order of the rules, first match wins:
//! 1. the tool's persistent settings deny (`always_deny`, or a denied pattern matches the
//!    call's main argument);
//! 2. a decision remembered for this conversation denies;
//! 3. the tool's persistent settings allow (`always_allow`, or an allowed pattern matches);
//! 4. a decision remembered for this conversation allows;
//! 5. calls up to the auto-approval risk level (`Safe` by default) are allowed;
//! 6. everything else needs approval.
//!
//! So deny wins over allow, and explicit settings win over risk. Settings that cannot be
//! read, or a stored pattern that is not a valid glob, are an error — never "allow".

use crate::error::Error;
use async_trait::async_trait;
use core_models::{
    ApprovalDecision, PermissionCheckResult, PermissionManager, PermissionStore, RememberScope,
    RiskLevel, ToolCallRequest, ToolPermissionSettings,
};
use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::Mutex as AsyncMutex;
use uuid::Uuid;

fn compile(pattern: &str) -> Result<GlobMatcher, Error> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|source| Error::InvalidPattern {
            pattern: pattern.to_string(),
            source,
        })
}

/// Whether any of `patterns` matches `argument`.
fn any_matches(patterns: &[String], argument: Option<&str>) -> Result<Option<String>, Error> {
    let Some(argument) = argument else {
        return Ok(None);
    };
    for pattern in patterns {
        if compile(pattern)?.is_match(argument) {
            return Ok(Some(pattern.clone()));
        }
    }
    Ok(None)
}

fn core_err(e: Error) -> core_models::Error {
    match e {
        Error::Core(e) => e,
        other => {
            core_models::Error::permission_store(other.to_string(), Some(Box::new(other) as _))
        }
    }
}

/// A decision remembered for one conversation.
#[derive(Debug, Clone)]
struct SessionRule {
    approved: bool,
    pattern: Option<(String, GlobMatcher)>,
}

impl SessionRule {
    fn applies_to(&self, request: &ToolCallRequest) -> bool {
        match &self.pattern {
            None => true,
            Some((_, matcher)) => request.main_argument().is_some_and(|a| matcher.is_match(a)),
        }
    }
}

/// The default [`PermissionManager`]: session decisions in memory, tool settings through
/// a [`PermissionStore`].
pub struct DefaultPermissionManager {
    store: Arc<dyn PermissionStore>,
    auto_approve_up_to: RiskLevel,
    /// Loaded on first use; writes are serialized by the async mutex.
    settings: AsyncMutex<Option<BTreeMap<String, ToolPermissionSettings>>>,
    sessions: Mutex<HashMap<Uuid, HashMap<String, Vec<SessionRule>>>>,
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
            settings: AsyncMutex::new(None),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// A manager with settings kept in memory only.
    pub fn in_memory() -> Self {
        Self::new(Arc::new(MemoryPermissionStore::default()))
    }

    /// Approve without asking every call up to `level` (a request's
    /// `max_auto_approval_risk_level`).
    pub fn with_auto_approve_up_to(mut self, level: RiskLevel) -> Self {
        self.auto_approve_up_to = level;
        self
    }

    fn sessions(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<Uuid, HashMap<String, Vec<SessionRule>>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn with_settings<R>(
        &self,
        f: impl FnOnce(&BTreeMap<String, ToolPermissionSettings>) -> R,
    ) -> Result<R, core_models::Error> {
        let mut guard = self.settings.lock().await;
        if guard.is_none() {
            *guard = Some(self.store.load().await?);
        }
        let settings = guard.as_ref().map(f);
        settings.ok_or_else(|| core_models::Error::permission_store("settings not loaded", None))
    }

    /// Apply `change` to a copy of the settings, save the copy, and only then keep it: a
    /// failed save changes nothing.
    async fn update_settings(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, ToolPermissionSettings>) -> Result<(), Error>,
    ) -> Result<(), core_models::Error> {
        let mut guard = self.settings.lock().await;
        let mut next = match guard.as_ref() {
            Some(current) => current.clone(),
            None => self.store.load().await?,
        };
        change(&mut next).map_err(core_err)?;
        next.retain(|_, s| !s.is_empty());
        self.store.save(&next).await?;
        *guard = Some(next);
        Ok(())
    }

    fn session_rule(
        &self,
        conversation_id: Uuid,
        request: &ToolCallRequest,
        approved: bool,
    ) -> bool {
        self.sessions()
            .get(&conversation_id)
            .and_then(|tools| tools.get(&request.tool_id))
            .is_some_and(|rules| {
                rules
                    .iter()
                    .any(|r| r.approved == approved && r.applies_to(request))
            })
    }
}

#[async_trait]
impl PermissionManager for DefaultPermissionManager {
    async fn check_permission(
        &self,
        conversation_id: Uuid,
        request: &ToolCallRequest,
    ) -> Result<PermissionCheckResult, core_models::Error> {
        let argument = request.main_argument();
        let persistent = self
            .with_settings(|all| all.get(&request.tool_id).cloned())
            .await?;

        if let Some(settings) = &persistent {
            if settings.always_deny {
                return Ok(PermissionCheckResult::denied(
                    format!("Tool {} is set to always deny", request.tool_id),
                    true,
                ));
            }
            if let Some(pattern) =
                any_matches(&settings.denied_patterns, argument).map_err(core_err)?
            {
                return Ok(PermissionCheckResult::denied(
                    format!(
                        "'{}' matches denied pattern '{pattern}'",
                        argument.unwrap_or_default()
                    ),
                    true,
                ));
            }
        }
        if self.session_rule(conversation_id, request, false) {
            return Ok(PermissionCheckResult::denied(
                format!(
                    "Tool {} was denied earlier in this session",
                    request.tool_id
                ),
                true,
            ));
        }
        if let Some(settings) = &persistent {
            if settings.always_allow
                || any_matches(&settings.allowed_patterns, argument)
                    .map_err(core_err)?
                    .is_some()
            {
                return Ok(PermissionCheckResult::allowed_cached());
            }
        }
        if self.session_rule(conversation_id, request, true) {
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
                let pattern = match pattern {
                    Some(p) => Some((p.clone(), compile(&p).map_err(core_err)?)),
                    None => None,
                };
                self.sessions()
                    .entry(conversation_id)
                    .or_default()
                    .entry(request.tool_id.clone())
                    .or_default()
                    .push(SessionRule {
                        approved: decision.approved,
                        pattern,
                    });
                Ok(())
            }
            RememberScope::Tool => {
                let tool_id = request.tool_id.clone();
                let approved = decision.approved;
                self.update_settings(move |all| {
                    let settings = all
                        .entry(tool_id.clone())
                        .or_insert_with(|| ToolPermissionSettings::new(tool_id));
                    match (approved, pattern) {
                        (true, Some(p)) => {
                            compile(&p)?;
                            if !settings.allowed_patterns.contains(&p) {
                                settings.allowed_patterns.push(p);
                            }
                        }
                        (true, None) => {
                            settings.always_allow = true;
                            settings.always_deny = false;
                        }
                        (false, Some(p)) => {
                            compile(&p)?;
                            if !settings.denied_patterns.contains(&p) {
                                settings.denied_patterns.push(p);
                            }
                        }
                        (false, None) => {
                            settings.always_deny = true;
                            settings.always_allow = false;
                        }
                    }
                    Ok(())
                })
                .await
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
        self.with_settings(|all| all.get(tool_id).cloned()).await
    }

    async fn set_tool_permissions(
        &self,
        tool_id: &str,
        mut settings: ToolPermissionSettings,
    ) -> Result<(), core_models::Error> {
        tool_id.clone_into(&mut settings.tool_id);
        let tool_id = tool_id.to_string();
        self.update_settings(move |all| {
            for p in settings
                .allowed_patterns
                .iter()
                .chain(&settings.denied_patterns)
            {
                compile(p)?;
            }
            all.insert(tool_id, settings);
            Ok(())
        })
        .await
    }

    async fn all_tool_permissions(
        &self,
    ) -> Result<Vec<ToolPermissionSettings>, core_models::Error> {
        self.with_settings(|all| all.values().cloned().collect())
            .await
    }

    async fn remove_tool_permissions(&self, tool_id: &str) -> Result<bool, core_models::Error> {
        let mut existed = false;
        let existed_ref = &mut existed;
        self.update_settings(|all| {
            *existed_ref = all.remove(tool_id).is_some();
            Ok(())
        })
        .await?;
        Ok(existed)
    }
}

/// A [`PermissionStore`] in memory: nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryPermissionStore {
    settings: Mutex<BTreeMap<String, ToolPermissionSettings>>,
}

#[async_trait]
impl PermissionStore for MemoryPermissionStore {
    async fn load(&self) -> Result<BTreeMap<String, ToolPermissionSettings>, core_models::Error> {
        Ok(self
            .settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone())
    }

    async fn save(
        &self,
        settings: &BTreeMap<String, ToolPermissionSettings>,
    ) -> Result<(), core_models::Error> {
        settings.clone_into(&mut self.settings.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(())
    }
}

/// The on-disk form of the permission file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionFile {
    version: u32,
    tools: BTreeMap<String, ToolPermissionSettings>,
}

const FILE_VERSION: u32 = 1;

/// A [`PermissionStore`] in one JSON file, written atomically (temporary file in the same
/// folder, flushed, then renamed over the old one), so a crash never leaves half a file.
/// A missing file is an empty store; an unreadable or corrupt one is an error.
#[derive(Debug, Clone)]
pub struct FilePermissionStore {
    path: PathBuf,
}

impl FilePermissionStore {
    /// A store in the file at `path` (created on first save, with its folders).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FilePermissionStore { path: path.into() }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(
        &self,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> core_models::Error {
        core_err(Error::PermissionFile {
            path: self.path.clone(),
            message: message.into(),
            source: Some(Box::new(source)),
        })
    }

    fn read(&self) -> Result<BTreeMap<String, ToolPermissionSettings>, core_models::Error> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(self.error("cannot be read", e)),
        };
        let file: PermissionFile = serde_json::from_str(&text).map_err(|e| {
            self.error(
                "is corrupt (fix or delete it; nothing is allowed until then)",
                e,
            )
        })?;
        if file.version != FILE_VERSION {
            return Err(core_err(Error::PermissionFile {
                path: self.path.clone(),
                message: format!(
                    "has version {}, but this program reads version {FILE_VERSION}",
                    file.version
                ),
                source: None,
            }));
        }
        Ok(file.tools)
    }

    fn write(
        &self,
        tools: BTreeMap<String, ToolPermissionSettings>,
    ) -> Result<(), core_models::Error> {
        use std::io::Write;
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(|e| self.error("folder cannot be created", e))?;
        let text = serde_json::to_string_pretty(&PermissionFile {
            version: FILE_VERSION,
            tools,
        })
        .map_err(|e| self.error("cannot be serialized", e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)
            .map_err(|e| self.error("temporary file cannot be created", e))?;
        tmp.write_all(text.as_bytes())
            .and_then(|()| tmp.write_all(b"\n"))
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| self.error("cannot be written", e))?;
        tmp.persist(&self.path)
            .map_err(|e| self.error("cannot be replaced", e.error))?;
        Ok(())
    }
}

#[async_trait]
impl PermissionStore for FilePermissionStore {
    async fn load(&self) -> Result<BTreeMap<String, ToolPermissionSettings>, core_models::Error> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.read())
            .await
            .map_err(|e| {
                core_models::Error::permission_store(
                    "loading was interrupted",
                    Some(Box::new(e) as _),
                )
            })?
    }

    async fn save(
        &self,
        settings: &BTreeMap<String, ToolPermissionSettings>,
    ) -> Result<(), core_models::Error> {
        let store = self.clone();
        let settings = settings.clone();
        tokio::task::spawn_blocking(move || store.write(settings))
            .await
            .map_err(|e| {
                core_models::Error::permission_store(
                    "saving was interrupted",
                    Some(Box::new(e) as _),
                )
            })?
    }
}
