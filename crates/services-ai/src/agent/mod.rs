//! The agent (seed 001 part i, seed 004): [`AgentEngine`] turns a request into a stream of
//! events — it asks the model, finds tool calls, checks permissions and asks for approval,
//! runs tools (with timeouts and cancellation: in parallel when every call of the reply
//! only reads, else in order, a call checked again after an earlier one could have changed
//! what it touches), feeds the results back, and repeats until the model answers without
//! tools or a limit is reached.
//!
//! Both state machines are driven by the loop and every change is reported as a
//! `state_changed` event. An invalid transition is a bug: it panics in debug builds (and
//! so in tests) and is logged in release builds.

mod after_tools;
mod answer;
mod approval;
mod checkpoint;
mod choices;
mod context;
mod execute;
mod finish;
mod generate;
pub(crate) mod guard;
mod inbox;
mod iterate;
mod policy;
mod prepare;
pub mod prompt;

pub use context::{estimate_tokens, reply_allowance, summarize, Summary, REPLY_SHARE};
mod recheck;
mod repetition;
mod run;
mod seen;
mod steering;

use crate::config::AgentConfig;
use crate::emitter::AgentEventEmitter;
use crate::permissions::DefaultPermissionManager;
use crate::registry::DirectToolExecutor;
use crate::state_machine::{AgentStateMachine, TurnStateMachine};
use core_models::{
    AgentEvent, AgentRequest, AgentState, AgentStateChange, ApprovalAnswer, ApprovalDecision,
    ApprovalResponder, CallRules, ChatMessage, Checkpointer, Error, EventStream, Formatter,
    GitInspector, Hook, LlmService, PermissionManager, ToolExecutionService, ToolRegistry,
    TurnState,
};
use futures::stream::BoxStream;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tool_calls::ParserOptions;
use uuid::Uuid;

/// Why a request was stopped from outside the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    Cancelled,
    Timeout,
}

/// What the service keeps about the running request.
#[derive(Clone)]
pub(crate) struct RunHandle {
    pub(crate) stop: CancellationToken,
    pub(crate) reason: Arc<Mutex<Option<StopReason>>>,
    pub(crate) approvals: Arc<Mutex<HashMap<Uuid, ApprovalResponder>>>,
    /// Messages sent into the request (see [`inbox`]).
    pub(crate) inbox: Arc<inbox::Inbox>,
}

impl RunHandle {
    /// Stop the run, keeping the first reason given.
    pub(crate) fn stop(&self, reason: StopReason) {
        lock(&self.reason).get_or_insert(reason);
        self.stop.cancel();
    }

    pub(crate) fn reason(&self) -> Option<StopReason> {
        *lock(&self.reason)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The ports the agent is built from.
pub(crate) struct Ports {
    pub(crate) llm: Arc<dyn LlmService>,
    pub(crate) registry: Arc<dyn ToolRegistry>,
    pub(crate) executor: Arc<dyn ToolExecutionService>,
    pub(crate) permissions: Arc<dyn PermissionManager>,
    pub(crate) git: Option<Arc<dyn GitInspector>>,
    pub(crate) formatters: Vec<Arc<dyn Formatter>>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    pub(crate) rules: Option<Arc<dyn CallRules>>,
    pub(crate) hooks: Vec<Arc<dyn Hook>>,
}

pub(crate) struct Shared {
    pub(crate) ports: Ports,
    pub(crate) config: AgentConfig,
    pub(crate) parser_options: ParserOptions,
    pub(crate) machine: AgentStateMachine,
    pub(crate) turn: TurnStateMachine,
    pub(crate) emitter: AgentEventEmitter,
    pub(crate) run: Mutex<Option<RunHandle>>,
    /// The conversation the turn machine follows, and its messages after the last request.
    pub(crate) conversation: Mutex<(Option<Uuid>, Vec<ChatMessage>)>,
}

/// The agent. Cheap to clone: clones share the same state.
#[derive(Clone)]
pub struct AgentEngine {
    shared: Arc<Shared>,
}

impl fmt::Debug for AgentEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentEngine")
            .field("state", &self.shared.machine.current_state())
            .field("turn", &self.shared.turn.current_state())
            .finish_non_exhaustive()
    }
}

