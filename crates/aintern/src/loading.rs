//! Loading the models the backends serve: GGUF files through llama.cpp (feature `llama`).

use crate::error::{Error, Result};
use std::path::PathBuf;

/// Load a GGUF model through llama.cpp, off the async runtime's threads, with a
/// 4096-token context and every core. For other settings use
/// [`llm_llama::LlamaLlm::load`] with an [`llm_llama::LlamaConfig`].
///
/// # Errors
/// [`Error::Llama`] for a missing, unreadable, corrupt or too-large file, or when
/// llama.cpp cannot set up (or the crate was built without llama.cpp).
pub async fn load_gguf(path: impl Into<PathBuf>) -> Result<llm_llama::LlamaLlm> {
    let config = llm_llama::LlamaConfig::new(path);
    tokio::task::spawn_blocking(move || llm_llama::LlamaLlm::load(config))
        .await
        .map_err(|e| Error::Failed(format!("loading the model stopped: {e}")))?
        .map_err(Error::from)
}

/// Load the default model, Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), from where the
/// project's `scripts/fetch-model` puts it ([`llm_llama::default_model_path`]; other
/// models of the catalog: [`llm_llama::catalog`] and [`load_gguf`]).
///
/// # Errors
/// [`Error::ModelMissing`] when it has not been fetched; else as [`load_gguf`].
pub async fn load_embedded_model() -> Result<llm_llama::LlamaLlm> {
    let path = llm_llama::default_model_path();
    if !path.is_file() {
        return Err(Error::ModelMissing { path });
    }
    load_gguf(path).await
}
