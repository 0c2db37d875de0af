//! `aintern` against a real llama-server serving the test model: the demo task runs
//! through the server with the same events and results as in-process, native tool calls
//! run through the loop, `models` lists what the server offers, `bench llm --backend`
//! measures the client, cancelling ends a streaming request at once, and an unreachable
//! server is a clear error. Skipped with a notice when the server or the model is missing,
//! unless `AINTERN_REQUIRE_LLAMA_SERVER` is set.

use super::{aintern, completed, events, results, Workspace};
use core_models::AgentEvent;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};
use test_support::llama_server::{test_model, LlamaServer, ServerOptions};

const DEMO: &str = "Read the file notes.txt and summarize it";

fn backend(server: &LlamaServer) -> String {
    format!("openai:{}", server.url())
}

/// What a run did, as comparable across backends: every event's type but the text
/// pieces, and each call with its result. A run of prompt-progress reports counts as
/// one: how finely a backend reports reading a prompt is its own (in process, a kept
/// prefix is read in batches of its own), not a difference in what the run did.
fn outline(events: &[AgentEvent]) -> (Vec<&'static str>, Vec<String>) {
    let mut kinds: Vec<&'static str> = events
        .iter()
        .filter(|e| !matches!(e, AgentEvent::TextGeneration(_)))
        .map(AgentEvent::event_type)
        .collect();
    kinds.dedup_by(|a, b| *a == "prompt_progress" && *b == "prompt_progress");
    let mut calls = Vec::new();
    for e in events {
        match e {
            AgentEvent::ToolCallRequest(r) => calls.push(format!(
                "call {} {}",
                r.request.tool_id, r.request.parameters
            )),
            AgentEvent::ToolResult(r) => calls.push(format!(
                "result {} {}",
                r.result.success,
                r.result.content.lines().next().unwrap_or_default()
            )),
            _ => {}
        }
    }
    (kinds, calls)
}

#[test]
fn the_demo_runs_through_the_server_as_it_runs_in_process() {
    let Some(server) = LlamaServer::start(ServerOptions::default()) else {
        return;
    };
    let ws = Workspace::new();
    let model = format!("llama:{}", test_model().display());
    let via = |spec: &str| {
        let out = aintern(
            &[
                "exec",
                "--workspace",
                ws.path(),
                "--backend",
                spec,
                // The tool is named: what is compared here is the backends, not the
                // small model's choice of tool.
                "--tool-choice",
                "read_file",
                DEMO,
            ],
            b"",
        );
        completed(&out)
    };
    let (local, local_done) = via(&model);
    let (remote, remote_done) = via(&backend(&server));
    assert_eq!(
        outline(&remote),
        outline(&local),
        "server log:\n{}",
        server.log_text()
    );
    let calls = outline(&remote).1;
    assert!(calls[0].starts_with("call read_file"), "{calls:?}");
    assert!(calls[1].starts_with("result true Buy milk"), "{calls:?}");
    assert_eq!(remote_done.total_iterations, local_done.total_iterations);
    assert!(remote_done.prompt_tokens > 0 && remote_done.completion_tokens > 0);
    assert!(
        remote_done.cached_prompt_tokens > 0,
        "the second iteration reuses the cache"
    );
}

