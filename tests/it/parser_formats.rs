//! The call formats of issue 12, each with cases of its own: plain calls, several calls,
//! text around them, reasoning (calls drafted there are never calls), markers inside
//! strings, unicode, malformed blocks and negative cases. Every case is also fed in
//! every two-piece split and several piece sizes (see `parser::check_with`).

use super::parser::{catalog, check_with};
use serde_json::{json, Value};
use services_ai::{
    detect_template, format_by_name, prompt_opens_reasoning, FunctionCallParser, ParserOptions,
    TemplateProfile, ToolCallFormat,
};

/// A parser for `format` as a model of that format is parsed (its profile's options).
fn for_format(name: &str) -> FunctionCallParser {
    let format = format_by_name(name).unwrap_or_else(|| panic!("no format {name}"));
    let options = TemplateProfile {
        format,
        reasoning: None,
    }
    .parser_options(false);
    FunctionCallParser::new(catalog()).with_options(options)
}

fn auto() -> FunctionCallParser {
    FunctionCallParser::new(catalog())
}

/// One case: `input` in `format` ("auto" for every format) gives this text, thinking,
/// calls and number of diagnostics.
struct Case<'a> {
    format: &'a str,
    input: &'a str,
    text: &'a str,
    thinking: &'a str,
    calls: Vec<(&'a str, Value)>,
    diagnostics: usize,
}

fn case<'a>(format: &'a str, input: &'a str) -> Case<'a> {
    Case {
        format,
        input,
        text: "",
        thinking: "",
        calls: Vec::new(),
        diagnostics: 0,
    }
}

impl<'a> Case<'a> {
    fn text(mut self, t: &'a str) -> Self {
        self.text = t;
        self
    }
    fn thinking(mut self, t: &'a str) -> Self {
        self.thinking = t;
        self
    }
    fn call(mut self, name: &'a str, args: Value) -> Self {
        self.calls.push((name, args));
        self
    }
    fn diagnostics(mut self, n: usize) -> Self {
        self.diagnostics = n;
        self
    }
    fn check(self) {
        let parser = if self.format == "auto" {
            auto()
        } else {
            for_format(self.format)
        };
        check_with(
            &parser,
            self.input,
            self.text,
            self.thinking,
            &self.calls,
            self.diagnostics,
        );
        // Every format's markers are also recognized without knowing the format,
        // except the ones prose could contain.
        if !matches!(
            self.format,
            "auto" | "functionary-v3.2" | "generic" | "granite"
        ) {
            let auto = auto().parse_all(self.input);
            assert_eq!(
                auto.tool_calls.len(),
                self.calls.len(),
                "auto on {:?}",
                self.input
            );
        }
    }
}

#[test]
fn glm() {
    case("glm", "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a.txt</arg_value>\n<arg_key>start_line</arg_key>\n<arg_value>3</arg_value>\n</tool_call>")
        .call("read_file", json!({"path": "a.txt", "start_line": 3}))
        .check();
    case("glm", "<think>plan <tool_call>run</tool_call></think>Sure.<tool_call>run\n<arg_key>command</arg_key>\n<arg_value>echo \"<tool_call>\"</arg_value>\n</tool_call>")
        .thinking("plan <tool_call>run</tool_call>")
        .text("Sure.")
        .call("run", json!({"command": "echo \"<tool_call>\""}))
        .check();
    // Untyped values: JSON when they parse, else text (GLM writes non-strings with tojson).
    case("glm", "<tool_call>other\n<arg_key>n</arg_key>\n<arg_value>{\"a\": [1]}</arg_value>\n<arg_key>s</arg_key>\n<arg_value>héllo 🎉</arg_value>\n</tool_call>")
        .call("other", json!({"n": {"a": [1]}, "s": "héllo 🎉"}))
        .check();
    case("glm", "<tool_call>get_time</tool_call>")
        .call("get_time", json!({}))
        .check();
    case(
        "glm",
        "<tool_call>read_file\n<arg_key>path</arg_key>\n</tool_call>after",
    )
    .text("after")
    .diagnostics(1)
    .check();
}

