//! `--output-schema`: the final answer held to a JSON Schema. With the default model
//! in-process (held by llama.cpp's grammar) and through llama-server (sent as
//! `response_format`), eight requests over a workspace file with eight kinds of schema
//! all end with an `output` valid against their schema, and the question that names the
//! file still reads it first. A schema that cannot be used — one with a count too large
//! for a grammar among them — is refused before any model loads; `run` prints the
//! answer's JSON alone on stdout.
//!
//! The suite is `examples/output-schema/suite.jsonl` (see the README there): its wording
//! is no template for anything in the agent.

use super::model::small_model;
use super::{aintern_in, completed, events, results, Workspace};
use core_models::AgentEvent;
use serde_json::{json, Value};
use test_support::llama_server::{LlamaServer, ServerOptions};

/// The suite's folder: `suite.jsonl` and the file its requests are about.
fn suite_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/output-schema")
}

/// The suite: each request over `project.txt` and the schema its answer is held to.
fn suite() -> Vec<(String, Value)> {
    std::fs::read_to_string(suite_dir().join("suite.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let case: Value = serde_json::from_str(l).unwrap();
            (
                case["request"].as_str().unwrap().to_string(),
                case["schema"].clone(),
            )
        })
        .collect()
}

/// A workspace holding `project.txt`, and a folder apart for the schemas (a schema in
/// the workspace would be one more file for the model to look at).
fn setup() -> (Workspace, tempfile::TempDir) {
    let ws = Workspace::new();
    std::fs::copy(
        suite_dir().join("project.txt"),
        ws.dir.path().join("project.txt"),
    )
    .unwrap();
    (ws, tempfile::tempdir().unwrap())
}

fn schema_file(dir: &tempfile::TempDir, i: usize, schema: &Value) -> String {
    let path = dir.path().join(format!("schema{i}.json"));
    std::fs::write(&path, schema.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

/// `aintern COMMAND` over `ws` with `backend`, the answer held to the schema in `file`,
/// nothing saved; `extra` flags before the message.
fn held(
    ws: &Workspace,
    command: &str,
    backend: &str,
    file: &str,
    extra: &[&str],
    message: &str,
) -> std::process::Output {
    let mut args = vec![
        command,
        "--workspace",
        ws.path(),
        "--backend",
        backend,
        "--no-save",
        "--output-schema",
        file,
    ];
    args.extend_from_slice(extra);
    args.push(message);
    aintern_in(ws.home.path(), &args, b"")
}

/// Run the suite over `backend`: every answer valid, the file question reading the file.
fn suite_passes(backend: &str) {
    let (ws, schemas) = setup();
    let mut failed = Vec::new();
    for (i, (question, schema)) in suite().iter().enumerate() {
        let file = schema_file(&schemas, i, schema);
        let out = held(
            &ws,
            "exec",
            backend,
            &file,
            &["--approve", "safe"],
            question,
        );
        let events = events(&out.stdout);
        let output = match events.last() {
            Some(AgentEvent::AgentComplete(done)) if out.status.success() => done.output.clone(),
            _ => None,
        };
        let checker = services_ai::OutputSchema::new(schema).unwrap();
        match output {
            Some(value) => {
                if let Err(e) = checker.check(&value.to_string()) {
                    failed.push(format!("{question}: {value} breaks the schema: {e:?}"));
                }
            }
            None => failed.push(format!(
                "{question}: no output (exit {:?}); last event {:?}; stderr {}",
                out.status.code(),
                events.last().map(AgentEvent::event_type),
                String::from_utf8_lossy(&out.stderr)
            )),
        }
        if i == 0 {
            // The question that says to read the file reads it before answering.
            let first = results(&events).into_iter().next();
            assert!(
                first.as_ref().is_some_and(
                    |r| r.tool_id == "read_file" && r.result.content.contains("Lighthouse")
                ),
                "{backend}: the file was not read first: {first:?}"
            );
        }
    }
    assert!(failed.is_empty(), "{backend}:\n{}", failed.join("\n"));
}

#[test]
fn every_answer_matches_its_schema_with_the_small_model() {
    let Some(model) = small_model() else { return };
    suite_passes(&format!("llama:{}", model.display()));
}

#[test]
fn every_answer_matches_its_schema_through_llama_server() {
    let Some(server) = LlamaServer::start(ServerOptions::default()) else {
        return;
    };
    suite_passes(&format!("openai:{}", server.url()));
}

#[test]
fn run_prints_the_answer_s_json_alone_on_stdout() {
    let (ws, schemas) = setup();
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let file = schema_file(&schemas, 0, &schema);
    let script = ws.script(&["Let me see: {\"n\": \"three\"}", "{\"n\": 3}"]);
    let out = held(&ws, "run", &script, &file, &[], "How many?");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout, "{\"n\":3}\n", "stdout holds the JSON alone");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("iteration"),
        "what a person reads goes to stderr: {stderr}"
    );

    // exec: the value rides on agent_complete.
    let script = ws.script(&["{\"n\": 3}"]);
    let out = held(&ws, "exec", &script, &file, &[], "How many?");
    let (_, done) = completed(&out);
    assert_eq!(done.output, Some(json!({"n": 3})));
}

