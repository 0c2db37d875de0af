//! `aintern bench llm`: the inference layer's speed, comparable with raw llama.cpp.
//!
//! Two measurements through [`llm_llama::LlamaLlm`]:
//! * **throughput** — pp (a prompt of P synthetic tokens decoded as one batch after a
//!   cleared cache) and tg (G tokens generated one by one, greedy), exactly as the raw
//!   llama.cpp probe and llama-bench measure them, so the two can be compared;
//! * **a conversation** growing over N turns through the `LlmService` port, as the agent
//!   loop drives it: per turn the prompt's tokens, the tokens actually evaluated (the rest
//!   came from the KV cache) and the time to the first token;
//! * with `--grammar`, **constrained generation** — the same request generated back to
//!   back without a grammar and under a required-call grammar (`tool_choice: required`
//!   with two tools), greedy, R times each; the tg of both and their ratio; and the same
//!   against an answer held to a JSON Schema (`--output-schema`'s grammar).

use core_models::{
    ChatMessage, InferenceOptions, LlmChunk, LlmRequest, LlmService, LlmUsage, ToolChoice,
    ToolDefinition,
};
use futures::StreamExt;
use serde::Serialize;
use std::path::PathBuf;

/// `aintern bench llm` options.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchLlmArgs {
    /// `--backend openai:URL` measures the OpenAI-compatible client against a minimal
    /// direct client on the same server (time to first token, generation rate) instead of
    /// the in-process backend against raw llama.cpp; `--model FILE` measures that GGUF.
    #[command(flatten)]
    backend: crate::flags::BackendArgs,
    /// Prompt tokens for the pp measurement.
    #[arg(long = "prompt", value_name = "P", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    prompt_tokens: u32,
    /// Generated tokens for the tg measurement.
    #[arg(long = "gen", value_name = "G", default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    gen_tokens: u32,
    /// Repetitions of pp and tg (the mean is reported, as the raw probe does).
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Turns of the growing conversation (0: skip it).
    #[arg(long, value_name = "N", default_value_t = 10)]
    turns: u32,
    /// Also measure generation under a required-call grammar against unconstrained
    /// generation of the same request, back to back.
    #[arg(long)]
    grammar: bool,
    /// Also measure prompt-lookup drafting against plain decoding, back to back, on
    /// replies that copy from the conversation and on free text.
    #[arg(long)]
    speculative: bool,
    /// Also measure the time to the first token of a conversation's next turn in the same
    /// process, in a new one restoring the session's saved state, and in a new one
    /// without it.
    #[arg(long)]
    resume: bool,
    /// With `--grammar`, a chat template that renders tools measures the grammar of its
    /// own call format.
    #[command(flatten)]
    load: crate::flags::LoadArgs,
    /// Print one JSON object instead of a report.
    #[arg(long)]
    json: bool,
}

/// One conversation turn's figures.
#[derive(Debug, Serialize)]
struct Turn {
    prompt_tokens: u64,
    evaluated_tokens: u64,
    generated_tokens: u64,
    ttft_ms: f64,
}

/// Everything measured.
#[derive(Debug, Serialize)]
struct Report {
    model: String,
    threads: u32,
    prompt: u32,
    gen: u32,
    reps: u32,
    pp_tok_s: f64,
    tg_tok_s: f64,
    pp_tok_s_best: f64,
    tg_tok_s_best: f64,
    turns: Vec<Turn>,
    #[serde(skip_serializing_if = "Option::is_none")]
    grammar: Option<GrammarRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    speculative: Option<crate::bench_speculative::SpeculativeRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resume: Option<crate::bench_resume::ResumeRun>,
}

/// Generation with and without a required-call grammar (`--grammar`).
#[derive(Debug, Serialize)]
struct GrammarRun {
    /// Tokens generated without the grammar, over every repetition.
    free_tokens: u64,
    /// Tokens generated under the grammar, over every repetition.
    grammar_tokens: u64,
    /// Unconstrained generation: tokens per second.
    free_tg_tok_s: f64,
    /// Constrained generation: tokens per second.
    grammar_tg_tok_s: f64,
    /// `grammar_tg_tok_s / free_tg_tok_s`.
    ratio: f64,
    /// The call format the grammar constrains to (the template's own when it renders
    /// tools, else AIntern's fence).
    call_format: String,
    /// The last constrained reply (a tool call).
    grammar_reply: String,
    /// Tokens generated as an answer held to a JSON Schema, over every repetition.
    schema_tokens: u64,
    /// An answer held to a JSON Schema: tokens per second.
    schema_tg_tok_s: f64,
    /// `schema_tg_tok_s / free_tg_tok_s`.
    schema_ratio: f64,
    /// The last answer held to the schema.
    schema_reply: String,
}

