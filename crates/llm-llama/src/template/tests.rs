//! Rendering with templates written in the styles of three model families: ChatML (the
//! default model), Llama 3 and a Qwen-style template that renders tools, plus one that
//! refuses system messages.

#![allow(clippy::unwrap_used)]

use super::{ChatTemplate, TemplateCapabilities};
use core_models::{ChatMessage, ToolDefinition};

/// ChatML, as SmolLM2 ships it: no tools, every role written as it comes.
const CHATML: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// Llama 3 style: headers, the BOS text written by the template, `ipython` for tool
/// results is not supported here (tool messages are dropped).
const LLAMA3: &str = r#"{{- bos_token }}
{%- for message in messages %}
{%- if message.role in ['system', 'user', 'assistant'] %}
{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + message.content | trim + '<|eot_id|>' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}"#;

/// Qwen style: tools listed as JSON inside `<tools>` in the system turn, tool results
/// wrapped in `<tool_response>` inside a user turn.
const QWEN: &str = r##"{%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\n\n' }}{%- endif %}
{{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n<tools>" }}
{%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags.<|im_end|>\n" }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'assistant') %}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\n<tool_response>\n' + message.content + '\n</tool_response><|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"##;

/// Gemma style: refuses a system role.
const NO_SYSTEM: &str = r#"{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"#;

fn read_file() -> ToolDefinition {
    ToolDefinition::new("read_file", "Read File", "Read a text file").with_schema(
        serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )
}

fn conversation() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("Be brief."),
        ChatMessage::user("Read notes.txt"),
        ChatMessage::assistant("```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\"}}\n```"),
        ChatMessage::tool("read_file", "c1", "milk, eggs"),
    ]
}

/// Renders `messages` and `tools` with `source`, checks the capabilities found and the
/// exact prompt.
fn check(
    source: &str,
    bos: &str,
    messages: &[ChatMessage],
    tools: &[ToolDefinition],
    capabilities: TemplateCapabilities,
    expected: &str,
) {
    let template = ChatTemplate::new(source, bos, "<eos>").unwrap();
    assert_eq!(template.capabilities(), capabilities);
    assert_eq!(template.render(messages, tools).unwrap(), expected);
}

#[test]
fn chatml_gets_tool_results_as_user_messages() {
    check(
        CHATML,
        "<|im_start|>",
        &conversation(),
        &[read_file()],
        TemplateCapabilities {
            tools: false,
            tool_role: false,
            system_role: true,
        },
        "<|im_start|>system\nBe brief.<|im_end|>\n\
         <|im_start|>user\nRead notes.txt<|im_end|>\n\
         <|im_start|>assistant\n```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\"}}\n```<|im_end|>\n\
         <|im_start|>user\nTool result (read_file):\nmilk, eggs<|im_end|>\n\
         <|im_start|>assistant\n",
    );
}

#[test]
fn llama3_gets_tool_results_as_user_messages() {
    check(
        LLAMA3,
        "<|begin_of_text|>",
        &conversation(),
        &[read_file()],
        TemplateCapabilities {
            tools: false,
            tool_role: false,
            system_role: true,
        },
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nRead notes.txt<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\"}}\n```<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nTool result (read_file):\nmilk, eggs<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n",
    );
}

#[test]
fn qwen_style_renders_the_tools_in_its_own_format() {
    check(
        QWEN,
        "",
        &conversation(),
        &[read_file()],
        TemplateCapabilities {
            tools: true,
            tool_role: true,
            system_role: true,
        },
        "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n<tools>\n\
         {\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"description\": \"Read a text file\", \"parameters\": {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}}, \"required\": [\"path\"]}}}\n\
         </tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags.<|im_end|>\n\
         <|im_start|>user\nRead notes.txt<|im_end|>\n\
         <|im_start|>assistant\n```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\"}}\n```<|im_end|>\n\
         <|im_start|>user\n<tool_response>\nmilk, eggs\n</tool_response><|im_end|>\n\
         <|im_start|>assistant\n",
    );
}

#[test]
fn qwen_style_without_tools_offered_has_no_tools_section() {
    check(
        QWEN,
        "",
        &[ChatMessage::system("Be brief."), ChatMessage::user("Hi")],
        &[],
        TemplateCapabilities {
            tools: true,
            tool_role: true,
            system_role: true,
        },
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    );
}

#[test]
fn a_template_without_a_system_role_gets_it_in_the_first_user_message() {
    check(
        NO_SYSTEM,
        "<bos>",
        &[ChatMessage::system("Be brief."), ChatMessage::user("Hi")],
        &[],
        TemplateCapabilities {
            tools: false,
            tool_role: false,
            system_role: false,
        },
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n",
    );
}

#[test]
fn template_errors_are_reported_in_words() {
    let err = ChatTemplate::new("{% for %}", "", "").unwrap_err();
    assert!(err.to_string().contains("not valid Jinja"), "{err}");
    // The template's own refusal (two user turns in a row) is an error, not a panic.
    let template = ChatTemplate::new(NO_SYSTEM, "<bos>", "<eos>").unwrap();
    let err = template
        .render(&[ChatMessage::user("a"), ChatMessage::user("b")], &[])
        .unwrap_err();
    assert!(err.to_string().contains("roles must alternate"), "{err}");
}

#[test]
fn openai_calls_become_fenced_text_for_templates_without_tools() {
    let template = ChatTemplate::new(CHATML, "", "<eos>").unwrap();
    let messages = vec![
        serde_json::json!({"role": "user", "content": "Read notes.txt"}),
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}}
        ]}),
        serde_json::json!({"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "milk"}),
    ];
    let tools = serde_json::json!([{"type": "function", "function": {"name": "read_file"}}]);
    let prompt = template
        .render_openai(&messages, Some(&tools), false)
        .unwrap();
    assert!(
        prompt.contains("<|im_start|>assistant\n```tool_call\n{\"tool\":\"read_file\",\"parameters\":{\"path\":\"notes.txt\"}}\n```<|im_end|>"),
        "{prompt}"
    );
    assert!(
        prompt.contains("<|im_start|>user\nTool result (read_file):\nmilk<|im_end|>"),
        "{prompt}"
    );
    assert!(!prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");
}

/// Renders `tool_calls` and `reasoning_content`, and `tools`.
const CALLS: &str = "{% for t in tools %}[{{ t.function.name }}]{% endfor %}{% for m in messages %}<{{ m.role }}>{% if m.reasoning_content %}({{ m.reasoning_content }}){% endif %}{{ m.content }}{% for c in m.tool_calls or [] %}{{ c.id }}:{{ c.type }}:{{ c.function.name }}{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}";

#[test]
fn calls_and_reasoning_reach_the_template_in_the_openai_shape() {
    let call = core_models::MessageToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: std::sync::Arc::new(serde_json::json!({"path": "a", "n": 1})),
    };
    let messages = vec![
        ChatMessage::user("go"),
        ChatMessage::assistant_with_calls("", vec![call], Some("thinking".into()), "RAW"),
    ];
    let template = ChatTemplate::new(CALLS, "", "").unwrap();
    assert!(template.capabilities().tools);
    assert_eq!(
        template.render(&messages, &[read_file()]).unwrap(),
        "[read_file]<user>go<assistant>(thinking)c1:function:read_file{\"path\": \"a\", \"n\": 1}"
    );
    // A template without tools sees the output as the model wrote it.
    let plain = ChatTemplate::new(CHATML, "", "").unwrap();
    let prompt = plain.render(&messages, &[]).unwrap();
    assert!(
        prompt.contains("<|im_start|>assistant\nRAW<|im_end|>"),
        "{prompt}"
    );
}

