//! End-to-end tests of the `aintern` binary.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod security;

use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Output, Stdio};
use test_support::processes::{process_gone, written_pid};

/// The binary, with the user's config folder in `home` (never the real one).
fn bin(home: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aintern"));
    command
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .env("XDG_CONFIG_HOME", home);
    command
}

/// A config home shared by the tests that save nothing in it.
fn shared_home() -> &'static std::path::Path {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn aintern(args: &[&str], stdin: &[u8]) -> Output {
    aintern_in(shared_home(), args, stdin)
}

fn aintern_in(home: &std::path::Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = bin(home)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn parse(args: &[&str], input: &str) -> Value {
    let out = aintern(&[&["parse"], args].concat(), input.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const CORPUS: &[&str] = &[
    "Plain answer, no tools.",
    "Here's the plan:\n\n```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\"}}\n```\n\nThen I'll summarize.",
    "<think>The user wants a file.</think>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"é/🎉.txt\"}}\n</tool_call>",
    "<tool_call>\n<function=run>\n<parameter=command>\nls\n</parameter>\n<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call>",
    "{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}; {\"name\": \"list_dir\", \"parameters\": {}}",
    "[TOOL_CALLS]read_file[ARGS]{\"path\": \"x\"}",
    "Broken: <tool_call>{\"name\": \"a\", \"arguments\": {oops}}</tool_call> end",
    "```python\nprint({\"tool\": \"x\", \"parameters\": {}})\n```",
    "Unclosed <tool_call>{\"name\": \"a\", \"argu",
    "Ends with `",
];

#[test]
fn parse_prints_the_contract_and_streaming_matches_batch_for_every_chunk_size() {
    for input in CORPUS {
        let batch = parse(&[], input);
        for key in ["text", "thinking", "tool_calls", "diagnostics"] {
            assert!(batch.get(key).is_some(), "{key} missing for {input:?}");
        }
        for n in ["1", "2", "3", "7", "64", "100000"] {
            let streamed = parse(&["--stream", "--chunk", n], input);
            for key in ["text", "thinking", "tool_calls"] {
                assert_eq!(
                    streamed[key], batch[key],
                    "{key} with --chunk {n} for {input:?}"
                );
            }
        }
    }
}

#[test]
fn parse_output_for_known_inputs() {
    let v = parse(&[], CORPUS[1]);
    assert_eq!(v["text"], "Here's the plan:\n\nThen I'll summarize.");
    assert_eq!(
        v["tool_calls"],
        json!([{"tool": "read_file", "parameters": {"path": "notes.txt"}}])
    );
    assert_eq!(v["diagnostics"], json!([]));
    let v = parse(&[], CORPUS[2]);
    assert_eq!(v["thinking"], "The user wants a file.");
    assert_eq!(v["text"], "");
    let v = parse(&[], CORPUS[6]);
    assert_eq!(v["tool_calls"], json!([]));
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 1);
    assert_eq!(v["text"], "Broken:  end");
}

#[test]
fn parse_types_xml_parameters_with_a_tools_file() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        json!([{"id": "run", "name": "Run", "description": "run", "risk_level": "high",
                "schema": {"type": "object", "properties": {"timeout": {"type": "integer"}}}}])
        .to_string(),
    )
    .unwrap();
    let untyped = parse(&[], CORPUS[3]);
    assert_eq!(
        untyped["tool_calls"][0]["parameters"],
        json!({"command": "ls", "timeout": "5"})
    );
    let typed = parse(&["--tools", tools.to_str().unwrap()], CORPUS[3]);
    assert_eq!(
        typed["tool_calls"][0]["parameters"],
        json!({"command": "ls", "timeout": 5})
    );
}

#[test]
fn parse_accepts_any_input_and_refuses_bad_usage() {
    let out = aintern(
        &["parse"],
        b"\xff\xfe<tool_call>{\"name\": \"a\"}</tool_call>",
    );
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tool_calls"][0]["tool"], "a");
    assert!(v["diagnostics"][0]
        .as_str()
        .unwrap()
        .contains("not valid UTF-8"));

    let out = aintern(&["parse", "--chunk", "0"], b"");
    assert!(!out.status.success());
    let out = aintern(&["parse", "--tools", "/nonexistent/tools.json"], b"");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the tools file"));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("tools.json");
    std::fs::write(&bad, "{\"not\": \"an array\"}").unwrap();
    let out = aintern(&["parse", "--tools", bad.to_str().unwrap()], b"");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a JSON array of tool definitions"));
}

