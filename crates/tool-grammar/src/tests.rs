//! The grammars checked by behaviour: each format's grammar accepts a call written the
//! way the model writes it, the parser reads that call back, and wrong calls (another
//! tool, a wrong type, prose first, cut short) are refused. No model is needed: a small
//! GBNF matcher ([`super::matcher`]) stands in for llama.cpp's.

use super::matcher::Grammar;
use super::*;
use core_models::{ChatMessage, ToolDefinition};
use serde_json::json;
use tool_calls::{FunctionCallParser, TemplateProfile, ToolCatalog};
use ToolCallFormat as F;

fn tool(id: &str, schema: serde_json::Value) -> ToolDefinition {
    ToolDefinition::new(id, id, format!("The {id} tool.")).with_schema(schema)
}

/// Two tools with the same arguments: a path (required) and a line limit.
fn tools() -> Vec<ToolDefinition> {
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"]
    });
    vec![tool("read_file", schema.clone()), tool("list_dir", schema)]
}

fn request(choice: ToolChoice, tools: Vec<ToolDefinition>) -> LlmRequest {
    (LlmRequest::new(vec![ChatMessage::user("hello")]))
        .with_tools(tools)
        .with_tool_choice(choice)
}

fn target(format: ToolCallFormat) -> GrammarTarget {
    GrammarTarget {
        format,
        name_then_args: false,
        ..GrammarTarget::fence()
    }
}

fn grammar(choice: ToolChoice, target: &GrammarTarget) -> ToolGrammar {
    tool_grammar(&request(choice, tools()), target, &SubsetConverter)
        .unwrap()
        .unwrap()
}

/// `read_file(path="notes.txt", limit=5)` as each format writes it.
const CASES: &[(ToolCallFormat, bool, &str)] = &[
    (F::FencedJson, false, "```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\", \"limit\": 5}}\n```"),
    (F::Hermes, false, "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\", \"limit\": 5}}\n</tool_call>"),
    (F::QwenXml, false, "<tool_call>\n<function=read_file>\n<parameter=path>\nnotes.txt\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>"),
    (F::SeedOss, false, "<seed:tool_call>\n<function=read_file>\n<parameter=path>\nnotes.txt\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</seed:tool_call>"),
    (F::Glm, false, "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>notes.txt</arg_value>\n<arg_key>limit</arg_key>\n<arg_value>5</arg_value>\n</tool_call>"),
    (F::MiniMaxM2, false, "<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">notes.txt</parameter>\n<parameter name=\"limit\">5</parameter>\n</invoke>\n</minimax:tool_call>"),
    (F::Llama, false, "{\"name\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\", \"limit\": 5}}"),
    (F::Pythonic, false, "[read_file(path=\"notes.txt\", limit=5)]"),
    (F::Lfm2, false, "<|tool_call_start|>[read_file(path=\"notes.txt\", limit=5)]<|tool_call_end|>"),
    (F::Mistral, false, "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\", \"limit\": 5}, \"id\": \"a1B2c3D4e\"}]"),
    (F::Mistral, true, "[TOOL_CALLS]read_file[ARGS]{\"path\": \"notes.txt\", \"limit\": 5}"),
    (F::Harmony, false, "<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": \"notes.txt\", \"limit\": 5}"),
    (F::DeepSeekR1, false, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"notes.txt\", \"limit\": 5}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"),
    (F::DeepSeekV31, false, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"notes.txt\", \"limit\": 5}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"),
    (F::DeepSeekV32, false, "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">notes.txt</｜DSML｜parameter>\n<｜DSML｜parameter name=\"limit\" string=\"false\">5</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"),
    (F::Apertus, false, "<|tools_prefix|>[{\"read_file\": {\"path\": \"notes.txt\", \"limit\": 5}}]<|tools_suffix|>"),
    (F::KimiK2, false, "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"notes.txt\", \"limit\": 5}<|tool_call_end|><|tool_calls_section_end|>"),
    (F::CommandR7b, false, "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\", \"limit\": 5}}\n]<|END_ACTION|>"),
    (F::Granite, false, "<|tool_call|>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\", \"limit\": 5}}]"),
    (F::Nemotron, false, "<TOOLCALL>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\", \"limit\": 5}}]</TOOLCALL>"),
    (F::Phi4, false, "functools[{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\", \"limit\": 5}}]"),
    (F::Generic, false, "{\"tool_calls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\", \"limit\": 5}}]}"),
    (F::FunctionaryV31, false, "<function=read_file>{\"path\": \"notes.txt\", \"limit\": 5}</function>"),
    (F::FunctionaryV32, false, "read_file\n{\"path\": \"notes.txt\", \"limit\": 5}"),
    (F::Gemma4, false, "<|tool_call>call:read_file{limit:5,path:<|\"|>notes.txt<|\"|>}<tool_call|>"),
];

