//! llm-llama with the real small model (SmolLM2-135M-Instruct, Q4_1), and one test of the
//! default model's template (Qwen2.5-Coder-1.5B-Instruct).
//!
//! The models come from `scripts/fetch-model` (which `scripts/test` runs): the small one's
//! path is `$AINTERN_TEST_MODEL`, else where the fetch script puts `smollm2-135m`. When a
//! file is absent its tests print a notice and return.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    clippy::print_stderr
)]

use core_models::{ChatMessage, InferenceOptions, LlmChunk, LlmRequest, LlmService, LlmUsage};
use futures::StreamExt;
use llm_llama::{Error, LlamaConfig, LlamaLlm};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[path = "model_parts/prefix.rs"]
mod prefix;
#[path = "model_parts/stash.rs"]
mod stash;
#[path = "model_parts/warm.rs"]
mod warm;

fn model_path() -> Option<PathBuf> {
    let path = std::env::var_os("AINTERN_TEST_MODEL")
        .map(PathBuf::from)
        .or_else(|| llm_llama::catalog::find("smollm2-135m").map(|m| m.path()))?;
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "NOTICE: model tests skipped: {} is absent (run scripts/fetch-model)",
            path.display()
        );
        None
    }
}

fn config(path: PathBuf) -> LlamaConfig {
    LlamaConfig {
        context_size: 2048,
        threads: 2,
        ..LlamaConfig::new(path)
    }
}

/// One model shared by the tests that do not care about the cache.
fn shared() -> Option<&'static LlamaLlm> {
    static MODEL: OnceLock<Option<LlamaLlm>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            model_path().map(|p| LlamaLlm::load(config(p)).expect("the default model loads"))
        })
        .as_ref()
}

fn greedy(max_tokens: u32) -> InferenceOptions {
    InferenceOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(max_tokens)
}

fn request(messages: Vec<ChatMessage>, options: InferenceOptions) -> LlmRequest {
    LlmRequest::new(messages).with_options(options)
}

async fn generate(llm: &LlamaLlm, req: LlmRequest) -> (Vec<String>, LlmUsage) {
    let mut stream = llm.generate(req).await.unwrap();
    let mut pieces = Vec::new();
    let mut usage = None;
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            LlmChunk::Text { text } => pieces.push(text),
            LlmChunk::Usage(u) => usage = Some(u),
            // How far the prompt is read, before the reply.
            LlmChunk::Progress(_) => {}
            other => panic!("the in-process backend hands over raw text, not {other:?}"),
        }
    }
    (pieces, usage.expect("usage comes last"))
}

#[test]
fn missing_and_corrupt_models_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = LlamaLlm::load(LlamaConfig::new(dir.path().join("none.gguf"))).unwrap_err();
    assert!(matches!(missing, Error::ModelNotFound { .. }), "{missing}");
    assert!(missing.to_string().contains("does not exist"));

    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"this is not a model at all").unwrap();
    let err = LlamaLlm::load(LlamaConfig::new(&junk)).unwrap_err();
    assert!(matches!(err, Error::ModelInvalid { .. }), "{err}");
    assert!(err.to_string().contains("GGUF signature"));

    let truncated = dir.path().join("truncated.gguf");
    let mut bytes = b"GGUF".to_vec();
    bytes.extend_from_slice(&[3, 0, 0, 0, 0xff, 0xff]);
    std::fs::write(&truncated, &bytes).unwrap();
    let err = LlamaLlm::load(LlamaConfig::new(&truncated)).unwrap_err();
    assert!(matches!(err, Error::ModelInvalid { .. }), "{err}");

    assert!(matches!(
        LlamaLlm::load(LlamaConfig::new(dir.path())).unwrap_err(),
        Error::ModelUnreadable { .. }
    ));
}

