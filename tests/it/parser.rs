//! The tool-call parser: every format and robustness case, batch and streaming alike.

use core_models::{RiskLevel, ToolDefinition};
use serde_json::{json, Value};
use services_ai::{
    FunctionCallParser, ParsedOutput, ParserOptions, StreamingFunctionCallParser, ToolCallFormat,
    ToolCatalog,
};

fn parser() -> FunctionCallParser {
    FunctionCallParser::new(catalog())
}

pub(super) fn catalog() -> ToolCatalog {
    ToolCatalog::from_definitions([
        ToolDefinition::new("read_file", "Read File", "read")
            .with_risk(RiskLevel::Safe)
            .with_schema(json!({"type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}}})),
        ToolDefinition::new("run", "Run", "run").with_risk(RiskLevel::High).with_schema(json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer"},
                "ratio": {"type": "number"},
                "dry_run": {"type": "boolean"},
                "env": {"type": "object"},
                "args": {"type": "array"},
                "nothing": {"type": ["null", "string"]}
            }
        })),
    ])
}

/// Feed `input` in the given pieces.
fn stream(parser: &mut StreamingFunctionCallParser, pieces: &[&str]) -> ParsedOutput {
    let mut out = ParsedOutput::default();
    for piece in pieces {
        out.extend(parser.process_token(piece));
    }
    out.extend(parser.flush());
    out
}

fn calls_of(out: &ParsedOutput) -> Vec<(String, Value)> {
    out.tool_calls
        .iter()
        .map(|c| (c.tool_id.clone(), Value::clone(&c.parameters)))
        .collect()
}