fn case_target(format: ToolCallFormat, name_then_args: bool) -> GrammarTarget {
    GrammarTarget {
        name_then_args,
        ..target(format)
    }
}

/// What the agent's parser reads from `text` for a model of `format`.
fn parse(format: ToolCallFormat, text: &str) -> tool_calls::ParsedOutput {
    let profile = TemplateProfile {
        format,
        reasoning: None,
    };
    FunctionCallParser::new(ToolCatalog::from_definitions(tools()))
        .with_options(profile.parser_options(false))
        .parse_all(text)
}

#[test]
fn every_format_has_a_case() {
    for format in ToolCallFormat::ALL {
        let covered = CASES.iter().any(|(f, ..)| *f == format)
            || matches!(format, F::InlineJson | F::Reasoning);
        assert!(covered, "{format:?}");
    }
}

#[test]
fn each_format_accepts_its_own_call_and_the_parser_reads_it_back() {
    for &(format, name_then_args, sample) in CASES {
        let g = grammar(ToolChoice::Required, &case_target(format, name_then_args));
        assert!(!g.is_lazy());
        let parsed = Grammar::parse(&g.text);
        assert!(
            parsed.accepts(sample),
            "{format:?} refused {sample}\n{}",
            g.text
        );

        let out = parse(format, sample);
        assert_eq!(out.tool_calls.len(), 1, "{format:?}: {out:?}");
        let call = &out.tool_calls[0];
        assert_eq!(call.tool_id, "read_file", "{format:?}");
        assert_eq!(
            *call.parameters,
            json!({"path": "notes.txt", "limit": 5}),
            "{format:?}"
        );
        assert!(out.diagnostics.is_empty(), "{format:?}: {out:?}");
        assert_eq!(out.text.trim(), "", "{format:?}");
    }
}

#[test]
fn each_format_refuses_wrong_calls() {
    for &(format, name_then_args, sample) in CASES {
        let g = grammar(ToolChoice::Required, &case_target(format, name_then_args));
        let parsed = Grammar::parse(&g.text);
        let wrong = [
            ("an unknown tool", sample.replace("read_file", "remove_all")),
            ("a boolean limit", sample.replace('5', "true")),
            ("prose first", format!("Sure, reading it. {sample}")),
            ("cut short", sample[..sample.len() - 1].to_string()),
            ("nothing", String::new()),
        ];
        for (what, text) in wrong {
            assert!(!parsed.accepts(&text), "{format:?} accepted {what}: {text}");
        }
        // Both tools are allowed; a named one alone.
        let other = sample.replace("read_file", "list_dir");
        assert!(parsed.accepts(&other), "{format:?}: {other}");
        let named = grammar(
            ToolChoice::Tool("list_dir".into()),
            &case_target(format, name_then_args),
        );
        let named = Grammar::parse(&named.text);
        assert!(named.accepts(&other), "{format:?}");
        assert!(!named.accepts(sample), "{format:?}");
    }
}

/// Where llama.cpp starts a lazy grammar in `text`: `^…$` patterns match the whole
/// text, others anywhere; the grammar applies from the first non-empty capture group.
fn trigger_start(triggers: &[String], text: &str) -> Option<usize> {
    triggers
        .iter()
        .filter_map(|pattern| {
            let caps = regex::Regex::new(pattern).unwrap().captures(text)?;
            (1..caps.len())
                .find_map(|i| caps.get(i).filter(|m| !m.is_empty()).map(|m| m.start()))
                .or_else(|| caps.get(0).map(|m| m.start()))
        })
        .min()
}