#[tokio::test]
async fn streams_text_with_the_chatml_template() {
    let Some(llm) = shared() else { return };
    let info = llm.info();
    assert!(
        info.chat_template
            .as_deref()
            .unwrap_or_default()
            .contains("<|im_start|>"),
        "ChatML template"
    );
    let req = request(
        vec![
            ChatMessage::system("Be brief."),
            ChatMessage::user("What is the capital of France?"),
        ],
        greedy(24),
    );
    let prompt = llm.render(&req).unwrap();
    assert!(
        prompt.contains("<|im_start|>user\nWhat is the capital of France?<|im_end|>"),
        "{prompt}"
    );
    assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");
    let (pieces, usage) = generate(llm, req).await;
    let text: String = pieces.concat();
    assert!(!text.trim().is_empty());
    assert!(pieces.len() > 1, "streamed in pieces");
    assert!(!text.contains('\u{fffd}'), "{text:?}");
    assert!(usage.generated_tokens >= 1 && usage.generated_tokens <= 24);
    assert!(usage.prompt_tokens > 10);
    assert!(usage.time_to_first_token > Duration::ZERO);
}

/// The GGUF's own Jinja template, rendered by minijinja: exactly ChatML, with the tool
/// result as a user turn (plain ChatML was not written for a tool role).
#[test]
fn the_models_own_template_renders_the_whole_conversation() {
    let Some(llm) = shared() else { return };
    assert_eq!(
        llm.info().template_capabilities,
        Some(llm_llama::TemplateCapabilities {
            tools: false,
            tool_role: false,
            system_role: true
        })
    );
    let req = request(
        vec![
            ChatMessage::system("Be brief."),
            ChatMessage::user("Read a.txt"),
            ChatMessage::assistant("```tool_call\n{}\n```"),
            ChatMessage::tool("read_file", "c1", "hello"),
        ],
        greedy(1),
    );
    assert_eq!(
        llm.render(&req).unwrap(),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nRead a.txt<|im_end|>\n\
         <|im_start|>assistant\n```tool_call\n{}\n```<|im_end|>\n\
         <|im_start|>user\nTool result (read_file):\nhello<|im_end|>\n<|im_start|>assistant\n"
    );
}

/// The default model's own template (as its GGUF ships it) sees the agent's conversation
/// as the model was trained: AIntern's system prompt in the system slot, the tools in its
/// tools block, an earlier call in its own `<tool_call>` syntax, the result in its tool
/// role; and the prompt is byte for byte what Python's jinja2 renders from the same
/// template and messages (as transformers' apply_chat_template does).
#[test]
fn the_default_model_s_template_renders_the_agent_s_conversation_as_jinja2_does() {
    let path = llm_llama::default_model_path();
    if !path.is_file() {
        eprintln!(
            "NOTICE: skipped: {} is absent (run scripts/fetch-model)",
            path.display()
        );
        return;
    }
    let llm = LlamaLlm::load(LlamaConfig {
        context_size: 1024,
        threads: 2,
        ..LlamaConfig::new(path)
    })
    .unwrap();
    let tool = read_file_tool();
    let system = services_ai::prompt::system_prompt(
        &services_ai::AgentConfig::default(),
        Some("The project's instructions."),
        std::slice::from_ref(&tool),
        true,
    )
    .unwrap();
    let call = core_models::MessageToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: std::sync::Arc::new(serde_json::json!({"path": "notes.txt"})),
    };
    let messages = vec![
        ChatMessage::system(system.clone()),
        ChatMessage::user("What does notes.txt say?"),
        ChatMessage::assistant_with_calls("", vec![call], None, ""),
        ChatMessage::tool("read_file", "c1", "Buy milk."),
    ];
    let ours = llm
        .render(&request(messages, greedy(1)).with_tools(vec![tool.clone()]))
        .unwrap();
    assert!(
        ours.starts_with(&format!("<|im_start|>system\n{system}\n\n# Tools")),
        "{ours}"
    );
    assert!(ours.contains("<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>"), "{ours}");
    assert!(
        ours.contains("<tool_response>\nBuy milk.\n</tool_response>"),
        "{ours}"
    );
    let context = serde_json::json!({
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "What does notes.txt say?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "read_file", "arguments": {"path": "notes.txt"}}}]},
            {"role": "tool", "content": "Buy milk.", "name": "read_file", "tool_call_id": "c1"},
        ],
        "tools": [{"type": "function", "function": {"name": tool.id, "description": tool.description,
                   "parameters": tool.input_schema}}],
        "add_generation_prompt": true,
        "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>",
    });
    let source = llm.info().chat_template.clone().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../chat-template/tests/reference.py"
    );
    let mut child = std::process::Command::new("python3")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            serde_json::json!({"template": source, "context": context})
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ours, String::from_utf8(out.stdout).unwrap());
}

