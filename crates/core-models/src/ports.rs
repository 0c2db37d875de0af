//! The service contracts (seed 001 part h and the tool framework it assumes), as
//! object-safe traits injected as `Arc<dyn …>`.

use crate::error::Error;
use crate::events::{AgentEvent, GitCommit};
use crate::llm::{LlmRequest, LlmStream, ModelDetails, SessionKey};
use crate::permission::{PermissionCheckResult, PermissionSubjects, ToolPermissionSettings};
use crate::request::{AgentRequest, ToolAvailabilityContext};
use crate::state::{AgentState, AgentStateChange};
use crate::tool::{
    CallAssessment, RiskLevel, ToolDefinition, ToolExecutionContext, ToolResult,
    ToolValidationResult,
};
use crate::tool_call::{ApprovalDecision, ToolCallRequest};
use async_trait::async_trait;
use futures_core::stream::BoxStream;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Identity, schema and default risk.
    fn definition(&self) -> &ToolDefinition;

    /// Whether the tool can be offered in `context` beyond what the definition says (for
    /// example, only when some program is installed). Defaults to yes.
    fn is_available(&self, _context: &ToolAvailabilityContext) -> bool {
        true
    }

    /// Check the parameters; list every problem.
    fn validate(&self, parameters: &Value) -> ToolValidationResult;

    /// What a call with these parameters will do, in words.
    fn execution_summary(&self, parameters: &Value) -> String;

    /// Risk of a call with these parameters (defaults to the definition's).
    fn effective_risk_level(&self, _parameters: &Value) -> RiskLevel {
        self.definition().default_risk_level
    }

    /// Judge a valid call before it may run, knowing the workspace: its risk (which may
    /// look at the files, e.g. where a path leads), what permission patterns are matched
    /// against, the sandbox it would run under and whether a person must be asked. The
    /// agent calls it after validation and before the permission check.
    ///
    /// The default: [`Tool::effective_risk_level`], the main argument as the subject
    /// ([`PermissionSubjects::from_parameters`]), no sandbox, no forced question.
    fn assess(&self, parameters: &Value, workspace: Option<&Path>) -> CallAssessment {
        CallAssessment::new(
            self.effective_risk_level(parameters),
            PermissionSubjects::from_parameters(parameters, workspace),
        )
    }

    /// Problems with a valid call that only the workspace shows (an edit whose search text
    /// does not occur in the file), found before anyone is asked to approve it: the call
    /// then fails with the message, never put to a person. Reads only. The default finds
    /// none.
    ///
    /// # Errors
    /// The problem, in words for the model.
    fn preflight(&self, _parameters: &Value, _workspace: Option<&Path>) -> Result<(), String> {
        Ok(())
    }

    /// The workspace file a successful call of these parameters shows the model (whole or
    /// in part, as `read_file` does) or leaves as the model wrote it (`write_file`,
    /// `edit_file`): from then on the conversation has seen it. As written in the call
    /// (the agent compares paths made plain). `None`, the default: no file.
    fn file_seen(&self, _parameters: &Value) -> Option<String> {
        None
    }

    /// The existing file a call of these parameters would replace, which the model should
    /// have seen in the conversation first (a file holding something that a whole-file
    /// write would replace):
    /// the agent refuses the call, before anyone is asked, when the conversation has not
    /// seen it and the agent is set to (see `read_before_change` in the agent's
    /// configuration). Reads only. `None`, the default: nothing need be seen.
    fn file_to_see_first(&self, _parameters: &Value, _workspace: Option<&Path>) -> Option<String> {
        None
    }

    /// What a valid call would change in a file, for the approval prompt: called only when
    /// a person is asked, with the workspace at hand. Reads only; `None` (the default) for a
    /// tool that changes no file or when the change cannot be previewed.
    fn preview_change(
        &self,
        _parameters: &Value,
        _workspace: Option<&Path>,
    ) -> Option<crate::FileChange> {
        None
    }

    /// The values some arguments may take in `workspace`, for the call grammar to hold the
    /// model to: argument name → values (for example the files that exist, for a tool
    /// that reads one). Reads only, and at most about `limit` entries: `None` (the
    /// default) when any value the schema allows may be given, or when there would be
    /// more than `limit` values.
    fn argument_choices(
        &self,
        _workspace: Option<&Path>,
        _limit: usize,
    ) -> Option<crate::ArgumentChoices> {
        None
    }

    /// Run the tool. Failures are a failed [`ToolResult`], never a panic. Must return
    /// promptly once `context.cancellation` fires, stopping anything it started.
    async fn execute(&self, context: ToolExecutionContext) -> ToolResult;
}