#[test]
fn auto_waits_for_the_native_opening_and_constrains_from_there() {
    let prose = "I will look at the file first: [1] {\"a\": 1} <b>notes</b>.\n";
    for &(format, name_then_args, sample) in CASES {
        let g = grammar(ToolChoice::Auto, &case_target(format, name_then_args));
        assert!(g.is_lazy(), "{format:?}");
        let parsed = Grammar::parse(&g.text);
        // Functionary v3.2's first section follows the prompt's `>>>`.
        let texts = if format == F::FunctionaryV32 {
            vec![sample.to_string(), format!(">>>all\n{prose}>>>{sample}")]
        } else {
            vec![format!("{prose}{sample}")]
        };
        for text in texts {
            let start = trigger_start(&g.triggers, &text)
                .unwrap_or_else(|| panic!("{format:?}: no trigger in {text}"));
            assert!(
                parsed.accepts(&text[start..]),
                "{format:?}: {}",
                &text[start..]
            );
        }
        assert_eq!(trigger_start(&g.triggers, prose), None, "{format:?}");
    }
}

#[test]
fn required_calls_may_follow_reasoning_and_must_when_the_prompt_opened_it() {
    let hermes = CASES[1].2;
    let thinking = GrammarTarget {
        reasoning: Some(("<think>", "</think>")),
        ..target(F::Hermes)
    };
    let g = Grammar::parse(&grammar(ToolChoice::Required, &thinking).text);
    assert!(g.accepts(hermes));
    assert!(g.accepts(&format!(
        "<think>\nThe user wants </thin notes.txt </think>\n\n{hermes}"
    )));
    assert!(!g.accepts(&format!("<think>never closed {hermes}")));
    assert!(!g.accepts(&format!("<think>a</think>\nSome prose. {hermes}")));

    let opened = GrammarTarget {
        starts_in_thinking: true,
        ..thinking
    };
    let g = Grammar::parse(&grammar(ToolChoice::Required, &opened).text);
    assert!(g.accepts(&format!("I should read it.\n</think>\n\n{hermes}")));
    assert!(!g.accepts(hermes));

    // Each family's own markers.
    for (format, reasoning, before) in [
        (
            F::Mistral,
            ("[THINK]", "[/THINK]"),
            "[THINK]Read it.[/THINK]",
        ),
        (
            F::CommandR7b,
            ("<|START_THINKING|>", "<|END_THINKING|>"),
            "<|START_THINKING|>Read it.<|END_THINKING|>",
        ),
        (
            F::SeedOss,
            ("<seed:think>", "</seed:think>"),
            "<seed:think>Read it.</seed:think>\n",
        ),
        (
            F::Gemma4,
            ("<|channel>thought", "<channel|>"),
            "<|channel>thought\nRead it.<channel|>",
        ),
        (
            F::Harmony,
            ("<|channel|>analysis<|message|>", "<|end|>"),
            "<|channel|>analysis<|message|>Need the file.<|end|><|start|>assistant",
        ),
    ] {
        let (_, _, sample) = CASES.iter().find(|c| c.0 == format && !c.1).unwrap();
        let t = GrammarTarget {
            reasoning: Some(reasoning),
            ..target(format)
        };
        let g = Grammar::parse(&grammar(ToolChoice::Required, &t).text);
        let text = format!("{before}{sample}");
        assert!(g.accepts(&text), "{format:?}: {text}");
        assert!(g.accepts(sample), "{format:?}");
        let out = parse(format, &text);
        assert_eq!(out.tool_calls.len(), 1, "{format:?}: {out:?}");
        assert!(
            out.thinking.contains("Read it") || out.thinking.contains("Need the file"),
            "{out:?}"
        );
    }
}