/// The schema of the held answer `--grammar` measures: the kinds of keyword an output
/// schema uses (required fields, an enum, bounds, a bounded array of objects).
fn answer_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "file": {"type": "string", "maxLength": 64},
            "kind": {"enum": ["text", "code", "data"]},
            "lines": {"type": "integer", "minimum": 0},
            "items": {
                "type": "array",
                "maxItems": 8,
                "items": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}},
                    "required": ["title", "done"]
                }
            }
        },
        "required": ["file", "kind", "lines", "items"],
        "additionalProperties": false
    })
}

/// The context window: room for the throughput run and the conversation, or the one
/// `--context-size` gives when it has that room.
fn context_size(args: &BenchLlmArgs) -> Result<u32, String> {
    let needed = args
        .prompt_tokens
        .saturating_add(args.gen_tokens)
        .saturating_add(16);
    match args.load.context_size {
        Some(n) if n < needed => Err(format!(
            "--context-size {n} leaves no room for --prompt {} and --gen {} (at least {needed})",
            args.prompt_tokens, args.gen_tokens
        )),
        Some(n) => Ok(n),
        None => Ok(needed.max(4096)),
    }
}

/// Run the benchmark and print its report.
pub(crate) async fn run(args: BenchLlmArgs) -> Result<(), String> {
    if args.backend.backend.is_some() {
        let load = &args.load;
        if load.chat_template.is_some() || load.context_size.is_some() || load.threads.is_some() {
            return Err("--chat-template, --context-size and --threads apply to llama models only (a server sets its own)".into());
        }
        return match crate::backend::choose(&args.backend, &services_ai::BackendConfig::default())?
        {
            crate::backend::Choice::OpenAi(config) => {
                crate::bench_openai::run(
                    *config,
                    args.backend.api_key_env.as_deref(),
                    args.gen_tokens,
                    args.reps,
                    args.json,
                )
                .await
            }
            _ => Err(
                "bench llm --backend takes openai:URL (the in-process backend is the default)"
                    .into(),
            ),
        };
    }
    let path = args
        .backend
        .model
        .clone()
        .map_or_else(llm_llama::default_model_path, PathBuf::from);
    if !path.is_file() && args.backend.model.is_none() {
        return Err(format!(
            "the default model is not downloaded yet ({}): run scripts/fetch-model or pass --model FILE",
            path.display()
        ));
    }
    let chat_template = match &args.load.chat_template {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the chat template {}: {e}", file.display()))?,
        ),
        None => None,
    };
    let config = llm_llama::LlamaConfig {
        threads: args.load.threads.unwrap_or(0),
        chat_template,
        context_size: context_size(&args)?,
        batch_size: args.prompt_tokens.max(512),
        ..llm_llama::LlamaConfig::new(path)
    };
    let plain_config = llm_llama::LlamaConfig {
        speculative: false,
        ..config.clone()
    };
    let reference_config = llm_llama::LlamaConfig {
        speculative: false,
        kv_cache_q8: true,
        ..config.clone()
    };
    let drafting_config = llm_llama::LlamaConfig {
        speculative: true,
        ..config.clone()
    };
    let load = |config: llm_llama::LlamaConfig| async move {
        tokio::task::spawn_blocking(move || llm_llama::LlamaLlm::load(config))
            .await
            .map_err(|e| format!("loading the model stopped: {e}"))?
            .map_err(|e| e.to_string())
    };
    let resume_config = config.clone();
    let llm = load(config).await?;

    let (mut pp, mut tg) = (Vec::new(), Vec::new());
    for _ in 0..args.reps {
        let probe = llm.clone();
        let (p, g) = (args.prompt_tokens, args.gen_tokens);
        let t = tokio::task::spawn_blocking(move || probe.throughput(p, g))
            .await
            .map_err(|e| format!("the measurement stopped: {e}"))?
            .map_err(|e| e.to_string())?;
        pp.push(t.prompt_tokens_per_second);
        tg.push(t.generated_tokens_per_second);
    }
    let grammar = if args.grammar {
        Some(constrained(&llm, args.gen_tokens, args.reps).await?)
    } else {
        None
    };
    let speculative = if args.speculative {
        let plain = load(plain_config).await?;
        let reference = load(reference_config).await?;
        let drafting = load(drafting_config).await?;
        let models = crate::bench_speculative::Models {
            plain: &plain,
            reference: &reference,
            drafting: &drafting,
        };
        Some(crate::bench_speculative::measure(models, args.gen_tokens.max(192), args.reps).await?)
    } else {
        None
    };
    let resume = if args.resume {
        let load_keeping = |state_dir: Option<PathBuf>| {
            load(llm_llama::LlamaConfig {
                state_dir,
                ..resume_config.clone()
            })
        };
        let system = agent_system(&llm);
        Some(crate::bench_resume::measure(load_keeping, &system, args.reps).await?)
    } else {
        None
    };
    let turns = conversation(&llm, args.turns).await?;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let report = Report {
        model: llm.info().name.clone(),
        threads: llm.info().threads,
        prompt: args.prompt_tokens,
        gen: args.gen_tokens,
        reps: args.reps,
        pp_tok_s: mean(&pp),
        tg_tok_s: mean(&tg),
        pp_tok_s_best: best(&pp),
        tg_tok_s_best: best(&tg),
        turns,
        grammar,
        speculative,
        resume,
    };
    print_report(&report, args.json)
}

