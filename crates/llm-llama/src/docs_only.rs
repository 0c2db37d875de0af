//! The worker of a build without llama.cpp (the `llama-cpp` feature off): the API is
//! there, for documentation builds and for code that only names the types, but loading a
//! model fails with an error that says why.

use crate::{Error, LlamaConfig, ModelInfo};
use std::sync::mpsc;

pub(crate) use crate::job::Job;

/// Refuse to load: there is no llama.cpp in this build.
pub(crate) fn run(
    config: LlamaConfig,
    ready: mpsc::Sender<Result<ModelInfo, Error>>,
    _jobs: mpsc::Receiver<Job>,
) {
    let why = format!(
        "cannot load {}: this build of aintern-llm-llama has no llama.cpp (enable its `llama-cpp` feature, or the `llama` feature of the aintern crate)",
        config.model_path.display()
    );
    // The loader waits for this answer; if it is gone there is nobody to tell.
    let _ = ready.send(Err(Error::Backend(why)));
}