#[test]
fn several_calls_in_each_formats_own_way_up_to_a_limit() {
    let hermes = CASES[1].2;
    let g = Grammar::parse(&grammar(ToolChoice::Required, &target(F::Hermes)).text);
    assert!(g.accepts(&format!("{hermes}\n{hermes}")));
    assert!(!g.accepts(&[hermes; 9].join("\n")));
    for (format, text) in [
        (F::Pythonic, "[read_file(path=\"a\"), list_dir(path=\"b\", limit=2)]"),
        (F::Mistral, "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"list_dir\", \"arguments\": {\"path\": \"b\"}}]"),
        (F::MiniMaxM2, "<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a</parameter>\n</invoke>\n<invoke name=\"list_dir\">\n<parameter name=\"path\">b</parameter>\n</invoke>\n</minimax:tool_call>"),
        (F::KimiK2, "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"a\"}<|tool_call_end|><|tool_call_begin|>functions.list_dir:1<|tool_call_argument_begin|>{\"path\": \"b\"}<|tool_call_end|><|tool_calls_section_end|>"),
        (F::Gemma4, "<|tool_call>call:read_file{path:<|\"|>a<|\"|>}<tool_call|><|tool_call>call:list_dir{path:<|\"|>b<|\"|>}<tool_call|>"),
    ] {
        let g = Grammar::parse(&grammar(ToolChoice::Required, &target(format)).text);
        assert!(g.accepts(text), "{format:?}");
        let out = parse(format, text);
        let ids: Vec<_> = out.tool_calls.iter().map(|c| c.tool_id.as_str()).collect();
        assert_eq!(ids, ["read_file", "list_dir"], "{format:?}: {out:?}");
    }
}

/// A tool with typed arguments: text, a choice, a flag, a list, and no-schema extras.
fn typed_tool() -> Vec<ToolDefinition> {
    vec![tool(
        "search",
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "mode": {"type": "string", "enum": ["fast", "exact"]},
                "case": {"type": "boolean"},
                "globs": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["query", "case"]
        }),
    )]
}

#[test]
fn arguments_are_typed_by_schema_in_the_per_argument_formats() {
    let check = |format: ToolCallFormat, good: &[&str], bad: &[&str]| {
        let g = tool_grammar(
            &request(ToolChoice::Required, typed_tool()),
            &target(format),
            &SubsetConverter,
        )
        .unwrap()
        .unwrap();
        let g = Grammar::parse(&g.text);
        for text in good {
            assert!(g.accepts(text), "{format:?} refused {text}");
        }
        for text in bad {
            assert!(!g.accepts(text), "{format:?} accepted {text}");
        }
    };
    let qwen =
        |body: &str| format!("<tool_call>\n<function=search>\n{body}</function>\n</tool_call>");
    let p = |k: &str, v: &str| format!("<parameter={k}>\n{v}\n</parameter>\n");
    check(
        F::QwenXml,
        &[
            &qwen(&(p("query", "a < b && c") + &p("case", "true"))),
            &qwen(
                &(p("query", "x")
                    + &p("mode", "exact")
                    + &p("case", "false")
                    + &p("globs", "[\"*.rs\"]")),
            ),
        ],
        &[
            &qwen(&p("query", "x")),
            &qwen(&(p("query", "x") + &p("case", "yes"))),
            &qwen(&(p("query", "x") + &p("mode", "slow") + &p("case", "true"))),
            &qwen(&(p("case", "true") + &p("query", "x"))),
        ],
    );
    check(
        F::Pythonic,
        &[
            "[search(query=\"a\", case=True)]",
            "[search(query=\"a\", mode=\"fast\", case=False, globs=[\"*.rs\"])]",
        ],
        &[
            "[search(query=\"a\", case=true)]",
            "[search(query=\"a\")]",
            "[search(query=a, case=True)]",
        ],
    );
    check(
        F::Gemma4,
        &["<|tool_call>call:search{case:true,globs:[<|\"|>*.rs<|\"|>],mode:<|\"|>fast<|\"|>,query:<|\"|>a, b<|\"|>}<tool_call|>"],
        &["<|tool_call>call:search{case:yes,query:<|\"|>a<|\"|>}<tool_call|>", "<|tool_call>call:search{case:true,mode:<|\"|>slow<|\"|>,query:<|\"|>a<|\"|>}<tool_call|>"],
    );
    // The parser reads the typed values back.
    let out = FunctionCallParser::new(ToolCatalog::from_definitions(typed_tool()))
        .with_options(
            TemplateProfile {
                format: F::QwenXml,
                reasoning: None,
            }
            .parser_options(false),
        )
        .parse_all(&qwen(
            &(p("query", "x") + &p("case", "true") + &p("globs", "[\"*.rs\"]")),
        ));
    assert_eq!(
        *out.tool_calls[0].parameters,
        json!({"query": "x", "case": true, "globs": ["*.rs"]})
    );
}

