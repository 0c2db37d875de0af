//! One job on the context: a reply generated from a prompt (the cache reused), or the
//! throughput measured.

use crate::sampler::ReplySampler;
use crate::slots::Slots;
use crate::speculate::Drafter;
use crate::stash::SeqStash;
use crate::state::{Restored, StateStore, PREFIX_MIN_TOKENS};
use crate::text::{Stop, StopMatcher, Utf8Decoder};
use crate::worker::Templates;
use crate::Error;
use core_models::{LlmChunk, LlmRequest, LlmUsage};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

/// The most tokens one draft's batch holds (the token and its draft).
const DRAFT_BATCH: usize = 17;

pub(crate) struct Session<'m, 'c> {
    model: &'m LlamaModel,
    ctx: &'c mut LlamaContext<'m>,
    /// The tokens each of the context's sequences holds.
    slots: &'c mut Slots<LlamaToken>,
    /// States of prompts the sequence held before, in memory (`None`: none kept).
    stash: Option<&'c mut SeqStash>,
    /// Where prompts' fixed prefixes are kept on disk (`None`: nowhere).
    store: Option<&'c StateStore>,
    batch: usize,
    /// Whether replies may be drafted by prompt lookup (see [`crate::speculate`]).
    speculative: bool,
    out: &'c UnboundedSender<Result<LlmChunk, core_models::Error>>,
}

/// What a job keeps besides the context: prompts' states in memory, and the prefixes
/// kept on disk.
#[derive(Default)]
pub(crate) struct Kept<'c> {
    /// States of prompts the sequence held before (`None`: none kept).
    pub(crate) stash: Option<&'c mut SeqStash>,
    /// Where prompts' fixed prefixes are kept (`None`: nowhere).
    pub(crate) prefixes: Option<&'c StateStore>,
}

/// Which outputs of a decode get logits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Logits {
    /// The last token's only (a prompt, a single token).
    Last,
    /// Every token's (a draft to verify).
    All,
}

/// The reply being written: what its tokens become (text through the stop strings), and
/// when it ends.
struct Reply {
    utf8: Utf8Decoder,
    stops: StopMatcher,
    generated: u64,
    max: u64,
    first_token: Option<std::time::Duration>,
    stopped: bool,
    /// Tokens written for the model (the end of its reasoning, see `ReasoningBudget`).
    forced: VecDeque<LlamaToken>,
    /// When the request began (the time to the first token counts from it).
    started: Instant,
}

/// A prompt being read: its tokens, how many the cache held already, and when the
/// request began.
struct Reading<'a> {
    tokens: &'a [LlamaToken],
    cached: usize,
    started: Instant,
}

/// What a draft's verification writes into: the reply, its sampler, and the tokens drafts
/// are looked up in.
struct Writing<'a> {
    reply: &'a mut Reply,
    sampler: &'a mut ReplySampler,
    history: &'a mut Vec<LlamaToken>,
}

/// What a draft's verification kept.
struct Checked {
    /// How many of the draft's tokens the model agreed with.
    kept: usize,
    /// The model's own token after them, to write next (none when the reply ended, or
    /// stopped for tokens written for the model).
    next: Option<LlamaToken>,
    /// Whether the reply ended among the kept tokens.
    ended: bool,
}

impl<'m, 'c> Session<'m, 'c> {
    pub(crate) fn new(
        model: &'m LlamaModel,
        ctx: &'c mut LlamaContext<'m>,
        slots: &'c mut Slots<LlamaToken>,
        kept: Kept<'c>,
        batch: usize,
        speculative: bool,
        out: &'c UnboundedSender<Result<LlmChunk, core_models::Error>>,
    ) -> Self {
        Session {
            model,
            ctx,
            slots,
            stash: kept.stash,
            store: kept.prefixes,
            batch,
            speculative,
            out,
        }
    }

    fn cancelled(&self) -> bool {
        self.out.is_closed()
    }

    /// Forget the whole cache (after a failed decode the context is in an unknown state).
    fn reset_cache(&mut self) {
        self.ctx.clear_kv_cache();
        self.slots.clear_all();
    }

