//! # llm-llama
//!
//! The llama.cpp backend of AIntern's [`core_models::LlmService`] port: GGUF models run
//! through the `llama-cpp-2` crate.
//!
//! * The model and its context live on one dedicated worker thread; generation never
//!   blocks the async runtime. Text streams back as UTF-8-safe pieces.
//! * The chat is rendered with the model's own Jinja chat template through minijinja,
//!   adapted to what the template understands (tools, tool results, system messages;
//!   see [`ChatTemplate`]); else with llama.cpp's built-in template support; else with
//!   a plain rendering.
//! * Tool calls can be grammar-constrained, in the model's own call language when its
//!   template renders tools (else AIntern's fence): `required` makes the reply calls
//!   (a named tool: one call of it) whose arguments follow the tools' JSON schemas, after
//!   reasoning that is kept from taking the whole reply; `auto` constrains only what
//!   follows the format's opening marker (a lazy grammar).
//! * **KV-cache reuse:** the worker remembers which tokens the context holds; each call
//!   evaluates only the tokens after the longest common prefix with them, so an agent
//!   loop that re-sends a growing conversation pays only for what is new.
//! * Generation stops at end-of-generation tokens, at stop strings and at `max_tokens`;
//!   dropping the stream stops it within one token.
//! * llama.cpp's own logging goes to `tracing` (targets under `llama-cpp-2`).
//!
//! ## Features
//! * `llama-cpp` (default) — link llama.cpp (built from source by `llama-cpp-sys-2`: cmake
//!   and a C++ compiler, several minutes the first time). Without it the crate still
//!   compiles and documents its API — `cargo doc -p aintern-llm-llama
//!   --no-default-features` needs no llama.cpp — but [`LlamaLlm::load`] fails with
//!   [`Error::Backend`] saying why.
//! * `cuda`, `vulkan`, `metal` — GPU offload through llama.cpp (imply `llama-cpp`).

pub mod catalog;
#[cfg(feature = "llama-cpp")]
mod cores;
mod error;
#[cfg(feature = "llama-cpp")]
mod grammar;
mod job;
#[cfg(feature = "llama-cpp")]
mod sampler;
#[cfg(feature = "llama-cpp")]
mod session;
mod template;
#[cfg(feature = "llama-cpp")]
mod text;
#[cfg(feature = "llama-cpp")]
mod worker;
// Pure bookkeeping, used by the worker (and tested) only with llama.cpp built in.
#[cfg_attr(not(feature = "llama-cpp"), allow(dead_code))]
mod slots;
#[cfg_attr(not(feature = "llama-cpp"), allow(dead_code))]
mod speculate;
#[cfg_attr(not(feature = "llama-cpp"), allow(dead_code))]
mod stash;
#[cfg_attr(not(feature = "llama-cpp"), allow(dead_code))]
mod state;
#[cfg(not(feature = "llama-cpp"))]
#[path = "docs_only.rs"]
mod worker;

pub use error::Error;
pub use state::{prefix_states, remove_prefix_states, remove_session_state, PrefixStates};
pub use template::{ChatTemplate, TemplateCapabilities};

use async_trait::async_trait;
use core_models::{LlmRequest, LlmService, LlmStream};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