#[test]
fn a_schema_without_properties_takes_any_arguments() {
    let free = vec![tool("run", json!({"type": "object"}))];
    let g = tool_grammar(
        &request(ToolChoice::Required, free.clone()),
        &target(F::QwenXml),
        &SubsetConverter,
    )
    .unwrap()
    .unwrap();
    let g = Grammar::parse(&g.text);
    assert!(g.accepts(
        "<tool_call>\n<function=run>\n<parameter=cmd>\nls\n</parameter>\n</function>\n</tool_call>"
    ));
    assert!(g.accepts("<tool_call>\n<function=run>\n</function>\n</tool_call>"));
    let g = tool_grammar(
        &request(ToolChoice::Required, free),
        &target(F::Hermes),
        &SubsetConverter,
    )
    .unwrap()
    .unwrap();
    let g = Grammar::parse(&g.text);
    assert!(g.accepts(
        "<tool_call>\n{\"name\": \"run\", \"arguments\": {\"cmd\": [1, \"x\"]}}\n</tool_call>"
    ));
}

#[test]
fn no_tools_or_none_means_no_grammar_and_an_unknown_named_tool_is_an_error() {
    let fence = GrammarTarget::fence();
    assert_eq!(
        tool_grammar(
            &request(ToolChoice::None, tools()),
            &fence,
            &SubsetConverter
        )
        .unwrap(),
        None
    );
    assert_eq!(
        tool_grammar(
            &request(ToolChoice::Required, vec![]),
            &fence,
            &SubsetConverter
        )
        .unwrap(),
        None
    );
    let missing = tool_grammar(
        &request(ToolChoice::Tool("nope".into()), tools()),
        &fence,
        &SubsetConverter,
    );
    assert!(matches!(missing, Err(Error::UnknownTool(_))));
}

#[test]
fn formats_without_a_syntax_of_their_own_use_the_fence() {
    let fence = grammar(ToolChoice::Required, &GrammarTarget::fence());
    for format in [F::InlineJson, F::Reasoning] {
        assert_eq!(
            grammar(ToolChoice::Required, &target(format)),
            fence,
            "{format:?}"
        );
    }
}

#[test]
fn text_up_to_a_marker_ends_at_its_first_occurrence() {
    let mut g = Gbnf::new(&SubsetConverter);
    let until = g.until("abab");
    let g = Grammar::parse(&g.finish(&until));
    for (text, ok) in [
        ("abab", true),
        ("xabab", true),
        ("abaabab", true),
        ("ababab", false),
        ("aba", false),
        ("", false),
    ] {
        assert_eq!(g.accepts(text), ok, "{text}");
    }
}

#[test]
fn a_named_tool_is_one_call() {
    let hermes = CASES[1].2.replace("read_file", "list_dir");
    let g = grammar(ToolChoice::Tool("list_dir".into()), &target(F::Hermes));
    let g = Grammar::parse(&g.text);
    assert!(g.accepts(&hermes));
    assert!(!g.accepts(&format!("{hermes}\n{hermes}")));
}

fn budget(
    choice: ToolChoice,
    starts_in_thinking: bool,
    max_tokens: u32,
) -> Option<ReasoningBudget> {
    let mut req = request(choice, tools());
    req.options.max_tokens = max_tokens;
    let t = GrammarTarget {
        reasoning: Some(("<think>", "</think>")),
        starts_in_thinking,
        ..target(F::Hermes)
    };
    ReasoningBudget::new(&req, &t)
}

