//! `aintern eval`: the checks of a suite judged right (with a scripted model), failures
//! named by their check, the JSON and Markdown reports in their documented shape, and
//! the shipped suite run on the small model (shape only: the model's success rate is
//! a measurement, not a test).

use super::{aintern_in, call, Workspace};
use serde_json::{json, Value};

/// A suite file in `ws` from these tasks.
fn suite(ws: &Workspace, tasks: &[Value]) -> String {
    let file = ws.dir.path().join("suite.jsonl");
    let mut text = String::from("# a test suite\n\n");
    for task in tasks {
        text.push_str(&task.to_string());
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

fn report(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn checks_are_judged_and_each_failure_names_its_check() {
    let ws = Workspace::new();
    let suite = suite(
        &ws,
        &[
            json!({"id": "read-ok", "request": "What do I need to buy? See notes.txt",
                   "files": {"notes.txt": "Buy milk.\n"},
                   "expect": {"tool_calls": [{"tool": "read_file", "arguments": {"path": "notes.txt"}}],
                              "answer": {"contains": "MILK"}, "max_iterations": 2}}),
            json!({"id": "answer-wrong", "request": "Say hello",
                   "expect": {"tool_calls": [], "answer": {"contains": "hello"}}}),
            json!({"id": "file-missing", "request": "Write x to out.txt",
                   "expect": {"files": {"out.txt": "x", "notes.txt": null}}}),
            json!({"id": "wrong-call", "request": "Read a.txt", "files": {"a.txt": "A"},
                   "expect": {"tool_calls": [{"tool": "read_file", "patterns": {"path": "^a\\.txt$"}}]}}),
        ],
    );
    let script = ws.script(&[
        &call("read_file", json!({"path": "notes.txt"})),
        "You need milk.",
        "bye",
        "ok",
        &call("list_dir", json!({})),
        "Here they are.",
    ]);
    let out_dir = ws.dir.path().join("report");
    let out = aintern_in(
        ws.home.path(),
        &[
            "eval",
            &suite,
            "--backend",
            &script,
            "--json",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        b"",
    );
    let report = report(&out);
    let summary = &report["summary"];
    assert_eq!(summary["tasks"], 4);
    assert_eq!(summary["runs"], 4);
    assert_eq!(summary["passed_runs"], 1);
    assert_eq!(summary["success_rate"], 0.25);
    assert_eq!(summary["tasks_always_passed"], 1);
    assert_eq!(
        summary["tool_call_accuracy"],
        json!(2.0 / 3.0),
        "1 + 1 (no call) + 0"
    );
    assert!(summary["median_wall_ms"].as_u64().is_some());
    assert_eq!(report["repeat"], 1);
    assert_eq!(report["concurrency"], 1);
    let tasks = report["tasks"].as_array().unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["read-ok", "answer-wrong", "file-missing", "wrong-call"]
    );
    let run = |i: usize| &tasks[i]["runs"][0];

    assert_eq!(run(0)["passed"], true, "{}", run(0));
    assert_eq!(run(0)["failed_check"], Value::Null);
    assert_eq!(
        run(0)["tool_calls"],
        json!([{"tool": "read_file", "arguments": {"path": "notes.txt"}, "succeeded": true}])
    );
    assert_eq!(run(0)["tool_call_accuracy"], 1.0);
    assert_eq!(run(0)["iterations"], 2);
    assert_eq!(run(0)["answer"], "You need milk.");
    assert_eq!(tasks[0]["success_rate"], 1.0);

    assert_eq!(run(1)["failed_check"], "answer");
    let message = run(1)["failures"][0]["message"].as_str().unwrap();
    assert_eq!(message, "the answer does not contain \"hello\": \"bye\"");

    assert_eq!(run(2)["failed_check"], "files");
    let messages: Vec<&str> = run(2)["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["out.txt: does not exist"],
        "notes.txt is absent there, as asked"
    );
    assert_eq!(run(2)["tool_call_accuracy"], Value::Null);

    assert_eq!(run(3)["failed_check"], "tool_calls");
    let message = run(3)["failures"][0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "expected read_file(path~/^a\\.txt$/) (call 1 of 1); the model made list_dir({})"
        ),
        "{message}"
    );
    assert_eq!(run(3)["tool_call_accuracy"], 0.0);

    // The Markdown report and each run's events.
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("| success | 1 of 4 runs (25%) |"), "{md}");
    assert!(md.contains("| answer-wrong | 0/1 |"), "{md}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(saved["summary"], report["summary"]);
    let events = std::fs::read_to_string(out_dir.join("runs").join("read-ok-1.jsonl")).unwrap();
    assert!(
        events
            .lines()
            .any(|l| l.contains("\"type\":\"agent_complete\"")),
        "{events}"
    );
}

#[test]
fn repeats_give_a_success_rate_per_task_and_the_summary_is_printed() {
    let ws = Workspace::new();
    let suite = suite(
        &ws,
        &[
            json!({"id": "hello", "request": "Say hello", "expect": {"answer": {"matches": "^hello"}}}),
        ],
    );
    let script = ws.script(&["hello there", "goodbye", "hello again"]);
    let out = aintern_in(
        ws.home.path(),
        &[
            "eval",
            &suite,
            "--backend",
            &script,
            "--repeat",
            "3",
            "--json",
        ],
        b"",
    );
    let report = report(&out);
    assert_eq!(report["repeat"], 3);
    let task = &report["tasks"][0];
    assert_eq!(task["runs"].as_array().unwrap().len(), 3);
    assert_eq!(task["passed"], 2);
    assert_eq!(task["success_rate"], json!(2.0 / 3.0));
    assert_eq!(report["summary"]["tasks_always_passed"], 0);

    // Without --json: a line per run and the summary; --fail-under gates on the rate.
    let script = ws.script(&["hello", "no"]);
    let out = aintern_in(
        ws.home.path(),
        &[
            "eval",
            &suite,
            "--backend",
            &script,
            "--repeat",
            "2",
            "--fail-under",
            "60",
        ],
        b"",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pass hello [1/2]"), "{stdout}");
    assert!(
        stdout.contains("FAIL hello [2/2]")
            && stdout.contains("answer: the answer does not match /^hello/"),
        "{stdout}"
    );
    assert!(stdout.contains("1 of 2 runs passed (50%)"), "{stdout}");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("50% of runs passed, under --fail-under 60%")
    );
}

#[test]
fn a_broken_suite_is_refused_before_any_model_runs() {
    let ws = Workspace::new();
    let file = ws.dir.path().join("bad.jsonl");
    std::fs::write(&file, "{\"id\": \"a\", \"request\": \"r\"}\n{\"id\": \"b\", \"request\": \"r\", \"files\": {\"../x\": \"\"}}\n").unwrap();
    let out = aintern_in(
        ws.home.path(),
        &[
            "eval",
            file.to_str().unwrap(),
            "--backend",
            "script:/nonexistent",
        ],
        b"",
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2: task 'b': '../x' is not a path inside the workspace"),
        "{stderr}"
    );
}

/// The shipped suite, a few tasks of each kind, on the small model: the harness runs them
/// end to end in their own workspaces and reports each in the documented shape.
#[test]
fn a_subset_of_the_shipped_suite_runs_on_the_small_model() {
    let Some(model) = super::model::small_model() else {
        return;
    };
    let backend = format!("llama:{}", model.display());
    let ws = Workspace::new();
    let suite = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/eval/basic.jsonl"
    );
    let only = [
        "read-inventory",
        "list-files",
        "write-hello",
        "cmd-echo",
        "chat-capital",
        "edit-typo",
    ];
    let mut args = vec!["eval", suite, "--json", "--backend", &backend];
    for id in &only {
        args.extend(["--only", id]);
    }
    let out = aintern_in(ws.home.path(), &args, b"");
    let report = report(&out);
    assert_eq!(report["backend"], backend);
    assert_eq!(report["summary"]["runs"], only.len());
    let tasks = report["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), only.len());
    for task in tasks {
        let run = &task["runs"][0];
        let failures = run["failures"].as_array().unwrap();
        assert_eq!(run["passed"], failures.is_empty(), "{run}");
        assert_eq!(
            run["failed_check"],
            failures.first().map_or(Value::Null, |f| f["check"].clone())
        );
        assert!(run["wall_ms"].as_u64().unwrap() > 0, "{run}");
        assert!(run["completion_tokens"].as_u64().unwrap() > 0, "{run}");
        assert!(run["iterations"].as_u64().unwrap() >= 1, "{run}");
        assert!(run["error"].is_null(), "{run}");
    }
    eprintln!("{}", report["summary"]);
}
