//! Each format's call syntax as GBNF: how one call of an offered tool is written, how
//! several follow each other, and the text that opens them (the lazy grammar's trigger).
//!
//! Three families: JSON objects naming the tool inside the format's markers (Hermes,
//! Mistral, Llama, Granite, Command-R7B…); the tool's name as text with its arguments as
//! JSON (harmony, DeepSeek, Kimi-K2, Functionary); and one element per argument (the XML
//! formats, pythonic calls, Gemma 4), where string arguments are raw text up to the
//! closing tag and the others JSON by their schema.

use super::gbnf::{json_literal, literal, Gbnf, SPACE};
use super::GrammarTarget;
use crate::Error;
use core_models::ToolDefinition;
use serde_json::{Map, Value};
use tool_calls::ToolCallFormat as F;

/// The grammar of the calls part of a reply, and the patterns that start it.
pub(super) struct Calls {
    /// A GBNF expression for one or more calls.
    pub expr: String,
    /// Regular expressions (llama.cpp's trigger patterns) that find where the calls
    /// start in free text; the grammar applies from the first capture group on.
    pub triggers: Vec<String>,
    /// Other spellings the format's models write at the start of a reply, held too when
    /// the model may choose (`auto`): their expression (an alternative to `expr`) and
    /// their trigger patterns, which match only once an offered tool's name is written
    /// (so that JSON which is not a call is never forced into one).
    pub also: Option<(String, Vec<String>)>,
}

/// `call` one or more times (up to `max`), `separator` between.
fn repeated(call: &str, separator: &str, max: usize) -> String {
    if max <= 1 {
        return call.to_string();
    }
    format!("{call} ({separator} {call}){{0,{}}}", max - 1)
}

/// A trigger pattern for literal text anywhere in the output.
fn word(text: &str) -> String {
    format!("({})", regex_escape(text))
}

