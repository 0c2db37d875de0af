//! Tool-call cases from the public test suites of llama.cpp, vLLM, SGLang and Ollama,
//! grouped by format, each naming the file it comes from (test vectors only; the
//! expected calls and text are the peers'). Every case also goes through the streaming
//! parser in every two-piece split and several piece sizes (`parser::check_with`).
//! Where peers disagree, the case follows llama.cpp and says so.

use super::parser::check_with;
use core_models::{RiskLevel, ToolDefinition};
use serde_json::{json, Value};
use services_ai::{format_by_name, FunctionCallParser, TemplateProfile, ToolCatalog};

/// The peers' test tools (llama.cpp `tests/test-chat.cpp`, Ollama's weather tools).
fn catalog() -> ToolCatalog {
    let tool = |id: &str, schema: Value| {
        ToolDefinition::new(id, id, id)
            .with_risk(RiskLevel::Safe)
            .with_schema(json!({"type": "object", "properties": schema}))
    };
    ToolCatalog::from_definitions([
        tool("special_function", json!({"arg1": {"type": "integer"}})),
        tool(
            "special_function_with_opt",
            json!({"arg1": {"type": "integer"}, "arg2": {"type": "integer"}}),
        ),
        tool("python", json!({"code": {"type": "string"}})),
        tool(
            "get_time",
            json!({"city": {"type": "string"}, "location": {"type": "string"}}),
        ),
        tool(
            "get_weather",
            json!({"city": {"type": "string"}, "location": {"type": "string"}, "unit": {"type": "string"}}),
        ),
        tool(
            "magic_int",
            json!({"ref": {"type": "integer"}, "name": {"type": "string"}}),
        ),
        tool("amount", json!({"orig": {"type": "number"}})),
        tool("toggle", json!({"enabled": {"type": "boolean"}})),
        tool("todo_list", json!({"todos": {"type": "array"}})),
        tool("set_config", json!({"config": {"type": "object"}})),
        tool("empty_args", json!({})),
    ])
}

/// One peer case: `input` in `format` (a `--format` name, or "auto") gives this text,
/// thinking and calls (arguments as JSON text), without diagnostics.
struct Peer {
    /// Where the case comes from: repository and file.
    source: &'static str,
    format: &'static str,
    /// The prompt opened reasoning (llama.cpp's `thinking_forced_open`).
    in_thinking: bool,
    input: &'static str,
    text: &'static str,
    thinking: &'static str,
    calls: &'static [(&'static str, &'static str)],
}

const LLAMA_CPP: &str = "ggml-org/llama.cpp tests/test-chat.cpp";
const LLAMA_CPP_OLD: &str = "ggml-org/llama.cpp tests/test-chat.cpp (before the PEG parsers)";
const LLAMA_CPP_HERMES: &str = "ggml-org/llama.cpp tests/chat-parsers/test-hermes-2-pro.cpp";
const VLLM_APERTUS: &str = "vllm-project/vllm tests/tool_parsers/test_apertus_tool_parser.py";
const VLLM_LLAMA3: &str = "vllm-project/vllm tests/tool_parsers/test_llama3_json_tool_parser.py";
const SGLANG_LLAMA32: &str =
    "sgl-project/sglang test/srt/test_function_call_parser.py (TestLlama32Detector)";
const SGLANG_PYTHONIC: &str =
    "sgl-project/sglang test/srt/test_function_call_parser.py (TestPythonicDetector)";
const VLLM_PYTHONIC: &str = "vllm-project/vllm tests/tool_parsers/test_pythonic_tool_parser.py";
const OLLAMA_TOOLS: &str = "ollama/ollama tools/tools_test.go (TestParseToolCalls)";
const VLLM_V31: &str = "vllm-project/vllm tests/tool_parsers/test_deepseekv31_tool_parser.py";
/// A case written here where no peer's vector was found.
const OURS: &str = "AIntern (no peer vector)";
const OLLAMA_APERTUS: &str = "ollama/ollama model/parsers/apertus15_test.go";

