//! An OpenAI-compatible server as the model: llama-server, vLLM, Ollama, LM Studio or a
//! hosted API. Start one, then
//!
//!     cargo run -p aintern --features openai --example openai -- http://127.0.0.1:8080/v1
//!
//! An API key, when the server needs one, is read from `OPENAI_API_KEY`.

// An example prints what it shows.
#![allow(clippy::print_stdout)]

use aintern::openai::{ApiKey, OpenAiConfig, OpenAiLlm};
use aintern::prelude::*;

#[aintern::tokio::main(crate = "aintern::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8080/v1".to_string());
    let mut config = OpenAiConfig::new(url);
    if let Ok(key) = std::env::var("OPENAI_API_KEY") {
        config.api_key = Some(ApiKey::new(key));
    }
    // Asks the server which models it serves and how it takes tools.
    let model = OpenAiLlm::connect(config).await?;
    println!("model: {}", model.model());

    let workspace = tempfile::tempdir()?;
    std::fs::write(
        workspace.path().join("todo.txt"),
        "1. Water the plants\n2. Call Sam\n",
    )?;
    let agent = Agent::builder()
        .model(model)
        .workspace(workspace.path())
        .approval(ApprovalPolicy::ApproveSafe)
        .build()?;

    let reply = agent
        .ask("Read todo.txt and tell me the first item.")
        .await?;
    for r in &reply.tool_results {
        println!("[{}]", r.summary());
    }
    println!("{}", reply.text());
    println!("({})", reply.completion.summary());
    if reply.text().trim().is_empty() {
        return Err("the server's model gave no answer".into());
    }
    Ok(())
}
