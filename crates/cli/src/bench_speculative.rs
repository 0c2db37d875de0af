//! `aintern bench llm --speculative`: generation with prompt-lookup drafting (the default)
//! against plain decoding, back to back on one machine, on replies that copy from the
//! conversation (a file rewritten after it was read, an edit shown whole) and on free
//! text. Three loads of the model take each task in turn, `reps` times, greedy, each from
//! an empty cache: plain decoding as configured by default (16-bit KV cache), plain
//! decoding with drafting's 8-bit cache (the reference, whose replies drafting must
//! repeat exactly), and drafting.

use core_models::{ChatMessage, InferenceOptions, LlmRequest};
use serde::Serialize;

/// A file the copy-heavy tasks have just read.
const FILE: &str = r#"use std::collections::HashMap;

/// Counts how often each word occurs in `text`.
pub fn word_counts(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if word.is_empty() {
            continue;
        }
        *counts.entry(word).or_insert(0) += 1;
    }
    counts
}

/// The `n` most frequent words, most frequent first.
pub fn top_words(text: &str, n: usize) -> Vec<(String, usize)> {
    let mut words: Vec<(String, usize)> = word_counts(text).into_iter().collect();
    words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    words.truncate(n);
    words
}
"#;

/// One task: its kind and what the user asks after the file was read (copy) or alone.
const TASKS: [(&str, &str); 6] = [
    ("copy", "Show the whole file again exactly as it is."),
    (
        "copy",
        "Rename the function `top_words` to `most_common` and show the whole file.",
    ),
    (
        "copy",
        "Add a doc comment line to `word_counts` saying it ignores case, and show the whole file.",
    ),
    ("free", "Write a short poem about autumn leaves."),
    ("free", "Explain in a paragraph why the sky is blue."),
    ("free", "Tell a short story about a lighthouse keeper."),
];

/// Figures for one kind of task.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Kind {
    /// Tokens the drafting model generated, over every task and repetition.
    tokens: u64,
    /// Plain decoding (default settings): tokens per second.
    plain_tok_s: f64,
    /// Plain decoding with drafting's 8-bit cache: tokens per second.
    reference_tok_s: f64,
    /// With drafting: tokens per second.
    drafted_tok_s: f64,
    /// `drafted_tok_s / plain_tok_s`.
    ratio: f64,
    /// `drafted_tok_s / reference_tok_s`: drafting alone, the cache the same.
    ratio_same_cache: f64,
}

/// The three loads of the model (see the module's documentation).
pub(crate) struct Models<'a> {
    pub(crate) plain: &'a llm_llama::LlamaLlm,
    pub(crate) reference: &'a llm_llama::LlamaLlm,
    pub(crate) drafting: &'a llm_llama::LlamaLlm,
}

/// What `--speculative` measured.
#[derive(Debug, Serialize)]
pub(crate) struct SpeculativeRun {
    /// Replies that copy from the conversation.
    copy: Kind,
    /// Free text.
    free: Kind,
    /// Replies of drafting that differed from the reference's (must be 0).
    different_replies: usize,
}

impl SpeculativeRun {
    /// The report's lines.
    pub(crate) fn text(&self, reps: u32) -> String {
        let line = |name: &str, k: &Kind| {
            format!(
                "\n{name:<5} plain {:>6.1}  8-bit cache {:>6.1}  drafted {:>6.1} tok/s  ratio {:>5.3} (same cache {:>5.3})  {} tokens",
                k.plain_tok_s, k.reference_tok_s, k.drafted_tok_s, k.ratio, k.ratio_same_cache, k.tokens
            )
        };
        format!(
            "\n\nprompt-lookup drafting (greedy, {reps} reps, back to back){}{}\nreplies that differ from plain decoding's with the same cache: {}",
            line("copy", &self.copy),
            line("free", &self.free),
            self.different_replies
        )
    }
}

/// The request of task `ask` (`kind` "copy": after the file was read).
fn request(kind: &str, ask: &str, gen_tokens: u32) -> LlmRequest {
    let mut messages = vec![ChatMessage::system("You are a helpful coding assistant.")];
    if kind == "copy" {
        messages.push(ChatMessage::user(format!(
            "Here is src/words.rs:\n```rust\n{FILE}```"
        )));
        messages.push(ChatMessage::assistant(
            "I have read src/words.rs. What should I do with it?",
        ));
    }
    messages.push(ChatMessage::user(ask));
    LlmRequest::new(messages).with_options(
        InferenceOptions::default()
            .with_temperature(0.0)
            .with_max_tokens(gen_tokens),
    )
}

/// Run every task `reps` times on each model in turn.
pub(crate) async fn measure(
    models: Models<'_>,
    gen_tokens: u32,
    reps: u32,
) -> Result<SpeculativeRun, String> {
    // [kind][plain, reference, drafted] = (tokens, seconds)
    let mut sums = [[(0u64, 0f64); 3]; 2];
    let mut different = 0;
    for _ in 0..reps {
        for (kind, ask) in TASKS {
            let k = usize::from(kind == "free");
            let mut replies = Vec::new();
            for (m, llm) in [models.plain, models.reference, models.drafting]
                .into_iter()
                .enumerate()
            {
                // Each from an empty cache: where a prompt's cells lie changes the last
                // bits of attention, and so close greedy choices.
                llm.clear_cache().map_err(|e| e.to_string())?;
                let (text, usage) =
                    crate::bench::reply(llm, request(kind, ask, gen_tokens)).await?;
                sums[k][m].0 += usage.generated_tokens;
                sums[k][m].1 += usage.generation_time.as_secs_f64();
                replies.push(text);
            }
            if replies[1] != replies[2] {
                different += 1;
                tracing::warn!(task = ask, reference = %replies[1], drafted = %replies[2], "drafting changed a reply");
            }
        }
    }
    let rate = |(tokens, secs): (u64, f64)| tokens as f64 / secs.max(f64::MIN_POSITIVE);
    let kind = |s: [(u64, f64); 3]| Kind {
        tokens: s[2].0,
        plain_tok_s: rate(s[0]),
        reference_tok_s: rate(s[1]),
        drafted_tok_s: rate(s[2]),
        ratio: rate(s[2]) / rate(s[0]).max(f64::MIN_POSITIVE),
        ratio_same_cache: rate(s[2]) / rate(s[1]).max(f64::MIN_POSITIVE),
    };
    Ok(SpeculativeRun {
        copy: kind(sums[0]),
        free: kind(sums[1]),
        different_replies: different,
    })
}