/// Finds tools by id and decides which are offered.
pub trait ToolRegistry: Send + Sync {
    /// The tool with this id.
    fn get_tool(&self, id: &str) -> Option<Arc<dyn Tool>>;

    /// Every registered tool.
    fn all_tools(&self) -> Vec<Arc<dyn Tool>>;

    /// Tools that may be offered under `context` (all available ones when `None`).
    ///
    /// The default leaves out a tool whose [`Tool::definition`] or [`Tool::is_available`]
    /// panics: a tool that cannot say whether it is available is not offered, and the
    /// others still are.
    fn available_tools(&self, context: Option<&ToolAvailabilityContext>) -> Vec<Arc<dyn Tool>> {
        self.all_tools()
            .into_iter()
            .filter(|tool| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match context {
                    Some(ctx) => ctx.allows(tool.definition()) && tool.is_available(ctx),
                    None => {
                        let _ = tool.definition();
                        true
                    }
                }))
                .unwrap_or(false)
            })
            .collect()
    }
}

/// Runs tools: the place for sandboxing, metrics or auditing around `Tool::execute`.
#[async_trait]
pub trait ToolExecutionService: Send + Sync {
    /// Run `tool` with `context`.
    async fn execute(&self, tool: Arc<dyn Tool>, context: ToolExecutionContext) -> ToolResult;
}

/// A language model backend.
#[async_trait]
pub trait LlmService: Send + Sync {
    /// The model's name, for events and logs.
    fn model_name(&self) -> String;

    /// Whether a model is loaded and ready.
    fn is_model_loaded(&self) -> bool {
        true
    }

    /// Start a generation. The stream yields text pieces, then one usage record. Dropping
    /// the stream cancels the generation.
    ///
    /// # Errors
    /// [`Error::Llm`] when the generation cannot start.
    async fn generate(&self, request: LlmRequest) -> Result<LlmStream, Error>;

    /// What the model's chat template says about its output, when the backend knows
    /// (`None`: the agent teaches AIntern's own call format and recognizes every format).
    fn chat_format(&self) -> Option<ChatFormat> {
        None
    }

    /// What the backend knows about the model's size (nothing, by default).
    fn model_details(&self) -> ModelDetails {
        ModelDetails::default()
    }

    /// The tokens `request`'s prompt takes, rendered and tokenized as the backend would
    /// send it to the model; `None` when the backend cannot count (the agent then
    /// estimates).
    ///
    /// # Errors
    /// [`Error::Llm`] when the request cannot be rendered.
    async fn count_tokens(&self, request: &LlmRequest) -> Result<Option<u64>, Error> {
        let _ = request;
        Ok(None)
    }

    /// Keep what lets a later process continue `session` without evaluating it again,
    /// when the backend was set up to (a llama model saves its context's state for the
    /// session; llama-server saves the session's slot). The agent calls it when a request
    /// ends. Returns whether anything was kept; by default nothing is.
    ///
    /// # Errors
    /// [`Error::Llm`] when keeping failed; the conversation itself is never affected.
    async fn keep_session(&self, session: &SessionKey) -> Result<bool, Error> {
        let _ = session;
        Ok(false)
    }
}

/// A shared model is a model: an application can keep one handle (to inspect a scripted
/// model's requests, or to serve two agents) and give the agent another.
#[async_trait]
impl<T: LlmService + ?Sized> LlmService for Arc<T> {
    fn model_name(&self) -> String {
        (**self).model_name()
    }

    fn is_model_loaded(&self) -> bool {
        (**self).is_model_loaded()
    }

    async fn generate(&self, request: LlmRequest) -> Result<LlmStream, Error> {
        (**self).generate(request).await
    }

    fn chat_format(&self) -> Option<ChatFormat> {
        (**self).chat_format()
    }

    fn model_details(&self) -> ModelDetails {
        (**self).model_details()
    }

    async fn count_tokens(&self, request: &LlmRequest) -> Result<Option<u64>, Error> {
        (**self).count_tokens(request).await
    }

    async fn keep_session(&self, session: &SessionKey) -> Result<bool, Error> {
        (**self).keep_session(session).await
    }
}