/// Builds an [`AgentEngine`] from its ports.
pub struct AgentEngineBuilder {
    llm: Arc<dyn LlmService>,
    registry: Arc<dyn ToolRegistry>,
    executor: Arc<dyn ToolExecutionService>,
    permissions: Arc<dyn PermissionManager>,
    git: Option<Arc<dyn GitInspector>>,
    formatters: Vec<Arc<dyn Formatter>>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    rules: Option<Arc<dyn CallRules>>,
    hooks: Vec<Arc<dyn Hook>>,
    config: AgentConfig,
    parser_options: ParserOptions,
}

impl fmt::Debug for AgentEngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentEngineBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AgentEngineBuilder {
    /// Run tools through this service (default: directly).
    pub fn executor(mut self, executor: Arc<dyn ToolExecutionService>) -> Self {
        self.executor = executor;
        self
    }

    /// Check permissions with this manager (default: in memory, only safe calls allowed).
    pub fn permissions(mut self, permissions: Arc<dyn PermissionManager>) -> Self {
        self.permissions = permissions;
        self
    }

    /// Look for new git commits after tools run.
    pub fn git_inspector(mut self, git: Arc<dyn GitInspector>) -> Self {
        self.git = Some(git);
        self
    }

    /// Run this formatter on the files that tools wrote and that new commits touched.
    pub fn formatter(mut self, formatter: Arc<dyn Formatter>) -> Self {
        self.formatters.push(formatter);
        self
    }

    /// Record the workspace before each request's first change (and after the request),
    /// so a person can undo it.
    pub fn checkpointer(mut self, checkpointer: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = Some(checkpointer);
        self
    }

    /// Decide calls with these rules as well (see `core_models::CallRules`): the strictest
    /// of the rules, the hooks and the judge's floor wins.
    pub fn rules(mut self, rules: Arc<dyn CallRules>) -> Self {
        self.rules = Some(rules);
        self
    }

    /// Tell this hook of its moment (see `core_models::Hook`); hooks of one moment run in
    /// the order they are added.
    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Use this configuration (not validated here: `ConfigLoader::load` validates).
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// Recognize only these tool-call formats.
    pub fn parser_options(mut self, options: ParserOptions) -> Self {
        self.parser_options = options;
        self
    }

    /// Build the agent.
    pub fn build(self) -> AgentEngine {
        AgentEngine {
            shared: Arc::new(Shared {
                ports: Ports {
                    llm: self.llm,
                    registry: self.registry,
                    executor: self.executor,
                    permissions: self.permissions,
                    git: self.git,
                    formatters: self.formatters,
                    checkpointer: self.checkpointer,
                    rules: self.rules,
                    hooks: self.hooks,
                },
                config: self.config,
                parser_options: self.parser_options,
                machine: AgentStateMachine::new(),
                turn: TurnStateMachine::new(),
                emitter: AgentEventEmitter::new(),
                run: Mutex::new(None),
                conversation: Mutex::new((None, Vec::new())),
            }),
        }
    }
}

impl AgentEngine {
    /// Start building an agent over a model and a tool registry.
    pub fn builder(
        llm: Arc<dyn LlmService>,
        registry: Arc<dyn ToolRegistry>,
    ) -> AgentEngineBuilder {
        AgentEngineBuilder {
            llm,
            registry,
            executor: Arc::new(DirectToolExecutor),
            permissions: Arc::new(DefaultPermissionManager::in_memory()),
            git: None,
            formatters: Vec::new(),
            checkpointer: None,
            rules: None,
            hooks: Vec::new(),
            config: AgentConfig::default(),
            parser_options: ParserOptions::default(),
        }
    }

