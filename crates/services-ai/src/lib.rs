//! # services-ai
//!
//! AIntern's engine, built only from the ports in `core-models`:
//!
//! * [`state_machine`] — one table-driven, thread-safe machine, instantiated as
//!   [`AgentStateMachine`] (seed 000) and [`TurnStateMachine`] (seed 004);
//! * [`emitter`] — [`AgentEventEmitter`], typed publish/subscribe for agent events;
//! * [`config`] — [`AgentConfig`] and its layered [`ConfigLoader`];
//! * [`permissions`] — [`DefaultPermissionManager`] with [`FilePermissionStore`];
//! * [`registry`] — [`InMemoryToolRegistry`] and [`DirectToolExecutor`].
//!
//! ## Invariant
//! This crate depends on `core-models` and on no backend: never on `llm-llama` or the
//! CLI. Everything it talks to arrives as an `Arc<dyn Port>` at construction.

pub mod config;
pub mod emitter;
pub mod error;
pub mod permissions;
pub mod registry;
pub mod state_machine;

pub use config::{AgentConfig, BudgetConfig, ConfigLoader, ValidationError};
pub use emitter::{AgentEventEmitter, EventStream, Subscription};
pub use error::{Error, Result};
pub use permissions::{DefaultPermissionManager, FilePermissionStore, MemoryPermissionStore};
pub use registry::{DirectToolExecutor, InMemoryToolRegistry};
pub use state_machine::{
    AgentStateMachine, Change, StateMachine, TurnStateMachine, HISTORY_CAPACITY,
};
