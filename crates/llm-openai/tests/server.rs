//! The backend against a real llama-server (llama.cpp's own) serving the test model:
//! streamed text equals the whole reply at temperature 0, native tool calls arrive
//! structured and run through the agent loop, usage and cached tokens are reported across
//! iterations, dropping a stream stops the server's generation at once, and a session's
//! slot saved by one client lets the next continue from the cache.
//!
//! Skipped with a notice when the server or the model is missing, unless
//! `AINTERN_REQUIRE_LLAMA_SERVER` is set (`scripts/test` sets it and builds the server).

use core_models::{
    AgentEvent, AgentRequest, AgentService as _, ChatMessage, InferenceOptions, LlmChunk,
    LlmRequest, LlmService, LlmUsage, RiskLevel, SessionKey, Tool, ToolChoice, ToolDefinition,
    ToolRegistry, ToolResult,
};
use futures::StreamExt;
use llm_openai::{OpenAiConfig, OpenAiLlm, ToolMode};
use serde_json::{json, Value};
use services_ai::{
    AgentConfig, AgentEngine, DefaultPermissionManager, InMemoryToolRegistry, SteeringMode,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::llama_server::{LlamaServer, ServerOptions};
use test_support::MockTool;

/// AIntern's own tool-capable template for the test model.
fn tools_template() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/smol-tools.jinja")
}

fn greedy(max_tokens: u32) -> InferenceOptions {
    InferenceOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(max_tokens)
}

async fn connect(server: &LlamaServer) -> OpenAiLlm {
    OpenAiLlm::connect(OpenAiConfig::new(server.url()))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\n{}", server.log_text()))
}