#[test]
fn reasoning_before_a_forced_call_ends_after_half_the_reply() {
    assert!(budget(ToolChoice::Auto, true, 10).is_none());
    let none = ReasoningBudget::new(&request(ToolChoice::Required, tools()), &target(F::Hermes));
    assert!(none.is_none());

    // Opened by the prompt: after 5 of 10 tokens the rest of the marker is written.
    let mut b = budget(ToolChoice::Required, true, 10).unwrap();
    for piece in ["I", " should", " read", " it"] {
        assert_eq!(b.push(piece), None);
    }
    assert_eq!(b.push(" </th").as_deref(), Some("ink>"));
    assert_eq!(b.push("more"), None, "once only");

    // Opened by the model; closed in time: nothing to write.
    let mut b = budget(ToolChoice::Required, false, 10).unwrap();
    for piece in ["\n", "<think>", "a", "</think>", "b", "c", "d", "e"] {
        assert_eq!(b.push(piece), None, "{piece}");
    }
    // Not opened at all: the call came first.
    let mut b = budget(ToolChoice::Tool("read_file".into()), false, 4).unwrap();
    for piece in ["<tool_call>", "x", "y", "z"] {
        assert_eq!(b.push(piece), None);
    }
    // Opened by the model and never closed.
    let mut b = budget(ToolChoice::Required, false, 4).unwrap();
    assert_eq!(b.push("<th"), None);
    assert_eq!(b.push("ink>"), None);
    assert_eq!(b.push("a"), None);
    assert_eq!(b.push("b").as_deref(), Some("</think>"));
}

#[test]
fn a_long_reasoning_keeps_only_a_markers_tail() {
    let mut b = budget(ToolChoice::Required, true, 4000).unwrap();
    for _ in 0..1000 {
        assert_eq!(b.push("é thinking </th"), None);
    }
    assert!(b.text.len() <= "</think>".len() + 1, "{}", b.text);
    assert_eq!(b.push("ink>"), None, "a marker across pieces still ends it");
    assert_eq!(b.push("x"), None);
}

#[test]
fn a_choice_among_texts_admits_exactly_those_texts() {
    let mut asked = request(ToolChoice::Auto, tools());
    asked.constraint = Some(core_models::ReplyConstraint::OneOf(vec![
        "answer".into(),
        "read_file".into(),
        "say \"hi\"".into(),
    ]));
    let g = tool_grammar(
        &asked,
        &target(ToolCallFormat::FencedJson),
        &SubsetConverter,
    )
    .unwrap()
    .unwrap();
    assert!(!g.is_lazy());
    assert_eq!(
        g.text,
        "root ::= \"answer\" | \"read_file\" | \"say \\\"hi\\\"\"\n"
    );
    asked.constraint = Some(core_models::ReplyConstraint::OneOf(Vec::new()));
    let g = tool_grammar(
        &asked,
        &target(ToolCallFormat::FencedJson),
        &SubsetConverter,
    )
    .unwrap()
    .unwrap();
    assert_eq!(g.text, "root ::= \"\"\n");
}

/// Hermes models also begin a reply with a bare call object, or one in a fence: in
/// `auto` the grammar holds those too once an offered tool's name is written, and never
/// JSON that names no tool, nor a call after prose (the parser reads that one).
#[test]
fn hermes_bare_and_fenced_calls_at_the_start_are_held() {
    let g = grammar(ToolChoice::Auto, &target(F::Hermes));
    let parsed = Grammar::parse(&g.text);
    let bare = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}";
    for text in [
        bare.to_string(),
        format!("\n{bare}"),
        format!("```json\n{bare}\n```"),
        format!("```\n{bare}\n```"),
        CASES[1].2.to_string(),
    ] {
        let start =
            trigger_start(&g.triggers, &text).unwrap_or_else(|| panic!("no trigger in {text}"));
        assert!(parsed.accepts(&text[start..]), "{}", &text[start..]);
    }
    for text in [
        "{\"name\": \"Alice\", \"age\": 30}",
        "```json\n{\"name\": \"widget\", \"version\": \"1.0\"}\n```",
        &format!("Here is how a call looks: {bare}"),
    ] {
        assert_eq!(trigger_start(&g.triggers, text), None, "{text}");
    }
    // An invented tool is not a call the grammar admits.
    let invented = "{\"name\": \"read_file\", \"arguments\": {\"path\": 5}}";
    assert!(!parsed.accepts(invented));
    // `required` keeps the format's own syntax.
    let required = Grammar::parse(&grammar(ToolChoice::Required, &target(F::Hermes)).text);
    assert!(!required.accepts(bare));
}