/// Pieces of `input` of `size` characters.
fn pieces(input: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = input.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Streaming equals batch for char-by-char feeding, several sizes and every two-piece split.
fn assert_split_invariant(p: &FunctionCallParser, input: &str) {
    let batch = p.parse_all(input);
    let want = (
        batch.text.clone(),
        batch.thinking.clone(),
        calls_of(&batch),
        batch.diagnostics.len(),
    );
    let check = |split: Vec<String>, label: &str| {
        let refs: Vec<&str> = split.iter().map(String::as_str).collect();
        let got = stream(&mut p.streaming(), &refs);
        assert_eq!(
            (
                got.text.clone(),
                got.thinking.clone(),
                calls_of(&got),
                got.diagnostics.len()
            ),
            want,
            "{label} on {input:?}"
        );
    };
    for size in [1, 2, 3, 5, 7, 13] {
        check(pieces(input, size), &format!("pieces of {size}"));
    }
    let boundaries: Vec<usize> = input
        .char_indices()
        .map(|(i, _)| i)
        .chain([input.len()])
        .collect();
    for &b in &boundaries {
        check(
            vec![input[..b].to_string(), input[b..].to_string()],
            &format!("split at {b}"),
        );
    }
    // A reused parser after reset behaves like a new one.
    let mut reused = p.streaming();
    let _ = stream(&mut reused, &["<tool_call>{\"name\": \"x\""]);
    reused.reset();
    let again = stream(&mut reused, &[input]);
    assert_eq!(calls_of(&again), calls_of(&batch));
}

pub(super) fn check_with(
    p: &FunctionCallParser,
    input: &str,
    text: &str,
    thinking: &str,
    calls: &[(&str, Value)],
    diagnostics: usize,
) {
    let out = p.parse_all(input).trimmed();
    let want: Vec<(String, Value)> = calls
        .iter()
        .map(|(t, v)| (t.to_string(), v.clone()))
        .collect();
    assert_eq!(calls_of(&out), want, "calls of {input:?}");
    assert_eq!(out.text, text, "text of {input:?}");
    assert_eq!(out.thinking, thinking, "thinking of {input:?}");
    assert_eq!(
        out.diagnostics.len(),
        diagnostics,
        "diagnostics of {input:?}: {:?}",
        out.diagnostics
    );
    assert_split_invariant(p, input);
}

fn check(input: &str, text: &str, calls: &[(&str, Value)]) {
    check_with(&parser(), input, text, "", calls, 0);
}

fn check_diag(input: &str, text: &str, calls: &[(&str, Value)], diagnostics: usize) {
    check_with(&parser(), input, text, "", calls, diagnostics);
}

// --- seed 001 part j -----------------------------------------------------------------

#[test]
fn seed_valid_tool_call_block() {
    let input = "Here's what I'll do:\n\n```tool_call\n{\n  \"tool\": \"read_file\",\n  \"parameters\": { \"path\": \"src/Program.cs\" }\n}\n```\n\nThis will read the file.";
    check(
        input,
        "Here's what I'll do:\n\nThis will read the file.",
        &[("read_file", json!({"path": "src/Program.cs"}))],
    );
    let call = &parser().parse(input)[0];
    assert_eq!(call.tool_name, "Read File");
    assert_eq!(call.risk_level, RiskLevel::Safe);
    assert!(call
        .raw_json
        .as_deref()
        .unwrap()
        .contains("\"tool\": \"read_file\""));
}

#[test]
fn seed_multiple_tool_calls_and_unknown_tools() {
    let input = "```tool_call\n{ \"tool\": \"file-read\", \"parameters\": { \"path\": \"a.txt\" } }\n```\n\n```tool_call\n{ \"tool\": \"file-read\", \"parameters\": { \"path\": \"b.txt\" } }\n```";
    check(
        input,
        "",
        &[
            ("file-read", json!({"path": "a.txt"})),
            ("file-read", json!({"path": "b.txt"})),
        ],
    );
    let call = &parser().parse(input)[0];
    assert_eq!(
        (
            call.tool_name.as_str(),
            call.risk_level,
            call.execution_summary.as_str()
        ),
        ("file-read", RiskLevel::Medium, "Execute file-read")
    );
}

#[test]
fn seed_no_tool_calls() {
    check(
        "Just a regular response without any tool calls.",
        "Just a regular response without any tool calls.",
        &[],
    );
}

#[test]
fn seed_malformed_json_is_a_diagnostic() {
    check_diag("```tool_call\n{ invalid json }\n```", "", &[], 1);
    check_diag(
        "Before\n```tool_call\n{\"tool\": \"x\", \"parameters\": [1]}\n```\nAfter",
        "Before\nAfter",
        &[],
        1,
    );
}

#[test]
fn seed_extract_text_removes_blocks() {
    let input =
        "Start text.\n\n```tool_call\n{ \"tool\": \"test\", \"parameters\": {} }\n```\n\nEnd text.";
    let text = parser().extract_text(input);
    assert_eq!(text, "Start text.\n\nEnd text.");
    assert!(!text.contains("tool_call"));
}

// --- formats -------------------------------------------------------------------------

#[test]
fn fenced_and_inline_json() {
    check(
        "```tool_call {\"tool\": \"t\", \"parameters\": {}}```",
        "",
        &[("t", json!({}))],
    );
    check(
        "```tool_call\n{\"tool\": \"t\"}\n```",
        "",
        &[("t", json!({}))],
    );
    check(
        "```tool_call\n[{\"tool\": \"a\"}, {\"name\": \"b\", \"args\": {\"x\": 1}}]\n```",
        "",
        &[("a", json!({})), ("b", json!({"x": 1}))],
    );
    check(
        "Sure {\"tool\": \"t\", \"parameters\": {\"a\": 1}} done",
        "Sure  done",
        &[("t", json!({"a": 1}))],
    );
    check(
        "{\"parameters\": {\"a\": [1, {\"b\": null}]}, \"tool\": \"t\"}",
        "",
        &[("t", json!({"a": [1, {"b": null}]}))],
    );
    check(
        "x {\"tool\": \"t\", \"arguments\": \"{\\\"a\\\": 2}\"} y",
        "x  y",
        &[("t", json!({"a": 2}))],
    );
    // Objects that are not calls stay text.
    check("config is {\"a\": 1} ok", "config is {\"a\": 1} ok", &[]);
    check(
        "say {\"tool\": \"t\"} (no arguments)",
        "say {\"tool\": \"t\"} (no arguments)",
        &[],
    );
    check(
        "a {\"name\": \"t\", \"arguments\": {}} in prose",
        "a {\"name\": \"t\", \"arguments\": {}} in prose",
        &[],
    );
    // A ```json fence holding a call is a call; any other ```json fence is code.
    check(
        "```json\n{\"tool\": \"t\", \"parameters\": {}}\n```\nok",
        "ok",
        &[("t", json!({}))],
    );
    check("```json\n{\"a\": 1}\n```", "```json\n{\"a\": 1}\n```", &[]);
    check(
        "```json\n{\"a\": 1} trailing\n```",
        "```json\n{\"a\": 1} trailing\n```",
        &[],
    );
    check(
        "```json\nnot json {\"tool\": \"t\", \"parameters\": {}}\n```",
        "```json\nnot json {\"tool\": \"t\", \"parameters\": {}}\n```",
        &[],
    );
}

#[test]
fn hermes_and_qwen() {
    check(
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
        "",
        &[("read_file", json!({"path": "a"}))],
    );
    check(
        "Let me look.<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>",
        "Let me look.",
        &[("a", json!({})), ("b", json!({}))],
    );
    check(
        "<tool_call>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\"}]</tool_call>",
        "",
        &[("a", json!({})), ("b", json!({}))],
    );
    check(
        "<tool_call>{\"function\": \"f\", \"parameters\": {\"q\": \"x\"}}</tool_call>",
        "",
        &[("f", json!({"q": "x"}))],
    );
    check(
        "<tool_call>{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": \"{\\\"q\\\": 1}\"}}</tool_call>",
        "",
        &[("f", json!({"q": 1}))],
    );
    // Complete call, closing marker missing at the very end: still a call.
    check(
        "<tool_call>{\"name\": \"a\", \"arguments\": {}}",
        "",
        &[("a", json!({}))],
    );
    check(
        "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_",
        "",
        &[("a", json!({}))],
    );
    // Incomplete: text plus a diagnostic.
    check_diag(
        "<tool_call>{\"name\": \"a\", \"argu",
        "<tool_call>{\"name\": \"a\", \"argu",
        &[],
        1,
    );
    check_diag("<tool_call>{\"name\": 3}</tool_call>ok", "ok", &[], 1);
    check_diag(
        "<tool_call>{\"name\": \"a\"} extra</tool_call>ok",
        "ok",
        &[],
        1,
    );
    check_diag("<tool_call>hello world</tool_call>ok", "ok", &[], 1);
}

#[test]
fn qwen3_coder_xml() {
    let input = "<tool_call>\n<function=run>\n<parameter=command>\nls -la\n</parameter>\n<parameter=timeout>\n30\n</parameter>\n<parameter=ratio>0.5</parameter>\n<parameter=dry_run>true</parameter>\n<parameter=env>{\"A\": \"1\"}</parameter>\n<parameter=args>[1, 2]</parameter>\n<parameter=nothing>null</parameter>\n<parameter=free>\n\ntwo newlines\n\n</parameter>\n</function>\n</tool_call>";
    check(
        input,
        "",
        &[(
            "run",
            json!({"command": "ls -la", "timeout": 30, "ratio": 0.5, "dry_run": true, "env": {"A": "1"}, "args": [1, 2], "nothing": "null", "free": "two newlines"}),
        )],
    );
    // Values that do not fit their type stay strings; unknown tools are all strings.
    check(
        "<tool_call><function=run><parameter=timeout>soon</parameter></function></tool_call>",
        "",
        &[("run", json!({"timeout": "soon"}))],
    );
    check(
        "<tool_call><function=other><parameter=n>5</parameter></function></tool_call>",
        "",
        &[("other", json!({"n": "5"}))],
    );
    // Closing marker missing after a complete function: still a call.
    check(
        "<tool_call><function=other><parameter=n>5</parameter></function>",
        "",
        &[("other", json!({"n": "5"}))],
    );
    check_diag(
        "<tool_call><function=other><parameter=n>5",
        "<tool_call><function=other><parameter=n>5",
        &[],
        1,
    );
    check_diag(
        "<tool_call><function=other><param>5</param></function></tool_call>",
        "",
        &[],
        1,
    );
}

#[test]
fn llama() {
    check(
        "{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}",
        "",
        &[("read_file", json!({"path": "a"}))],
    );
    check(
        "  {\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}",
        "",
        &[("f", json!({}))],
    );
    check(
        "{\"type\": \"function\", \"name\": \"f\"}",
        "",
        &[("f", json!({}))],
    );
    check(
        "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"x\": 1}}",
        "",
        &[("f", json!({"x": 1}))],
    );
    check(
        "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"k\": true}}",
        "",
        &[("a", json!({})), ("b", json!({"k": true}))],
    );
    check(
        "<|python_tag|>{\"name\": \"a\", \"arguments\": {}};{\"name\": \"b\", \"arguments\": {}}",
        "",
        &[("a", json!({})), ("b", json!({}))],
    );
    // A bare reply that is not call-shaped stays text.
    check(
        "{\"name\": \"John\", \"age\": 3}",
        "{\"name\": \"John\", \"age\": 3}",
        &[],
    );
    check(
        "{\"name\": \"a\", \"parameters\": {}} and more",
        "and more",
        &[("a", json!({}))],
    );
    check_diag(
        "<|python_tag|>{\"name\": 1}",
        "<|python_tag|>{\"name\": 1}",
        &[],
        1,
    );
    check_diag("<|python_tag|>{nope", "<|python_tag|>{nope", &[], 1);
}

#[test]
fn mistral() {
    check("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {}}]", "", &[("a", json!({"x": 1})), ("b", json!({}))]);
    check(
        "[TOOL_CALLS]read_file[ARGS]{\"path\": \"a\"}",
        "",
        &[("read_file", json!({"path": "a"}))],
    );
    check(
        "[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[CALL_ID]abc123[ARGS]{\"k\": 2}",
        "",
        &[("a", json!({})), ("b", json!({"k": 2}))],
    );
    check_diag("[TOOL_CALLS]a[ARGS][1]", "[TOOL_CALLS]a[ARGS][1]", &[], 1);
    check_diag("[TOOL_CALLS]a\nb", "[TOOL_CALLS]a\nb", &[], 1);
}

#[test]
fn reasoning() {
    let p = parser();
    check_with(
        &p,
        "<think>I could call {\"tool\": \"t\", \"parameters\": {}} or <tool_call>{\"name\": \"x\"}</tool_call></think>The answer is 4.",
        "The answer is 4.",
        "I could call {\"tool\": \"t\", \"parameters\": {}} or <tool_call>{\"name\": \"x\"}</tool_call>",
        &[],
        0,
    );
    check_with(
        &p,
        "<think>hmm</think>\n<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>",
        "",
        "hmm",
        &[("a", json!({}))],
        0,
    );
    check_with(
        &p,
        "<think>unclosed < thought",
        "",
        "unclosed < thought",
        &[],
        0,
    );
    let opened = parser().with_options(ParserOptions::auto().starting_in_thinking());
    check_with(
        &opened,
        "still thinking</think>{\"name\": \"a\", \"parameters\": {}}",
        "",
        "still thinking",
        &[("a", json!({}))],
        0,
    );
}

#[test]
fn selected_formats_only() {
    let only_hermes = parser().with_options(ParserOptions::only([ToolCallFormat::Hermes]));
    let input = "```tool_call\n{\"tool\": \"a\"}\n```<tool_call>{\"name\": \"b\"}</tool_call><think>x</think>";
    check_with(
        &only_hermes,
        input,
        "```tool_call\n{\"tool\": \"a\"}\n```<think>x</think>",
        "",
        &[("b", json!({}))],
        0,
    );
}

// --- robustness ----------------------------------------------------------------------

#[test]
fn strings_with_markers_braces_and_escapes() {
    check(
        "```tool_call\n{\"tool\": \"w\", \"parameters\": {\"content\": \"fn f() { }\\n```\\n</tool_call> ` \\\"q\\\" \\\\ \\u00e9\"}}\n```",
        "",
        &[("w", json!({"content": "fn f() { }\n```\n</tool_call> ` \"q\" \\ é"}))],
    );
    check(
        "<tool_call>{\"name\": \"w\", \"arguments\": {\"s\": \"}}]]</tool_call>{\"}}</tool_call>",
        "",
        &[("w", json!({"s": "}}]]</tool_call>{"}))],
    );
    // Raw newlines inside a JSON string (invalid JSON that models write) are accepted.
    check(
        "<tool_call>{\"name\": \"w\", \"arguments\": {\"s\": \"a\nb\"}}</tool_call>",
        "",
        &[("w", json!({"s": "a\nb"}))],
    );
    check(
        "<tool_call>{\"name\": \"héllo→\", \"arguments\": {\"s\": \"日本語 🎉\"}}</tool_call>",
        "",
        &[("héllo→", json!({"s": "日本語 🎉"}))],
    );
}

#[test]
fn marker_like_prose_stays_text() {
    let cases = [
        "The tool_call format is documented.",
        "This is functional programming.",
        "Compare a < b and c > d.",
        "Ends with a backtick `",
        "Ends with <",
        "Ends with <tool_ca",
        "Ends with [TOOL_CALL",
        "Ends with ``",
        "Use `x` and ``y``.",
        "A set {1, 2} and a map {a: 1} and {} and { \"a\" }.",
        "Python: ```python\nd = {\"tool\": \"t\", \"parameters\": {}}\n```\nDone.",
        "<tool>not a call</tool>",
        "[TOOL] [CALLS] [TOOL_CALL]",
        "unbalanced } braces {",
        "emoji 🎉 and ünïcödé",
    ];
    for input in cases {
        check(input, input.trim(), &[]);
    }
}

#[test]
fn crlf_and_blank_lines_around_calls() {
    check(
        "Before\r\n\r\n```tool_call\r\n{\"tool\": \"t\", \"parameters\": {}}\r\n```\r\n\r\nAfter",
        "Before\r\n\r\nAfter",
        &[("t", json!({}))],
    );
    check(
        "A\n<tool_call>{\"name\": \"t\"}</tool_call>\nB",
        "A\nB",
        &[("t", json!({}))],
    );
    check("A\n\n\n\nB", "A\n\n\n\nB", &[]);
}

#[test]
fn incomplete_calls_at_the_end() {
    check_diag(
        "Look: ```tool_call\n{\"tool\": \"t\", \"par",
        "Look: ```tool_call\n{\"tool\": \"t\", \"par",
        &[],
        1,
    );
    check_diag("```tool_call", "```tool_call", &[], 1);
    check(
        "```tool_call\n{\"tool\": \"t\", \"parameters\": {}}",
        "",
        &[("t", json!({}))],
    );
    check_diag(
        "Call {\"tool\": \"t\", \"parameters\": {",
        "Call {\"tool\": \"t\", \"parameters\": {",
        &[],
        1,
    );
    check("Prose {\"a\": ", "Prose {\"a\":", &[]);
}

#[test]
fn streaming_emits_text_early_and_calls_when_complete() {
    let p = parser();
    let mut s = p.streaming();
    let events = s.process_token("Hello wor");
    assert_eq!(events, [services_ai::ParseEvent::Text("Hello wor".into())]);
    assert_eq!(
        s.process_token("ld <tool_"),
        [services_ai::ParseEvent::Text("ld ".into())],
        "holds back only the marker prefix"
    );
    assert!(s.process_token("call>{\"name\": \"a\", ").is_empty());
    let events = s.process_token("\"arguments\": {}}</tool_call> bye");
    assert!(
        matches!(&events[0], services_ai::ParseEvent::ToolCall(c) if c.tool_id == "a"),
        "{events:?}"
    );
    assert_eq!(
        events.last(),
        Some(&services_ai::ParseEvent::Text(" bye".into()))
    );
    assert!(s.flush().is_empty());
}

/// Adversarial inputs cost linear time: 4× the input stays well under the 16× a quadratic
/// parser would need. Measured in the thread's CPU time (time spent preempted by other
/// tests does not count), best of five runs, bound 10×.
#[test]
fn adversarial_inputs_cost_linear_time() {
    fn best_time(p: &FunctionCallParser, input: &str) -> std::time::Duration {
        (0..5)
            .map(|_| {
                let start = cpu_time::ThreadTime::now();
                let mut s = p.streaming();
                for piece in pieces(input, 3) {
                    std::hint::black_box(s.process_token(&piece));
                }
                std::hint::black_box(s.flush());
                start.elapsed()
            })
            .min()
            .unwrap()
    }
    type Maker = fn(usize) -> String;
    let makers: [(&str, Maker); 14] = [
        ("deep nesting", |n| "{\"a\":".repeat(n / 5)),
        ("marker prefixes", |n| "<tool_ca".repeat(n / 8)),
        ("unterminated string", |n| format!("{{\"{}", "x".repeat(n))),
        ("backticks", |n| "`".repeat(n)),
        ("mistral name without args", |n| {
            format!("[TOOL_CALLS]a{}", "x".repeat(n))
        }),
        ("nesting inside a block", |n| {
            format!("<tool_call>{}", "[".repeat(n))
        }),
        ("many inline calls", |n| {
            "{\"tool\": \"t\", \"parameters\": {}} ".repeat(n / 32)
        }),
        ("thinking close prefixes", |n| {
            format!("<think>{}", "</thin".repeat(n / 6))
        }),
        ("many XML parameters", |n| {
            format!(
                "<tool_call>\n<function=run>\n{}</function>\n</tool_call>",
                "<parameter=k>v</parameter>\n".repeat(n / 27)
            )
        }),
        ("many GLM arguments without a close", |n| {
            format!(
                "<tool_call>run\n{}</tool_call>",
                "<arg_key>k</arg_key><arg_value>v".repeat(n / 34)
            )
        }),
        ("many DeepSeek calls", |n| {
            format!(
                "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
                "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}<｜tool▁call▁end｜>".repeat(n / 70)
            )
        }),
        ("harmony headers", |n| {
            "<|start|>assistant<|channel|>analysis<|message|>x<|end|>".repeat(n / 55)
        }),
        ("pythonic that is not", |n| format!("[f({}", "a".repeat(n))),
        ("many MiniMax invokes", |n| {
            format!(
                "<minimax:tool_call>{}</minimax:tool_call>",
                "<invoke name=\"f\"><parameter name=\"k\">v</parameter></invoke>".repeat(n / 60)
            )
        }),
    ];
    let p = parser();
    for (name, make) in makers {
        let small = make(32 * 1024);
        let large = make(128 * 1024);
        let (t1, t4) = (best_time(&p, &small), best_time(&p, &large));
        let ratio = t4.as_secs_f64() / t1.as_secs_f64().max(1e-6);
        assert!(
            ratio < 8.0,
            "{name}: 4× input took {ratio:.1}× the time ({t1:?} → {t4:?})"
        );
    }
}

/// Seed 001 part j's first parser test, with a mocked registry: name, per-invocation risk
/// and summary come from the tool itself.
#[test]
fn registry_fills_name_risk_and_summary_per_invocation() {
    use core_models::{Tool, ToolRegistry};
    use std::sync::Arc;
    use test_support::mocks::{MockToolPort, MockToolRegistry};

    let mut tool = MockToolPort::new();
    tool.expect_definition()
        .return_const(ToolDefinition::new("file-read", "Read File", "read"));
    tool.expect_effective_risk_level().returning(|p| {
        if p["path"].as_str().is_some_and(|s| s.starts_with("/etc")) {
            RiskLevel::High
        } else {
            RiskLevel::Safe
        }
    });
    tool.expect_execution_summary()
        .returning(|p| format!("Read file '{}'", p["path"].as_str().unwrap_or("?")));
    let tool: Arc<dyn Tool> = Arc::new(tool);
    let mut registry = MockToolRegistry::new();
    registry
        .expect_get_tool()
        .returning(move |id| (id == "file-read").then(|| Arc::clone(&tool)));
    let registry: Arc<dyn ToolRegistry> = Arc::new(registry);
    let p = FunctionCallParser::new(ToolCatalog::Registry(registry));

    let calls = p.parse(
        "```tool_call\n{\"tool\": \"file-read\", \"parameters\": {\"path\": \"src/Program.cs\"}}\n```\n\
         <tool_call>{\"name\": \"file-read\", \"arguments\": {\"path\": \"/etc/shadow\"}}</tool_call>\n\
         <tool_call>{\"name\": \"other\", \"arguments\": {}}</tool_call>",
    );
    let got: Vec<_> = calls
        .iter()
        .map(|c| {
            (
                c.tool_name.as_str(),
                c.risk_level,
                c.execution_summary.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("Read File", RiskLevel::Safe, "Read file 'src/Program.cs'"),
            ("Read File", RiskLevel::High, "Read file '/etc/shadow'"),
            ("other", RiskLevel::Medium, "Execute other"),
        ]
    );
}