/// `text` with the regular-expression metacharacters escaped (both std::regex and the
/// `regex` crate read the result literally).
pub(super) fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "^$\\.*+?()[]{}|".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Calls that a literal opening marker starts (a lazy grammar's trigger).
fn one(expr: String, trigger: &str) -> Calls {
    Calls {
        expr,
        triggers: vec![word(trigger)],
        also: None,
    }
}

/// Calls inside a section's markers; the opening marker starts a lazy grammar.
fn section(open: &str, calls: &str, close: &str) -> Calls {
    Calls {
        expr: format!("{} {calls} {}", literal(open), literal(close)),
        triggers: vec![word(open)],
        also: None,
    }
}

/// The tools' names as a regex alternation.
fn names_pattern(tools: &[&ToolDefinition]) -> String {
    let names: Vec<String> = tools.iter().map(|t| regex_escape(&t.id)).collect();
    format!("(?:{})", names.join("|"))
}

/// A reply that begins with bare call objects, or with one in a ```` ``` ````,
/// ```` ```json ```` or ```` ```xml ```` fence (as Hermes models write their calls without
/// the tags): the expression, and triggers that match only at the reply's start, once an
/// offered tool's name is written after `"name"` (as llama.cpp's Hermes handler does).
fn bare_and_fenced(
    tools: &[&ToolDefinition],
    call: &str,
    repeated: &dyn Fn(&str, &str) -> String,
) -> (String, Vec<String>) {
    let bare = repeated(call, SPACE);
    let fenced = format!(
        "\"```\" (\"json\" | \"xml\")? sp {} sp \"```\"",
        repeated(call, SPACE)
    );
    let named = format!(r#"\{{\s*"name"\s*:\s*"{}""#, names_pattern(tools));
    (
        format!("( {bare} ) | ( {fenced} )"),
        vec![
            format!(r"^\s*({named})[\s\S]*$"),
            format!(r"^\s*(```(?:json|xml)?\s*{named})[\s\S]*$"),
        ],
    )
}

/// One rule per tool (`{base}-{i} ::= per_tool(tool)`) and `base ::=` their alternation.
fn per_tool(
    g: &mut Gbnf<'_>,
    base: &str,
    tools: &[&ToolDefinition],
    mut write: impl FnMut(&mut Gbnf<'_>, &ToolDefinition) -> Result<String, Error>,
) -> Result<String, Error> {
    let mut names = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let body = write(g, tool)?;
        names.push(g.rule(&format!("{base}-{i}"), body));
    }
    Ok(g.rule(base, names.join(" | ")))
}

/// A JSON object with `fields` in order, then `optional` ones (each may be left out).
fn json_object(fields: &[(&str, String)], optional: &[(&str, String)]) -> String {
    let field = |(key, value): &(&str, String)| {
        format!("{} {SPACE} \":\" {SPACE} {value}", json_literal(key))
    };
    let mut out = String::from("\"{\" sp ");
    out.push_str(
        &fields
            .iter()
            .map(field)
            .collect::<Vec<_>>()
            .join(" sp \",\" sp "),
    );
    for f in optional {
        out.push_str(&format!(" ( sp \",\" sp {} )?", field(f)));
    }
    out.push_str(" sp \"}\"");
    out
}

/// The grammar of a tool's whole arguments object (JSON by its schema).
fn arguments(g: &mut Gbnf<'_>, tool: &ToolDefinition) -> Result<String, Error> {
    g.import_schema(&tool.input_schema)
}

/// A JSON call object `{"<name_key>": "NAME", "<args_key>": {…}}`, per tool.
fn json_call(
    g: &mut Gbnf<'_>,
    tools: &[&ToolDefinition],
    name_key: &str,
    args_key: &str,
) -> Result<String, Error> {
    per_tool(g, &format!("call-{name_key}-{args_key}"), tools, |g, t| {
        let args = arguments(g, t)?;
        Ok(json_object(
            &[(name_key, json_literal(&t.id)), (args_key, args)],
            &[],
        ))
    })
}

/// A tool's properties in schema order: (name, schema, required). The schema's `$defs`
/// come along so that references still resolve.
fn properties(schema: &Value) -> Option<Vec<(String, Value, bool)>> {
    let props = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(d) = schema.get(key) {
            defs.insert(key.to_string(), d.clone());
        }
    }
    Some(
        props
            .iter()
            .map(|(name, prop)| {
                let mut prop = prop.clone();
                if let Value::Object(o) = &mut prop {
                    for (k, v) in &defs {
                        o.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                (name.clone(), prop, required.contains(&name.as_str()))
            })
            .collect(),
    )
}

/// The JSON types a schema allows (its `type`, one or a list), without `null`.
fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether an argument is written as raw text (a string, or an untyped value).
fn is_text(schema: &Value) -> bool {
    let ts = types(schema);
    let untyped = ts.is_empty()
        && [
            "enum",
            "const",
            "anyOf",
            "oneOf",
            "$ref",
            "properties",
            "items",
        ]
        .iter()
        .all(|k| schema.get(k).is_none());
    untyped || ts == ["string"]
}

/// The strings of a string enum.
fn string_enum(schema: &Value) -> Option<Vec<&str>> {
    let values = schema.get("enum")?.as_array()?;
    values.iter().map(Value::as_str).collect()
}

/// An XML argument's value up to and including `close`: raw text for strings, the
/// listed words for a string enum, JSON by schema for the rest.
fn xml_value(g: &mut Gbnf<'_>, schema: &Value, close: &str) -> Result<String, Error> {
    if let Some(words) = string_enum(schema) {
        let words: Vec<String> = words.iter().map(|w| literal(w)).collect();
        return Ok(format!(
            "{SPACE} ( {} ) {SPACE} {}",
            words.join(" | "),
            literal(close)
        ));
    }
    if is_text(schema) {
        return Ok(g.until(close));
    }
    let json = g.import_schema(schema)?;
    Ok(format!("{SPACE} {json} {SPACE} {}", literal(close)))
}

/// How one XML format writes an argument.
struct XmlArgument {
    /// Before the name.
    open: &'static str,
    /// Between the name and the value.
    middle: &'static str,
    /// Between the name and a value that is not raw text (JSON by schema).
    middle_json: &'static str,
    /// After the value.
    close: &'static str,
}

/// Qwen3-Coder's and Seed-OSS's `<parameter=K>V</parameter>`.
const QWEN_ARGUMENT: XmlArgument = XmlArgument {
    open: "<parameter=",
    middle: ">",
    middle_json: ">",
    close: "</parameter>",
};

/// GLM's `<arg_key>K</arg_key>\n<arg_value>V</arg_value>`.
const GLM_ARGUMENT: XmlArgument = XmlArgument {
    open: "<arg_key>",
    middle: "</arg_key>\n<arg_value>",
    middle_json: "</arg_key>\n<arg_value>",
    close: "</arg_value>",
};

/// MiniMax-M2's `<parameter name="K">V</parameter>`.
const MINIMAX_ARGUMENT: XmlArgument = XmlArgument {
    open: "<parameter name=\"",
    middle: "\">",
    middle_json: "\">",
    close: "</parameter>",
};

/// DeepSeek V3.2's DSML `<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>`:
/// `string="true"` for raw text, `string="false"` for JSON.
const DSML_ARGUMENT: XmlArgument = XmlArgument {
    open: "<｜DSML｜parameter name=\"",
    middle: "\" string=\"true\">",
    middle_json: "\" string=\"false\">",
    close: "</｜DSML｜parameter>",
};

/// One XML call per tool: `head(NAME)`, the arguments as `shape` writes them, `tail`.
fn xml_call(
    g: &mut Gbnf<'_>,
    base: &str,
    tools: &[&ToolDefinition],
    shape: &XmlArgument,
    head: impl Fn(&str) -> String,
    tail: &str,
) -> Result<String, Error> {
    per_tool(g, base, tools, |g, t| {
        let args = xml_arguments(g, t, shape)?;
        let mut call = format!("{} sp {args}", literal(&head(&t.id)));
        if !tail.is_empty() {
            call.push_str(&format!(" {}", literal(tail)));
        }
        Ok(call)
    })
}

/// A tool's arguments as XML elements, per `shape`, in schema order (required ones
/// always); any names when the schema lists none.
fn xml_arguments(
    g: &mut Gbnf<'_>,
    tool: &ToolDefinition,
    shape: &XmlArgument,
) -> Result<String, Error> {
    let Some(props) = properties(&tool.input_schema) else {
        let value = g.until(shape.close);
        return Ok(format!(
            "( {} [A-Za-z0-9_.\\x2D]+ {} {value} {SPACE} )*",
            literal(shape.open),
            literal(shape.middle)
        ));
    };
    let mut items = Vec::with_capacity(props.len());
    for (name, schema, required) in props {
        let value = xml_value(g, &schema, shape.close)?;
        let text = is_text(&schema) || string_enum(&schema).is_some();
        let middle = if text {
            shape.middle
        } else {
            shape.middle_json
        };
        items.push((
            format!(
                "{} {value} {SPACE}",
                literal(&format!("{}{name}{middle}", shape.open))
            ),
            required,
        ));
    }
    let base = format!("xml-{}", g.fresh());
    Ok(g.sequence(&base, &items, ""))
}

/// A pythonic value: Python's words for booleans and null, JSON by schema otherwise
/// (a JSON string or number is also a Python one).
fn python_value(g: &mut Gbnf<'_>, schema: &Value) -> Result<String, Error> {
    match types(schema).as_slice() {
        ["boolean"] => Ok("( \"True\" | \"False\" )".into()),
        ["null"] => Ok("\"None\"".into()),
        _ => g.import_schema(schema),
    }
}

/// `NAME(k=v, …)` per tool.
fn python_call(g: &mut Gbnf<'_>, tools: &[&ToolDefinition]) -> Result<String, Error> {
    per_tool(g, "python-call", tools, |g, t| {
        let args = match properties(&t.input_schema) {
            Some(props) => {
                let mut items = Vec::with_capacity(props.len());
                for (name, schema, required) in props {
                    let value = python_value(g, &schema)?;
                    items.push((
                        format!("{} {value}", literal(&format!("{name}="))),
                        required,
                    ));
                }
                let base = format!("py-{}", g.fresh());
                g.sequence(&base, &items, "\",\" sp")
            }
            None => {
                let any = g.import_schema(&Value::Bool(true))?;
                format!(
                    "( [A-Za-z_] [A-Za-z0-9_]* \"=\" {any} ( \",\" sp [A-Za-z_] [A-Za-z0-9_]* \"=\" {any} )* )?"
                )
            }
        };
        Ok(format!("{} {args} \")\"", literal(&format!("{}(", t.id))))
    })
}

/// Gemma 4's quote around strings.
const GEMMA_QUOTE: &str = "<|\"|>";

/// Gemma 4's values: `<|"|>`-quoted strings, JSON-like words, lists and objects with
/// quoted keys.
fn gemma_any(g: &mut Gbnf<'_>) -> String {
    let text = g.until(GEMMA_QUOTE);
    let q = literal(GEMMA_QUOTE);
    g.rule(
        "gemma-value",
        format!(
            "{q} {text} | \"-\"? [0-9]+ ( \".\" [0-9]+ )? | \"true\" | \"false\" | \"null\" \
             | \"[\" ( gemma-value ( \",\" gemma-value )* )? \"]\" \
             | \"{{\" ( {q} {text} \":\" gemma-value ( \",\" {q} {text} \":\" gemma-value )* )? \"}}\""
        ),
    )
}

/// A Gemma 4 argument value by schema.
fn gemma_value(g: &mut Gbnf<'_>, schema: &Value, any: &str) -> Result<String, Error> {
    if let Some(words) = string_enum(schema) {
        let words: Vec<String> = words
            .iter()
            .map(|w| literal(&format!("{GEMMA_QUOTE}{w}{GEMMA_QUOTE}")))
            .collect();
        return Ok(format!("( {} )", words.join(" | ")));
    }
    if is_text(schema) {
        let text = g.until(GEMMA_QUOTE);
        return Ok(format!("{} {text}", literal(GEMMA_QUOTE)));
    }
    match types(schema).as_slice() {
        ["integer"] | ["number"] | ["boolean"] => g.import_schema(schema),
        _ => Ok(any.to_string()),
    }
}

/// `call:NAME{k:v,…}` per tool; top-level names bare and sorted, as the template writes.
fn gemma_call(g: &mut Gbnf<'_>, tools: &[&ToolDefinition]) -> Result<String, Error> {
    let any = gemma_any(g);
    per_tool(g, "gemma-call", tools, |g, t| {
        let args = match properties(&t.input_schema) {
            Some(mut props) => {
                props.sort_by(|a, b| a.0.cmp(&b.0));
                let mut items = Vec::with_capacity(props.len());
                for (name, schema, required) in props {
                    let value = gemma_value(g, &schema, &any)?;
                    items.push((format!("{} {value}", literal(&format!("{name}:"))), required));
                }
                let base = format!("gemma-{}", g.fresh());
                g.sequence(&base, &items, "\",\"")
            }
            None => format!(
                "( [A-Za-z_] [A-Za-z0-9_]* \":\" {any} ( \",\" [A-Za-z_] [A-Za-z0-9_]* \":\" {any} )* )?"
            ),
        };
        Ok(format!(
            "{} {args} \"}}\"",
            literal(&format!("call:{}{{", t.id))
        ))
    })
}

/// The tool's name as text followed by `between` and its JSON arguments, per tool.
fn named(
    g: &mut Gbnf<'_>,
    base: &str,
    tools: &[&ToolDefinition],
    before: &str,
    between: &str,
    after: &str,
) -> Result<String, Error> {
    per_tool(g, base, tools, |g, t| {
        let args = arguments(g, t)?;
        let mut call = format!("{} {args}", literal(&format!("{before}{}{between}", t.id)));
        if !after.is_empty() {
            call.push_str(&format!(" {}", literal(after)));
        }
        Ok(call)
    })
}

/// The calls grammar of `target`'s format: up to `max_calls` calls of `tools`, in the
/// format's family (see the module documentation).
pub(super) fn calls(
    g: &mut Gbnf<'_>,
    target: &GrammarTarget,
    tools: &[&ToolDefinition],
    max_calls: usize,
) -> Result<Calls, Error> {
    let repeated = |call: &str, separator: &str| repeated(call, separator, max_calls);
    match target.format {
        F::Mistral if target.name_then_args => named_calls(g, target, tools, &repeated),
        F::Harmony
        | F::DeepSeekR1
        | F::DeepSeekV31
        | F::KimiK2
        | F::FunctionaryV31
        | F::FunctionaryV32 => named_calls(g, target, tools, &repeated),
        F::QwenXml
        | F::SeedOss
        | F::Glm
        | F::MiniMaxM2
        | F::DeepSeekV32
        | F::Pythonic
        | F::Lfm2
        | F::Gemma4 => element_calls(g, target, tools, &repeated),
        F::Hermes
        | F::Apertus
        | F::Llama
        | F::Mistral
        | F::CommandR7b
        | F::Granite
        | F::Nemotron
        | F::Phi4
        | F::Generic
        | F::FencedJson
        | F::InlineJson
        | F::Reasoning => object_calls(g, target, tools, &repeated),
    }
}

/// Calls as JSON objects that name the tool, inside the format's markers (and AIntern's
/// own fence for formats without a call syntax).
fn object_calls(
    g: &mut Gbnf<'_>,
    target: &GrammarTarget,
    tools: &[&ToolDefinition],
    repeated: &dyn Fn(&str, &str) -> String,
) -> Result<Calls, Error> {
    Ok(match target.format {
        F::Hermes => {
            let call = json_call(g, tools, "name", "arguments")?;
            let block = format!("\"<tool_call>\" sp {call} sp \"</tool_call>\"");
            let mut calls = one(repeated(&format!("( {block} )"), SPACE), "<tool_call>");
            calls.also = Some(bare_and_fenced(tools, &call, repeated));
            calls
        }
        F::Apertus => {
            let call = per_tool(g, "apertus-call", tools, |g, t| {
                let args = arguments(g, t)?;
                Ok(json_object(&[(t.id.as_str(), args)], &[]))
            })?;
            let expr = format!(
                "\"<|tools_prefix|>[\" sp {} sp \"]<|tools_suffix|>\"",
                repeated(&call, "\",\" sp")
            );
            one(expr, "<|tools_prefix|>")
        }
        F::Llama => {
            let call = json_call(g, tools, "name", "parameters")?;
            Calls {
                expr: call,
                triggers: vec![r#"(\{\s*"name")"#.into()],
                also: None,
            }
        }
        F::Mistral => {
            let call = per_tool(g, "mistral-call", tools, |g, t| {
                let args = arguments(g, t)?;
                Ok(json_object(
                    &[("name", json_literal(&t.id)), ("arguments", args)],
                    &[("id", "\"\\\"\" [a-zA-Z0-9]{9} \"\\\"\"".into())],
                ))
            })?;
            let expr = format!("\"[TOOL_CALLS][\" {} \"]\"", repeated(&call, "\",\" sp"));
            one(expr, "[TOOL_CALLS]")
        }
        F::CommandR7b => {
            let call = per_tool(g, "action", tools, |g, t| {
                let args = arguments(g, t)?;
                Ok(json_object(
                    &[
                        ("tool_call_id", "\"\\\"\" [0-9]{1,3} \"\\\"\"".into()),
                        ("tool_name", json_literal(&t.id)),
                        ("parameters", args),
                    ],
                    &[],
                ))
            })?;
            let expr = format!(
                "\"<|START_ACTION|>[\" sp {} sp \"]<|END_ACTION|>\"",
                repeated(&call, "\",\" sp")
            );
            one(expr, "<|START_ACTION|>")
        }
        F::Granite | F::Nemotron | F::Phi4 => {
            let call = json_call(g, tools, "name", "arguments")?;
            let list = format!("\"[\" sp {} sp \"]\"", repeated(&call, "\",\" sp"));
            let (open, close) = match target.format {
                F::Granite => ("<|tool_call|>", ""),
                F::Nemotron => ("<TOOLCALL>", "</TOOLCALL>"),
                _ => ("functools", ""),
            };
            let mut expr = format!("{} {list}", literal(open));
            if !close.is_empty() {
                expr.push_str(&format!(" {}", literal(close)));
            }
            one(expr, open)
        }
        F::Generic => {
            let call = json_call(g, tools, "name", "arguments")?;
            let list = format!("\"[\" sp {} sp \"]\"", repeated(&call, "\",\" sp"));
            Calls {
                expr: format!("\"{{\" sp \"\\\"tool_calls\\\"\" sp \":\" sp {list} sp \"}}\""),
                triggers: vec![r#"(\{\s*"tool_calls")"#.into()],
                also: None,
            }
        }
        // The formats without a call syntax of their own (fenced JSON, inline JSON,
        // reasoning; `calls` sends no other here): AIntern's own fence.
        _ => {
            let call = json_call(g, tools, "tool", "parameters")?;
            let expr = format!("\"```tool_call\\n\" {call} \"\\n```\"");
            one(expr, super::CALL_FENCE)
        }
    })
}

/// Calls that write the tool's name as text, then its arguments as JSON.
fn named_calls(
    g: &mut Gbnf<'_>,
    target: &GrammarTarget,
    tools: &[&ToolDefinition],
    repeated: &dyn Fn(&str, &str) -> String,
) -> Result<Calls, Error> {
    Ok(match target.format {
        F::Mistral if target.name_then_args => {
            let call = named(g, "mistral-call", tools, "[TOOL_CALLS]", "[ARGS]", "")?;
            one(repeated(&call, ""), "[TOOL_CALLS]")
        }
        // One call: `<|call|>` ends the message and the turn.
        F::Harmony => {
            let open = "<|channel|>commentary to=functions.";
            let call = named(
                g,
                "harmony-call",
                tools,
                open,
                " <|constrain|>json<|message|>",
                "",
            )?;
            one(call, open)
        }
        F::DeepSeekR1 | F::DeepSeekV31 => {
            let call = if target.format == F::DeepSeekR1 {
                named(
                    g,
                    "ds-call",
                    tools,
                    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>",
                    "\n```json\n",
                    "\n```<｜tool▁call▁end｜>",
                )?
            } else {
                named(
                    g,
                    "ds-call",
                    tools,
                    "<｜tool▁call▁begin｜>",
                    "<｜tool▁sep｜>",
                    "<｜tool▁call▁end｜>",
                )?
            };
            section(
                "<｜tool▁calls▁begin｜>",
                &repeated(&call, SPACE),
                "<｜tool▁calls▁end｜>",
            )
        }
        F::KimiK2 => {
            let call = per_tool(g, "kimi-call", tools, |g, t| {
                let args = arguments(g, t)?;
                Ok(format!(
                    "{} [0-9]{{1,3}} \"<|tool_call_argument_begin|>\" {args} \"<|tool_call_end|>\"",
                    literal(&format!("<|tool_call_begin|>functions.{}:", t.id))
                ))
            })?;
            section(
                "<|tool_calls_section_begin|>",
                &repeated(&call, SPACE),
                "<|tool_calls_section_end|>",
            )
        }
        F::FunctionaryV31 => {
            let call = named(g, "function-call", tools, "<function=", ">", "</function>")?;
            one(repeated(&call, SPACE), "<function=")
        }
        // Functionary v3.2 (`calls` sends no other format here): the prompt ends with
        // `>>>`, so the reply starts with the first section's name.
        _ => {
            let call = named(g, "section", tools, "", "\n", "")?;
            let names = names_pattern(tools);
            Calls {
                expr: format!("\">>>\"? {}", repeated(&call, "sp \">>>\"")),
                triggers: vec![format!(r"^({names}\n)[\s\S]*$"), format!(r"(>>>{names}\n)")],
                also: None,
            }
        }
    })
}

/// Calls of one element per argument: the XML formats, pythonic calls, Gemma 4.
fn element_calls(
    g: &mut Gbnf<'_>,
    target: &GrammarTarget,
    tools: &[&ToolDefinition],
    repeated: &dyn Fn(&str, &str) -> String,
) -> Result<Calls, Error> {
    Ok(match target.format {
        F::QwenXml | F::SeedOss => {
            let (open, close) = if target.format == F::SeedOss {
                ("<seed:tool_call>", "</seed:tool_call>")
            } else {
                ("<tool_call>", "</tool_call>")
            };
            let call = xml_call(
                g,
                "xml-call",
                tools,
                &QWEN_ARGUMENT,
                |n| format!("<function={n}>"),
                "</function>",
            )?;
            let block = format!("{} sp {call} sp {}", literal(open), literal(close));
            one(repeated(&format!("( {block} )"), SPACE), open)
        }
        F::Glm => {
            let call = xml_call(g, "glm-call", tools, &GLM_ARGUMENT, str::to_string, "")?;
            let block = format!("\"<tool_call>\" {call} \"</tool_call>\"");
            one(repeated(&format!("( {block} )"), SPACE), "<tool_call>")
        }
        F::MiniMaxM2 => {
            let call = xml_call(
                g,
                "invoke",
                tools,
                &MINIMAX_ARGUMENT,
                |n| format!("<invoke name=\"{n}\">"),
                "</invoke>",
            )?;
            let expr = format!(
                "\"<minimax:tool_call>\" sp {} sp \"</minimax:tool_call>\"",
                repeated(&call, SPACE)
            );
            one(expr, "<minimax:tool_call>")
        }
        F::DeepSeekV32 => {
            let call = xml_call(
                g,
                "dsml-invoke",
                tools,
                &DSML_ARGUMENT,
                |n| format!("<｜DSML｜invoke name=\"{n}\">"),
                "</｜DSML｜invoke>",
            )?;
            let open = "<｜DSML｜function_calls>";
            let expr = format!(
                "{} sp {} sp {}",
                literal(open),
                repeated(&call, SPACE),
                literal("</｜DSML｜function_calls>")
            );
            one(expr, open)
        }
        F::Pythonic | F::Lfm2 => {
            let call = python_call(g, tools)?;
            let list = format!("\"[\" {} \"]\"", repeated(&call, "\",\" sp"));
            if target.format == F::Lfm2 {
                one(
                    format!("\"<|tool_call_start|>\" {list} \"<|tool_call_end|>\""),
                    "<|tool_call_start|>",
                )
            } else {
                Calls {
                    expr: list,
                    triggers: vec![format!(r"(\[{}\()", names_pattern(tools))],
                    also: None,
                }
            }
        }
        // Gemma 4 (`calls` sends no other format here).
        _ => {
            let call = gemma_call(g, tools)?;
            let block = format!("\"<|tool_call>\" {call} \"<tool_call|>\"");
            one(repeated(&format!("( {block} )"), ""), "<|tool_call>")
        }
    })
}
