//! How a reply's tokens are chosen: the sampling chain, and the tool grammar apart from it.

use crate::grammar::{tool_grammar, GrammarTarget, ReasoningBudget};
use crate::Error;
use core_models::LlmRequest;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

/// How a reply's tokens are chosen: the ordinary sampling chain, and apart from it the
/// tool grammar, if any.
///
/// As llama.cpp's common sampler does, a token is first sampled without the grammar and
/// then checked against it alone; only when the grammar rejects it are the grammar and
/// the chain applied to every candidate, and the token sampled again. Most tokens of a
/// call are what the model would write anyway, so the grammar's full-vocabulary pass
/// (tens of thousands of candidates) runs only for the few it has to correct. A lazy
/// grammar that has not been triggered yet accepts every token.
pub(crate) struct ReplySampler {
    chain: LlamaSampler,
    pub(crate) grammar: Option<LlamaSampler>,
    /// The token chosen when the grammar leaves no candidate at all.
    fallback: LlamaToken,
    /// Tokens the grammar rejected and had sampled again.
    pub(crate) corrected: u64,
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
    pub(crate) fn new(
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
    pub(crate) fn accept(&mut self, token: LlamaToken) {
        if let Some(grammar) = self.grammar.as_mut() {
            grammar.accept(token);
        }
        self.chain.accept(token);
    }

    /// Note a generated token's text; returns the text to write for the model when its
    /// reasoning budget is spent (see [`ReasoningBudget`]).
    pub(crate) fn forced_text(&mut self, piece: &[u8]) -> Option<String> {
        self.budget
            .as_mut()
            .and_then(|b| b.push(&String::from_utf8_lossy(piece)))
    }

    /// The next token from output `index` of the last decode, accepted into the chain
    /// and the grammar.
    pub(crate) fn sample(&mut self, ctx: &LlamaContext<'_>, index: i32) -> LlamaToken {
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