#[test]
fn config_check_lists_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("aintern.toml");
    std::fs::write(
        &file,
        "max_agent_iterations = 0\nmax_parallel_tool_calls = 50\n",
    )
    .unwrap();
    let out = aintern(
        &["config", "check", "--config", file.to_str().unwrap()],
        b"",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("max_agent_iterations") && err.contains("max_parallel_tool_calls"),
        "{err}"
    );
    std::fs::write(&file, "max_agent_iterations = 7\n").unwrap();
    let out = aintern(
        &[
            "config",
            "show",
            "--json",
            "--config",
            file.to_str().unwrap(),
        ],
        b"",
    );
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["max_agent_iterations"], 7);
}

// --- aintern run ----------------------------------------------------------------------------

use core_models::AgentEvent;
use std::io::{BufRead, BufReader};

struct Workspace {
    dir: tempfile::TempDir,
    /// The user's config folder for the runs over this workspace.
    home: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "Buy milk. Call Bob.\n").unwrap();
        Workspace {
            dir,
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    /// Write a script whose responses are these texts (each one chunk).
    fn script(&self, responses: &[&str]) -> String {
        let file = self.dir.path().join("script.json");
        let responses: Vec<Value> = responses
            .iter()
            .map(|r| json!({"chunks": [r], "delay_ms": 0}))
            .collect();
        std::fs::write(&file, json!({"responses": responses}).to_string()).unwrap();
        format!("script:{}", file.display())
    }
}

fn call(tool: &str, args: Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": tool, "arguments": args})
    )
}

fn events(stdout: &[u8]) -> Vec<AgentEvent> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not an event ({e}): {l}")))
        .collect()
}

/// A successful `run --json`: its events and the final `agent_complete`.
fn completed(out: &Output) -> (Vec<AgentEvent>, core_models::AgentCompleteEvent) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = events(&out.stdout);
    let Some(AgentEvent::AgentComplete(done)) = events.last().cloned() else {
        panic!("{:?}", events.last())
    };
    (events, done)
}

fn results(events: &[AgentEvent]) -> Vec<core_models::ToolResultEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// Start `aintern run --json` over `ws` with `script`; hand back the child, its stdin and
/// its stdout lines.
fn spawn_json(
    ws: &Workspace,
    script: &str,
    message: &str,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let mut child = bin(ws.home.path())
        .args([
            "run",
            "--json",
            "--workspace",
            ws.path(),
            "--backend",
            script,
            message,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, stdout)
}

fn run_json(
    ws: &Workspace,
    script: &str,
    extra: &[&str],
    stdin: &[u8],
) -> (Output, Vec<AgentEvent>) {
    let mut args = vec![
        "run",
        "--json",
        "--workspace",
        ws.path(),
        "--backend",
        script,
    ];
    args.extend_from_slice(extra);
    args.push("do it");
    let out = aintern_in(ws.home.path(), &args, stdin);
    let ev = events(&out.stdout);
    (out, ev)
}

#[test]
fn run_json_prints_every_event_and_reads_files() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        "It says to buy milk.",
    ]);
    let (out, events) = run_json(&ws, &script, &[], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = events.last().unwrap();
    assert_eq!(last.event_type(), "agent_complete");
    let AgentEvent::AgentComplete(done) = last else {
        unreachable!()
    };
    assert_eq!(done.final_response, "It says to buy milk.");
    assert_eq!(results(&events)[0].result.content, "Buy milk. Call Bob.\n");
    // The raw JSON lines have the agreed shape.
    let first: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(first["type"], "agent_complete");
    assert_eq!(first["reason"], "finished");
    assert!(first["total_duration_ms"].is_u64());
}

#[test]
fn run_refuses_paths_outside_the_workspace() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "../../etc/passwd"})),
        "Refused.",
    ]);
    let (out, events) = run_json(&ws, &script, &[], b"");
    assert!(out.status.success());
    let r = &results(&events)[0];
    assert!(!r.result.success);
    assert!(r
        .result
        .error_message
        .as_deref()
        .unwrap()
        .contains("leads outside the workspace"));
}

