//! Calls a model wrote in another spelling than its format's own, read when the format
//! is known and its calls are JSON (`ParserOptions::with_native`): bare JSON at the end of
//! a reply, fences, other tags, doubled braces, a closing tag without its opening one.
//! Each case is checked streamed at every split too (`parser::check_with`), and each call
//! says how it was written (`recovered`).

use super::parser::{catalog, check_with};
use serde_json::json;
use services_ai::{format_by_name, FunctionCallParser, ParsedOutput, TemplateProfile};

fn for_format(name: &str) -> FunctionCallParser {
    let format = format_by_name(name).unwrap_or_else(|| panic!("no format {name}"));
    let options = TemplateProfile {
        format,
        reasoning: None,
    }
    .parser_options(false);
    FunctionCallParser::new(catalog()).with_options(options)
}

fn hermes() -> FunctionCallParser {
    for_format("hermes")
}

fn spellings(out: &ParsedOutput) -> Vec<Option<&str>> {
    out.tool_calls
        .iter()
        .map(|c| c.recovered.as_deref())
        .collect()
}

const READ: &str = r#"{"name": "read_file", "arguments": {"path": "notes.txt"}}"#;

#[test]
fn a_reply_that_ends_with_call_objects_calls_them() {
    let p = hermes();
    let path = json!({"path": "notes.txt"});
    check_with(&p, READ, "", "", &[("read_file", path.clone())], 0);
    let after_prose = format!("I will read it first.\n{READ}\n");
    check_with(
        &p,
        &after_prose,
        "I will read it first.",
        "",
        &[("read_file", path.clone())],
        0,
    );
    let two = format!(
        "{READ}\n{}",
        r#"{"name": "run", "arguments": {"command": "ls"}}"#
    );
    check_with(
        &p,
        &two,
        "",
        "",
        &[
            ("read_file", path.clone()),
            ("run", json!({"command": "ls"})),
        ],
        0,
    );
    // The opening tag left out: the closing one is part of the call.
    let untagged = format!("{READ}\n</tool_call>");
    check_with(&p, &untagged, "", "", &[("read_file", path)], 0);
    assert_eq!(spellings(&p.parse_all(&after_prose)), [Some("bare JSON")]);
}

#[test]
fn json_quoted_inside_prose_stays_text() {
    let p = hermes();
    let quoted = format!("Write {READ} to read a file, then answer.");
    check_with(&p, &quoted, &quoted, "", &[], 0);
    let followed = format!("{READ}\nThat is how a call looks.");
    check_with(&p, &followed, &followed, "", &[], 0);
    // After prose, an object must name a tool the catalog knows.
    let unknown = r#"For example: {"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    check_with(&p, unknown, unknown, "", &[], 0);
    // A reply that is nothing but a call object is a call whatever it names: the engine
    // then reports the unknown tool to the model, and the answer is never the call's JSON.
    let invented = r#"{"name": "update_file", "arguments": {"path": "a"}}"#;
    check_with(
        &p,
        invented,
        "",
        "",
        &[("update_file", json!({"path": "a"}))],
        0,
    );
    // JSON that is not call-shaped.
    let data = r#"The config is {"name": "demo", "version": 2}."#;
    check_with(&p, data, data, "", &[], 0);
}

