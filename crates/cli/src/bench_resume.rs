//! `aintern bench llm --resume`: the time to the first token of a conversation's next
//! turn, three ways, back to back: in the process that held the conversation (a warm
//! process), in a new process that restores the session's saved state (warm resume), and
//! in a new process without it (cold). Each "process" is a fresh load of the model, with
//! its own context, as a new `aintern exec --last` has.

use core_models::{ChatMessage, InferenceOptions, LlmRequest, LlmService, SessionKey};
use serde::Serialize;
use std::time::Duration;

/// The user's turns: the last one is measured.
const TURNS: [&str; 4] = [
    "I am planning a small vegetable garden behind my house. What should I plant first?",
    "The soil is heavy clay. Does that change your advice?",
    "How often should I water the seedlings in summer?",
    "Summarize the plan in three short points.",
];

/// One way of taking the last turn.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Way {
    /// Time to the first token, in milliseconds, the median over the repetitions.
    ttft_ms: f64,
    /// Prompt tokens, and those evaluated (the rest came from the cache).
    prompt_tokens: u64,
    evaluated_tokens: u64,
}

/// What `--resume` measured.
#[derive(Debug, Serialize)]
pub(crate) struct ResumeRun {
    warm_process: Way,
    warm_resume: Way,
    cold: Way,
    /// Bytes of the saved state, and per 1000 tokens it holds.
    state_bytes: u64,
    state_bytes_per_1k_tokens: f64,
}

impl ResumeRun {
    /// The report's lines.
    pub(crate) fn text(&self, reps: u32) -> String {
        let line = |name: &str, w: &Way| {
            format!(
                "\n{name:<13} ttft {:>8.1} ms  evaluated {:>5} of {:>5} prompt tokens",
                w.ttft_ms, w.evaluated_tokens, w.prompt_tokens
            )
        };
        format!(
            "\n\nresuming a conversation's 4th turn (median of {reps}, back to back){}{}{}\nsaved state {:.1} MB, {:.1} MB per 1k tokens",
            line("warm process", &self.warm_process),
            line("warm resume", &self.warm_resume),
            line("cold", &self.cold),
            self.state_bytes as f64 / 1e6,
            self.state_bytes_per_1k_tokens / 1e6,
        )
    }
}

fn request(messages: &[ChatMessage], key: &SessionKey) -> LlmRequest {
    LlmRequest::new(messages.to_vec())
        .with_options(
            InferenceOptions::default()
                .with_temperature(0.0)
                .with_max_tokens(48),
        )
        .with_session(Some(key.clone()))
}

/// Measure `reps` times; `load` loads the model, keeping states in the folder given.
pub(crate) async fn measure<F, Fut>(load: F, system: &str, reps: u32) -> Result<ResumeRun, String>
where
    F: Fn(Option<std::path::PathBuf>) -> Fut,
    Fut: std::future::Future<Output = Result<llm_llama::LlamaLlm, String>>,
{
    let mut times: [Vec<Duration>; 3] = Default::default();
    let mut ways: [Way; 3] = Default::default();
    let (mut state_bytes, mut state_tokens) = (0u64, 0u64);
    for rep in 0..reps.max(1) {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let key = SessionKey::new(format!("bench-resume-{rep}")).ok_or("a session key")?;
        let held = load(Some(dir.path().to_path_buf())).await?;
        let mut messages = vec![ChatMessage::system(system)];
        for turn in &TURNS[..TURNS.len() - 1] {
            messages.push(ChatMessage::user(*turn));
            let (reply, _) = crate::bench::reply(&held, request(&messages, &key)).await?;
            messages.push(ChatMessage::assistant(reply));
        }
        held.keep_session(&key).await.map_err(|e| e.to_string())?;
        (state_bytes, state_tokens) = state_size(dir.path())?;
        messages.push(ChatMessage::user(TURNS[TURNS.len() - 1]));
        let last = request(&messages, &key);
        let resumed = load(Some(dir.path().to_path_buf())).await?;
        let cold = load(None).await?;
        for (i, llm) in [&held, &resumed, &cold].into_iter().enumerate() {
            let (_, usage) = crate::bench::reply(llm, last.clone()).await?;
            times[i].push(usage.time_to_first_token);
            ways[i].prompt_tokens = usage.prompt_tokens;
            ways[i].evaluated_tokens = usage.prompt_tokens_evaluated;
        }
    }
    for (way, mut t) in ways.iter_mut().zip(times) {
        t.sort();
        way.ttft_ms = t[t.len() / 2].as_secs_f64() * 1000.0;
    }
    let [warm_process, warm_resume, cold] = ways;
    Ok(ResumeRun {
        warm_process,
        warm_resume,
        cold,
        state_bytes,
        state_bytes_per_1k_tokens: state_bytes as f64 * 1000.0 / state_tokens.max(1) as f64,
    })
}

/// The bytes of the saved state in `dir`, and the tokens its manifest says it holds.
fn state_size(dir: &std::path::Path) -> Result<(u64, u64), String> {
    let (mut bytes, mut tokens) = (0, 0);
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        bytes += entry.metadata().map_err(|e| e.to_string())?.len();
        if entry.file_name().to_string_lossy().ends_with(".kv.json") {
            let text = std::fs::read_to_string(entry.path()).map_err(|e| e.to_string())?;
            let manifest: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| e.to_string())?;
            tokens += manifest["entries"].as_array().map_or(0, |entries| {
                entries
                    .iter()
                    .map(|e| e["tokens"].as_array().map_or(0, Vec::len) as u64)
                    .sum()
            });
        }
    }
    Ok((bytes, tokens))
}