#[test]
fn run_approvals_over_stdin() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("write_file", json!({"path": "out.txt", "content": "hi"})),
        "Written.",
    ]);
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "write it");
    let mut events = Vec::new();
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if let AgentEvent::ApprovalRequest(a) = &event {
            assert_eq!(a.request.tool_id, "write_file");
            let command = json!({"op": "approve", "call_id": a.request.id, "remember": "none"});
            writeln!(stdin, "not a command").unwrap();
            writeln!(stdin, "{command}").unwrap();
        }
        events.push(event);
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("out.txt")).unwrap(),
        "hi"
    );
    assert!(results(&events)[0].success());
}

#[test]
fn run_deny_over_stdin_and_approve_modes() {
    let ws = Workspace::new();
    let write = call("write_file", json!({"path": "out.txt", "content": "hi"}));
    let script = ws.script(&[&write, "Not written."]);
    let (out, events) = run_json(&ws, &script, &["--approve", "none"], b"");
    assert!(out.status.success());
    assert!(results(&events)[0]
        .result
        .error_message
        .as_deref()
        .unwrap()
        .contains("Denied by the user"));
    assert!(!ws.dir.path().join("out.txt").exists());

    let (_, events) = run_json(&ws, &script, &["--approve", "safe"], b"");
    assert!(
        !results(&events)[0].success(),
        "medium risk is denied by --approve safe"
    );

    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    assert!(out.status.success());
    assert!(results(&events)[0].success());
    assert!(ws.dir.path().join("out.txt").exists());
}

#[test]
fn run_cancel_over_stdin() {
    let ws = Workspace::new();
    let file = ws.dir.path().join("slow.json");
    std::fs::write(
        &file,
        json!({"responses": [{"chunks": vec!["tok "; 300], "delay_ms": 20}]}).to_string(),
    )
    .unwrap();
    let script = format!("script:{}", file.display());
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "slow");
    let mut last = None;
    let mut sent = false;
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if !sent && matches!(&event, AgentEvent::TextGeneration(_)) {
            writeln!(stdin, "{}", json!({"op": "cancel"})).unwrap();
            sent = true;
        }
        last = Some(event);
    }
    assert!(
        child.wait().unwrap().success(),
        "a cancelled request exits 0"
    );
    let Some(AgentEvent::AgentComplete(done)) = last else {
        panic!("{last:?}")
    };
    assert!(done.was_cancelled);
}

