//! The facade's one error type: every layer's error, and the mistakes the builder catches
//! before anything runs.

use std::path::PathBuf;

/// What went wrong, in words a user understands (`Display`), with the layer's own error
/// kept as the source where there is one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// [`AgentBuilder::build`](crate::AgentBuilder::build) without a model.
    #[error("the agent has no model: give it one with AgentBuilder::model")]
    NoModel,
    /// [`AgentBuilder::build`](crate::AgentBuilder::build) without a workspace.
    #[error(
        "the agent has no workspace: give it the folder its tools may read and change with AgentBuilder::workspace"
    )]
    NoWorkspace,
    /// The workspace folder cannot be used.
    #[error("the workspace {} cannot be used: {reason}", path.display())]
    Workspace {
        /// The folder given.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
    /// The workspace's checkpoint store could not be opened or read.
    #[error("checkpoints: {0}")]
    Checkpoint(String),
    /// A rule file could not be read, or a rule or its example is wrong (feature `tools`).
    #[cfg(feature = "tools")]
    #[error("rules: {0}")]
    Rules(#[from] policy::Error),
    /// Two tools share an id.
    #[error("two tools have the id '{0}': each tool needs its own")]
    DuplicateTool(String),
    /// The configuration is not valid, or a file of it could not be read.
    #[error("{0}")]
    Config(#[source] services_ai::Error),
    /// The agent refused the request or could not run it (another request is running, no
    /// async runtime, …).
    #[error(transparent)]
    Agent(#[from] core_models::Error),
    /// The request ended without an answer: the reason the agent gave.
    #[error("the request failed: {0}")]
    Failed(String),
    /// The default model is not on this machine.
    #[error(
        "the default model is not fetched yet ({}): fetch it with the project's scripts/fetch-model, or load another GGUF file with aintern::load_gguf",
        path.display()
    )]
    #[cfg(any(feature = "llama", feature = "llama-docs"))]
    ModelMissing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The llama.cpp backend failed (a missing or broken model file, llama.cpp itself).
    #[cfg(any(feature = "llama", feature = "llama-docs"))]
    #[error(transparent)]
    Llama(#[from] llm_llama::Error),
    /// The OpenAI-compatible backend failed (the server cannot be reached, refuses the
    /// key, has no such model).
    #[cfg(feature = "openai")]
    #[error(transparent)]
    OpenAi(#[from] llm_openai::Error),
}

impl From<services_ai::Error> for Error {
    fn from(e: services_ai::Error) -> Self {
        Error::Config(e)
    }
}

/// The facade's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