/// One llama-server at a time: three on two cores would measure the machine's load, not
/// the client (the drop test times how soon generation stops).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_text_equals_the_whole_reply_at_temperature_0() {
    let _serial = SERIAL.lock().await;
    let Some(server) = LlamaServer::start(ServerOptions::default()) else {
        return;
    };
    let llm = connect(&server).await;
    // The test model's own template renders no tools: they would be described in text.
    assert_eq!(llm.tool_mode(), ToolMode::Text);
    assert!(llm.server_info().llama_server);
    let details = llm.model_details();
    assert!(details.is_small(), "{details:?}");
    assert_eq!(details.context_length, Some(4096));

    let messages = vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user("Name three colours of the rainbow."),
    ];
    let request = LlmRequest::new(messages).with_options(greedy(48));
    let counted = llm
        .count_tokens(&request)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stream = llm
        .generate(request)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut streamed, mut pieces, mut usage) = (String::new(), 0, None);
    while let Some(item) = stream.next().await {
        match item.unwrap_or_else(|e| panic!("{e}")) {
            LlmChunk::Text { text } => {
                streamed.push_str(&text);
                pieces += 1;
            }
            LlmChunk::Usage(u) => usage = Some(u),
            LlmChunk::Progress(_) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(pieces > 1, "streamed in pieces");
    let usage = usage.unwrap_or_default();
    assert!(
        usage.prompt_tokens > 0 && usage.generated_tokens > 0,
        "{usage:?}"
    );
    assert!(usage.time_to_first_token > Duration::ZERO);
    // finish_reason "length" exactly when the allowance ran out.
    assert_eq!(
        usage.hit_token_limit,
        usage.generated_tokens >= 48,
        "{usage:?}"
    );
    assert_eq!(
        counted,
        Some(usage.prompt_tokens),
        "the server counts as it evaluates"
    );

    // The same request, not streamed, straight to the server.
    llm_openai::ensure_tls_provider();
    let whole: Value = reqwest::Client::new()
        .post(format!("{}/chat/completions", server.url()))
        .json(&json!({
            "messages": [
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Name three colours of the rainbow."}
            ],
            "temperature": 0.0,
            "max_tokens": 48,
        }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let whole = whole["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!whole.is_empty());
    assert_eq!(streamed, whole);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_tool_calls_arrive_structured_and_run_through_the_loop() {
    let _serial = SERIAL.lock().await;
    let Some(server) = LlamaServer::start(ServerOptions {
        chat_template: Some(tools_template()),
        ..ServerOptions::default()
    }) else {
        return;
    };
    let llm = Arc::new(connect(&server).await);
    assert_eq!(
        llm.tool_mode(),
        ToolMode::Native,
        "the template renders tools"
    );
    let tool = Arc::new(
        MockTool::new("read_file")
            .with_definition(
                ToolDefinition::new("read_file", "Read File", "Read a text file.")
                    .with_risk(RiskLevel::Safe)
                    .with_schema(json!({
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"]
                    })),
            )
            .with_execute(|_| async { ToolResult::success("apples and pears") }),
    );
    let registry: Arc<dyn ToolRegistry> = Arc::new(
        [tool.clone() as Arc<dyn Tool>]
            .into_iter()
            .collect::<InMemoryToolRegistry>(),
    );
    let agent = AgentEngine::builder(llm.clone(), registry)
        .config(AgentConfig {
            iteration_delay_ms: 0,
            // The server's own tool calls, each reply the model's free one: every
            // generation is then a reply and shows its usage (small-model steering adds
            // decisions, counted in the totals but not shown as text).
            steering: SteeringMode::Free,
            // The test's own prompt tells the tiny model the call to write: what is
            // checked is the loop's handling of a call the server delivers.
            tool_use_system_prompt: r#"To read a file, reply with exactly {"name": "read_file", "arguments": {"path": "notes.txt"}} and nothing else."#.into(),
            ..AgentConfig::default()
        })
        .permissions(Arc::new(DefaultPermissionManager::in_memory()))
        .build();
    // With this template llama-server's "required" lets the model open the call itself,
    // and the tiny model, greedy, sometimes writes prose instead, differently from one
    // identical request to the next (the server's cache moves its close choices): the
    // request is made again, up to four times, until the server delivers a call. What
    // is checked is what the loop does with a call the server delivers.
    let mut events = Vec::new();
    for _ in 0..4 {
        let mut request = AgentRequest::new("Call read_file on notes.txt, as JSON.");
        request.tool_choice = ToolChoice::Required;
        request.inference_options = Some(greedy(200));
        let mut stream = agent
            .process_message(request)
            .unwrap_or_else(|e| panic!("{e}"));
        events.clear();
        let deadline = Instant::now() + Duration::from_secs(120);
        while let Some(event) = tokio::time::timeout_at(deadline.into(), stream.next())
            .await
            .unwrap_or_else(|_| panic!("the request did not end"))
        {
            events.push(event);
        }
        if events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolCallRequest(_)))
        {
            break;
        }
    }
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallRequest(r) => Some(r.request.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls.len(),
        1,
        "{:?}\n{}",
        kinds(&events),
        server.log_text()
    );
    assert_eq!(calls[0].tool_id, "read_file");
    assert_eq!(calls[0].parameters.get("path"), Some(&json!("notes.txt")));
    assert!(calls[0].model_call_id.is_some(), "the server's id is kept");
    assert_eq!(tool.executions(), 1);
    let Some(AgentEvent::AgentComplete(done)) = events.last() else {
        panic!("{:?}", kinds(&events))
    };
    assert_eq!(done.total_iterations, 2);
    // Usage per generation, and the cache across iterations: the second request shares
    // the first's prefix.
    let usages: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextGeneration(t) if t.is_complete => t.usage.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(usages.len(), 2, "{usages:?}");
    assert!(usages
        .iter()
        .all(|u| u.prompt_tokens > 0 && u.generated_tokens > 0));
    assert!(usages[1].cached_prompt_tokens > 0, "{usages:?}");
    assert_eq!(
        done.cached_prompt_tokens,
        usages.iter().map(|u| u.cached_prompt_tokens).sum::<u64>()
    );
    assert_eq!(
        done.prompt_tokens,
        usages.iter().map(|u| u.prompt_tokens).sum::<u64>()
    );
}

fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.event_type()).collect()
}

/// Whether the server is generating for anyone.
fn busy(server: &LlamaServer) -> bool {
    let Some((200, body)) = server.get("/slots") else {
        return true;
    };
    let slots: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    slots
        .as_array()
        .is_some_and(|s| s.iter().any(|slot| slot["is_processing"] == json!(true)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_stream_stops_the_generation_at_once() {
    let _serial = SERIAL.lock().await;
    let Some(server) = LlamaServer::start(ServerOptions::default()) else {
        return;
    };
    let llm = connect(&server).await;
    let request = (LlmRequest::new(vec![ChatMessage::user(
        "Count from 1 to 1000, separated by commas.",
    )]))
    .with_options(greedy(2000));
    let mut stream = llm
        .generate(request)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The prompt's counts come before the reply (llama-server's `return_progress`): a
    // reader that stops it early still knows what its prompt cost.
    // (How far the prompt was read may come first.)
    let mut first = stream.next().await;
    while matches!(first, Some(Ok(LlmChunk::Progress(_)))) {
        first = stream.next().await;
    }
    match first {
        Some(Ok(LlmChunk::Usage(early))) => assert!(
            early.prompt_tokens > 10
                && early.prompt_tokens_evaluated + early.cached_prompt_tokens
                    == early.prompt_tokens
                && early.generated_tokens == 0,
            "{early:?}"
        ),
        other => panic!("expected the prompt's counts first: {other:?}"),
    }
    let mut first = None;
    for _ in 0..9 {
        assert!(matches!(
            stream.next().await,
            Some(Ok(LlmChunk::Text { .. }))
        ));
        first.get_or_insert_with(Instant::now);
    }
    // How long a token takes here and now (other tests' servers share the cores).
    let per_token = first.map_or(Duration::ZERO, |t| t.elapsed() / 8);
    assert!(busy(&server), "generating");
    let dropped = Instant::now();
    drop(stream);
    let released = dropped.elapsed();
    while busy(&server) && dropped.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let stopped = dropped.elapsed();
    assert!(released < Duration::from_millis(100), "{released:?}");
    // At once: within 100 ms, or a few tokens' time on a busy machine — not the 2000
    // tokens asked for.
    let bound = Duration::from_millis(100).max(per_token * 8);
    assert!(
        stopped < bound,
        "the server generated for {stopped:?} after the drop ({per_token:?} a token)\n{}",
        server.log_text()
    );
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The reply's text and usage.
async fn answer(llm: &OpenAiLlm, request: LlmRequest) -> (String, LlmUsage) {
    let mut stream = llm
        .generate(request)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut text, mut usage) = (String::new(), LlmUsage::default());
    while let Some(item) = stream.next().await {
        match item.unwrap_or_else(|e| panic!("{e}")) {
            LlmChunk::Text { text: piece } => text.push_str(&piece),
            LlmChunk::Usage(u) => usage = u,
            _ => {}
        }
    }
    (text, usage)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_slot_lets_the_next_client_continue_from_the_cache() {
    let _serial = SERIAL.lock().await;
    let dir = TempDir(std::env::temp_dir().join(format!(
        "aintern-slots-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )));
    std::fs::create_dir_all(&dir.0).unwrap_or_else(|e| panic!("{e}"));
    let Some(server) = LlamaServer::start(ServerOptions {
        extra: vec![
            "-np".into(),
            "4".into(),
            "--slot-save-path".into(),
            dir.0.display().to_string(),
        ],
        ..ServerOptions::default()
    }) else {
        return;
    };
    let mut config = OpenAiConfig::new(server.url());
    config.pin_slots = true;
    config.save_slots = true;
    let client = |config: OpenAiConfig| {
        let log = server.log_text();
        async move {
            OpenAiLlm::connect(config)
                .await
                .unwrap_or_else(|e| panic!("connect: {e}\n{log}"))
        }
    };
    // Every slot emptied, as in a server that just started.
    let erase_all = || async {
        for slot in 0..4 {
            let erased = reqwest::Client::new()
                .post(format!("{}/slots/{slot}?action=erase", server.root()))
                .send()
                .await
                .map(|r| r.status().is_success());
            assert!(matches!(erased, Ok(true)), "{erased:?}");
        }
    };
    let session = SessionKey::new("live-slot-test").unwrap_or_else(|| panic!("a key"));
    let system = ChatMessage::system(
        "You are a helpful assistant. You answer in one short sentence, plainly, without lists.",
    );
    let question = ChatMessage::user("What colour is the sky on a clear day?");

    let llm = client(config.clone()).await;
    assert_eq!(llm.server_info().total_slots, Some(4));
    let first = LlmRequest::new(vec![system.clone(), question.clone()])
        .with_options(greedy(8))
        .with_session(Some(session.clone()));
    let (reply, _) = answer(&llm, first).await;
    let kept = llm.keep_session(&session).await;
    assert!(matches!(kept, Ok(true)), "{kept:?}\n{}", server.log_text());
    let saved: Vec<String> = std::fs::read_dir(&dir.0)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        saved.len() == 1 && saved[0].starts_with("aintern-") && !saved[0].contains("live-slot"),
        "one file of the pool, nothing of the key in its name: {saved:?}"
    );

    // The conversation goes on in a new client, on a server whose slots are empty.
    let next = LlmRequest::new(vec![
        system,
        question,
        ChatMessage::assistant(reply),
        ChatMessage::user("And at night?"),
    ])
    .with_options(greedy(8))
    .with_session(Some(session.clone()));
    erase_all().await;
    config.save_slots = false;
    let (_, cold) = answer(&client(config.clone()).await, next.clone()).await;
    assert_eq!(cold.cached_prompt_tokens, 0, "{cold:?}");
    erase_all().await;
    config.save_slots = true;
    let (_, warm) = answer(&client(config).await, next).await;
    assert!(
        warm.cached_prompt_tokens > 0 && warm.cached_prompt_tokens < warm.prompt_tokens,
        "the restored slot is reused: {warm:?}\n{}",
        server.log_text()
    );
}