#[tokio::test]
async fn stops_at_max_tokens_and_at_stop_strings() {
    // Its own model: greedy output compared across calls needs the same cache state each
    // time (llama.cpp's arithmetic differs slightly between a cached and a fresh prefix,
    // and a 135M model's greedy choice can flip on that), which tests running at the same
    // time on the shared model would disturb.
    let Some(path) = model_path() else { return };
    let llm = &LlamaLlm::load(config(path)).unwrap();
    let question = || {
        vec![ChatMessage::user(
            "Count from one to twenty in words, separated by commas.",
        )]
    };
    let (pieces, usage) = generate(llm, request(question(), greedy(6))).await;
    assert_eq!(usage.generated_tokens, 6, "{pieces:?}");
    assert!(usage.hit_token_limit, "six tokens were the allowance");
    let full: String = generate(llm, request(question(), greedy(40)))
        .await
        .0
        .concat();
    // Stop at three characters from the middle of the greedy answer: the text ends right
    // before their first occurrence.
    let chars: Vec<char> = full.chars().collect();
    assert!(chars.len() >= 8, "{full:?}");
    let stop: String = chars[chars.len() / 2..chars.len() / 2 + 3].iter().collect();
    let options = greedy(40).with_stop(vec![stop.clone()]);
    let (pieces, usage) = generate(llm, request(question(), options)).await;
    let cut: String = pieces.concat();
    assert_eq!(cut, full[..full.find(&stop).unwrap()].to_string());
    assert!(!usage.hit_token_limit, "a stop string ended it: {usage:?}");
}

