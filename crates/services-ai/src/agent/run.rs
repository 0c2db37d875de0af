//! One request: the agent loop.

use super::prompt;
use super::{lock, RunHandle, Shared, StopReason};
use crate::parser::{FunctionCallParser, ParseEvent, ParserOptions, ToolCallFormat, ToolCatalog};
use core_models::{
    AgentCompleteEvent, AgentErrorCategory, AgentErrorEvent, AgentEvent, AgentIterationEvent,
    AgentRequest, AgentStateTransition as T, ApprovalAnswer, ApprovalDecision,
    ApprovalRequestEvent, AutoformatEvent, ChatMessage, CompletionReason, Error,
    GitCommitsDetectedEvent, LlmChunk, LlmRequest, ProgressReporter, RiskLevel, StateChangedEvent,
    TextGenerationEvent, Tool, ToolCallRequest, ToolCallRequestEvent, ToolCategory, ToolChoice,
    ToolExecutionContext, ToolExecutionEvent, ToolResult, ToolResultEvent, ToolUsageSummary,
    TurnState as S, TURN_EDGES,
};
use futures::StreamExt;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};

/// How long a cancelled or timed-out tool may take to return on its own before its future
/// is dropped.
const GRACE: Duration = Duration::from_millis(50);

/// Why the loop ended.
enum Outcome {
    Finished,
    MaxIterations(u32),
    Budget(String),
    Cancelled,
    Timeout,
    LlmFailed(Error),
}

/// The loop was stopped from outside (cancel, timeout) while waiting.
struct Stopped;

/// One call after lookup, validation, permission and approval.
enum Prepared {
    /// Will run.
    Run {
        call: ToolCallRequest,
        tool: Arc<dyn Tool>,
        approved: bool,
    },
    /// Settled without running (unknown tool, invalid, denied, repeated…).
    Settled {
        call: ToolCallRequest,
        result: ToolResult,
    },
}

/// A model reply.
struct Reply {
    raw: String,
    visible: String,
    calls: Vec<ToolCallRequest>,
}

pub(crate) struct Run {
    shared: Arc<Shared>,
    handle: RunHandle,
    request: AgentRequest,
    tx: mpsc::UnboundedSender<AgentEvent>,
    messages: mpsc::UnboundedReceiver<String>,
    started: Instant,
    workspace: Option<PathBuf>,
    iteration: u32,
    tokens: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    tools_executed: u32,
    usage: BTreeMap<String, ToolUsageSummary>,
    history: Vec<ChatMessage>,
    final_response: String,
    /// Results of calls made in this request, to answer repeats.
    done: Vec<(ToolCallRequest, ToolResult)>,
}

