//! # aintern
//!
//! Let a language model use tools safely, from your own application. The agent streams the
//! model's reply, finds the tool calls in it, asks before anything risky runs, runs the
//! tools — confined to a workspace, commands under the kernel sandbox, with timeouts and
//! cancellation — feeds the results back, and repeats until the task is done.
//!
//! This crate is the front door: one [`Agent`] builder over the project's crates, which
//! stay usable alone ([`models`], [`engine`], and per feature `tools`, `sandbox`,
//! `llama`, `openai`).
//!
//! ## Needs a tokio runtime
//!
//! Requests run as tasks on a multi-threaded tokio runtime: call [`Agent::run`] and
//! [`Agent::ask`] from inside one (`#[tokio::main]`), or they fail with
//! [`core_models::Error::NoRuntime`]. tokio is re-exported, so an application without
//! its own dependency on it can write
//! `#[aintern::tokio::main(crate = "aintern::tokio")]`.
//!
//! ## The shortest embedding
//!
//! ```
//! use aintern::prelude::*;
//!
//! #[aintern::tokio::main(crate = "aintern::tokio")]
//! async fn main() -> Result<(), aintern::Error> {
//!     # let dir = tempfile::tempdir().unwrap();
//!     # std::fs::write(dir.path().join("notes.txt"), "Buy milk").unwrap();
//!     # let workspace = dir.path();
//!     // A model that plays back prepared replies; a GGUF file or a server in a real app.
//!     let model = ScriptedLlm::from_texts([
//!         r#"<tool_call>{"name": "read_file", "arguments": {"path": "notes.txt"}}</tool_call>"#,
//!         "The notes say: Buy milk.",
//!     ]);
//!     let agent = Agent::builder()
//!         .model(model)
//!         .workspace(workspace) // the folder the tools may read and change
//!         .build()?;
//!     let mut run = agent.run("What do my notes say?")?;
//!     while let Some(event) = run.next().await {
//!         match event {
//!             // Calls that need a person come to you: approve or deny in code.
//!             AgentEvent::ApprovalRequest(call) => call.approve()?,
//!             AgentEvent::AgentComplete(done) => println!("{}", done.final_response),
//!             _ => {}
//!         }
//!     }
//!     Ok(())
//! }
//! ```
//!
//! [`Agent::ask`] does the same in one line when an [`ApprovalPolicy`] answers the
//! approvals. The `examples/` folder has runnable apps: the scripted model answering
//! approvals in code, the embedded model, an OpenAI-compatible server, a custom tool,
//! and a Python program driving `aintern exec`'s JSON protocol.
//!
//! ## Features
//!
//! * `tools` (default) — the built-in tools: read, list, search, write and edit files,
//!   run commands, git status and diff; commands under the kernel sandbox (Landlock and
//!   seccomp on Linux).
//! * `llama` — GGUF models in-process through llama.cpp: [`load_gguf`],
//!   [`load_embedded_model`] and the [`llama`] module. Compiles llama.cpp (cmake and a
//!   C++ compiler; minutes the first time).
//! * `openai` — any server with an OpenAI-compatible `/v1/chat/completions`
//!   (llama-server, vLLM, Ollama, LM Studio, hosted APIs): the [`openai`] module.
//! * `llama-docs` — the llama backend's API without llama.cpp, for documentation
//!   builds; loading a model then fails with an error that says why.
//!
//! ## What stays true
//!
//! * A call that needs approval never runs until it is approved; one the permission
//!   settings deny never runs. A denied call is reported as denied
//!   ([`ToolResult::denied`](core_models::ToolResult::denied)), never as a failure.
//! * The workspace is required: the builder refuses to build without one, so no call is
//!   approved that then cannot run.
//! * A blanket policy ([`ApprovalPolicy::ApproveAll`]) never lifts the sandbox.

mod agent;
mod approval;
mod compose;
mod error;
#[cfg(any(feature = "llama", feature = "llama-docs"))]
mod loading;
pub mod prelude;
mod run;
mod structured;

pub use agent::{Agent, AgentBuilder, Preset};
pub use approval::ApprovalPolicy;
#[cfg(feature = "tools")]
pub use compose::sandbox_settings;
pub use error::{Error, Result};
#[cfg(any(feature = "llama", feature = "llama-docs"))]
pub use loading::{load_embedded_model, load_gguf};
pub use run::{Reply, Run};
pub use services_ai::{Script, ScriptedLlm, ScriptedResponse};

/// The public contract: events, requests, tool and permission models, the service traits.
pub use core_models as models;
/// The engine: the agent loop, the configuration, the permission manager, the parser.
pub use services_ai as engine;

/// The llama.cpp backend (feature `llama`).
#[cfg(any(feature = "llama", feature = "llama-docs"))]
pub use llm_llama as llama;
/// The OpenAI-compatible backend (feature `openai`).
#[cfg(feature = "openai")]
pub use llm_openai as openai;
/// Rules and hooks (feature `tools`): [`AgentBuilder::rules`], [`AgentBuilder::rule_files`].
#[cfg(feature = "tools")]
pub use policy;
/// The kernel sandbox the built-in tools start commands under (feature `tools`).
#[cfg(feature = "tools")]
pub use sandbox;
/// The built-in tools (feature `tools`).
#[cfg(feature = "tools")]
pub use tools;

/// Re-exported for applications: the runtime, streams, JSON and `#[async_trait]`.
pub use async_trait::async_trait;
pub use futures;
pub use schemars;
pub use serde_json;
pub use tokio;
