//! `aintern parse`: the parser's contract on a corpus, streaming equal to batch for every
//! chunk size, typed XML parameters, any input and bad usage.

use super::aintern;
use serde_json::{json, Value};

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
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a JSON array"));
    std::fs::write(&bad, "[{\"type\": \"function\", \"function\": {}}]").unwrap();
    let out = aintern(&["parse", "--tools", bad.to_str().unwrap()], b"");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("tool 1"));
    let out = aintern(&["parse", "--format", "no-such-format"], b"x");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--list-formats"));
    let out = aintern(&["parse", "--template", "/nonexistent/t.jinja"], b"x");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the chat template"));
}

#[test]
fn formats_are_listed_and_chosen_by_name() {
    let out = aintern(&["parse", "--list-formats"], b"");
    assert!(out.status.success());
    let listing = String::from_utf8_lossy(&out.stdout);
    for name in [
        "hermes",
        "glm",
        "harmony",
        "deepseek-v3.1",
        "kimi-k2",
        "minimax-m2",
        "pythonic",
    ] {
        assert!(
            listing.lines().any(|l| l.starts_with(&format!("{name}\t"))),
            "{name}"
        );
    }
    // A bare JSON reply is a call for Llama 3.x (its own spelling), and for a Hermes
    // model too, marked as recovered (Hermes models leave their tags out); quoted in a
    // sentence it is text for both.
    let reply = "{\"name\": \"f\", \"parameters\": {\"a\": 1}}";
    let v = parse(&["--format", "llama3"], reply);
    assert_eq!(
        v["tool_calls"],
        json!([{"tool": "f", "parameters": {"a": 1}}])
    );
    let v = parse(&["--format", "hermes"], reply);
    assert_eq!(
        v["tool_calls"],
        json!([{"tool": "f", "parameters": {"a": 1}, "recovered": "bare JSON"}])
    );
    let quoted = format!("Write {reply} to call f, then wait.");
    for format in ["llama3", "hermes"] {
        let v = parse(&["--format", format], &quoted);
        assert_eq!(v["tool_calls"], json!([]), "{format}");
        assert_eq!(v["text"], quoted, "{format}");
    }
    // Peers' names work too.
    let v = parse(
        &["--format", "GPT_OSS"],
        "<|channel|>final<|message|>Hi<|return|>",
    );
    assert_eq!(v["text"], "Hi");
    let v = parse(&["--starts-in-thinking"], "hmm</think>Hi");
    assert_eq!(
        (v["thinking"].as_str(), v["text"].as_str()),
        (Some("hmm"), Some("Hi"))
    );
}

#[test]
fn a_template_decides_the_format_and_the_reasoning_start() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("t.jinja");
    std::fs::write(
        &template,
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
         {% if tools %}<tool_call>{% endif %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}",
    )
    .unwrap();
    let v = parse(
        &["--template", template.to_str().unwrap()],
        "I should read it.</think>Reading.<tool_call>{\"name\": \"f\", \"arguments\": {\"p\": \"x\"}}</tool_call>",
    );
    assert_eq!(v["thinking"], "I should read it.");
    assert_eq!(v["text"], "Reading.");
    assert_eq!(
        v["tool_calls"],
        json!([{"tool": "f", "parameters": {"p": "x"}}])
    );
}

#[test]
fn openai_tools_type_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"days": {"type": "int"}, "city": {"type": "string"}}}}}]"#,
    )
    .unwrap();
    let v = parse(
        &["--tools", tools.to_str().unwrap()],
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>42</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
    );
    assert_eq!(
        v["tool_calls"],
        json!([{"tool": "get_weather", "parameters": {"city": "42", "days": 3}}])
    );
}