/// How to load and run a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlamaConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// Context window in tokens (0, the default: the model's training context, capped so
    /// that the KV cache takes at most [`LlamaConfig::kv_budget_bytes`]).
    pub context_size: u32,
    /// Most bytes the KV cache may take when the window is the default (`context_size`
    /// 0): 1 GiB unless set. Qwen2.5-Coder-1.5B (28 KiB a token in 16 bits) gets its whole
    /// 32,768-token training context; a Llama-3-8B-shaped model (128 KiB a token) 8,192.
    pub kv_budget_bytes: u64,
    /// Threads for generation and prompt processing (0: one per physical core the
    /// process may use).
    pub threads: u32,
    /// Tokens decoded per batch when reading a prompt.
    pub batch_size: u32,
    /// Layers offloaded to a GPU (needs a GPU feature).
    pub gpu_layers: u32,
    /// A chat template (Jinja source) to use instead of the one in the GGUF file, for a
    /// model whose own template is missing or wrong. Loading fails when it is not valid.
    pub chat_template: Option<String>,
    /// Where sessions' saved states are kept (`None`: nowhere). With a folder, the state
    /// of a request's [`core_models::LlmRequest::session`] is saved when the agent asks
    /// ([`LlmService::keep_session`]) and restored the first time the session asks again
    /// in a new process, so that only what is new is evaluated. The folder must be
    /// private to the user: a state holds the conversation.
    pub state_dir: Option<PathBuf>,
    /// Most bytes the saved states may take in `state_dir` (the least recently saved go
    /// first), and the kept prefixes in `prefix_dir`; when both are one folder, its
    /// sessions' states and prefixes share the cap.
    pub state_cap_bytes: u64,
    /// Where prompts' fixed prefixes are kept (`None`: nowhere): the state of a prompt's
    /// start before anything of the conversation's own — the system message with the
    /// tools — is saved once, and a new process whose prompt starts with the same tokens
    /// restores it instead of evaluating it (see `state/prefix.rs`). A prefix holds no
    /// conversation, but it holds the system prompt (the project's instructions too): the
    /// folder must be private to the user.
    pub prefix_dir: Option<PathBuf>,
    /// Draft tokens by prompt lookup and verify them in one batch: sooner when the reply
    /// copies from the conversation. Every token kept is the one the model chose at its
    /// place. Drafting keeps the KV cache in 8 bits ([`LlamaConfig::kv_cache_q8`]): with
    /// a 16-bit cache llama.cpp's CPU attention adds up one token over several threads
    /// and a batch in one, so a close greedy choice could go the other way; with the
    /// 8-bit cache both take the same path, and the reply is plain decoding's with that
    /// cache, token for token. Off by default.
    pub speculative: bool,
    /// Keep the KV cache in 8 bits (q8_0) instead of 16: half the memory and half the
    /// size of saved states, a slightly coarser cache. Always on while drafting.
    pub kv_cache_q8: bool,
    /// Most bytes of host memory for the states of prompts the context held before (0:
    /// none): a prompt of another shape (a decision asked apart, an answer from results
    /// alone) would overwrite the conversation's cache; its state is copied to memory
    /// first, and copied back when a prompt that starts the same way comes (see
    /// `stash.rs`). With a state folder, a session's stashed states are saved with it.
    pub prompt_cache_bytes: u64,
    /// Let llama.cpp use its flash-attention kernels where it can (the default: faster on
    /// the CPU, the more so as a conversation grows). An 8-bit cache uses them always.
    pub flash_attention: bool,
}

impl LlamaConfig {
    /// Defaults for `model_path`: the model's training context within a 1 GiB KV cache,
    /// every core, batches of 512, CPU only, no saved states or prefixes (a 2 GiB cap once
    /// a folder is set), 1 GiB of prompt states in memory, no drafting.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        LlamaConfig {
            model_path: model_path.into(),
            context_size: 0,
            kv_budget_bytes: DEFAULT_KV_BUDGET,
            threads: 0,
            batch_size: 512,
            gpu_layers: 0,
            chat_template: None,
            state_dir: None,
            state_cap_bytes: 2 << 30,
            prefix_dir: None,
            speculative: false,
            kv_cache_q8: false,
            prompt_cache_bytes: 1 << 30,
            flash_attention: true,
        }
    }
}

/// Check that an answer can be held to `schema` in-process: no count in it may be above
/// what a grammar holds ([`tool_grammar::check_counts`], the check the answer grammar
/// applies), and llama.cpp's converter must write a grammar for it (the grammar that holds
/// an answer to an [`core_models::ReplyConstraint::JsonSchema`]). For a front-end that
/// wants to refuse an unusable output schema before any model loads. A build without
/// llama.cpp checks the counts alone.
///
/// # Errors
/// [`Error::Grammar`] with the count that is too large, or the converter's reason.
pub fn check_answer_schema(schema: &serde_json::Value) -> Result<(), Error> {
    tool_grammar::check_counts(schema).map_err(|e| Error::Grammar(e.to_string()))?;
    #[cfg(feature = "llama-cpp")]
    {
        use tool_grammar::SchemaConverter as _;
        grammar::LlamaConverter
            .convert(schema)
            .map(|_| ())
            .map_err(|e| {
                Error::Grammar(format!(
                    "llama.cpp cannot hold an answer to this schema: {e}"
                ))
            })
    }
    #[cfg(not(feature = "llama-cpp"))]
    {
        let _ = schema;
        Ok(())
    }
}