#[tokio::test]
async fn dropping_the_stream_stops_generation_promptly() {
    let Some(llm) = shared() else { return };
    let long = request(
        vec![ChatMessage::user("Write a very long story about a dragon.")],
        greedy(1500),
    );
    let mut stream = llm.generate(long).await.unwrap();
    // The prompt's counts come before the reply: a reader that stops it early (a loop
    // cut short) still knows what its prompt cost (how far the prompt was read may come
    // before them).
    let mut first = stream.next().await;
    while matches!(first, Some(Ok(LlmChunk::Progress(_)))) {
        first = stream.next().await;
    }
    match first {
        Some(Ok(LlmChunk::Usage(early))) => assert!(
            early.prompt_tokens > 5
                && early.prompt_tokens_evaluated + early.cached_prompt_tokens
                    == early.prompt_tokens
                && early.generated_tokens == 0,
            "{early:?}"
        ),
        other => panic!("expected the prompt's counts first: {other:?}"),
    }
    for _ in 0..3 {
        assert!(matches!(
            stream.next().await,
            Some(Ok(LlmChunk::Text { .. }))
        ));
    }
    drop(stream);
    // The worker is free again at once: a short request finishes quickly.
    let start = Instant::now();
    let (_, usage) = generate(llm, request(vec![ChatMessage::user("Hi")], greedy(1))).await;
    assert_eq!(usage.generated_tokens, 1);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn a_growing_conversation_evaluates_only_new_tokens() {
    let Some(path) = model_path() else { return };
    let llm = LlamaLlm::load(config(path)).unwrap();
    let system = ChatMessage::system("You are a helpful assistant.");
    let first = vec![system.clone(), ChatMessage::user("Name a color.")];
    let (reply, u1) = generate(&llm, request(first.clone(), greedy(12))).await;
    assert_eq!(
        u1.prompt_tokens_evaluated, u1.prompt_tokens,
        "nothing cached yet"
    );

    let mut second = first.clone();
    second.push(ChatMessage::assistant(reply.concat()));
    second.push(ChatMessage::user("Name another one."));
    let (_, u2) = generate(&llm, request(second.clone(), greedy(12))).await;
    assert!(u2.prompt_tokens > u1.prompt_tokens);
    let new_tokens = u2.prompt_tokens - u1.prompt_tokens;
    assert!(
        u2.prompt_tokens_evaluated <= new_tokens + 2,
        "evaluated {} of {} (new: {new_tokens})",
        u2.prompt_tokens_evaluated,
        u2.prompt_tokens
    );
    assert!(u2.prompt_tokens_evaluated < u2.prompt_tokens / 2);

    // The same conversation again: only the last token is evaluated.
    let (_, u3) = generate(&llm, request(second.clone(), greedy(1))).await;
    assert_eq!(u3.prompt_tokens_evaluated, 1);

    // An earlier message changed: everything after it is evaluated again.
    let mut changed = second.clone();
    changed[0] = ChatMessage::system("You are a terse assistant.");
    let (_, u4) = generate(&llm, request(changed, greedy(1))).await;
    assert!(
        u4.prompt_tokens_evaluated + 8 >= u4.prompt_tokens,
        "evaluated {} of {}",
        u4.prompt_tokens_evaluated,
        u4.prompt_tokens
    );
}

#[tokio::test]
async fn a_conversation_larger_than_the_context_is_a_clear_error() {
    let Some(path) = model_path() else { return };
    let llm = LlamaLlm::load(LlamaConfig {
        context_size: 128,
        ..config(path)
    })
    .unwrap();
    let huge = ChatMessage::user("word ".repeat(400));
    let err = match llm.generate(request(vec![huge], greedy(4))).await {
        Ok(mut s) => s.next().await.unwrap().unwrap_err(),
        Err(e) => e,
    };
    // llama.cpp may round the window up; the error names the window in use.
    let window = llm.info().context_size;
    assert!(window < 410);
    assert!(
        err.to_string()
            .contains(&format!("more than the context window of {window} tokens")),
        "{err}"
    );
    // The model still works afterwards.
    let (pieces, _) = generate(&llm, request(vec![ChatMessage::user("Hi")], greedy(3))).await;
    assert!(!pieces.is_empty());
}

fn read_file_tool() -> core_models::ToolDefinition {
    core_models::ToolDefinition::new("read_file", "Read File", "Read a text file in the workspace")
        .with_schema(serde_json::json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path relative to the workspace"}},
            "required": ["path"]
        }))
}

fn tool_request(choice: core_models::ToolChoice, user: &str) -> LlmRequest {
    // The compact tool prompt, the one AIntern uses with this small model.
    let config = services_ai::AgentConfig {
        tool_prompt_style: services_ai::ToolPromptStyle::Compact,
        ..services_ai::AgentConfig::default()
    };
    let tools = vec![read_file_tool()];
    let system = services_ai::prompt::system_prompt(&config, None, &tools, false).unwrap();
    (request(
        vec![ChatMessage::system(system), ChatMessage::user(user)],
        greedy(96),
    ))
    .with_tools(tools)
    .with_tool_choice(choice)
}