#[test]
fn run_reports_model_failures_and_usage_errors() {
    let ws = Workspace::new();
    let script = ws.script(&[&call("read_file", json!({"path": "notes.txt"}))]);
    let (out, events) = run_json(&ws, &script, &[], b"");
    assert!(
        !out.status.success(),
        "the script ran out: the request failed"
    );
    let Some(AgentEvent::AgentError(e)) = events.last() else {
        panic!()
    };
    assert!(e.error.contains("no response left"), "{}", e.error);

    let cases: [(&[&str], &str); 5] = [
        (
            &["run", "--backend", "script:/nonexistent.json", "x"],
            "cannot read the script",
        ),
        (&["run", "--backend", "gpt:4", "x"], "unknown backend"),
        (
            &["run", "--backend", "llama:model.gguf", "x"],
            "does not exist",
        ),
        (
            &["run", "--timeout", "1", "--backend", "script:x", "x"],
            "--timeout",
        ),
        (&["run", "--tool-choice", "", "x"], "tool choice"),
    ];
    for (args, message) in cases {
        let out = aintern(args, b"");
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
    }
    let bad = ws.dir.path().join("bad.json");
    std::fs::write(&bad, "{\"responses\": 3}").unwrap();
    let out = aintern(
        &[
            "run",
            "--workspace",
            ws.path(),
            "--backend",
            &format!("script:{}", bad.display()),
            "x",
        ],
        b"",
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not valid"));
}

#[test]
fn run_timeout_lowers_the_tool_timeout() {
    let ws = Workspace::new();
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "tool_execution_timeout_ms = 60000\n",
    )
    .unwrap();
    let script = ws.script(&["fine"]);
    let (out, events) = run_json(&ws, &script, &["--timeout", "5"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(events.last().unwrap().event_type(), "agent_complete");
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "max_agent_iterations = 0\n",
    )
    .unwrap();
    let out = aintern(
        &["run", "--workspace", ws.path(), "--backend", &script, "x"],
        b"",
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_agent_iterations"));
}

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

// --- the agent at work: tools, permissions, cancellation, configuration, the terminal ------

/// The text of each tool result, in order.
fn result_texts(events: &[AgentEvent]) -> Vec<String> {
    results(events)
        .iter()
        .map(|r| match &r.result.error_message {
            Some(e) => format!("error: {e}"),
            None => r.result.content.clone(),
        })
        .collect()
}

#[test]
fn run_reads_edits_and_runs_a_command() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        &call(
            "edit_file",
            json!({"path": "notes.txt", "search": "milk", "replace": "oat milk"}),
        ),
        &call(
            "run_command",
            json!({"command": "cat notes.txt && echo done"}),
        ),
        "Done.",
    ]);
    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    let (_, done) = completed(&out);
    assert_eq!((done.tool_calls_executed, done.total_iterations), (3, 4));
    let texts = result_texts(&events);
    assert_eq!(texts[0], "Buy milk. Call Bob.\n");
    assert!(
        texts[2].contains("Buy oat milk. Call Bob.\ndone\n"),
        "{texts:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("notes.txt")).unwrap(),
        "Buy oat milk. Call Bob.\n"
    );

    // The same for a person: each call with its summary and risk, then the statistics.
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        &call("run_command", json!({"command": "rm -r gone"})),
        "Done.",
    ]);
    let out = aintern_in(
        ws.home.path(),
        &[
            "run",
            "--approve",
            "all",
            "--workspace",
            ws.path(),
            "--backend",
            &script,
            "go",
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("→ Read notes.txt (safe risk)\n✓ Read File ("),
        "{text}"
    );
    assert!(
        text.contains(
            "→ Run `rm -r gone` (high risk)\n✗ Run Command: the command exited with code 1\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("Done.\n— 3 iterations · 2 tool calls · "),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no colour when stdout is not a terminal: {text:?}"
    );
}

#[test]
fn permissions_persist_across_runs() {
    let ws = Workspace::new();
    let home = ws.home.path();
    let write = |name: &str| call("write_file", json!({"path": name, "content": "hi"}));
    let approvals = |events: &[AgentEvent]| {
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::ApprovalRequest(_)))
            .count()
    };

    // "Always for this tool" at the first approval …
    let script = ws.script(&[&write("a.txt"), "ok"]);
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "write a");
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        if let AgentEvent::ApprovalRequest(a) = &event {
            let command = json!({"op": "approve", "call_id": a.request.id, "remember": "tool"});
            writeln!(stdin, "{command}").unwrap();
        }
    }
    assert!(child.wait().unwrap().success());
    let saved = std::fs::read_to_string(home.join("aintern/permissions.json")).unwrap();
    assert!(saved.contains("\"always_allow\": true"), "{saved}");

    // … is remembered by the next run, which asks nothing.
    let script = ws.script(&[&write("b.txt"), "ok"]);
    let (out, events) = run_json(&ws, &script, &[], b"");
    assert!(out.status.success());
    assert_eq!(approvals(&events), 0);
    assert!(ws.dir.path().join("b.txt").exists());

    let list = aintern_in(home, &["permissions", "list"], b"");
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("write_file     always allow"), "{text}");
    let deny = aintern_in(
        home,
        &["permissions", "deny", "run_command", "--pattern", "rm *"],
        b"",
    );
    assert!(deny.status.success());
    let text = String::from_utf8_lossy(&aintern_in(home, &["permissions", "list"], b"").stdout)
        .into_owned();
    assert!(text.contains("run_command    deny rm *"), "{text}");

    // A saved deny refuses without asking, even with --approve all.
    let script = ws.script(&[
        &call("run_command", json!({"command": "rm notes.txt"})),
        "ok",
    ]);
    let (_, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    assert_eq!(approvals(&events), 0);
    assert!(
        result_texts(&events)[0].contains("denied"),
        "{:?}",
        result_texts(&events)
    );
    assert!(ws.dir.path().join("notes.txt").exists());

    // Reset: write_file is asked about again (and denied: stdin ended, nobody answers).
    let reset = aintern_in(home, &["permissions", "reset", "write_file"], b"");
    assert!(
        String::from_utf8_lossy(&reset.stdout).contains("write_file: saved permissions forgotten")
    );
    let script = ws.script(&[&write("c.txt"), "ok"]);
    let (_, events) = run_json(&ws, &script, &[], b"");
    assert_eq!(approvals(&events), 1);
    assert!(
        result_texts(&events)[0].contains("stdin ended"),
        "{:?}",
        result_texts(&events)
    );
    assert!(!ws.dir.path().join("c.txt").exists());

    let reset = aintern_in(home, &["permissions", "reset"], b"");
    assert!(String::from_utf8_lossy(&reset.stdout)
        .contains("forgot the saved permissions of 1 tool(s)"));
    let unknown = aintern_in(home, &["permissions", "allow", "nosuch"], b"");
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr)
        .contains("unknown tool 'nosuch' (tools: read_file"));

    // A corrupt file is an error in words, never "allow".
    std::fs::write(home.join("aintern/permissions.json"), "garbage").unwrap();
    let list = aintern_in(home, &["permissions", "list"], b"");
    assert!(!list.status.success());
    assert!(String::from_utf8_lossy(&list.stderr).contains("is corrupt"));
}

