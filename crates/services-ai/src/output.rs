//! An answer held to a JSON Schema ([`core_models::AgentRequest::output_schema`]): the
//! schema checked once before anything runs, and each answer read as JSON and validated
//! against it. Every keyword counts here, including those a grammar cannot enforce (a
//! float's bounds, `pattern`, `uniqueItems`, formats): a backend's grammar narrows what
//! the model can write, and this check decides.
//!
//! A schema's `$ref` resolves only inside the schema: nothing is read from a file or
//! fetched from the network.

use serde_json::Value;

/// At most this many of an answer's errors are reported.
const MAX_ERRORS: usize = 8;

/// A usable output schema and its compiled validator.
pub struct OutputSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// Check `schema` and compile it.
    ///
    /// # Errors
    /// [`crate::Error::OutputSchema`] when it is not a JSON Schema this validator can use
    /// (not an object or boolean, a keyword with a wrong value, a `$ref` to another
    /// document), in words.
    pub fn new(schema: &Value) -> crate::Result<Self> {
        if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
            return Err(crate::Error::OutputSchema(
                "a JSON Schema is an object (or true/false)".into(),
            ));
        }
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| crate::Error::OutputSchema(e.to_string()))?;
        Ok(OutputSchema {
            schema: schema.clone(),
            validator,
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The value an answer's text holds, when it is valid against the schema. The text
    /// is one JSON value, alone or in a Markdown code fence (as servers without
    /// structured output tend to write it).
    ///
    /// # Errors
    /// What is wrong, one line per problem: not JSON, or each place where the value
    /// breaks the schema (its JSON pointer and why).
    pub fn check(&self, text: &str) -> Result<Value, Vec<String>> {
        let value = parse_answer(text).ok_or_else(|| {
            vec![format!(
                "the answer is not a JSON value: {}",
                excerpt(text.trim())
            )]
        })?;
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(MAX_ERRORS)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(errors)
        }
    }

    /// What the model is told about its answer.
    pub fn instruction(&self) -> String {
        instruction(&self.schema)
    }
}

/// What the model is told about an answer held to `schema`.
pub(crate) fn instruction(schema: &Value) -> String {
    format!(
        "When you give your final answer (instead of calling a tool), reply with only a JSON value matching this JSON Schema, no other text:\n{schema}"
    )
}

/// The JSON value of an answer's text: the whole text, else the first fenced block.
fn parse_answer(text: &str) -> Option<Value> {
    let text = text.trim();
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    let start = text.find("```")?;
    let body = &text[start + 3..];
    // The fence's info string (`json`) ends at the line's end.
    let body = &body[body.find('\n')? + 1..];
    let end = body.find("```")?;
    serde_json::from_str(body[..end].trim()).ok()
}

/// The start of a text, for an error message.
fn excerpt(text: &str) -> String {
    const MAX: usize = 80;
    if text.chars().count() <= MAX {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head:?}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> OutputSchema {
        OutputSchema::new(&json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 0},
                "ratio": {"type": "number", "exclusiveMaximum": 1.0},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
            },
            "required": ["count"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn valid_answers_are_read_alone_or_fenced() {
        let s = schema();
        assert_eq!(s.check(r#" {"count": 2} "#), Ok(json!({"count": 2})));
        assert_eq!(
            s.check("Here it is:\n```json\n{\"count\": 3, \"ratio\": 0.5}\n```\n"),
            Ok(json!({"count": 3, "ratio": 0.5}))
        );
    }

    #[test]
    fn every_keyword_counts() {
        let s = schema();
        for (text, said) in [
            (r#"{"count": -1}"#, "/count"),
            (r#"{"count": 1, "ratio": 1.0}"#, "/ratio"),
            (r#"{"count": 1, "tags": ["a", "a"]}"#, "/tags"),
            (r#"{"count": 1, "other": true}"#, "other"),
            (r#"{"ratio": 0.1}"#, "count"),
            ("three", "not a JSON value"),
            ("", "not a JSON value"),
        ] {
            let errors = s.check(text).unwrap_err();
            assert!(
                errors.iter().any(|e| e.contains(said)),
                "{text}: {errors:?}"
            );
        }
    }

    #[test]
    fn unusable_schemas_are_refused_in_words() {
        for schema in [
            json!("a string"),
            json!([1, 2]),
            json!({"type": "no such type"}),
            json!({"minItems": "two"}),
            json!({"$ref": "https://example.com/schema.json"}),
            json!({"$ref": "file:///etc/passwd"}),
        ] {
            let error = OutputSchema::new(&schema).unwrap_err();
            assert!(
                matches!(&error, crate::Error::OutputSchema(m) if !m.is_empty()),
                "{schema}: {error:?}"
            );
        }
        assert!(OutputSchema::new(&json!(true)).is_ok());
        assert!(OutputSchema::new(&json!({
            "$defs": {"n": {"type": "integer"}},
            "type": "array",
            "items": {"$ref": "#/$defs/n"}
        }))
        .is_ok());
    }
}