/// Where `scripts/fetch-model` puts the default model of the [`catalog`]
/// (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M): `$AINTERN_CACHE_DIR/models/…`, else
/// `$XDG_CACHE_HOME/aintern/models/…`, else `~/.cache/aintern/models/…`.
pub fn default_model_path() -> PathBuf {
    catalog::models_dir().join(DEFAULT_MODEL_FILE)
}

/// The default model's file name (the [`catalog`]'s default).
pub const DEFAULT_MODEL_FILE: &str = "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf";

/// The KV cache's default budget ([`LlamaConfig::kv_budget_bytes`]).
pub const DEFAULT_KV_BUDGET: u64 = 1 << 30;

/// The default window of a model trained with `training` tokens of context whose KV
/// cache takes `bytes_per_token`: the training context, capped so that the cache fits
/// `budget` (in whole multiples of 256 tokens, at least 2,048).
pub fn default_window(training: u32, bytes_per_token: u64, budget: u64) -> u32 {
    let fits = budget / bytes_per_token.max(1);
    let fits = u32::try_from(fits).unwrap_or(u32::MAX) / 256 * 256;
    training.min(fits.max(2048)).max(256)
}

/// What was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// The model's name (its `general.name`, else the file name).
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// The context window in use.
    pub context_size: u32,
    /// The context the model was trained with.
    pub training_context: u32,
    /// The model's parameters.
    pub parameters: u64,
    /// Threads used for prompt processing and generation.
    pub threads: u32,
    /// The model's own chat template, when it has one.
    pub chat_template: Option<String>,
    /// What that template does with tools, tool results and system messages, when
    /// minijinja could compile it (else llama.cpp's built-in template support is used).
    pub template_capabilities: Option<TemplateCapabilities>,
    /// The model's own call format as its template shows it, when minijinja could
    /// compile the template.
    pub chat_format: Option<core_models::ChatFormat>,
}

/// A GGUF model behind the [`LlmService`] port. Cheap to clone: clones share the worker.
#[derive(Debug, Clone)]
pub struct LlamaLlm {
    jobs: mpsc::Sender<worker::Job>,
    info: Arc<ModelInfo>,
}

