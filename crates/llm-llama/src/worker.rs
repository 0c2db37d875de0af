//! The worker thread: owns the model and its context, runs one job at a time.

use crate::grammar::GrammarTarget;
use crate::session::Session;
use crate::slots::{Slots, SEQUENCES};
use crate::stash::SeqStash;
use crate::state::{Identity, Restored, StateStore};
use crate::template::ChatTemplate;
use crate::{Error, LlamaConfig, ModelInfo};
use core_models::LlmRequest;
use llama_cpp_2::context::params::{KvCacheType, LlamaContextParams};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use std::num::NonZeroU32;
use std::sync::{mpsc, OnceLock};

pub(crate) use crate::job::Job;

/// llama.cpp's backend can be initialized once per process.
pub(crate) fn backend() -> Result<&'static LlamaBackend, Error> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(
                llama_cpp_2::LogOptions::default().with_logs_enabled(true),
            );
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Backend(e.clone()))
}

pub(crate) fn run(
    config: LlamaConfig,
    ready: mpsc::Sender<Result<ModelInfo, Error>>,
    jobs: mpsc::Receiver<Job>,
) {
    let setup = || -> Result<(&'static LlamaBackend, LlamaModel), Error> {
        let backend = backend()?;
        let params = LlamaModelParams::default().with_n_gpu_layers(config.gpu_layers);
        let model =
            LlamaModel::load_from_file(backend, &config.model_path, &params).map_err(|e| {
                Error::ModelInvalid {
                    path: config.model_path.clone(),
                    message: format!("llama.cpp could not load it ({e})"),
                }
            })?;
        Ok((backend, model))
    };
    let (backend, model) = match setup() {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let threads = if config.threads == 0 {
        crate::cores::default_threads()
    } else {
        config.threads as usize
    };
    let threads = i32::try_from(threads).unwrap_or(1);
    let n_ctx = if config.context_size == 0 {
        crate::default_window(
            model.n_ctx_train(),
            kv_bytes_per_token(&model, kv_type(&config)),
            config.kv_budget_bytes,
        )
    } else {
        config.context_size
    };
    let batch = config.batch_size.clamp(1, n_ctx.max(1));
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_seq_max(SEQUENCES as u32)
        .with_kv_unified(true)
        // llama.cpp: -1 auto, 0 off. An 8-bit V cache needs flash attention.
        .with_flash_attention_policy(
            if config.flash_attention || kv_type(&config) != KvCacheType::F16 {
                -1
            } else {
                0
            },
        )
        .with_type_k(kv_type(&config))
        .with_type_v(kv_type(&config))
        .with_n_batch(batch)
        .with_n_ubatch(batch)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = match model.new_context(backend, params) {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(Error::Backend(format!(
                "cannot create a context of {n_ctx} tokens: {e}"
            ))));
            return;
        }
    };
    let template = match &config.chat_template {
        Some(source) => match LlamaChatTemplate::new(source) {
            Ok(t) => Some(t),
            Err(_) => {
                let _ = ready.send(Err(Error::Template(
                    "the chat template contains a NUL character".into(),
                )));
                return;
            }
        },
        None => model.chat_template(None).ok(),
    };
    let source = template
        .as_ref()
        .and_then(|t| t.to_str().ok().map(str::to_string));
    let jinja = match source.as_deref() {
        Some(source) => {
            let vocab = model.vocab();
            let text =
                |t| String::from_utf8_lossy(&vocab.token_to_piece(t, true, None)).into_owned();
            match ChatTemplate::new(source, &text(vocab.bos()), &text(vocab.eos())) {
                Ok(t) => Some(t),
                // A template the user gave must work.
                Err(e) if config.chat_template.is_some() => {
                    let _ = ready.send(Err(e));
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "using llama.cpp's built-in template support instead");
                    None
                }
            }
        }
        None => None,
    };
    let templates = Templates {
        jinja: jinja.as_ref(),
        builtin: template.as_ref(),
    };
    let info = model_info(
        &config,
        &model,
        ctx.n_ctx(),
        threads,
        source.clone(),
        jinja.as_ref(),
    );
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let store = |dir: &Option<std::path::PathBuf>| {
        state_store(&config, dir.clone(), &model, source.as_deref(), ctx.n_ctx())
    };
    let stores = Stores {
        sessions: store(&config.state_dir),
        prefixes: store(&config.prefix_dir),
    };
    serve(
        &jobs,
        &model,
        &mut ctx,
        &templates,
        stores,
        &config,
        batch as usize,
    );
}

/// The bytes one token takes in the KV cache of `model` with cells of `kind`: a key and a
/// value of each KV head's width in every layer.
fn kv_bytes_per_token(model: &LlamaModel, kind: KvCacheType) -> u64 {
    let head = u64::try_from(model.n_embd()).unwrap_or(0) / u64::from(model.n_head().max(1));
    let cells = u64::from(model.n_layer()) * u64::from(model.n_head_kv()) * head * 2;
    match kind {
        // q8_0: 34 bytes a block of 32.
        KvCacheType::Q8_0 => cells * 34 / 32,
        _ => cells * 2,
    }
}

