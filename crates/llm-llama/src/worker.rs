//! The worker thread: owns the model and its context, runs one job at a time.

use crate::grammar::{tool_grammar, GrammarTarget, ReasoningBudget};
use crate::template::ChatTemplate;
use crate::text::{Stop, StopMatcher, Utf8Decoder};
use crate::{Error, LlamaConfig, ModelInfo};
use core_models::{LlmChunk, LlmRequest, LlmUsage};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use std::num::NonZeroU32;
use std::sync::{mpsc, OnceLock};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

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
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    } else {
        config.threads as usize
    };
    let threads = i32::try_from(threads).unwrap_or(1);
    let n_ctx = if config.context_size == 0 {
        model.n_ctx_train()
    } else {
        config.context_size
    };
    let batch = config.batch_size.clamp(1, n_ctx.max(1));
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
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
    let info = ModelInfo {
        name,
        path: config.model_path.clone(),
        context_size: ctx.n_ctx(),
        training_context: model.n_ctx_train(),
        parameters: model.n_params(),
        threads: u32::try_from(threads).unwrap_or(1),
        chat_template: source.clone(),
        template_capabilities: jinja.as_ref().map(ChatTemplate::capabilities),
        chat_format: jinja.as_ref().map(ChatTemplate::chat_format),
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let mut cache: Vec<LlamaToken> = Vec::new();
    for job in jobs {
        match job {
            Job::Render { request, reply } => {
                let _ = reply.send(templates.render(&model, &request).map(|(p, _)| p));
            }
            Job::Count { request, reply } => {
                let counted = templates.render(&model, &request).map(|(prompt, has_bos)| {
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
                let mut session = Session::new(&model, &mut ctx, &mut cache, batch as usize, &out);
                let _ = reply.send(session.throughput(prompt_tokens, gen_tokens));
            }
            Job::Generate { request, out } => {
                let mut session = Session::new(&model, &mut ctx, &mut cache, batch as usize, &out);
                if let Err(e) = session.generate(&templates, &request) {
                    let _ = out.send(Err(e.into()));
                }
            }
        }
    }
}

/// The ways a chat becomes a prompt, best first.
#[derive(Clone, Copy)]
struct Templates<'a> {
    /// The model's Jinja template through minijinja.
    jinja: Option<&'a ChatTemplate>,
    /// llama.cpp's built-in support for well-known templates.
    builtin: Option<&'a LlamaChatTemplate>,
}

impl Templates<'_> {
    /// What a tool grammar for a reply to `prompt` is written for (see
    /// [`ChatTemplate::grammar_target`]); AIntern's fence without a Jinja template.
    fn grammar_target(&self, prompt: &str) -> GrammarTarget {
        self.jinja
            .map(|t| t.grammar_target(prompt))
            .unwrap_or_else(GrammarTarget::fence)
    }

    /// The chat as a prompt: the model's Jinja template, else llama.cpp's built-in
    /// template support, else the plain rendering. Also says whether the prompt already
    /// starts with the beginning-of-sequence token's text (so it must not be added again).
    fn render(&self, model: &LlamaModel, request: &LlmRequest) -> Result<(String, bool), Error> {
        if let Some(jinja) = self.jinja {
            match jinja.render(&request.messages, &request.tools) {
                Ok(prompt) => {
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

/// How a reply's tokens are chosen: the ordinary sampling chain, and apart from it the
/// tool grammar, if any.
///
/// As llama.cpp's common sampler does, a token is first sampled without the grammar and
/// then checked against it alone; only when the grammar rejects it are the grammar and
/// the chain applied to every candidate, and the token sampled again. Most tokens of a
/// call are what the model would write anyway, so the grammar's full-vocabulary pass
/// (tens of thousands of candidates) runs only for the few it has to correct. A lazy
/// grammar that has not been triggered yet accepts every token.
struct ReplySampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
    /// The token chosen when the grammar leaves no candidate at all.
    fallback: LlamaToken,
    /// Tokens the grammar rejected and had sampled again.
    corrected: u64,
    /// The reasoning allowed before a required call.
    budget: Option<ReasoningBudget>,
    /// When a rejected token can be sampled again from the best-scored candidates alone:
    /// how many of them the grammar must allow for the result to be the same as over
    /// every candidate (see [`ReplySampler::sample`]).
    shortlist_needs: Option<usize>,
}

/// How many of the best-scored candidates the grammar checks first after a rejection.
const SHORTLIST: usize = 128;

impl ReplySampler {
    fn new(
        model: &LlamaModel,
        request: &LlmRequest,
        target: &GrammarTarget,
    ) -> Result<Self, Error> {
        let grammar = match tool_grammar(request, target)? {
            Some(grammar) => {
                let sampler = if grammar.is_lazy() {
                    LlamaSampler::grammar_lazy_patterns(
                        model,
                        &grammar.text,
                        "root",
                        &grammar.triggers,
                        &[],
                    )
                } else {
                    LlamaSampler::grammar(model, &grammar.text, "root")
                };
                Some(sampler.map_err(|e| Error::Grammar(format!("llama.cpp refused it: {e}")))?)
            }
            None => None,
        };
        let options = &request.options;
        // Greedy needs one allowed token among the best; top-k (with no penalties, which
        // would reorder the scores first) needs k. Other chains see every candidate.
        let shortlist_needs = if options.temperature <= 0.0 {
            Some(1)
        } else if options.top_k > 0 && (options.repeat_penalty - 1.0).abs() <= f32::EPSILON {
            usize::try_from(options.top_k)
                .ok()
                .filter(|&k| k <= SHORTLIST)
        } else {
            None
        };
        let budget = grammar
            .as_ref()
            .and_then(|_| ReasoningBudget::new(request, target));
        Ok(ReplySampler {
            chain: chain(model, options),
            grammar,
            fallback: model.vocab().eos(),
            corrected: 0,
            budget,
            shortlist_needs,
        })
    }

    /// Take `token` as chosen (written for the model), into the chain and the grammar.
    fn accept(&mut self, token: LlamaToken) {
        if let Some(grammar) = self.grammar.as_mut() {
            grammar.accept(token);
        }
        self.chain.accept(token);
    }

    /// Note a generated token's text; returns the text to write for the model when its
    /// reasoning budget is spent (see [`ReasoningBudget`]).
    fn forced_text(&mut self, piece: &[u8]) -> Option<String> {
        self.budget
            .as_mut()
            .and_then(|b| b.push(&String::from_utf8_lossy(piece)))
    }

    /// The next token from output `index` of the last decode, accepted into the chain
    /// and the grammar.
    fn sample(&mut self, ctx: &LlamaContext<'_>, index: i32) -> LlamaToken {
        let Some(grammar) = self.grammar.as_mut() else {
            // `sample` also accepts the token into the chain.
            return self.chain.sample(ctx, index);
        };
        let mut candidates = ctx.token_data_array_ith(index);
        self.chain.apply(&mut candidates);
        let mut token = candidates.selected_token().unwrap_or(self.fallback);
        let mut single =
            LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
        grammar.apply(&mut single);
        let rejected = single
            .data
            .first()
            .is_none_or(|t| t.logit() == f32::NEG_INFINITY);
        if rejected {
            self.corrected += 1;
            let mut candidates = ctx.token_data_array_ith(index);
            // First the best-scored candidates only: when the grammar allows enough of
            // them, the chain picks from them exactly what it would pick from all (every
            // candidate left out scores lower), without the full-vocabulary pass.
            let mut shortlisted = None;
            if let Some(needs) = self.shortlist_needs {
                if candidates.data.len() > SHORTLIST {
                    candidates
                        .data
                        .select_nth_unstable_by(SHORTLIST - 1, |a, b| {
                            b.logit().total_cmp(&a.logit())
                        });
                    let mut best =
                        LlamaTokenDataArray::new(candidates.data[..SHORTLIST].to_vec(), false);
                    grammar.apply(&mut best);
                    let allowed = best
                        .data
                        .iter()
                        .filter(|t| t.logit() != f32::NEG_INFINITY)
                        .count();
                    if allowed >= needs {
                        self.chain.apply(&mut best);
                        shortlisted = best.selected_token();
                    }
                }
            }
            token = match shortlisted {
                Some(token) => token,
                None => {
                    grammar.apply(&mut candidates);
                    self.chain.apply(&mut candidates);
                    candidates.selected_token().unwrap_or(self.fallback)
                }
            };
        }
        grammar.accept(token);
        self.chain.accept(token);
        token
    }
}

/// The sampling chain for `options` (no grammar: see [`ReplySampler`]).
fn chain(model: &LlamaModel, options: &core_models::InferenceOptions) -> LlamaSampler {
    let mut chain = Vec::new();
    if options.temperature <= 0.0 {
        chain.push(LlamaSampler::greedy());
        return LlamaSampler::chain_simple(chain);
    }
    if (options.repeat_penalty - 1.0).abs() > f32::EPSILON {
        chain.push(LlamaSampler::penalties(
            model.n_vocab(),
            64,
            options.repeat_penalty,
            0.0,
            0.0,
        ));
    }
    if options.top_k > 0 {
        chain.push(LlamaSampler::top_k(
            i32::try_from(options.top_k).unwrap_or(i32::MAX),
        ));
    }
    if options.top_p > 0.0 && options.top_p < 1.0 {
        chain.push(LlamaSampler::top_p(options.top_p, 1));
    }
    if options.min_p > 0.0 {
        chain.push(LlamaSampler::min_p(options.min_p, 1));
    }
    chain.push(LlamaSampler::temp(options.temperature));
    chain.push(LlamaSampler::dist(options.seed.unwrap_or_else(rand_seed)));
    LlamaSampler::chain_simple(chain)
}

fn rand_seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or(42)
}

struct Session<'m, 'c> {
    model: &'m LlamaModel,
    ctx: &'c mut LlamaContext<'m>,
    /// The tokens the context holds, in order.
    cache: &'c mut Vec<LlamaToken>,
    batch: usize,
    out: &'c UnboundedSender<Result<LlmChunk, core_models::Error>>,
}

impl<'m, 'c> Session<'m, 'c> {
    fn new(
        model: &'m LlamaModel,
        ctx: &'c mut LlamaContext<'m>,
        cache: &'c mut Vec<LlamaToken>,
        batch: usize,
        out: &'c UnboundedSender<Result<LlmChunk, core_models::Error>>,
    ) -> Self {
        Session {
            model,
            ctx,
            cache,
            batch,
            out,
        }
    }

    fn cancelled(&self) -> bool {
        self.out.is_closed()
    }

    /// Forget the whole cache (after a failed decode the context is in an unknown state).
    fn reset_cache(&mut self) {
        self.ctx.clear_kv_cache();
        self.cache.clear();
    }

    fn decode(
        &mut self,
        tokens: &[LlamaToken],
        start: usize,
        last_logits: bool,
    ) -> Result<(), Error> {
        let mut batch = LlamaBatch::new(self.batch.max(1), 1);
        for (chunk_index, chunk) in tokens.chunks(self.batch.max(1)).enumerate() {
            if self.cancelled() {
                return Ok(());
            }
            batch.clear();
            let offset = start + chunk_index * self.batch.max(1);
            for (i, token) in chunk.iter().enumerate() {
                let pos = offset + i;
                let logits = last_logits && pos + 1 == start + tokens.len();
                batch
                    .add(*token, i32::try_from(pos).unwrap_or(i32::MAX), &[0], logits)
                    .map_err(|e| Error::Backend(e.to_string()))?;
            }
            if let Err(e) = self.ctx.decode(&mut batch) {
                self.reset_cache();
                return Err(Error::Backend(format!("decoding failed: {e}")));
            }
            self.cache.extend_from_slice(chunk);
        }
        Ok(())
    }

    fn generate(&mut self, templates: &Templates<'_>, request: &LlmRequest) -> Result<(), Error> {
        let started = Instant::now();
        let (prompt, has_bos) = templates.render(self.model, request)?;
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(prompt.as_bytes(), !has_bos, true);
        let window = self.ctx.n_ctx();
        if tokens.is_empty() {
            return Err(Error::Template("the prompt is empty".into()));
        }
        if tokens.len() >= window as usize {
            return Err(Error::ContextFull {
                needed: tokens.len(),
                window,
            });
        }
        // Reuse what the context already holds; evaluate only the rest (at least the
        // last token, whose logits start the generation).
        let mut common = self
            .cache
            .iter()
            .zip(&tokens)
            .take_while(|(a, b)| a == b)
            .count();
        common = common.min(tokens.len() - 1);
        if common < self.cache.len() {
            let cleared = u32::try_from(common)
                .ok()
                .and_then(|p| self.ctx.clear_kv_cache_seq(Some(0), Some(p), None).ok());
            if cleared == Some(true) {
                self.cache.truncate(common);
            } else {
                self.reset_cache();
                common = 0;
            }
        }
        let evaluated = tokens.len() - common;
        tracing::debug!(
            prompt_tokens = tokens.len(),
            reused = common,
            evaluated,
            "prompt"
        );
        self.decode(&tokens[common..], common, true)?;
        let prompt_time = started.elapsed();
        if self.cancelled() {
            return Ok(());
        }

        let mut sampler =
            ReplySampler::new(self.model, request, &templates.grammar_target(&prompt))?;
        let gen_started = Instant::now();
        let mut utf8 = Utf8Decoder::default();
        let mut stops = StopMatcher::new(&request.options.stop);
        let mut first_token = None;
        let mut generated = 0u64;
        let mut logits_index = -1i32; // the last output of the previous decode
        let max = u64::from(request.options.max_tokens.max(1));
        let mut position = tokens.len();
        let mut stopped = false;
        // Tokens written for the model (the end of its reasoning, see ReasoningBudget).
        let mut forced = std::collections::VecDeque::new();
        while generated < max && !self.cancelled() {
            // `sample` also accepts the token into the chain and the grammar.
            let token = match forced.pop_front() {
                Some(token) => {
                    sampler.accept(token);
                    token
                }
                None => sampler.sample(self.ctx, logits_index),
            };
            if vocab.is_eog(token) {
                break;
            }
            generated += 1;
            first_token.get_or_insert_with(|| started.elapsed());
            // Special tokens as their text: call and reasoning markers are special tokens
            // in many models (`[TOOL_CALLS]`, `<|START_ACTION|>`, `<|python_tag|>`…), and
            // the parser must see them, as the grammar does. End-of-generation tokens
            // never get here.
            let piece = vocab.token_to_piece(token, true, None);
            if forced.is_empty() {
                if let Some(close) = sampler.forced_text(&piece) {
                    forced.extend(vocab.tokenize(close.as_bytes(), false, true));
                }
            }
            let text = utf8.push(&piece);
            if !text.is_empty() {
                match stops.push(&text) {
                    Stop::Continue(t) => self.send(t),
                    Stop::Stopped(t) => {
                        self.send(t);
                        stopped = true;
                        break;
                    }
                }
            }
            if generated >= max {
                break;
            }
            if position + 1 >= window as usize {
                let _ = self.out.send(Err(Error::ContextFull {
                    needed: position + 1,
                    window,
                }
                .into()));
                return Ok(());
            }
            self.decode(&[token], position, true)?;
            position += 1;
            logits_index = -1;
        }
        if self.cancelled() {
            return Ok(());
        }
        if !stopped {
            let tail = utf8.finish();
            let text = match stops.push(&tail) {
                Stop::Continue(t) | Stop::Stopped(t) => t,
            };
            self.send(text + &stops.finish());
        }
        if sampler.grammar.is_some() {
            tracing::debug!(
                generated,
                corrected = sampler.corrected,
                "tokens the grammar had sampled again"
            );
        }
        let usage = LlmUsage::default()
            .with_prompt_tokens(tokens.len() as u64)
            .with_prompt_tokens_evaluated(evaluated as u64)
            .with_cached_prompt_tokens((tokens.len() as u64).saturating_sub(evaluated as u64))
            .with_generated_tokens(generated)
            .with_time_to_first_token(first_token.unwrap_or_else(|| started.elapsed()))
            .with_prompt_time(prompt_time)
            .with_generation_time(gen_started.elapsed())
            .with_hit_token_limit(!stopped && generated >= max);
        let _ = self.out.send(Ok(LlmChunk::Usage(usage)));
        Ok(())
    }

    /// Prompt processing and generation speed, measured as llama-bench measures raw
    /// llama.cpp: `prompt_tokens` synthetic tokens decoded as one batch after a cleared
    /// cache, then `gen_tokens` tokens generated one at a time with greedy sampling —
    /// through the same decode and sampling calls that [`Session::generate`] uses.
    fn throughput(
        &mut self,
        prompt_tokens: u32,
        gen_tokens: u32,
    ) -> Result<crate::Throughput, Error> {
        let p = prompt_tokens.max(1) as usize;
        let g = gen_tokens.max(1) as usize;
        let window = self.ctx.n_ctx() as usize;
        if p + g + 1 > window {
            return Err(Error::ContextFull {
                needed: p + g + 1,
                window: self.ctx.n_ctx(),
            });
        }
        let n_vocab = usize::try_from(self.model.n_vocab()).unwrap_or(0).max(200);
        // The same synthetic prompt as rawbench: spread over the vocabulary.
        let prompt: Vec<LlamaToken> = (0..p)
            .map(|i| LlamaToken::new(i32::try_from(i * 7919 % (n_vocab - 100) + 50).unwrap_or(50)))
            .collect();
        self.reset_cache();
        let started = Instant::now();
        self.decode(&prompt, 0, true)?;
        let pp = started.elapsed();
        let mut sampler = LlamaSampler::greedy();
        let mut token = sampler.sample(self.ctx, -1);
        let started = Instant::now();
        for i in 0..g {
            self.decode(&[token], p + i, true)?;
            token = sampler.sample(self.ctx, -1);
        }
        let tg = started.elapsed();
        // The synthetic tokens are no conversation worth keeping.
        self.reset_cache();
        Ok(crate::Throughput {
            prompt_tokens_per_second: p as f64 / pp.as_secs_f64().max(f64::MIN_POSITIVE),
            generated_tokens_per_second: g as f64 / tg.as_secs_f64().max(f64::MIN_POSITIVE),
        })
    }

    fn send(&self, text: String) {
        if !text.is_empty() {
            let _ = self.out.send(Ok(LlmChunk::text(text)));
        }
    }
}
