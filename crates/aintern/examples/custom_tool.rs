//! Adding a tool of your own: a safe, read-only tool that counts the words of a text.
//!
//! The agent validates its arguments, rates it, runs it with a timeout and feeds its
//! result back to the model like any built-in tool. Run it with
//!
//!     cargo run -p aintern --example custom_tool

// An example prints what it shows.
#![allow(clippy::print_stdout)]

use aintern::prelude::*;

/// Counts words. Safe: it reads nothing and changes nothing, so it runs without asking.
struct WordCount {
    definition: ToolDefinition,
}

impl WordCount {
    fn new() -> Self {
        let definition = ToolDefinition::new(
            "word_count",
            "Word Count",
            "Count the words of a text.",
        )
        .with_risk(RiskLevel::Safe)
        .with_schema(json!({
            "type": "object",
            "properties": { "text": { "type": "string", "description": "The text to count" } },
            "required": ["text"]
        }))
        .with_example(
            "How many words are in 'to be or not to be'?",
            json!({"text": "to be or not to be"}),
        );
        WordCount { definition }
    }
}

#[async_trait]
impl Tool for WordCount {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate(&self, parameters: &Value) -> ToolValidationResult {
        match parameters.get("text") {
            Some(Value::String(_)) => ToolValidationResult::valid(),
            _ => ToolValidationResult::invalid(["'text' must be a string"]),
        }
    }

    fn execution_summary(&self, parameters: &Value) -> String {
        let text = parameters.get("text").and_then(Value::as_str).unwrap_or("");
        format!(
            "Count the words of a {}-character text",
            text.chars().count()
        )
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let text = context
            .parameters
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("");
        let words = text.split_whitespace().count();
        ToolResult::success_with_data(format!("{words} words"), json!({ "words": words }))
    }
}

#[aintern::tokio::main(crate = "aintern::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    let model = ScriptedLlm::from_texts([
        r#"<tool_call>{"name": "word_count", "arguments": {"text": "the quick brown fox"}}</tool_call>"#,
        "There are 4 words.",
    ]);
    let agent = Agent::builder()
        .model(model)
        .workspace(workspace.path())
        .builtin_tools(false) // only this app's tool
        .tool(WordCount::new())
        .approval(ApprovalPolicy::DenyAll) // nothing here needs approval
        .build()?;

    let reply = agent
        .ask("How many words are in 'the quick brown fox'?")
        .await?;
    for r in &reply.tool_results {
        println!("{} -> {}", r.summary(), r.result.content);
    }
    println!("{}", reply.text());

    let counted = reply
        .tool_results
        .first()
        .and_then(|r| r.result.data.clone());
    if counted != Some(json!({ "words": 4 })) {
        return Err(format!("the tool did not run as expected: {counted:?}").into());
    }
    Ok(())
}
