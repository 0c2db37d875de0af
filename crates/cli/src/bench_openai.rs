//! `aintern bench llm --backend openai:URL`: the OpenAI-compatible client's own cost.
//!
//! The same greedy request goes to the same server through AIntern's client
//! ([`llm_openai::OpenAiLlm`], the `LlmService` the agent uses) and through a minimal
//! direct client (one HTTP request, the event stream split by hand, each event's JSON read
//! for its content), alternately, R times each, after one warm-up each. For both: the time
//! to the first token and the generation rate (tokens after the first over the time
//! between the first and the last), and their ratios. The server's prompt cache makes
//! every measured request evaluate the same few prompt tokens.

use core_models::{ChatMessage, InferenceOptions, LlmChunk, LlmRequest, LlmService};
use futures::StreamExt;
use llm_openai::{OpenAiConfig, OpenAiLlm};
use serde::Serialize;
use std::time::{Duration, Instant};

/// What is asked: a long, predictable answer.
const PROMPT: &str = "Count from 1 to 300, separated by commas.";

/// One measured reply.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    ttft: Duration,
    tokens: u64,
    /// From the first token to the last.
    span: Duration,
}

impl Sample {
    fn rate(&self) -> f64 {
        self.tokens.saturating_sub(1) as f64 / self.span.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// One client's figures.
#[derive(Debug, Serialize)]
struct Side {
    ttft_ms: f64,
    tg_tok_s: f64,
    tokens: u64,
}

/// Everything measured.
#[derive(Debug, Serialize)]
struct Report {
    backend: &'static str,
    url: String,
    model: String,
    gen: u32,
    reps: u32,
    aintern: Side,
    direct: Side,
    /// AIntern's generation rate over the direct client's (≥ 1: no slower).
    tg_ratio: f64,
    /// The direct client's time to first token over AIntern's (≥ 1: no slower).
    ttft_ratio: f64,
}

/// Measure and print.
pub(crate) async fn run(
    config: OpenAiConfig,
    key_variable: Option<&str>,
    gen: u32,
    reps: u32,
    json: bool,
) -> Result<(), String> {
    let url = config.base_url.trim_end_matches('/').to_string();
    // The direct client sends what AIntern's sends: the key and the headers.
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &config.headers {
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            reqwest::header::HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    }
    if let Some(key) = key_variable.and_then(|name| std::env::var(name).ok()) {
        if let Ok(value) = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", key.trim()))
        {
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
    }
    let llm = OpenAiLlm::connect(config)
        .await
        .map_err(|e| e.to_string())?;
    llm_openai::ensure_tls_provider();
    let direct = reqwest::Client::builder()
        .default_headers(headers)
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .map_err(|e| e.to_string())?;
    let chat = format!("{}/chat/completions", chat_base(&url));
    let body = serde_json::json!({
        "model": llm.model(),
        "messages": [{"role": "user", "content": PROMPT}],
        "temperature": 0.0,
        "max_tokens": gen,
        "stream": true,
    });
    // Warm-up: the model in memory, the prompt in the server's cache.
    ours(&llm, gen).await?;
    theirs(&direct, &chat, &body).await?;
    let (mut a, mut d) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        // Alternate which goes first, so that neither always follows the other.
        if rep % 2 == 0 {
            a.push(ours(&llm, gen).await?);
            d.push(theirs(&direct, &chat, &body).await?);
        } else {
            d.push(theirs(&direct, &chat, &body).await?);
            a.push(ours(&llm, gen).await?);
        }
    }
    let side = |s: &[Sample]| Side {
        ttft_ms: mean(s.iter().map(|x| x.ttft.as_secs_f64() * 1000.0)),
        tg_tok_s: mean(s.iter().map(Sample::rate)),
        tokens: s.iter().map(|x| x.tokens).sum::<u64>() / s.len().max(1) as u64,
    };
    let (aintern, direct) = (side(&a), side(&d));
    let report = Report {
        backend: "openai",
        url,
        model: llm.model().to_string(),
        gen,
        reps,
        tg_ratio: aintern.tg_tok_s / direct.tg_tok_s.max(f64::MIN_POSITIVE),
        ttft_ratio: direct.ttft_ms / aintern.ttft_ms.max(f64::MIN_POSITIVE),
        aintern,
        direct,
    };
    print(&report, json)
}

/// The base URL as the direct client uses it (`/v1` added to a bare host, as AIntern
/// does).
fn chat_base(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, r)| r);
    if after_scheme.contains('/') {
        url.to_string()
    } else {
        format!("{url}/v1")
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    sum / f64::from(n.max(1))
}

/// One reply through AIntern's client.
async fn ours(llm: &OpenAiLlm, gen: u32) -> Result<Sample, String> {
    let request = (LlmRequest::new(vec![ChatMessage::user(PROMPT)])).with_options(
        InferenceOptions::default()
            .with_temperature(0.0)
            .with_max_tokens(gen),
    );
    let started = Instant::now();
    let mut stream = llm.generate(request).await.map_err(|e| e.to_string())?;
    let (mut first, mut last, mut tokens) = (None, started, 0u64);
    while let Some(chunk) = stream.next().await {
        if let LlmChunk::Text { .. } = chunk.map_err(|e| e.to_string())? {
            let now = Instant::now();
            first.get_or_insert(now);
            last = now;
            tokens += 1;
        }
    }
    sample(started, first, last, tokens)
}

/// One reply through the minimal direct client.
async fn theirs(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> Result<Sample, String> {
    let started = Instant::now();
    // A connection error is tried once more, as AIntern's client would.
    let response = match client.post(url).json(body).send().await {
        Err(e) if e.is_connect() || e.is_request() => client.post(url).json(body).send().await,
        other => other,
    }
    .map_err(|e| {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text = format!("{text}: {s}");
            source = s.source();
        }
        text
    })?;
    if !response.status().is_success() {
        return Err(format!("the server answered {}", response.status()));
    }
    let mut bytes = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    let (mut first, mut last, mut tokens) = (None, started, 0u64);
    while let Some(piece) = bytes.next().await {
        buffer.extend_from_slice(&piece.map_err(|e| e.to_string())?);
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buffer.drain(..end + 2).collect();
            let Some(data) = event.strip_prefix(b"data: ") else {
                continue;
            };
            let Ok(chunk) = serde_json::from_slice::<serde_json::Value>(data) else {
                continue;
            };
            let content = chunk
                .pointer("/choices/0/delta/content")
                .and_then(serde_json::Value::as_str);
            if content.is_some_and(|c| !c.is_empty()) {
                let now = Instant::now();
                first.get_or_insert(now);
                last = now;
                tokens += 1;
            }
        }
    }
    sample(started, first, last, tokens)
}

fn sample(
    started: Instant,
    first: Option<Instant>,
    last: Instant,
    tokens: u64,
) -> Result<Sample, String> {
    let first = first.ok_or("the server generated no text")?;
    Ok(Sample {
        ttft: first - started,
        tokens,
        span: last - first,
    })
}

fn print(report: &Report, json: bool) -> Result<(), String> {
    use std::io::Write;
    let text = if json {
        serde_json::to_string(report).map_err(|e| e.to_string())?
    } else {
        format!(
            "server {} · model {} · {} tokens · {} reps, alternating\n\
             client     ttft (ms)   tg (tok/s)\n\
             aintern    {:>9.1}   {:>10.1}\n\
             direct     {:>9.1}   {:>10.1}\n\
             ratio      {:>9.3}   {:>10.3}   (≥ 1: AIntern no slower)",
            report.url,
            report.model,
            report.aintern.tokens,
            report.reps,
            report.aintern.ttft_ms,
            report.aintern.tg_tok_s,
            report.direct.ttft_ms,
            report.direct.tg_tok_s,
            report.ttft_ratio,
            report.tg_ratio
        )
    };
    writeln!(std::io::stdout().lock(), "{text}").map_err(|e| e.to_string())
}
