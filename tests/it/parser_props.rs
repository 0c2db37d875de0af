//! Property tests of the tool-call parser: generated outputs are parsed into exactly the
//! generated calls, streaming equals batch for random token splits, and nothing panics.

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use services_ai::{FunctionCallParser, ParsedOutput, ToolCatalog};

fn parser() -> FunctionCallParser {
    FunctionCallParser::new(ToolCatalog::Empty)
}

/// Prose that cannot start a marker or a JSON call.
fn prose() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-Z0-9 .,;:!?'()éü🎉\\n-]{0,40}").unwrap()
}

fn ident() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z][a-z0-9_]{0,12}").unwrap()
}

/// Strings full of things that confuse naive parsers.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::string::string_regex("[a-z {}\\[\\]\"\\\\`<>/:,é🎉\\n]{0,20}").unwrap(),
        Just("```".to_string()),
        Just("</tool_call>".to_string()),
        Just("<tool_call>{\"name\": \"x\"}".to_string()),
        Just("[TOOL_CALLS]".to_string()),
        Just("</think>".to_string()),
        Just("\u{0}\u{1f}".to_string()),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(ident(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn args() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(ident(), json_value(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// XML parameters: string values without `<` and without edge newlines.
fn xml_args() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec(
        (
            ident(),
            proptest::string::string_regex("[a-z0-9 {}\"`é]{0,12}").unwrap(),
        ),
        0..3,
    )
}

/// One call written in one of the formats, with the call it stands for.
fn call_segment() -> impl Strategy<Value = (String, (String, Value))> {
    prop_oneof![
        (ident(), args()).prop_map(|(t, a)| (
            format!(
                "\n```tool_call\n{}\n```\n",
                json!({"tool": t, "parameters": a})
            ),
            (t, a)
        )),
        (ident(), args()).prop_map(|(t, a)| (
            format!(
                "<tool_call>\n{}\n</tool_call>",
                json!({"name": t, "arguments": a})
            ),
            (t, a)
        )),
        (ident(), args()).prop_map(|(t, a)| (
            format!(
                "<tool_call>{}</tool_call>",
                json!({"name": t, "arguments": a.to_string()})
            ),
            (t, a)
        )),
        (ident(), xml_args()).prop_map(|(t, ps)| {
            let mut body = format!("<tool_call>\n<function={t}>\n");
            let mut map = Map::new();
            for (k, v) in ps {
                body.push_str(&format!("<parameter={k}>\n{v}\n</parameter>\n"));
                map.insert(k, Value::String(v.trim().to_string()));
            }
            body.push_str("</function>\n</tool_call>");
            (body, (t, Value::Object(map)))
        }),
        (ident(), args())
            .prop_map(|(t, a)| (format!(" {} ", json!({"tool": t, "parameters": a})), (t, a))),
        (ident(), args()).prop_map(|(t, a)| (
            format!("[TOOL_CALLS]{}", json!([{"name": t, "arguments": a}])),
            (t, a)
        )),
        (ident(), args()).prop_map(|(t, a)| (format!("[TOOL_CALLS]{t}[ARGS]{a}"), (t, a))),
        // DeepSeek V3.2 DSML: raw-text and JSON parameters.
        (ident(), xml_args(), args()).prop_map(|(t, texts, a)| {
            let mut body = format!("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"{t}\">\n");
            let mut map = Map::new();
            for (k, v) in texts {
                body.push_str(&format!(
                    "<｜DSML｜parameter name=\"{k}\" string=\"true\">{v}</｜DSML｜parameter>\n"
                ));
                map.insert(k, Value::String(v));
            }
            if let Value::Object(a) = a {
                for (k, v) in a {
                    body.push_str(&format!(
                        "<｜DSML｜parameter name=\"{k}\" string=\"false\">{v}</｜DSML｜parameter>\n"
                    ));
                    map.insert(k, v);
                }
            }
            body.push_str("</｜DSML｜invoke>\n</｜DSML｜function_calls>");
            (body, (t, Value::Object(map)))
        }),
        // Apertus: the tool's name is the key.
        (ident(), args()).prop_map(|(t, a)| (
            format!(
                "<|tools_prefix|>{}<|tools_suffix|>",
                json!([{ t.clone(): a.clone() }])
            ),
            (t, a)
        )),
    ]
}

/// An output mixing prose, calls and reasoning, with the calls it contains.
fn output() -> impl Strategy<Value = (String, Vec<(String, Value)>)> {
    let segment = prop_oneof![
        3 => prose().prop_map(|p| (p, None)),
        3 => call_segment().prop_map(|(text, call)| (text, Some(call))),
        // Reasoning ends at the first </think>, wherever it stands, so drafts containing
        // one are left out here.
        1 => (prose(), call_segment())
            .prop_filter("no </think> inside the draft", |(_, (c, _))| !c.contains("</think>"))
            .prop_map(|(p, (c, _))| (format!("<think>{p}{c}</think>"), None)),
    ];
    prop::collection::vec(segment, 0..8).prop_map(|segments| {
        let mut text = String::new();
        let mut calls = Vec::new();
        for (s, call) in segments {
            text.push_str(&s);
            calls.extend(call);
        }
        (text, calls)
    })
}

/// Cut `input` into pieces at character boundaries chosen by `cuts`.
fn split(input: &str, cuts: &[usize]) -> Vec<String> {
    let boundaries: Vec<usize> = input
        .char_indices()
        .map(|(i, _)| i)
        .chain([input.len()])
        .collect();
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| boundaries[c % boundaries.len()])
        .collect();
    points.push(0);
    points.push(input.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| input[w[0]..w[1]].to_string())
        .collect()
}

fn streamed(p: &FunctionCallParser, pieces: &[String]) -> ParsedOutput {
    let mut s = p.streaming();
    let mut out = ParsedOutput::default();
    for piece in pieces {
        out.extend(s.process_token(piece));
    }
    out.extend(s.flush());
    out
}

fn summary(out: &ParsedOutput) -> (String, String, Vec<(String, Value)>, Vec<String>) {
    (
        out.text.clone(),
        out.thinking.clone(),
        out.tool_calls
            .iter()
            .map(|c| (c.tool_id.clone(), Value::clone(&c.parameters)))
            .collect(),
        out.diagnostics.clone(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn generated_calls_are_found_exactly((text, calls) in output()) {
        let out = parser().parse_all(&text);
        let found: Vec<(String, Value)> = out.tool_calls.iter().map(|c| (c.tool_id.clone(), Value::clone(&c.parameters))).collect();
        prop_assert_eq!(found, calls, "in {:?}", text);
        prop_assert!(out.diagnostics.is_empty(), "{:?} in {:?}", out.diagnostics, text);
        prop_assert!(!out.text.contains("<tool_call>") && !out.text.contains("[TOOL_CALLS]"), "{:?}", out.text);
    }

    #[test]
    fn streaming_equals_batch_for_random_splits((text, _) in output(), cuts in prop::collection::vec(any::<usize>(), 0..24)) {
        let p = parser();
        let batch = p.parse_all(&text);
        let pieces = split(&text, &cuts);
        prop_assert_eq!(summary(&streamed(&p, &pieces)), summary(&batch), "pieces {:?}", pieces);
    }

    #[test]
    fn marker_soup_never_panics_and_streams_alike(
        parts in prop::collection::vec(prop_oneof![
            Just("```"), Just("```tool_call"), Just("```json\n"), Just("<tool_call>"), Just("</tool_call>"),
            Just("<think>"), Just("</think>"), Just("<|python_tag|>"), Just("[TOOL_CALLS]"), Just("[ARGS]"),
            Just("<function=f>"), Just("<parameter=p>"), Just("</parameter>"), Just("</function>"),
            Just("<arg_key>"), Just("</arg_value>"), Just("[THINK]"), Just("[/THINK]"), Just("<|channel|>"),
            Just("<|message|>"), Just("<|start|>"), Just("<|end|>"), Just("to=functions.f"), Just("analysis"),
            Just("<｜tool▁calls▁begin｜>"), Just("<｜tool▁call▁begin｜>"), Just("<｜tool▁sep｜>"),
            Just("<|tool_calls_section_begin|>"), Just("<|tool_call_begin|>"), Just("<|tool_call_argument_begin|>"),
            Just("<minimax:tool_call>"), Just("<invoke name=\"f\">"), Just("<parameter name=\"p\">"),
            Just("<|START_ACTION|>"), Just("<|END_ACTION|>"), Just("<TOOLCALL>"), Just("<|tool_call|>"),
            Just("<|tool_call_start|>"), Just("<seed:tool_call>"), Just("<seed:think>"), Just("f("), Just(")"),
            Just("a=1"), Just(">>>"), Just("<|START_THINKING|>"), Just("<|END_THINKING|>"),
            Just("<｜DSML｜function_calls>"), Just("</｜DSML｜function_calls>"), Just("<｜DSML｜invoke name=\"f\">"),
            Just("</｜DSML｜invoke>"), Just("<｜DSML｜parameter name=\"p\" string=\"false\">"), Just("</｜DSML｜parameter>"),
            Just("<|tools_prefix|>"), Just("<|tools_suffix|>"), Just("<|inner_prefix|>"), Just("<|inner_suffix|>"),
            Just("<|START_TEXT|>"), Just("<｜tool▁calls｜>"), Just("<｜tool▁call▁end｜>"), Just("<tools>"), Just("</tools>"),
            Just("{"), Just("}"), Just("["), Just("]"), Just("\""), Just("\\"), Just(":"), Just(","), Just(";"),
            Just("\"name\""), Just("\"tool\""), Just("\"arguments\""), Just("\"parameters\""), Just("1"), Just("null"),
            Just(" "), Just("\n"), Just("\r\n"), Just("é"), Just("🎉"), Just("text"),
        ], 0..40),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let text: String = parts.concat();
        let p = parser();
        let batch = p.parse_all(&text);
        prop_assert_eq!(summary(&streamed(&p, &split(&text, &cuts))), summary(&batch));
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>(), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let p = parser();
        let batch = p.parse_all(&text);
        prop_assert_eq!(summary(&streamed(&p, &split(&text, &cuts))), summary(&batch));
    }
}

#[test]
fn the_generator_produces_calls_in_every_format() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = output();
    let (mut calls, mut markers) = (0, std::collections::BTreeSet::new());
    for _ in 0..300 {
        let (text, found) = strategy.new_tree(&mut runner).unwrap().current();
        calls += found.len();
        for marker in [
            "```tool_call",
            "<tool_call>\n{",
            "<tool_call>{",
            "<function=",
            // Only the inline form has this key (its place depends on serde_json's
            // key order, which `preserve_order` changes when the workspace is built).
            "\"parameters\":",
            "[TOOL_CALLS][",
            "[ARGS]",
            "<think>",
            "<｜DSML｜invoke",
            "<|tools_prefix|>",
        ] {
            if text.contains(marker) {
                markers.insert(marker);
            }
        }
    }
    assert!(calls > 300, "only {calls} calls generated");
    assert_eq!(markers.len(), 10, "{markers:?}");
}

/// A Functionary v3.2 reply: `>>>`-separated sections, text (`all`) or calls.
fn functionary_output() -> impl Strategy<Value = (String, Vec<(String, Value)>)> {
    let section = prop_oneof![
        prose().prop_map(|p| (format!("all\n{p}"), None)),
        // `>>>` ends a section even inside a JSON string (the section is not read as
        // JSON until it is complete): such arguments are left out here.
        (ident(), args())
            .prop_filter("a tool name", |(t, _)| t != "all" && t != "python")
            .prop_filter("no >>> in the arguments", |(_, a)| !a
                .to_string()
                .contains(">>>"))
            .prop_map(|(t, a)| (format!("{t}\n{a}"), Some((t, a)))),
    ];
    prop::collection::vec(section, 1..6).prop_map(|sections| {
        let calls = sections.iter().filter_map(|(_, c)| c.clone()).collect();
        let text = sections
            .into_iter()
            .map(|(s, _)| s)
            .collect::<Vec<_>>()
            .join(">>>");
        (text, calls)
    })
}

fn functionary_parser() -> FunctionCallParser {
    let options = services_ai::TemplateProfile {
        format: services_ai::ToolCallFormat::FunctionaryV32,
        reasoning: None,
    }
    .parser_options(false);
    FunctionCallParser::new(ToolCatalog::Empty).with_options(options)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn functionary_sections_are_read_exactly_and_stream_alike(
        (text, calls) in functionary_output(),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let p = functionary_parser();
        let batch = p.parse_all(&text);
        let found: Vec<(String, Value)> = batch.tool_calls.iter().map(|c| (c.tool_id.clone(), Value::clone(&c.parameters))).collect();
        prop_assert_eq!(found, calls, "in {:?}", text);
        prop_assert!(batch.diagnostics.is_empty(), "{:?} in {:?}", batch.diagnostics, text);
        prop_assert_eq!(summary(&streamed(&p, &split(&text, &cuts))), summary(&batch));
    }
}

fn parser_for(format: services_ai::ToolCallFormat) -> FunctionCallParser {
    let options = services_ai::TemplateProfile {
        format,
        reasoning: None,
    }
    .parser_options(false);
    FunctionCallParser::new(ToolCatalog::Empty).with_options(options)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Pythonic lists anywhere in the text (the format known) and bare JSON lists: any
    /// mix of their pieces streams as it parses, without panicking.
    #[test]
    fn list_soup_streams_alike_in_list_formats(
        parts in prop::collection::vec(prop_oneof![
            Just("["), Just("]"), Just("f("), Just("g("), Just(")"), Just("a="), Just("1"), Just("'x'"),
            Just(", "), Just("{"), Just("}"), Just("\"name\": \"f\""), Just("\"arguments\": {}"), Just(":"),
            Just("[TOOL_CALLS]"), Just("<|python_tag|>"), Just("text "), Just("\n"), Just("é"),
        ], 0..40),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        format in prop_oneof![
            Just(services_ai::ToolCallFormat::Pythonic),
            Just(services_ai::ToolCallFormat::Llama),
            Just(services_ai::ToolCallFormat::Generic),
        ],
    ) {
        let text: String = parts.concat();
        let p = parser_for(format);
        let batch = p.parse_all(&text);
        prop_assert_eq!(summary(&streamed(&p, &split(&text, &cuts))), summary(&batch));
    }
}
