//! The crate's error type.

use std::path::PathBuf;

/// Errors of the llama.cpp backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model file does not exist.
    #[error("the model file {} does not exist", path.display())]
    ModelNotFound {
        /// The file.
        path: PathBuf,
    },

    /// The model file cannot be read.
    #[error("the model file {} cannot be read: {message}", path.display())]
    ModelUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },

    /// The file is not a GGUF model, or llama.cpp could not load it.
    #[error("the model file {} is not a valid GGUF model: {message}", path.display())]
    ModelInvalid {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },

    /// The model does not fit in the memory available.
    #[error("the model file {} is {size} bytes, more than the {available} bytes of memory available", path.display())]
    ModelTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// Memory available.
        available: u64,
    },

    /// llama.cpp could not be set up (backend, context, sampler).
    #[error("llama.cpp: {0}")]
    Backend(String),

    /// The conversation does not fit in the context window.
    #[error(
        "the conversation is {needed} tokens, more than the context window of {window} tokens"
    )]
    ContextFull {
        /// Tokens needed.
        needed: usize,
        /// Context size.
        window: u32,
    },

    /// The chat could not be rendered into a prompt.
    #[error("cannot render the chat template: {0}")]
    Template(String),

    /// The grammar a reply is held to (a forced call's, an answer's JSON Schema) cannot
    /// be built or is refused by llama.cpp.
    #[error("cannot hold the reply to its grammar: {0}")]
    Grammar(String),

    /// A session's saved state could not be written (see [`crate::LlamaConfig::state_dir`]);
    /// the conversation is not affected.
    #[error("{0}")]
    SessionState(String),

    /// The model's worker thread is gone.
    #[error("the model's worker thread stopped")]
    WorkerGone,
}

impl From<Error> for core_models::Error {
    fn from(e: Error) -> Self {
        core_models::Error::Llm {
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }
}