/// The agent's system prompt for a small model offered the bench's two tools, as the
/// agent writes it (the template renders the tools itself when it can).
fn agent_system(llm: &llm_llama::LlamaLlm) -> String {
    let config = services_ai::AgentConfig {
        tool_prompt_style: services_ai::ToolPromptStyle::Compact,
        ..services_ai::AgentConfig::default()
    };
    let tools = bench_tools();
    let listed = llm
        .info()
        .chat_format
        .as_ref()
        .is_some_and(|f| f.renders_tools);
    services_ai::prompt::system_prompt(&config, None, &tools, listed).unwrap_or_default()
}

/// The two tools the grammar and resume measurements offer.
fn bench_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new("read_file", "Read File", "Read a text file in the workspace")
            .with_schema(serde_json::json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "File path relative to the workspace"}},
                "required": ["path"]
            })),
        ToolDefinition::new("run_command", "Run Command", "Run a shell command").with_schema(
            serde_json::json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            }),
        ),
    ]
}

/// The same request generated `reps` times without a grammar and under a required-call
/// grammar, alternately (the machines are noisy: only back-to-back figures compare).
async fn constrained(
    llm: &llm_llama::LlamaLlm,
    gen_tokens: u32,
    reps: u32,
) -> Result<GrammarRun, String> {
    let tools = bench_tools();
    let config = services_ai::AgentConfig {
        tool_prompt_style: services_ai::ToolPromptStyle::Compact,
        ..services_ai::AgentConfig::default()
    };
    // As the agent does: a template that renders the tools gets them natively, and the
    // system prompt teaches no second call language.
    let native = llm.info().chat_format.clone().filter(|f| f.renders_tools);
    let system = services_ai::prompt::system_prompt(&config, None, &tools, native.is_some());
    let call_format = native.map_or_else(|| "fenced".to_string(), |f| f.call_format);
    let request = |choice: ToolChoice| {
        (LlmRequest::new(
            system
                .iter()
                .map(|s| ChatMessage::system(s.clone()))
                .chain([ChatMessage::user(
                    "Show me what the file notes/todo.txt says.",
                )])
                .collect(),
        ))
        .with_tools(tools.clone())
        .with_tool_choice(choice)
        .with_options(
            InferenceOptions::default()
                .with_temperature(0.0)
                .with_max_tokens(gen_tokens),
        )
    };
    let (mut free, mut bound, mut held) = ((0u64, 0f64), (0u64, 0f64), (0u64, 0f64));
    let (mut grammar_reply, mut schema_reply) = (String::new(), String::new());
    for _ in 0..reps {
        let (_, usage) = reply(llm, request(ToolChoice::None)).await?;
        free.0 += usage.generated_tokens;
        free.1 += usage.generation_time.as_secs_f64();
        let (text, usage) = reply(llm, request(ToolChoice::Required)).await?;
        bound.0 += usage.generated_tokens;
        bound.1 += usage.generation_time.as_secs_f64();
        grammar_reply = text;
        let mut answer = request(ToolChoice::None);
        answer.constraint = Some(core_models::ReplyConstraint::JsonSchema(answer_schema()));
        let (text, usage) = reply(llm, answer).await?;
        held.0 += usage.generated_tokens;
        held.1 += usage.generation_time.as_secs_f64();
        schema_reply = text;
    }
    let rate = |(tokens, secs): (u64, f64)| tokens as f64 / secs.max(f64::MIN_POSITIVE);
    Ok(GrammarRun {
        free_tokens: free.0,
        grammar_tokens: bound.0,
        free_tg_tok_s: rate(free),
        grammar_tg_tok_s: rate(bound),
        ratio: rate(bound) / rate(free).max(f64::MIN_POSITIVE),
        call_format,
        grammar_reply,
        schema_tokens: held.0,
        schema_tg_tok_s: rate(held),
        schema_ratio: rate(held) / rate(free).max(f64::MIN_POSITIVE),
        schema_reply,
    })
}