#[test]
fn the_chat_format_follows_the_template() {
    let chatml = ChatTemplate::new(CHATML, "", "<|im_end|>").unwrap();
    let format = chatml.chat_format();
    assert_eq!(format.call_format, "fenced");
    assert!(!format.renders_tools);
    assert!(!format.starts_in_thinking);

    let qwen = ChatTemplate::new(QWEN, "", "<|im_end|>").unwrap();
    let format = qwen.chat_format();
    assert_eq!(format.call_format, "hermes");
    assert!(format.renders_tools);

    let thinking = format!("{CHATML}{{% if add_generation_prompt %}}<think>\n{{% endif %}}");
    let format = ChatTemplate::new(&thinking, "", "").unwrap().chat_format();
    assert!(format.starts_in_thinking);
}

/// The text that opens a message is known for the templates that have one, so that a
/// reply writing it stops there.
#[test]
fn the_message_opener_is_found_from_the_generation_prompt() {
    let opener = |source: &str| {
        ChatTemplate::new(source, "<s>", "</s>")
            .unwrap()
            .message_opener()
            .map(str::to_string)
    };
    assert_eq!(opener(CHATML).as_deref(), Some("<|im_start|>"));
    assert_eq!(opener(QWEN).as_deref(), Some("<|im_start|>"));
    assert_eq!(opener(LLAMA3).as_deref(), Some("<|start_header_id|>"));
    assert_eq!(opener(NO_SYSTEM).as_deref(), Some("<start_of_turn>"));
    // A plain template whose turns open with words has none.
    let plain = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}";
    assert_eq!(opener(plain), None);
    // A harmony reply opens messages of its own (analysis, then the call): no stop there.
    let harmony = "{% for m in messages %}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|start|>assistant{% endif %}{# <|channel|>commentary to=functions.x <|constrain|>json<|message|>{}<|call|> #}";
    assert_eq!(
        tool_calls::detect_template(harmony).format,
        tool_calls::ToolCallFormat::Harmony
    );
    assert_eq!(opener(harmony), None);
}
