//! The real models (each test skipped with a notice when it is not fetched): the small one
//! streamed answer, the README's demo, `aintern bench llm`.

use super::{aintern, completed, results, Workspace};
use core_models::AgentEvent;
use serde_json::Value;

/// The small model end to end (skipped with a notice when it is not fetched).
#[test]
fn run_with_the_default_model_streams_an_answer() {
    let Some(model) = small_model() else { return };
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

/// `--threads` sets the in-process model's threads, as `-v` shows; a server's backend
/// refuses it (a server sets its own).
#[test]
fn threads_are_set_for_an_in_process_model_only() {
    let ws = Workspace::new();
    let served = aintern(
        &[
            "run",
            "--workspace",
            ws.path(),
            "--backend",
            "openai:http://127.0.0.1:9/v1",
            "--threads",
            "1",
            "hi",
        ],
        b"",
    );
    assert!(!served.status.success());
    let said = String::from_utf8_lossy(&served.stderr);
    assert!(
        said.contains("--threads applies to llama models only"),
        "{said}"
    );
    let Some(model) = small_model() else { return };
    let backend = format!("llama:{}", model.display());
    let out = aintern(
        &[
            "-v",
            "run",
            "--json",
            "--workspace",
            ws.path(),
            "--backend",
            &backend,
            "--threads",
            "1",
            "--tool-choice",
            "none",
            "--max-tokens",
            "4",
            "Say hello.",
        ],
        b"",
    );
    completed(&out);
    let log = String::from_utf8_lossy(&out.stderr);
    let loaded = log
        .lines()
        .find(|l| l.contains("model loaded"))
        .unwrap_or_else(|| panic!("-v says when the model is loaded:\n{log}"));
    assert!(loaded.contains("threads=1"), "{loaded}");
}

/// The small model most real-model tests run (fast, and steady enough to assert on):
/// `$AINTERN_TEST_MODEL`, else the catalog's smollm2-135m where `scripts/fetch-model`
/// puts it; `None` with a notice when it is absent.
pub(crate) fn small_model() -> Option<std::path::PathBuf> {
    let model = std::env::var_os("AINTERN_TEST_MODEL")
        .map(std::path::PathBuf::from)
        .or_else(|| llm_llama::catalog::find("smollm2-135m").map(|m| m.path()))?;
    present(model)
}

/// The default model (Qwen2.5-Coder-1.5B), for the few tests of what a person gets with no
/// model named: `None` with a notice when it is not fetched.
pub(crate) fn default_model() -> Option<std::path::PathBuf> {
    present(llm_llama::default_model_path())
}

fn present(model: std::path::PathBuf) -> Option<std::path::PathBuf> {
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

/// The notes of `examples/workspace`, which `scripts/demo` reads.
pub(super) const DEMO_NOTES: &str = include_str!("../../../../examples/workspace/notes.txt");

/// The README's demo (`scripts/demo`): the default model (no --backend, no --model),
/// choosing its tool itself, reads the file the user named and answers from it in plain
/// text; llama.cpp says nothing on stderr.
#[test]
fn the_demo_reads_notes_txt_with_the_default_model_and_answers() {
    if default_model().is_none() {
        return;
    }
    // The demo's own notes (a note that reads "Call Bob." the model takes for a request to
    // phone someone, and declines).
    let ws = Workspace::new();
    std::fs::write(ws.dir.path().join("notes.txt"), DEMO_NOTES).unwrap();
    let out = aintern(
        &[
            "run",
            "--json",
            "--workspace",
            ws.path(),
            "Read the file notes.txt and summarize it",
        ],
        b"",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("llama-cpp-2") && !stderr.contains("control-looking"),
        "llama.cpp's own warnings stay out of sight without -v: {stderr}"
    );
    let (events, done) = completed(&out);
    let results = results(&events);
    assert_eq!(results.len(), 1, "{events:?}");
    assert!(results[0].result.success, "{:?}", results[0]);
    assert_eq!(results[0].tool_id, "read_file");
    assert!(
        results[0].result.content.contains("Team notes"),
        "{:?}",
        results[0]
    );
    assert_eq!(done.total_iterations, 2, "{done:?}");
    let answer = done.final_response.trim();
    assert!(!answer.is_empty(), "{done:?}");
    assert!(
        !answer.contains("tool_call") && !answer.contains("```"),
        "the answer is plain text, not the call echoed: {answer}"
    );
    let lower = answer.to_lowercase();
    assert!(
        ["thursday", "installer", "maria", "budget", "retrospective"]
            .iter()
            .any(|w| lower.contains(w)),
        "the answer says what the file says: {answer}"
    );
}

/// `aintern bench llm --json`: throughput figures and a conversation whose later turns
/// evaluate only what is new.
#[test]
fn bench_llm_reports_throughput_and_cache_reuse() {
    let Some(model) = small_model() else { return };
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

/// A 40-turn chat with tool results at a 2048-token context: the conversation is compacted
/// (old results cut, earlier turns summarized by the model) and every request completes
/// without a context error. Prints its figures (turns, compactions, tokens, time).
#[test]
fn a_long_chat_at_a_small_context_is_compacted_and_never_overflows() {
    let Some(model) = small_model() else { return };
    let backend = format!("llama:{}", model.display());
    let ws = Workspace::new();
    let started = std::time::Instant::now();
    let mut child = super::bin(ws.home.path())
        .args([
            "chat",
            "--backend",
            &backend,
            "--workspace",
            ws.path(),
            "--context-size",
            "2048",
            "--max-tokens",
            "96",
            "--tool-choice",
            "required",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let (mut compactions, mut errors, mut turns) = (Vec::new(), Vec::new(), 0);
    for turn in 0..40 {
        use std::io::Write;
        writeln!(
            stdin,
            "Read the file notes.txt and tell me what turn {turn} should do"
        )
        .unwrap();
        // One request ends with its statistics line.
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(rest) = line.split("context compacted (").nth(1) {
                compactions.push(rest.to_string());
            }
            // A reply cut at --max-tokens 96 (a call left incomplete) is the reply's
            // length, not the context: every other error counts.
            if line.trim_start().starts_with('!') && !line.contains("incomplete") {
                errors.push(line.clone());
            }
            if line.contains("— ") && line.contains("iteration") {
                turns += 1;
                break;
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let took = started.elapsed();
    eprintln!(
        "40-turn chat at 2048 tokens: {turns} turns, {} compactions in {:.1} s: {compactions:?}",
        compactions.len(),
        took.as_secs_f64()
    );
    assert_eq!(turns, 40);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(
        compactions.iter().any(|c| c.starts_with("summary")),
        "{compactions:?}"
    );
    let summarized: Vec<(u64, u64)> = compactions
        .iter()
        .filter_map(|c| {
            let numbers: Vec<u64> = c
                .split(|ch: char| !ch.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .collect();
            (numbers.len() >= 2).then(|| (numbers[numbers.len() - 2], numbers[numbers.len() - 1]))
        })
        .collect();
    assert!(
        summarized.iter().all(|(before, after)| after <= before),
        "{summarized:?}"
    );
    // The saved session holds the conversation as compacted, and all 40 requests.
    let out = super::aintern_in(ws.home.path(), &["sessions", "list", "--json"], b"");
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["turns"], 40);
}

/// The first completion's usage among `events`: (prompt tokens, evaluated).
fn first_usage(events: &[AgentEvent]) -> (u64, u64) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::TextGeneration(t) => t
                .usage
                .as_ref()
                .map(|u| (u.prompt_tokens, u.prompt_tokens_evaluated)),
            _ => None,
        })
        .expect("a completion reports its usage")
}

/// `aintern exec` over `ws` with `backend` and `options`, continuing the last session when
/// `last`.
fn exec_in(
    ws: &Workspace,
    backend: &str,
    options: &[&str],
    last: bool,
    message: &str,
) -> std::process::Output {
    let mut args = vec!["exec", "--workspace", ws.path(), "--backend", backend];
    args.extend_from_slice(options);
    if last {
        args.push("--last");
    }
    args.push(message);
    super::aintern_in(ws.home.path(), &args, b"")
}

/// Warm resume: four requests, each in a new `exec --last` process, evaluate only what is
/// new on each follow-up, from a state saved beside the session (0600); a damaged state
/// costs only speed; `sessions rm` removes the state with the session.
#[test]
fn each_exec_last_resumes_from_the_sessions_saved_state() {
    use std::os::unix::fs::PermissionsExt;
    let Some(model) = small_model() else { return };
    let ws = Workspace::new();
    let backend = format!("llama:{}", model.display());
    // No tools, short replies: each request is one completion of one shape.
    let options = ["--tool-choice", "none", "--max-tokens", "24"];
    let exec =
        |last: bool, message: &str| completed(&exec_in(&ws, &backend, &options, last, message)).0;
    // A first request with some context, as a real one has: the follow-ups' new words are
    // then a small part of their prompts.
    exec(
        false,
        "Some facts about me, for later questions. My favourite colour is green. I live in \
         Lisbon, near the river, in a small flat with a balcony full of plants. I work as a \
         baker and start every day at five in the morning. On weekends I like to walk by \
         the sea, read old novels and cook fish with my two brothers. I have a grey cat \
         called Pimenta who sleeps all day on the sofa. Please just say you noted it.",
    );
    let dir = ws.home.path().join("data/aintern/sessions");
    for message in [
        "What is my favourite colour?",
        "Where do I live?",
        "Suggest a weekend trip from there.",
    ] {
        let (prompt, evaluated) = first_usage(&exec(true, message));
        assert!(
            evaluated * 100 <= prompt * 15,
            "{message:?}: evaluated {evaluated} of {prompt} prompt tokens"
        );
    }
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".kv"))
        .collect();
    assert!(
        files.len() >= 2,
        "a manifest and a sequence file: {files:?}"
    );
    for file in &files {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
    // Damaged (the session's state and the prompt's kept prefix): the request still
    // completes, evaluating the prompt in full.
    for file in files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with(".json"))
    {
        std::fs::write(file, b"not a state").unwrap();
    }
    let (prompt, evaluated) = first_usage(&exec(true, "Thanks!"));
    assert!(evaluated * 2 > prompt, "evaluated {evaluated} of {prompt}");

    let sessions = super::aintern_in(ws.home.path(), &["sessions", "list", "--json"], b"");
    let listed: Value = serde_json::from_slice(&sessions.stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_string();
    let out = super::aintern_in(ws.home.path(), &["sessions", "rm", &id], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A prompt prefix kept for new processes (when the prompt has one) stays until it is
    // cleared.
    let out = super::aintern_in(ws.home.path(), &["sessions", "prefixes", "--clear"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Warm resume as configured by default (tools offered, the small-model steering): each
/// turn asks a decision apart before it answers or calls, and a call's answer from its
/// results apart too. Those prompts of other shapes keep their states in memory and with
/// the session, so that the follow-ups, each in a new `exec --last` process, evaluate
/// little of what they send (before: about nine tenths of it).
#[test]
fn each_exec_last_with_tools_offered_resumes_its_side_prompts_too() {
    let Some(model) = small_model() else { return };
    let ws = Workspace::new();
    std::fs::write(
        ws.dir.path().join("garden.txt"),
        "Balcony garden: 3 tomato plants, 1 basil pot, 2 pepper plants.\n",
    )
    .unwrap();
    let backend = format!("llama:{}", model.display());
    let exec = |last: bool, message: &str| {
        completed(&exec_in(
            &ws,
            &backend,
            &["--approve", "none"],
            last,
            message,
        ))
        .1
    };
    exec(
        false,
        "My balcony garden has tomatoes, basil and two pepper plants; the tomatoes get six \
         hours of sun and I water everything every evening. What could I do better?",
    );
    let (mut prompt, mut cached) = (0, 0);
    for message in [
        "How often should the basil be watered?",
        "Which plant needs the most sun?",
        "Give me a short plan for next week.",
    ] {
        let done = exec(true, message);
        prompt += done.prompt_tokens;
        cached += done.cached_prompt_tokens;
    }
    let evaluated = prompt - cached;
    assert!(
        evaluated * 2 <= prompt,
        "the follow-ups evaluated {evaluated} of {prompt} prompt tokens"
    );
}

/// `initialize` from a client that asks for `_aintern/prompt_progress` notifications.
pub(crate) fn initialize_asking_for_progress(id: u64) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": 1, "clientCapabilities": {
               "_meta": {"aintern": {"promptProgress": true}}}}})
    .to_string()
}

/// Over ACP, how far the prompt is read comes as `_aintern/prompt_progress` notifications
/// to a client that asked for them, and to no other (a client that does not know them may
/// report each as an error).
#[test]
fn acp_progress_notifications_go_only_to_a_client_that_asked() {
    let Some(model) = small_model() else { return };
    let backend = format!("llama:{}", model.display());
    let progress_of = |init: String| {
        let ws = Workspace::new();
        let mut acp = super::acp::Raw::with_args(
            &ws,
            &[
                "--backend",
                &backend,
                "--tool-choice",
                "none",
                "--max-iterations",
                "1",
            ],
        );
        acp.send(&init);
        acp.response(1);
        acp.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                    "params": {"cwd": ws.path(), "mcpServers": []}})
            .to_string(),
        );
        let id = acp.response(2)["result"]["sessionId"].clone();
        acp.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                    "params": {"sessionId": id, "prompt": [{"type": "text", "text": "Say hi."}]}})
            .to_string(),
        );
        let mut progress = Vec::new();
        loop {
            let message = acp.next_within(std::time::Duration::from_secs(300));
            if message["method"] == "_aintern/prompt_progress" {
                progress.push(message["params"].clone());
            }
            if message["id"] == 3 {
                assert!(message["result"]["stopReason"].is_string(), "{message}");
                break progress;
            }
        }
    };
    let asked = progress_of(initialize_asking_for_progress(1));
    let last = asked.last().unwrap_or_else(|| panic!("no progress"));
    assert_eq!(last["done"], last["total"], "{asked:?}");
    assert!(last["total"].as_u64().unwrap_or(0) > 0, "{asked:?}");
    let plain = progress_of(super::acp::initialize(1));
    assert!(plain.is_empty(), "{plain:?}");
}