#[test]
fn cancelling_a_running_command_kills_its_process_group() {
    let ws = Workspace::new();
    let script = ws.script(&[&call(
        "run_command",
        json!({"command": "sleep 300 & echo $! > bg.pid; sleep 300"}),
    )]);
    let (mut child, mut stdin, stdout) = spawn_json(&ws, &script, "sleep");
    let pid_file = ws.dir.path().join("bg.pid");
    let mut last = None;
    let mut background = None;
    for line in stdout {
        let event: AgentEvent = serde_json::from_str(&line.unwrap()).unwrap();
        match &event {
            AgentEvent::ApprovalRequest(a) => {
                let command = json!({"op": "approve", "call_id": a.request.id});
                writeln!(stdin, "{command}").unwrap();
            }
            AgentEvent::ToolExecution(_) if background.is_none() => {
                for _ in 0..200 {
                    background = written_pid(&pid_file);
                    if background.is_some() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                assert!(!process_gone(background.unwrap()));
                writeln!(stdin, "{}", json!({"op": "cancel"})).unwrap();
            }
            _ => {}
        }
        last = Some(event);
    }
    assert!(child.wait().unwrap().success());
    let Some(AgentEvent::AgentComplete(done)) = last else {
        panic!("{last:?}")
    };
    assert!(done.was_cancelled);
    let pid = background.expect("the command started");
    assert!(
        process_gone(pid),
        "the background sleep {pid} outlived the cancel"
    );
}

#[test]
fn configuration_layers_and_invalid_configuration() {
    let ws = Workspace::new();
    let home = ws.home.path();
    std::fs::create_dir_all(home.join("aintern")).unwrap();
    std::fs::write(
        home.join("aintern/aintern.toml"),
        "max_agent_iterations = 7\nmax_parallel_tool_calls = 2\n",
    )
    .unwrap();
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "max_parallel_tool_calls = 4\n",
    )
    .unwrap();
    let out = aintern_in(
        home,
        &["config", "show", "--json", "--workspace", ws.path()],
        b"",
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            v["max_agent_iterations"].as_u64(),
            v["max_parallel_tool_calls"].as_u64()
        ),
        (Some(7), Some(4))
    );

    // Every problem is listed, and nothing runs.
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "max_parallel_tool_calls = 0\n[formatters.fmt]\nextensions = []\ncommand = [\"fmt\"]\n",
    )
    .unwrap();
    let script = ws.script(&[&call(
        "write_file",
        json!({"path": "x.txt", "content": "x"}),
    )]);
    let out = aintern_in(
        home,
        &["run", "--workspace", ws.path(), "--backend", &script, "x"],
        b"",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("max_parallel_tool_calls") && err.contains("fmt: extensions"),
        "{err}"
    );
    assert!(!ws.dir.path().join("x.txt").exists());
}

#[test]
fn formatters_from_the_config_run_on_written_files() {
    let ws = Workspace::new();
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "[formatters.tidy]\nextensions = [\"txt\"]\ncommand = [\"sed\", \"-i\", \"s/messy/clean/\"]\n",
    )
    .unwrap();
    let script = ws.script(&[
        &call("write_file", json!({"path": "new.txt", "content": "messy"})),
        "ok",
    ]);
    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    completed(&out);
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::Autoformat(a) if a.changed_files == ["new.txt"])));
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("new.txt")).unwrap(),
        "clean"
    );
}