/// A model's own way of calling tools, as its chat template shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ChatFormat {
    /// The call format's name (as `aintern parse --list-formats` names it).
    pub call_format: String,
    /// The template renders the offered tools itself: the model is shown them in its own
    /// format, and the system prompt adds no second call language.
    pub renders_tools: bool,
    /// The generation prompt opens a reasoning block: the reply starts inside it.
    pub starts_in_thinking: bool,
    /// With server-side calls ([`ChatFormat::NATIVE`]): the model's own call format, as
    /// the server's template shows it, when known. The text the server leaves is then
    /// read as a reply in that format — the other spellings its models write (a fenced
    /// or bare call object) included — for the calls the server's parser did not take.
    pub text_format: Option<String>,
}

impl ChatFormat {
    /// The [`ChatFormat::call_format`] of a backend whose server takes the model's output
    /// apart itself (an OpenAI-compatible server's `tool_calls`): calls arrive as
    /// [`crate::LlmChunk::ToolCall`], and the text holds none (call-like text stays text).
    pub const NATIVE: &'static str = "native";

    /// What a backend with server-side tool calls reports: tools rendered by the server,
    /// calls delivered structured.
    pub fn native() -> Self {
        ChatFormat {
            call_format: Self::NATIVE.to_string(),
            renders_tools: true,
            starts_in_thinking: false,
            text_format: None,
        }
    }
}

/// Decides whether a tool call may run, needs approval, or is refused, and remembers
/// decisions (seed 001 part h, with the seed's TODOs done).
#[async_trait]
pub trait PermissionManager: Send + Sync {
    /// Check a call made in conversation `conversation_id`.
    async fn check_permission(
        &self,
        conversation_id: Uuid,
        request: &ToolCallRequest,
    ) -> Result<PermissionCheckResult, Error>;

    /// Remember a decision on `request` as far as the decision says (session or tool).
    async fn remember_decision(
        &self,
        conversation_id: Uuid,
        request: &ToolCallRequest,
        decision: &ApprovalDecision,
    ) -> Result<(), Error>;

    /// Forget what was remembered for one conversation.
    async fn clear_session_permissions(&self, conversation_id: Uuid) -> Result<(), Error>;

    /// The persistent settings for a tool.
    async fn get_tool_permissions(
        &self,
        tool_id: &str,
    ) -> Result<Option<ToolPermissionSettings>, Error>;

    /// Replace the persistent settings for a tool.
    async fn set_tool_permissions(
        &self,
        tool_id: &str,
        settings: ToolPermissionSettings,
    ) -> Result<(), Error>;

    /// Every tool's persistent settings.
    async fn all_tool_permissions(&self) -> Result<Vec<ToolPermissionSettings>, Error>;

    /// Remove a tool's persistent settings; returns whether there were any.
    async fn remove_tool_permissions(&self, tool_id: &str) -> Result<bool, Error>;
}

/// Keeps permission settings between runs.
#[async_trait]
pub trait PermissionStore: Send + Sync {
    /// Every tool's settings, by tool id. An absent store is empty; an unreadable or
    /// corrupt one is an error, never "allow".
    async fn load(&self) -> Result<BTreeMap<String, ToolPermissionSettings>, Error>;

    /// Replace everything stored with `settings`.
    async fn save(&self, settings: &BTreeMap<String, ToolPermissionSettings>) -> Result<(), Error>;

    /// Apply `change` to the settings as they are stored now and save the result, as one
    /// step: a store several processes share re-reads under a lock, so that concurrent
    /// changes are never lost. Returns the settings saved. A `change` that fails saves
    /// nothing.
    ///
    /// The default (load, change, save) is right only for a store no other process
    /// writes; stores on shared files override it.
    async fn update(&self, change: PermissionChange) -> Result<PermissionMap, Error> {
        let mut settings = self.load().await?;
        change(&mut settings)?;
        self.save(&settings).await?;
        Ok(settings)
    }
}

/// Every tool's permission settings, by tool id.
pub type PermissionMap = BTreeMap<String, ToolPermissionSettings>;

/// A change to the stored permission settings (see [`PermissionStore::update`]).
pub type PermissionChange = Box<dyn FnOnce(&mut PermissionMap) -> Result<(), Error> + Send>;

