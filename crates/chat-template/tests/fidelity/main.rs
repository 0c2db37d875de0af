//! Rendering compared with the reference: Python's jinja2 rendering as transformers'
//! `apply_chat_template` does (`tests/reference.py`). `features` checks one template the
//! project wrote per Jinja feature; `real` renders the real templates of the popular
//! model families in `../shared/templates` (beside the workspace) with a set of
//! conversations.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod features;
mod real;

use chat_template::{Error, Template};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// What a render gave: the text, the message of the template's `raise_exception`, or
/// another failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Text(String),
    Raised(String),
    Failed(String),
}

impl Outcome {
    /// The same result: equal texts, equal raised messages, or both failing otherwise
    /// (Python's and minijinja's words for a type error differ).
    pub fn agrees_with(&self, reference: &Outcome) -> bool {
        match (self, reference) {
            (Outcome::Failed(_), Outcome::Failed(_)) => true,
            _ => self == reference,
        }
    }
}

/// Render every `(template, context)` with the Python reference, in one run.
pub fn reference(requests: &[(String, Value)]) -> Vec<Outcome> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference.py");
    let body: Vec<Value> = requests
        .iter()
        .map(|(template, context)| json!({"template": template, "context": context}))
        .collect();
    let mut child = Command::new("python3")
        .arg(&script)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("the reference renderer needs python3 with jinja2 (pip install jinja2): {e}")
        });
    let input = serde_json::to_vec(&body).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "the reference renderer failed (it needs python3 with jinja2: pip install jinja2): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    results
        .into_iter()
        .map(|r| match (r.get("ok"), r.get("raised"), r.get("error")) {
            (Some(Value::String(text)), _, _) => Outcome::Text(text.clone()),
            (_, Some(Value::String(message)), _) => Outcome::Raised(message.clone()),
            (_, _, Some(Value::String(message))) => Outcome::Failed(message.clone()),
            _ => panic!("unexpected reference answer {r}"),
        })
        .collect()
}

/// Render with this crate, `SOURCE_DATE_EPOCH` as the reference has it.
pub fn ours(template: &str, context: &Value) -> Outcome {
    std::env::set_var("SOURCE_DATE_EPOCH", "1700000000");
    match Template::new(template).and_then(|t| t.render(context)) {
        Ok(text) => Outcome::Text(text),
        Err(Error::Raised(message)) => Outcome::Raised(message),
        Err(other) => Outcome::Failed(other.to_string()),
    }
}
