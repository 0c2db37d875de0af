//! The backend against a scripted server on loopback: retries (only before the first
//! token), `Retry-After`, broken and silent streams, malformed events, slow headers, errors
//! that say what to do, native calls streamed every way servers stream them, cancellation,
//! and the tool mode settled at connect.

use core_models::{ChatMessage, LlmChunk, LlmRequest, LlmService, LlmToolCall, ToolChoice};
use futures::StreamExt;
use llm_openai::{ApiKey, OpenAiConfig, OpenAiLlm, ToolMode};
use serde_json::json;
use std::time::{Duration, Instant};
use test_support::stub_server::{content_event, StubEvent, StubReply, StubServer};

fn config(server: &StubServer) -> OpenAiConfig {
    let mut config = OpenAiConfig::new(server.url()).with_model("stub-model");
    config.tool_mode = ToolMode::Native;
    config.retry_base = Duration::from_millis(20);
    config.first_token_timeout = Duration::from_secs(5);
    config.idle_timeout = Duration::from_secs(5);
    // Slot claims and records of saved slots of this server's own, not the user's.
    config.claims_dir = Some(server.private_dir().to_path_buf());
    config
}

async fn connect(config: OpenAiConfig) -> OpenAiLlm {
    OpenAiLlm::connect(config)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

fn request(text: &str) -> LlmRequest {
    LlmRequest::new(vec![ChatMessage::user(text)])
}

/// Everything the stream delivered, and the error that ended it.
async fn collect(llm: &OpenAiLlm, request: LlmRequest) -> (Vec<LlmChunk>, Option<String>) {
    let mut stream = match llm.generate(request).await {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(e) => return (chunks, Some(e.to_string())),
        }
    }
    (chunks, None)
}