#[test]
fn an_answer_that_never_matches_fails_the_command_in_words() {
    let (ws, schemas) = setup();
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let file = schema_file(&schemas, 0, &schema);
    // The first answer, written while tools could still be called, is asked again held to
    // the schema; the second is sent back once with what is wrong; the third ends it.
    let script = ws.script(&["three", "still three", "three again"]);
    let out = held(&ws, "run", &script, &file, &[], "How many?");
    assert!(!out.status.success());
    assert!(
        out.stdout.is_empty(),
        "no JSON printed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not match the output schema"),
        "{stderr}"
    );
}

#[test]
fn a_schema_that_cannot_be_used_is_refused_before_any_model_loads() {
    let (ws, schemas) = setup();
    let missing = schemas.path().join("absent.json");
    let not_json = schemas.path().join("prose.json");
    std::fs::write(&not_json, "an object with a name").unwrap();
    let wrong = schema_file(
        &schemas,
        1,
        &json!({"type": "object", "properties": {"n": {"type": "integre"}}}),
    );
    let remote = schema_file(
        &schemas,
        2,
        &json!({"$ref": "https://example.com/schema.json"}),
    );
    for (file, said) in [
        (missing.to_str().unwrap(), "cannot read the output schema"),
        (not_json.to_str().unwrap(), "is not JSON"),
        (wrong.as_str(), "output schema"),
        (remote.as_str(), "output schema"),
    ] {
        for command in ["run", "exec"] {
            // A model that does not exist: the schema is refused first.
            let out = held(
                &ws,
                command,
                "llama:/nonexistent/model.gguf",
                file,
                &[],
                "How many?",
            );
            assert!(!out.status.success(), "{file}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(said), "{command} {file}: {stderr}");
            assert!(
                !stderr.contains("nonexistent"),
                "refused before the model: {stderr}"
            );
        }
    }
}

#[test]
fn an_absurd_count_is_refused_before_any_model_loads() {
    let (ws, schemas) = setup();
    let big = 1_000_000_000_u64;
    let cases = [
        (
            json!({"type": "array", "items": {"type": "integer"}, "minItems": big}),
            "minItems is 1000000000 at the top",
        ),
        (
            json!({"type": "object", "properties": {"tags": {"type": "array", "minItems": big}}}),
            "minItems is 1000000000 at /properties/tags",
        ),
        (
            json!({"type": "object", "properties": {"name": {"type": "string", "minLength": big}}}),
            "minLength is 1000000000 at /properties/name",
        ),
        (
            json!({"$defs": {"s": {"type": "string", "minLength": big}}, "$ref": "#/$defs/s"}),
            "minLength is 1000000000 at /$defs/s",
        ),
        (
            json!({"type": "object", "minProperties": big}),
            "minProperties is 1000000000",
        ),
        (
            // (A larger count is no regular expression the validator builds.)
            json!({"type": "string", "pattern": "^a{3000}$"}),
            "the pattern's repetition {3000} is 3000",
        ),
    ];
    for (i, (schema, said)) in cases.iter().enumerate() {
        let file = schema_file(&schemas, i, schema);
        for command in ["run", "exec"] {
            // A model that does not exist: loading it would say so.
            let out = held(
                &ws,
                command,
                "llama:/nonexistent/model.gguf",
                &file,
                &[],
                "How many?",
            );
            assert!(!out.status.success(), "{command} {schema}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("the output schema cannot be used")
                    && stderr.contains(said)
                    && stderr.contains("a grammar holds counts of at most"),
                "{command} {schema}: {stderr}"
            );
            assert!(
                !stderr.contains("nonexistent") && !stderr.contains("does not exist"),
                "refused before the model: {stderr}"
            );
        }
    }
    // A large maximum is lowered, not refused: the command gets as far as the model.
    let lowered = json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "maxItems": big}, "name": {"type": "string", "maxLength": big}}});
    let file = schema_file(&schemas, cases.len(), &lowered);
    let out = held(
        &ws,
        "exec",
        "llama:/nonexistent/model.gguf",
        &file,
        &[],
        "How many?",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not exist") && !stderr.contains("output schema"),
        "a large maximum was refused: {stderr}"
    );
}