/// Looks at the workspace's git history (seed 004's "checking git commits" after a tool).
#[async_trait]
pub trait GitInspector: Send + Sync {
    /// The commit HEAD points at, or `None` when `workspace` is not a git repository (or
    /// has no commit yet).
    async fn head(&self, workspace: &Path) -> Result<Option<String>, Error>;

    /// The commits after `since` up to HEAD, oldest first, with the files each touched
    /// (relative to the workspace).
    async fn commits_since(&self, workspace: &Path, since: &str) -> Result<Vec<GitCommit>, Error>;
}

/// When in a request the workspace is recorded (see [`Checkpointer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointMoment {
    /// Before the request's first call that may change anything.
    BeforeChange,
    /// At the end of a request that recorded a [`CheckpointMoment::BeforeChange`]: the
    /// state the agent left (a later difference from it is someone else's change).
    AfterRequest,
}

/// Records the workspace before the agent changes it, so a person can undo a request.
/// The agent calls it at most twice a request: before the first call that is not known to
/// be read-only, and at the end of a request that did.
#[async_trait]
pub trait Checkpointer: Send + Sync {
    /// Record `workspace` as it is now, for the request of `conversation` whose words
    /// (shortened) are `label`; the checkpoint's number.
    async fn record(
        &self,
        workspace: &Path,
        moment: CheckpointMoment,
        conversation: uuid::Uuid,
        label: &str,
    ) -> Result<u64, Error>;
}

/// Formats files after a tool changed them (seed 004's autoformatters).
#[async_trait]
pub trait Formatter: Send + Sync {
    /// The formatter's name for events (`"rustfmt"`).
    fn name(&self) -> String;

    /// Whether it formats this file (a workspace-relative path), usually by extension.
    fn handles(&self, path: &str) -> bool;

    /// Format `files` (workspace-relative) and return those whose content changed.
    async fn format(&self, workspace: &Path, files: &[String]) -> Result<Vec<String>, Error>;
}

/// A stream of agent events.
pub type EventStream = BoxStream<'static, AgentEvent>;

/// The agent (seed 001 part h): turns a request into a stream of events.
pub trait AgentService: Send + Sync {
    /// Start processing `request`. Events arrive on the returned stream, the last being
    /// `agent_complete` (or a fatal `agent_error`). Dropping the stream cancels the request.
    ///
    /// # Errors
    /// [`Error::Busy`] when a request is already running.
    fn process_message(&self, request: AgentRequest) -> Result<EventStream, Error>;

    /// Cancel the running request, if any.
    fn cancel(&self);

    /// The agent machine's current state.
    fn state(&self) -> AgentState;

    /// Whether a request is running.
    fn is_processing(&self) -> bool;

    /// The running request's iteration (0 when idle).
    fn current_iteration(&self) -> u32;

    /// Every agent-state change from now on.
    fn subscribe_state_changes(&self) -> BoxStream<'static, AgentStateChange>;

    /// Answer a pending approval for tool call `call_id`.
    ///
    /// # Errors
    /// [`Error::NoPendingApproval`] when that call is not waiting.
    fn provide_approval(&self, call_id: Uuid, decision: ApprovalDecision) -> Result<(), Error>;

    /// Send a message into the running request. `Ok` is a promise that the message is not
    /// lost: it reaches the model in this request — with the next tool results (seed 004's
    /// "gathering additional messages"), or, when the model answers without calling a
    /// tool, the model is asked again with the message after its answer (within the
    /// request's iteration limit).
    ///
    /// When the request ends before the message reached the model (cancelled, failed,
    /// timed out, a limit or the budget reached), the message is carried: it is added to
    /// the conversation the agent keeps (as a user message after the request's own), so a
    /// request that continues that conversation sends it to the model before its own
    /// message, and a `messages_carried` event
    /// ([`crate::MessagesCarriedEvent`]), just before the request's terminal event, lists
    /// every message carried.
    ///
    /// # Errors
    /// [`Error::NotProcessing`] when no request is running; [`Error::RequestEnding`] once
    /// the running request has taken its final answer and takes no more messages. Either
    /// way the message was not delivered.
    fn send_user_message(&self, text: String) -> Result<(), Error>;
}

setters!(ChatFormat {
    with_call_format => call_format: String,
    with_renders_tools => renders_tools: bool,
    with_starts_in_thinking => starts_in_thinking: bool,
    with_text_format => text_format: Option<String>,
});