fn text(chunks: &[LlmChunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            LlmChunk::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn calls(chunks: &[LlmChunk]) -> Vec<LlmToolCall> {
    chunks
        .iter()
        .filter_map(|c| match c {
            LlmChunk::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_500_is_retried_and_the_reply_streams() {
    let server = StubServer::start([
        StubReply::status(500, r#"{"error":{"message":"loading"}}"#),
        StubReply::status(503, "busy"),
        StubReply::text_stream(&["Hel", "lo"]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!(error, None);
    assert_eq!(text(&chunks), "Hello");
    assert_eq!(server.chat_requests().len(), 3);
    let Some(LlmChunk::Usage(usage)) = chunks.last() else {
        panic!("usage last: {chunks:?}")
    };
    assert_eq!((usage.prompt_tokens, usage.cached_prompt_tokens), (12, 4));
    assert!(usage.time_to_first_token > Duration::ZERO);
}

#[tokio::test]
async fn retries_end_with_the_last_error() {
    let server = StubServer::start(vec![StubReply::status(502, "bad gateway"); 3]).await;
    let mut c = config(&server);
    c.max_retries = 2;
    let llm = connect(c).await;
    let (_, error) = collect(&llm, request("hi")).await;
    let error = error.unwrap_or_default();
    assert!(error.contains("server failed (502)"), "{error}");
    assert_eq!(
        server.chat_requests().len(),
        3,
        "the first try and two retries"
    );
}

#[tokio::test]
async fn a_429_waits_as_long_as_retry_after_says() {
    let server = StubServer::start([
        StubReply::status(429, r#"{"error":{"message":"slow down"}}"#)
            .with_header("Retry-After", "1"),
        StubReply::text_stream(&["ok"]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let started = Instant::now();
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!((text(&chunks).as_str(), error), ("ok", None));
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );

    // A server asking for longer than the longest wait is not retried.
    server.push([StubReply::status(429, "later").with_header("Retry-After", "3600")]);
    let (_, error) = collect(&llm, request("hi")).await;
    let error = error.unwrap_or_default();
    assert!(
        error.contains("rate limiting") && error.contains("3600 s"),
        "{error}"
    );
}

#[tokio::test]
async fn a_break_after_tokens_is_an_error_never_retried() {
    let server = StubServer::start([
        StubReply::Stream(vec![
            content_event("Hel"),
            content_event("lo"),
            StubEvent::Disconnect,
        ]),
        StubReply::text_stream(&["must not be asked"]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!(text(&chunks), "Hello");
    let error = error.unwrap_or_default();
    assert!(
        error.contains("broke in the middle of the reply"),
        "{error}"
    );
    assert_eq!(server.chat_requests().len(), 1);
}

#[tokio::test]
async fn a_break_before_any_token_is_retried() {
    let server = StubServer::start([
        StubReply::Stream(vec![StubEvent::Disconnect]),
        StubReply::Stream(vec![
            StubEvent::Data(
                r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#.into(),
            ),
            StubEvent::Disconnect,
        ]),
        StubReply::text_stream(&["fine"]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!((text(&chunks).as_str(), error), ("fine", None));
    assert_eq!(server.chat_requests().len(), 3);
}

#[tokio::test]
async fn malformed_events_are_clear_errors() {
    let server = StubServer::start([
        StubReply::Stream(vec![
            content_event("a"),
            StubEvent::Data("{not json".into()),
        ]),
        StubReply::Stream(vec![StubEvent::Raw(vec![0xff, 0xfe, b'\n', b'\n'])]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!(text(&chunks), "a");
    assert!(error.unwrap_or_default().contains("stream is malformed"));
    let (_, error) = collect(&llm, request("hi")).await;
    assert!(error.unwrap_or_default().contains("stream is malformed"));
}

#[tokio::test]
async fn slow_headers_and_a_silent_stream_hit_their_time_limits() {
    let server = StubServer::start([
        StubReply::text_stream(&["late"]).delayed(Duration::from_secs(3)),
        StubReply::Stream(vec![content_event("a"), StubEvent::Hang]),
    ])
    .await;
    let mut c = config(&server);
    c.first_token_timeout = Duration::from_millis(300);
    c.idle_timeout = Duration::from_millis(300);
    let llm = connect(c).await;
    let started = Instant::now();
    let (_, error) = collect(&llm, request("hi")).await;
    let error = error.unwrap_or_default();
    assert!(
        error.contains("did not answer") && error.contains("first_token_timeout_ms"),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );

    let started = Instant::now();
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!(text(&chunks), "a");
    let error = error.unwrap_or_default();
    assert!(
        error.contains("went silent") && error.contains("idle_timeout_ms"),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        server.chat_requests().len(),
        2,
        "time limits are not retried"
    );
}

#[tokio::test]
async fn a_first_token_that_never_comes_is_a_timeout() {
    // Headers at once, then only keep-alive comments.
    let server = StubServer::start([StubReply::Stream(vec![
        StubEvent::Raw(b": keep-alive\n\n".to_vec()),
        StubEvent::Hang,
    ])])
    .await;
    let mut c = config(&server);
    c.first_token_timeout = Duration::from_millis(300);
    let llm = connect(c).await;
    let (_, error) = collect(&llm, request("hi")).await;
    assert!(error.unwrap_or_default().contains("sent no token"));
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection_at_once() {
    let mut events = vec![content_event("first")];
    for _ in 0..50 {
        events.push(StubEvent::Delay(Duration::from_millis(100)));
        events.push(content_event(" more"));
    }
    let server = StubServer::start([StubReply::Stream(events)]).await;
    let llm = connect(config(&server)).await;
    let mut stream = llm
        .generate(request("hi"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first = stream.next().await;
    assert!(
        matches!(first, Some(Ok(LlmChunk::Text { .. }))),
        "{first:?}"
    );
    let dropped = Instant::now();
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.clients_gone().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let gone = server.clients_gone();
    assert_eq!(gone.len(), 1, "the server saw the client leave");
    let after = gone[0].saturating_duration_since(dropped);
    assert!(
        after < Duration::from_millis(100),
        "closed {after:?} after the drop"
    );
}

#[tokio::test]
async fn errors_say_what_to_do() {
    let server = StubServer::start([
        StubReply::status(401, r#"{"error":{"message":"Invalid API key"}}"#),
        StubReply::status(404, r#"{"error":{"message":"model 'nope' not found"}}"#),
        StubReply::status(
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096}}"#,
        ),
    ])
    .await;
    server.models(&["stub-model", "other-model"]);
    let mut c = config(&server);
    c.api_key = Some(ApiKey::new("sk-secret-123"));
    assert!(
        !format!("{c:?}").contains("sk-secret-123"),
        "the key is never printed"
    );
    let llm = connect(c).await;
    let (_, error) = collect(&llm, request("hi")).await;
    let error = error.unwrap_or_default();
    assert!(
        error.contains("refused") && error.contains("api_key_env"),
        "{error}"
    );
    assert!(!error.contains("sk-secret-123"));
    let sent = &server.chat_requests()[0];
    assert_eq!(sent.header("authorization"), Some("Bearer sk-secret-123"));

    let (_, error) = collect(&llm, request("hi")).await;
    let error = error.unwrap_or_default();
    assert!(
        error.contains("no model 'stub-model'") && error.contains("other-model"),
        "{error}"
    );

    let (_, error) = collect(&llm, request("hi")).await;
    let error = error.unwrap_or_default();
    assert!(
        error.contains("9000 tokens") && error.contains("4096"),
        "{error}"
    );
    assert_eq!(server.chat_requests().len(), 3, "none of these is retried");
}

#[tokio::test]
async fn native_calls_arrive_whole_however_they_are_streamed() {
    let piece = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut call = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        StubEvent::Data(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).to_string(),
        )
    };
    let server = StubServer::start([StubReply::Stream(vec![
        content_event("Let me look."),
        piece(0, Some("call_a"), Some("read_file"), ""),
        piece(0, None, None, "{\"path\": "),
        piece(0, None, None, "\"a.txt\"}"),
        // A server that gives every call index 0.
        piece(0, Some("call_b"), Some("list_dir"), "{}"),
        StubEvent::Data(
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
                .to_string(),
        ),
        StubEvent::Data("[DONE]".into()),
    ])])
    .await;
    let llm = connect(config(&server)).await;
    let mut req = request("look");
    req.tools = vec![core_models::ToolDefinition::new(
        "read_file",
        "Read",
        "Read a file.",
    )];
    req.tool_choice = ToolChoice::Required;
    let (chunks, error) = collect(&llm, req).await;
    assert_eq!(error, None);
    let found = calls(&chunks);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        (found[0].id.as_deref(), found[0].name.as_str()),
        (Some("call_a"), "read_file")
    );
    assert_eq!(found[0].arguments, "{\"path\": \"a.txt\"}");
    assert_eq!(
        (found[1].id.as_deref(), found[1].name.as_str()),
        (Some("call_b"), "list_dir")
    );
    let body = &server.chat_requests()[0].body;
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert_eq!(body["stream"], true);
}

#[tokio::test]
async fn a_server_that_answers_all_at_once_is_understood() {
    let server = StubServer::start([StubReply::status(
        200,
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
            .to_string(),
    )])
    .await;
    let llm = connect(config(&server)).await;
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!(error, None);
    assert_eq!(text(&chunks), "whole");
    assert_eq!(calls(&chunks)[0].name, "f");
}

#[tokio::test]
async fn the_tool_mode_is_settled_at_connect() {
    // llama-server says its template cannot render tools: text mode, no probe.
    let server = StubServer::start([]).await;
    server.props(json!({"chat_template": "{{ messages }}", "chat_template_caps": {"supports_tools": false}, "default_generation_settings": {"n_ctx": 2048}}));
    let mut c = config(&server);
    c.tool_mode = ToolMode::Auto;
    let llm = connect(c).await;
    assert_eq!(llm.tool_mode(), ToolMode::Text);
    assert!(llm.server_info().llama_server);
    assert_eq!(llm.model_details().context_length, Some(2048));
    assert!(llm.chat_format().is_some_and(|f| !f.renders_tools));
    assert!(server.chat_requests().is_empty(), "no probe needed");

    // Another server is asked once; one that refuses tools gets them in the prompt.
    let server = StubServer::start([StubReply::status(
        400,
        r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#,
    )])
    .await;
    let mut c = config(&server);
    c.tool_mode = ToolMode::Auto;
    let llm = connect(c).await;
    assert_eq!(llm.tool_mode(), ToolMode::Text);
    assert_eq!(server.chat_requests()[0].body["max_tokens"], 1);

    // One that takes them gets them natively.
    let server = StubServer::start([StubReply::status(200, r#"{"choices":[]}"#)]).await;
    let mut c = config(&server);
    c.tool_mode = ToolMode::Auto;
    c.model = None;
    let llm = connect(c).await;
    assert_eq!(llm.tool_mode(), ToolMode::Native);
    assert_eq!(llm.model(), "stub-model", "the server's only model");
    assert_eq!(
        llm.chat_format().map(|f| f.call_format),
        Some("native".into())
    );
}

#[tokio::test]
async fn a_late_refusal_of_tools_switches_to_text_for_the_next_request() {
    let server = StubServer::start([
        StubReply::status(
            400,
            r#"{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice"}}"#,
        ),
        StubReply::text_stream(&["ok"]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let mut req = request("hi");
    req.tools = vec![core_models::ToolDefinition::new("f", "F", "F.")];
    let (_, error) = collect(&llm, req.clone()).await;
    assert!(error.unwrap_or_default().contains("does not take tools"));
    assert_eq!(llm.tool_mode(), ToolMode::Text);
    let (chunks, error) = collect(&llm, req).await;
    assert_eq!((text(&chunks).as_str(), error), ("ok", None));
    assert!(server.chat_requests()[1].body.get("tools").is_none());
}

#[tokio::test]
async fn connection_errors_are_retried_then_reported() {
    // A port nothing listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        listener.local_addr().map(|a| a.port()).unwrap_or_default()
    };
    let mut c = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"));
    c.model = Some("m".into());
    c.tool_mode = ToolMode::Native;
    let error = OpenAiLlm::connect(c)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("cannot reach the server"), "{error}");
}

#[tokio::test]
async fn no_model_named_and_none_listed_is_a_clear_error() {
    let server = StubServer::start([]).await;
    server.models(&[]);
    let mut c = config(&server);
    c.model = None;
    let error = OpenAiLlm::connect(c)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("--model"), "{error}");
}

#[tokio::test]
async fn a_forced_call_in_text_mode_on_llama_server_is_held_by_a_grammar() {
    let server = StubServer::start([
        StubReply::text_stream(&[
            "```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"a\"}}\n```",
        ]),
        StubReply::text_stream(&["free"]),
    ])
    .await;
    server.props(
        json!({"chat_template": "{{ messages }}", "chat_template_caps": {"supports_tools": false}}),
    );
    let mut c = config(&server);
    c.tool_mode = ToolMode::Auto;
    let llm = connect(c).await;
    let mut req = request("read a");
    req.tools = vec![core_models::ToolDefinition::new("read_file", "Read", "Read a file.")
        .with_schema(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))];
    req.tool_choice = ToolChoice::Required;
    let (_, error) = collect(&llm, req.clone()).await;
    assert_eq!(error, None);
    req.tool_choice = ToolChoice::Auto;
    let (_, error) = collect(&llm, req).await;
    assert_eq!(error, None);
    let sent = server.chat_requests();
    let grammar = sent[0].body["grammar"].as_str().unwrap_or_default();
    assert!(
        grammar.starts_with("root ::=") && grammar.contains("tool_call"),
        "{grammar}"
    );
    assert!(
        sent[0].body.get("tools").is_none(),
        "text mode sends no tools"
    );
    assert_eq!(
        sent[0].body["top_k"], 40,
        "llama-server's sampling extensions"
    );
    assert!(
        sent[1].body.get("grammar").is_none(),
        "free text stays free under auto"
    );
}

#[tokio::test]
async fn a_server_that_wants_max_completion_tokens_gets_it() {
    let server = StubServer::start([
        StubReply::status(
            400,
            r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."}}"#,
        ),
        StubReply::text_stream(&["ok"]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!((text(&chunks).as_str(), error), ("ok", None));
    let sent = server.chat_requests();
    assert_eq!(sent[0].body["max_tokens"], 4096);
    assert_eq!(sent[1].body["max_completion_tokens"], 4096);
    assert!(sent[1].body.get("max_tokens").is_none());
}

/// `server` answering `/props` as llama-server with a template that renders tools,
/// connected with the tool mode left to the probe.
async fn connect_as_llama_server(server: &StubServer) -> OpenAiLlm {
    server.props(
        json!({"chat_template": "{{ messages }}", "chat_template_caps": {"supports_tools": true}}),
    );
    let mut c = config(server);
    c.tool_mode = ToolMode::Auto;
    connect(c).await
}

#[tokio::test]
async fn llama_server_without_jinja_gets_tools_in_text() {
    // Its template could render tools, but the server refuses them (no --jinja).
    let server = StubServer::start([StubReply::status(
        400,
        r#"{"error":{"code":400,"message":"tools param requires --jinja flag","type":"invalid_request_error"}}"#,
    )])
    .await;
    let llm = connect_as_llama_server(&server).await;
    assert_eq!(llm.tool_mode(), ToolMode::Text);
    let sent = server.chat_requests();
    assert_eq!(sent.len(), 1, "asked once");
    assert!(
        sent[0].path.ends_with("/apply-template"),
        "{}",
        sent[0].path
    );
}

#[tokio::test]
async fn llama_server_is_probed_by_a_render_that_leaves_its_slot_alone() {
    // A probe run as a chat request would take the slot, and the prompt it kept (the
    // start every request shares) would be read again.
    let server = StubServer::start([
        StubReply::status(200, r#"{"prompt": "<|im_start|>user\nSay OK.<|im_end|>"}"#),
        StubReply::text_stream(&["ok"]),
    ])
    .await;
    let llm = connect_as_llama_server(&server).await;
    assert_eq!(llm.tool_mode(), ToolMode::Native);
    let probes = server.chat_requests();
    assert_eq!(probes.len(), 1, "{probes:?}");
    assert!(
        probes[0].path.ends_with("/apply-template"),
        "{}",
        probes[0].path
    );
    assert_eq!(
        probes[0].body["tools"][0]["function"]["name"],
        "aintern_probe"
    );
    // A server without the endpoint is probed by a chat request.
    let server = StubServer::start([
        StubReply::status(404, r#"{"error":{"code":404,"message":"File Not Found"}}"#),
        StubReply::status(
            400,
            r#"{"error":{"code":400,"message":"tools param requires --jinja flag"}}"#,
        ),
    ])
    .await;
    let llm = connect_as_llama_server(&server).await;
    assert_eq!(llm.tool_mode(), ToolMode::Text);
    let paths: Vec<String> = server.chat_requests().into_iter().map(|r| r.path).collect();
    assert!(paths[1].ends_with("/chat/completions"), "{paths:?}");
}

#[tokio::test]
async fn fields_a_server_refuses_are_left_out_from_then_on() {
    let server = StubServer::start([
        StubReply::status(
            400,
            r#"{"error":{"message":"Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature"}}"#,
        ),
        StubReply::status(400, r#"{"error":{"message":"Unsupported parameter: 'top_p' is not supported with this model."}}"#),
        StubReply::text_stream(&["ok"]),
        StubReply::text_stream(&["again"]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let (chunks, error) = collect(&llm, request("hi")).await;
    assert_eq!((text(&chunks).as_str(), error), ("ok", None));
    let (chunks, _) = collect(&llm, request("hi")).await;
    assert_eq!(text(&chunks), "again");
    let sent = server.chat_requests();
    assert_eq!(sent.len(), 4, "each refusal costs one request, once");
    assert!(sent[2].body.get("temperature").is_none() && sent[2].body.get("top_p").is_none());
    assert!(sent[3].body.get("temperature").is_none(), "remembered");
    assert!(sent[3].body.get("max_tokens").is_some());
}

#[tokio::test]
async fn a_probe_the_server_fails_is_no_refusal_of_tools() {
    // llama-server's parser can reject a one-token reply with a 500.
    let failing = r#"{"error":{"code":500,"message":"The model produced output that does not match the expected peg-native format"}}"#;
    let server = StubServer::start(vec![StubReply::status(500, failing); 4]).await;
    let mut c = config(&server);
    c.tool_mode = ToolMode::Auto;
    let llm = connect(c).await;
    assert_eq!(llm.tool_mode(), ToolMode::Native);
    // A refused key is said at once.
    let server =
        StubServer::start([StubReply::status(401, r#"{"error":{"message":"bad key"}}"#)]).await;
    let mut c = config(&server);
    c.tool_mode = ToolMode::Auto;
    let error = OpenAiLlm::connect(c)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("refused"), "{error}");
}

#[tokio::test]
async fn an_answer_schema_is_sent_as_structured_output_and_dropped_where_refused() {
    let server = StubServer::start([
        StubReply::status(
            400,
            r#"{"error":{"message":"response_format of type json_schema is not supported by this model","type":"invalid_request_error"}}"#,
        ),
        StubReply::text_stream(&["{\"n\": ", "3}"]),
        StubReply::text_stream(&["{\"n\": 4}"]),
    ])
    .await;
    let llm = connect(config(&server)).await;
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let held = || {
        request("how many?").with_constraint(Some(core_models::ReplyConstraint::JsonSchema(
            schema.clone(),
        )))
    };
    let (chunks, error) = collect(&llm, held()).await;
    assert_eq!((text(&chunks).as_str(), error), ("{\"n\": 3}", None));
    let (chunks, _) = collect(&llm, held()).await;
    assert_eq!(text(&chunks), "{\"n\": 4}");
    let sent = server.chat_requests();
    assert_eq!(sent.len(), 3, "one refusal, then never sent again");
    assert_eq!(sent[0].body["response_format"]["type"], "json_schema");
    assert_eq!(
        sent[0].body["response_format"]["json_schema"]["schema"],
        schema
    );
    assert!(sent[1].body.get("response_format").is_none());
    assert!(sent[2].body.get("response_format").is_none(), "remembered");
}

#[path = "faults/affinity/mod.rs"]
mod affinity;