    /// Forget what `seq` holds from `position` on; false when llama.cpp cannot.
    fn trim(&mut self, seq: usize, position: usize) -> bool {
        let (Ok(s), Ok(p)) = (u32::try_from(seq), u32::try_from(position)) else {
            return false;
        };
        if self.ctx.clear_kv_cache_seq(Some(s), Some(p), None) == Ok(true) {
            self.slots.truncate(seq, position);
            true
        } else {
            false
        }
    }

    /// Decode `tokens` into sequence `seq` from position `start`. When the cache is full,
    /// the least recently used other sequences are evicted, one by one, until it fits.
    fn decode(
        &mut self,
        seq: usize,
        tokens: &[LlamaToken],
        start: usize,
        logits: Logits,
    ) -> Result<(), Error> {
        let size = self.batch.max(1);
        let mut batch = LlamaBatch::new(size.max(tokens.len().min(DRAFT_BATCH)), 1);
        let seq_id = i32::try_from(seq).unwrap_or(0);
        let chunk_size = if logits == Logits::All {
            tokens.len().max(1)
        } else {
            size
        };
        for (chunk_index, chunk) in tokens.chunks(chunk_size).enumerate() {
            if self.cancelled() {
                return Ok(());
            }
            batch.clear();
            let offset = start + chunk_index * chunk_size;
            for (i, token) in chunk.iter().enumerate() {
                let pos = offset + i;
                let wanted = logits == Logits::All || pos + 1 == start + tokens.len();
                batch
                    .add(
                        *token,
                        i32::try_from(pos).unwrap_or(i32::MAX),
                        &[seq_id],
                        wanted,
                    )
                    .map_err(|e| Error::Backend(e.to_string()))?;
            }
            loop {
                match self.ctx.decode(&mut batch) {
                    Ok(()) => break,
                    Err(DecodeError::NoKvCacheSlot) => {
                        // Nothing was written: make room and try again.
                        let Some(other) = self.slots.evictable(seq) else {
                            self.reset_cache();
                            return Err(Error::ContextFull {
                                needed: start + tokens.len(),
                                window: self.ctx.n_ctx(),
                            });
                        };
                        tracing::debug!(evicted = other, "the cache is full: a sequence evicted");
                        let cleared = u32::try_from(other)
                            .ok()
                            .and_then(|o| self.ctx.clear_kv_cache_seq(Some(o), None, None).ok());
                        if cleared != Some(true) {
                            self.reset_cache();
                            return Err(Error::Backend("cannot free the cache".into()));
                        }
                        self.slots.clear(other);
                    }
                    Err(e) => {
                        self.reset_cache();
                        return Err(Error::Backend(format!("decoding failed: {e}")));
                    }
                }
            }
            self.slots.extend(seq, chunk);
        }
        Ok(())
    }