#[test]
fn native_tool_calls_from_the_server_run_through_the_loop() {
    let template = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../llm-openai/tests/data/smol-tools.jinja");
    let Some(server) = LlamaServer::start(ServerOptions {
        chat_template: Some(template),
        ..ServerOptions::default()
    }) else {
        return;
    };
    let ws = Workspace::new();
    // The test's own prompt tells the tiny model the call to write (llama-server's
    // "required" lets a model open the call itself, and this one often writes prose
    // instead): what is checked is the loop's handling of a call the server delivers.
    // No workspace listing: given one, this tiny model writes code instead of the call,
    // and llama-server does not hold a forced call to the template's syntax (a known
    // gap, in the README).
    let config = ws.home.path().join("native-call.toml");
    std::fs::write(
        &config,
        "tool_use_system_prompt = 'To read a file, reply with exactly {\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}} and nothing else.'\npath_choices_limit = 0\n",
    )
    .unwrap();
    // The tiny model's greedy choice still moves between identical requests (the
    // server's cache): asked again, up to four times, until the server delivers a call.
    let mut out = None;
    for _ in 0..4 {
        let run = aintern(
            &[
                "exec",
                "--no-save",
                // The model's own reply, as the server takes it apart (no decision asked
                // apart first).
                "--steering",
                "free",
                "--config",
                config.to_str().unwrap(),
                "--workspace",
                ws.path(),
                "--backend",
                &backend(&server),
                "--model",
                "any-name-llama-server-serves-its-one-model",
                // Named: the server is sent that one tool and must call it natively;
                // the tiny model's choice among all of them is not what this checks.
                "--tool-choice",
                "read_file",
                "Call read_file on notes.txt, as JSON.",
            ],
            b"",
        );
        let called = !outline(&completed(&run).0).1.is_empty();
        out = Some(run);
        if called {
            break;
        }
    }
    let out = out.unwrap();
    let (events, done) = completed(&out);
    let calls = outline(&events).1;
    assert_eq!(
        calls.first().map(String::as_str),
        Some(r#"call read_file {"path":"notes.txt"}"#),
        "{calls:?}\n{}",
        server.log_text()
    );
    assert!(results(&events)[0].result.success);
    assert_eq!(done.total_iterations, 2);
}

#[test]
fn models_lists_what_the_server_offers() {
    let Some(server) = LlamaServer::start(ServerOptions::default()) else {
        return;
    };
    let out = aintern(&["models", "--backend", &backend(&server), "--json"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1);
    assert!(rows[0]["id"]
        .as_str()
        .is_some_and(|id| id.ends_with(".gguf")));
    assert!(rows[0]["parameters"]
        .as_u64()
        .is_some_and(|p| p > 100_000_000));
    let table = aintern(&["models", "--backend", &backend(&server)], b"");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.starts_with("id") && text.contains("135M"), "{text}");
}

#[test]
fn bench_llm_measures_the_client_against_a_direct_one() {
    let Some(server) = LlamaServer::start(ServerOptions::default()) else {
        return;
    };
    let out = aintern(
        &[
            "bench",
            "llm",
            "--backend",
            &backend(&server),
            "--gen",
            "32",
            "--reps",
            "2",
            "--json",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for side in ["aintern", "direct"] {
        assert!(
            report[side]["tg_tok_s"].as_f64().is_some_and(|v| v > 0.0),
            "{report}"
        );
        assert!(
            report[side]["ttft_ms"].as_f64().is_some_and(|v| v > 0.0),
            "{report}"
        );
    }
    assert_eq!(
        report["aintern"]["tokens"], report["direct"]["tokens"],
        "the same reply"
    );
    // A smoke test of the command: other tests share the machine, so the ratios themselves
    // are measured by scripts/bench-openai on a quiet one.
    for ratio in ["tg_ratio", "ttft_ratio"] {
        assert!(
            report[ratio]
                .as_f64()
                .is_some_and(|r| r.is_finite() && r > 0.0),
            "{report}"
        );
    }
}

#[test]
fn cancelling_a_streaming_request_ends_it_at_once() {
    let Some(server) = LlamaServer::start(ServerOptions::default()) else {
        return;
    };
    let ws = Workspace::new();
    let mut child = super::bin(ws.home.path())
        .args([
            "exec",
            "--workspace",
            ws.path(),
            "--backend",
            &backend(&server),
            "--tool-choice",
            "none",
            "--max-tokens",
            "2000",
            "Count from 1 to 1000, separated by commas.",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pieces = 0;
    let mut cancelled_at = None;
    let mut ended = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        let event: AgentEvent = serde_json::from_str(&line).unwrap();
        if matches!(&event, AgentEvent::TextGeneration(t) if !t.is_complete) {
            pieces += 1;
            if pieces == 5 && cancelled_at.is_none() {
                writeln!(stdin, "{{\"op\":\"cancel\"}}").unwrap();
                cancelled_at = Some(Instant::now());
            }
        }
        if let AgentEvent::AgentComplete(done) = &event {
            ended = Some((Instant::now(), done.was_cancelled));
            break;
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
    let (ended, was_cancelled) = ended.expect("agent_complete");
    assert!(was_cancelled);
    let took = ended - cancelled_at.expect("cancelled");
    assert!(took < Duration::from_millis(100), "{took:?}");
}

#[test]
fn an_unreachable_server_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ws = Workspace::new();
    let out = aintern(
        &[
            "exec",
            "--workspace",
            ws.path(),
            "--backend",
            &format!("openai:http://127.0.0.1:{port}/v1"),
            "--model",
            "m",
            "hello",
        ],
        b"",
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot reach the server"), "{stderr}");
    assert!(events(&out.stdout).is_empty());
}
