//! # services-ai
//!
//! AIntern's engine, built only from the ports in `core-models`:
//!
//! Every item has one path, at the crate root (the modules are private), except the
//! prompt's pieces, in [`prompt`]:
//!
//! * one table-driven, thread-safe state machine, instantiated as [`AgentStateMachine`]
//!   (one request) and [`TurnStateMachine`] (the conversation);
//! * [`AgentEventEmitter`], typed publish/subscribe for agent events;
//! * [`AgentConfig`] and its layered [`ConfigLoader`];
//! * [`DefaultPermissionManager`] with [`FilePermissionStore`];
//! * [`InMemoryToolRegistry`] and [`DirectToolExecutor`];
//! * the tool-call parser, batch ([`FunctionCallParser`]) and streaming
//!   ([`StreamingFunctionCallParser`]);
//! * [`AgentEngine`], the agent loop (the engine behind the `core_models::AgentService`
//!   trait);
//! * [`ScriptedLlm`], a model that plays back prepared responses (the `script:` backend).
//!
//! ## Example: the agent machine
//!
//! ```
//! use core_models::{AgentState, AgentStateTransition as T};
//! use services_ai::AgentStateMachine;
//!
//! let machine = AgentStateMachine::new();
//! let mut changes = machine.subscribe();
//! machine.start(uuid::Uuid::new_v4())?;
//! machine.transition(T::BeginThinking, None)?;
//! assert_eq!(machine.iteration_number(), 1);
//! // Not allowed from Thinking: an error, and the state is unchanged.
//! let err = machine.transition(T::Complete, None).unwrap_err();
//! assert_eq!(err.to_string(), "Invalid transition 'Complete' from state 'Thinking'");
//! assert_eq!(machine.current_state(), AgentState::Thinking);
//! assert_eq!(changes.try_recv()?.current_state, AgentState::Initializing);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Example: configuration
//!
//! ```
//! use services_ai::ConfigLoader;
//! use std::collections::HashMap;
//!
//! let env = HashMap::from([("AINTERN_MAX_AGENT_ITERATIONS".to_string(), "0".to_string())]);
//! let err = ConfigLoader::new().env_source(env).load().unwrap_err();
//! assert!(err.to_string().contains("max_agent_iterations: must be at least 1"));
//! ```
//!
//! ## Invariant
//! This crate depends on `core-models` and on no backend: never on `llm-llama`, `tools` or
//! the CLI. Everything it talks to arrives as an `Arc<dyn Port>` at construction.

mod agent;
mod config;
mod emitter;
mod error;
mod output;
mod permissions;
mod registry;
mod scripted;
mod state_machine;

pub use agent::{
    estimate_tokens, prompt, reply_allowance, summarize, AgentEngine, AgentEngineBuilder, Summary,
    REPLY_SHARE,
};
pub use config::{
    defaults_for, small_model_inference, standard_inference, valid_server_name, AgentConfig,
    BackendConfig, BackendKind, BudgetConfig, ConfigLoader, FormatterConfig, McpServerConfig,
    ReadBeforeChange, SandboxConfig, SteeringMode, ToolMode, ToolPromptStyle, ValidationError,
    LEAN_MODEL_DEFAULTS, LEAN_MODEL_PARAMETERS, MAX_ITERATION_DELAY_MS, SMALL_MODEL_DEFAULTS,
    SMALL_MODEL_MAX_TOKENS,
};
pub use emitter::{AgentEventEmitter, EmitterStream, Subscription};
pub use error::{Error, Result};
pub use output::OutputSchema;
pub use permissions::{DefaultPermissionManager, FilePermissionStore, MemoryPermissionStore};
pub use registry::{DirectToolExecutor, InMemoryToolRegistry};
pub use scripted::{Script, ScriptedLlm, ScriptedResponse};
pub use state_machine::{
    AgentStateMachine, Change, StateMachine, TurnStateMachine, HISTORY_CAPACITY,
};
pub use tool_calls::{
    detect_template, format_by_name, format_info, prompt_opens_reasoning, FormatInfo,
    FunctionCallParser, ParseEvent, ParsedOutput, ParserOptions, StreamingFunctionCallParser,
    TemplateProfile, ToolCallFormat, ToolCatalog, FORMATS,
};
