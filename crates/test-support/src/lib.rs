//! # test-support
//!
//! Test doubles for every AIntern port, so that the agent can be tested without a model,
//! a filesystem or a person:
//!
//! * [`mocks`] — mockall mocks of every port (`MockToolPort`, `MockToolRegistry`,
//!   `MockToolExecutionService`, `MockLlmService`, `MockPermissionManager`,
//!   `MockPermissionStore`, `MockAgentService`, `MockGitInspector`, `MockFormatter`), for
//!   strict expectations;
//! * [`MockTool`] — seed 001's configurable tool (risk, availability, execute and
//!   validate handlers), which also records what it was called with;
//! * [`ScriptedLlm`] — a model that streams prepared responses chunk by chunk, with an
//!   optional delay per chunk, records what it received and fails on demand;
//! * [`fixtures`] — small ready-made values.
//! * [`processes`] — whether a process is gone, the pid a shell wrote.
//! * [`llama_server`] — a real llama-server on a free loopback port, killed when dropped.
//! * [`stub_server`] — a scripted OpenAI-compatible server on loopback, well-behaved or
//!   not (statuses, slow headers, silent or broken streams, malformed or huge events).

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod fixtures;
pub mod llama_server;
pub mod mcp_servers;
mod mock_tool;
pub mod mocks;
pub mod processes;
pub mod stub_server;

pub use mock_tool::MockTool;
/// The scripted model lives in `services-ai` (it is also the `script:FILE` backend).
pub use services_ai::{Script, ScriptedLlm, ScriptedResponse};
