//! Cache affinity against the scripted server: a session's key as `prompt_cache_key` (and
//! the field dropped where refused) and in a configured header; llama-server's slots
//! chosen idle-first (from `GET /slots`, else from the key), saved as soon as a session's
//! reply ends and restored before a request unless its slot ran nothing since. Here: the
//! key and the header; how slots are chosen in `slots`; saving and restoring in `saving`.

use super::{collect, config, connect, request, text};
use core_models::{ChatMessage, LlmChunk, LlmRequest, LlmService, SessionKey};
use futures::StreamExt;
use llm_openai::ApiKey;
use serde_json::{json, Value};
use test_support::stub_server::{content_event, StubEvent, StubReply, StubRequest, StubServer};

mod saving;
mod slots;

fn key(text: &str) -> SessionKey {
    SessionKey::new(text).unwrap_or_else(|| panic!("not a session key: {text}"))
}

/// A new conversation of `session`.
fn fresh(session: &SessionKey) -> LlmRequest {
    request("hi").with_session(Some(session.clone()))
}

/// A conversation of `session` the model already answered (as when a session resumes).
fn resumed(session: &SessionKey) -> LlmRequest {
    LlmRequest::new(vec![
        ChatMessage::user("hi"),
        ChatMessage::assistant("Hello."),
        ChatMessage::user("and now?"),
    ])
    .with_session(Some(session.clone()))
}

/// The `POST`s received whose paths `keep` keeps, in order.
fn posts(server: &StubServer, keep: impl Fn(&str) -> bool) -> Vec<StubRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && keep(&r.path))
        .collect()
}

fn chats(server: &StubServer) -> Vec<StubRequest> {
    posts(server, |path| path.ends_with("/chat/completions"))
}

/// The paths of the `POST`s received (chats and slot actions), in order.
fn post_paths(server: &StubServer) -> Vec<String> {
    posts(server, |_| true)
        .into_iter()
        .map(|r| r.path)
        .collect()
}

/// Slot actions (save, restore).
fn slot_calls(server: &StubServer) -> Vec<StubRequest> {
    posts(server, |path| path.starts_with("/slots"))
}

/// How many times the slots' state was asked for.
fn slot_listings(server: &StubServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/slots")
        .count()
}

/// llama-server's `GET /slots` for `total` slots, the `busy` ones processing.
fn listing(total: u64, busy: &[u64]) -> Value {
    Value::Array(
        (0..total)
            .map(|id| json!({"id": id, "n_ctx": 4096, "is_processing": busy.contains(&id), "params": {}}))
            .collect(),
    )
}

/// llama-server's `GET /slots` for `total` slots, none busy, each with the last task it
/// ran: `tasks[id]`.
fn ran(tasks: &[u64]) -> Value {
    Value::Array(
        tasks
            .iter()
            .enumerate()
            .map(|(id, task)| json!({"id": id, "is_processing": false, "id_task": task}))
            .collect(),
    )
}

/// llama-server's answer to a restore of a file it does not have (it empties the slot).
fn no_file() -> StubReply {
    StubReply::status(
        400,
        r#"{"error":{"code":400,"message":"Unable to restore slot: No available space in KV cache or invalid slot save file","type":"invalid_request_error"}}"#,
    )
}