/// Check the file before llama.cpp sees it, so that problems are clear errors.
fn check_file(path: &Path) -> Result<u64, Error> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::ModelNotFound {
            path: path.to_path_buf(),
        },
        _ => Error::ModelUnreadable {
            path: path.to_path_buf(),
            message: e.to_string(),
        },
    })?;
    if !meta.is_file() {
        return Err(Error::ModelUnreadable {
            path: path.to_path_buf(),
            message: "it is not a file".into(),
        });
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| Error::ModelUnreadable {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if &magic != b"GGUF" {
        return Err(Error::ModelInvalid {
            path: path.to_path_buf(),
            message: "it does not start with the GGUF signature".into(),
        });
    }
    if let Some(available) = available_memory() {
        if meta.len() > available {
            return Err(Error::ModelTooLarge {
                path: path.to_path_buf(),
                size: meta.len(),
                available,
            });
        }
    }
    Ok(meta.len())
}

/// Memory available for a new allocation, where the system tells (Linux).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl LlamaLlm {
    /// Load the model (blocking: call it off the async runtime, e.g. in `spawn_blocking`).
    ///
    /// # Errors
    /// A missing, unreadable, corrupt or too-large model file, or llama.cpp failing to set
    /// up, is an [`Error`] in words — never a crash.
    pub fn load(config: LlamaConfig) -> Result<Self, Error> {
        check_file(&config.model_path)?;
        let (jobs, job_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("llama-worker".into())
            .spawn(move || worker::run(config, ready_tx, job_rx))
            .map_err(|e| Error::Backend(format!("cannot start the worker thread: {e}")))?;
        let info = ready_rx.recv().map_err(|_| Error::WorkerGone)??;
        Ok(LlamaLlm {
            jobs,
            info: Arc::new(info),
        })
    }

    /// What was loaded.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Measure throughput the way llama.cpp's llama-bench does: `prompt_tokens`
    /// synthetic tokens decoded as one batch after a cleared cache (pp), then
    /// `gen_tokens` tokens generated one by one with greedy sampling (tg), through the
    /// same decode and sampling path as generation. Blocking; clears the KV cache.
    ///
    /// # Errors
    /// [`Error::ContextFull`] when `prompt_tokens + gen_tokens` do not fit the context;
    /// [`Error::Backend`] when decoding fails.
    pub fn throughput(&self, prompt_tokens: u32, gen_tokens: u32) -> Result<Throughput, Error> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(worker::Job::Throughput {
                prompt_tokens,
                gen_tokens,
                reply: tx,
            })
            .map_err(|_| Error::WorkerGone)?;
        rx.recv().map_err(|_| Error::WorkerGone)?
    }

    /// Forget every prompt the context holds (the next request is evaluated in full), as a
    /// fresh load would: for measurements that must start from the same state.
    ///
    /// # Errors
    /// [`Error::WorkerGone`] when the worker stopped.
    pub fn clear_cache(&self) -> Result<(), Error> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(worker::Job::Clear { reply: tx })
            .map_err(|_| Error::WorkerGone)?;
        rx.recv().map_err(|_| Error::WorkerGone)
    }

    /// The prompt the model would be given for `request` (its chat template applied).
    ///
    /// # Errors
    /// [`Error::Template`] when the chat cannot be rendered.
    pub fn render(&self, request: &LlmRequest) -> Result<String, Error> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(worker::Job::Render {
                request: request.clone(),
                reply: tx,
            })
            .map_err(|_| Error::WorkerGone)?;
        rx.recv().map_err(|_| Error::WorkerGone)?
    }
}

/// Raw speed of the loaded model on this machine (see [`LlamaLlm::throughput`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    /// Prompt processing: tokens decoded per second in one batch.
    pub prompt_tokens_per_second: f64,
    /// Generation: tokens generated per second, one at a time, greedy.
    pub generated_tokens_per_second: f64,
}

#[async_trait]
impl LlmService for LlamaLlm {
    fn model_name(&self) -> String {
        self.info.name.clone()
    }

    fn chat_format(&self) -> Option<core_models::ChatFormat> {
        self.info.chat_format.clone()
    }

    async fn count_tokens(&self, request: &LlmRequest) -> Result<Option<u64>, core_models::Error> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.jobs
            .send(worker::Job::Count {
                request: request.clone(),
                reply: tx,
            })
            .map_err(|_| Error::WorkerGone)?;
        let counted = rx.await.map_err(|_| Error::WorkerGone)??;
        Ok(Some(counted))
    }

    fn model_details(&self) -> core_models::ModelDetails {
        core_models::ModelDetails::default()
            .with_parameters(Some(self.info.parameters).filter(|p| *p > 0))
            .with_context_length(Some(self.info.context_size))
    }

    async fn keep_session(
        &self,
        session: &core_models::SessionKey,
    ) -> Result<bool, core_models::Error> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.jobs
            .send(worker::Job::Keep {
                session: session.clone(),
                reply: tx,
            })
            .map_err(|_| Error::WorkerGone)?;
        Ok(rx.await.map_err(|_| Error::WorkerGone)??)
    }

    async fn generate(&self, request: LlmRequest) -> Result<LlmStream, core_models::Error> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.jobs
            .send(worker::Job::Generate { request, out: tx })
            .map_err(|_| Error::WorkerGone)?;
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        })))
    }
}