impl Run {
    pub(crate) fn new(
        shared: Arc<Shared>,
        handle: RunHandle,
        request: AgentRequest,
        tx: mpsc::UnboundedSender<AgentEvent>,
        messages: mpsc::UnboundedReceiver<String>,
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
            messages,
            started: Instant::now(),
            workspace,
            iteration: 0,
            tokens: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            tools_executed: 0,
            usage: BTreeMap::new(),
            history: Vec::new(),
            final_response: String::new(),
            done: Vec::new(),
        }
    }

    /// Run the request to its end; the run handle is released even if this panics.
    pub(crate) async fn execute(mut self) {
        struct Release(Arc<Shared>);
        impl Drop for Release {
            fn drop(&mut self) {
                *lock(&self.0.run) = None;
            }
        }
        let _release = Release(Arc::clone(&self.shared));
        let finished = tokio_util::sync::CancellationToken::new();
        self.spawn_watchers(finished.clone());
        self.start();
        let outcome = self.iterate().await;
        self.finish(outcome);
        finished.cancel();
    }

    /// Stop when the request times out or the event stream is dropped.
    fn spawn_watchers(&self, finished: tokio_util::sync::CancellationToken) {
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

    fn emit(&self, event: impl Into<AgentEvent>) {
        let event = event.into();
        self.shared.emitter.emit(&event);
        let _ = self.tx.send(event);
    }

    fn agent(&self, transition: T, context: Option<&str>) {
        match self.shared.machine.transition(transition, context) {
            Ok(change) => self.emit(StateChangedEvent::agent(&change)),
            Err(e) => invalid_transition(&e.to_string()),
        }
    }

    fn turn(&self, to: S, context: Option<&str>) {
        match self.shared.turn.transition(to, context) {
            Ok(change) => self.emit(StateChangedEvent::turn(&change)),
            Err(e) => invalid_transition(&e.to_string()),
        }
    }

    /// Walk the turn machine along the diagram's edges to the nearest of `targets`, then
    /// back to WaitingForUserInput.
    fn turn_end(&self, targets: &[S], context: &str) {
        let from = self.shared.turn.current_state();
        if from == S::WaitingForUserInput {
            return;
        }
        for step in shortest_path(from, targets) {
            self.turn(step, Some(context));
        }
        if self.shared.turn.current_state() != S::WaitingForUserInput {
            self.turn(S::WaitingForUserInput, Some(context));
        }
    }

    fn stopped(&self) -> bool {
        self.handle.stop.is_cancelled()
    }

    fn stop_outcome(&self) -> Outcome {
        match self.handle.reason() {
            Some(StopReason::Timeout) => Outcome::Timeout,
            _ => Outcome::Cancelled,
        }
    }

    // --- the loop ------------------------------------------------------------------------

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
        }
        self.history = self.request.history.clone();
        self.history.push(prompt::user_message(
            &self.request.message,
            &self.request.attached_files,
        ));
    }

    fn tools_offered(&self) -> Vec<Arc<dyn Tool>> {
        let choice_allows = self.request.tool_choice != ToolChoice::None;
        if !(self.request.enable_tools && self.shared.config.enabled && choice_allows) {
            return Vec::new();
        }
        self.shared
            .ports
            .registry
            .available_tools(self.request.tool_context.as_ref())
    }

    async fn iterate(&mut self) -> Outcome {
        let max = self
            .request
            .max_iterations
            .unwrap_or(self.shared.config.max_agent_iterations)
            .max(1);
        let tools = self.tools_offered();
        let definitions: Vec<_> = tools.iter().map(|t| t.definition().clone()).collect();
        let system = prompt::system_prompt(
            &self.shared.config,
            self.request.system_prompt.as_deref(),
            &definitions,
        );
        // The model is given the tools as the prompt shows them: with the compact prompt,
        // only their required parameters (a grammar-constrained call then cannot invent
        // the optional ones either).
        let definitions = prompt::offered_definitions(&self.shared.config, definitions);
        let catalog = ToolCatalog::Registry(Arc::clone(&self.shared.ports.registry));
        let parser = FunctionCallParser::new(catalog.clone())
            .with_options(self.shared.parser_options.clone());
        // When no call may happen, nothing the model writes is run: call-like text stays
        // text.
        let text_only = FunctionCallParser::new(catalog)
            .with_options(ParserOptions::only([ToolCallFormat::Reasoning]));
        let mut previous_tools = 0;
        let mut skip_begin = false;
        loop {
            if self.stopped() {
                return self.stop_outcome();
            }
            if self.iteration >= max {
                return Outcome::MaxIterations(max);
            }
            self.iteration += 1;
            if self.iteration == 1 {
                self.agent(T::BeginThinking, None);
                self.turn(S::SendingToLlm, None);
            } else {
                if !skip_begin {
                    self.agent(T::BeginThinking, None);
                }
                self.turn(S::SendingToolResults, None);
            }
            skip_begin = false;
            self.emit(AgentIterationEvent::create(
                self.request.request_id,
                self.iteration,
                max,
                previous_tools,
                self.tools_executed,
                self.started.elapsed(),
            ));

            let choice = if tools.is_empty() {
                ToolChoice::None
            } else {
                match (&self.request.tool_choice, self.iteration) {
                    (ToolChoice::Auto, _) => ToolChoice::Auto,
                    // A forced call (required or a named tool) is one round of tool use:
                    // the first reply must call, the replies after the results answer.
                    (choice, 1) => choice.clone(),
                    _ => ToolChoice::None,
                }
            };
            let parser = if choice == ToolChoice::None {
                &text_only
            } else {
                &parser
            };
            let mut messages = Vec::with_capacity(self.history.len() + 1);
            if let Some(system) = &system {
                messages.push(ChatMessage::system(system.clone()));
            }
            messages.extend(self.history.iter().cloned());
            let llm_request = LlmRequest {
                messages,
                tools: definitions.clone(),
                tool_choice: choice,
                options: self.request.inference_options.clone().unwrap_or_default(),
            };
            let reply = match self.generate(llm_request, parser).await {
                Ok(reply) => reply,
                Err(Ok(Stopped)) => return self.stop_outcome(),
                Err(Err(e)) => return Outcome::LlmFailed(e),
            };

            if reply.calls.is_empty() {
                self.agent(T::NoToolCalls, None);
                self.final_response = reply.visible.trim().to_string();
                self.history.push(ChatMessage::assistant(reply.raw));
                self.agent(T::Complete, None);
                self.turn(S::EndOfTurn, None);
                self.turn(S::WaitingForUserInput, None);
                return Outcome::Finished;
            }

            self.agent(T::DetectToolCall, Some(&summarize_calls(&reply.calls)));
            self.turn(S::ToolUseRequested, None);
            self.history.push(ChatMessage::assistant(reply.raw));
            let total = u32::try_from(reply.calls.len()).unwrap_or(u32::MAX);
            for (i, call) in reply.calls.iter().enumerate() {
                self.emit(ToolCallRequestEvent::create(
                    self.request.request_id,
                    call.clone(),
                    u32::try_from(i).unwrap_or(u32::MAX),
                    total,
                    self.iteration,
                ));
            }

            let (prepared, asked) = match self.prepare(reply.calls).await {
                Ok(p) => p,
                Err(Stopped) => return self.stop_outcome(),
            };

            self.turn(S::CheckingForCancellation, None);
            if self.stopped() {
                self.turn(S::Cancelled, Some("cancelled before the tools ran"));
                self.turn(S::WaitingForUserInput, None);
                for p in &prepared {
                    let call = match p {
                        Prepared::Run { call, .. } | Prepared::Settled { call, .. } => call,
                    };
                    self.emit(ToolResultEvent::create(
                        self.request.request_id,
                        call,
                        ToolResult::failed("Cancelled before it ran"),
                        Duration::ZERO,
                        self.iteration,
                    ));
                }
                return self.stop_outcome();
            }
            self.turn(S::RunningTool, None);
            let runnable = prepared
                .iter()
                .filter(|p| matches!(p, Prepared::Run { .. }))
                .count();
            if runnable == 0 && asked {
                self.agent(T::ApprovalDenied, Some("no call may run"));
                skip_begin = true;
            } else {
                self.agent(T::ApprovalGranted, None);
            }
            let head_before = self.git_head().await;
            let results = self.execute_all(prepared).await;
            previous_tools = u32::try_from(runnable).unwrap_or(u32::MAX);
            if !skip_begin {
                self.agent(T::ToolComplete, None);
            }
            for (call, result) in &results {
                if self.shared.config.include_tool_results_in_history {
                    self.history.push(prompt::tool_result_message(
                        call,
                        result,
                        self.shared.config.max_tool_result_tokens,
                    ));
                }
            }
            if !self.shared.config.include_tool_results_in_history {
                self.history.push(ChatMessage::user(format!(
                    "({} tool call(s) ran; their results are not kept in this conversation)",
                    results.len()
                )));
            }
            if self.stopped() {
                return self.stop_outcome();
            }

            let edited = self.edited_files(&results);
            self.turn(S::CheckingGitCommits, None);
            self.check_git(head_before, edited).await;
            if self.shared.turn.current_state() != S::CheckingBudget {
                self.turn(S::CheckingBudget, None);
            }
            if let Some(why) = self.budget_exceeded() {
                self.turn(S::BudgetExceeded, Some(&why));
                self.turn(S::WaitingForUserInput, None);
                return Outcome::Budget(why);
            }
            self.turn(S::GatheringAdditionalMessages, None);
            let mut gathered = Vec::new();
            while let Ok(text) = self.messages.try_recv() {
                gathered.push(text);
            }
            for text in gathered {
                self.history.push(ChatMessage::user(text));
            }
            let delay = self.shared.config.iteration_delay();
            if !delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = self.handle.stop.cancelled() => {}
                }
            }
        }
    }

    /// Ask the model and stream its reply through the parser.
    async fn generate(
        &mut self,
        request: LlmRequest,
        parser: &FunctionCallParser,
    ) -> Result<Reply, Result<Stopped, Error>> {
        let stop = self.handle.stop.clone();
        let llm = Arc::clone(&self.shared.ports.llm);
        let mut stream = tokio::select! {
            r = llm.generate(request) => r.map_err(Err)?,
            _ = stop.cancelled() => return Err(Ok(Stopped)),
        };
        self.turn(S::ProcessingLlmResponse, None);
        let mut parsing = parser.streaming();
        let mut reply = Reply {
            raw: String::new(),
            visible: String::new(),
            calls: Vec::new(),
        };
        let buffer = if self.shared.config.enable_streaming {
            self.shared.config.streaming_buffer_size.max(1)
        } else {
            u32::MAX
        };
        let mut pending = (String::new(), false, 0u32); // text, is_thinking, chunks gathered
        loop {
            let item = tokio::select! {
                item = stream.next() => item,
                _ = stop.cancelled() => {
                    self.flush_text(&mut pending);
                    return Err(Ok(Stopped));
                }
            };
            match item {
                None => break,
                Some(Err(e)) => {
                    self.flush_text(&mut pending);
                    return Err(Err(e));
                }
                Some(Ok(LlmChunk::Usage(usage))) => {
                    self.prompt_tokens += usage.prompt_tokens;
                    self.completion_tokens += usage.generated_tokens;
                }
                Some(Ok(LlmChunk::Text { text })) => {
                    self.tokens += 1;
                    reply.raw.push_str(&text);
                    pending.2 += 1;
                    let events = parsing.process_token(&text);
                    self.handle_parse_events(events, &mut reply, &mut pending, buffer);
                    if pending.2 >= buffer {
                        self.flush_text(&mut pending);
                    }
                }
            }
        }
        let events = parsing.flush();
        self.handle_parse_events(events, &mut reply, &mut pending, buffer);
        self.flush_text(&mut pending);
        if self.completion_tokens == 0 {
            self.completion_tokens = self.tokens;
        }
        self.emit(TextGenerationEvent::complete(
            self.request.request_id,
            u32::try_from(self.tokens).unwrap_or(u32::MAX),
            self.iteration,
        ));
        Ok(reply)
    }

    fn handle_parse_events(
        &mut self,
        events: Vec<ParseEvent>,
        reply: &mut Reply,
        pending: &mut (String, bool, u32),
        buffer: u32,
    ) {
        for event in events {
            match event {
                ParseEvent::Text(text) | ParseEvent::Thinking(text) if text.is_empty() => {}
                ParseEvent::Text(text) => {
                    reply.visible.push_str(&text);
                    self.gather_text(pending, text, false, buffer);
                }
                ParseEvent::Thinking(text) => self.gather_text(pending, text, true, buffer),
                ParseEvent::ToolCall(mut call) => {
                    call.iteration_number = self.iteration;
                    reply.calls.push(call);
                }
                ParseEvent::Diagnostic(message) => {
                    self.emit(AgentErrorEvent::parsing_error(
                        self.request.request_id,
                        message,
                        self.iteration,
                    ));
                }
            }
        }
    }

    fn gather_text(
        &self,
        pending: &mut (String, bool, u32),
        text: String,
        thinking: bool,
        buffer: u32,
    ) {
        if pending.1 != thinking && !pending.0.is_empty() {
            let kept = pending.2;
            self.flush_text(pending);
            pending.2 = kept;
        }
        pending.0.push_str(&text);
        pending.1 = thinking;
        if buffer <= 1 {
            self.flush_text(pending);
        }
    }

    fn flush_text(&self, pending: &mut (String, bool, u32)) {
        if !pending.0.is_empty() {
            self.emit(TextGenerationEvent::token(
                self.request.request_id,
                std::mem::take(&mut pending.0),
                u32::try_from(self.tokens).unwrap_or(u32::MAX),
                pending.1,
                self.iteration,
            ));
        }
        pending.2 = 0;
    }

    // --- calls -------------------------------------------------------------------------------

    /// Lookup, validation, permission and approval for each call, in order. Returns the
    /// prepared calls and whether anyone was asked.
    async fn prepare(
        &mut self,
        calls: Vec<ToolCallRequest>,
    ) -> Result<(Vec<Prepared>, bool), Stopped> {
        let mut prepared = Vec::with_capacity(calls.len());
        let mut asked = false;
        let mut seen_now: HashSet<String> = HashSet::new();
        for mut call in calls {
            let key = format!("{}\u{0}{}", call.tool_id, call.parameters);
            if let Some((earlier, result)) = self.done.iter().find(|(c, _)| c.is_same_call(&call)) {
                let note = format!(
                    "Not run again: this exact call ({} with the same parameters) was already made in this request (call {}). Its result was:\n{}",
                    call.tool_id,
                    earlier.id,
                    if result.success { result.content.clone() } else { format!("Error: {}", result.error_message.clone().unwrap_or_default()) }
                );
                prepared.push(Prepared::Settled {
                    call,
                    result: ToolResult {
                        content: note,
                        ..result.clone()
                    },
                });
                continue;
            }
            if !seen_now.insert(key) {
                let result = ToolResult::failed(format!(
                    "Not run: the same call ({} with the same parameters) appears earlier in this reply",
                    call.tool_id
                ));
                prepared.push(Prepared::Settled { call, result });
                continue;
            }
            let Some(tool) = self.shared.ports.registry.get_tool(&call.tool_id) else {
                let result = ToolResult::failed(format!("Tool not found: {}", call.tool_id));
                prepared.push(Prepared::Settled { call, result });
                continue;
            };
            let validation = tool.validate(&call.parameters);
            call.validation_result = Some(validation.clone());
            if !validation.is_valid {
                let result = ToolResult::failed(format!(
                    "Validation failed: {}",
                    validation.errors.join("; ")
                ));
                prepared.push(Prepared::Settled { call, result });
                continue;
            }
            let conversation = self.request.conversation_id;
            let permission = self
                .shared
                .ports
                .permissions
                .check_permission(conversation, &call)
                .await;
            let permission = match permission {
                Ok(p) => p,
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
                    let result =
                        ToolResult::failed("Not run: the permission settings could not be read");
                    prepared.push(Prepared::Settled { call, result });
                    continue;
                }
            };
            if permission.is_allowed {
                prepared.push(Prepared::Run {
                    call,
                    tool,
                    approved: permission.was_cached,
                });
                continue;
            }
            if !permission.requires_approval {
                let why = permission.denial_reason.unwrap_or_else(|| "denied".into());
                let result =
                    ToolResult::failed(format!("Denied by the permission settings: {why}"));
                prepared.push(Prepared::Settled { call, result });
                continue;
            }
            if !asked {
                self.agent(T::RequestApproval, Some(&call.tool_id));
                asked = true;
            }
            prepared.push(self.ask(call, tool).await?);
        }
        Ok((prepared, asked))
    }

    /// Ask for approval of one call and wait for the answer (or its timeout).
    async fn ask(
        &mut self,
        call: ToolCallRequest,
        tool: Arc<dyn Tool>,
    ) -> Result<Prepared, Stopped> {
        let timeout = self.shared.config.approval_timeout();
        let (event, rx) = ApprovalRequestEvent::create(
            self.request.request_id,
            call.clone(),
            timeout,
            self.iteration,
        );
        let event = event
            .with_details(approval_details(&call, tool.as_ref()))
            .with_warnings(approval_warnings(&call, tool.as_ref()));
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
                let result = ToolResult::failed(format!(
                    "Not approved: nobody answered within {}s, which counts as a denial",
                    timeout.as_secs()
                ));
                return Ok(Prepared::Settled { call, result });
            }
        };
        self.remember(&call, &decision).await;
        if !decision.approved {
            let reason = decision.reason.as_deref().unwrap_or("no reason given");
            let result = ToolResult::failed(format!("Denied by the user: {reason}"));
            return Ok(Prepared::Settled { call, result });
        }
        let mut call = call;
        if let Some(params) = decision.modified_parameters {
            let validation = tool.validate(&params);
            call.parameters = params;
            call.validation_result = Some(validation.clone());
            if !validation.is_valid {
                let result = ToolResult::failed(format!(
                    "Validation of the edited parameters failed: {}",
                    validation.errors.join("; ")
                ));
                return Ok(Prepared::Settled { call, result });
            }
        }
        Ok(Prepared::Run {
            call,
            tool,
            approved: true,
        })
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

    /// Run the calls that may run, at most `max_parallel_tool_calls` at once; results come
    /// back in call order.
    async fn execute_all(&mut self, prepared: Vec<Prepared>) -> Vec<(ToolCallRequest, ToolResult)> {
        let permits = Arc::new(Semaphore::new(
            self.shared.config.max_parallel_tool_calls.max(1) as usize,
        ));
        let this = &*self;
        let futures = prepared.into_iter().map(|p| {
            let permits = Arc::clone(&permits);
            async move {
                match p {
                    Prepared::Settled { call, result } => {
                        this.emit(ToolResultEvent::create(
                            this.request.request_id,
                            &call,
                            result.clone(),
                            Duration::ZERO,
                            this.iteration,
                        ));
                        (call, result, Duration::ZERO, false)
                    }
                    Prepared::Run {
                        call,
                        tool,
                        approved,
                    } => {
                        let _permit = permits.acquire().await;
                        let (result, elapsed) = this.execute_one(&call, tool, approved).await;
                        (call, result, elapsed, true)
                    }
                }
            }
        });
        let results = futures::future::join_all(futures).await;
        let mut out = Vec::with_capacity(results.len());
        for (call, result, elapsed, ran) in results {
            if ran {
                self.tools_executed += 1;
                self.usage
                    .entry(call.tool_id.clone())
                    .or_insert_with(|| ToolUsageSummary::new(&call.tool_id, &call.tool_name))
                    .record(result.success, elapsed);
                self.done.push((call.clone(), result.clone()));
            }
            out.push((call, result));
        }
        out
    }

    /// Run one call with its timeout, forwarding progress; retried once when configured.
    async fn execute_one(
        &self,
        call: &ToolCallRequest,
        tool: Arc<dyn Tool>,
        approved: bool,
    ) -> (ToolResult, Duration) {
        let started = Instant::now();
        let id = self.request.request_id;
        let attempts = if self.shared.config.auto_retry_failed_tools {
            2
        } else {
            1
        };
        let mut result = ToolResult::failed("not run");
        for attempt in 1..=attempts {
            self.emit(ToolExecutionEvent::starting(id, call, self.iteration));
            let (status, r) = self
                .attempt(call, Arc::clone(&tool), approved, started)
                .await;
            result = r;
            let elapsed = started.elapsed();
            match status {
                Status::Done if result.success => {
                    self.emit(ToolExecutionEvent::completed(
                        id,
                        call,
                        elapsed,
                        self.iteration,
                    ));
                    break;
                }
                Status::Done => {
                    let message = result.error_message.clone().unwrap_or_default();
                    self.emit(ToolExecutionEvent::failed(
                        id,
                        call,
                        message,
                        elapsed,
                        self.iteration,
                    ));
                    if attempt < attempts && !self.stopped() {
                        continue;
                    }
                    break;
                }
                Status::TimedOut => {
                    self.emit(ToolExecutionEvent::timed_out(
                        id,
                        call,
                        elapsed,
                        self.iteration,
                    ));
                    break;
                }
                Status::Cancelled => {
                    self.emit(ToolExecutionEvent::cancelled(
                        id,
                        call,
                        elapsed,
                        self.iteration,
                    ));
                    break;
                }
            }
        }
        let elapsed = started.elapsed();
        self.emit(ToolResultEvent::create(
            id,
            call,
            result.clone(),
            elapsed,
            self.iteration,
        ));
        (result, elapsed)
    }

    async fn attempt(
        &self,
        call: &ToolCallRequest,
        tool: Arc<dyn Tool>,
        approved: bool,
        started: Instant,
    ) -> (Status, ToolResult) {
        let token = self.handle.stop.child_token();
        let (progress, mut progress_rx) = ProgressReporter::channel();
        let context = ToolExecutionContext {
            call_id: call.id,
            request_id: self.request.request_id,
            session_id: self.request.conversation_id,
            workspace_path: self.workspace.clone(),
            parameters: call.parameters.clone(),
            cancellation: token.clone(),
            is_approved: approved,
            progress,
        };
        let executor = Arc::clone(&self.shared.ports.executor);
        let mut run = Box::pin(executor.execute(tool, context));
        let timeout = self.shared.config.tool_execution_timeout();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut progress_open = true;
        let status = loop {
            tokio::select! {
                biased;
                result = &mut run => {
                    // A tool that stopped because the request was stopped was cancelled.
                    let status = if !result.success && self.stopped() { Status::Cancelled } else { Status::Done };
                    return (status, result);
                }
                _ = &mut deadline => break Status::TimedOut,
                _ = self.handle.stop.cancelled() => break Status::Cancelled,
                p = progress_rx.recv(), if progress_open => match p {
                    Some(p) => self.emit(ToolExecutionEvent::in_progress(self.request.request_id, call, p, started.elapsed(), self.iteration)),
                    None => progress_open = false,
                },
            }
        };
        token.cancel();
        // Give the tool a moment to stop on its own; then its future is dropped.
        let _ = tokio::time::timeout(GRACE, &mut run).await;
        let message = match status {
            Status::TimedOut => format!("Timed out after {}s", timeout.as_secs_f64()),
            _ => "Cancelled".to_string(),
        };
        (status, ToolResult::failed(message))
    }

    // --- seed 004 checks ---------------------------------------------------------------------

    async fn git_head(&self) -> Option<String> {
        let (git, workspace) = (self.shared.ports.git.as_ref()?, self.workspace.as_ref()?);
        match git.head(workspace).await {
            Ok(head) => head,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the git HEAD");
                None
            }
        }
    }

    /// The workspace files that successful calls of file-changing tools wrote (their
    /// `path` parameter), for the formatters.
    fn edited_files(&self, results: &[(ToolCallRequest, ToolResult)]) -> Vec<String> {
        results
            .iter()
            .filter(|(call, result)| {
                result.success
                    && self
                        .shared
                        .ports
                        .registry
                        .get_tool(&call.tool_id)
                        .is_some_and(|t| t.definition().modifies_files)
            })
            .filter_map(|(call, _)| {
                call.parameters
                    .get("path")
                    .and_then(serde_json::Value::as_str)
            })
            .map(|p| p.trim_start_matches("./").to_string())
            .collect()
    }

    /// After tools ran: new commits? Then format the files they touched and the files the
    /// tools wrote, and tell the model.
    async fn check_git(&mut self, before: Option<String>, edited: Vec<String>) {
        let mut note = String::new();
        let mut files = edited;
        if let Some(commits) = self.new_commits(before).await {
            note = format!(
                "Note: {} new git commit(s) appeared while the tools ran:",
                commits.len()
            );
            for c in &commits {
                note.push_str(&format!(
                    "\n- {} {} ({})",
                    short(&c.hash),
                    c.subject,
                    c.files.join(", ")
                ));
            }
            self.emit(GitCommitsDetectedEvent::create(
                self.request.request_id,
                commits.clone(),
                self.iteration,
            ));
            files.extend(commits.iter().flat_map(|c| c.files.iter().cloned()));
        }
        files.sort();
        files.dedup();
        let formatted = self.run_formatters(&files).await;
        if !formatted.is_empty() {
            if note.is_empty() {
                note.push_str("Note: the formatters ran on the changed files:");
            }
            note.push_str(&formatted);
        }
        if !note.is_empty() {
            self.history.push(ChatMessage::user(note));
        }
    }

    /// The commits made since `before`, when there are any.
    async fn new_commits(&self, before: Option<String>) -> Option<Vec<core_models::GitCommit>> {
        let (before, git, workspace) = (
            before?,
            self.shared.ports.git.clone()?,
            self.workspace.clone()?,
        );
        let after = match git.head(&workspace).await {
            Ok(Some(after)) if after != before => after,
            Ok(_) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the git HEAD");
                return None;
            }
        };
        match git.commits_since(&workspace, &before).await {
            Ok(c) if !c.is_empty() => Some(c),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, %after, "cannot list the new commits");
                None
            }
        }
    }

    /// Run each formatter on the `files` it handles; what they did, one line each, for
    /// the model (empty when none ran).
    async fn run_formatters(&mut self, files: &[String]) -> String {
        let Some(workspace) = self.workspace.clone() else {
            return String::new();
        };
        let formatters = self.shared.ports.formatters.clone();
        let mut note = String::new();
        let mut turned = false;
        for formatter in formatters {
            let mine: Vec<String> = files
                .iter()
                .filter(|f| formatter.handles(f))
                .cloned()
                .collect();
            if mine.is_empty() {
                continue;
            }
            if !turned {
                self.turn(S::RunningAutoformatters, None);
                turned = true;
            }
            let mut event = AutoformatEvent::create(
                self.request.request_id,
                formatter.name(),
                mine.clone(),
                Vec::new(),
                self.iteration,
            );
            match formatter.format(&workspace, &mine).await {
                Ok(changed) => {
                    if !changed.is_empty() {
                        note.push_str(&format!(
                            "\n{} reformatted: {}",
                            formatter.name(),
                            changed.join(", ")
                        ));
                    }
                    event.changed_files = changed;
                }
                Err(e) => {
                    note.push_str(&format!("\n{} failed: {e}", formatter.name()));
                    event.error = Some(e.to_string());
                }
            }
            self.emit(event);
        }
        note
    }

    fn budget_exceeded(&self) -> Option<String> {
        let budget = &self.shared.config.budget;
        let used = self.prompt_tokens + self.completion_tokens;
        if let Some(max) = budget.max_total_tokens.filter(|max| used > *max) {
            return Some(format!(
                "token budget exceeded: {used} tokens used of {max}"
            ));
        }
        if let Some(max) = budget
            .max_wall_time()
            .filter(|max| self.started.elapsed() > *max)
        {
            return Some(format!(
                "time budget exceeded: {:.1}s of {:.1}s",
                self.started.elapsed().as_secs_f64(),
                max.as_secs_f64()
            ));
        }
        let cost = budget.cost(self.prompt_tokens, self.completion_tokens);
        if let Some(max) = budget.max_cost.filter(|max| cost > *max) {
            return Some(format!("cost budget exceeded: {cost:.4} of {max:.4}"));
        }
        None
    }

    // --- the end -----------------------------------------------------------------------------

    fn finish(&mut self, outcome: Outcome) {
        let id = self.request.request_id;
        let complete = |reason: CompletionReason, this: &Self| {
            AgentCompleteEvent::success(
                id,
                this.final_response.clone(),
                this.tools_executed,
                this.iteration,
                this.started.elapsed(),
                this.tokens,
                this.usage.values().cloned().collect(),
            )
            .with_token_counts(this.prompt_tokens, this.completion_tokens)
            .with_reason(reason)
        };
        let event = match outcome {
            Outcome::Finished => Some(complete(CompletionReason::Finished, self)),
            Outcome::MaxIterations(max) => {
                let why = format!("iteration limit ({max}) reached");
                self.agent(T::Fail, Some(&why));
                self.turn_end(&[S::EndOfTurn], &why);
                Some(complete(CompletionReason::MaxIterations, self))
            }
            Outcome::Budget(why) => {
                self.agent(T::Fail, Some(&why));
                self.turn_end(&[S::BudgetExceeded], &why);
                Some(complete(CompletionReason::BudgetExceeded, self))
            }
            Outcome::Cancelled => {
                self.agent(T::Cancel, Some("cancelled"));
                self.turn_end(&[S::Cancelled, S::EndOfTurn], "cancelled");
                Some(complete(CompletionReason::Cancelled, self))
            }
            Outcome::Timeout => {
                let why = format!(
                    "the request took longer than {}s",
                    self.shared.config.agent_request_timeout().as_secs_f64()
                );
                self.agent(T::Fail, Some(&why));
                self.turn_end(&[S::Error], &why);
                self.emit(AgentErrorEvent::timeout_error(id, &why, self.iteration));
                Some(complete(CompletionReason::Timeout, self))
            }
            Outcome::LlmFailed(e) => {
                let message = e.to_string();
                self.agent(T::Fail, Some(&message));
                self.turn_end(&[S::Error], &message);
                self.emit(AgentErrorEvent::llm_error(
                    id,
                    message,
                    Some(Box::new(e)),
                    self.iteration,
                ));
                None
            }
        };
        *lock(&self.shared.conversation) = (
            Some(self.request.conversation_id),
            std::mem::take(&mut self.history),
        );
        if let Some(event) = event {
            self.emit(event);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Done,
    TimedOut,
    Cancelled,
}

/// An invalid transition is a bug in the loop: loud in debug builds, logged in release.
fn invalid_transition(message: &str) {
    tracing::error!(%message, "invalid state transition in the agent loop");
    debug_assert!(
        false,
        "invalid state transition in the agent loop: {message}"
    );
}

/// The shortest path (excluding `from`) over seed 004's edges to any of `targets`.
fn shortest_path(from: S, targets: &[S]) -> Vec<S> {
    let mut previous: BTreeMap<S, S> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(state) = queue.pop_front() {
        if state != from && targets.contains(&state) {
            let mut path = vec![state];
            let mut at = state;
            while let Some(p) = previous.get(&at) {
                if *p == from {
                    break;
                }
                path.push(*p);
                at = *p;
            }
            path.reverse();
            return path;
        }
        for (_, to) in TURN_EDGES.iter().filter(|(f, _)| *f == state) {
            if *to != from && !previous.contains_key(to) {
                previous.insert(*to, state);
                queue.push_back(*to);
            }
        }
    }
    Vec::new()
}

fn short(hash: &str) -> &str {
    hash.get(..7).unwrap_or(hash)
}

fn summarize_calls(calls: &[ToolCallRequest]) -> String {
    calls
        .iter()
        .map(|c| c.tool_id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn approval_details(call: &ToolCallRequest, tool: &dyn Tool) -> Vec<String> {
    let mut details = vec![format!(
        "Tool: {} ({})",
        tool.definition().name,
        call.tool_id
    )];
    for key in core_models::MAIN_ARGUMENT_KEYS {
        if let Some(value) = call.parameters.get(key).and_then(|v| v.as_str()) {
            let mut label = key.replace('_', " ");
            if let Some(first) = label.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            details.push(format!("{label}: {value}"));
        }
    }
    details.push(format!("Parameters: {}", call.parameters));
    details
}

fn approval_warnings(call: &ToolCallRequest, tool: &dyn Tool) -> Vec<String> {
    let mut warnings = Vec::new();
    let definition = tool.definition();
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
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_paths_follow_the_diagram() {
        assert_eq!(shortest_path(S::SendingToLlm, &[S::Error]), [S::Error]);
        assert_eq!(
            shortest_path(S::ToolUseRequested, &[S::Cancelled, S::EndOfTurn]),
            [S::CheckingForCancellation, S::Cancelled]
        );
        assert_eq!(
            shortest_path(S::ProcessingLlmResponse, &[S::Cancelled, S::EndOfTurn]),
            [S::EndOfTurn]
        );
        assert_eq!(
            shortest_path(S::CheckingGitCommits, &[S::Error]),
            [S::CheckingBudget, S::GatheringAdditionalMessages, S::Error]
        );
        assert_eq!(
            shortest_path(S::SendingToolResults, &[S::EndOfTurn]),
            [S::ProcessingLlmResponse, S::EndOfTurn]
        );
        for from in S::ALL {
            for target in [S::Error, S::Cancelled, S::EndOfTurn, S::BudgetExceeded] {
                let path = shortest_path(from, &[target]);
                let mut at = from;
                for step in &path {
                    assert!(TURN_EDGES.contains(&(at, *step)), "{at} -> {step}");
                    at = *step;
                }
            }
        }
    }
}