#[test]
fn harmony() {
    case("harmony", "<|channel|>analysis<|message|>Need the file. <tool_call>{\"name\": \"run\"}</tool_call><|end|><|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": \"<|call|> é\"}<|call|>")
        .thinking("Need the file. <tool_call>{\"name\": \"run\"}</tool_call>")
        .call("read_file", json!({"path": "<|call|> é"}))
        .check();
    case("harmony", "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>The answer is 4.<|return|>")
        .thinking("think")
        .text("The answer is 4.")
        .check();
    case("harmony", "<|start|>assistant to=functions.run<|channel|>commentary json<|message|>{\"command\": \"ls\"}<|call|>")
        .call("run", json!({"command": "ls"}))
        .check();
    case("harmony", "<|channel|>commentary<|message|>Checking first.<|end|><|start|>assistant<|channel|>commentary to=functions.run <|constrain|>json<|message|>{\"command\": \"ls\"}")
        .text("Checking first.")
        .call("run", json!({"command": "ls"}))
        .check();
    case(
        "harmony",
        "<|channel|>commentary to=functions.run <|constrain|>json<|message|>{\"command\": ",
    )
    .diagnostics(1)
    .check();
}

#[test]
fn deepseek() {
    case("deepseek-r1", "<think>Let me\nthink</think>Calling.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>run\n```json\n{\"command\": \"ls\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>")
        .thinking("Let me\nthink")
        .text("Calling.")
        .call("read_file", json!({"path": "a"}))
        .call("run", json!({"command": "ls"}))
        .check();
    case("deepseek-v3.1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"<｜tool▁calls▁end｜>\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>")
        .call("read_file", json!({"path": "<｜tool▁calls▁end｜>"}))
        .check();
    // The end marker is often cut off by the end of generation.
    case("deepseek-v3.1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜>")
        .call("read_file", json!({"path": "a"}))
        .check();
    case("deepseek-v3.1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": oops}<｜tool▁call▁end｜><｜tool▁calls▁end｜>done")
        .text("done")
        .diagnostics(1)
        .check();
}

#[test]
fn kimi_k2() {
    case("kimi-k2", "Let me look.<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"a\"}<|tool_call_end|><|tool_call_begin|>functions.run:1<|tool_call_argument_begin|>{\"command\": \"ls\"}<|tool_call_end|><|tool_calls_section_end|>")
        .text("Let me look.")
        .call("read_file", json!({"path": "a"}))
        .call("run", json!({"command": "ls"}))
        .check();
    case(
        "kimi-k2",
        "<think>maybe <|tool_calls_section_begin|></think>No tools needed.",
    )
    .thinking("maybe <|tool_calls_section_begin|>")
    .text("No tools needed.")
    .check();
}

#[test]
fn minimax_m2() {
    case("minimax-m2", "<think>ok</think>\n<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">  notes/é.txt \n</parameter>\n<parameter name=\"start_line\">10</parameter>\n</invoke>\n<invoke name=\"run\">\n<parameter name=\"command\">ls</parameter>\n</invoke>\n</minimax:tool_call>")
        .thinking("ok")
        .call("read_file", json!({"path": "notes/é.txt", "start_line": 10}))
        .call("run", json!({"command": "ls"}))
        .check();
    case(
        "minimax-m2",
        "<minimax:tool_call>\n<invoke>\n</invoke>\n</minimax:tool_call>tail",
    )
    .text("tail")
    .diagnostics(1)
    .check();
}

#[test]
fn pythonic_and_lfm2() {
    case("pythonic", "[read_file(path='a b.txt', start_line=\"2\"), run(command=\"echo ')'\", dry_run=True, args=[1, None])]")
        .call("read_file", json!({"path": "a b.txt", "start_line": 2}))
        .call("run", json!({"command": "echo ')'", "dry_run": true, "args": [1, null]}))
        .check();
    case("pythonic", "[Note] this is prose")
        .text("[Note] this is prose")
        .check();
    case("pythonic", "[1, 2, 3] is a list")
        .text("[1, 2, 3] is a list")
        .check();
    // A pythonic list after text is a call when the format is known (as SGLang's
    // PythonicDetector reads it); without knowing it, only a whole reply is.
    check_with(
        &for_format("pythonic"),
        "Text first [read_file(path='a')]",
        "Text first",
        "",
        &[("read_file", json!({"path": "a"}))],
        0,
    );
    let prose = auto().parse_all("Text first [read_file(path='a')]");
    assert!(prose.tool_calls.is_empty());
    case(
        "lfm2",
        "Sure.<|tool_call_start|>[read_file(path=\"a\")]<|tool_call_end|>Done.",
    )
    .text("Sure.Done.")
    .call("read_file", json!({"path": "a"}))
    .check();
    case("lfm2", "<|tool_call_start|>[{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}]<|tool_call_end|>")
        .call("run", json!({"command": "ls"}))
        .check();
    case(
        "pythonic",
        "<|python_start|>[run(command=\"ls\")]<|python_end|>",
    )
    .call("run", json!({"command": "ls"}))
    .check();
}

#[test]
fn llama_builtins_and_functionary() {
    case(
        "llama3",
        "<|python_tag|>brave_search.call(query=\"rust <tool_call>\")",
    )
    .call("brave_search", json!({"query": "rust <tool_call>"}))
    .check();
    case("llama3", "<|python_tag|>print(1 + 1)<|eom_id|>")
        .call("python", json!({"code": "print(1 + 1)"}))
        .check();
    case(
        "functionary-v3.1",
        "Reading.<function=read_file>{\"path\": \"</function>\"}</function>",
    )
    .text("Reading.")
    .call("read_file", json!({"path": "</function>"}))
    .check();
    case(
        "functionary-v3.2",
        "read_file\n{\"path\": \"a\"}>>>run\n{\"command\": \"ls\"}",
    )
    .call("read_file", json!({"path": "a"}))
    .call("run", json!({"command": "ls"}))
    .check();
    case(
        "functionary-v3.2",
        "all\nHello >>> there? No: a new section.>>>run\n{}",
    )
    .text("Hello")
    .diagnostics(1)
    .call("run", json!({}))
    .check();
    case("functionary-v3.2", "all\nJust text.")
        .text("Just text.")
        .check();
}

#[test]
fn command_r_granite_nemotron_seed() {
    case("command-r7b", "<|START_THINKING|>I'll read it. <|START_ACTION|>[]<|END_ACTION|><|END_THINKING|><|START_ACTION|>[\n  {\"tool_call_id\": \"0\", \"tool_name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}\n]<|END_ACTION|>")
        .thinking("I'll read it. <|START_ACTION|>[]<|END_ACTION|>")
        .call("read_file", json!({"path": "a"}))
        .check();
    case("command-r7b", "<|START_RESPONSE|>Hello!<|END_RESPONSE|>")
        .text("Hello!")
        .check();
    case("granite", "<think>hm</think><response>Calling.</response><|tool_call|>[{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}]")
        .thinking("hm")
        .text("Calling.")
        .call("run", json!({"command": "ls"}))
        .check();
    case("nemotron", "<TOOLCALL>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"</TOOLCALL>\"}}]</TOOLCALL>")
        .call("read_file", json!({"path": "</TOOLCALL>"}))
        .check();
    case("nemotron", "<TOOLCALL>[{\"name\": ]</TOOLCALL>after")
        .text("after")
        .diagnostics(1)
        .check();
    case("seed-oss", "<seed:think>draft <seed:tool_call></seed:think><seed:tool_call>\n<function=read_file>\n<parameter=path>\n  a.txt\n</parameter>\n<parameter=start_line>\n5\n</parameter>\n</function>\n</seed:tool_call>")
        .thinking("draft <seed:tool_call>")
        .call("read_file", json!({"path": "a.txt", "start_line": 5}))
        .check();
}

#[test]
fn mistral_magistral_and_generic() {
    case("mistral", "[THINK]Maybe [TOOL_CALLS]run[ARGS]{}[/THINK]Answer.[TOOL_CALLS][{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}][/TOOL_CALLS]")
        .thinking("Maybe [TOOL_CALLS]run[ARGS]{}")
        .text("Answer.")
        .call("run", json!({"command": "ls"}))
        .check();
    case(
        "generic",
        "{\"tool_calls\": [{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}]}",
    )
    .call("run", json!({"command": "ls"}))
    .check();
    case(
        "generic",
        "{\"tool_call\": {\"name\": \"run\", \"arguments\": {}}}",
    )
    .call("run", json!({}))
    .check();
    case("mistral", "[TOOL_CALLS]run{\"command\": \"ls\"}")
        .call("run", json!({"command": "ls"}))
        .check();
    case("generic", "{\"response\": \"Hi \\\"there\\\"\"}")
        .text("Hi \"there\"")
        .check();
}

#[test]
fn claimed_format_fixes() {
    // A missing </parameter> ends at the next parameter, with a diagnostic.
    case("qwen3-coder", "<tool_call>\n<function=run>\n<parameter=command>\nls\n<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call>")
        .call("run", json!({"command": "ls", "timeout": 5}))
        .diagnostics(1)
        .check();
    // Indentation around values is not part of them.
    case("qwen3-coder", "<tool_call>\n    <function=read_file>\n        <parameter=path>\n        Dallas\n        </parameter>\n    </function>\n</tool_call>")
        .call("read_file", json!({"path": "Dallas"}))
        .check();
    // One stray `}` after a complete object in an unclosed block.
    case(
        "hermes",
        "<tool_call>\n{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}}",
    )
    .call("run", json!({"command": "ls"}))
    .check();
    // [/TOOL_CALLS] does not leak.
    case(
        "mistral",
        "[TOOL_CALLS]run[ARGS]{\"command\": \"ls\"}[/TOOL_CALLS]",
    )
    .call("run", json!({"command": "ls"}))
    .check();
}

/// A bare JSON call is Llama's own spelling; a Hermes model's reply that is one is read
/// as its call, marked as recovered; a format whose calls are not JSON leaves it text.
#[test]
fn bare_json_is_read_for_json_call_formats() {
    let reply = "{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}";
    let hermes = for_format("hermes").parse_all(reply);
    assert_eq!(hermes.tool_calls.len(), 1);
    assert_eq!(hermes.tool_calls[0].recovered.as_deref(), Some("bare JSON"));
    assert_eq!(hermes.text, "");
    let llama = for_format("llama3").parse_all(reply);
    assert_eq!(llama.tool_calls.len(), 1);
    assert_eq!(llama.tool_calls[0].recovered, None, "Llama's own spelling");
    let xml = for_format("qwen3-coder").parse_all(reply);
    assert!(xml.tool_calls.is_empty());
    assert_eq!(xml.text, reply);
}

#[test]
fn starting_in_reasoning_per_format() {
    let options = TemplateProfile {
        format: ToolCallFormat::Mistral,
        reasoning: Some(("[THINK]", "[/THINK]")),
    }
    .parser_options(true);
    let out = FunctionCallParser::new(catalog())
        .with_options(options)
        .parse_all("still thinking [TOOL_CALLS]run[ARGS]{}[/THINK]Done.");
    assert_eq!(out.thinking, "still thinking [TOOL_CALLS]run[ARGS]{}");
    assert_eq!(out.text, "Done.");
    assert!(out.tool_calls.is_empty());
}

/// The real templates in `../shared/templates` (read where they are, never copied).
fn real_template(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/templates")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the real templates are needed at {}: {e}", path.display()))
}