fn parser_for(peer: &Peer) -> FunctionCallParser {
    let options = if peer.format == "auto" {
        services_ai::ParserOptions::auto()
    } else {
        let format =
            format_by_name(peer.format).unwrap_or_else(|| panic!("no format {}", peer.format));
        TemplateProfile {
            format,
            reasoning: None,
        }
        .parser_options(false)
    };
    let options = if peer.in_thinking {
        options.starting_in_thinking()
    } else {
        options
    };
    FunctionCallParser::new(catalog()).with_options(options)
}

/// Check every case; report all failures at once.
fn check_all(cases: &[Peer]) {
    let mut failed = Vec::new();
    for peer in cases {
        let calls: Vec<(&str, Value)> = peer
            .calls
            .iter()
            .map(|(name, args)| (*name, serde_json::from_str(args).expect("case JSON")))
            .collect();
        let parser = parser_for(peer);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_with(&parser, peer.input, peer.text, peer.thinking, &calls, 0);
        }));
        if outcome.is_err() {
            failed.push(format!(
                "{} [{}] {:?}",
                peer.source, peer.format, peer.input
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} peer cases fail:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

/// A case without reasoning.
const fn case(
    source: &'static str,
    format: &'static str,
    input: &'static str,
    text: &'static str,
    calls: &'static [(&'static str, &'static str)],
) -> Peer {
    Peer {
        source,
        format,
        in_thinking: false,
        input,
        text,
        thinking: "",
        calls,
    }
}

/// A case whose prompt opened reasoning: the output starts inside it.
const fn thinking(
    source: &'static str,
    format: &'static str,
    input: &'static str,
    thinking: &'static str,
    text: &'static str,
    calls: &'static [(&'static str, &'static str)],
) -> Peer {
    Peer {
        source,
        format,
        in_thinking: true,
        input,
        text,
        thinking,
        calls,
    }
}

// --- DeepSeek V3.2 (DSML) ------------------------------------------------------------

const DSML: &str = "deepseek-v3.2";

#[test]
fn deepseek_v32_dsml() {
    check_all(&[
        // llama.cpp: "Thinking + tool call (single, string param)".
        thinking(LLAMA_CPP, DSML, "Let me check the time</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_time\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Tokyo</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Let me check the time", "", &[("get_time", r#"{"city": "Tokyo"}"#)]),
        // llama.cpp: "Tool call without reasoning (non-thinking mode), integer param".
        case(LLAMA_CPP, DSML, "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"special_function\">\n<｜DSML｜parameter name=\"arg1\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        // llama.cpp: "Multiple parallel tool calls with reasoning".
        thinking(LLAMA_CPP, DSML, "Calling both</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_time\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Calling both", "", &[("get_time", r#"{"city": "Paris"}"#), ("get_weather", r#"{"city": "Paris"}"#)]),
        // llama.cpp: "Tool call with content before tool calls".
        thinking(LLAMA_CPP, DSML, "Thinking about it</think>Let me call the function.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"special_function\">\n<｜DSML｜parameter name=\"arg1\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Thinking about it", "Let me call the function.", &[("special_function", r#"{"arg1": 1}"#)]),
        // llama.cpp: typed parameters (string="false" is JSON).
        thinking(LLAMA_CPP, DSML, "Test negative</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"magic_int\">\n<｜DSML｜parameter name=\"ref\" string=\"false\">-14</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Test negative", "", &[("magic_int", r#"{"ref": -14}"#)]),
        thinking(LLAMA_CPP, DSML, "Test decimal</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"amount\">\n<｜DSML｜parameter name=\"orig\" string=\"false\">3.14</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Test decimal", "", &[("amount", r#"{"orig": 3.14}"#)]),
        thinking(LLAMA_CPP, DSML, "Test boolean</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"toggle\">\n<｜DSML｜parameter name=\"enabled\" string=\"false\">true</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Test boolean", "", &[("toggle", r#"{"enabled": true}"#)]),
        thinking(LLAMA_CPP, DSML, "Test array</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"todo_list\">\n<｜DSML｜parameter name=\"todos\" string=\"false\">[\"buy milk\",\"walk dog\"]</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Test array", "", &[("todo_list", r#"{"todos": ["buy milk", "walk dog"]}"#)]),
        thinking(LLAMA_CPP, DSML, "Test object</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"set_config\">\n<｜DSML｜parameter name=\"config\" string=\"false\">{\"theme\":\"dark\",\"level\":2}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Test object", "", &[("set_config", r#"{"config": {"theme": "dark", "level": 2}}"#)]),
        thinking(LLAMA_CPP, DSML, "</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_time\">\n<｜DSML｜parameter name=\"city\" string=\"true\">XYZCITY</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "", "", &[("get_time", r#"{"city": "XYZCITY"}"#)]),
        thinking(LLAMA_CPP, DSML, "Multi-arg call</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"magic_int\">\n<｜DSML｜parameter name=\"ref\" string=\"false\">42</｜DSML｜parameter>\n<｜DSML｜parameter name=\"name\" string=\"true\">foo bar</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "Multi-arg call", "", &[("magic_int", r#"{"ref": 42, "name": "foo bar"}"#)]),
        // llama.cpp: DeepSeek V4 names the block `tool_calls`.
        case(LLAMA_CPP, DSML, "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"special_function\">\n<｜DSML｜parameter name=\"arg1\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        // Prose only.
        case(LLAMA_CPP, DSML, "Hello, world!\nWhat's up?", "Hello, world!\nWhat's up?", &[]),
        // The DSML markers are recognized without knowing the format, too.
        case(LLAMA_CPP, "auto", "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"special_function\">\n<｜DSML｜parameter name=\"arg1\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
    ]);
}

// --- Apertus -----------------------------------------------------------------------------

#[test]
fn apertus() {
    check_all(&[
        // llama.cpp: Apertus-8B-Instruct, FUNC_NAME_AS_KEY.
        case(LLAMA_CPP, "apertus", "<|tools_prefix|>[{\"special_function\": {\"arg1\": 1}}]<|tools_suffix|>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        case(VLLM_APERTUS, "apertus", "Let me check the weather for you. <|tools_prefix|>[{\"get_weather\": {\"location\": \"Paris\"}}]<|tools_suffix|>",
            "Let me check the weather for you.", &[("get_weather", r#"{"location": "Paris"}"#)]),
        case(VLLM_APERTUS, "apertus", "<|tools_prefix|>[{\"get_weather\": {\"location\": \"London\"}}, {\"get_time\": {\"location\": \"London\"}}]<|tools_suffix|>",
            "", &[("get_weather", r#"{"location": "London"}"#), ("get_time", r#"{"location": "London"}"#)]),
        case(VLLM_APERTUS, "apertus", "<|tools_prefix|>[{\"get_weather\": {\"location\": \"San Francisco\", \"unit\": \"celsius\"}}]",
            "", &[("get_weather", r#"{"location": "San Francisco", "unit": "celsius"}"#)]),
        case(VLLM_APERTUS, "apertus", "<|tools_prefix|>[{\"complex_function\": {\"nested\": {\"inner\": \"value\"}, \"list\": [\"a\", \"b\"]}}]<|tools_suffix|>",
            "", &[("complex_function", r#"{"nested": {"inner": "value"}, "list": ["a", "b"]}"#)]),
        case(OLLAMA_APERTUS, "apertus", "I will check.<|tools_prefix|>[{\"get_weather\":{\"city\":\"Zurich\"}},{\"get_time\":{\"offset\":2,\"dst\":true}}]<|tools_suffix|>",
            "I will check.", &[("get_weather", r#"{"city": "Zurich"}"#), ("get_time", r#"{"offset": 2, "dst": true}"#)]),
        // A call ends the reasoning without <|inner_suffix|>.
        case(OLLAMA_APERTUS, "apertus", "<|inner_prefix|>Need weather.<|tools_prefix|>[{\"get_weather\":{\"city\":\"Bern\"}}]<|tools_suffix|>",
            "", &[("get_weather", r#"{"city": "Bern"}"#)]).with_thinking("Need weather."),
        case(OLLAMA_APERTUS, "apertus", "<|assistant_start|><|inner_prefix|>Think.<|inner_suffix|>Answer.<|tools_prefix|>[{\"lookup\":{\"id\":\"42\"}}]<|tools_suffix|><|assistant_end|>",
            "Answer.", &[("lookup", r#"{"id": "42"}"#)]).with_thinking("Think."),
        case(OLLAMA_APERTUS, "apertus", "Before.<|tools_prefix|>[{\"first\":{\"x\":1}}]<|tools_suffix|>Between.<|tools_prefix|>[{\"second\":{\"y\":2}}]<|tools_suffix|>After.",
            "Before.Between.After.", &[("first", r#"{"x": 1}"#), ("second", r#"{"y": 2}"#)]),
        case(OLLAMA_APERTUS, "apertus", "<|assistant_start|>Before.<|inner_prefix|>Reason carefully.<|inner_suffix|>After.<|assistant_end|>",
            "Before.After.", &[]).with_thinking("Reason carefully."),
        // vLLM's Apertus reasoning-parser tests (DELIBERATED_TOOL_CALL).
        case("vllm-project/vllm, Apertus reasoning-parser tests", "apertus",
            "<|inner_prefix|>Check the weather.<|inner_suffix|><|tools_prefix|>[{\"get_weather\": {\"city\": \"Bern\"}}]<|tools_suffix|>",
            "", &[("get_weather", r#"{"city": "Bern"}"#)]).with_thinking("Check the weather."),
        // SGLang's Apertus2509Detector tests: two blocks, then text.
        case("sgl-project/sglang, Apertus2509Detector tests", "apertus",
            "<|tools_prefix|>[{\"get_weather\": {}}]<|tools_suffix|><|tools_prefix|>[{\"get_time\": {}}]<|tools_suffix|>done",
            "done", &[("get_weather", "{}"), ("get_time", "{}")]),
        case(LLAMA_CPP, "auto", "<|tools_prefix|>[{\"special_function\": {\"arg1\": 1}}]<|tools_suffix|>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
    ]);
}

// --- Functionary v3.2 --------------------------------------------------------------------

const FV32: &str = "functionary-v3.2";

#[test]
fn functionary_v32() {
    check_all(&[
        case(
            LLAMA_CPP_OLD,
            FV32,
            "all\nHello, world!\nnono\nWhat's up?>>>special_function\n{\"arg1\": 1}\n",
            "Hello, world!\nnono\nWhat's up?",
            &[("special_function", r#"{"arg1": 1}"#)],
        ),
        // The `python` tool takes raw code: llama.cpp makes it {"code": …}.
        case(
            LLAMA_CPP_OLD,
            FV32,
            "python\n# This is a program:\nprint('hey')",
            "",
            &[(
                "python",
                r##"{"code": "# This is a program:\nprint('hey')"}"##,
            )],
        ),
        case(
            LLAMA_CPP_OLD,
            FV32,
            "special_function\n{\"arg1\": 1} \n                    ",
            "",
            &[("special_function", r#"{"arg1": 1}"#)],
        ),
        case(
            LLAMA_CPP_OLD,
            FV32,
            "all\nHello, world!\nWhat's up?",
            "Hello, world!\nWhat's up?",
            &[],
        ),
        case(
            LLAMA_CPP,
            FV32,
            "special_function\n{\"arg1\": 1}",
            "",
            &[("special_function", r#"{"arg1": 1}"#)],
        ),
        // Not a peer's vector: llama.cpp's first case, after the `>>>` its prompt ends with.
        case(
            OURS,
            FV32,
            ">>>all\nHello, world!\nnono\nWhat's up?>>>special_function\n{\"arg1\": 1}\n",
            "Hello, world!\nnono\nWhat's up?",
            &[("special_function", r#"{"arg1": 1}"#)],
        ),
    ]);
}

// --- Single cases of known formats ---------------------------------------------------

#[test]
fn hermes_variants() {
    check_all(&[
        // Some models wrap the call in <tools> instead of <tool_call>.
        case(LLAMA_CPP_OLD, "hermes", "<tools>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tools>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        case(LLAMA_CPP_OLD, "hermes", "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        case(LLAMA_CPP_OLD, "hermes", "Hello, world!\nWhat's up?<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>",
            "Hello, world!\nWhat's up?", &[("special_function", r#"{"arg1": 1}"#)]),
        case(LLAMA_CPP_OLD, "hermes", "<function=special_function>{\"arg1\": 1}</function>\n<function=python>{\"code\":\"print('hello')\"}</function>",
            "", &[("special_function", r#"{"arg1": 1}"#), ("python", r#"{"code": "print('hello')"}"#)]),
    ]);
}

/// The other spellings llama.cpp's Hermes parser reads (its vectors, one call each):
/// other tags, fences, bare JSON, and a reply that ends with a bare call.
#[test]
fn hermes_other_spellings() {
    const CALL: &[(&str, &str)] = &[("special_function", r#"{"arg1": 1}"#)];
    check_all(&[
        case(LLAMA_CPP_HERMES, "hermes", "<function name=\"special_function\">\n{\"arg1\": 1}\n</function>", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "<tool>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool>", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "<response>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</response>", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "```xml\n<response>\n    {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</response>\n```", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "```xml\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n```", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "```\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n```", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "```\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n```", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "```json\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n```", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "```json\n\n                    <function_call> {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}} \n                    </function_call> \n``` ", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "<json>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</json>", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "<xml>\n  {\n    \"name\": \"special_function\", \"arguments\": {\"arg1\": 1}\n  }\n</xml>", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "<JSON>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</JSON>", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "{\n  \"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}", "", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "This is not a tool call:\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}", "This is not a tool call:", CALL),
        case(LLAMA_CPP_HERMES, "hermes", "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\":\"print('hello')\"}}\n</tool_call>",
            "", &[("special_function", r#"{"arg1": 1}"#), ("python", r#"{"code": "print('hello')"}"#)]),
        case(LLAMA_CPP_HERMES, "hermes", "Hello, world!\nWhat's up?", "Hello, world!\nWhat's up?", &[]),
    ]);
}

#[test]
fn qwen3_coder_without_its_opening_tag() {
    check_all(&[
        // llama.cpp: "Some models skip the opening <tool_call> and go straight to <function=>".
        case(LLAMA_CPP, "qwen3-coder", "<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        case(LLAMA_CPP, "qwen3-coder", "Let me call it.\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
            "Let me call it.", &[("special_function", r#"{"arg1": 1}"#)]),
        case(LLAMA_CPP, "qwen3-coder", "<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=special_function_with_opt>\n<parameter=arg1>\n1\n</parameter>\n<parameter=arg2>\n2\n</parameter>\n</function>\n</tool_call>",
            "", &[("special_function", r#"{"arg1": 1}"#), ("special_function_with_opt", r#"{"arg1": 1, "arg2": 2}"#)]),
        case(LLAMA_CPP, "qwen3-coder", "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
    ]);
}

#[test]
fn llama3_json() {
    check_all(&[
        case(LLAMA_CPP_OLD, "llama3", "{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}}",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        case(VLLM_LLAMA3, "llama3", "{\"name\": \"searchTool\", \"parameters\": {\"query\": \"test1\"}}; {\"name\": \"getOpenIncidentsTool\", \"parameters\": {}}; {\"name\": \"searchTool\", \"parameters\": {\"query\": \"test2\"}}",
            "", &[("searchTool", r#"{"query": "test1"}"#), ("getOpenIncidentsTool", "{}"), ("searchTool", r#"{"query": "test2"}"#)]),
        case(VLLM_LLAMA3, "llama3", "{\"name\": \"searchTool\", \"arguments\": {\"query\": \"test\"}}",
            "", &[("searchTool", r#"{"query": "test"}"#)]),
        // Each <|python_tag|> starts a call of its own.
        case(SGLANG_LLAMA32, "llama3", "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {}}<|python_tag|>{\"name\": \"get_tourist_attractions\", \"parameters\": {}}",
            "", &[("get_weather", "{}"), ("get_tourist_attractions", "{}")]),
        // A broken call, then a good one: SGLang checks the call only; the broken
        // object stays visible text here.
        case(SGLANG_LLAMA32, "llama3", "{\"name\": \"get_weather\", \"parameters\": {{\"name\": \"get_weather\", \"parameters\": {}}",
            "{\"name\": \"get_weather\", \"parameters\": {", &[("get_weather", "{}")]),
        case(SGLANG_LLAMA32, "llama3", "Some intro. <|python_tag|>{\"name\": \"get_weather\", \"parameters\": {}}",
            "Some intro.", &[("get_weather", "{}")]),
    ]);
}

#[test]
fn pythonic_and_bare_json_lists() {
    check_all(&[
        // A pythonic call list after text.
        case(SGLANG_PYTHONIC, "pythonic", "Here's a tool call: [get_weather(location='New York', unit='celsius')]",
            "Here's a tool call:", &[("get_weather", r#"{"location": "New York", "unit": "celsius"}"#)]),
        case(VLLM_PYTHONIC, "pythonic", "[get_weather(city='San Francisco', metric='celsius')]",
            "", &[("get_weather", r#"{"city": "San Francisco", "metric": "celsius"}"#)]),
        case(VLLM_PYTHONIC, "pythonic", "[register_user(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, role=None, passed_test=True, aliases=['John', 'Johnny'])]",
            "", &[("register_user", r#"{"name": "John Doe", "age": 37, "address": {"city": "San Francisco", "state": "CA"}, "role": null, "passed_test": true, "aliases": ["John", "Johnny"]}"#)]),
        case(LLAMA_CPP, "pythonic", "Use this format: [link text](url). Example: [Wikipedia](https://www.wikipedia.org).",
            "Use this format: [link text](url). Example: [Wikipedia](https://www.wikipedia.org).", &[]),
        // A bare JSON list of calls as the whole reply.
        case(OLLAMA_TOOLS, "auto", "[{\"name\": \"get_current_weather\", \"arguments\": {\"format\":\"fahrenheit\",\"location\":\"San Francisco, CA\"}},{\"name\": \"get_current_weather\", \"arguments\": {\"format\":\"celsius\",\"location\":\"Toronto, Canada\"}}]",
            "", &[("get_current_weather", r#"{"format": "fahrenheit", "location": "San Francisco, CA"}"#), ("get_current_weather", r#"{"format": "celsius", "location": "Toronto, Canada"}"#)]),
        case(OLLAMA_TOOLS, "llama3", "[{\"name\": \"get_current_weather\", \"arguments\": {\"format\":\"fahrenheit\",\"location\":\"San Francisco, CA\"}}, {\"name\": \"get_current_weather\", \"arguments\": {\"format\":\"celsius\",\"location\":\"Toronto, Canada\"}}] some tokens after call",
            "some tokens after call", &[("get_current_weather", r#"{"format": "fahrenheit", "location": "San Francisco, CA"}"#), ("get_current_weather", r#"{"format": "celsius", "location": "Toronto, Canada"}"#)]),
        // After text, a bare list is text.
        case(OLLAMA_TOOLS, "auto", "some tokens before call [{\"name\": \"get_current_weather\", \"arguments\": {\"format\":\"fahrenheit\",\"location\":\"San Francisco, CA\"}}, {\"name\": \"get_current_weather\", \"arguments\": {\"format\":\"celsius\",\"location\":\"Toronto, Canada\"}}]",
            "some tokens before call [{\"name\": \"get_current_weather\", \"arguments\": {\"format\":\"fahrenheit\",\"location\":\"San Francisco, CA\"}}, {\"name\": \"get_current_weather\", \"arguments\": {\"format\":\"celsius\",\"location\":\"Toronto, Canada\"}}]", &[]),
    ]);
}

#[test]
fn command_a_text_sections() {
    check_all(&[
        // llama.cpp: Cohere2 MoE (Command-A family): text in <|START_TEXT|>…<|END_TEXT|>,
        // the output starting inside the reasoning the prompt opened.
        thinking(LLAMA_CPP, "command-r7b", "I'm\nthinking<|END_THINKING|><|START_TEXT|>Hello, world!\nWhat's up?<|END_TEXT|>",
            "I'm\nthinking", "Hello, world!\nWhat's up?", &[]),
        thinking(LLAMA_CPP, "command-r7b", "<|END_THINKING|><|START_TEXT|>Hello, world!\nWhat's up?<|END_TEXT|>",
            "", "Hello, world!\nWhat's up?", &[]),
        thinking(LLAMA_CPP, "command-r7b", "I'm\nthinking<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"special_function\", \"parameters\": {\"arg1\": 1}},\n    {\"tool_call_id\": \"1\", \"tool_name\": \"python\", \"parameters\": {\"code\": \"print('hey')\"}}\n]<|END_ACTION|>",
            "I'm\nthinking", "", &[("special_function", r#"{"arg1": 1}"#), ("python", r#"{"code": "print('hey')"}"#)]),
        case(LLAMA_CPP, "command-r7b", "<|START_RESPONSE|>Hello, world!\nWhat's up?<|END_RESPONSE|>",
            "Hello, world!\nWhat's up?", &[]),
    ]);
}

#[test]
fn granite_response_wrapper() {
    check_all(&[
        case(
            LLAMA_CPP_OLD,
            "granite",
            "<think>I'm\nthinking</think><response>Hello, world!\nWhat's up?</response>",
            "Hello, world!\nWhat's up?",
            &[],
        )
        .with_thinking("I'm\nthinking"),
        case(
            LLAMA_CPP_OLD,
            "granite",
            "<|tool_call|>[{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}]",
            "",
            &[("special_function", r#"{"arg1": 1}"#)],
        ),
    ]);
}

#[test]
fn deepseek_r1_and_v31_variants() {
    check_all(&[
        // R1: the section opened by `<｜tool▁calls｜>`, without a call-begin token.
        case(LLAMA_CPP_OLD, "deepseek-r1", "<｜tool▁calls｜>function<｜tool▁sep｜>special_function\n```json\n{\"arg1\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        case(LLAMA_CPP_OLD, "deepseek-r1", "<think>I'm\nthinking</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>special_function\n```json\n{\"arg1\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "", &[("special_function", r#"{"arg1": 1}"#)]).with_thinking("I'm\nthinking"),
        case(LLAMA_CPP, "deepseek-r1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>special_function\n```json\n{\"arg1\": 1}```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "", &[("special_function", r#"{"arg1": 1}"#)]),
        case(LLAMA_CPP, "deepseek-v3.1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"city\": \"XYZCITY\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "", &[("get_time", r#"{"city": "XYZCITY"}"#)]),
        thinking(LLAMA_CPP, "deepseek-v3.1", "REASONING</think>CONTENT<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "REASONING", "CONTENT", &[("get_time", r#"{"city": "Paris"}"#), ("get_weather", r#"{"city": "Paris"}"#)]),
        // V3.1 without the outer `<｜tool▁calls▁begin｜>` (no peer vector found; the begin
        // tokens are optional in llama.cpp's DeepSeek parsers).
        thinking(OURS, "deepseek-v3.1", "REASONING</think><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"city\": \"Tokyo\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "REASONING", "", &[("get_time", r#"{"city": "Tokyo"}"#)]),
        case(VLLM_V31, "deepseek-v3.1", "normal text<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>foo<｜tool▁sep｜>{\"x\":1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "normal text", &[("foo", r#"{"x": 1}"#)]),
        // vLLM refuses a section whose call-begin tokens are missing
        // (`<｜tool▁calls▁begin｜>foo<｜tool▁sep｜>{"x":1}<｜tool▁calls▁end｜>`); llama.cpp's
        // DeepSeek parsers make the call-begin token optional, and this parser follows
        // llama.cpp (see `<｜tool▁calls｜>function…` above).
        case(VLLM_V31, "deepseek-v3.1", "some prefix text<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>foo<｜tool▁sep｜>{\"x\":1}<｜tool▁call▁end｜><｜tool▁call▁begin｜>bar<｜tool▁sep｜>{\"y\":2}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "some prefix text", &[("foo", r#"{"x": 1}"#), ("bar", r#"{"y": 2}"#)]),
    ]);
}

impl Peer {
    /// The same case, with this reasoning expected.
    const fn with_thinking(mut self, thinking: &'static str) -> Self {
        self.thinking = thinking;
        self
    }
}
