//! Answers as data: [`Agent::ask_json`] and [`Agent::ask_json_value`] hold the final
//! answer to a JSON Schema ([`core_models::AgentRequest::output_schema`]). The agent may
//! use its tools first, as for any request; its answer is then one JSON value valid
//! against the schema — held by a grammar in-process, sent as structured output to a
//! server, and validated by the agent either way (an answer that misses is sent back
//! once with what is wrong).

use crate::error::{Error, Result};
use crate::Agent;
use serde::de::DeserializeOwned;
use serde_json::Value;

impl Agent {
    /// Ask, and have the answer as a `T`: the request's answer is held to `T`'s JSON
    /// Schema (from its [`schemars::JsonSchema`] derive) and read into `T`.
    ///
    /// ```
    /// use aintern::prelude::*;
    /// use aintern::schemars::JsonSchema;
    ///
    /// #[derive(Debug, serde::Deserialize, JsonSchema)]
    /// #[schemars(crate = "aintern::schemars")]
    /// struct Meeting {
    ///     day: String,
    ///     attendees: u32,
    /// }
    ///
    /// # async fn demo(dir: &std::path::Path) -> Result<(), aintern::Error> {
    /// let model = ScriptedLlm::from_texts([r#"{"day": "Friday", "attendees": 4}"#]);
    /// let agent = Agent::builder().model(model).workspace(dir).build()?;
    /// let meeting: Meeting = agent.ask_json("When is the meeting, and who comes?").await?;
    /// assert_eq!(meeting.attendees, 4);
    /// # Ok(()) }
    /// # aintern::tokio::runtime::Runtime::new().unwrap().block_on(demo(&std::env::temp_dir())).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`Agent::ask_json_value`]; [`Error::Failed`] also when the value does not read
    /// into `T` (a type whose serde attributes say more than its schema).
    pub async fn ask_json<T: DeserializeOwned + schemars::JsonSchema>(
        &self,
        message: impl Into<String>,
    ) -> Result<T> {
        let schema = schemars::schema_for!(T).to_value();
        let value = self.ask_json_value(message, schema).await?;
        serde_json::from_value(value).map_err(|e| {
            Error::Failed(format!(
                "the answer matches the schema but does not read as {}: {e}",
                std::any::type_name::<T>()
            ))
        })
    }

    /// Ask, and have the answer as a JSON value valid against `schema` (a JSON Schema).
    /// Approval requests are answered by the agent's policy, as for [`Agent::ask`].
    ///
    /// # Errors
    /// [`Error::Agent`] with [`core_models::Error::InvalidRequest`] when the schema
    /// cannot be used (before anything runs); [`Error::Failed`] when the request ends
    /// without a valid answer: the answer did not match, also when asked again, or the
    /// request stopped first (a limit, cancelled, the model failed).
    pub async fn ask_json_value(&self, message: impl Into<String>, schema: Value) -> Result<Value> {
        let request = self.request(message).with_output_schema(schema);
        let reply = self.start(request)?.reply().await?;
        let reason = reply.reason();
        reply.completion.output.ok_or_else(|| {
            Error::Failed(format!(
                "the request ended ({reason:?}) without an answer matching the schema"
            ))
        })
    }
}
