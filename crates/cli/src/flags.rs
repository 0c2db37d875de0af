//! The flags more than one command takes, each defined once (as ripgrep's `flags/defs.rs`):
//! a command flattens the groups it uses, so that a flag's name, value and help text are
//! the same everywhere.
//!
//! * [`BackendArgs`] — which model answers: every command that loads or lists one;
//! * [`LoadArgs`] — how an in-process model is loaded: every command that loads one;
//! * [`ConfigArgs`] — which configuration file is read;
//! * [`PolicyArgs`] — how a request is run: every command that sends requests.

use core_models::ToolChoice;
use std::path::PathBuf;

/// Which model answers (`--backend`, `--model`, `--api-key-env`), resolved with the
/// `[backend]` section by [`crate::backend::choose`].
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct BackendArgs {
    /// The model: `llama:MODEL.gguf` or `llama:NAME` (a model of the catalog, see
    /// `aintern models`; default: qwen2.5-coder-1.5b),
    /// `openai:URL` (a server speaking the OpenAI chat-completions protocol: llama-server,
    /// vLLM, Ollama, LM Studio, a hosted API; URL up to /v1) or `script:FILE` (a scripted
    /// model). Default: `[backend]` in aintern.toml.
    #[arg(long, value_name = "BACKEND")]
    pub(crate) backend: Option<String>,
    /// The model's name on the server (`openai:`; default: its only or first model), a
    /// GGUF file, or the name of a model of the catalog (`aintern models` lists them).
    #[arg(long, value_name = "NAME")]
    pub(crate) model: Option<String>,
    /// The environment variable holding the server's API key (sent as a bearer token,
    /// never printed).
    #[arg(long, value_name = "VAR")]
    pub(crate) api_key_env: Option<String>,
}

/// How an in-process model is loaded.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct LoadArgs {
    /// A Jinja chat template to use instead of the model's own (llama models only), as
    /// llama.cpp's `--chat-template-file`: for a model whose template is missing or wrong.
    #[arg(long, value_name = "FILE")]
    pub(crate) chat_template: Option<PathBuf>,
    /// The model's context window in tokens (llama models; default: the model's training
    /// context, capped so that its KV cache takes at most 1 GiB). A conversation that
    /// outgrows it is compacted.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(256..))]
    pub(crate) context_size: Option<u32>,
    /// CPU threads for reading prompts and generating (llama models; default, or 0: one
    /// per physical core). Fewer leave cores to other work; more than the cores slow it
    /// down.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub(crate) threads: Option<u32>,
}

/// Which configuration is read.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ConfigArgs {
    /// Read the configuration from this TOML file instead of aintern.toml in the user's
    /// config folder and in the workspace.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

/// How a request is run.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct PolicyArgs {
    /// Whether the model must call a tool: auto, required, none, or a tool id.
    #[arg(long, value_name = "CHOICE")]
    pub(crate) tool_choice: Option<ToolChoice>,
    /// How each reply is asked for: auto (by the model's size), free (the model writes
    /// what it wants) or small-model (it chooses each step among answering and the tools,
    /// then writes it under a grammar). Default: the configuration's `steering`.
    #[arg(long, value_name = "STEERING")]
    pub(crate) steering: Option<services_ai::SteeringMode>,
    /// Most loop iterations per request.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) max_iterations: Option<u32>,
    /// Request timeout in seconds (at least 5); lowers the tool timeout when shorter.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(5..))]
    pub(crate) timeout: Option<u64>,
    /// Offer the model `update_plan`: a list of the task's steps, each pending, in
    /// progress or done, that the person follows (drawn at the terminal, `plan_updated`
    /// in the JSON events, `plan` updates over ACP). Off by default.
    #[arg(long)]
    pub(crate) plan: bool,
}
