//! # llm-llama
//!
//! The llama.cpp backend of AIntern's [`core_models::LlmService`] port.
//!
//! This crate is a shell for now: it fixes the crate's place in the workspace and its
//! error type. GGUF loading, chat templates, KV-cache reuse and grammar-constrained tool
//! calls arrive with the llm-llama issue; until then, applications use another
//! `LlmService` (for example the scripted one in `test-support`).

/// Errors of the llama.cpp backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The llama.cpp backend is not built into this version.
    #[error("the llama.cpp backend is not available in this build")]
    Unavailable,
}