    /// Generate the reply to `request`: its prompt evaluated (what a sequence already holds
    /// reused), then its tokens sampled and sent, drafts verified in batches when drafting
    /// is on; the prompt's usage sent before the reply, the whole usage after.
    pub(crate) fn generate(
        &mut self,
        templates: &Templates<'_>,
        request: &LlmRequest,
    ) -> Result<(), Error> {
        let started = Instant::now();
        let (prompt, has_bos) = templates.render(self.model, request)?;
        let tokens = self
            .model
            .vocab()
            .tokenize(prompt.as_bytes(), !has_bos, true);
        let prefix = templates.fixed_prefix(self.model, request, &tokens, !has_bos);
        let (seq, prompt_usage) = self.evaluate_prompt(request, &tokens, prefix, started)?;
        if self.cancelled() {
            return Ok(());
        }
        // The prompt's counts before the reply (the last report holds): a reply its reader
        // stops early (a loop cut short) has still reported what its prompt cost.
        let _ = self.out.send(Ok(LlmChunk::Usage(prompt_usage.clone())));

        let mut sampler =
            ReplySampler::new(self.model, request, &templates.grammar_target(&prompt))?;
        let gen_started = Instant::now();
        let mut reply = Reply {
            utf8: Utf8Decoder::default(),
            stops: StopMatcher::new(&[request.options.stop.clone(), templates.stops()].concat()),
            generated: 0,
            max: u64::from(request.options.max_tokens.max(1)),
            first_token: None,
            stopped: false,
            forced: VecDeque::new(),
            started,
        };
        let mut drafter = self.speculative.then(Drafter::default);
        let window = self.ctx.n_ctx() as usize;
        // The prompt and the reply so far: what drafts are looked up in.
        let mut history = tokens;
        let mut position = history.len();
        // A token already sampled (from a draft's batch), to write next.
        let mut pending: Option<LlamaToken> = None;
        while !self.cancelled() {
            let token = match pending.take() {
                Some(token) => token,
                None => match reply.forced.pop_front() {
                    Some(token) => {
                        sampler.accept(token);
                        token
                    }
                    // `sample` also accepts the token into the chain and the grammar.
                    None => sampler.sample(self.ctx, -1),
                },
            };
            if !self.write(&mut reply, &mut sampler, token) {
                break;
            }
            history.push(token);
            let room = window.saturating_sub(position + 2);
            let draft = match drafter.as_mut() {
                Some(drafter) if reply.forced.is_empty() => {
                    let left = usize::try_from(reply.max - reply.generated).unwrap_or(usize::MAX);
                    drafter.draft(&history, room.min(left).min(DRAFT_BATCH - 1))
                }
                _ => Vec::new(),
            };
            if position + 1 >= window {
                let _ = self.out.send(Err(Error::ContextFull {
                    needed: position + 1,
                    window: self.ctx.n_ctx(),
                }
                .into()));
                return Ok(());
            }
            if draft.is_empty() {
                self.decode(seq, &[token], position, Logits::Last)?;
                position += 1;
                continue;
            }
            let mut writing = Writing {
                reply: &mut reply,
                sampler: &mut sampler,
                history: &mut history,
            };
            let checked = self.verify(seq, token, &draft, &mut position, &mut writing)?;
            if let Some(drafter) = drafter.as_mut() {
                drafter.record(draft.len(), checked.kept);
            }
            pending = checked.next;
            if checked.ended {
                break;
            }
        }
        if self.cancelled() {
            return Ok(());
        }
        self.finish(&mut reply, &sampler, drafter.as_ref());
        let usage = prompt_usage
            .with_generated_tokens(reply.generated)
            .with_time_to_first_token(reply.first_token.unwrap_or_else(|| started.elapsed()))
            .with_generation_time(gen_started.elapsed())
            .with_hit_token_limit(!reply.stopped && reply.generated >= reply.max);
        let _ = self.out.send(Ok(LlmChunk::Usage(usage)));
        Ok(())
    }

