//! Memory stays bounded whatever a server sends: one endless event is stopped at the
//! event cap. Its own test binary: peak memory is measured for the whole process.

use core_models::{ChatMessage, LlmRequest, LlmService};
use futures::StreamExt;
use llm_openai::{OpenAiConfig, OpenAiLlm, ToolMode};
use test_support::stub_server::{content_event, StubEvent, StubReply, StubServer};

/// The process's peak resident memory (`VmHWM`), in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_single_event_is_stopped_and_memory_stays_bounded() {
    let server = StubServer::start([StubReply::Stream(vec![
        content_event("start"),
        StubEvent::Raw(b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec()),
        StubEvent::Filler {
            byte: b'a',
            len: 400 * 1024 * 1024,
        },
    ])])
    .await;
    let mut config = OpenAiConfig::new(server.url()).with_model("stub-model");
    config.tool_mode = ToolMode::Native;
    let llm = OpenAiLlm::connect(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let before = peak_memory();
    let mut stream = llm
        .generate(LlmRequest::new(vec![ChatMessage::user("hi")]))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut error = None;
    while let Some(item) = stream.next().await {
        if let Err(e) = item {
            error = Some(e.to_string());
            break;
        }
    }
    drop(stream);
    let grown = peak_memory().saturating_sub(before);
    let error = error.unwrap_or_default();
    eprintln!(
        "a 400 MiB event: peak memory grew by {} MiB",
        grown / (1024 * 1024)
    );
    assert!(error.contains("one event of more than 16 MiB"), "{error}");
    assert!(
        grown < 64 * 1024 * 1024,
        "peak memory grew by {} MiB for a 400 MiB event",
        grown / (1024 * 1024)
    );
}
