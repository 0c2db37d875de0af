//! One request: what the loop keeps, how it reports (events, both machines), how it starts
//! and how it is stopped from outside.
//!
//! The stages live beside it: [`super::iterate`] (the loop), [`super::generate`] (asking
//! the model, parsing its reply), [`super::prepare`] and [`super::approval`] (lookup,
//! validation, assessment, permission, approval), [`super::execute`] (running the tools),
//! [`super::recheck`] (a call checked again after an earlier call of its reply could have
//! changed what it touches), [`super::after_tools`] (git, formatters, budget, gathered
//! messages) and [`super::finish`] (the one terminal event).

use super::guard::{guarded, panic_message};
use super::prompt;
use super::{lock, RunHandle, Shared, StopReason};
use core_models::{
    AgentEvent, AgentRequest, AgentStateTransition as T, ChatMessage, Error, RiskLevel,
    StateChangedEvent, Tool, ToolCallRequest, ToolChoice, ToolResult, ToolUsageSummary,
    TurnState as S,
};
use futures::FutureExt;
use std::collections::{BTreeMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Why the loop ended.
pub(super) enum Outcome {
    Finished,
    MaxIterations(u32),
    Budget(String),
    Cancelled,
    Timeout,
    LlmFailed(Error),
    /// The answer does not match the output schema, after one retry: why.
    InvalidOutput(String),
    /// Something the loop called panicked outside the guarded tool calls.
    Panicked(String),
}

/// The loop was stopped from outside (cancel, timeout) while waiting.
pub(super) struct Stopped;

/// One call after lookup, validation, assessment, permission and approval.
pub(super) enum Prepared {
    /// Will run.
    Run {
        call: ToolCallRequest,
        tool: Arc<dyn Tool>,
        /// A person, a remembered decision or a session permission approved it (the tool
        /// is told so).
        approved: bool,
        /// The risk a person approved the call at, when a person did.
        person: Option<RiskLevel>,
    },
    /// Settled without running (unknown tool, invalid, denied, repeated…).
    Settled {
        call: ToolCallRequest,
        result: ToolResult,
    },
}

impl Prepared {
    pub(super) fn call(&self) -> &ToolCallRequest {
        match self {
            Prepared::Run { call, .. } | Prepared::Settled { call, .. } => call,
        }
    }
}

/// Most of a reply's output as written kept for the history; past it only the visible text
/// and the structured calls are kept (no prompt holds that much of one reply, and the
/// calls are what runs: a call carrying a 50 MB file is not held twice).
pub(super) const RAW_KEPT: usize = 1 << 20;

/// A model reply.
pub(super) struct Reply {
    /// The output as written, while it is at most [`RAW_KEPT`] bytes.
    pub(super) raw: String,
    /// The output grew past [`RAW_KEPT`]: `raw` is empty and not kept.
    pub(super) raw_dropped: bool,
    pub(super) visible: String,
    pub(super) thinking: String,
    pub(super) calls: Vec<ToolCallRequest>,
    /// How much of `raw` was written when the last call unlike every earlier one was read.
    pub(super) raw_after_new_call: usize,
    /// A loop was found in the reply and reported.
    pub(super) looped: bool,
    /// The reply was held to the request's output schema by the backend.
    pub(super) held_to_schema: bool,
}

impl Reply {
    /// The reply as a history message: visible text, reasoning and structured calls,
    /// with the output as written for templates that cannot render calls.
    pub(super) fn message(&self) -> core_models::ChatMessage {
        let calls = self
            .calls
            .iter()
            .map(|c| core_models::MessageToolCall {
                id: c.history_id(),
                name: c.tool_id.clone(),
                arguments: c.parameters.clone(),
            })
            .collect();
        let thinking = self.thinking.trim();
        let reasoning = (!thinking.is_empty()).then(|| std::sync::Arc::from(thinking));
        // Calls written in another spelling than the model's own come back in its own
        // syntax, as it was trained to see them: alone, without the prose around them
        // (which told a person, not the model, what it would do: seen again, a model
        // copies it instead of answering from the results).
        let recovered = self.calls.iter().any(|c| c.recovered.is_some());
        let text = if recovered { "" } else { self.visible.trim() };
        let mut message = core_models::ChatMessage::assistant_with_calls(
            text,
            calls,
            reasoning,
            self.raw.as_str(),
        );
        if self.raw_dropped {
            message.original = None;
        }
        message
    }

    /// Keep `text`, the next piece of the output, as written (see [`RAW_KEPT`]).
    pub(super) fn keep(&mut self, text: String) {
        if self.raw_dropped {
            return;
        }
        if self.raw.len() + text.len() > RAW_KEPT {
            self.raw_dropped = true;
            self.raw = String::new();
        } else if self.raw.is_empty() {
            self.raw = text;
        } else {
            self.raw.push_str(&text);
        }
    }

    /// The answer as the history keeps it: as written, or its visible text when that was
    /// not kept.
    pub(super) fn answer_text(&self) -> &str {
        if self.raw_dropped {
            &self.visible
        } else {
            &self.raw
        }
    }

    /// [`Reply::answer_text`], taken.
    pub(super) fn into_answer(self) -> String {
        if self.raw_dropped {
            self.visible
        } else {
            self.raw
        }
    }
}

pub(crate) struct Run {
    pub(super) shared: Arc<Shared>,
    pub(super) handle: RunHandle,
    pub(super) request: AgentRequest,
    tx: mpsc::UnboundedSender<AgentEvent>,
    pub(super) started: Instant,
    pub(super) workspace: Option<PathBuf>,
    pub(super) iteration: u32,
    pub(super) tokens: u64,
    pub(super) prompt_tokens: u64,
    pub(super) completion_tokens: u64,
    /// Prompt tokens the backend took from its cache, across generations.
    pub(super) cached_prompt_tokens: u64,
    /// Tokens of the replies whose generation time the backend measured, and that time:
    /// the generation speed.
    pub(super) timed_tokens: u64,
    pub(super) generation_time: std::time::Duration,
    pub(super) tools_executed: u32,
    /// Calls denied: by a person, by silence or by the permission settings.
    pub(super) tools_denied: std::sync::atomic::AtomicU32,
    pub(super) usage: BTreeMap<String, ToolUsageSummary>,
    pub(super) history: Vec<ChatMessage>,
    /// Where the current request's own messages start in `history` (what came before is
    /// earlier turns, which compaction may summarize).
    pub(super) request_start: usize,
    /// The workspace's names as the request started (empty: none told), once known.
    pub(super) listing: Option<String>,
    pub(super) final_response: String,
    /// Results of calls made in this request, to answer repeats.
    pub(super) done: Vec<(ToolCallRequest, ToolResult)>,
    /// Every call of this request with its result, run or not (refused, invalid,
    /// denied): what the model has tried so far.
    pub(super) tried: Vec<(ToolCallRequest, ToolResult)>,
    /// The messages sent into the request that reached the model, in order.
    pub(super) received: Vec<String>,
    /// The checkpoint recorded before the request's first change, once recorded.
    pub(super) checkpoint: Option<u64>,
    /// The ids of the tools offered in this request: a call of any other tool is refused.
    pub(super) offered: HashSet<String>,
    /// The request's output schema, compiled.
    pub(super) output_schema: Option<Arc<crate::OutputSchema>>,
    /// The answer's value, valid against the output schema.
    pub(super) output: Option<serde_json::Value>,
    /// The model was told once what was wrong with its answer.
    pub(super) output_retried: bool,
}

/// The longest wait for the backend to keep a session's cache at a request's end.
const KEEP_SESSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Run {
    /// Count one generation's tokens in the request's totals. Counts from a server are
    /// untrusted: they saturate, never wrap.
    pub(super) fn count_usage(&mut self, usage: &core_models::LlmUsage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(usage.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(usage.generated_tokens);
        self.cached_prompt_tokens = self
            .cached_prompt_tokens
            .saturating_add(usage.cached_prompt_tokens);
        if usage.generated_tokens > 0 && !usage.generation_time.is_zero() {
            self.timed_tokens = self.timed_tokens.saturating_add(usage.generated_tokens);
            self.generation_time = self.generation_time.saturating_add(usage.generation_time);
        }
    }

    /// Count a call denied before it ran.
    pub(super) fn count_denial(&self) {
        self.tools_denied
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn new(
        shared: Arc<Shared>,
        handle: RunHandle,
        request: AgentRequest,
        output_schema: Option<Arc<crate::OutputSchema>>,
        tx: mpsc::UnboundedSender<AgentEvent>,
    ) -> Self {
        let workspace = request
            .tool_context
            .as_ref()
            .filter(|c| c.has_workspace())
            .and_then(|c| c.workspace_path.clone());
        Run {
            shared,
            handle,
            request,
            tx,
            started: Instant::now(),
            workspace,
            iteration: 0,
            tokens: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cached_prompt_tokens: 0,
            timed_tokens: 0,
            generation_time: std::time::Duration::ZERO,
            tools_executed: 0,
            tools_denied: std::sync::atomic::AtomicU32::new(0),
            usage: BTreeMap::new(),
            history: Vec::new(),
            request_start: 0,
            listing: None,
            final_response: String::new(),
            done: Vec::new(),
            tried: Vec::new(),
            received: Vec::new(),
            checkpoint: None,
            offered: HashSet::new(),
            output_schema,
            output: None,
            output_retried: false,
        }
    }

    /// Run the request to its end: exactly one terminal event, the last one. The run
    /// handle is released even if this panics; a panic inside the loop ends the request
    /// with a fatal error instead of a silent end of the stream.
    pub(crate) async fn execute(mut self) {
        struct Release(Arc<Shared>);
        impl Drop for Release {
            fn drop(&mut self) {
                *lock(&self.0.run) = None;
            }
        }
        let _release = Release(Arc::clone(&self.shared));
        let finished = CancellationToken::new();
        self.spawn_watchers(finished.clone());
        self.start();
        self.request_submitted_hooks().await;
        let outcome = match AssertUnwindSafe(self.iterate()).catch_unwind().await {
            Ok(outcome) => outcome,
            Err(panic) => Outcome::Panicked(panic_message(panic.as_ref())),
        };
        self.checkpoint_after().await;
        self.request_ended_hooks(&outcome).await;
        if !matches!(outcome, Outcome::Panicked(_)) {
            self.keep_session().await;
        }
        self.finish(outcome);
        finished.cancel();
    }

    /// The key of the conversation this request continues (see [`LlmRequest::session`]).
    ///
    /// [`LlmRequest::session`]: core_models::LlmRequest::session
    pub(super) fn session_key(&self) -> core_models::SessionKey {
        self.request.conversation_id.into()
    }

    /// Ask the backend to keep what lets a later process continue the conversation (see
    /// [`core_models::LlmService::keep_session`]), before the terminal event: a front-end
    /// may exit as soon as it sees it. A failure costs only speed: it is logged.
    async fn keep_session(&self) {
        let key = self.session_key();
        let keeping = self.shared.ports.llm.keep_session(&key);
        match tokio::time::timeout(KEEP_SESSION_TIMEOUT, keeping).await {
            Ok(Ok(true)) => tracing::debug!(session = %key, "the backend kept the session's cache"),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => {
                tracing::warn!(session = %key, error = %e, "the session's cache could not be kept")
            }
            Err(_) => tracing::warn!(session = %key, "keeping the session's cache took too long"),
        }
    }

    /// Stop when the request times out or the event stream is dropped.
    fn spawn_watchers(&self, finished: CancellationToken) {
        let timeout = self.shared.config.agent_request_timeout();
        let handle = self.handle.clone();
        let done = finished.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(timeout) => handle.stop(StopReason::Timeout),
                _ = done.cancelled() => {}
            }
        });
        let tx = self.tx.clone();
        let handle = self.handle.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = tx.closed() => handle.stop(StopReason::Cancelled),
                _ = finished.cancelled() => {}
            }
        });
    }

    // --- events and machines ---------------------------------------------------------------

    pub(super) fn emit(&self, event: impl Into<AgentEvent>) {
        let event = event.into();
        self.shared.emitter.emit(&event);
        let _ = self.tx.send(event);
    }

    pub(super) fn agent(&self, transition: T, context: Option<&str>) {
        match self.shared.machine.transition(transition, context) {
            Ok(change) => self.emit(StateChangedEvent::agent(&change)),
            Err(e) => invalid_transition(&e.to_string()),
        }
    }

    pub(super) fn turn(&self, to: S, context: Option<&str>) {
        match self.shared.turn.transition(to, context) {
            Ok(change) => self.emit(StateChangedEvent::turn(&change)),
            Err(e) => invalid_transition(&e.to_string()),
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.handle.stop.is_cancelled()
    }

    pub(super) fn stop_outcome(&self) -> Outcome {
        match self.handle.reason() {
            Some(StopReason::Timeout) => Outcome::Timeout,
            _ => Outcome::Cancelled,
        }
    }

    // --- the start -------------------------------------------------------------------------

    fn start(&mut self) {
        let shared = Arc::clone(&self.shared);
        let request_id = self.request.request_id;
        shared.machine.reset();
        match shared.machine.start(request_id) {
            Ok(change) => self.emit(StateChangedEvent::agent(&change)),
            Err(e) => invalid_transition(&e.to_string()),
        }
        {
            let mut conversation = lock(&shared.conversation);
            if conversation.0 != Some(self.request.conversation_id) {
                conversation.0 = Some(self.request.conversation_id);
                shared.turn.reset();
            }
        }
        if shared.turn.current_state() == S::Ready {
            match shared.turn.start(request_id) {
                Ok(change) => self.emit(StateChangedEvent::turn(&change)),
                Err(e) => invalid_transition(&e.to_string()),
            }
        } else {
            // The conversation goes on: its machine's changes are this request's now.
            shared.turn.set_request_id(request_id);
        }
        self.history = self.request.history.clone();
        self.request_start = self.history.len();
        self.history.push(prompt::user_message(
            &self.request.message,
            &self.request.attached_files,
        ));
    }

    pub(super) fn tools_offered(&self) -> Vec<Arc<dyn Tool>> {
        tools_offered(&self.shared, &self.request)
    }
}