    /// Evaluate the prompt's `tokens` into the sequence that already holds most of them
    /// (or a state of the same start stashed in memory, or its fixed `prefix` kept on
    /// disk), only what it does not hold (at least the last token, whose logits start the
    /// generation). Returns the sequence and the prompt's usage.
    fn evaluate_prompt(
        &mut self,
        request: &LlmRequest,
        tokens: &[LlamaToken],
        prefix: usize,
        started: Instant,
    ) -> Result<(usize, LlmUsage), Error> {
        let window = self.ctx.n_ctx() as usize;
        if tokens.is_empty() {
            return Err(Error::Template("the prompt is empty".into()));
        }
        if tokens.len() >= window {
            return Err(Error::ContextFull {
                needed: tokens.len(),
                window: self.ctx.n_ctx(),
            });
        }
        let chosen = self.slots.choose(tokens);
        let seq = chosen.seq;
        let mut common = chosen.common;
        if let Some(stash) = self.stash.as_deref_mut() {
            // A prompt of another shape keeps the sequence's state in memory; one of a
            // shape seen before finds its own again.
            common = crate::stash::swap_in(self.ctx, self.slots, stash, seq, tokens, common);
            stash.set_owner(seq, request.sent_for().cloned());
        }
        // A prefix worth keeping, and not all of the prompt (its last token is evaluated).
        let prefix = (prefix >= PREFIX_MIN_TOKENS && prefix < tokens.len()).then_some(prefix);
        let mut restored = false;
        if let (Some(prefix), Some(store)) = (prefix, self.store) {
            if common < prefix {
                let found = store.restore_prefix(
                    self.ctx,
                    self.slots,
                    self.stash.as_deref_mut(),
                    seq,
                    &tokens[..prefix],
                );
                match found {
                    Restored::Loaded { .. } => {
                        tracing::debug!(tokens = prefix, "the prompt's prefix restored");
                        common = prefix;
                        restored = true;
                    }
                    Restored::Nothing => {}
                    Restored::Skipped(why) => {
                        tracing::info!(%why, "a kept prompt prefix was not used: it is evaluated again");
                    }
                }
                // A state llama.cpp would not load leaves the sequence empty.
                common = common.min(self.slots.tokens(seq).len());
            }
        }
        let mut common = common.min(tokens.len() - 1);
        if common < self.slots.tokens(seq).len() && !self.trim(seq, common) {
            self.reset_cache();
            common = 0;
        }
        let evaluated = tokens.len() - common;
        tracing::debug!(
            prompt_tokens = tokens.len(),
            reused = common,
            evaluated,
            seq,
            "prompt"
        );
        let reading = Reading {
            tokens,
            cached: common,
            started,
        };
        // The prefix in batches of its own: the rest is then read the same way whether
        // the prefix was evaluated or restored.
        let mut done = common;
        if let Some(prefix) = prefix.filter(|&p| common < p) {
            self.decode_prompt(seq, &reading, done, prefix)?;
            done = prefix;
            if let Some(store) = self.store.filter(|_| !restored && !self.cancelled()) {
                match store.save_prefix(self.ctx, self.slots, seq, &tokens[..prefix]) {
                    Ok(true) => tracing::debug!(tokens = prefix, "the prompt's prefix kept"),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "the prompt's prefix was not kept"),
                }
            }
        }
        self.decode_prompt(seq, &reading, done, tokens.len())?;
        let prompt_time = started.elapsed();
        let usage = LlmUsage::default()
            .with_prompt_tokens(tokens.len() as u64)
            .with_prompt_tokens_evaluated(evaluated as u64)
            .with_cached_prompt_tokens((tokens.len() as u64).saturating_sub(evaluated as u64))
            .with_prompt_time(prompt_time)
            .with_time_to_first_token(prompt_time);
        Ok((seq, usage))
    }

    /// Decode the prompt's tokens `from..to` (what the sequence holds before is reused),
    /// a batch at a time, reporting how far it has read after each
    /// ([`LlmChunk::Progress`]).
    fn decode_prompt(
        &mut self,
        seq: usize,
        reading: &Reading<'_>,
        from: usize,
        to: usize,
    ) -> Result<(), Error> {
        let report = |session: &Self, done: usize| {
            let progress = core_models::PromptProgress {
                done: done as u64,
                total: reading.tokens.len() as u64,
                cached: reading.cached as u64,
                elapsed_ms: u64::try_from(reading.started.elapsed().as_millis())
                    .unwrap_or(u64::MAX),
            };
            let _ = session.out.send(Ok(LlmChunk::Progress(progress)));
        };
        if from == reading.cached {
            report(self, from);
        }
        let size = self.batch.max(1);
        let mut done = from;
        while done < to {
            if self.cancelled() {
                return Ok(());
            }
            let end = (done + size).min(to);
            self.decode(seq, &reading.tokens[done..end], done, Logits::Last)?;
            done = end;
            report(self, done);
        }
        Ok(())
    }

    /// Verify `draft`: the written `token` and the draft decoded in one batch at
    /// `position` (output i predicts what follows the token and the draft's first i
    /// tokens), the draft's tokens written while the model's own choice agrees. What the
    /// cache holds past the last kept token is dropped. Moves `position` past what was
    /// kept.
    fn verify(
        &mut self,
        seq: usize,
        token: LlamaToken,
        draft: &[LlamaToken],
        position: &mut usize,
        writing: &mut Writing<'_>,
    ) -> Result<Checked, Error> {
        let mut batch = Vec::with_capacity(draft.len() + 1);
        batch.push(token);
        batch.extend_from_slice(draft);
        self.decode(seq, &batch, *position, Logits::All)?;
        *position += 1;
        let mut checked = Checked {
            kept: 0,
            next: None,
            ended: false,
        };
        for i in 0..=draft.len() {
            let index = i32::try_from(i).unwrap_or(0);
            let next = writing.sampler.sample(self.ctx, index);
            if draft.get(i) != Some(&next) {
                // The model's own token where the draft went wrong, or the one after a
                // draft taken whole.
                checked.next = Some(next);
                break;
            }
            checked.kept += 1;
            *position += 1;
            let go_on = self.write(writing.reply, writing.sampler, next);
            writing.history.push(next);
            if !go_on {
                checked.ended = true;
                break;
            }
            if !writing.reply.forced.is_empty() {
                break;
            }
        }
        if self.slots.tokens(seq).len() > *position && !self.trim(seq, *position) {
            self.reset_cache();
            return Err(Error::Backend(
                "the cache cannot drop a refused draft".into(),
            ));
        }
        Ok(checked)
    }

    /// Send what the reply still holds back (an incomplete character, the start of a
    /// stop string that never completed), and log what grammar and drafts did.
    fn finish(&mut self, reply: &mut Reply, sampler: &ReplySampler, drafter: Option<&Drafter>) {
        if !reply.stopped {
            let tail = reply.utf8.finish();
            let text = match reply.stops.push(&tail) {
                Stop::Continue(t) | Stop::Stopped(t) => t,
            };
            self.send(text + &reply.stops.finish());
        }
        if sampler.grammar.is_some() {
            tracing::debug!(
                generated = reply.generated,
                corrected = sampler.corrected,
                "tokens the grammar had sampled again"
            );
        }
        if let Some(drafter) = drafter {
            tracing::debug!(
                generated = reply.generated,
                drafted = drafter.drafted,
                accepted = drafter.accepted,
                "prompt-lookup drafts"
            );
        }
    }

    /// Write the chosen `token` into the reply; false when the reply ends with it (an
    /// end-of-generation token, which is not written; a stop string; the token limit).
    fn write(&mut self, reply: &mut Reply, sampler: &mut ReplySampler, token: LlamaToken) -> bool {
        let vocab = self.model.vocab();
        if vocab.is_eog(token) {
            return false;
        }
        reply.generated += 1;
        reply
            .first_token
            .get_or_insert_with(|| reply.started.elapsed());
        // Special tokens as their text: call and reasoning markers are special tokens in
        // many models (`[TOOL_CALLS]`, `<|START_ACTION|>`, `<|python_tag|>`…), and the
        // parser must see them, as the grammar does.
        let piece = vocab.token_to_piece(token, true, None);
        if reply.forced.is_empty() {
            if let Some(close) = sampler.forced_text(&piece) {
                reply
                    .forced
                    .extend(vocab.tokenize(close.as_bytes(), false, true));
            }
        }
        let text = reply.utf8.push(&piece);
        if !text.is_empty() {
            match reply.stops.push(&text) {
                Stop::Continue(t) => self.send(t),
                Stop::Stopped(t) => {
                    self.send(t);
                    reply.stopped = true;
                    return false;
                }
            }
        }
        reply.generated < reply.max
    }

    /// Prompt processing and generation speed, measured as llama-bench measures raw
    /// llama.cpp: `prompt_tokens` synthetic tokens decoded as one batch after a cleared
    /// cache, then `gen_tokens` tokens generated one at a time with greedy sampling —
    /// through the same decode and sampling calls that [`Session::generate`] uses.
    pub(crate) fn throughput(
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
        self.decode(0, &prompt, 0, Logits::Last)?;
        let pp = started.elapsed();
        let mut sampler = LlamaSampler::greedy();
        let mut token = sampler.sample(self.ctx, -1);
        let started = Instant::now();
        for i in 0..g {
            self.decode(0, &[token], p + i, Logits::Last)?;
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