/// Where sessions' states and prompts' prefixes are kept, when they are.
struct Stores {
    sessions: Option<StateStore>,
    prefixes: Option<StateStore>,
}

/// The jobs, one at a time, until the sender goes.
fn serve<'m>(
    jobs: &mpsc::Receiver<Job>,
    model: &'m LlamaModel,
    ctx: &mut llama_cpp_2::context::LlamaContext<'m>,
    templates: &Templates<'_>,
    mut stores: Stores,
    config: &LlamaConfig,
    batch: usize,
) {
    let mut slots: Slots<LlamaToken> = Slots::new(SEQUENCES);
    let mut stash = SeqStash::new(usize::try_from(config.prompt_cache_bytes).unwrap_or(usize::MAX));
    for job in jobs.iter() {
        match job {
            Job::Render { request, reply } => {
                let _ = reply.send(templates.render(model, &request).map(|(p, _)| p));
            }
            Job::Count { request, reply } => {
                let counted = templates.render(model, &request).map(|(prompt, has_bos)| {
                    model
                        .vocab()
                        .tokenize(prompt.as_bytes(), !has_bos, true)
                        .len() as u64
                });
                let _ = reply.send(counted);
            }
            Job::Throughput {
                prompt_tokens,
                gen_tokens,
                reply,
            } => {
                // Not streamed: nobody cancels it, so the sender never closes.
                let (out, _keep) = tokio::sync::mpsc::unbounded_channel();
                let kept = crate::session::Kept::default();
                let mut session = Session::new(model, ctx, &mut slots, kept, batch, false, &out);
                let _ = reply.send(session.throughput(prompt_tokens, gen_tokens));
            }
            Job::Clear { reply } => {
                ctx.clear_kv_cache();
                slots.clear_all();
                stash.clear();
                let _ = reply.send(());
            }
            Job::Keep { session, reply } => {
                let kept = match &stores.sessions {
                    Some(store) => store.save(ctx, &mut slots, &mut stash, &session),
                    None => Ok(false),
                };
                let _ = reply.send(kept);
            }
            Job::Generate { request, out } => {
                if let (Some(store), Some(key)) = (stores.sessions.as_mut(), request.sent_for()) {
                    if store.first_sight(key) {
                        restore(store, ctx, &mut slots, &mut stash, key);
                    }
                }
                let mut session = Session::new(
                    model,
                    ctx,
                    &mut slots,
                    crate::session::Kept {
                        stash: Some(&mut stash),
                        prefixes: stores.prefixes.as_ref(),
                    },
                    batch,
                    config.speculative,
                    &out,
                );
                if let Err(e) = session.generate(templates, &request) {
                    let _ = out.send(Err(e.into()));
                }
            }
        }
    }
}

/// Where states are saved in `dir`, when they are (a folder and a cap are set, and the
/// model file can be identified).
fn state_store(
    config: &LlamaConfig,
    dir: Option<std::path::PathBuf>,
    model: &LlamaModel,
    source: Option<&str>,
    n_ctx: u32,
) -> Option<StateStore> {
    dir.filter(|_| config.state_cap_bytes > 0).and_then(|dir| {
        let identity = Identity::of(
            &config.model_path,
            model.n_vocab(),
            source,
            n_ctx,
            SEQUENCES,
            config.gpu_layers,
            &format!("{:?}", kv_type(config)),
        );
        match identity {
            Ok(identity) => Some(StateStore::new(
                dir,
                config.state_cap_bytes,
                identity,
                config.batch_size.clamp(1, n_ctx.max(1)) as usize,
            )),
            Err(e) => {
                tracing::warn!(error = %e, "no state will be saved");
                None
            }
        }
    })
}

/// What was loaded, for [`crate::LlamaLlm::info`].
fn model_info(
    config: &LlamaConfig,
    model: &LlamaModel,
    context_size: u32,
    threads: i32,
    chat_template: Option<String>,
    jinja: Option<&ChatTemplate>,
) -> ModelInfo {
    let name = model
        .meta_val_str("general.name")
        .ok()
        .filter(|n| !n.trim().is_empty())
        .or_else(|| {
            config
                .model_path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "model".into());
    ModelInfo {
        name,
        path: config.model_path.clone(),
        context_size,
        training_context: model.n_ctx_train(),
        parameters: model.n_params(),
        threads: u32::try_from(threads).unwrap_or(1),
        chat_template,
        template_capabilities: jinja.map(ChatTemplate::capabilities),
        chat_format: jinja.map(ChatTemplate::chat_format),
    }
}

/// The KV cache's type: 8-bit when drafting (see [`LlamaConfig::kv_cache_q8`]).
fn kv_type(config: &LlamaConfig) -> KvCacheType {
    if config.kv_cache_q8 || config.speculative {
        KvCacheType::Q8_0
    } else {
        KvCacheType::F16
    }
}

/// Restore `key`'s saved state, if any, saying what happened.
fn restore(
    store: &StateStore,
    ctx: &mut llama_cpp_2::context::LlamaContext<'_>,
    slots: &mut Slots<LlamaToken>,
    stash: &mut SeqStash,
    key: &core_models::SessionKey,
) {
    let started = std::time::Instant::now();
    match store.restore(ctx, slots, stash, key) {
        Restored::Nothing => tracing::debug!(session = %key, "no saved state"),
        Restored::Loaded { sequences, tokens } => tracing::info!(
            session = %key,
            sequences,
            tokens,
            ms = started.elapsed().as_millis() as u64,
            "the session's saved state restored"
        ),
        Restored::Skipped(why) => tracing::info!(
            session = %key,
            %why,
            "the session's saved state was not used: the prompt is evaluated in full"
        ),
    }
}

/// The ways a chat becomes a prompt, best first.
#[derive(Clone, Copy)]
pub(crate) struct Templates<'a> {
    /// The model's Jinja template through minijinja.
    jinja: Option<&'a ChatTemplate>,
    /// llama.cpp's built-in support for well-known templates.
    builtin: Option<&'a LlamaChatTemplate>,
}

