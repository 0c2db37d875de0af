//! An answer held to the request's output schema ([`crate::OutputSchema`]): validated
//! when the model answers; when it does not match, the model is told what is wrong once
//! and answers again (the loop sends the message as one sent after the answer); a
//! second miss ends the request with a clear error. The answer's value goes into `agent_complete`'s `output`.

use super::run::{Reply, Run};

/// What became of an answer.
pub(super) enum Held {
    /// No schema, or the answer matches it (its value is kept).
    Kept,
    /// Ask again, with this message.
    Retry(String),
    /// The answer does not match, and no retry is left: why.
    Invalid(String),
}

impl Run {
    /// Check the model's answer against the output schema; `max` is the request's
    /// iteration limit (a retry needs an iteration).
    pub(super) fn hold_answer(&mut self, max: u32, reply: &Reply) -> Held {
        let Some(schema) = self.output_schema.clone() else {
            return Held::Kept;
        };
        match schema.check(&reply.visible) {
            Ok(value) => {
                self.output = Some(value);
                Held::Kept
            }
            Err(errors) => {
                tracing::debug!(?errors, "the answer does not match the output schema");
                let listed = errors
                    .iter()
                    .map(|e| format!("- {e}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                if self.output_retried || self.iteration >= max {
                    Held::Invalid(format!(
                        "the answer does not match the output schema{}:\n{listed}",
                        if self.output_retried {
                            ", also when asked again"
                        } else {
                            ""
                        }
                    ))
                } else {
                    self.output_retried = true;
                    Held::Retry(format!(
                        "Your answer does not match the required JSON Schema:\n{listed}\nReply again with only a JSON value that matches the schema."
                    ))
                }
            }
        }
    }
}