#[test]
fn exec_is_run_json_and_chat_carries_on_over_piped_lines() {
    let ws = Workspace::new();
    let script = ws.script(&["First answer.", "Second answer."]);
    let out = aintern_in(
        ws.home.path(),
        &["exec", "--workspace", ws.path(), "--backend", &script, "hi"],
        b"",
    );
    let (_, done) = completed(&out);
    assert_eq!(done.final_response, "First answer.");

    let out = aintern_in(
        ws.home.path(),
        &["chat", "--workspace", ws.path(), "--backend", &script],
        b"hello\n\nand again\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // The second line arrives while the model writes the first reply: it is the next
    // request, never lost.
    let first = text.find("First answer.").expect("first answer");
    let second = text.find("Second answer.").expect("second answer");
    assert!(first < second, "{text}");
    assert!(text[second..].contains("\n— 1 iteration · "), "{text}");
}

// --- under a pseudo-terminal ----------------------------------------------------------------

fn pty(ws: &Workspace, args: &[&str]) -> expectrl::Session {
    let mut command = bin(ws.home.path());
    command.args(args);
    let mut session = expectrl::Session::spawn(command).unwrap();
    session.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
    session
}

#[test]
fn the_approval_prompt_under_a_terminal() {
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("write_file", json!({"path": "a.txt", "content": "hi"})),
        &call("write_file", json!({"path": "b.txt", "content": "hi"})),
        "Both written.",
    ]);
    let mut p = pty(
        &ws,
        &[
            "run",
            "--workspace",
            ws.path(),
            "--backend",
            &script,
            "write",
        ],
    );
    p.expect("Write 2 bytes to a.txt").unwrap();
    p.expect("Approve? [y]es / [n]o / always this [s]ession / always for this [t]ool, in every workspace: ")
        .unwrap();
    p.send_line("t").unwrap();
    // The second write is not asked about: the first answer was "always for this tool".
    let rest = p.expect("Both written.").unwrap();
    let before = String::from_utf8_lossy(rest.before()).into_owned();
    assert!(!before.contains("Approve?"), "{before}");
    assert!(
        before.contains('\u{1b}'),
        "colour on a terminal: {before:?}"
    );
    p.expect(expectrl::Eof).unwrap();
    assert!(ws.dir.path().join("a.txt").exists() && ws.dir.path().join("b.txt").exists());
    let saved = std::fs::read_to_string(ws.home.path().join("aintern/permissions.json")).unwrap();
    assert!(saved.contains("write_file"), "{saved}");

    // NO_COLOR: the same terminal, no colour; "n" denies.
    let ws = Workspace::new();
    let script = ws.script(&[
        &call("write_file", json!({"path": "a.txt", "content": "hi"})),
        "Fine.",
    ]);
    let mut command = bin(ws.home.path());
    command.env("NO_COLOR", "1").args([
        "run",
        "--workspace",
        ws.path(),
        "--backend",
        &script,
        "write",
    ]);
    let mut p = expectrl::Session::spawn(command).unwrap();
    p.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
    p.expect("in every workspace: ").unwrap();
    p.send_line("n").unwrap();
    let rest = p.expect("Fine.").unwrap();
    let before = String::from_utf8_lossy(rest.before()).into_owned();
    assert!(
        before.contains("✗ Write File: Denied by the user"),
        "{before}"
    );
    assert!(
        !before.contains("\u{1b}[3"),
        "no colour with NO_COLOR: {before:?}"
    );
    assert!(!ws.dir.path().join("a.txt").exists());
}

#[test]
fn ctrl_c_in_chat_cancels_the_request_not_the_chat() {
    let ws = Workspace::new();
    let file = ws.dir.path().join("slow.json");
    std::fs::write(
        &file,
        json!({"responses": [
            {"chunks": vec!["tok "; 500], "delay_ms": 20},
            {"chunks": ["Still here."], "delay_ms": 0}
        ]})
        .to_string(),
    )
    .unwrap();
    let script = format!("script:{}", file.display());
    let mut p = pty(
        &ws,
        &["chat", "--workspace", ws.path(), "--backend", &script],
    );
    p.expect("› ").unwrap();
    p.send_line("talk slowly").unwrap();
    p.expect("tok tok tok").unwrap();
    p.send(expectrl::ControlCode::EndOfText).unwrap();
    p.expect("cancelled").unwrap();
    p.expect("› ").unwrap();
    p.send_line("are you there?").unwrap();
    p.expect("Still here.").unwrap();
    p.expect("› ").unwrap();
    p.send_line("/exit").unwrap();
    p.expect(expectrl::Eof).unwrap();
}
