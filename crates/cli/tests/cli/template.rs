//! `aintern template render`: the exact prompt for a fixture template, a template that
//! raises, the generation prompt switch, tools, adaptation and bad input.

use super::aintern;
use std::path::{Path, PathBuf};

/// A Qwen-like template written for these tests: tools as JSON lines, tool calls with
/// their arguments as JSON, tool results in `<tool_response>`, and a raise for an
/// unknown role.
const TEMPLATE: &str = r#"{{- bos_token }}
{%- if tools %}
{{- '<|system|>\nTools:\n' }}
{%- for tool in tools %}
{{- tool.function | tojson }}{{ '\n' }}
{%- endfor %}
{%- endif %}
{%- for message in messages %}
{%- if message.role not in ['system', 'user', 'assistant', 'tool'] %}
{{- raise_exception('Unknown role: ' + message.role) }}
{%- endif %}
{%- if message.role == 'tool' %}
{{- '<|tool|>\n<tool_response>' + message.content + '</tool_response>' + eos_token + '\n' }}
{%- else %}
{{- '<|' + message.role + '|>\n' + (message.content or '') }}
{%- for call in message.tool_calls or [] %}
{%- set arguments = call.function.arguments %}
{{- '<call>' + call.function.name + ' ' + (arguments if arguments is string else arguments | tojson) + '</call>' }}
{%- endfor %}
{{- eos_token + '\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|assistant|>\n' }}
{%- endif %}"#;

struct Files {
    _dir: tempfile::TempDir,
    template: PathBuf,
    tools: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("chat.jinja");
    std::fs::write(&template, TEMPLATE).unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]"#,
    )
    .unwrap();
    Files {
        _dir: dir,
        template,
        tools,
    }
}

fn render(template: &Path, extra: &[&str], stdin: &str) -> std::process::Output {
    let template = template.to_str().unwrap();
    let args = [&["template", "render", "--template", template], extra].concat();
    aintern(&args, stdin.as_bytes())
}

fn ok(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

const CONVERSATION: &str = r#"{"messages": [
    {"role": "user", "content": "Read a.txt, é"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": {"path": "a.txt"}}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "hello"}
]}"#;

#[test]
fn raw_render_prints_the_exact_prompt_without_a_newline() {
    let f = files();
    let out = ok(render(
        &f.template,
        &["--raw", "--bos", "<s>", "--eos", "</s>"],
        CONVERSATION,
    ));
    assert_eq!(
        out,
        "<s><|user|>\nRead a.txt, é</s>\n<|assistant|>\n<call>read_file {\"path\": \"a.txt\"}</call></s>\n<|tool|>\n<tool_response>hello</tool_response></s>\n<|assistant|>\n"
    );
}

#[test]
fn no_generation_prompt_leaves_the_assistant_turn_closed() {
    let f = files();
    let out = ok(render(
        &f.template,
        &["--raw", "--no-generation-prompt"],
        r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
    ));
    assert_eq!(out, "<|user|>\nhi\n");
}

#[test]
fn tools_reach_the_template() {
    let f = files();
    let tools = f.tools.to_str().unwrap();
    let stdin = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
    let expected = "<|system|>\nTools:\n{\"name\": \"read_file\", \"description\": \"Read a file\", \"parameters\": {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}}, \"required\": [\"path\"]}}\n<|user|>\nhi\n<|assistant|>\n";
    assert_eq!(
        ok(render(&f.template, &["--raw", "--tools", tools], stdin)),
        expected
    );
    // The template renders tools and a tool role: AIntern sends the same.
    assert_eq!(
        ok(render(&f.template, &["--tools", tools], stdin)),
        expected
    );
}

#[test]
fn a_template_that_raises_exits_non_zero_with_its_message() {
    let f = files();
    let stdin = r#"{"messages": [{"role": "robot", "content": "beep"}]}"#;
    for extra in [&["--raw"][..], &[]] {
        let out = render(&f.template, extra, stdin);
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("Unknown role: robot"), "{stderr}");
    }
}

#[test]
fn without_raw_tool_results_become_user_messages_for_templates_without_a_tool_role() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("chatml.jinja");
    std::fs::write(
        &template,
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    )
    .unwrap();
    let stdin = r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "hello"}]}"#;
    assert_eq!(
        ok(render(&template, &["--raw"], stdin)),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>tool\nhello<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(
        ok(render(&template, &[], stdin)),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>user\nTool result (read_file):\nhello<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn bad_input_is_an_error_in_words() {
    let f = files();
    let missing = f.template.with_file_name("missing.jinja");
    let bad = f.template.with_file_name("bad.jinja");
    std::fs::write(&bad, "{% if %}").unwrap();
    let hi = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
    for (template, stdin, words) in [
        (&missing, hi, "cannot read the chat template"),
        (&bad, hi, "not valid Jinja"),
        (&f.template, "{oops", "not valid JSON"),
        (&f.template, "[]", "must be a JSON object"),
        (&f.template, "{}", "no \"messages\" list"),
    ] {
        let out = render(template, &["--raw"], stdin);
        assert!(!out.status.success(), "{words}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(words), "{words}: {stderr}");
    }
}

#[test]
fn inspect_reports_format_reasoning_and_capabilities() {
    let f = files();
    // The fixture renders tools but shows no call syntax: AIntern's own format.
    let out = super::aintern(
        &[
            "template",
            "inspect",
            "--template",
            f.template.to_str().unwrap(),
        ],
        b"",
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["format"], "fenced");
    assert_eq!(report["capabilities"]["tools"], true);
    assert_eq!(report["starts_in_thinking"], false);

    let dir = tempfile::tempdir().unwrap();
    let qwen_like = dir.path().join("q.jinja");
    std::fs::write(
        &qwen_like,
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
         {% if tools %}Call with <tool_call>{\"name\": …}</tool_call>{% for t in tools %}{{ t.function.name }}{% endfor %}{% endif %}\
         {% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}",
    )
    .unwrap();
    let out = super::aintern(
        &[
            "template",
            "inspect",
            "--template",
            qwen_like.to_str().unwrap(),
        ],
        b"",
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["format"], "hermes");
    assert_eq!(report["native_tools"], true);
    assert_eq!(report["reasoning"]["open"], "<think>");
    assert_eq!(report["starts_in_thinking"], true);

    let out = super::aintern(
        &["template", "inspect", "--template", "/nonexistent.jinja"],
        b"",
    );
    assert!(!out.status.success());
}