    /// Every event of every request also goes through this emitter, for subscribers that
    /// prefer callbacks or one kind of event.
    pub fn events(&self) -> &AgentEventEmitter {
        &self.shared.emitter
    }

    /// The conversation as it stood after the last request (its history, the user's
    /// message, the model's replies and the tool results): pass it as the next request's
    /// history to continue.
    pub fn conversation(&self) -> Vec<ChatMessage> {
        lock(&self.shared.conversation).1.clone()
    }

    /// The first model request `request` would make — system prompt, history, the user's
    /// message, the tools as offered — as the loop builds it (for reports of where a
    /// prompt's tokens go).
    pub fn first_request(&self, request: &AgentRequest) -> core_models::LlmRequest {
        let tools = run::tools_offered(&self.shared, request);
        let setup = iterate::setup(&self.shared, request, tools);
        let mut history = request.history.clone();
        history.push(prompt::user_message(
            &request.message,
            &request.attached_files,
        ));
        iterate::llm_request(&setup, request, &history, 1)
    }

    /// The turn machine's current state (seed 004).
    pub fn turn_state(&self) -> TurnState {
        self.shared.turn.current_state()
    }

    /// The configuration in use.
    pub fn config(&self) -> &AgentConfig {
        &self.shared.config
    }

    fn current_run(&self) -> Option<RunHandle> {
        lock(&self.shared.run).clone()
    }
}

impl core_models::AgentService for AgentEngine {
    fn process_message(&self, request: AgentRequest) -> Result<EventStream, Error> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        if let Some(options) = &request.inference_options {
            let problems = options.problems();
            if !problems.is_empty() {
                return Err(Error::InvalidRequest(problems));
            }
        }
        let output_schema = match &request.output_schema {
            Some(schema) => Some(Arc::new(
                crate::OutputSchema::new(schema)
                    .map_err(|e| Error::InvalidRequest(vec![e.to_string()]))?,
            )),
            None => None,
        };
        let (tx, rx) = mpsc::unbounded_channel::<AgentEvent>();
        let handle = RunHandle {
            stop: CancellationToken::new(),
            reason: Arc::new(Mutex::new(None)),
            approvals: Arc::new(Mutex::new(HashMap::new())),
            inbox: Arc::new(inbox::Inbox::open()),
        };
        {
            let mut slot = lock(&self.shared.run);
            if slot.is_some() {
                return Err(Error::Busy {
                    state: self.shared.machine.current_state(),
                });
            }
            *slot = Some(handle.clone());
        }
        let run = run::Run::new(Arc::clone(&self.shared), handle, request, output_schema, tx);
        runtime.spawn(run.execute());
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|event| (event, rx))
        })))
    }

    fn cancel(&self) {
        if let Some(run) = self.current_run() {
            run.stop(StopReason::Cancelled);
        }
    }

    fn state(&self) -> AgentState {
        self.shared.machine.current_state()
    }

    fn is_processing(&self) -> bool {
        lock(&self.shared.run).is_some()
    }

    fn current_iteration(&self) -> u32 {
        if self.is_processing() {
            self.shared.machine.iteration_number()
        } else {
            0
        }
    }

    fn subscribe_state_changes(&self) -> BoxStream<'static, AgentStateChange> {
        let rx = self.shared.machine.subscribe();
        Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|change| (change, rx))
        }))
    }

    fn provide_approval(&self, call_id: Uuid, decision: ApprovalDecision) -> Result<(), Error> {
        let responder = self
            .current_run()
            .and_then(|run| lock(&run.approvals).get(&call_id).cloned())
            .ok_or(Error::NoPendingApproval { call_id })?;
        responder.respond(ApprovalAnswer::Decided(decision))
    }

    /// See [`core_models::AgentService::send_user_message`]: delivered in this request, or
    /// carried to the next one and reported, or refused — never accepted and lost.
    fn send_user_message(&self, text: String) -> Result<(), Error> {
        let run = self.current_run().ok_or(Error::NotProcessing)?;
        run.inbox.send(text)
    }
}
