//! What the worker thread is asked to do: the same jobs whether or not llama.cpp is built
//! in (see `worker` and `docs_only`).

use crate::Error;
use core_models::{LlmChunk, LlmRequest};
use std::sync::mpsc;
use tokio::sync::mpsc::UnboundedSender;

/// Work for the worker.
// Without llama.cpp nothing reads a job: loading fails before any is sent.
#[cfg_attr(not(feature = "llama-cpp"), allow(dead_code))]
pub(crate) enum Job {
    /// Render a request's chat into a prompt.
    Render {
        request: LlmRequest,
        reply: mpsc::Sender<Result<String, Error>>,
    },
    /// Measure prompt processing and generation throughput (see [`crate::Throughput`]).
    Throughput {
        prompt_tokens: u32,
        gen_tokens: u32,
        reply: mpsc::Sender<Result<crate::Throughput, Error>>,
    },
    /// Count the tokens of a request's prompt.
    Count {
        request: LlmRequest,
        reply: tokio::sync::oneshot::Sender<Result<u64, Error>>,
    },
    /// Forget every cached prompt.
    Clear { reply: mpsc::Sender<()> },
    /// Save the session's state (see [`crate::LlamaConfig::state_dir`]).
    Keep {
        session: core_models::SessionKey,
        reply: tokio::sync::oneshot::Sender<Result<bool, Error>>,
    },
    /// Generate a reply, streaming it to `out`.
    Generate {
        request: LlmRequest,
        out: UnboundedSender<Result<LlmChunk, core_models::Error>>,
    },
}