/// The tools `request` may use: those the registry offers, less any whose `definition`
/// or `is_available` panics — left out, with an error in the log (see [`super::guard`]). A
/// registry that panics itself offers none.
pub(super) fn tools_offered(shared: &Shared, request: &AgentRequest) -> Vec<Arc<dyn Tool>> {
    let choice_allows = request.tool_choice != ToolChoice::None;
    if !(request.enable_tools && shared.config.enabled && choice_allows) {
        return Vec::new();
    }
    let registry = &shared.ports.registry;
    let context = request.tool_context.as_ref();
    // Each tool asked on its own first, so that a tool that panics is named in the log
    // (the registry's own answer may leave it out silently, or panic as a whole).
    let all = guarded(|| registry.all_tools()).unwrap_or_default();
    let healthy: HashSet<String> = all
        .iter()
        .filter_map(|tool| {
            let id = match super::guard::definition(tool.as_ref()) {
                Ok(definition) => definition.id.clone(),
                Err(panic) => {
                    tracing::error!(%panic, "a tool panicked giving its definition: it is not offered");
                    return None;
                }
            };
            if let Some(Err(panic)) = context.map(|c| guarded(|| tool.is_available(c))) {
                tracing::error!(%panic, tool = %id, "a tool panicked saying whether it is available: it is not offered");
                return None;
            }
            Some(id)
        })
        .collect();
    let offered = match guarded(|| registry.available_tools(context)) {
        Ok(offered) => offered,
        Err(panic) => {
            tracing::error!(%panic, "the tool registry panicked listing the available tools: no tool is offered");
            return Vec::new();
        }
    };
    offered
        .into_iter()
        .filter(|tool| {
            super::guard::definition(tool.as_ref()).is_ok_and(|d| healthy.contains(&d.id))
        })
        .collect()
}

/// An invalid transition is a bug in the loop: loud in debug builds, logged in release.
pub(super) fn invalid_transition(message: &str) {
    tracing::error!(%message, "invalid state transition in the agent loop");
    debug_assert!(
        false,
        "invalid state transition in the agent loop: {message}"
    );
}