/// ToolChoice::Required: the reply is one well-formed call of an offered tool, with the
/// file the user named; after the tool's result the model answers in text.
#[tokio::test]
async fn a_required_tool_call_reads_the_named_file_then_the_model_answers() {
    let Some(path) = model_path() else { return };
    let llm = &LlamaLlm::load(config(path)).unwrap();
    let request = tool_request(
        core_models::ToolChoice::Required,
        "Read notes.txt and tell me what it says",
    );
    let (pieces, _) = generate(llm, request.clone()).await;
    let output = pieces.concat();
    let parser =
        services_ai::FunctionCallParser::new(services_ai::ToolCatalog::from_definitions([
            read_file_tool(),
        ]));
    let parsed = parser.parse_all(&output);
    assert!(
        parsed.diagnostics.is_empty(),
        "{:?} in {output:?}",
        parsed.diagnostics
    );
    assert_eq!(parsed.tool_calls.len(), 1, "{output:?}");
    assert_eq!(parsed.tool_calls[0].tool_id, "read_file");
    assert_eq!(
        *parsed.tool_calls[0].parameters,
        serde_json::json!({"path": "notes.txt"}),
        "{output:?}"
    );
    assert!(output.starts_with("```tool_call\n{"), "{output:?}");
    assert!(output.trim_end().ends_with("```"), "{output:?}");

    // The result goes back as the agent sends it; the forced round is over (choice
    // none), so the reply is the answer.
    let call = &parsed.tool_calls[0];
    let result = core_models::ToolResult::success(
        "Shopping list: milk, eggs, bread.\nCall Anna on Friday about the garden party.",
    );
    let mut messages = request.messages.clone();
    messages.push(ChatMessage::assistant(output.clone()));
    messages.push(services_ai::prompt::tool_result_message(
        call, &result, 2000, "",
    ));
    let (pieces, usage) = generate(
        llm,
        request
            .with_messages(messages)
            .with_tool_choice(core_models::ToolChoice::None),
    )
    .await;
    let answer = pieces.concat();
    eprintln!("answer: {answer:?}");
    assert!(!answer.trim().is_empty());
    // The conversation so far came from the cache.
    assert!(
        usage.prompt_tokens_evaluated < usage.prompt_tokens / 2,
        "{usage:?}"
    );
}

/// ToolChoice::Auto: a lazy grammar, so a plain answer stays plain text.
#[tokio::test]
async fn auto_tool_choice_leaves_free_text_free() {
    let Some(llm) = shared() else { return };
    let (pieces, _) = generate(
        llm,
        tool_request(
            core_models::ToolChoice::Auto,
            "Say hello to me in one sentence.",
        ),
    )
    .await;
    let output = pieces.concat();
    let parsed = services_ai::FunctionCallParser::default().parse_all(&output);
    assert!(
        parsed.diagnostics.is_empty(),
        "{:?} in {output:?}",
        parsed.diagnostics
    );
    assert!(!parsed.text.trim().is_empty(), "{output:?}");
}

/// ToolChoice::Required with a sampling chain (not greedy): the grammar corrects the
/// sampled tokens it rejects, so every seed still gives one well-formed call — whether
/// the correction comes from the best candidates (top-k) or from all (with penalties).
#[tokio::test]
async fn a_required_call_is_well_formed_when_sampling_too() {
    let Some(llm) = shared() else { return };
    let parser =
        services_ai::FunctionCallParser::new(services_ai::ToolCatalog::from_definitions([
            read_file_tool(),
        ]));
    for (seed, repeat_penalty) in [(1, 1.0), (2, 1.0), (3, 1.1), (4, 1.1)] {
        let request = (tool_request(
            core_models::ToolChoice::Required,
            "Read notes.txt and tell me what it says",
        ))
        .with_options(
            InferenceOptions::default()
                .with_temperature(0.7)
                .with_top_k(40)
                .with_repeat_penalty(repeat_penalty)
                .with_seed(Some(seed))
                .with_max_tokens(200),
        );
        let (pieces, _) = generate(llm, request).await;
        let output = pieces.concat();
        let parsed = parser.parse_all(&output);
        assert!(
            parsed.diagnostics.is_empty(),
            "seed {seed}: {:?} in {output:?}",
            parsed.diagnostics
        );
        assert_eq!(parsed.tool_calls.len(), 1, "seed {seed}: {output:?}");
        assert_eq!(parsed.tool_calls[0].tool_id, "read_file");
        assert!(output.starts_with("```tool_call\n{"), "{output:?}");
        assert!(output.trim_end().ends_with("```"), "{output:?}");
    }
}