/// The file a slot action named.
fn file_of(call: &StubRequest) -> String {
    call.body["filename"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Whether `name` is one of the slot files this user and machine save states in:
/// `aintern-<owner>-<pool>-<n>.bin`, nothing of a session's key in it.
fn is_slot_file(name: &str) -> bool {
    let hex = |part: &str| part.len() == 8 && part.bytes().all(|b| b.is_ascii_hexdigit());
    let parts: Vec<&str> = name
        .strip_prefix("aintern-")
        .and_then(|rest| rest.strip_suffix(".bin"))
        .map(|rest| rest.split('-').collect())
        .unwrap_or_default();
    matches!(parts.as_slice(), [owner, pool, n] if hex(owner) && hex(pool) && n.parse::<u32>().is_ok())
}

/// The slot the last chat request was sent to.
fn last_slot(server: &StubServer) -> u64 {
    chats(server)
        .last()
        .and_then(|c| c.body["id_slot"].as_u64())
        .unwrap_or_else(|| panic!("no slot in the last chat request"))
}

/// The server says it is llama-server, with `slots` slots when given.
fn llama_server(server: &StubServer, slots: Option<u32>) {
    server.props(json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": slots}));
}

/// A client of llama-server `server` (with `slots` slots) that pins sessions and saves
/// their slots.
async fn saving_client(server: &StubServer, slots: u32) -> llm_openai::OpenAiLlm {
    llama_server(server, Some(slots));
    let mut c = config(server);
    c.pin_slots = true;
    c.save_slots = true;
    connect(c).await
}

/// A client of llama-server `server` (with `slots` slots) that pins sessions.
async fn pinning_client(server: &StubServer, slots: u32) -> llm_openai::OpenAiLlm {
    llama_server(server, Some(slots));
    let mut c = config(server);
    c.pin_slots = true;
    connect(c).await
}

/// A completed generation: no error, the reply's text.
async fn ask(llm: &llm_openai::OpenAiLlm, request: LlmRequest) -> String {
    let (chunks, error) = collect(llm, request).await;
    assert_eq!(error, None);
    text(&chunks)
}

/// A reply that reports its prompt (12 tokens, 4 of them cached) before its text pieces,
/// then waits for the reader to leave.
fn endless_reply(pieces: &[&str]) -> StubReply {
    let mut events = vec![StubEvent::Data(
        json!({"choices": [], "prompt_progress": {"total": 12, "cache": 4, "processed": 12, "time_ms": 3}})
            .to_string(),
    )];
    events.extend(pieces.iter().map(|p| content_event(p)));
    events.push(StubEvent::Hang);
    StubReply::Stream(events)
}

#[tokio::test]
async fn the_session_key_is_sent_as_prompt_cache_key() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 3]).await;
    let session = key("9f1c2e-session_A");
    let llm = connect(config(&server)).await;
    ask(&llm, fresh(&session)).await;
    ask(&llm, request("no session")).await;
    let mut off = config(&server);
    off.prompt_cache_key = false;
    ask(&connect(off).await, fresh(&session)).await;
    let sent = chats(&server);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].body["prompt_cache_key"], "9f1c2e-session_A");
    assert!(
        sent[1].body.get("prompt_cache_key").is_none(),
        "no session, no key"
    );
    assert!(
        sent[2].body.get("prompt_cache_key").is_none(),
        "the setting is off"
    );
    for chat in &sent {
        assert!(chat.body.get("id_slot").is_none(), "not pinned by default");
    }
    assert!(slot_calls(&server).is_empty());
}

#[tokio::test]
async fn a_server_that_refuses_prompt_cache_key_is_asked_without_it() {
    let server = StubServer::start([
        StubReply::status(
            400,
            r#"{"error":{"message":"property 'prompt_cache_key' is unsupported","type":"invalid_request_error"}}"#,
        ),
        StubReply::text_stream(&["ok"]),
        StubReply::text_stream(&["again"]),
    ])
    .await;
    let session = key("s1");
    let llm = connect(config(&server)).await;
    assert_eq!(ask(&llm, fresh(&session)).await, "ok");
    assert_eq!(ask(&llm, fresh(&session)).await, "again");
    let sent = chats(&server);
    assert_eq!(sent.len(), 3, "one refusal, asked again once");
    assert_eq!(sent[0].body["prompt_cache_key"], "s1");
    assert!(sent[1].body.get("prompt_cache_key").is_none(), "dropped");
    assert!(sent[2].body.get("prompt_cache_key").is_none(), "remembered");
    assert!(sent[2].body.get("temperature").is_some(), "only that field");
}

#[tokio::test]
async fn the_affinity_header_carries_the_key_only_when_configured() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 3]).await;
    let session = key("route-me-7");
    let mut c = config(&server);
    c.affinity_header = Some("X-Session-Affinity".into());
    let llm = connect(c).await;
    ask(&llm, fresh(&session)).await;
    ask(&llm, request("no session")).await;
    ask(&connect(config(&server)).await, fresh(&session)).await;
    let sent = chats(&server);
    assert_eq!(sent[0].header("x-session-affinity"), Some("route-me-7"));
    assert_eq!(sent[1].header("x-session-affinity"), None, "no session");
    assert_eq!(sent[2].header("x-session-affinity"), None, "not configured");
    assert!(
        sent[2].headers.iter().all(|(_, v)| v != "route-me-7"),
        "the key is in no other header"
    );

    // A name that is no header name is said at connect.
    let mut c = config(&server);
    c.affinity_header = Some("bad header".into());
    let error = llm_openai::OpenAiLlm::connect(c)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("affinity_header"), "{error}");
}