#[test]
fn fences_and_other_tags_hold_calls() {
    let p = hermes();
    let path = json!({"path": "notes.txt"});
    for (input, spelling) in [
        (format!("```json\n{READ}\n```"), "a ```json fence"),
        (format!("```\n{READ}\n```"), "a ``` fence"),
        (
            format!("```xml\n<tool_call>\n{READ}\n</tool_call>\n```"),
            "a ```xml fence",
        ),
        (format!("<response>{READ}</response>"), "<response> tags"),
        (
            format!("Reading it.\n<function_call>\n{READ}\n</function_call>"),
            "<function_call> tags",
        ),
    ] {
        let text = if input.starts_with("Reading") {
            "Reading it."
        } else {
            ""
        };
        check_with(&p, &input, text, "", &[("read_file", path.clone())], 0);
        assert_eq!(spellings(&p.parse_all(&input)), [Some(spelling)], "{input}");
    }
    // Several call objects in one fence, one after the other or in a list.
    let run = json!({"command": "ls"});
    for two in [
        format!(
            "```json\n{READ}\n{}\n```",
            r#"{"name": "run", "arguments": {"command": "ls"}}"#
        ),
        format!(
            "```json\n[{READ}, {}]\n```",
            r#"{"name": "run", "arguments": {"command": "ls"}}"#
        ),
    ] {
        check_with(
            &p,
            &two,
            "",
            "",
            &[("read_file", path.clone()), ("run", run.clone())],
            0,
        );
    }
    // A fence holding a call and something else is code.
    let mixed = format!("```json\n{READ}\n{}\n```", r#"{"version": 2}"#);
    check_with(&p, &mixed, &mixed, "", &[], 0);
    // The model's own syntax is not marked.
    let own = format!("<tool_call>\n{READ}\n</tool_call>");
    assert_eq!(spellings(&p.parse_all(&own)), [None]);
    // Fences and tags that hold something else are text.
    for text in [
        "```json\n{\"dependencies\": {\"serde\": \"1\"}}\n```",
        "```\nfn main() {}\n```",
        "```xml\n<project><name>demo</name></project>\n```",
        "<response>All done.</response>",
        "<json>[1, 2, 3]</json>",
    ] {
        check_with(&p, text, text, "", &[], 0);
    }
}

#[test]
fn doubled_braces_are_read() {
    let p = hermes();
    let path = json!({"path": "x.txt"});
    for input in [
        r#"{{"name": "read_file", "arguments": {{"path": "x.txt"}}}}"#,
        r#"{{"name": "read_file", "arguments": {"path": "x.txt"}}}"#,
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"x.txt\"}}}\n</tool_call>",
    ] {
        check_with(&p, input, "", "", &[("read_file", path.clone())], 0);
    }
    let doubled = p.parse_all(r#"{{"name": "read_file", "arguments": {{"path": "x.txt"}}}}"#);
    assert_eq!(spellings(&doubled), [Some("JSON with doubled braces")]);
    // Jinja or Handlebars in prose is text, given up at once.
    for text in ["Use {{ user.name }} here.", "{{#each items}}x{{/each}}"] {
        check_with(&p, text, text, "", &[], 0);
    }
}

/// What cannot be a call is released within a few characters of its start, not when the
/// JSON or the fence closes: a long block of JSON data streams as it is written.
#[test]
fn what_is_not_a_call_is_not_held_back() {
    let p = hermes();
    let mut parser = p.streaming();
    let head = "Here is the file:\n```json\n{\"dependencies\": {";
    let mut shown = String::new();
    for c in head.chars() {
        for event in parser.process_token(&c.to_string()) {
            if let services_ai::ParseEvent::Text(t) = event {
                shown.push_str(&t);
            }
        }
    }
    assert_eq!(shown, head, "released by its first key");
    let mut parser = p.streaming();
    let mut shown = String::new();
    let head = "Use {\"total\": 3, \"items\": [";
    for c in head.chars() {
        for event in parser.process_token(&c.to_string()) {
            if let services_ai::ParseEvent::Text(t) = event {
                shown.push_str(&t);
            }
        }
    }
    assert_eq!(shown, head);
}

/// Without a known format nothing new is read: bare JSON after prose stays text, as
/// before, and a format whose calls are not JSON is left alone.
#[test]
fn only_the_model_s_own_json_format_recovers() {
    let auto = FunctionCallParser::new(catalog());
    let after_prose = format!("Sure.\n{READ}");
    check_with(&auto, &after_prose, &after_prose, "", &[], 0);
    let fenced = format!("```\n{READ}\n```");
    check_with(&auto, &fenced, &fenced, "", &[], 0);
    let xml = for_format("qwen3-coder");
    check_with(&xml, &after_prose, &after_prose, "", &[], 0);
    // Llama's own bare call is not marked as recovered.
    let llama = for_format("llama3").parse_all(READ);
    assert_eq!(spellings(&llama), [None]);
}

/// A reply that explains how calls would go, its fenced calls between sentences, is a
/// tutorial: nothing in it that changes anything runs. A reply that ends with its fenced
/// calls calls them.
#[test]
fn fenced_calls_between_sentences_are_examples_and_at_the_end_are_calls() {
    let p = hermes();
    let write = r#"{"name": "run", "arguments": {"command": "rm notes.txt"}}"#;
    // Between sentences a call that changes something is an example; one that only reads
    // (risk `Safe`) is still a call: the model asked to see something.
    let tutorial =
        format!("To answer, I would remove it:\n```json\n{write}\n```\nThat is how it works.");
    check_with(&p, &tutorial, &tutorial, "", &[], 0);
    let mixed_prose = format!(
        "To answer, I will read the file:\n```json\n{READ}\n```\nThen I would remove it:\n```json\n{write}\n```\nThat is how it works."
    );
    let rest = format!(
        "To answer, I will read the file:\nThen I would remove it:\n```json\n{write}\n```\nThat is how it works."
    );
    check_with(
        &p,
        &mixed_prose,
        &rest,
        "",
        &[("read_file", json!({"path": "notes.txt"}))],
        0,
    );
    let imagined =
        format!("I'll read it:\n```json\n{READ}\n```\nIt says the meeting is on Monday.");
    assert_eq!(p.parse_all(&imagined).tool_calls.len(), 1);
    let ending = format!("I will read it.\n```json\n{READ}\n```\n```json\n{write}\n```\n");
    check_with(
        &p,
        &ending,
        "I will read it.",
        "",
        &[
            ("read_file", json!({"path": "notes.txt"})),
            ("run", json!({"command": "rm notes.txt"})),
        ],
        0,
    );
    // A fence, then a bare object: both end the reply.
    let mixed = format!("```json\n{READ}\n```\n{write}");
    assert_eq!(p.parse_all(&mixed).tool_calls.len(), 2);
}