/// With a real model family's chat template (read from the shared templates folder beside
/// the workspace, never copied), a forced call comes out in that family's own call
/// language — the grammar constrains even this small model to it, and ends reasoning that
/// runs too long — and the parser the agent uses for that template reads the call back.
#[tokio::test]
async fn required_calls_come_out_in_each_templates_own_language() {
    let Some(path) = model_path() else { return };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/templates");
    assert!(
        dir.join("README.md").is_file(),
        "the real chat templates are missing: expected them in {}",
        dir.display()
    );
    let cases = [
        ("Qwen-Qwen3-0.6B.jinja", "hermes", "<tool_call>"),
        ("Qwen3-Coder.jinja", "qwen3-coder", "<function=read_file>"),
        ("GLM-4.6.jinja", "glm", "<arg_key>"),
        (
            "MiniMax-M2.jinja",
            "minimax-m2",
            "<invoke name=\"read_file\">",
        ),
        (
            "Mistral-Small-3.2-24B-Instruct-2506.jinja",
            "mistral",
            "[TOOL_CALLS]read_file[ARGS]",
        ),
        (
            "mistralai-Mistral-Nemo-Instruct-2407.jinja",
            "mistral",
            "[TOOL_CALLS][",
        ),
        (
            "openai-gpt-oss-120b.jinja",
            "harmony",
            "to=functions.read_file",
        ),
        // Its template shows no tools: AIntern's fence, after the reasoning its prompt opens.
        (
            "deepseek-ai-DeepSeek-V3.1.jinja",
            "deepseek-v3.1",
            "</think>",
        ),
        (
            "moonshotai-Kimi-K2.jinja",
            "kimi-k2",
            "functions.read_file:",
        ),
        (
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
            "command-r7b",
            "<|START_ACTION|>",
        ),
        (
            "ibm-granite-granite-3.3-2B-Instruct.jinja",
            "granite",
            "<|tool_call|>",
        ),
        (
            "LFM2-8B-A1B.jinja",
            "lfm2",
            "<|tool_call_start|>[read_file(",
        ),
        (
            "google-gemma-4-31B-it.jinja",
            "gemma4",
            "<|tool_call>call:read_file{",
        ),
        (
            "meta-llama-Llama-3.1-8B-Instruct.jinja",
            "llama3",
            "\"read_file\"",
        ),
        (
            "meetkai-functionary-medium-v3.2.jinja",
            "functionary-v3.2",
            "read_file\n",
        ),
    ];
    let mut failures = Vec::new();
    for (file, format, marker) in cases {
        let source = std::fs::read_to_string(dir.join(file)).unwrap();
        let llm = LlamaLlm::load(LlamaConfig {
            chat_template: Some(source.clone()),
            ..config(path.clone())
        })
        .unwrap();
        let chat = llm.chat_format().unwrap();
        if chat.call_format != format {
            failures.push(format!("{file}: detected {}", chat.call_format));
            continue;
        }
        let req = (request(
            vec![ChatMessage::user("Read notes.txt and tell me what it says")],
            greedy(256),
        ))
        .with_tools(vec![read_file_tool()])
        .with_tool_choice(core_models::ToolChoice::Tool("read_file".into()));
        let text = generate(&llm, req).await.0.concat();
        let profile = services_ai::detect_template(&source);
        let out =
            services_ai::FunctionCallParser::new(services_ai::ToolCatalog::from_definitions([
                read_file_tool(),
            ]))
            .with_options(profile.parser_options(chat.starts_in_thinking))
            .parse_all(&text);
        let ok = text.contains(marker)
            && out.tool_calls.first().is_some_and(|c| {
                c.tool_id == "read_file" && c.parameters.get("path").is_some_and(|p| p.is_string())
            });
        if !ok {
            failures.push(format!("{file} ({format}): {text:?} → {out:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A chat template the user gives must work: one that is not valid Jinja, or holds a NUL
/// character, is a clear error when the model loads, never a silent fallback.
#[test]
fn a_given_chat_template_that_cannot_work_is_a_clear_error() {
    let Some(path) = model_path() else { return };
    for bad in ["{% for m in messages %}{{ m.content ", "{{ 'a' }}\0"] {
        let err = LlamaLlm::load(LlamaConfig {
            chat_template: Some(bad.into()),
            ..config(path.clone())
        })
        .unwrap_err();
        assert!(matches!(err, Error::Template(_)), "{bad:?}: {err}");
    }
}