/// One whole reply and its usage.
pub(crate) async fn reply(
    llm: &llm_llama::LlamaLlm,
    request: LlmRequest,
) -> Result<(String, LlmUsage), String> {
    let mut stream = llm.generate(request).await.map_err(|e| e.to_string())?;
    let mut reply = String::new();
    let mut usage: Option<LlmUsage> = None;
    while let Some(chunk) = stream.next().await {
        match chunk.map_err(|e| e.to_string())? {
            LlmChunk::Text { text } => reply.push_str(&text),
            LlmChunk::Usage(u) => usage = Some(u),
            LlmChunk::Reasoning { .. } | LlmChunk::ToolCall(_) | LlmChunk::Progress(_) => {}
        }
    }
    Ok((reply, usage.ok_or("the model reported no usage")?))
}

/// A conversation growing by one user message and one reply per turn, as an agent loop
/// re-sends it: every request carries the whole history.
async fn conversation(llm: &llm_llama::LlamaLlm, turns: u32) -> Result<Vec<Turn>, String> {
    const TOPICS: [&str; 10] = [
        "rivers",
        "bridges",
        "bees",
        "clocks",
        "volcanoes",
        "libraries",
        "trains",
        "owls",
        "glaciers",
        "lighthouses",
    ];
    let mut messages = vec![ChatMessage::system(
        "You are a helpful assistant. Answer in one or two short sentences.",
    )];
    let mut out = Vec::new();
    for turn in 0..turns {
        let topic = TOPICS[turn as usize % TOPICS.len()];
        messages.push(ChatMessage::user(format!(
            "Tell me one interesting fact about {topic}."
        )));
        let request = LlmRequest::new(messages.clone()).with_options(
            InferenceOptions::default()
                .with_temperature(0.0)
                .with_max_tokens(48),
        );
        let (reply, usage) = reply(llm, request).await?;
        out.push(Turn {
            prompt_tokens: usage.prompt_tokens,
            evaluated_tokens: usage.prompt_tokens_evaluated,
            generated_tokens: usage.generated_tokens,
            ttft_ms: usage.time_to_first_token.as_secs_f64() * 1000.0,
        });
        messages.push(ChatMessage::assistant(reply));
    }
    Ok(out)
}

fn print_report(report: &Report, json: bool) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let text = if json {
        serde_json::to_string(report).map_err(|e| e.to_string())?
    } else {
        let mut text = format!(
            "model {} · {} threads · {} reps\n\
             pp{:<5} {:>9.1} tok/s mean  {:>9.1} best\n\
             tg{:<5} {:>9.1} tok/s mean  {:>9.1} best",
            report.model,
            report.threads,
            report.reps,
            report.prompt,
            report.pp_tok_s,
            report.pp_tok_s_best,
            report.gen,
            report.tg_tok_s,
            report.tg_tok_s_best
        );
        if let Some(g) = &report.grammar {
            text.push_str(&format!(
                "\n\ngrammar (required call in {}, greedy, {} reps, back to back)\n\
                 tg free     {:>9.1} tok/s  ({} tokens)\n\
                 tg grammar  {:>9.1} tok/s  ({} tokens)\n\
                 ratio       {:>9.3}\n\
                 tg schema   {:>9.1} tok/s  ({} tokens, an answer held to a JSON Schema)\n\
                 ratio       {:>9.3}",
                g.call_format,
                report.reps,
                g.free_tg_tok_s,
                g.free_tokens,
                g.grammar_tg_tok_s,
                g.grammar_tokens,
                g.ratio,
                g.schema_tg_tok_s,
                g.schema_tokens,
                g.schema_ratio
            ));
        }
        if let Some(s) = &report.speculative {
            text.push_str(&s.text(report.reps));
        }
        if let Some(r) = &report.resume {
            text.push_str(&r.text(report.reps));
        }
        if !report.turns.is_empty() {
            text.push_str("\n\nturn  prompt  evaluated  generated  ttft (ms)");
            for (i, t) in report.turns.iter().enumerate() {
                text.push_str(&format!(
                    "\n{:>4}  {:>6}  {:>9}  {:>9}  {:>9.1}",
                    i + 1,
                    t.prompt_tokens,
                    t.evaluated_tokens,
                    t.generated_tokens,
                    t.ttft_ms
                ));
            }
            let evaluated: u64 = report.turns.iter().map(|t| t.evaluated_tokens).sum();
            if let (Some(first), Some(last)) = (report.turns.first(), report.turns.last()) {
                text.push_str(&format!(
                    "\nevaluated in all {evaluated} = {:.2} × the final prompt; last turn's ttft {:.2} × the first's",
                    evaluated as f64 / last.prompt_tokens.max(1) as f64,
                    last.ttft_ms / first.ttft_ms.max(f64::MIN_POSITIVE)
                ));
            }
        }
        text
    };
    writeln!(out, "{text}").map_err(|e| e.to_string())
}