impl Templates<'_> {
    /// The texts that end a reply besides the request's own stops: the template's
    /// message opener (see [`ChatTemplate::message_opener`]).
    pub(crate) fn stops(&self) -> Vec<String> {
        self.jinja
            .and_then(ChatTemplate::message_opener)
            .map(str::to_string)
            .into_iter()
            .collect()
    }

    /// What a tool grammar for a reply to `prompt` is written for (see
    /// [`ChatTemplate::grammar_target`]); AIntern's fence without a Jinja template.
    pub(crate) fn grammar_target(&self, prompt: &str) -> GrammarTarget {
        self.jinja
            .map(|t| t.grammar_target(prompt))
            .unwrap_or_else(GrammarTarget::fence)
    }

    /// How many of the prompt's first `tokens` (`request` rendered, with `add_bos`) are
    /// its fixed prefix: what comes before anything of the conversation's own — the
    /// system message with the tools, as the template renders them, up to where the next
    /// message begins, whatever that is. Found by rendering the first message with a
    /// stand-in user message after it, and with a stand-in system message and user
    /// message after it: the tokens the prompt shares with both. 0 when the request does
    /// not begin with a system message or a stand-in cannot be rendered.
    pub(crate) fn fixed_prefix(
        &self,
        model: &LlamaModel,
        request: &LlmRequest,
        tokens: &[LlamaToken],
        add_bos: bool,
    ) -> usize {
        let Some(first) = request
            .messages
            .first()
            .filter(|m| m.role == core_models::MessageRole::System)
        else {
            return 0;
        };
        // A character no prompt starts a message with.
        let stand_in = "\u{1}";
        let variants = [
            vec![first.clone(), core_models::ChatMessage::user(stand_in)],
            vec![
                first.clone(),
                core_models::ChatMessage::system(stand_in),
                core_models::ChatMessage::user(stand_in),
            ],
        ];
        let mut shared = tokens.len();
        for messages in variants {
            let mut variant = LlmRequest::new(messages);
            variant.tools.clone_from(&request.tools);
            let Ok((prompt, _)) = self.render(model, &variant) else {
                return 0;
            };
            let variant = model.vocab().tokenize(prompt.as_bytes(), add_bos, true);
            shared = shared.min(crate::slots::common_prefix(&variant, tokens));
        }
        shared
    }

    /// The chat as a prompt: the model's Jinja template, else llama.cpp's built-in
    /// template support, else the plain rendering. Also says whether the prompt already
    /// starts with the beginning-of-sequence token's text (so it must not be added again).
    pub(crate) fn render(
        &self,
        model: &LlamaModel,
        request: &LlmRequest,
    ) -> Result<(String, bool), Error> {
        if let Some(jinja) = self.jinja {
            match jinja.render(&request.messages, &request.tools) {
                Ok(prompt) => {
                    tracing::trace!(%prompt, "the prompt, rendered by the model's template");
                    let has_bos =
                        !jinja.bos_token().is_empty() && prompt.starts_with(jinja.bos_token());
                    return Ok((prompt, has_bos));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "trying llama.cpp's built-in template support")
                }
            }
        }
        if let Some(template) = self.builtin {
            let chat: Result<Vec<LlamaChatMessage>, _> = request
                .messages
                .iter()
                .map(|m| {
                    LlamaChatMessage::new(
                        m.role.as_str().to_string(),
                        m.content.replace('\0', "\u{fffd}"),
                    )
                })
                .collect();
            let chat = chat.map_err(|e| Error::Template(e.to_string()))?;
            match model.apply_chat_template(template, &chat, true) {
                Ok(prompt) => return Ok((prompt, false)),
                Err(e) => {
                    tracing::warn!(error = %e, "the model's chat template failed; using the plain rendering")
                }
            }
        }
        Ok((tool_calls::prompt::render_plain(&request.messages), false))
    }
}