#[test]
fn formats_are_known_from_real_templates() {
    let expected = [
        ("Qwen-Qwen2.5-7B-Instruct.jinja", "hermes"),
        ("Qwen-Qwen3-0.6B.jinja", "hermes"),
        ("Qwen-QwQ-32B.jinja", "hermes"),
        ("Qwen3-Coder.jinja", "qwen3-coder"),
        ("GLM-4.6.jinja", "glm"),
        ("openai-gpt-oss-120b.jinja", "harmony"),
        (
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
            "deepseek-r1",
        ),
        ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3.1"),
        ("moonshotai-Kimi-K2.jinja", "kimi-k2"),
        ("MiniMax-M2.jinja", "minimax-m2"),
        ("meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3"),
        ("meta-llama-Llama-3.3-70B-Instruct.jinja", "llama3"),
        ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral"),
        ("Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistral"),
        (
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
            "command-r7b",
        ),
        ("ibm-granite-granite-3.3-2B-Instruct.jinja", "granite"),
        ("ibm-granite-granite-4.0.jinja", "hermes"),
        ("LFM2-8B-A1B.jinja", "lfm2"),
        ("meetkai-functionary-medium-v3.2.jinja", "functionary-v3.2"),
        (
            "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
            "hermes",
        ),
        ("google-gemma-2-2b-it.jinja", "fenced"),
        ("google-gemma-4-31B-it.jinja", "gemma4"),
    ];
    let mut wrong = Vec::new();
    for (file, format) in expected {
        let got = detect_template(&real_template(file)).format;
        if Some(got) != format_by_name(format) {
            wrong.push(format!("{file}: {} (expected {format})", got.name()));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let qwq = detect_template(&real_template("Qwen-QwQ-32B.jinja"));
    assert!(prompt_opens_reasoning(
        "<|im_start|>assistant\n<think>\n",
        &qwq
    ));
    let _ = ParserOptions::auto();
}

#[test]
fn alternative_spellings_of_known_formats() {
    case("hermes", "<function=run>{\"command\": \"ls\"}</function>")
        .call("run", json!({"command": "ls"}))
        .check();
    case(
        "hermes",
        "<function name=\"run\">{\"command\": \"ls\"}</function>",
    )
    .call("run", json!({"command": "ls"}))
    .check();
    case(
        "hermes",
        "```json\n{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}\n```",
    )
    .call("run", json!({"command": "ls"}))
    .check();
    case(
        "qwen3-coder",
        "<function=run>\n<parameter=command>\nls\n</parameter>\n</function>",
    )
    .call("run", json!({"command": "ls"}))
    .check();
    case(
        "phi4",
        "functools[{\"name\": \"run\", \"arguments\": {\"command\": \"ls\"}}]",
    )
    .call("run", json!({"command": "ls"}))
    .check();
    case("functionary-v3.2", ">>>run\n{\"command\": \"ls\"}")
        .call("run", json!({"command": "ls"}))
        .check();
}

#[test]
fn gemma4() {
    case("gemma4", "<|channel>thought\nMaybe <|tool_call>call:run{}<tool_call|><channel|>Reading.<|tool_call>call:read_file{path:<|\"|>a, \"b\".txt<|\"|>,start_line:2}<tool_call|>")
        .thinking("Maybe <|tool_call>call:run{}<tool_call|>")
        .text("Reading.")
        .call("read_file", json!({"path": "a, \"b\".txt", "start_line": 2}))
        .check();
    case("gemma4", "<|tool_call>call:run{command:<|\"|>ls<|\"|>}<tool_call|><|tool_call>call:broken{a:<|\"|>x}<tool_call|>done")
        .call("run", json!({"command": "ls"}))
        .text("done")
        .diagnostics(1)
        .check();
}
