//! The real embedded model (each test skipped with a notice when it is not downloaded): a
//! streamed answer, the README's demo, `aintern bench llm`.

use super::{aintern, completed, results, Workspace};
use core_models::AgentEvent;
use serde_json::Value;

/// The real embedded model end to end (skipped with a notice when it is not downloaded).
#[test]
fn run_with_the_default_model_streams_an_answer() {
    let Some(model) = model(true) else { return };
    let ws = Workspace::new();
    let backend = format!("llama:{}", model.display());
    let out = aintern(
        &[
            "run",
            "--json",
            "--workspace",
            ws.path(),
            "--backend",
            &backend,
            "--tool-choice",
            "none",
            "--max-iterations",
            "1",
            "Say hello in one short sentence.",
        ],
        b"",
    );
    let (events, done) = completed(&out);
    assert!(!done.final_response.trim().is_empty());
    assert!(done.prompt_tokens > 0 && done.completion_tokens > 0);
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TextGeneration(t) if !t.is_complete))
            .count()
            > 1,
        "streamed"
    );
}

/// The model for real-model tests when it is downloaded (else a notice): the embedded
/// default model, or with `overridable` `$AINTERN_TEST_MODEL` when set.
fn model(overridable: bool) -> Option<std::path::PathBuf> {
    let model = std::env::var_os("AINTERN_TEST_MODEL")
        .filter(|_| overridable)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(llm_llama::default_model_path);
    if model.is_file() {
        Some(model)
    } else {
        eprintln!(
            "NOTICE: skipped: {} is absent (run scripts/fetch-model)",
            model.display()
        );
        None
    }
}

/// The README's demo: the embedded default model (no --backend), a required tool call
/// that reads the file the user named, then the answer.
#[test]
fn the_demo_reads_notes_txt_with_the_default_model_and_answers() {
    if model(false).is_none() {
        return;
    }
    let ws = Workspace::new();
    let out = aintern(
        &[
            "run",
            "--json",
            "--workspace",
            ws.path(),
            "--tool-choice",
            "required",
            "Read the file notes.txt and summarize it",
        ],
        b"",
    );
    let (events, done) = completed(&out);
    let results = results(&events);
    assert_eq!(results.len(), 1, "{events:?}");
    assert!(results[0].result.success, "{:?}", results[0]);
    assert_eq!(results[0].tool_id, "read_file");
    assert!(
        results[0].result.content.contains("Buy milk"),
        "{:?}",
        results[0]
    );
    assert_eq!(done.total_iterations, 2, "{done:?}");
    assert!(!done.final_response.trim().is_empty(), "{done:?}");
}

/// `aintern bench llm --json`: throughput figures and a conversation whose later turns
/// evaluate only what is new.
#[test]
fn bench_llm_reports_throughput_and_cache_reuse() {
    let Some(model) = model(true) else { return };
    let out = aintern(
        &[
            "bench",
            "llm",
            "--model",
            model.to_str().unwrap(),
            "--threads",
            "2",
            "--prompt",
            "64",
            "--gen",
            "8",
            "--reps",
            "1",
            "--turns",
            "3",
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
    assert!(report["pp_tok_s"].as_f64().unwrap() > 0.0, "{report}");
    assert!(report["tg_tok_s"].as_f64().unwrap() > 0.0, "{report}");
    let turns = report["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{report}");
    for pair in turns.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        let prompt = |t: &Value| t["prompt_tokens"].as_u64().unwrap();
        assert!(prompt(after) > prompt(before), "{report}");
        // Only what the turn added (the reply's end and the new question) is evaluated.
        assert!(
            after["evaluated_tokens"].as_u64().unwrap() < prompt(after) - prompt(before) + 8,
            "{report}"
        );
        assert!(after["ttft_ms"].as_f64().unwrap() > 0.0);
    }
}
