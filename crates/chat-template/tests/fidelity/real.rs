//! The real chat templates of popular model families, kept beside the workspace in
//! `../shared/templates` (never copied into this repository), rendered with a set of
//! conversations and compared byte-for-byte with the reference.

use super::{ours, reference, Outcome};
use serde_json::{json, Value};
use std::path::PathBuf;

/// bos and eos text per template, as `../shared/templates/SOURCES.md` lists them.
const TOKENS: &[(&str, &str, &str)] = &[
    ("Qwen-Qwen2.5-7B-Instruct.jinja", "", "<|im_end|>"),
    ("Qwen-Qwen3-0.6B.jinja", "", "<|im_end|>"),
    ("Qwen3-Coder.jinja", "", "<|im_end|>"),
    ("Qwen-QwQ-32B.jinja", "", "<|im_end|>"),
    (
        "meta-llama-Llama-3.1-8B-Instruct.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
    (
        "meta-llama-Llama-3.2-3B-Instruct.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
    (
        "meta-llama-Llama-3.3-70B-Instruct.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
    ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "<s>", "</s>"),
    ("Mistral-Small-3.2-24B-Instruct-2506.jinja", "<s>", "</s>"),
    (
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "<|begin_of_text|>",
        "<|im_end|>",
    ),
    (
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
        "<|begin_of_text|>",
        "<|im_end|>",
    ),
    (
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "<｜begin▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
    ),
    (
        "deepseek-ai-DeepSeek-V3.1.jinja",
        "<｜begin▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
    ),
    ("google-gemma-2-2b-it.jinja", "<bos>", "<eos>"),
    ("google-gemma-4-31B-it.jinja", "<bos>", "<eos>"),
    (
        "microsoft-Phi-3.5-mini-instruct.jinja",
        "<s>",
        "<|endoftext|>",
    ),
    (
        "microsoft-Phi-4-mini-instruct.jinja",
        "<|endoftext|>",
        "<|endoftext|>",
    ),
    (
        "ibm-granite-granite-3.3-2B-Instruct.jinja",
        "<|end_of_text|>",
        "<|end_of_text|>",
    ),
    (
        "ibm-granite-granite-4.0.jinja",
        "<|end_of_text|>",
        "<|end_of_text|>",
    ),
    (
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
        "<BOS_TOKEN>",
        "<|END_OF_TURN_TOKEN|>",
    ),
    ("openai-gpt-oss-120b.jinja", "<|startoftext|>", "<|return|>"),
    ("GLM-4.6.jinja", "", "<|endoftext|>"),
    ("moonshotai-Kimi-K2.jinja", "[BOS]", "[EOS]"),
    ("MiniMax-M2.jinja", "]~!b[", "[e~["),
    ("LFM2-8B-A1B.jinja", "<|startoftext|>", "<|im_end|>"),
    (
        "meetkai-functionary-medium-v3.2.jinja",
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
];

fn templates_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/templates");
    assert!(
        dir.join("README.md").is_file(),
        "the real chat templates are missing: expected them in {} (the shared templates folder \
         beside the workspace)",
        dir.display()
    );
    dir
}

fn tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string", "description": "The city, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            }, "required": ["city"]}
        }},
        {"type": "function", "function": {
            "name": "read_file",
            "description": "Read a text file.",
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string"},
                "max_lines": {"type": "integer", "description": "At most this many lines"}
            }, "required": ["path"]}
        }}
    ])
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// `(name, messages, with tools)`.
fn conversations() -> Vec<(&'static str, Value, bool)> {
    let user =
        json!({"role": "user", "content": "What's the weather in Paris? Réponds en français."});
    let system = json!({"role": "system", "content": "You are a helpful assistant."});
    let object_call = json!({"role": "assistant", "content": "", "tool_calls": [
        call("call_1", "get_weather", json!({"city": "Paris", "unit": "celsius"}))
    ]});
    let string_call = json!({"role": "assistant", "content": "", "tool_calls": [
        call("call_1", "get_weather", json!("{\"city\": \"Paris\", \"unit\": \"celsius\"}"))
    ]});
    let result = json!({"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temperature\": 18, \"sky\": \"clear\"}"});
    let answer = json!({"role": "assistant", "content": "Il fait 18 °C et le ciel est dégagé."});
    vec![
        ("plain", json!([user]), false),
        ("system", json!([system, user]), false),
        (
            "multi-turn",
            json!([
                system, user,
                {"role": "assistant", "content": "Which unit?"},
                {"role": "user", "content": "Celsius, please.\n  With spaces  "}
            ]),
            false,
        ),
        ("tools listed", json!([system, user]), true),
        ("tools without system", json!([user]), true),
        (
            "object arguments",
            json!([system, user, object_call, result, answer]),
            true,
        ),
        (
            "string arguments",
            json!([system, user, string_call, result]),
            true,
        ),
        (
            "two calls",
            json!([user, {"role": "assistant", "content": "", "tool_calls": [
                call("call_1", "get_weather", json!({"city": "Paris"})),
                call("call_2", "read_file", json!({"path": "notes.txt", "max_lines": 10}))
            ]},
                {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"},
                {"role": "tool", "tool_call_id": "call_2", "name": "read_file", "content": "milk\neggs"}
            ]),
            true,
        ),
        (
            "call with text",
            json!([user, {"role": "assistant", "content": "Let me check.", "tool_calls": [
            call("call_1", "get_weather", json!({"city": "Paris"}))
        ]}, result]),
            true,
        ),
        (
            "null content with call",
            json!([user, {"role": "assistant", "content": null, "tool_calls": [
            call("call_1", "get_weather", json!({"city": "Paris", "days": 2.5, "exact": true, "note": null}))
        ]}, result]),
            true,
        ),
        (
            "nested arguments",
            json!([system, user, {"role": "assistant", "content": "", "tool_calls": [
            call("call_9", "read_file", json!({"path": "dir/🎉 \"q\".txt", "ranges": [[1, 2], [3.25, -1e-7]], "opts": {"follow": false, "mode": null}, "empty": {}, "list": []}))
        ]}, {"role": "tool", "tool_call_id": "call_9", "name": "read_file", "content": "line 1\n\tline 2 <b>&amp;</b>"}]),
            true,
        ),
        (
            "empty arguments",
            json!([user, {"role": "assistant", "content": "", "tool_calls": [
            call("call_1", "get_weather", json!({}))
        ]}, result, {"role": "user", "content": "And tomorrow?"}]),
            true,
        ),
        (
            "think in content",
            json!([user,
                {"role": "assistant", "content": "<think>\nLet me think.\n</think>\n\nSunny."},
                {"role": "user", "content": "ok"}
            ]),
            false,
        ),
        (
            "assistant last",
            json!([system, user, {"role": "assistant", "content": "It is"}]),
            false,
        ),
        (
            "reasoning",
            json!([user,
                {"role": "assistant", "content": "Sunny.", "reasoning_content": "The user wants the weather."},
                {"role": "user", "content": "Thanks!"}
            ]),
            false,
        ),
        (
            "reasoning with call",
            json!([system, user,
                {"role": "assistant", "content": "", "reasoning_content": "I should call the tool.", "tool_calls": [
                    call("call_1", "get_weather", json!({"city": "Paris"}))
                ]}, result, answer
            ]),
            true,
        ),
    ]
}

#[test]
fn real_templates_render_as_the_reference() {
    let dir = templates_dir();
    let mut requests = Vec::new();
    let mut labels = Vec::new();
    for (file, bos, eos) in TOKENS {
        let source = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("cannot read the real template {file}: {e}"));
        for (name, messages, with_tools) in conversations() {
            for add_generation_prompt in [true, false] {
                let mut context = json!({
                    "messages": messages,
                    "add_generation_prompt": add_generation_prompt,
                    "bos_token": bos,
                    "eos_token": eos,
                });
                if with_tools {
                    context["tools"] = tools();
                }
                labels.push(format!(
                    "{file} / {name} / generation prompt {add_generation_prompt}"
                ));
                requests.push((source.clone(), context));
            }
        }
    }
    // Keywords some templates read (Qwen 3's enable_thinking, DeepSeek V3.1's thinking,
    // gpt-oss's reasoning_effort, Granite's thinking), passed as extra kwargs.
    let keywords = json!({"enable_thinking": false, "thinking": true, "reasoning_effort": "high"});
    for (file, bos, eos) in TOKENS {
        let source = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("cannot read the real template {file}: {e}"));
        let conversations = conversations();
        let (_, messages, _) = conversations
            .iter()
            .find(|(name, _, _)| *name == "reasoning with call")
            .unwrap();
        let mut context = json!({
            "messages": messages,
            "add_generation_prompt": true,
            "bos_token": bos,
            "eos_token": eos,
            "tools": tools(),
        });
        for (key, value) in keywords.as_object().unwrap() {
            context[key] = value.clone();
        }
        labels.push(format!("{file} / extra keywords"));
        requests.push((source, context));
    }
    let references = reference(&requests);
    let mut failures = Vec::new();
    let mut raised = 0;
    for ((label, (source, context)), expected) in labels.iter().zip(&requests).zip(references) {
        let got = ours(source, context);
        if matches!(expected, Outcome::Raised(_) | Outcome::Failed(_)) {
            raised += 1;
        }
        if !got.agrees_with(&expected) {
            failures.push(format!("{label}:\n{}", difference(&expected, &got)));
        }
    }
    eprintln!(
        "{} of {} renders match ({raised} raise in both)",
        requests.len() - failures.len(),
        requests.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Where two outcomes part: a little context around the first differing byte.
fn difference(expected: &Outcome, got: &Outcome) -> String {
    match (expected, got) {
        (Outcome::Text(a), Outcome::Text(b)) => {
            let at = a
                .bytes()
                .zip(b.bytes())
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            let window = |s: &str| {
                let mut start = at.saturating_sub(60).min(s.len());
                while !s.is_char_boundary(start) {
                    start -= 1;
                }
                let mut end = (at + 60).min(s.len());
                while !s.is_char_boundary(end) {
                    end += 1;
                }
                format!("{:?}", &s[start..end])
            };
            format!(
                "  from byte {at}\n  reference {}\n  ours      {}",
                window(a),
                window(b)
            )
        }
        _ => format!("  reference {expected:?}\n  ours      {got:?}"),
    }
}
